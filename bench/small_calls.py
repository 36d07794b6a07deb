#!/usr/bin/python3
"""Small images: lumen against its peers where a call's fixed costs outweigh its arithmetic.

    PYTHONPATH=build/python /usr/bin/python3 bench/small_calls.py [--threads 2] [--rounds 7]

Each row times lumen and the peer on the same arrays in one process, the two alternated in
`--rounds` blocks (so that a busy spell on a shared machine hits both), and prints the minimum
microseconds per call and lumen / peer. Python calls on both sides: what a user sees. The peers
get the same thread count (cv2.setNumThreads, torch.set_num_threads). Results are allocated per
call on both sides. docs/benchmarks.md, "Small calls", holds a run and what it measured.
"""

import argparse
import time

import cv2
import numpy as np
import torch

import lumen


def per_call_us(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def side_by_side(fns, rounds, budget_s=0.05):
    """Minimum us per call of each fn, alternated; calls per block sized to ~budget_s."""
    for fn in fns:
        fn()
    calls = [max(3, int(budget_s * 1e6 / max(per_call_us(fn, 3), 0.1))) for fn in fns]
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], per_call_us(fn, calls[i]))
    return best


def cases(ctx, rng):
    """(name, peer name, lumen fn, peer fn) for each small case."""
    out = []
    for s in (16, 64, 256):
        img = rng.random((s, s), dtype=np.float32)
        k3 = rng.random((3, 3), dtype=np.float32)
        out.append((f"filter2d 3x3 {s}x{s}", "cv2.filter2D",
                    lambda img=img, k3=k3: lumen.filter2d(img, k3, border="reflect101",
                                                          context=ctx),
                    lambda img=img, k3=k3: cv2.filter2D(img, -1, k3,
                                                        borderType=cv2.BORDER_REFLECT_101)))
        out.append((f"gaussian s1.5 {s}x{s}", "cv2.GaussianBlur",
                    lambda img=img: lumen.gaussian_blur(img, 1.5, border="reflect101",
                                                        context=ctx),
                    lambda img=img: cv2.GaussianBlur(img, (0, 0), 1.5,
                                                     borderType=cv2.BORDER_REFLECT_101)))
        rgb = rng.random((s, s, 3), dtype=np.float32)
        out.append((f"resize linear {s}x{s}x3 /2", "cv2.resize",
                    lambda rgb=rgb, s=s: lumen.resize(rgb, (s // 2, s // 2),
                                                      interpolation="linear", context=ctx),
                    lambda rgb=rgb, s=s: cv2.resize(rgb, (s // 2, s // 2),
                                                    interpolation=cv2.INTER_LINEAR)))
    for c, h in ((16, 16), (32, 32), (64, 32)):
        x = rng.random((1, c, h, h), dtype=np.float32)
        w = rng.random((c, c, 3, 3), dtype=np.float32)
        xt, wt = torch.from_numpy(x), torch.from_numpy(w)
        out.append((f"conv2d {c}x{h}x{h} 3x3", "torch conv2d",
                    lambda x=x, w=w: lumen.conv2d(x, w, padding=1, context=ctx),
                    lambda xt=xt, wt=wt: torch.nn.functional.conv2d(xt, wt, padding=1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="threads on each side (default 2)")
    ap.add_argument("--rounds", type=int, default=7, help="alternated blocks (default 7)")
    args = ap.parse_args()
    if args.threads < 1 or args.rounds < 1:
        ap.error("--threads and --rounds must be >= 1")
    cv2.setNumThreads(args.threads)
    torch.set_num_threads(args.threads)
    ctx = lumen.Context(threads=args.threads)
    print(f"small calls, {args.threads} thread(s) each side, min us per call over "
          f"{args.rounds} alternated blocks ({ctx.cpu_features})")
    print(f"{'case':<28} {'peer':<18} {'lumen us':>9} {'peer us':>9} {'lumen/peer':>10}")
    with torch.no_grad():
        for name, peer, lf, pf in cases(ctx, np.random.default_rng(7)):
            lu, pe = side_by_side([lf, pf], args.rounds)
            print(f"{name:<28} {peer:<18} {lu:>9.1f} {pe:>9.1f} {lu / pe:>10.2f}")


if __name__ == "__main__":
    main()
