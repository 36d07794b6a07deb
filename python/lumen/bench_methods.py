"""lumen's large-kernel methods side by side: auto vs each forced method vs the FFT floor.

    python3 -m lumen.bench --case methods [--size WxH] [--threads N] [--repeat N]
                                          [--cases NAMES] [--floor-planning estimate|measure]
                                          [--direct-max-taps N] [--json]

For filter2d (a random k x k kernel, as `lumen bench`), the exact Gaussian (ksize
2*round(3 sigma)+1) and the box mean, each method lumen can run is forced in turn
(filter2d direct / separable / fft; the Gaussian and box through filter2d direct, sep_filter2d
separable / fft) and auto is timed as the op's own call (filter2d method='auto',
gaussian_blur, box_blur). The floor is one FFTW r2c + c2r pair over the padded image
(H+k-1) x (W+k-1), each side rounded up to the next 2^a 3^b 5^c 7^d, with the planner flag
lumen uses (FFTW_ESTIMATE unless --floor-planning measure) and FFTW's own threads, as many as
lumen's (fftw_pair_ms: one function, to be merged with `lumen bench floors`). Times are the
minimum over --repeat warm calls (one call for direct kernels beyond --direct-max-taps taps,
and none beyond 4x that: 'skipped'). ratio columns: auto / best forced, fft / floor.
(docs/benchmarks.md, "Methods and the FFT floor").
"""
import argparse
import ctypes
import ctypes.util
import json
import sys
import time

import numpy as np

import lumen

from .bench import filter_kernel, gaussian_ksize

CASES = (["filter2d_k%d" % k for k in (15, 31, 61, 121, 201)] +
         ["gauss_s%d" % s for s in (10, 30, 50)] + ["box_k%d" % k for k in (31, 101)])


def _fftw():
    lib = ctypes.CDLL(ctypes.util.find_library("fftw3f") or "libfftw3f.so.3",
                      mode=ctypes.RTLD_GLOBAL)
    # FFTW's OpenMP threads, which lumen links (one set of threaded solvers in FFTW's planner),
    # else its pthreads
    name = ctypes.util.find_library("fftw3f_omp") or ctypes.util.find_library("fftw3f_threads")
    thr = ctypes.CDLL(name or "libfftw3f_threads.so.3")
    thr.fftwf_init_threads()
    for name, res, args in (
            ("fftwf_malloc", ctypes.c_void_p, [ctypes.c_size_t]),
            ("fftwf_free", None, [ctypes.c_void_p]),
            ("fftwf_plan_dft_r2c_2d", ctypes.c_void_p,
             [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]),
            ("fftwf_plan_dft_c2r_2d", ctypes.c_void_p,
             [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]),
            ("fftwf_execute", None, [ctypes.c_void_p]),
            ("fftwf_destroy_plan", None, [ctypes.c_void_p])):
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    thr.fftwf_plan_with_nthreads.argtypes = [ctypes.c_int]
    return lib, thr


def smooth_length(n):
    """Smallest n' >= n whose factors are 2, 3, 5, 7 with an odd part <= 49 (3072, 3200, 2240:
    FFTW runs them fast; 5^5 = 3125 or 3^7 = 2187 ran 2-3x slower per n log n here)."""
    while True:
        m = n
        while m % 2 == 0:
            m //= 2
        odd = m
        for p in (3, 5, 7):
            while m % p == 0:
                m //= p
        if m == 1 and odd <= 49:
            return n
        n += 1


def fftw_pair(h, w, threads, planning="estimate"):
    """The FFT floor's call: (run, free) for one FFTW r2c + c2r pair over an h x w real image
    (FFTW's own threads, `threads` of them; FFTW_ESTIMATE or FFTW_MEASURE)."""
    lib, thr = _fftw()
    thr.fftwf_plan_with_nthreads(threads)
    flags = 0 if planning == "measure" else 1 << 6  # FFTW_MEASURE, FFTW_ESTIMATE
    real = lib.fftwf_malloc(4 * h * w)
    cplx = lib.fftwf_malloc(8 * h * (w // 2 + 1))
    fwd = lib.fftwf_plan_dft_r2c_2d(h, w, real, cplx, flags)
    inv = lib.fftwf_plan_dft_c2r_2d(h, w, cplx, real, flags)
    thr.fftwf_plan_with_nthreads(1)
    ctypes.memset(real, 0, 4 * h * w)

    def run():
        lib.fftwf_execute(fwd)
        lib.fftwf_execute(inv)

    def free():
        lib.fftwf_destroy_plan(fwd), lib.fftwf_destroy_plan(inv)
        lib.fftwf_free(real), lib.fftwf_free(cplx)
    return run, free


def fftw_pair_ms(h, w, threads, planning="estimate", repeat=5):
    """The FFT floor alone: min ms of `repeat` pairs (fftw_pair) after one warm-up."""
    run, free = fftw_pair(h, w, threads, planning)
    best = float("inf")
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    free()
    return best * 1e3


def case_calls(name, img, out, ctx):
    """(k, {method: call}): the forced methods and 'auto' of a case."""
    kind, num = name.rsplit("_", 1)
    common = dict(border="reflect", out=out, context=ctx)
    if kind == "filter2d":
        k = int(num[1:])
        ker = filter_kernel(k)
        calls = {m: (lambda m=m: lumen.filter2d(img, ker, method=m, **common))
                 for m in ("direct", "fft")}
        calls["auto"] = lambda: lumen.filter2d(img, ker, method="auto", **common)
        return k, calls
    if kind == "gauss":
        sigma = float(num[1:])
        k = gaussian_ksize(sigma)
        g = lumen.gaussian_kernel(k, sigma)
        auto = lambda: lumen.gaussian_blur(img, sigma, ksize=k, **common)  # noqa: E731
    else:
        k = int(num[1:])
        g = np.full(k, 1.0 / k, np.float32)
        auto = lambda: lumen.box_blur(img, k, **common)  # noqa: E731
    k2 = np.outer(g, g).astype(np.float32)
    calls = {"direct": lambda: lumen.filter2d(img, k2, method="direct", **common)}
    for m in ("separable", "fft"):
        calls[m] = lambda m=m: lumen.sep_filter2d(img, g, g, method=m, **common)
    calls["auto"] = auto
    return k, calls


def run_case(name, args, img, out, ctx):
    """Every method of the case and the floor, interleaved: `repeat` rounds of one call each
    (after one warm-up call each), the minimum per method, so that a busy moment of the shared
    machine does not fall on one method only."""
    k, calls = case_calls(name, img, out, ctx)
    h, w = img.shape
    ph, pw = smooth_length(h + k - 1), smooth_length(w + k - 1)
    run_floor, free_floor = fftw_pair(ph, pw, ctx.threads, args.floor_planning)
    calls["floor"] = run_floor
    row = {"case": name, "k": k, "floor_size": "%dx%d" % (pw, ph)}
    rounds = {m: args.repeat for m in calls}
    if k * k > 4 * args.direct_max_taps:
        del calls["direct"]
        row["direct"] = None
    elif k * k > args.direct_max_taps:
        rounds["direct"] = 1
    best = {m: float("inf") for m in calls}
    for m, fn in calls.items():
        fn()  # warm: plans, spectra, buffers
        if m == "auto":
            row["auto_method"] = lumen.last_run()["method"]
    for r in range(args.repeat):
        for m, fn in calls.items():
            if r < rounds[m]:
                t0 = time.perf_counter()
                fn()
                best[m] = min(best[m], time.perf_counter() - t0)
    free_floor()
    row.update({m: t * 1e3 for m, t in best.items()})
    forced = [row[m] for m in ("direct", "separable", "fft") if row.get(m) is not None]
    row["best"] = min(forced)
    row["auto_vs_best"] = row["auto"] / row["best"]
    row["fft_vs_floor"] = row["fft"] / row["floor"]
    return row


def fmt(v):
    return "skipped" if v is None else "-" if v == "" else "%.1f" % v


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m lumen.bench --case methods")
    p.add_argument("--case", default="methods")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--size", default="3000x2000")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--floor-planning", choices=("estimate", "measure"), default="estimate")
    p.add_argument("--direct-max-taps", type=int, default=121 * 121)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    img = np.random.default_rng(42).random((h, w), dtype=np.float32)
    out = np.empty_like(img)
    ctx = lumen.Context("cpu", threads=args.threads)
    rows = []
    if not args.json:
        print("%dx%d f32, 1 channel, %d threads, ms (min of %d); floor: FFTW r2c+c2r, %s"
              % (w, h, args.threads, args.repeat, args.floor_planning))
        print("%-13s %9s %9s %9s %9s %-9s %9s %10s %9s %8s" % (
            "case", "direct", "separable", "fft", "auto", "(ran)", "floor", "floor size",
            "auto/best", "fft/floor"))
    for name in args.cases.split(","):
        row = run_case(name, args, img, out, ctx)
        rows.append(row)
        if not args.json:
            print("%-13s %9s %9s %9s %9s %-9s %9s %10s %9.2f %8.2f" % (
                name, fmt(row.get("direct")), fmt(row.get("separable", "")), fmt(row["fft"]),
                fmt(row["auto"]), row["auto_method"], fmt(row["floor"]), row["floor_size"], row["auto_vs_best"],
                row["fft_vs_floor"]), flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
    return 0
