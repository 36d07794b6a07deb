"""Shared pieces of lumen's reference tests: the CLI runner, border-mode maps, and float64
references built on cv2.copyMakeBorder (a peer, independent of lumen's own border code).

Every test runs the real `lumen` binary on .npy files in a temporary folder. The binary is
$LUMEN_BIN (the Makefile sets it), else <repo>/build/lumen. A missing binary is an error, not
a skip: a reference suite that silently runs nothing would pass vacuously.
"""

import itertools
import os
import subprocess
import zlib
from pathlib import Path

# Small images run on whole teams in the tests, as in the C suites (src/backends/cpu/cpu.h);
# set before lumen is first imported, which reads it once.
os.environ.setdefault("LUMEN_CPU_MIN_SHARE", "0")

import cv2
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
LUMEN_BIN = Path(os.environ.get("LUMEN_BIN") or REPO / "build" / "lumen")

#: Every border mode lumen has, in its own names.
BORDERS = ("constant", "replicate", "reflect", "reflect101", "wrap")

#: OpenCV equivalents. cv2 4.6 filters (filter2D, sepFilter2D, GaussianBlur, blur, boxFilter)
#: reject BORDER_WRAP with an assertion, so wrap has no cv2 peer (see test_peer_facts.py).
CV2_BORDER = {
    "constant": cv2.BORDER_CONSTANT,
    "replicate": cv2.BORDER_REPLICATE,
    "reflect": cv2.BORDER_REFLECT,
    "reflect101": cv2.BORDER_REFLECT_101,
}
CV2_BORDERS = tuple(CV2_BORDER)

#: numpy.pad modes (docs/semantics.md's table). numpy's 'reflect' is lumen's reflect101. Used only to
#: check the table (test_peer_facts.py): numpy 1.24 pads wrongly far out, see pad().
NUMPY_PAD_MODE = {
    "constant": "constant",
    "replicate": "edge",
    "reflect": "symmetric",
    "reflect101": "reflect",
    "wrap": "wrap",
}

#: scipy.ndimage modes. 'grid-wrap' and 'wrap' give the same periodic extension in the
#: filters of scipy 1.10, also for kernels larger than the image (test_peer_facts.py).
SCIPY_MODE = {
    "constant": "constant",
    "replicate": "nearest",
    "reflect": "reflect",
    "reflect101": "mirror",
    "wrap": "grid-wrap",
}

DTYPES = {"f32": np.float32, "u8": np.uint8, "u16": np.uint16}


# ---- the binary -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def lumen_bin():
    if not (LUMEN_BIN.is_file() and os.access(LUMEN_BIN, os.X_OK)):
        pytest.fail(f"lumen binary not found or not executable: {LUMEN_BIN} "
                    "(build it, or set LUMEN_BIN)", pytrace=False)
    return str(LUMEN_BIN)


def auto_device(devices):
    """The index device `auto` picks from `devices` (lumen.devices() or `lumen info --json`'s
    list, in lumen's order), as docs/devices.md states it: a discrete GPU, else an integrated
    one, else the CPU (index 0); never a software device. On a GPU machine that is not the CPU."""
    for kind in ("discrete", "integrated"):
        for i, d in enumerate(devices):
            if d["kind"] == kind:
                return d.get("index", i)
    return 0


def run_cli(binary, *args, timeout=120, env=None):
    """Runs `lumen ARGS`; returns the CompletedProcess (text mode, never raises on status)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([binary, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def _xy(v):
    if isinstance(v, (tuple, list)):
        return ",".join(str(int(x)) for x in v)
    return str(int(v))


def _fmt_float(v):
    return repr(float(v))


class Lumen:
    """Runs lumen subcommands on arrays through .npy files in tmp_path."""

    def __init__(self, binary, tmp_path):
        self.binary = binary
        self.dir = tmp_path
        self.counter = itertools.count()

    def _paths(self, stem):
        n = next(self.counter)
        return self.dir / f"{stem}{n}_in.npy", self.dir / f"{stem}{n}_out.npy"

    def run(self, *args):
        return run_cli(self.binary, *args)

    def _op(self, cmd, src, extra):
        src = np.ascontiguousarray(src)
        inp, out = self._paths(cmd)
        np.save(inp, src)
        r = self.run(cmd, inp, out, *extra)
        args = " ".join(map(str, [cmd, inp.name, out.name, *extra]))
        assert r.returncode == 0, f"lumen {args} exited {r.returncode}: {r.stderr.strip()}"
        assert out.is_file(), f"lumen {args} exited 0 but wrote no {out.name}"
        got = np.load(out)
        assert got.dtype == src.dtype, f"lumen {args}: OUT dtype {got.dtype} != IN {src.dtype}"
        assert got.shape == src.shape, f"lumen {args}: OUT shape {got.shape} != IN {src.shape}"
        return got

    @staticmethod
    def _common(extra, border=None, value=None, threads=None, no_simd=False):
        if border is not None:
            extra += ["--border", border]
        if value is not None:
            extra += ["--value", _fmt_float(value)]
        if threads is not None:
            extra += ["--threads", str(threads)]
        if no_simd:
            extra += ["--no-simd"]
        return extra

    def filter(self, src, kernel, anchor=None, convolve=False, method=None, **common):
        kpath = self.dir / f"kernel{next(self.counter)}.npy"
        np.save(kpath, np.ascontiguousarray(kernel, dtype=np.float32))
        extra = ["--kernel", kpath]
        if anchor is not None:
            extra += ["--anchor", _xy(anchor)]
        if convolve:
            extra += ["--convolve"]
        if method is not None:
            extra += ["--method", method]
        return self._op("filter", src, self._common(extra, **common))

    def blur(self, src, sigma=None, sigma_y=None, ksize=None, **common):
        extra = []
        if sigma is not None:
            extra += ["--sigma", _fmt_float(sigma)]
        if sigma_y is not None:
            extra += ["--sigma-y", _fmt_float(sigma_y)]
        if ksize is not None:
            extra += ["--ksize", _xy(ksize)]
        return self._op("blur", src, self._common(extra, **common))

    def box(self, src, ksize, normalize=True, **common):
        extra = ["--ksize", _xy(ksize)]
        if not normalize:
            extra += ["--no-normalize"]
        return self._op("box", src, self._common(extra, **common))


@pytest.fixture
def lumen(lumen_bin, tmp_path):
    return Lumen(lumen_bin, tmp_path)


# ---- data -------------------------------------------------------------------------------------


def rng_for(*key):
    """A generator seeded from a test's parameters: reproducible, different per case."""
    return np.random.default_rng(zlib.crc32(repr(tuple(map(str, key))).encode()))


def make_image(rng, shape, dtype, lo=None, hi=None):
    """Uniform noise: f32 in [lo, hi) (default [0, 1)); integers over [lo, hi] (default full)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        lo = 0.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
        return rng.uniform(lo, hi, shape).astype(np.float32)
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def dyadic_kernel(rng, kh, kw, nonzero=12):
    """A kernel of multiples of 1/16 summing to exactly 1, with at most `nonzero` taps.

    With integer input every product and partial sum is exact in f32 (|sum| * 65535 * 16 stays
    below 2^24), so u8/u16 results have a single correct answer that any f32 or f64 evaluation
    order reaches: lumen and cv2.filter2D must then agree bit for bit, ties included.
    """
    k = np.zeros(kh * kw, np.float64)
    n = min(nonzero, kh * kw)
    pos = rng.choice(kh * kw, size=n, replace=False)
    k[pos] = rng.integers(-4, 9, n)
    k[pos[0]] += 16 - k.sum()   # sum of taps = 16/16 = 1
    return (k / 16).reshape(kh, kw).astype(np.float32)


# ---- float64 references (cv2.copyMakeBorder based) -------------------------------------------


#: cv2.copyMakeBorder codes, BORDER_WRAP included (copyMakeBorder accepts it; the filters don't).
PAD_BORDER = dict(CV2_BORDER, wrap=cv2.BORDER_WRAP)


def pad(src, top, bottom, left, right, border, value=0.0):
    """src (H x W or H x W x C) as float64, extended in lumen's border mode.

    cv2.copyMakeBorder, not numpy.pad: numpy 1.24's pad is wrong in 'wrap', 'symmetric' and
    'reflect' modes when a pad is wider than the array and the two sides differ (numpy
    issues 22464, 24436, 28575) - exactly the 'kernel larger than the image' case with an
    off-centre anchor. test_peer_facts.py checks copyMakeBorder against docs/semantics.md's rule.
    """
    a = np.asarray(src, dtype=np.float64)
    chans = 1 if a.ndim == 2 else a.shape[2]
    if chans > 4:
        return np.stack([pad(a[..., c], top, bottom, left, right, border, value)
                         for c in range(chans)], axis=-1)
    out = cv2.copyMakeBorder(a, top, bottom, left, right, PAD_BORDER[border],
                             value=(float(value),) * 4)
    if a.ndim == 3 and out.ndim == 2:   # cv2 drops a trailing axis of 1
        out = out[..., None]
    return out


def ref_correlate(src, kernel, anchor=None, border="reflect", value=0.0):
    """dst(x,y) = sum k(i,j) src(x+j-ax, y+i-ay) in float64 (cv2.filter2D's definition)."""
    k = np.asarray(kernel, dtype=np.float64)
    kh, kw = k.shape
    ax, ay = (kw // 2, kh // 2) if anchor is None else anchor
    h, w = src.shape[:2]
    p = pad(src, ay, kh - 1 - ay, ax, kw - 1 - ax, border, value)
    out = np.zeros(src.shape, np.float64)
    all_finite = bool(np.isfinite(p).all())  # 0 * NaN is NaN: zero taps count then
    for i in range(kh):
        for j in range(kw):
            if k[i, j] != 0.0 or not all_finite:
                out += k[i, j] * p[i:i + h, j:j + w]
    return out


def ref_convolve(src, kernel, anchor=None, border="reflect", value=0.0):
    """True convolution: correlation with the flipped kernel and the mirrored anchor."""
    kh, kw = np.shape(kernel)
    ax, ay = (kw // 2, kh // 2) if anchor is None else anchor
    flipped = np.asarray(kernel)[::-1, ::-1]
    return ref_correlate(src, flipped, (kw - 1 - ax, kh - 1 - ay), border, value)


def ref_separable(src, kx, ky, border="reflect", value=0.0):
    """Row kernel kx then column kernel ky (centred anchors), in float64."""
    kx = np.asarray(kx, dtype=np.float64).ravel()
    ky = np.asarray(ky, dtype=np.float64).ravel()
    h, w = src.shape[:2]
    ax, ay = len(kx) // 2, len(ky) // 2
    p = pad(src, ay, len(ky) - 1 - ay, ax, len(kx) - 1 - ax, border, value)
    rows = np.zeros((p.shape[0], w) + p.shape[2:], np.float64)
    for j, c in enumerate(kx):
        rows += c * p[:, j:j + w]
    out = np.zeros(src.shape, np.float64)
    for i, c in enumerate(ky):
        out += c * rows[i:i + h]
    return out


def gaussian_ksize(sigma, dtype):
    """OpenCV's derived size: round(sigma * (3 for u8, else 4) * 2 + 1) | 1."""
    factor = 3 if np.dtype(dtype) == np.uint8 else 4
    return int(np.floor(sigma * factor * 2 + 1 + 0.5)) | 1


def gaussian_kernel(n, sigma):
    """The peer's kernel, cv2.getGaussianKernel(n, sigma, CV_32F), as float64."""
    return cv2.getGaussianKernel(int(n), float(sigma), ktype=cv2.CV_32F).ravel().astype(np.float64)


def gaussian_params(dtype, sigma=None, sigma_y=None, ksize=None):
    """Resolves (kx, ky, sx, sy) as cv2.GaussianBlur does for lumen's CLI arguments."""
    sx = float(sigma or 0.0)
    sy = float(sigma_y or 0.0)
    if sy <= 0:
        sy = sx
    if ksize is None:
        kx = ky = 0
    elif isinstance(ksize, (tuple, list)):
        kx, ky = ksize
    else:
        kx = ky = ksize
    if kx <= 0 and sx > 0:
        kx = gaussian_ksize(sx, dtype)
    if ky <= 0 and sy > 0:
        ky = gaussian_ksize(sy, dtype)
    return kx, ky, sx, sy


def ref_gaussian(src, dtype, sigma=None, sigma_y=None, ksize=None, border="reflect", value=0.0):
    kx, ky, sx, sy = gaussian_params(dtype, sigma, sigma_y, ksize)
    return ref_separable(src, gaussian_kernel(kx, sx), gaussian_kernel(ky, sy), border, value)


def per_channel(fn, src, *args, **kwargs):
    """Applies a 2-D function to each channel of H x W x C (scipy works on one plane)."""
    if src.ndim == 2:
        return fn(src, *args, **kwargs)
    return np.stack([fn(src[..., c], *args, **kwargs) for c in range(src.shape[2])], axis=-1)
