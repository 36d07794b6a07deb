#!/usr/bin/python3
"""A/B two (or more) builds of liblumen's resize interleaved in one process (docs/resize.md,
"Speed"): each variant is a liblumen.so loaded by ctypes (RTLD_LOCAL, so builds live side by
side), optionally with LUMEN_CPU_ISA set around its calls. Every round calls every variant once
per case and dtype, in turn; the minimum (and median) of the rounds is printed with each
variant's ratio to the first and, per variant, f16 / f32. The results of all variants must
agree bit for bit (printed per case).

    /usr/bin/python3 bench/resize_ab.py --variant base=build-base/liblumen.so \\
        --variant new=build/liblumen.so --case 1920x1080:opencv:linear --threads 2 --rounds 15

A case is WxH:rule:interpolation[:aa] (aa: torch antialias); the source is --src (3840x2160
by default), RGB interleaved, a smooth field plus noise as bench/resize_bench.py's.
"""
import argparse
import ctypes as C
import statistics
import time

import numpy as np

import lib_ab
from lib_ab import Image

DT = {"f32": (2, np.float32), "f16": (3, np.float16), "bf16": (4, np.uint16)}
RULE = {"opencv": 0, "pillow": 1, "torch": 2}
INTER = {"nearest": 0, "linear": 2, "cubic": 3, "area": 4, "lanczos": 5, "box": 6, "hamming": 7}


class Window(C.Structure):
    _fields_ = [(n, C.c_int64) for n in ("whole_h", "whole_w", "out_h", "out_w", "src_y",
                                          "src_x", "dst_y", "dst_x")]


class Options(C.Structure):
    _fields_ = [("rule", C.c_int), ("interpolation", C.c_int), ("fx", C.c_double),
                ("fy", C.c_double), ("antialias", C.c_int), ("align_corners", C.c_int),
                ("window", Window)]


class RunInfo(C.Structure):
    _fields_ = [("method", C.c_int), ("device", C.c_char_p), ("isa", C.c_char_p),
                ("threads", C.c_int), ("algo", C.c_char_p)]


class Variant(lib_ab.Variant):
    """lib_ab's variant (a build, its context, env around its calls) with resize's entry points."""

    def __init__(self, spec, threads):
        super().__init__(spec, threads)
        L = self.lib
        L.lumen_image_nhwc.restype = Image
        L.lumen_image_nhwc.argtypes = [C.c_void_p, C.c_int] + [C.c_int64] * 4
        L.lumen_resize_options_default.restype = Options

    def call(self, src, dst, opt, info=None):
        self.enter()
        st = self.lib.lumen_resize(self.ctx, C.byref(src), C.byref(dst), C.byref(opt),
                                   C.byref(info) if info is not None else None)
        self.leave()
        self.check(st)


def field(w, h):
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.stack([np.sin(x / 37 + c) * np.cos(y / 23 - c) for c in range(3)], -1)
    return ((base * 0.4 + 0.5) + rng.random((h, w, 3), dtype=np.float32) * 0.1).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--dtype", action="append", choices=list(DT), help="f32 and f16 by default")
    ap.add_argument("--src", default="3840x2160")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--clock", default="wall", choices=["wall", "thread"],
                    help="thread: the calling thread's CPU time (--threads 1 only), which other "
                         "jobs taking the core do not inflate")
    a = ap.parse_args()
    if a.clock == "thread" and a.threads != 1:
        ap.error("--clock thread measures the calling thread: use --threads 1")
    clock = time.perf_counter if a.clock == "wall" else time.thread_time
    dtypes = a.dtype or ["f32", "f16"]
    W, H = (int(s) for s in a.src.split("x"))
    f32 = field(W, H)
    srcs = {"f32": f32, "f16": f32.astype(np.float16),
            "bf16": (f32.view(np.uint32) >> 16).astype(np.uint16)}
    vs = [Variant(s, a.threads) for s in a.variant]
    print(f"src {a.src} RGB, {a.threads} threads, {a.rounds} rounds, {a.clock} clock "
          "(ms, min / median)")
    for case in a.case:
        size, rule, ip, *aa = case.split(":")
        w, h = (int(s) for s in size.split("x"))
        opt = vs[0].lib.lumen_resize_options_default()
        opt.rule, opt.interpolation, opt.antialias = RULE[rule], INTER[ip], int(bool(aa))
        best = {}
        for d in dtypes:
            s_arr = srcs[d]
            outs = [np.zeros((h, w, 3), DT[d][1]) for _ in vs]
            si = vs[0].lib.lumen_image_nhwc(s_arr.ctypes.data, DT[d][0], 1, H, W, 3)
            dis = [vs[0].lib.lumen_image_nhwc(o.ctypes.data, DT[d][0], 1, h, w, 3) for o in outs]
            algos = []
            for v, di in zip(vs, dis):
                info = RunInfo()
                v.call(si, di, opt, info)
                algos.append(f"{info.isa.decode()}/{info.algo.decode() if info.algo else '-'}")
            same = all(np.array_equal(o.view(np.uint8), outs[0].view(np.uint8)) for o in outs)
            times = [[] for _ in vs]
            for _ in range(a.rounds):
                for i, (v, di) in enumerate(zip(vs, dis)):
                    t0 = clock()
                    v.call(si, di, opt)
                    times[i].append(clock() - t0)
            mins = [min(t) * 1e3 for t in times]
            meds = [statistics.median(t) * 1e3 for t in times]
            best[d] = mins
            cells = "  ".join(f"{v.name} {m:7.2f}/{md:7.2f} ({m / mins[0]:.2f})"
                              for v, m, md in zip(vs, mins, meds))
            print(f"{case:28s} {d:4s} {cells}  bits {'same' if same else 'DIFFER'}  "
                  f"[{', '.join(sorted(set(algos)))}]", flush=True)
        if "f32" in best and "f16" in best:
            print(f"{'':28s} f16/f32 " + "  ".join(
                f"{v.name} {best['f16'][i] / best['f32'][i]:.2f}" for i, v in enumerate(vs)))


if __name__ == "__main__":
    main()
