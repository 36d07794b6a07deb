"""Times lumen against OpenCV, SciPy and PyTorch in one process, on the same arrays.

    python3 -m lumen.bench [--size WxH] [--repeat N] [--threads N] [--case NAMES] [--json]
                           [--no-scipy] [--no-torch] [--torch-cap S] [--overhead-calls N]
                           [--batch N] [--photo-size WxH] [--no-pillow]
    python3 -m lumen.bench --case photo [--photo-size 4000x3000] [--repeat N]   (issue 30)
    python3 -m lumen.bench --case dask [...]   (lumen on Dask: lumen/bench_dask.py's flags)
    python3 -m lumen.bench --case methods [...]   (auto vs forced methods vs the FFT floor:
                                                  lumen/bench_methods.py's flags)

Every library gets the same f32 image (H x W, one channel; seeded random values in [0, 1)),
the same kernel (lumen bench's LCG taps, so the same as `lumen bench`) and border reflect
(cv2.BORDER_REFLECT, `cba|abcd|dcb`). Each call is timed once cold, then N warm times
(min and median); lumen's cold call runs on a fresh lumen.Context (FFT plans, kernel spectrum,
thread start-up) and the warm calls on that same context. The cases and the peer calls:

  filter2d_kK   (K = 3, 7, 15, 31, 61, 121, 201; random, non-separable K x K kernel)
      lumen   lumen.filter2d(img, k, border="reflect", out=out, context=ctx)   (method auto)
      cv2     cv2.filter2D(img, -1, k, dst=out, borderType=cv2.BORDER_REFLECT)
      scipy   K <= 7: scipy.ndimage.correlate(img, k, output=out, mode="reflect");
              K >= 15: scipy.signal.oaconvolve on the image reflect-padded by the anchor
              extents (cv2.copyMakeBorder, BORDER_REFLECT; inside the timing, as a SciPy
              user has to) with the flipped kernel and mode="valid", i.e. the same correlation
      torch   torch.nn.functional.conv2d (a correlation) on the image padded by
              cv2.copyMakeBorder(BORDER_REFLECT) *outside* the timing: torch's own
              F.pad(mode="reflect") is OpenCV's REFLECT_101 (lumen's "reflect101") and cannot
              pad by more than the image side, so torch gets a pre-padded tensor for free,
              which can only flatter torch. Calls over --torch-cap seconds are run once and
              reported "skipped (Ns/call)"; when torch's best measured rate predicts more than
              4x the cap, the call is not run at all ("skipped (~Ns/call est.)").
  filter2d_k61_batch10
      lumen   one call on an N x H x W x 1 batch of 10 copies of the image
      peers   10x their single-image (filter2d_k61) time
  gaussian_sS   (S = 1, 3, 10, 30, 50; ksize = 2*round(3S)+1 = 7 .. 301, as lumen bench)
      lumen   lumen.gaussian_blur(img, S, ksize=k, border="reflect", out=out, context=ctx)
      cv2     cv2.GaussianBlur(img, (k, k), S, dst=out, borderType=cv2.BORDER_REFLECT)
      scipy   scipy.ndimage.correlate1d along x then y with the cv2.getGaussianKernel(k, S)
              taps, mode="reflect", for S <= 10 only (S = 30, 50 take seconds per call)
      torch   conv2d with the 1 x k row, then the k x 1 column, on the pre-padded image
  gaussian_fast_sS   (S = 30, 50)
      lumen   lumen.gaussian_blur(img, S, precision="fast", ...) (recursive, no ksize)
      peers   the same exact Gaussian as gaussian_sS (the fast one is an approximation)
  overhead
      lumen.gaussian_blur(a, 1.0, out=o, context=ctx) and lumen.gaussian_blur(a, 1.0,
      context=ctx) on a 64 x 64 f32 image, Context(threads=1), timed call by call, against
      the bare C call timed in C by lumen._lumen._time_c on the same views.
  conv cases (--case conv; the names, shapes and data of `lumen bench conv`):
      l1_512x7x7_k3      32x512x7x7   * 512x512x3x3  pad 1          the issue's layers
      l2_64x56x56_k3     8x64x56x56   * 64x64x3x3    pad 1
      l3_256x14x14_k3    8x256x14x14  * 256x256x3x3  pad 1
      l4_3x224x224_k7s2  8x3x224x224  * 64x3x7x7     stride 2 pad 3
      pw_256x28x28_k1    8x256x28x28  * 128x256x1x1
      dw_128x56x56_k3    8x128x56x56  * 128x1x3x3    pad 1, groups 128 (depthwise)
      s2_128x28x28_k3s2  8x128x28x28  * 256x128x3x3  stride 2 pad 1
      tr_256x14x14_k4s2  conv_transpose2d 8x256x14x14 * 256x128x4x4 stride 2 pad 1
      tr_64x56x56_k3s2   conv_transpose2d 8x64x56x56 * 64x32x3x3 stride 2 pad 1 out-pad 1
      x and w hold lumen bench conv's LCG values in [-1, 1) (seeds 42 and 43), no bias.
      lumen   lumen.conv2d / conv_transpose2d(x, w, None, stride=, padding=, [output_padding=,]
              groups=, out=out, context=ctx)   (out= preallocated, as the filter cases)
      torch   torch.nn.functional.conv2d / conv_transpose2d on torch.from_numpy(x) and
              torch.from_numpy(w): the same memory, converted outside the timing; torch
              returns a new tensor per call (it has no out=), under torch.no_grad()
      One cold call each, then --repeat rounds calling lumen and torch once each (the order
      alternating), so both see the same noise. GFLOP/s = 2*N*K*P*Q*(C/groups)*R*S / time
      (conv_transpose2d: 2*N*C*H*W*(K/groups)*R*S), on the min and the median. lumen's
      output is compared with torch's once per case: max|lumen - torch| / max|torch| must
      be <= 1e-4, else a WARNING and exit status 1. --batch N replaces every case's N.
      packed  conv2d only: lumen.conv2d(x, lumen.Conv2dWeights(w, x.shape, ...), out=out),
              the weights transformed once outside the timing, interleaved with the two above
      torch's oneDNN: each case runs once in a child python with ONEDNN_VERBOSE=1; its version,
              ISA and per-case implementation are printed ('-': torch did not use oneDNN).
              LUMEN_CPU_ISA=avx2 (generic) also sets ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA
              to AVX2 (SSE41) before torch loads, unless already set: a like-for-like ISA.

photo cases (issue 30; --case photo, photo_u8, photo_u16, or any name prefix; lumen/bench_photo.py):
  One seeded random H x W x 3 interleaved RGB image per dtype (--photo-size, default 4000x3000 =
  12 MP; --size sets it too when --photo-size is not given), border reflect101
  (cv2.BORDER_REFLECT_101, OpenCV's default; lumen gets border="reflect101"). Names
  photo_<u8|u16>_<op>:
      filter2d_k3          the sharpen kernel [[0,-1,0],[-1,5,-1],[0,-1,0]]
      filter2d_k5, _k7     lumen bench's LCG values in [0, 1) (seed 2000 + k) / their sum
          lumen   lumen.filter2d(img, k, border="reflect101")     cv2  cv2.filter2D(img, -1, k)
          Pillow  Image.filter(ImageFilter.Kernel) (3x3, 5x5 only; it leaves the outer pixels
                  unfiltered: not the same border, results not compared)
      gauss_s1, _s2, _s3, _s5
          lumen   lumen.gaussian_blur(img, sigma, border="reflect101")  (ksize derived as
                  OpenCV does: 6 sigma + 1 for u8, 8 sigma + 1 for u16, odd)
          cv2     cv2.GaussianBlur(img, (0, 0), sigma)  (fixed-point on u8/u16: compared within
                  3 levels; lumen is within 0.51 of the float64 result)
          Pillow  Image.filter(GaussianBlur(radius=sigma)): NOT the same kernel (box passes)
          torch   torchvision.transforms.functional.gaussian_blur on the uint8 tensor (reflect
                  = reflect101); 'n/a' with a note when torchvision is missing
      box_k5, _k15         lumen.box_blur(img, k)  cv2.blur(img, (k, k))
                           Pillow Image.filter(BoxBlur((k-1)/2)) (edge pixels repeated)
      resize_half, _quarter   lumen.resize(img, (W/d, H/d), interpolation="linear") against
                  cv2.resize(INTER_LINEAR) and torch F.interpolate(bilinear) on x.float()
                  (torch 1.13 has no uint8 bilinear: the conversions are timed, as a torch user
                  pays them), sizes n/d rounded half up
      resize_half_pil, _quarter_pil (u8)   lumen.resize(..., rule="pillow") against
                  Image.resize(BILINEAR, reducing_gap=None) (Pillow widens its filter)
      crop_resize          the centre half (W/2 x H/2) as a view, resized to 1/2 as above;
                  _pil (u8): Image.crop(box).resize(...)
      film                 lumen.film.film(img, "portra400"), no peer (Phos's whole chain is
                  not in OpenCV; bench/film_bench.py times bloom + halation against it)
  Every variant is alternated in one loop (one cold call each, then --repeat rounds, the order
  reversed every other round): lumen into a preallocated out= and fresh (y = lumen.op(img, ...):
  allocation and page faults are the user's cost too), cv2 into dst= and fresh, Pillow and torch
  fresh (they have no out=; Pillow's Image and torch's tensor view are made outside the timing;
  Pillow is single-threaded; neither has 16-bit RGB, so u16 rows have no Pillow or torch).
  Ratios lumen / peer on the minima: l/cv2 = out= / dst=, l/cv2f, l/pil, l/tch = fresh / fresh.
  floor: `lumen bench floors --photo-size` measures a memcpy of the u8 and u16 photo on the
  same threads; a case's floor is that memcpy scaled to the bytes it reads and writes at least
  (input or crop once, output once); l/floor = lumen out= / floor. Before timing, lumen is
  compared with every same-op peer on a 256x192 photo (within 1 level; cv2's Gaussian 3) and the
  run stops on a larger difference; the full-size differences are in the JSON (max_abs_diff, in
  levels). JSON: "photo_rows", "photo_size".

Threads: --threads N (default 2) goes to lumen.Context(threads=N), cv2.setNumThreads(N) and
torch.set_num_threads(N); SciPy is single-threaded (ndimage, and scipy.fft in oaconvolve with
its default workers=1). A peer that cannot be imported is left out with a note on stderr;
without torch the conv cases time lumen alone and their targets are 'not run'.

Before anything is timed, every peer call is run on a small image (256 x 192) and compared
with lumen's result; the run aborts if any differs beyond the reference tests' f32 tolerance
(1e-5 x data span x max(1, sum|k|); the fast Gaussian: 1e-3 x span against cv2.GaussianBlur
with OpenCV's own ksize). After timing, each peer's full-size result is compared again and
the difference is reported (JSON: max_abs_diff).

Targets, on the ratio of minima (lumen min / peer min):
  foundation issue:   filter2d <= 1.0x cv2 at k=3,7 and <= 0.3x at k=15;
                      Gaussian <= 1.0x cv2 at sigma=1 and <= 0.5x at sigma=3,10
  large-kernel issue: filter2d k=31,61,121,201 <= 0.25x cv2.filter2D and <= 0.5x oaconvolve;
                      exact Gaussian sigma=30,50 <= 0.25x cv2.GaussianBlur, fast <= 0.05x;
                      the batch of 10 <= 10x lumen's own warm single-image time
  python issue:       call overhead of a 64x64 f32 blur <= 5 us above the C call
  issue 17 (conv):    l1..l4, pw, dw, s2: lumen GFLOP/s >= 1.2x torch GFLOP/s (on the
                      minima; this ratio is lumen/torch of rates, so above 1 means lumen
                      is faster)
  issue 30 (photo):   u8 RGB filter2d k3, k5, Gaussian sigma 1, 3, box 5: lumen out= <= 0.7x cv2
                      dst=; u16 RGB the same cases <= 0.8x; every case <= 0.5x Pillow where
                      Pillow has the op (lumen fresh / Pillow); u8 k <= 5 (filter2d k3, k5, box
                      5) lumen out= <= 1.5x the memory floor. Set for 4000x3000.
A case lumen answers with lumen.UnsupportedError is "not run", and so are its targets.
Machines are noisy: quote ratios, not milliseconds.

Floors (issue 17): before the cases, `lumen bench floors --json --size WxH --threads N` (the
CLI next to the package: $LUMEN_BIN, else <build>/lumen beside <build>/python, else lumen on
PATH; --no-floors leaves it out) measures in the same run the memcpy of the image, the FMA peak
of the widest vector unit and an FFTW r2c+c2r pair over each padded size, and gives each case
its floor: memory (memcpy x passes), fma (taps x pixels x 2 / peak) or fft (the pair); conv
cases get gflop / peak. The table's 'floor' column is that floor in ms and 'l/floor' lumen min
/ floor; the issue's targets on it (k <= 5 direct, fast Gaussian <= 1.3x memory; direct k = 7,
15 <= 1.5x fma; FFT k >= 31, exact Gaussian sigma >= 30 <= 1.2x the pair) are judged with the
others. JSON: "floors" (the CLI's object) and each row's "floor".
"""

import argparse
import dataclasses
import gc
import importlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

try:
    import cv2
except ImportError:  # cv2 is the reference peer of every target: nothing to compare without it
    cv2 = None

import lumen

from . import bench_photo

# ---- what is timed -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    op: str                    # "filter2d" or "gaussian"
    ksize: int = 0             # filter2d: k; exact Gaussian: 2*round(3*sigma)+1; fast: 0
    sigma: float = 0.0
    precision: str = "exact"
    batch: int = 1


def gaussian_ksize(sigma):
    """lumen bench's Gaussian size 2*round(3*sigma)+1 (C's lround: halves away from zero)."""
    return 2 * int(math.floor(3.0 * sigma + 0.5)) + 1


CASES = (
    [Case(f"filter2d_k{k}", "filter2d", k) for k in (3, 7, 15, 31, 61, 121, 201)]
    + [Case("filter2d_k61_batch10", "filter2d", 61, batch=10)]
    + [Case(f"gaussian_s{s}", "gaussian", gaussian_ksize(s), float(s)) for s in (1, 3, 10, 30, 50)]
    + [Case(f"gaussian_fast_s{s}", "gaussian", 0, float(s), "fast") for s in (30, 50)]
)


@dataclasses.dataclass(frozen=True)
class ConvCase:
    """One NCHW layer of `lumen bench conv` (same names, shapes and data as the C bench)."""
    name: str
    transposed: bool           # False: conv2d, True: conv_transpose2d
    n: int
    c: int
    h: int
    w: int
    k: int                     # output channels
    r: int                     # kernel height and width
    s: int
    stride: int = 1
    pad: int = 0
    output_pad: int = 0
    groups: int = 1
    target: bool = False       # judged by issue 17: lumen >= CONV_TARGET x torch GFLOP/s

    @property
    def op(self):
        return "conv_transpose2d" if self.transposed else "conv2d"

    def weight_shape(self):
        """(K, C/g, R, S) for conv2d, (C, K/g, R, S) for the transposed op, as torch has it."""
        if self.transposed:
            return (self.c, self.k // self.groups, self.r, self.s)
        return (self.k, self.c // self.groups, self.r, self.s)

    def out_hw(self):
        if self.transposed:
            return tuple((i - 1) * self.stride - 2 * self.pad + k + self.output_pad
                         for i, k in ((self.h, self.r), (self.w, self.s)))
        return tuple((i + 2 * self.pad - k) // self.stride + 1
                     for i, k in ((self.h, self.r), (self.w, self.s)))

    def gflop(self, n):
        """2*N*K*P*Q*(C/g)*R*S; transposed: 2*N*C*H*W*(K/g)*R*S (each input feeds K/g*R*S)."""
        if self.transposed:
            terms = self.c * self.h * self.w * (self.k // self.groups)
        else:
            p, q = self.out_hw()
            terms = self.k * p * q * (self.c // self.groups)
        return 2.0 * n * terms * self.r * self.s * 1e-9

    def shape_text(self, n):
        """'32x512x7x7 * 512x512x3x3 p1', as `lumen bench conv` prints it ('*T': transposed)."""
        w = "x".join(map(str, self.weight_shape()))
        text = f"{n}x{self.c}x{self.h}x{self.w} {'*T' if self.transposed else '*'} {w}"
        for tag, v, default in (("s", self.stride, 1), ("p", self.pad, 0),
                                ("op", self.output_pad, 0), ("g", self.groups, 1)):
            text += f" {tag}{v}" if v != default else ""
        return text


CONV_CASES = [
    ConvCase("l1_512x7x7_k3", False, 32, 512, 7, 7, 512, 3, 3, pad=1, target=True),
    ConvCase("l2_64x56x56_k3", False, 8, 64, 56, 56, 64, 3, 3, pad=1, target=True),
    ConvCase("l3_256x14x14_k3", False, 8, 256, 14, 14, 256, 3, 3, pad=1, target=True),
    ConvCase("l4_3x224x224_k7s2", False, 8, 3, 224, 224, 64, 7, 7, stride=2, pad=3, target=True),
    ConvCase("pw_256x28x28_k1", False, 8, 256, 28, 28, 128, 1, 1, target=True),
    ConvCase("dw_128x56x56_k3", False, 8, 128, 56, 56, 128, 3, 3, pad=1, groups=128,
             target=True),
    ConvCase("s2_128x28x28_k3s2", False, 8, 128, 28, 28, 256, 3, 3, stride=2, pad=1,
             target=True),
    ConvCase("tr_256x14x14_k4s2", True, 8, 256, 14, 14, 128, 4, 4, stride=2, pad=1),
    ConvCase("tr_64x56x56_k3s2", True, 8, 64, 56, 56, 32, 3, 3, stride=2, pad=1, output_pad=1),
]
CONV_NAMES = [c.name for c in CONV_CASES]

DEFAULT_SIZE = "3000x2000"   # lumen bench's and the targets' image
OVERHEAD_CASE = "overhead"
PHOTO_NAMES = bench_photo.NAMES
CASE_NAMES = [c.name for c in CASES] + [OVERHEAD_CASE] + CONV_NAMES + PHOTO_NAMES
#: --case words that pick a group of cases (the filter ops are name prefixes already):
#: conv, conv2d, conv_transpose2d; photo, photo_u8, photo_u16 (bench_photo.GROUPS).
CASE_GROUPS = {"conv": CONV_NAMES,
               **{op: [c.name for c in CONV_CASES if c.op == op]
                  for op in ("conv2d", "conv_transpose2d")},
               **bench_photo.GROUPS}

BIG_K = (31, 61, 121, 201)
#: case name -> [(against, limit)]: lumen/peer ratio of minima must be <= limit. `against` is
#: a peer, or "lumen x1" (the batch case against lumen's own single-image case).
TARGETS = {
    "filter2d_k3": [("cv2", 1.0)], "filter2d_k7": [("cv2", 1.0)], "filter2d_k15": [("cv2", 0.3)],
    **{f"filter2d_k{k}": [("cv2", 0.25), ("scipy", 0.5)] for k in BIG_K},
    "filter2d_k61_batch10": [("lumen x1", 10.0)],
    "gaussian_s1": [("cv2", 1.0)], "gaussian_s3": [("cv2", 0.5)], "gaussian_s10": [("cv2", 0.5)],
    "gaussian_s30": [("cv2", 0.25)], "gaussian_s50": [("cv2", 0.25)],
    "gaussian_fast_s30": [("cv2", 0.05)], "gaussian_fast_s50": [("cv2", 0.05)],
}
#: The batch case's single-image counterpart.
BATCH_SINGLE = {"filter2d_k61_batch10": "filter2d_k61"}
#: "Call overhead for a 64x64 f32 blur <= 5 us above the C call".
OVERHEAD_LIMIT_US = 5.0
OVERHEAD_SIDE = 64

SCIPY_DIRECT_MAX_K = 7        # ndimage.correlate up to here, oaconvolve above (k >= 15)
SCIPY_GAUSS_MAX_SIGMA = 10    # correlate1d beyond this takes seconds per call
CHECK_W, CHECK_H = 256, 192   # > every pad (150 at sigma 50): one reflection, no wrap-around
F32_REL = 1e-5                # tests/python/tolerances.py
FAST_GAUSS_REL = 1e-3

COLUMNS = """\
columns:
  case           the case name (--case picks them)
  k              kernel size (filter2d k x k; Gaussian ksize = 2*round(3*sigma)+1; '-' for the
                 fast Gaussian, which has none)
  method         what lumen ran (lumen.last_run()["method"]): direct, separable, fft, recursive
  cold           ms of lumen's first call on a fresh lumen.Context (FFT planning, kernel
                 spectrum, thread start-up, first touch), not part of min/med
  lumen min/med  ms, min and median of the warm lumen calls
  cv2 ... torch  ms, min/median of the warm peer calls; '-' not run (peer missing or turned
                 off, or no such peer for the case); 'skipped (Ns/call)' over --torch-cap
  l/cv2 l/sp l/torch
                 lumen min / peer min: below 1 means lumen is faster (0.25 = 4x faster)
  batch row      peers are 10x their single-image time; lumen is one call on N=10 images
  floor l/floor  the case's floor in ms (lumen bench floors: memory, fma or fft) and lumen min
                 / floor: 1 is the machine's limit, the issue's targets are 1.2-1.5
conv table: shape is x * w ('*T': transposed; s stride, p padding, op output padding,
  g groups); algo is lumen.last_run()["algo"]; ms min/median and GFLOP/s on the min for lumen
  and torch; l/torch = lumen GFLOP/s / torch GFLOP/s (above 1: lumen faster); rel err =
  max|lumen - torch| / max|torch|; %peak = lumen GFLOP/s / the FMA peak of lumen bench floors.
targets: met when the ratio is <= the limit (conv: >=), MISSED when not, 'not run' when a side
  is absent.
photo table: lumen out= / fresh, cv2 dst= / fresh, pillow, torch: ms min/median; l/cv2 = lumen
  out= / cv2 dst=, l/cv2f = lumen fresh / cv2 fresh, l/pil and l/tch = lumen fresh / the peer;
  floor = memcpy of the case's read + write bytes (ms), l/floor = lumen out= / floor.
overhead: min and median us per call of the C call (timed in C) and of the Python call with
  out= given and with a new output; overhead = Python - C, judged on the min."""


# ---- inputs --------------------------------------------------------------------------------

def lcg_floats(n, seed, lo, hi):
    """lumen's cli_lcg_unit sequence (Knuth's MMIX LCG, top 24 bits), as lumen bench uses it.

    Vectorised, because the conv cases need millions of values: the i-th state (i = 1..n) is
    a^i * seed + c * (1 + a + ... + a^(i-1)) mod 2^64, and NumPy's uint64 products and sums
    wrap modulo 2^64 exactly as the C loop does."""
    a, c = np.uint64(6364136223846793005), np.uint64(1442695040888963407)
    powers = np.cumprod(np.full(n, a, np.uint64))                           # a^1 .. a^n
    geometric = np.cumsum(np.concatenate((np.ones(1, np.uint64), powers[:-1])))[:n]
    state = powers * np.uint64(seed) + geometric * c
    u = (state >> np.uint64(40)).astype(np.float32) / np.float32(1 << 24)  # exact: 24-bit ints
    return np.float32(lo) + (np.float32(hi) - np.float32(lo)) * u


def filter_kernel(k):
    """lumen bench's random k x k kernel for filter2d_kK (seed 1000 + k)."""
    return lcg_floats(k * k, 1000 + k, -1.0, 1.0).reshape(k, k)


def gauss_taps(case):
    return cv2.getGaussianKernel(case.ksize, case.sigma, ktype=cv2.CV_32F).ravel()


#: Arrays the bench makes start on a cache line, as torch's own tensors and lumen bench's C
#: buffers do. NumPy's large arrays start 16 bytes past one (glibc's mmap'ed blocks), so every
#: 64-byte vector load or store of them touches two lines: conv l4 into such a y took 5.34-5.38
#: ms against 5.13 into an aligned one (Zen 5, 2 threads).
CACHE_LINE = 64


def aligned_zeros(shape, dtype=np.float32):
    """Zeros of shape and dtype, starting on a cache line; written, so no timed call pays their
    first-touch page faults."""
    dtype = np.dtype(dtype)
    n = math.prod(shape) * dtype.itemsize
    raw = np.empty(n + CACHE_LINE, np.uint8)
    raw.fill(0)
    off = -raw.ctypes.data % CACHE_LINE
    return raw[off:off + n].view(dtype).reshape(shape)


def aligned_copy(a):
    out = aligned_zeros(a.shape, a.dtype)
    out[...] = a
    return out


def make_image(w, h, seed=42):
    return aligned_copy(np.random.default_rng(seed).random((h, w), dtype=np.float32))


def tune_malloc():
    """glibc's malloc settings for the whole run, as `MALLOC_MMAP_THRESHOLD_=33554432
    MALLOC_TRIM_THRESHOLD_=... MALLOC_TOP_PAD_=...` would set them; a line for the header.

    torch allocates every conv output anew. With glibc's defaults a block that large is
    sometimes mmap'ed and unmapped per call, or the heap's top trimmed and regrown, and each
    call then pays a page fault per 4 KiB of its output: about 6 us each in this KVM guest,
    which took torch's l4 (25.7 MB out) from 6.4-6.8 ms to 56-116 ms in some runs ("torch's
    slow state", docs/benchmarks.md). Blocks up to 32 MiB from the heap, never trimmed, give
    every call the memory the last one freed. lumen's calls here write into out= arrays."""
    import ctypes
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim, m_top_pad, m_mmap = -1, -2, -3
        ok = (libc.mallopt(m_mmap, 32 << 20) and libc.mallopt(m_trim, (1 << 31) - 1)
              and libc.mallopt(m_top_pad, 64 << 20))
    except (OSError, AttributeError):
        ok = False
    return ("glibc mmap threshold 32 MiB, no trimming, 64 MiB top pad (--malloc default: "
            "glibc's own)") if ok else "glibc's defaults (mallopt not available)"


def reflect_pad(img, pad_y, pad_x):
    """img extended by BORDER_REFLECT. cv2.copyMakeBorder, not np.pad: numpy 1.24's
    'symmetric' is wrong for pads wider than the image (see tests/python/conftest.py)."""
    return cv2.copyMakeBorder(img, pad_y, pad_y, pad_x, pad_x, cv2.BORDER_REFLECT)


# ---- lumen ---------------------------------------------------------------------------------

def lumen_fn(case, img, out, ctx):
    """The lumen call of a case on img (H x W, or N x H x W x 1), writing into out."""
    if case.op == "filter2d":
        kernel = filter_kernel(case.ksize)
        return lambda: lumen.filter2d(img, kernel, border="reflect", out=out, context=ctx)
    if case.precision == "fast":  # the recursive Gaussian has no ksize
        return lambda: lumen.gaussian_blur(img, case.sigma, border="reflect", precision="fast",
                                           out=out, context=ctx)
    return lambda: lumen.gaussian_blur(img, case.sigma, ksize=case.ksize, border="reflect",
                                       out=out, context=ctx)


def batch_of(img, n):
    """n copies of img as an N x H x W x 1 batch (lumen's layout for a batch of gray images)."""
    return np.ascontiguousarray(np.broadcast_to(img[None, :, :, None], (n,) + img.shape + (1,)))


# ---- peers ---------------------------------------------------------------------------------

@dataclasses.dataclass
class Peer:
    lib: str
    call: str        # what is timed, in words
    fn: object       # () -> np.ndarray, the result on the bench image
    macs: float = 0  # multiply-adds (torch's cost estimate)


def cv2_peer(case, img):
    out = aligned_zeros(img.shape)  # dst= like lumen's out=: neither side pays a new 24 MB array
    if case.op == "filter2d":
        k = filter_kernel(case.ksize)
        return Peer("cv2", "cv2.filter2D", lambda: cv2.filter2D(
            img, -1, k, dst=out, borderType=cv2.BORDER_REFLECT))
    ks = (case.ksize, case.ksize)
    return Peer("cv2", "cv2.GaussianBlur", lambda: cv2.GaussianBlur(
        img, ks, case.sigma, dst=out, borderType=cv2.BORDER_REFLECT))


def scipy_peer(case, img):
    import scipy.ndimage as ndi
    import scipy.signal as sps
    if case.op == "filter2d":
        k = filter_kernel(case.ksize)
        if case.ksize <= SCIPY_DIRECT_MAX_K:
            out = aligned_zeros(img.shape)
            return Peer("scipy", "ndi.correlate", lambda: ndi.correlate(
                img, k, output=out, mode="reflect"))
        p, flipped = case.ksize // 2, k[::-1, ::-1].copy()  # flipped: convolution = correlation
        return Peer("scipy", "oaconvolve", lambda: sps.oaconvolve(
            reflect_pad(img, p, p), flipped, mode="valid"))
    if case.sigma > SCIPY_GAUSS_MAX_SIGMA:
        return None
    g, tmp, out = gauss_taps(case), aligned_zeros(img.shape), aligned_zeros(img.shape)

    def correlate1d_x2():
        ndi.correlate1d(img, g, axis=1, output=tmp, mode="reflect")
        return ndi.correlate1d(tmp, g, axis=0, output=out, mode="reflect")
    return Peer("scipy", "correlate1d x2", correlate1d_x2)


def torch_peer(case, img):
    import torch
    import torch.nn.functional as F
    p = case.ksize // 2
    x = torch.from_numpy(reflect_pad(img, p, p))[None, None]  # padded outside the timing
    h, w = img.shape
    if case.op == "filter2d":
        wt = torch.from_numpy(filter_kernel(case.ksize))[None, None]
        return Peer("torch", "conv2d", lambda: _no_grad(lambda: F.conv2d(x, wt))[0, 0].numpy(),
                    macs=float(h * w * case.ksize ** 2))
    g = torch.from_numpy(gauss_taps(case))
    row, col = g.reshape(1, 1, 1, -1), g.reshape(1, 1, -1, 1)
    return Peer("torch", "conv2d 1xk, kx1",
                lambda: _no_grad(lambda: F.conv2d(F.conv2d(x, row), col))[0, 0].numpy(),
                macs=float((h + 2 * p) * w * case.ksize + h * w * case.ksize))


def _no_grad(fn):
    import torch
    with torch.no_grad():  # no autograd bookkeeping: plain inference, as a torch user would
        return fn()


PEER_MAKERS = {"cv2": cv2_peer, "scipy": scipy_peer, "torch": torch_peer}


def exact_twin(case):
    """The exact single-image case whose peer calls stand for this case's: the fast Gaussian
    is timed against the exact one, the batch against 10x the single image."""
    if case.op == "filter2d":
        return Case(f"filter2d_k{case.ksize}", "filter2d", case.ksize)
    return Case(f"gaussian_s{case.sigma:g}", "gaussian", gaussian_ksize(case.sigma), case.sigma)


# ---- timing --------------------------------------------------------------------------------

def time_calls(fn, repeat, cap_s=None):
    """{"ms_cold", "ms_min", "ms_median", "result"}: one first call, then `repeat` timed ones;
    when the first call took over cap_s seconds, no more calls and status 'skipped'."""
    t0 = time.perf_counter()
    result = fn()
    cold = (time.perf_counter() - t0) * 1e3
    if cap_s is not None and cold > cap_s * 1e3:
        return {"status": "skipped", "ms_cold": cold, "note": f"skipped ({secs(cold / 1e3)}/call)"}
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        warm.append((time.perf_counter() - t0) * 1e3)
    return {"status": "ok", "ms_cold": cold, "ms_min": min(warm),
            "ms_median": statistics.median(warm), "result": result}


def secs(s):
    return f"{s:.1f}s" if s < 10 else f"{s:.0f}s"


class TorchBudget:
    """Keeps torch's direct convolutions of huge kernels from running for minutes: predicts a
    call from the best rate measured so far and refuses calls far over the cap."""

    def __init__(self, cap_s):
        self.cap_s, self.best_s_per_mac = cap_s, None

    def predict_s(self, peer):
        return None if self.best_s_per_mac is None else peer.macs * self.best_s_per_mac

    def run(self, peer, repeat):
        est = self.predict_s(peer)
        if est is not None and est > 4 * self.cap_s:  # the best rate says far too long
            return {"status": "skipped", "note": f"skipped (~{secs(est)}/call est.)"}
        r = time_calls(peer.fn, repeat, self.cap_s)
        ms = r.get("ms_min", r["ms_cold"])
        rate = ms * 1e-3 / peer.macs
        self.best_s_per_mac = min(rate, self.best_s_per_mac or rate)
        return r


# ---- comparing results ---------------------------------------------------------------------

def tolerance(case, img):
    """Allowed max |lumen - peer| (tests/python/tolerances.py's rules)."""
    span = float(img.max() - img.min()) or 1.0
    if case.precision == "fast":
        return FAST_GAUSS_REL * span
    ksum = float(np.abs(filter_kernel(case.ksize)).sum()) if case.op == "filter2d" else 1.0
    return F32_REL * span * max(1.0, ksum)


def max_diff(a, b):
    a, b = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
    if a.shape != b.shape:
        return math.inf
    return float(np.max(np.abs(a - b)))


def fast_reference(case, img):
    """What the fast Gaussian approximates: cv2.GaussianBlur with OpenCV's own (larger) ksize."""
    return cv2.GaussianBlur(img, (0, 0), case.sigma, borderType=cv2.BORDER_REFLECT)


def check_case(case, libs, ctx):
    """[{case, what, max_abs_diff, tol}] of lumen against every peer on a small image."""
    img = make_image(CHECK_W, CHECK_H, seed=7)
    exact = exact_twin(case)
    want = np.empty_like(img)
    lumen_fn(exact, img, want, ctx)()
    tol, got = tolerance(exact, img), []
    for lib in libs:
        peer = PEER_MAKERS[lib](exact, img)
        if peer is not None:
            got.append((peer.call, max_diff(peer.fn(), want), tol))
    if case.precision == "fast":
        fast = np.empty_like(img)
        lumen_fn(case, img, fast, ctx)()
        got.append(("lumen fast vs cv2.GaussianBlur(ksize=0)",
                    max_diff(fast, fast_reference(case, img)), tolerance(case, img)))
    if case.batch > 1:
        batch = np.empty((2,) + img.shape + (1,), np.float32)
        lumen_fn(case, batch_of(img, 2), batch, ctx)()
        got.append(("lumen batch vs single", max_diff(batch[1, ..., 0], want), tol))
    return [{"case": case.name, "what": w, "max_abs_diff": e, "tol": t} for w, e, t in got]


DEVICE = "cpu"  # --device: where lumen runs (the peers run where they run)


def lumen_context(threads):
    """A fresh lumen context on --device, strict: a timing of the CPU fallback would be
    reported as the device's."""
    return lumen.Context(threads=threads, device=DEVICE, strict=DEVICE != "cpu")


def check_all(cases, libs, threads):
    """Runs check_case for every case; aborts loudly at the first disagreement."""
    ctx, results = lumen_context(threads), []
    for case in cases:
        for r in check_case(case, libs, ctx):
            if not r["max_abs_diff"] <= r["tol"]:  # also catches NaN
                sys.exit(f"lumen.bench: FATAL: {r['case']}: {r['what']} differs from lumen on "
                         f"a {CHECK_W}x{CHECK_H} f32 image: max |diff| {r['max_abs_diff']:.3g} "
                         f"> {r['tol']:.3g}. The timings would not compare like with like.")
            results.append(r)
    return results


def print_check(results):
    if results:
        worst = max(results, key=lambda r: r["max_abs_diff"] / r["tol"])
        print(f"start-up check: {len(results)} peer results equal lumen's on {CHECK_W}x{CHECK_H} "
              f"within tolerance (closest: {worst['case']} {worst['what']}, "
              f"{worst['max_abs_diff']:.2g} of {worst['tol']:.2g})")


# ---- running a case ------------------------------------------------------------------------

class Runner:
    """Times lumen and the peers case by case; peer timings are shared between cases that
    ask the same thing (see exact_twin), lumen's are kept for the batch case's x1 ratio."""

    def __init__(self, args, libs, img):
        self.args, self.libs, self.img = args, libs, img
        self.torch = TorchBudget(args.torch_cap)
        self.peer_cache, self.lumen_cache = {}, {}
        self.out = aligned_zeros(img.shape)  # touched now: no cold call pays its page faults

    def lumen(self, case):
        if case.name not in self.lumen_cache:
            self.lumen_cache[case.name] = self._time_lumen(case)
        return self.lumen_cache[case.name]

    def _time_lumen(self, case):
        img, out = self.img, self.out
        if case.batch > 1:
            img, out = batch_of(img, case.batch), np.zeros((case.batch,) + img.shape + (1,),
                                                           np.float32)
        ctx = lumen_context(self.args.threads)  # fresh: the cold call pays it all
        try:
            r = time_calls(lumen_fn(case, img, out, ctx), self.args.repeat)
        except lumen.UnsupportedError as e:
            return {"status": "unsupported", "error": str(e)}
        run = lumen.last_run()
        r.update({k: run.get(k) for k in ("method", "isa", "threads", "device")})
        r["result"] = out if case.batch == 1 else None
        return r

    def peers(self, case):
        key = exact_twin(case)
        if key not in self.peer_cache:
            self.peer_cache[key] = {lib: self._time_peer(lib, key) for lib in self.libs}
        got = self.peer_cache[key]
        return {lib: scaled(r, case.batch) for lib, r in got.items()} if case.batch > 1 else got

    def _time_peer(self, lib, case):
        peer = PEER_MAKERS[lib](case, self.img)
        if peer is None:
            return {"status": "n/a", "call": None}
        if lib == "torch":
            r = self.torch.run(peer, self.args.repeat)
        else:
            r = time_calls(peer.fn, self.args.repeat)
        r["call"] = peer.call
        return r

    def row(self, case):
        lu, peers = self.lumen(case), self.peers(case)
        single = self.lumen(next(c for c in CASES if c.name == BATCH_SINGLE[case.name])) \
            if case.name in BATCH_SINGLE else None
        row = make_row(case, lu, peers, single, self.img.shape)
        self.drop_results()
        return row

    def drop_results(self):
        """Full-size results are compared once, in make_row; keeping them all would hold
        hundreds of MB (three peers x twelve cases x 24 MB at 3000x2000)."""
        for r in list(self.lumen_cache.values()) + [
                r for got in self.peer_cache.values() for r in got.values()]:
            r.pop("result", None)


def scaled(r, n):
    """A peer's timing for n images in a row (the batch case)."""
    if r.get("status") != "ok":
        return dict(r, result=None)
    return dict(r, call=f"{n}x {r['call']}", result=None,
                **{k: r[k] * n for k in ("ms_cold", "ms_min", "ms_median")})


def ratio(a, b):
    return a / b if a and b else None


def make_row(case, lu, peers, single, shape):
    """The JSON-ready row of a case: timings, ratios, full-size differences, targets."""
    ok = lu.get("status") == "ok"
    lmin, lmed = (lu["ms_min"], lu["ms_median"]) if ok else (None, None)
    ratios = {lib: ratio(lmin, r.get("ms_min")) for lib, r in peers.items()}
    ratios_med = {lib: ratio(lmed, r.get("ms_median")) for lib, r in peers.items()}
    if single is not None:
        ratios["lumen x1"] = ratio(lmin, single.get("ms_min"))
        ratios_med["lumen x1"] = ratio(lmed, single.get("ms_median"))
    diffs = {lib: max_diff(r["result"], lu["result"]) for lib, r in peers.items()
             if ok and r.get("result") is not None and lu.get("result") is not None}
    return {
        "name": case.name, "op": case.op, "ksize": case.ksize or None,
        "sigma": case.sigma or None, "precision": case.precision, "batch": case.batch,
        "width": shape[1], "height": shape[0],
        "lumen": {k: v for k, v in lu.items() if k != "result"},
        "peers": {lib: {k: v for k, v in r.items() if k != "result"} for lib, r in peers.items()},
        "ratio": ratios, "ratio_median": ratios_med, "max_abs_diff": diffs,
        "targets": judge(case.name, ratios),
    }


def judge(name, ratios):
    """[{against, ratio, limit, verdict}] for the case's targets."""
    out = []
    for against, limit in TARGETS.get(name, []):
        r = ratios.get(against)
        verdict = "not run" if r is None else ("met" if r <= limit else "MISSED")
        out.append({"against": against, "ratio": r, "limit": limit, "verdict": verdict})
    return out


def diff_warnings(row, img):
    """Full-size results that differ beyond tolerance (exact cases; the fast one approximates)."""
    case = next(c for c in CASES if c.name == row["name"])
    if case.precision == "fast":
        return []
    tol = tolerance(case, img)
    return [f"{row['name']}: {lib} differs from lumen on the bench image: max |diff| "
            f"{d:.3g} > {tol:.3g}" for lib, d in row["max_abs_diff"].items() if not d <= tol]


# ---- call overhead -------------------------------------------------------------------------

def time_c_calls(a, o, ctx, calls):
    """Per-call seconds of the bare C call, timed in C; None when the helper is missing."""
    try:  # a private helper of the extension: lumen._lumen._time_c(op, src, out, repeat, ...)
        helper = importlib.import_module("lumen._lumen")._time_c
    except (ImportError, AttributeError):
        return None
    return helper("gaussian_blur", a, o, calls, sigma=1.0, context=ctx)


def time_py_calls(a, o, ctx, calls, fresh):
    """Per-call seconds of lumen.gaussian_blur from Python; the loop is spelled out (no lambda)
    so that only the call itself sits between the two clock reads."""
    gb, clock, ns = lumen.gaussian_blur, time.perf_counter_ns, [0] * calls
    if fresh:
        for i in range(calls):
            t0 = clock()
            gb(a, 1.0, context=ctx)
            ns[i] = clock() - t0
    else:
        for i in range(calls):
            t0 = clock()
            gb(a, 1.0, out=o, context=ctx)
            ns[i] = clock() - t0
    return [t * 1e-9 for t in ns]


def stats_us(seconds):
    return None if not seconds else {"min": min(seconds) * 1e6,
                                     "median": statistics.median(seconds) * 1e6}


def measure_overhead(calls, rounds=4):
    """C call, Python with out=, Python with a new output: interleaved in `rounds` blocks so
    that a noisy spell on the shared machine hits all three alike. One thread: OpenMP start-up
    noise would otherwise swamp microseconds."""
    ctx = lumen.Context(threads=1)
    a = make_image(OVERHEAD_SIDE, OVERHEAD_SIDE)
    o = np.zeros_like(a)
    per = max(1, calls // rounds)
    c, py_out, py_new = [], [], []
    time_py_calls(a, o, ctx, 200, False)  # warm-up: the context, caches, branch predictors
    gc_was = gc.isenabled()
    gc.disable()  # a collection inside a timed call is not call overhead
    try:
        for _ in range(rounds):
            got = time_c_calls(a, o, ctx, per)
            c = None if got is None else c + list(got)
            py_out += time_py_calls(a, o, ctx, per, False)
            py_new += time_py_calls(a, o, ctx, per, True)
    finally:
        if gc_was:
            gc.enable()
    return overhead_result(c, py_out, py_new, per * rounds)


def overhead_result(c, py_out, py_new, calls):
    res = {"image": f"{OVERHEAD_SIDE}x{OVERHEAD_SIDE} f32", "sigma": 1.0, "threads": 1,
           "calls": calls, "c_us": stats_us(c), "python_out_us": stats_us(py_out),
           "python_new_us": stats_us(py_new), "limit_us": OVERHEAD_LIMIT_US, "targets": []}
    for label, key in (("out= given", "python_out_us"), ("new output", "python_new_us")):
        py = res[key]
        over = None if c is None else {s: py[s] - res["c_us"][s] for s in ("min", "median")}
        res[key.replace("_us", "_overhead_us")] = over
        verdict = "not run" if over is None else (
            "met" if over["min"] <= OVERHEAD_LIMIT_US else "MISSED")
        res["targets"].append({"against": f"C call, {label}", "overhead_us": over and over["min"],
                               "limit_us": OVERHEAD_LIMIT_US, "verdict": verdict})
    return res


# ---- conv: lumen.conv2d / conv_transpose2d against torch ------------------------------------

#: Issue 17's target: lumen's GFLOP/s >= this many times torch's (oneDNN), on l1..l4, the 1x1,
#: the depthwise and the stride-2 case (the conv issue before it asked 1.0 on l1..l4).
CONV_TARGET = 1.2
#: Largest allowed max|lumen - torch| / max|torch|: f32 sums of up to 4608 terms stay near
#: 1e-6; a wrong fast path is off by O(1).
CONV_REL = 1e-4
#: Seeds of `lumen bench conv`: the same tensors in both benches.
CONV_X_SEED, CONV_W_SEED = 42, 43


def conv_tensors(case, n):
    """x (N, C, H, W) and w as `lumen bench conv` makes them: LCG values in [-1, 1)."""
    shape_x, shape_w = (n, case.c, case.h, case.w), case.weight_shape()
    x = aligned_copy(lcg_floats(math.prod(shape_x), CONV_X_SEED, -1.0, 1.0).reshape(shape_x))
    w = aligned_copy(lcg_floats(math.prod(shape_w), CONV_W_SEED, -1.0, 1.0).reshape(shape_w))
    return x, w


def conv_params(case):
    """Keyword arguments shared by lumen's and torch's calls (torch's names)."""
    p = {"stride": case.stride, "padding": case.pad, "groups": case.groups}
    if case.transposed:
        p["output_padding"] = case.output_pad
    return p


def lumen_conv_fn(case, x, w, out, ctx):
    fn = lumen.conv_transpose2d if case.transposed else lumen.conv2d
    params = conv_params(case)
    return lambda: fn(x, w, None, out=out, context=ctx, **params)


def lumen_packed_fn(case, x, w, out, ctx):
    """lumen.conv2d with weights packed once (lumen.Conv2dWeights, outside the timing), as an
    inference loop calls a layer; None for conv_transpose2d (no packed form)."""
    if case.transposed:
        return None
    params = conv_params(case)
    packed = lumen.Conv2dWeights(w, x.shape, context=ctx, **params)
    return lambda: lumen.conv2d(x, packed, None, out=out, context=ctx)


def torch_conv_fn(case, x, w):
    """torch.nn.functional on the same memory (torch.from_numpy shares it: no copy)."""
    import torch
    import torch.nn.functional as F
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    fn = F.conv_transpose2d if case.transposed else F.conv2d
    params = conv_params(case)
    return lambda: fn(xt, wt, None, **params)


def time_interleaved(fns, repeat):
    """{name: [cold ms, warm ms...]}: one cold call each, then `repeat` rounds that call every
    fn once, the order alternating per round so neither always runs right after the other."""
    clock, ms, results = time.perf_counter, {}, {}
    names = list(fns)
    for name in names:
        t0 = clock()
        results[name] = fns[name]()
        ms[name] = [(clock() - t0) * 1e3]
    for i in range(repeat):
        for name in (names if i % 2 == 0 else names[::-1]):
            t0 = clock()
            fns[name]()
            ms[name].append((clock() - t0) * 1e3)
    return ms, results


def conv_timing(ms, gflop):
    warm = ms[1:]
    lo, med = min(warm), statistics.median(warm)
    return {"status": "ok", "ms_cold": ms[0], "ms_min": lo, "ms_median": med,
            "gflops": gflop / lo * 1e3, "gflops_median": gflop / med * 1e3}


def max_rel_err(got, want):
    """max|got - want| / max|want|: relative to the output's scale, not per element (an
    element near zero would make any rounding look huge)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return math.inf
    return float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1.0))


def run_conv_case(case, args, libs):
    """Times lumen and torch interleaved on the same tensors; the row of the case."""
    n = args.batch or case.n
    x, w = conv_tensors(case, n)
    out = aligned_zeros((n, case.k) + case.out_hw())  # touched: no page faults timed
    ctx = lumen_context(args.threads)  # fresh: the cold call pays its one-time costs
    fns = {"lumen": lumen_conv_fn(case, x, w, out, ctx)}
    packed = lumen_packed_fn(case, x, w, out, ctx)
    if packed:
        fns["packed"] = packed
    if "torch" in libs:
        fns["torch"] = torch_conv_fn(case, x, w)
    gflop = case.gflop(n)
    try:
        with _torch_no_grad(libs):
            ms, results = time_interleaved(fns, args.repeat)
    except lumen.UnsupportedError as e:
        lu, peer, err = {"status": "unsupported", "error": str(e)}, {"status": "n/a"}, None
        pk = {"status": "n/a"}
    else:
        lu = conv_timing(ms["lumen"], gflop)
        run = lumen.last_run() or {}
        lu.update({k: run.get(k) for k in ("algo", "isa", "threads", "device")})
        pk = conv_timing(ms["packed"], gflop) if "packed" in ms else {"status": "n/a"}
        peer, err = {"status": "n/a"}, None
        if "torch" in fns:
            import torch
            peer = dict(conv_timing(ms["torch"], gflop), threads=torch.get_num_threads(),
                        call=f"torch.nn.functional.{case.op}")
            err = max_rel_err(out, results["torch"].numpy())
    ratio = lu["gflops"] / peer["gflops"] if "gflops" in lu and "gflops" in peer else None
    ratio_med = (lu["gflops_median"] / peer["gflops_median"]
                 if "gflops" in lu and "gflops" in peer else None)
    ratio_pk = (pk["gflops"] / peer["gflops"]
                if "gflops" in pk and "gflops" in peer else None)
    return {"name": case.name, "op": case.op, "shape": case.shape_text(n), "n": n,
            "out": [n, case.k, *case.out_hw()], "gflop": gflop, "lumen": lu, "torch": peer,
            "lumen_packed": pk, "ratio": ratio, "ratio_median": ratio_med,
            "ratio_packed": ratio_pk, "max_rel_err": err,
            "torch_impl": (ONEDNN.get("impl") or {}).get(case.name),
            "targets": conv_targets(case, ratio)}


def _torch_no_grad(libs):
    """torch.no_grad() when torch runs (plain inference, as a torch user would), else nothing."""
    if "torch" not in libs:
        import contextlib
        return contextlib.nullcontext()
    import torch
    return torch.no_grad()


def conv_targets(case, ratio):
    """Issue 17's target on l1..l4, pw, dw and s2: lumen GFLOP/s / torch GFLOP/s >= CONV_TARGET."""
    if not case.target:
        return []
    verdict = "not run" if ratio is None else ("met" if ratio >= CONV_TARGET else "MISSED")
    return [{"against": "torch GFLOP/s", "ratio": ratio, "limit": CONV_TARGET,
             "at_least": True, "verdict": verdict}]


def conv_warnings(row):
    err = row["max_rel_err"]
    if err is None or err <= CONV_REL:
        return []
    return [f"{row['name']}: torch differs from lumen: max |diff| / max |torch| {err:.3g} "
            f"> {CONV_REL:g}"]


CONV_HEAD = (f"{'case':<18} {'shape (x * w)':<34} {'algo':<13} {'lumen min/med':>13} "
             f"{'GFLOP/s':>8} {'packed':>7} {'torch min/med':>13} {'GFLOP/s':>8} "
             f"{'l/torch':>7} {'pk/t':>5} {'rel err':>8} {'floor':>7} {'l/floor':>7} {'%peak':>5}"
             f"  torch's oneDNN")


def print_conv_title(args):
    print(f"\nconv: f32 NCHW, values in [-1, 1) (lumen bench conv's data), 1 cold + "
          f"{args.repeat} warm calls each, lumen and torch interleaved; ms min/median, "
          f"GFLOP/s on the min; l/torch = lumen GFLOP/s / torch GFLOP/s (above 1: lumen "
          f"faster); packed: GFLOP/s of lumen.conv2d with lumen.Conv2dWeights (weights "
          f"transformed once), pk/t its ratio to torch")
    print(onednn_line() + f"; lumen: {lumen_isa_line(args)}")
    print(f"{CONV_HEAD}\n" + "-" * len(CONV_HEAD))


def print_conv_row(row):
    lu, t = row["lumen"], row["torch"]
    if lu["status"] == "ok":
        left = f"{lu.get('algo') or '?':<13} {min_med(lu):>13} {lu['gflops']:>8.1f}"
    else:
        left = f"{'n/a':<13} {lu['status']:>22}"
    right = (f"{min_med(t):>13} {t['gflops']:>8.1f}" if t.get("status") == "ok"
             else f"{'-':>13} {'-':>8}")
    err = "-" if row["max_rel_err"] is None else f"{row['max_rel_err']:.1e}"
    pk = row["lumen_packed"]
    pk_text = f"{pk['gflops']:>7.1f}" if pk.get("status") == "ok" else f"{'-':>7}"
    left = left + " " + pk_text
    fl = row.get("floor")
    peak = "-" if not fl or fl["of_peak"] is None else f"{100 * fl['of_peak']:.0f}"
    print(f"{row['name']:<18} {row['shape']:<34} {left} {right} {fmt_ratio(row['ratio']):>7} "
          f"{fmt_ratio(row['ratio_packed']):>5} {err:>8} {floor_cells(fl)} {peak:>5}  "
          f"{row['torch_impl'] or '-'}", flush=True)


#: What torch's oneDNN said about itself and each case (onednn_probe); filled per run.
ONEDNN = {}
#: LUMEN_CPU_ISA -> the oneDNN cap of the same vector width, so that the comparison is fair.
ONEDNN_CAPS = {"avx2": "AVX2", "generic": "SSE41"}

_PROBE = r"""
import json, sys, torch, torch.nn.functional as F
spec = json.loads(sys.argv[1])
torch.set_num_threads(spec["threads"])
with torch.no_grad():
    for c in spec["cases"]:
        print("lumen-bench-case," + c["name"], flush=True)
        x = torch.zeros(c["x"])
        w = torch.zeros(c["w"])
        fn = F.conv_transpose2d if c["transposed"] else F.conv2d
        fn(x, w, None, **c["params"])
        print("", flush=True)
"""


def cap_onednn_isa():
    """With LUMEN_CPU_ISA=avx2 (generic), caps torch's oneDNN to AVX2 (SSE4.1) as well: the
    variable must be set before torch loads, so this runs before anything imports it. A cap
    the user set is kept. Returns the cap in force, or None."""
    cap = ONEDNN_CAPS.get(os.environ.get("LUMEN_CPU_ISA", "").strip().lower())
    if cap and "torch" not in sys.modules:
        for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
            if not os.environ.get(var):  # empty counts as unset
                os.environ[var] = cap
    return os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")


def onednn_probe(cases, args):
    """Runs each case once in a child python with ONEDNN_VERBOSE=1 (the parent's environment,
    caps included) and reads oneDNN's own lines: its version, the ISA it dispatches to and the
    implementation of each case's convolution ('-' in the table: torch did not use oneDNN)."""
    import subprocess
    import torch
    spec = {"threads": torch.get_num_threads(), "cases": [
        {"name": c.name, "transposed": c.transposed, "params": conv_params(c),
         "x": [args.batch or c.n, c.c, c.h, c.w], "w": list(c.weight_shape())} for c in cases]}
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(spec)], env=env,
                           capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    info, impl, case = {"cap": cap_onednn_isa(), "impl": {}}, {}, None
    for line in r.stdout.splitlines():
        f = line.split(",")
        if f[0] == "lumen-bench-case":
            case = f[1]
        elif len(f) > 3 and f[1] == "info" and f[2] == "cpu" and f[3].startswith("isa:"):
            info["isa"] = f[3][4:]
        elif len(f) > 2 and f[1] == "info" and f[2].startswith("oneDNN"):
            info["version"] = f[2].split(" (")[0]
        elif len(f) > 4 and f[1] == "exec" and f[3] in ("convolution", "deconvolution") and case:
            impl.setdefault(case, f[4])
    info["impl"] = impl
    if r.returncode:
        info["error"] = r.stderr.strip().splitlines()[-1:] or ["exit %d" % r.returncode]
    return info


def onednn_line():
    if not ONEDNN:
        return "torch's oneDNN: not probed"
    if "isa" not in ONEDNN:
        return f"torch's oneDNN: no verbose output ({ONEDNN.get('error', 'not used')})"
    cap = f", capped by ONEDNN_MAX_CPU_ISA={ONEDNN['cap']}" if ONEDNN.get("cap") else ""
    return f"torch's {ONEDNN.get('version', 'oneDNN')}: isa {ONEDNN['isa']}{cap}"


def lumen_isa_line(args):
    """The ISA of lumen's conv kernels in this run: a small im2col conv's run info."""
    ctx = lumen_context(args.threads)
    x, w = np.ones((1, 8, 9, 9), np.float32), np.ones((20, 8, 5, 5), np.float32)
    lumen.conv2d(x, w, stride=2, context=ctx)
    env = os.environ.get("LUMEN_CPU_ISA")
    return (f"isa {(lumen.last_run() or {}).get('isa', '?')}"
            + (f", capped by LUMEN_CPU_ISA={env}" if env else ""))


def run_conv_cases(args, libs, cases, floors=None):
    """Rows of the selected conv cases, printed as they finish unless --json."""
    rows, warnings = [], []
    if cases and "torch" in libs:
        ONEDNN.update(onednn_probe(cases, args))
    if cases and not args.json:
        print_conv_title(args)
    for case in cases:
        row = run_conv_case(case, args, libs)
        add_conv_floor(row, floors or {})
        rows.append(row)
        warnings += conv_warnings(row)
        if not args.json:
            print_conv_row(row)
    if rows and not args.json and "torch" not in libs:
        print("(torch not run: no torch column, conv targets not run)")
    return rows, warnings


# ---- floors (issue 17): the machine's limits, from `lumen bench floors` -------------------

#: What each bound of `lumen bench floors` is called in the targets table.
FLOOR_AGAINST = {"memory": "memory floor", "fma": "FMA floor", "fft": "FFTW pair"}


def lumen_cli():
    """The lumen CLI of this package: $LUMEN_BIN, else <build>/lumen next to <build>/python,
    else `lumen` on PATH; None when there is none."""
    if os.environ.get("LUMEN_BIN"):
        return os.environ["LUMEN_BIN"]
    beside = Path(lumen.__file__).resolve().parents[2] / "lumen"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("lumen")


def measure_floors(args):
    """`lumen bench floors --json` on this run's size and threads: the CLI's object (plus the
    command), or {"error": why}, in which case the floor columns read '-'."""
    exe = lumen_cli()
    if exe is None:
        return {"error": "no lumen CLI found (set LUMEN_BIN)"}
    cmd = [exe, "bench", "floors", "--json", "--size", f"{args.w}x{args.h}",
           "--photo-size", f"{args.photo_w}x{args.photo_h}", "--threads", str(args.threads)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900)
        floors = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return {"error": f"{' '.join(cmd)}: {e}"}
    floors["command"] = " ".join(cmd)
    return floors


def add_floor(row, floors):
    """row["floor"]: the case's floor, lumen min / floor, and the issue's target on it (also
    appended to row["targets"]); None when the floors were not measured or name no such case."""
    c = next((c for c in floors.get("cases", []) if c["name"] == row["name"]), None)
    lu = row["lumen"]
    if c is None:
        row["floor"] = None
        return
    r = ratio(lu.get("ms_min") if lu.get("status") == "ok" else None, c["floor_ms"])
    row["floor"] = {"ms": c["floor_ms"], "bound": c["bound"], "ratio": r, "limit": c["target"],
                    **{k: c[k] for k in ("memory_ms", "fma_ms", "fft_ms", "passes")}}
    if c["target"] is not None:
        verdict = "not run" if r is None else ("met" if r <= c["target"] else "MISSED")
        row["targets"].append({"against": FLOOR_AGAINST[c["bound"]], "ratio": r,
                               "limit": c["target"], "verdict": verdict})


def add_conv_floor(row, floors):
    """A conv row's FMA floor: its GFLOP at the FMA peak; no target (the conv targets are
    against torch)."""
    peak = floors.get("fma", {}).get("gflops")
    lu = row["lumen"]
    if not peak:
        row["floor"] = None
        return
    floor_ms = row["gflop"] / peak * 1e3
    ok = lu.get("status") == "ok"
    row["floor"] = {"ms": floor_ms, "bound": "fma", "peak_gflops": peak,
                    "ratio": ratio(lu["ms_min"], floor_ms) if ok else None,
                    "of_peak": lu["gflops"] / peak if ok else None}


def print_floors_line(floors):
    if "error" in floors:
        print(f"floors: not measured ({floors['error']})")
        return
    m, f = floors["memcpy"], floors["fma"]
    print(f"floors (lumen bench floors, this run, {floors['threads']} threads): memcpy "
          f"{m['ms_min']:.3f} ms ({m['gb_s']:.0f} GB/s), FMA peak {f['gflops']:.0f} GFLOP/s "
          f"({f['isa']}), FFTW pairs planned {floors['fft']['planning']} on "
          f"{floors['fft']['fftw_threads']} thread(s)")
    photo = floors.get("photo")
    if photo:
        print("photo floors: " + ", ".join(
            f"memcpy of the {photo['width']}x{photo['height']} {dt} RGB image "
            f"({m['bytes'] / 1e6:.1f} MB) {m['ms_min']:.3f} ms ({m['gb_s']:.0f} GB/s)"
            for dt, m in photo["memcpy"].items()))


# ---- the machine ---------------------------------------------------------------------------

def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def lib_versions(libs):
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "lumen": getattr(lumen, "__version__", "?")}
    if "cv2" in libs:
        v["cv2"] = cv2.__version__
    if "scipy" in libs:
        import scipy
        v["scipy"] = scipy.__version__
    if "pillow" in libs:
        import PIL
        v["pillow"] = PIL.__version__
    if "torch" in libs:
        import torch
        v["torch"] = torch.__version__
    return v


def machine_info(args, libs):
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    ctx = lumen_context(args.threads)
    threads = {"lumen": ctx.threads}
    if "cv2" in libs:
        threads["cv2"] = cv2.getNumThreads()
    if "scipy" in libs:
        threads["scipy"] = 1
    if "pillow" in libs:
        threads["pillow"] = 1
    if "torch" in libs:
        import torch
        threads["torch"] = torch.get_num_threads()
    return {"cpu": cpu_model(), "cpus_online": os.cpu_count(), "cpus_usable": usable,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "os": platform.platform(), "loadavg": os.getloadavg(),
            "versions": lib_versions(libs), "threads": threads,
            "lumen_cpu_features": getattr(ctx, "cpu_features", "?"),
            "lumen_device": device_line(ctx)}


def device_line(ctx):
    """"vulkan:0 llvmpipe (...) (software; Vulkan 1.3 ...)": where lumen's figures come from."""
    d = lumen.device_info(ctx.device)
    line = f"{ctx.device} {d['name']} ({d['kind']}"
    return line + (f"; {d['driver']})" if d.get("driver") else ")")


# ---- printing ------------------------------------------------------------------------------

def ms(x):
    """Three or four significant digits: 3.79, 12.3, 215, 2141."""
    if x is None:
        return "-"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def min_med(r):
    if not r or r.get("status") in (None, "n/a"):
        return "-"
    if r["status"] != "ok":
        return r.get("note", r["status"])
    return f"{ms(r['ms_min'])}/{ms(r['ms_median'])}"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}"


def print_header(machine, args):
    v, t = machine["versions"], machine["threads"]
    print(f"machine: {machine['cpu']}, {machine['cpus_usable']} usable of "
          f"{machine['cpus_online']} CPUs; {machine['os']}; load average "
          f"{machine['loadavg'][0]:.2f} at start")
    print(f"lumen runs on: {machine['lumen_device']}")
    print("versions: " + ", ".join(f"{k} {val}" for k, val in v.items()))
    print("threads: " + ", ".join(f"{k} {val}" for k, val in t.items())
          + f"; lumen uses {machine['lumen_cpu_features']}")
    print(f"malloc: {machine.get('malloc', '?')}; arrays start on {CACHE_LINE}-byte lines")
    if any(n not in CONV_NAMES + PHOTO_NAMES for n in args.cases):  # the others print their own
        print(f"image {args.w}x{args.h} f32, 1 channel, border reflect; 1 cold + {args.repeat} "
              f"warm runs per call; ratios = lumen min / peer min")


HEAD = (f"{'case':<20} {'k':>3} {'method':<9} {'cold':>7} {'lumen min/med':>15} "
        f"{'cv2 min/med':>15} {'l/cv2':>5} {'scipy min/med':>15} {'l/sp':>5} "
        f"{'torch min/med':>20} {'l/torch':>7} {'floor':>7} {'l/floor':>7}")


def print_row(row):
    lu, p, r = row["lumen"], row["peers"], row["ratio"]
    k = "-" if row["ksize"] is None else str(row["ksize"])
    if lu["status"] == "ok":
        left = f"{lu.get('method') or '?':<9} {ms(lu['ms_cold']):>7} {min_med(lu):>15}"
    else:
        left = f"{'n/a':<9} {lu['status']:>23}"
    print(f"{row['name']:<20} {k:>3} {left} {min_med(p.get('cv2')):>15} "
          f"{fmt_ratio(r.get('cv2')):>5} {min_med(p.get('scipy')):>15} "
          f"{fmt_ratio(r.get('scipy')):>5} {min_med(p.get('torch')):>20} "
          f"{fmt_ratio(r.get('torch')):>7} {floor_cells(row.get('floor'))}", flush=True)


def floor_cells(fl):
    """'floor l/floor' cells: the floor in ms and lumen min / floor."""
    if not fl:
        return f"{'-':>7} {'-':>7}"
    return f"{ms(fl['ms']):>7} {fmt_ratio(fl['ratio']):>7}"


def print_legend(rows):
    calls = {}
    for row in rows:
        for lib, r in row["peers"].items():
            if r.get("call") and row["batch"] == 1:
                calls.setdefault(lib, []).append(r["call"])
    if any(row["batch"] > 1 for row in rows):
        print("(batch row: peers are 10x their single-image time; lumen is one call on N=10)")
    for lib, names in calls.items():
        print(f"({lib}: {', '.join(dict.fromkeys(names))})")
    if "torch" in calls:
        print("(torch: input padded with BORDER_REFLECT outside the timing; see --help)")


def print_overhead(ov):
    if ov is None:
        return
    print(f"\ncall overhead: lumen.gaussian_blur(a, 1.0, ...) on {ov['image']}, "
          f"Context(threads=1), {ov['calls']} calls each (us per call)")
    print(f"  {'':<34} {'min':>8} {'median':>8} {'overhead min/med':>18}")
    c = ov["c_us"]
    print(f"  {'C call (lumen._lumen._time_c)':<34} "
          + (f"{c['min']:>8.2f} {c['median']:>8.2f}" if c else
             "    (PLACEHOLDER: lumen._lumen._time_c missing; no C baseline)"))
    for label, key in (("Python, out=o", "python_out"), ("Python, new output", "python_new")):
        py, over = ov[key + "_us"], ov[key + "_overhead_us"]
        tail = f"{over['min']:>8.2f}/{over['median']:<8.2f}" if over else f"{'-':>18}"
        print(f"  {label:<34} {py['min']:>8.2f} {py['median']:>8.2f} {tail}")


def all_targets(rows, ov):
    """(name, against, value, limit, verdict) of every target: ratios of time at most the
    limit; the conv targets (at_least) are ratios of GFLOP/s at least the limit."""
    out = [(r["name"], t["against"], fmt_ratio(t["ratio"]),
            f"{'>=' if t.get('at_least') else '<='}{t['limit']:g}", t["verdict"])
           for r in rows for t in r["targets"]]
    for t in (ov or {}).get("targets", []):
        val = "-" if t["overhead_us"] is None else f"{t['overhead_us']:.2f}us"
        out.append(("overhead", t["against"], val, f"<={t['limit_us']:g}us", t["verdict"]))
    return out


def print_targets(rows, ov, warnings):
    judged = all_targets(rows, ov)
    wide = max([20] + [len(j[0]) for j in judged])
    print(f"\n{'target':<{wide}} {'vs':<22} {'value':>8} {'limit':>8}  verdict")
    for name, against, val, limit, verdict in judged:
        print(f"{name:<{wide}} {against:<22} {val:>8} {limit:>8}  {verdict}")
    met = sum(j[4] == "met" for j in judged)
    missed = [f"{j[0]} vs {j[1]}" for j in judged if j[4] == "MISSED"]
    not_run = sorted({j[0] for j in judged if j[4] == "not run"})
    line = f"\n{met}/{len(judged)} targets met"
    line += f"; MISSED: {', '.join(missed)}" if missed else ""
    line += f"; not run: {', '.join(not_run)}" if not_run else ""
    print(line)
    for r in rows:
        if r["lumen"]["status"] != "ok":
            print(f"  {r['name']}: lumen says {r['lumen']['status']}: {r['lumen'].get('error')}")
    for w in warnings:
        print(f"  WARNING: {w}")


# ---- arguments -----------------------------------------------------------------------------

def select_cases(spec):
    """Case names from a comma list: exact names, ops (filter2d, gaussian, conv2d,
    conv_transpose2d), 'conv' (every conv case) or name prefixes."""
    if not spec:
        return list(CASE_NAMES)
    chosen = set()
    for tok in (t.strip() for t in spec.split(",") if t.strip()):
        if tok in CASE_NAMES:
            hits = [tok]
        elif tok in CASE_GROUPS:
            hits = CASE_GROUPS[tok]
        else:
            hits = [n for n in CASE_NAMES if n.startswith(tok)]
        if not hits:
            valid = ", ".join(list(CASE_GROUPS) + CASE_NAMES)
            raise ValueError(f"unknown case '{tok}' (valid: {valid})")
        chosen.update(hits)
    return [n for n in CASE_NAMES if n in chosen]


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="python3 -m lumen.bench", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__, epilog=COLUMNS)
    ap.add_argument("--size", default=None, metavar="WxH",
                    help="image width x height (default 3000x2000; also the photo cases' "
                         "size unless --photo-size is given)")
    ap.add_argument("--photo-size", default=None, metavar="WxH",
                    help="the photo cases' RGB image (default: --size when given, else "
                         f"{bench_photo.PHOTO_SIZE})")
    ap.add_argument("--repeat", type=int, default=7, metavar="N",
                    help="warm runs per call (default 7)")
    ap.add_argument("--threads", type=int, default=2, metavar="N",
                    help="threads for lumen.Context, cv2.setNumThreads and "
                         "torch.set_num_threads (default 2; SciPy is single-threaded)")
    ap.add_argument("--case", default="", metavar="NAMES",
                    help="comma list of case names, ops (filter2d, gaussian, conv2d, "
                         "conv_transpose2d), 'conv' (all conv cases), 'photo', 'photo_u8', "
                         "'photo_u16' (issue 30's RGB cases) or name prefixes; "
                         "'overhead' is the call-overhead case (default: all: "
                         + ", ".join(CASE_NAMES) + ")")
    ap.add_argument("--batch", type=int, default=0, metavar="N",
                    help="N of every conv case instead of its own (as lumen bench conv "
                         "--batch; 1 makes a quick run)")
    ap.add_argument("--json", action="store_true", help="print one JSON object, no table")
    ap.add_argument("--json-out", default="", metavar="PATH",
                    help="also write the JSON object to PATH (the table is still printed; "
                         "bench/charts.py draws it)")
    ap.add_argument("--malloc", choices=("tuned", "default"), default="tuned",
                    help="tuned (default): glibc keeps blocks up to 32 MiB on its heap and "
                         "never trims it, so peers that allocate their outputs per call "
                         "(torch) do not pay page faults per call; default: glibc's own")
    ap.add_argument("--no-scipy", action="store_true", help="leave SciPy out")
    ap.add_argument("--no-pillow", action="store_true", help="leave Pillow out (photo cases)")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--no-floors", action="store_true",
                    help="do not run `lumen bench floors` (no floor columns)")
    ap.add_argument("--torch-cap", type=float, default=3.0, metavar="S",
                    help="skip a torch call that takes over S seconds (default 3)")
    ap.add_argument("--overhead-calls", type=int, default=20000, metavar="N",
                    help="calls per variant in the overhead case (default 20000)")
    ap.add_argument("--device", default="cpu", metavar="D",
                    help="where lumen runs: cpu (default), vulkan[:N], cuda[:N] (strict: no "
                         "CPU fallback is timed as the device); the peers run on the CPU")
    args = ap.parse_args(argv)
    photo = args.photo_size or args.size or bench_photo.PHOTO_SIZE
    args.size = args.size or DEFAULT_SIZE
    for flag, text, keys in (("--size", args.size, ("w", "h")),
                             ("--photo-size", photo, ("photo_w", "photo_h"))):
        try:
            w, h = (int(v) for v in text.lower().split("x"))
            assert w > 0 and h > 0
        except (ValueError, AssertionError):
            ap.error(f"{flag}: expected WxH, got {text!r}")
        setattr(args, keys[0], w)
        setattr(args, keys[1], h)
    if args.repeat < 1 or args.threads < 1 or args.overhead_calls < 10 or args.batch < 0:
        ap.error("--repeat and --threads must be >= 1, --overhead-calls >= 10, --batch >= 1")
    try:
        args.cases = select_cases(args.case)
    except ValueError as e:
        ap.error(f"--case: {e}")
    return args


def peer_libs(args):
    """The peers that will run: cv2 always, SciPy and torch unless turned off or missing.
    A run of conv cases alone needs no cv2 (torch is their only peer)."""
    libs = ["cv2"]
    if cv2 is None:
        if any(n not in CONV_NAMES for n in args.cases):  # photo cases are judged against it too
            sys.exit("lumen.bench: OpenCV (cv2) is not importable; every filter target is "
                     "against it")
        libs = []
    photo = any(n in PHOTO_NAMES for n in args.cases)
    for lib, off in (("scipy", args.no_scipy), ("torch", args.no_torch),
                     ("pillow", args.no_pillow or not photo)):
        if off:
            continue
        try:
            __import__("PIL.Image" if lib == "pillow" else lib)
            libs.append(lib)
        except ImportError as e:
            print(f"lumen.bench: {lib} skipped: {e}", file=sys.stderr)
    return libs


def set_threads(args, libs):
    if "cv2" in libs:
        cv2.setNumThreads(args.threads)
    if "torch" in libs:
        import torch
        torch.set_num_threads(args.threads)


# ---- photo cases (issue 30): u8 / u16 interleaved RGB, lumen/bench_photo.py ---------------

def run_photo_cases(args, libs, names, floors=None):
    """Rows of the selected photo cases, printed as they finish unless --json."""
    cases = [c for c in bench_photo.CASES if c.name in names]
    rows, warnings, images = [], [], {}
    if cases and not args.json:
        print(bench_photo.title(args))
        print(bench_photo.HEAD + "\n" + "-" * len(bench_photo.HEAD))
    for case in cases:
        if case.dtype not in images:  # one image per dtype, made when its first case runs
            images = {case.dtype: bench_photo.make_photo(args.photo_w, args.photo_h, case.dtype)}
        row = bench_photo.run_case(case, images[case.dtype], args, libs, lumen_context,
                                   time_interleaved)
        bench_photo.add_floor(row, floors or {})
        rows.append(row)
        warnings += bench_photo.warnings(row)
        if not args.json:
            bench_photo.print_row(row, min_med, fmt_ratio, floor_cells)
    if rows and not args.json:
        bench_photo.print_legend(rows)
    return rows, warnings


# ---- main ----------------------------------------------------------------------------------

def run_cases(args, libs, names, floors=None):
    """Rows of the selected cases, printed as they finish unless --json."""
    img = make_image(args.w, args.h)
    runner, rows, warnings = Runner(args, libs, img), [], []
    for case in (c for c in CASES if c.name in names):
        row = runner.row(case)
        add_floor(row, floors or {})
        rows.append(row)
        warnings += diff_warnings(row, img)
        if not args.json:
            print_row(row)
    return rows, warnings


def main(argv=None):
    global DEVICE
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("--case=dask",) for a in argv) or any(
            a == "--case" and v == "dask" for a, v in zip(argv, argv[1:])):
        from . import bench_dask  # lumen on Dask (docs/scale-out.md): its own cases and flags
        return bench_dask.main(argv)
    if any(a in ("--case=methods",) for a in argv) or any(
            a == "--case" and v == "methods" for a, v in zip(argv, argv[1:])):
        from . import bench_methods  # auto vs forced methods vs the FFT floor
        return bench_methods.main(argv)
    args = parse_args(argv)
    DEVICE = args.device
    malloc_line = tune_malloc() if args.malloc == "tuned" else "glibc's defaults (--malloc default)"
    # first, while this process runs no threads of its own (lumen's, torch's, OpenCV's pools
    # would spin beside the floors' measurement)
    floors = {"error": "--no-floors"} if args.no_floors else measure_floors(args)
    try:
        lumen.Context(device=DEVICE)
    except ValueError as e:
        sys.exit(f"lumen.bench: --device: {e}")
    if lumen.device_info(DEVICE)["kind"] == "software":
        print(f"lumen.bench: note: {DEVICE} is a software device, a driver that runs on the "
              "CPU: its times check the harness and say nothing about a GPU's speed",
              file=sys.stderr)
    onednn_cap = cap_onednn_isa()  # before peer_libs imports torch
    libs = peer_libs(args)
    set_threads(args, libs)
    machine = machine_info(args, libs)
    machine["onednn_max_cpu_isa"] = onednn_cap
    machine["malloc"] = malloc_line
    selected = [c for c in CASES if c.name in args.cases]
    f32_libs = [lib for lib in libs if lib in PEER_MAKERS]  # Pillow: the photo cases only
    checks = check_all(selected, f32_libs, args.threads)
    checks += bench_photo.check([c for c in bench_photo.CASES if c.name in args.cases], libs,
                                args.threads, lumen_context)
    if not args.json:
        print_header(machine, args)
        print_floors_line(floors)
        print_check(checks)
        if selected:
            print("\n" + HEAD + "\n" + "-" * len(HEAD))
    rows, warnings = run_cases(args, f32_libs, args.cases, floors)
    if rows and not args.json:
        print_legend(rows)
    conv_rows, conv_warn = run_conv_cases(
        args, libs, [c for c in CONV_CASES if c.name in args.cases], floors)
    warnings += conv_warn
    photo_rows, photo_warn = run_photo_cases(args, libs, args.cases, floors)
    warnings += photo_warn
    ov = measure_overhead(args.overhead_calls) if OVERHEAD_CASE in args.cases else None
    machine["torch_onednn"] = ONEDNN or None
    machine["loadavg_end"] = os.getloadavg()
    result = {"machine": machine, "size": [args.w, args.h], "repeat": args.repeat,
              "photo_size": [args.photo_w, args.photo_h], "check": checks, "floors": floors,
              "rows": rows, "conv_rows": conv_rows, "photo_rows": photo_rows, "overhead": ov,
              "warnings": warnings}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print_overhead(ov)
        print_targets(rows + conv_rows + photo_rows, ov, warnings)
        if args.size != DEFAULT_SIZE and rows:
            print(f"(the ratio targets are set for the default {DEFAULT_SIZE}; this run is "
                  f"{args.w}x{args.h})")
        if (args.photo_w, args.photo_h) != (4000, 3000) and photo_rows:
            print(f"(the photo targets are set for {bench_photo.PHOTO_SIZE}; this run is "
                  f"{args.photo_w}x{args.photo_h})")
        if args.batch and conv_rows:
            print(f"(the conv targets are set for each layer's own N; this run has N = "
                  f"{args.batch})")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
