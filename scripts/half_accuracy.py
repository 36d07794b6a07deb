#!/usr/bin/python3
"""The accuracy table of docs/semantics.md ("Half precision"): each op's error against a float64
reference, for f32, f16 and bf16 storage ("how much does bf16 cost us").

    PYTHONPATH=build/python /usr/bin/python3 scripts/half_accuracy.py [--device cpu]

(--device: any lumen device spec, strict: nothing falls back to the CPU.)

The ops, their data (uniform in [-1, 1)) and references are tests/python/half_cases.py's, the
ones test_py_half.py holds to tolerances.half_atol. Two errors per dtype, both as the largest
|error| over the largest |float64 result| (a normwise relative error):

* op: against float64 arithmetic on the values the input holds in that dtype: what the op and
  the store cost (for halves, about the store's rounding: 2^-11 = 4.9e-4 for f16, 2^-8 = 3.9e-3
  for bf16, relative to each value, so somewhat less relative to the largest).
* total: against float64 arithmetic on the float64 data before it was stored in the dtype: what
  keeping both input and output in that dtype costs end to end.

Prints a Markdown table and the machine it ran on.
"""

import argparse
import platform
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))

import half_cases as hc  # noqa: E402
import lumen  # noqa: E402


def rel(got, want):
    return float(np.max(np.abs(hc.as_f64(got) - want)) / np.max(np.abs(want)))


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="lumen device spec (default: cpu)")
    args = ap.parse_args()
    ctx = lumen.Context(device=args.device, strict=True)
    rows = []
    img64, ten64 = hc.image_data(), hc.tensor_data()
    for name, (fn, ref, _, _) in hc.IMAGE_OPS.items():
        exact64 = ref(img64)
        cells = []
        for dt in hc.DTYPES:
            src = hc.store(img64, dt)
            got = fn(src, context=ctx)
            cells.append((rel(got, ref(hc.as_f64(src))), rel(got, exact64)))
        rows.append((name, cells))
    for name, (fn, ref, w64) in hc.TENSOR_OPS.items():
        exact64 = ref(ten64, w64)
        cells = []
        for dt in hc.DTYPES:
            x, w = hc.store(ten64, dt), hc.store(w64, dt)
            got = fn(x, w, context=ctx)
            cells.append((rel(got, ref(hc.as_f64(x), hc.as_f64(w))), rel(got, exact64)))
        rows.append((name, cells))
    print(f"Machine: {cpu_name()} ({platform.machine()}); device {ctx.device}; data uniform in "
          "[-1, 1): 48 x 64 x 3 images, (2, 4, 17, 19) conv inputs.\n")
    head = "| op | " + " | ".join(f"{d} op | {d} total" for d in hc.DTYPES) + " |"
    print(head)
    print("|---" * (1 + 2 * len(hc.DTYPES)) + "|")
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(f"{a:.2g} | {b:.2g}" for a, b in cells) + " |")


if __name__ == "__main__":
    main()
