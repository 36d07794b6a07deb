#!/usr/bin/python3
"""Times lumen against OpenCV and SciPy on the same cases, in the same run, and prints ratios.

    /usr/bin/python3 bench/compare.py [--size WxH] [--repeat N] [--threads N] [--json]

lumen is timed in-process by `lumen bench --json` (min and median of N warm runs, the cold
first call on a fresh context apart); the peers are timed here the same way on an f32 image of
the same size, with lumen's kernels (the same LCG and seed, so the same taps):
  filter2d_kK   cv2.filter2D(img, -1, k, borderType=BORDER_REFLECT); SciPy:
                scipy.ndimage.correlate(mode='reflect') for K = 3 and 7, and for K >= 15
                scipy.signal.oaconvolve on the image padded by np.pad(mode='symmetric') (that
                is BORDER_REFLECT) by the kernel's anchor extents, with the flipped kernel and
                mode='valid', i.e. the same correlation (checked against cv2.filter2D at
                start-up; the script aborts if they differ). The padding is inside the timing.
  filter2d_k61_batch10
                lumen: one call on a batch of 10 images; peers: 10x their single-image time
  gaussian_sS   cv2.GaussianBlur(img, (k, k), S, borderType=BORDER_REFLECT) with lumen's ksize
                2*round(3S)+1; SciPy: correlate1d along x then y with the same
                cv2.getGaussianKernel taps, for S <= 10 only (S = 30, 50 single-threaded
                take seconds per call: "skipped")
  gaussian_fast_sS
                lumen --precision fast against the same exact cv2.GaussianBlur
OpenCV runs with cv2.setNumThreads(threads) and lumen with --threads (both 2 by default); SciPy
is single-threaded (ndimage, and scipy.fft inside oaconvolve with its default workers=1).
Targets, on the ratio of minima:
  foundation issue:   filter2d <= 1.0x cv2 at k=3,7 and <= 0.3x at k=15;
                      Gaussian <= 1.0x cv2 at sigma=1 and <= 0.5x at sigma=3,10
  large-kernel issue: filter2d k=31,61,121,201 <= 0.25x cv2.filter2D and <= 0.5x oaconvolve;
                      exact Gaussian sigma=30,50 <= 0.25x cv2.GaussianBlur, fast <= 0.05x;
                      the batch of 10 <= 10x lumen's own warm single-image time
A case lumen reports as unsupported is listed as not run, and its targets as not met.
Machines are noisy: quote ratios, not milliseconds.
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import scipy
import scipy.ndimage as ndi
import scipy.signal as sps

REPO = Path(__file__).resolve().parents[1]

BIG_K = (31, 61, 121, 201)
#: case name -> [(against, limit)]: lumen/peer ratio on min ms must be <= limit. `against`
#: is "cv2", "scipy" or "lumen x1" (the batch case against lumen's single-image case).
TARGETS = {
    "filter2d_k3": [("cv2", 1.0)], "filter2d_k7": [("cv2", 1.0)], "filter2d_k15": [("cv2", 0.3)],
    **{f"filter2d_k{k}": [("cv2", 0.25), ("scipy", 0.5)] for k in BIG_K},
    "filter2d_k61_batch10": [("lumen x1", 10.0)],
    "gaussian_s1": [("cv2", 1.0)], "gaussian_s3": [("cv2", 0.5)], "gaussian_s10": [("cv2", 0.5)],
    "gaussian_s30": [("cv2", 0.25)], "gaussian_s50": [("cv2", 0.25)],
    "gaussian_fast_s30": [("cv2", 0.05)], "gaussian_fast_s50": [("cv2", 0.05)],
}
#: The batch case's single-image counterpart in lumen's own rows.
BATCH_SINGLE = {"filter2d_k61_batch10": "filter2d_k61"}
#: filter2d sizes timed with scipy.ndimage.correlate (direct); from OA_MIN_K on, oaconvolve.
SCIPY_DIRECT_K = (3, 7)
OA_MIN_K = 15
#: Gaussian sigmas SciPy's correlate1d is timed for (bigger ones take seconds per call).
SCIPY_GAUSS_MAX_SIGMA = 10


# ---- inputs ------------------------------------------------------------------------------------

def lcg_floats(n, seed, lo, hi):
    """lumen's cli_lcg_unit sequence (Knuth's MMIX LCG, top 24 bits), as lumen bench uses it."""
    out = np.empty(n, np.float32)
    state = seed
    mask = (1 << 64) - 1
    lo32, span = np.float32(lo), np.float32(hi) - np.float32(lo)
    for i in range(n):
        state = (state * 6364136223846793005 + 1442695040888963407) & mask
        u = np.float32(state >> 40) / np.float32(1 << 24)
        out[i] = lo32 + span * u
    return out


def filter_kernel(k):
    """lumen bench's random k x k kernel for filter2d_kK."""
    return lcg_floats(k * k, 1000 + k, -1.0, 1.0).reshape(k, k)


def gaussian_ksize(sigma):
    """lumen bench's Gaussian size 2*round(3*sigma)+1 (C's lround: halves away from zero)."""
    return 2 * int(math.floor(3.0 * sigma + 0.5)) + 1


# ---- the SciPy correlation equal to cv2.filter2D ------------------------------------------------

def oa_correlate(img, kernel):
    """cv2.filter2D(img, -1, kernel, BORDER_REFLECT) by overlap-add FFT: reflect-pad by the
    anchor extents (anchor = centre, k//2), then a 'valid' convolution with the flipped
    kernel, which is the correlation."""
    kh, kw = kernel.shape
    ay, ax = kh // 2, kw // 2
    padded = np.pad(img, ((ay, kh - 1 - ay), (ax, kw - 1 - ax)), mode="symmetric")
    return sps.oaconvolve(padded, kernel[::-1, ::-1], mode="valid")


def check_oa_correlate():
    """Aborts unless oa_correlate equals cv2.filter2D on small cases (odd, even, non-square)."""
    rng = np.random.default_rng(7)
    img = rng.random((83, 97), dtype=np.float32)
    for kh, kw in ((31, 17), (5, 5), (8, 11)):
        kernel = rng.uniform(-1, 1, (kh, kw)).astype(np.float32)
        want = cv2.filter2D(img, -1, kernel, borderType=cv2.BORDER_REFLECT)
        got = oa_correlate(img, kernel)
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        tol = 1e-4 * float(np.abs(kernel).sum())
        if got.shape != want.shape or not err <= tol:
            sys.exit(f"compare.py: FATAL: the oaconvolve correlation differs from cv2.filter2D "
                     f"for a {kw}x{kh} kernel on a 97x83 image: shape {got.shape} vs "
                     f"{want.shape}, max |diff| {err:.3g} > {tol:.3g}. The SciPy timings would "
                     f"not compare like with like; fix oa_correlate.")


# ---- timing ------------------------------------------------------------------------------------

def time_calls(fn, repeat):
    """(cold ms, [warm ms ...]): one first call, then `repeat` timed calls."""
    t0 = time.perf_counter()
    fn()
    cold = (time.perf_counter() - t0) * 1e3
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        warm.append((time.perf_counter() - t0) * 1e3)
    return cold, warm


def summary(cold, warm, name):
    return {"fn": name, "ms_cold": cold, "ms_min": min(warm), "ms_median": statistics.median(warm)}


def timed(name, fn, repeat):
    return summary(*time_calls(fn, repeat), name)


def scaled(s, factor):
    """A peer's timing for `factor` images in a row (the batch case)."""
    if s is None:
        return None
    return dict(s, fn=f"{factor}x {s['fn']}",
                **{k: s[k] * factor for k in ("ms_cold", "ms_min", "ms_median")})


# ---- peers -------------------------------------------------------------------------------------

def peers_filter2d(k, img, repeat):
    kernel = filter_kernel(k)
    cv = timed("cv2.filter2D",
               lambda: cv2.filter2D(img, -1, kernel, borderType=cv2.BORDER_REFLECT), repeat)
    if k in SCIPY_DIRECT_K:
        out = np.empty_like(img)
        sp = timed("ndi.correlate",
                   lambda: ndi.correlate(img, kernel, output=out, mode="reflect"), repeat)
    elif k >= OA_MIN_K:
        sp = timed("oaconvolve", lambda: oa_correlate(img, kernel), repeat)
    else:
        sp = None
    return cv, sp


def peers_gaussian(k, sigma, img, repeat):
    cv = timed("cv2.GaussianBlur",
               lambda: cv2.GaussianBlur(img, (k, k), sigma, borderType=cv2.BORDER_REFLECT),
               repeat)
    if sigma > SCIPY_GAUSS_MAX_SIGMA:
        return cv, None
    g = cv2.getGaussianKernel(k, sigma, ktype=cv2.CV_32F).ravel()
    tmp, out = np.empty_like(img), np.empty_like(img)

    def scipy_gauss():
        ndi.correlate1d(img, g, axis=1, output=tmp, mode="reflect")
        ndi.correlate1d(tmp, g, axis=0, output=out, mode="reflect")

    return cv, timed("correlate1d x2", scipy_gauss, repeat)


class Peers:
    """Times each distinct peer computation once (exact and fast Gaussians share theirs)."""

    def __init__(self, img, repeat):
        self.img, self.repeat, self.cache = img, repeat, {}

    def for_row(self, row):
        if row["op"] == "filter2d":
            key = ("filter2d", int(row["ksize"]))
            make = lambda: peers_filter2d(key[1], self.img, self.repeat)  # noqa: E731
        else:
            sigma = float(row["sigma"])
            key = ("gaussian", gaussian_ksize(sigma), sigma)
            make = lambda: peers_gaussian(key[1], sigma, self.img, self.repeat)  # noqa: E731
        if key not in self.cache:
            self.cache[key] = make()
        cv, sp = self.cache[key]
        batch = int(row.get("batch") or 1)
        return (scaled(cv, batch), scaled(sp, batch)) if batch > 1 else (cv, sp)


# ---- lumen and the machine ---------------------------------------------------------------------

def run_lumen(binary, w, h, repeat, threads):
    env = dict(os.environ, LUMEN_NUM_THREADS=str(threads))
    cmd = [binary, "bench", "--json", "--size", f"{w}x{h}", "--repeat", str(repeat),
           "--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"compare.py: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def lumen_version(binary):
    r = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return r.stdout.strip().split()[-1] if r.returncode == 0 and r.stdout.strip() else "?"


def fftw_version():
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libfftw3-single3"],
                           capture_output=True, text=True)
    except OSError:
        return "?"
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "?"


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_info(threads, binary):
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": cpu_model(), "cpus_online": os.cpu_count(), "cpus_usable": usable,
        "os": platform.platform(), "threads": threads, "lumen": lumen_version(binary),
        "fftw3f": fftw_version(), "python": platform.python_version(),
        "numpy": np.__version__, "cv2": cv2.__version__, "cv2_threads": cv2.getNumThreads(),
        "scipy": scipy.__version__,
    }


# ---- joining and judging -----------------------------------------------------------------------

def ratio(a, b):
    return a / b if a and b else None


def judge(name, ratios):
    """[(against, ratio, limit, verdict)] for the case's targets; verdict PASS, MISS or NOT RUN."""
    out = []
    for against, limit in TARGETS.get(name, []):
        r = ratios.get(against)
        verdict = "NOT RUN" if r is None else ("PASS" if r <= limit else "MISS")
        out.append({"against": against, "ratio": r, "limit": limit, "verdict": verdict})
    return out


def join_row(lr, peers, lumen_by_name, w, h):
    ok = lr.get("status", "ok") == "ok"
    cv, sp = peers.for_row(lr)
    lu_min = lr["ms_min"] if ok else None
    single = lumen_by_name.get(BATCH_SINGLE.get(lr["name"]))
    ratios = {
        "cv2": ratio(lu_min, cv["ms_min"]),
        "scipy": ratio(lu_min, sp["ms_min"]) if sp else None,
        "lumen x1": ratio(lu_min, single and single.get("ms_min")),
    }
    return {
        "name": lr["name"], "op": lr["op"], "ksize": lr["ksize"], "sigma": lr["sigma"],
        "precision": lr.get("precision", "exact"), "batch": lr.get("batch", 1),
        "width": w, "height": h, "status": lr.get("status", "ok"), "error": lr.get("error"),
        "lumen": {k: lr.get(k) for k in ("ms_cold", "ms_min", "ms_median", "method", "isa",
                                         "threads", "device")},
        "cv2": cv, "scipy": sp,
        "ratio_cv2": ratios["cv2"],
        "ratio_cv2_median": ratio(lr["ms_median"], cv["ms_median"]) if ok else None,
        "ratio_scipy": ratios["scipy"], "ratio_lumen_x1": ratios["lumen x1"],
        "targets": judge(lr["name"], ratios),
    }


# ---- printing ----------------------------------------------------------------------------------

def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def print_header(machine, w, h, repeat, threads):
    print(f"machine: {machine['cpu']}, {machine['cpus_usable']} usable of "
          f"{machine['cpus_online']} CPUs; {machine['os']}")
    print(f"versions: lumen {machine['lumen']}, FFTW3f {machine['fftw3f']}, python "
          f"{machine['python']}, numpy {machine['numpy']}, cv2 {machine['cv2']}, scipy "
          f"{machine['scipy']}")
    print(f"image {w}x{h} f32, 1 channel, border reflect; {repeat} warm runs; lumen and cv2 on "
          f"{threads} threads, scipy on 1 (single-threaded); ratios on min ms")


def print_table(rows):
    head = (f"{'case':<20} {'k':>3} {'method':<9} {'lumen cold':>10} {'lumen min/med ms':>17} "
            f"{'cv2 min/med ms':>17} {'lumen/cv2':>9} {'scipy peer':<16} {'scipy min':>9} "
            f"{'lumen/scipy':>11}")
    print(head)
    print("-" * len(head))
    for r in rows:
        lu, cv, sp = r["lumen"], r["cv2"], r["scipy"]
        if r["status"] == "ok":
            lumen = (f"{lu['method']:<9} {lu['ms_cold']:>10.2f} "
                     f"{lu['ms_min']:>8.2f}/{lu['ms_median']:<8.2f}")
        else:
            lumen = f"{'n/a':<9} {r['status']:>10} {'-':>17}"
        print(f"{r['name']:<20} {fmt(r['ksize'], 'd'):>3} {lumen} "
              f"{cv['ms_min']:>8.2f}/{cv['ms_median']:<8.2f} {fmt(r['ratio_cv2']):>9} "
              f"{(sp['fn'] if sp else 'skipped'):<16} {fmt(sp and sp['ms_min'], '.1f'):>9} "
              f"{fmt(r['ratio_scipy']):>11}")
    print("(batch row: peers are 10x their single-image time; lumen is one call on n=10)")


def print_targets(rows):
    print(f"\n{'target':<20} {'vs':<9} {'ratio':>7} {'limit':>7}  verdict")
    judged = [(r, t) for r in rows for t in r["targets"]]
    for r, t in judged:
        print(f"{r['name']:<20} {t['against']:<9} {fmt(t['ratio']):>7} "
              f"{'<=' + format(t['limit'], 'g'):>7}  {t['verdict']}")
    met = sum(t["verdict"] == "PASS" for _, t in judged)
    missed = [f"{r['name']} vs {t['against']}" for r, t in judged if t["verdict"] == "MISS"]
    not_run = sorted({r["name"] for r, t in judged if t["verdict"] == "NOT RUN"})
    line = f"\n{met}/{len(judged)} targets met"
    if missed:
        line += f"; missed: {', '.join(missed)}"
    if not_run:
        line += f"; not run: {', '.join(not_run)}"
    print(line)
    for r in rows:
        if r["status"] != "ok":
            print(f"  {r['name']}: lumen says {r['status']}: {r['error']}")


# ---- main --------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="3000x2000", help="image WxH (default 3000x2000)")
    ap.add_argument("--repeat", type=int, default=7, help="warm runs per case, >= 5 (default 7)")
    ap.add_argument("--threads", type=int, default=2, help="threads for lumen and cv2 (default 2)")
    ap.add_argument("--lumen", default=os.environ.get("LUMEN_BIN") or str(REPO / "build" / "lumen"),
                    help="lumen binary (default $LUMEN_BIN, else build/lumen)")
    ap.add_argument("--json", action="store_true", help="print the joined rows as JSON")
    args = ap.parse_args(argv)
    if args.repeat < 5:
        ap.error("--repeat must be at least 5")
    try:
        args.w, args.h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        ap.error(f"--size: expected WxH, got {args.size!r}")
    return args


def main(argv=None):
    args = parse_args(argv)
    cv2.setNumThreads(args.threads)
    check_oa_correlate()
    machine = machine_info(args.threads, args.lumen)
    lumen_rows = run_lumen(args.lumen, args.w, args.h, args.repeat, args.threads)
    lumen_by_name = {r["name"]: r for r in lumen_rows if r.get("status", "ok") == "ok"}
    img = np.random.default_rng(42).random((args.h, args.w), dtype=np.float32)
    peers = Peers(img, args.repeat)
    rows = [join_row(lr, peers, lumen_by_name, args.w, args.h) for lr in lumen_rows]

    if args.json:
        json.dump({"machine": machine, "rows": rows}, sys.stdout, indent=2)
        print()
        return 0
    print_header(machine, args.w, args.h, args.repeat, args.threads)
    print_table(rows)
    print_targets(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
