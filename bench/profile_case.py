#!/usr/bin/python3
"""Runs one lumen.bench case in a loop, for profiling it (docs/benchmarks.md, "Floors and
profiles"):

    perf record -e cpu-clock -g -o case.data -- /usr/bin/python3 bench/profile_case.py CASE
    perf stat -- /usr/bin/python3 bench/profile_case.py CASE --seconds 5

CASE is a lumen.bench case name (filter2d_k3, gaussian_s30, gaussian_fast_s50, l2_64x56x56_k3,
...) or box_kK (lumen.box_blur, a K x K mean: not a lumen.bench case). The image, kernels and
tensors are lumen.bench's (3000x2000 f32 unless --size); --threads as there (default 2). After
one warm-up call the case runs for --seconds and the ms per call (min, median) are printed, so
the profile and the time come from the same calls. Needs PYTHONPATH=<build>/python.
"""

import argparse
import statistics
import sys
import time

import numpy as np

import lumen
from lumen import bench as lb


def case_fn(name, args):
    """() -> None: one call of the case on fresh buffers."""
    ctx = lumen.Context(threads=args.threads)
    if name.startswith("box_k"):
        img, out, k = lb.make_image(args.w, args.h), None, int(name[len("box_k"):])
        out = np.zeros_like(img)
        return lambda: lumen.box_blur(img, k, border="reflect", out=out, context=ctx)
    conv = next((c for c in lb.CONV_CASES if c.name == name), None)
    if conv is not None:
        x, w = lb.conv_tensors(conv, conv.n)
        out = np.zeros((conv.n, conv.k) + conv.out_hw(), np.float32)
        return lb.lumen_conv_fn(conv, x, w, out, ctx)
    case = next((c for c in lb.CASES if c.name == name), None)
    if case is None:
        sys.exit(f"profile_case.py: unknown case {name!r} (lumen.bench's names, or box_kK)")
    img = lb.make_image(args.w, args.h)
    out = np.zeros_like(img)
    if case.batch > 1:
        img = lb.batch_of(img, case.batch)
        out = np.zeros_like(img)
    return lb.lumen_fn(case, img, out, ctx)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case")
    ap.add_argument("--seconds", type=float, default=10.0, help="how long to loop (default 10)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", default=lb.DEFAULT_SIZE, metavar="WxH")
    args = ap.parse_args(argv)
    args.w, args.h = (int(v) for v in args.size.lower().split("x"))
    fn = case_fn(args.case, args)
    fn()  # warm: plans, spectra, thread start-up, first touch
    run = lumen.last_run() or {}
    times, end = [], time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    what = run.get("algo") or run.get("method") or "?"
    print(f"{args.case}: {what}, isa {run.get('isa')}, {len(times)} calls: min "
          f"{min(times):.3f} ms, median {statistics.median(times):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
