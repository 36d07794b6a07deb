#!/usr/bin/python3
"""f16/bf16 storage against f32: the memory-bound filters (kernels up to 7 taps a side) at
3000 x 2000, side by side in one run (issue 15's target: f16 <= 0.7x the f32 time).

    PYTHONPATH=build/python /usr/bin/python3 bench/half_bench.py [--threads 2] [--repeat 7]
        [--channels 1] [--device cpu]

Each op runs src -> dst in one dtype (f32, f16, bf16) on the same values, into a preallocated
out= (so allocation is not timed); after one warm-up each, the three dtypes take turns, one
call each per round, and each keeps its min of --repeat rounds (interleaved, so a slow spell on
a shared machine hits all three alike). Prints the times,
the ratios half / f32 and the bytes each run moves (input + output). A benchmark, not a test.
"""

import argparse
import time

import numpy as np
import torch

import lumen

RNG = np.random.default_rng(15)
K3, K5, K7 = (RNG.standard_normal((k, k)).astype(np.float32) / k for k in (3, 5, 7))
KX7 = RNG.standard_normal(7).astype(np.float32) / 7

OPS = {
    "filter2d 3x3 direct": lambda s, o, c: lumen.filter2d(s, K3, method="direct", out=o, context=c),
    "filter2d 5x5 direct": lambda s, o, c: lumen.filter2d(s, K5, method="direct", out=o, context=c),
    "filter2d 7x7 direct": lambda s, o, c: lumen.filter2d(s, K7, method="direct", out=o, context=c),
    "sep_filter2d 7x7": lambda s, o, c: lumen.sep_filter2d(s, KX7, KX7, out=o, context=c),
    "gaussian_blur 7x7 (sigma 1.2)": lambda s, o, c: lumen.gaussian_blur(s, 1.2, ksize=7, out=o,
                                                                        context=c),
    "box_blur 3x3": lambda s, o, c: lumen.box_blur(s, 3, out=o, context=c),
    "box_blur 5x5": lambda s, o, c: lumen.box_blur(s, 5, out=o, context=c),
}


def make(dtype, data):
    if dtype == "bfloat16":
        return torch.from_numpy(data).to(torch.bfloat16)
    return data.astype(dtype)


def empty_like(a):
    return torch.empty_like(a) if isinstance(a, torch.Tensor) else np.empty_like(a)


def best(fns, repeat):
    """{name: min seconds} of the calls fns[name](), taking turns round by round."""
    for fn in fns.values():
        fn()
    t = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            t[name] = min(t[name], time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--channels", type=int, default=1)
    ap.add_argument("--width", type=int, default=3000)
    ap.add_argument("--height", type=int, default=2000)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    ctx = lumen.Context(device=a.device, threads=a.threads)
    shape = (a.height, a.width) if a.channels == 1 else (a.height, a.width, a.channels)
    data = RNG.uniform(0, 1, shape).astype(np.float32)
    srcs = {d: make(d, data) for d in ("float32", "float16", "bfloat16")}
    print(f"{a.width} x {a.height} x {a.channels}, {a.threads} threads, device {a.device} "
          f"({ctx.cpu_features}), min of {a.repeat}")
    print(f"{'op':32s} {'f32 ms':>8s} {'f16 ms':>8s} {'bf16 ms':>8s} {'f16/f32':>8s} "
          f"{'bf16/f32':>8s}")
    for name, op in OPS.items():
        outs = {d: empty_like(s) for d, s in srcs.items()}
        t = best({d: (lambda s=s, o=outs[d]: op(s, o, ctx)) for d, s in srcs.items()}, a.repeat)
        print(f"{name:32s} {t['float32'] * 1e3:8.2f} {t['float16'] * 1e3:8.2f} "
              f"{t['bfloat16'] * 1e3:8.2f} {t['float16'] / t['float32']:8.2f} "
              f"{t['bfloat16'] / t['float32']:8.2f}")


if __name__ == "__main__":
    main()
