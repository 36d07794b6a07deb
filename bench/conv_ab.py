#!/usr/bin/python3
"""A/B two (or more) builds of liblumen on the conv2d bench layers, interleaved in one process
(docs/benchmarks.md, "NCHW convolution"): each variant is a liblumen.so loaded by ctypes
(RTLD_LOCAL, so builds live side by side) with its own context; every round calls every
variant once per case, in turn, and the min (and median) of the rounds is printed with each
variant's ratio to the first. Optional env settings per variant, as bench/lib_ab.py's
(NAME=PATH:VAR=VAL:...).

    /usr/bin/python3 bench/conv_ab.py --variant base=build-base/liblumen.so \\
        --variant new=build/liblumen.so --case l1,l4 --threads 2 --rounds 20

Cases: the conv layers of `lumen bench conv` (l1, l2, l3, l4, pw, dw, s2), its data (the LCG
values in [-1, 1) are not needed for timing: uniform random ones here), no bias.
"""
import argparse
import ctypes as C
import statistics
import time

import numpy as np

import lib_ab
from lib_ab import Image

F32 = 2
# name: (N, C, H, W, K, R, S, stride, pad, groups)
CASES = {
    "l1": (32, 512, 7, 7, 512, 3, 3, 1, 1, 1),
    "l2": (8, 64, 56, 56, 64, 3, 3, 1, 1, 1),
    "l3": (8, 256, 14, 14, 256, 3, 3, 1, 1, 1),
    "l4": (8, 3, 224, 224, 64, 7, 7, 2, 3, 1),
    "pw": (8, 256, 28, 28, 128, 1, 1, 1, 0, 1),
    "dw": (8, 128, 56, 56, 128, 3, 3, 1, 1, 128),
    "s2": (8, 128, 28, 28, 256, 3, 3, 2, 1, 1),
}


class Params(C.Structure):
    _fields_ = [(f, C.c_int) for f in ("stride_h", "stride_w", "pad_h", "pad_w", "dilation_h",
                                       "dilation_w", "groups", "output_pad_h", "output_pad_w")]


def view(a):
    n, c, h, w = a.shape
    s = [v // 4 for v in a.strides]
    return Image(a.ctypes.data, F32, n, c, h, w, *s, 0)


class Variant(lib_ab.Variant):
    """lib_ab's variant (a build, its context, env around its calls) timing conv2d calls."""

    clock = staticmethod(time.perf_counter)

    def conv(self, x, w, y, p):
        self.enter()
        t = self.clock()
        rc = self.lib.lumen_conv2d(self.ctx, C.byref(x), C.byref(w), None, C.byref(p),
                                   C.byref(y), None)
        t = self.clock() - t
        self.leave()
        self.check(rc)
        return t


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--case", default="l1,l2,l3,l4,pw,dw,s2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--clock", choices=("wall", "thread"), default="wall",
                    help="thread: the calling thread's CPU time (--threads 1 only: lumen then "
                    "runs on it), which other jobs taking the core do not inflate")
    args = ap.parse_args()
    if args.clock == "thread":
        if args.threads != 1:
            ap.error("--clock thread measures the calling thread: use --threads 1")
        Variant.clock = staticmethod(time.thread_time)
    vs = [Variant(s, args.threads) for s in args.variant]
    rng = np.random.default_rng(42)
    for name in args.case.split(","):
        n, c, h, w_, k, r, s, st, pad, g = CASES[name]
        x = rng.uniform(-1, 1, (n, c, h, w_)).astype(np.float32)
        w = rng.uniform(-1, 1, (k, c // g, r, s)).astype(np.float32)
        P, Q = (h + 2 * pad - r) // st + 1, (w_ + 2 * pad - s) // st + 1
        ys = [np.zeros((n, k, P, Q), np.float32) for _ in vs]
        p = Params(st, st, pad, pad, 1, 1, g, 0, 0)
        xv, wv = view(x), view(w)
        yv = [view(y) for y in ys]
        times = [[] for _ in vs]
        for i, v in enumerate(vs):  # cold calls: plans, buffers
            v.conv(xv, wv, yv[i], p)
        for _ in range(args.rounds):
            for i, v in enumerate(vs):
                times[i].append(v.conv(xv, wv, yv[i], p))
        gflop = 2 * n * k * P * Q * (c // g) * r * s * 1e-9
        base = min(times[0])
        for i, v in enumerate(vs):
            diff = float(np.max(np.abs(ys[i] - ys[0])))
            print(f"{name:3s} {v.name:8s} min {min(times[i]) * 1e3:8.3f} ms  median "
                  f"{statistics.median(times[i]) * 1e3:8.3f} ms  {gflop / min(times[i]):7.1f} "
                  f"GFLOP/s  base/this {base / min(times[i]):5.3f}  max|diff| {diff:.2g}")


if __name__ == "__main__":
    main()
