#!/usr/bin/python3
"""A/B two (or more) builds of liblumen interleaved in one process (docs/benchmarks.md, "Floors
and profiles"): each variant is a liblumen.so loaded by ctypes (RTLD_LOCAL, so two builds live
side by side) plus environment settings made before each of its calls (a switch that a change
reads at call time). Every round calls every variant once per case, in turn; the
minimum (and median) of the rounds is printed, with each variant's ratio to the first.

    /usr/bin/python3 bench/lib_ab.py --variant base=/tmp/base/build/liblumen.so \\
        --variant new=build/liblumen.so --case k3 --case k7 --threads 2 --rounds 30

Cases: kK (filter2d K x K, method direct), fK (the same through the FFT), boxK (box_blur K x K
mean), gfS (fast Gaussian, sigma S), gsS / gtS (exact Gaussian, sigma S, separable / FFT). --dtype picks the images' dtype (f32, f16,
bf16) for src and dst; --size WxH (3000x2000 by default, the issue's image).
"""
import argparse
import ctypes as C
import os
import statistics
import time

import numpy as np

F32, F16, BF16 = 2, 3, 4
DIRECT, SEPARABLE, FFT = 1, 2, 3


class Image(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int), ("n", C.c_int64), ("c", C.c_int64),
                ("h", C.c_int64), ("w", C.c_int64), ("stride_n", C.c_int64),
                ("stride_c", C.c_int64), ("stride_h", C.c_int64), ("stride_w", C.c_int64),
                ("device", C.c_int)]


# lumen.h's option structs, the halo (4 ints) included: a build from before the halo reads and
# fills only the fields before it, so one layout serves both.
class FilterOptions(C.Structure):
    _fields_ = [("border", C.c_int), ("border_value", C.c_float), ("anchor_x", C.c_int),
                ("anchor_y", C.c_int), ("convolve", C.c_int), ("method", C.c_int),
                ("halo", C.c_int * 4)]


class GaussOptions(C.Structure):
    _fields_ = [("ksize_x", C.c_int), ("ksize_y", C.c_int), ("sigma_x", C.c_double),
                ("sigma_y", C.c_double), ("border", C.c_int), ("border_value", C.c_float),
                ("precision", C.c_int), ("method", C.c_int), ("halo", C.c_int * 4)]


class Variant:
    def __init__(self, spec, threads):
        name, rest = spec.split("=", 1)
        path, *envs = rest.split(":")
        self.name, self.env = name, dict(e.split("=", 1) for e in envs)
        self.lib = C.CDLL(os.path.abspath(path), mode=C.RTLD_LOCAL)
        L = self.lib
        L.lumen_image_nchw.restype = Image
        L.lumen_image_nchw.argtypes = [C.c_void_p, C.c_int] + [C.c_int64] * 4
        L.lumen_filter_options_default.restype = FilterOptions
        L.lumen_gaussian_options_default.restype = GaussOptions
        L.lumen_last_error.restype = C.c_char_p
        self.ctx = C.c_void_p()
        assert L.lumen_context_create(C.byref(self.ctx)) == 0
        assert L.lumen_context_set_threads(self.ctx, threads) == 0

    def enter(self):
        self.saved = {k: os.environ.get(k) for k in self.env}
        for k, v in self.env.items():
            os.environ[k] = str(int(float(v))) if k.endswith("_BYTES") else v

    def leave(self):
        """Puts back what enter() replaced (a setting made for the whole run stays)."""
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def check(self, status):
        if status:
            raise RuntimeError(f"{self.name}: {self.lib.lumen_last_error().decode()}")


def case_call(v, case, src, dst):
    """() -> status: one call of case on variant v."""
    L, ctx = v.lib, v.ctx
    if case.startswith("box"):
        k = int(case[3:])
        return lambda: L.lumen_box_blur(ctx, C.byref(src), C.byref(dst), k, k, 1, 2,
                                        C.c_float(0), None)
    if case[:2] in ("gf", "gs", "gt"):
        o = L.lumen_gaussian_options_default()
        o.sigma_x = o.sigma_y = float(case[2:])
        if case.startswith("gf"):
            o.precision = 1
        else:
            o.ksize_x = o.ksize_y = 2 * round(3 * o.sigma_x) + 1
            o.method = SEPARABLE if case.startswith("gs") else FFT
        return lambda: L.lumen_gaussian_blur_ex(ctx, C.byref(src), C.byref(dst), C.byref(o), None)
    k = int(case[1:])
    ker = (np.random.default_rng(k).random(k * k, dtype=np.float32) / (k * k)).astype(np.float32)
    o = L.lumen_filter_options_default()
    o.method = FFT if case.startswith("f") else DIRECT
    kp = ker.ctypes.data_as(C.POINTER(C.c_float))
    return lambda: L.lumen_filter2d(ctx, C.byref(src), C.byref(dst), kp, k, k, C.byref(o), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--size", default="3000x2000")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    ap.add_argument("--clock", default="wall", choices=["wall", "thread"],
                    help="thread: the calling thread's CPU time (--threads 1 only), which other "
                         "jobs taking the core do not inflate; for compute-bound cases on a busy host")
    args = ap.parse_args()
    if args.clock == "thread" and args.threads != 1:
        ap.error("--clock thread measures the calling thread: use --threads 1")
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    w, h = (int(s) for s in args.size.split("x"))
    dt = {"f32": (F32, np.float32), "f16": (F16, np.float16), "bf16": (BF16, np.uint16)}[args.dtype]
    a = np.random.default_rng(1).random((h, w), dtype=np.float32)
    a = a.astype(dt[1]) if args.dtype != "bf16" else (a.view(np.uint32) >> 16).astype(np.uint16)
    b = np.zeros_like(a)
    variants = [Variant(s, args.threads) for s in args.variant]
    src = variants[0].lib.lumen_image_nchw(a.ctypes.data, dt[0], 1, 1, h, w)
    dst = variants[0].lib.lumen_image_nchw(b.ctypes.data, dt[0], 1, 1, h, w)
    print(f"{args.size} {args.dtype}, {args.threads} threads, {args.rounds} rounds, {args.clock} "
          "clock (ms, min / median)")
    for case in args.case:
        calls = [case_call(v, case, src, dst) for v in variants]
        times = [[] for _ in variants]
        outs = []
        for v, f in zip(variants, calls):  # warm-up, and the results must agree bit for bit
            v.enter()
            v.check(f())
            v.leave()
            outs.append(b.copy())
        same = all(np.array_equal(o.view(np.uint8), outs[0].view(np.uint8)) for o in outs)
        for _ in range(args.rounds):
            for i, (v, f) in enumerate(zip(variants, calls)):
                v.enter()
                t0 = clock()
                st = f()
                times[i].append((clock() - t0) * 1e3)
                v.leave()
                v.check(st)
        mins = [min(t) for t in times]
        row = "  ".join(f"{v.name} {m:.3f}/{statistics.median(t):.3f} ({m / mins[0]:.3f})"
                        for v, t, m in zip(variants, times, mins))
        print(f"{case:6s} {row}  {'same bits' if same else 'BITS DIFFER'}")


if __name__ == "__main__":
    main()
