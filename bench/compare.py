#!/usr/bin/python3
"""Times lumen against OpenCV and SciPy on the same cases, in the same run, and prints ratios.

    /usr/bin/python3 bench/compare.py [--size WxH] [--repeat N] [--threads N] [--json]

lumen is timed in-process by `lumen bench --json` (min and median of N warm runs, the cold
first call apart); the peers are timed here the same way on an f32 image of the same size:
  filter2d_kK   cv2.filter2D(img, -1, k, borderType=BORDER_REFLECT) with lumen's kernel (the
                same LCG and seed, so the same taps); scipy.ndimage.correlate(mode='reflect')
                for K = 3 and 7 only (K = 15 single-threaded is hopeless: "skipped")
  gaussian_sS   cv2.GaussianBlur(img, (k, k), S, borderType=BORDER_REFLECT) with lumen's ksize
                2*round(3S)+1; scipy.ndimage.correlate1d along x then y with the same
                cv2.getGaussianKernel taps
OpenCV runs with cv2.setNumThreads(threads) and lumen with --threads; SciPy is single-threaded.
Targets (the foundation issue): filter2d <= 1.0x cv2 at k=3,7 and <= 0.3x at k=15; Gaussian
<= 1.0x at sigma=1 and <= 0.5x at sigma=3,10; the ratio is lumen/cv2 on the minima.
Machines are noisy: quote ratios, not milliseconds.
"""

import argparse
import json
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

REPO = Path(__file__).resolve().parents[1]

#: lumen/cv2 ratio (on min ms) each case must reach.
TARGETS = {
    "filter2d_k3": 1.0, "filter2d_k7": 1.0, "filter2d_k15": 0.3,
    "gaussian_s1": 1.0, "gaussian_s3": 0.5, "gaussian_s10": 0.5,
}
#: SciPy cases worth timing (direct 2-D correlation at k=15 takes seconds per call).
SCIPY_FILTER_K = (3, 7)


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


def summary(cold, warm):
    return {"ms_cold": cold, "ms_min": min(warm), "ms_median": statistics.median(warm)}


def machine_info(threads):
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": model, "cpus_online": os.cpu_count(), "cpus_usable": usable,
        "threads": threads, "python": platform.python_version(), "numpy": np.__version__,
        "cv2": cv2.__version__, "cv2_threads": cv2.getNumThreads(), "scipy": scipy.__version__,
    }


def run_lumen(binary, w, h, repeat, threads):
    env = dict(os.environ, LUMEN_NUM_THREADS=str(threads))
    cmd = [binary, "bench", "--json", "--size", f"{w}x{h}", "--repeat", str(repeat),
           "--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"compare.py: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def peer_cases(row, img, repeat):
    """Times cv2 and (where sensible) SciPy on lumen's case `row`; returns (cv2, scipy|None)."""
    k = int(row["ksize"])
    if row["op"] == "filter2d":
        kernel = lcg_floats(k * k, 1000 + k, -1.0, 1.0).reshape(k, k)
        cv = summary(*time_calls(
            lambda: cv2.filter2D(img, -1, kernel, borderType=cv2.BORDER_REFLECT), repeat))
        sp = None
        if k in SCIPY_FILTER_K:
            out = np.empty_like(img)
            sp = summary(*time_calls(
                lambda: ndi.correlate(img, kernel, output=out, mode="reflect"), repeat))
        return cv, sp
    sigma = float(row["sigma"])
    cv = summary(*time_calls(
        lambda: cv2.GaussianBlur(img, (k, k), sigma, borderType=cv2.BORDER_REFLECT), repeat))
    g = cv2.getGaussianKernel(k, sigma, ktype=cv2.CV_32F).ravel()
    tmp, out = np.empty_like(img), np.empty_like(img)

    def scipy_gauss():
        ndi.correlate1d(img, g, axis=1, output=tmp, mode="reflect")
        ndi.correlate1d(tmp, g, axis=0, output=out, mode="reflect")

    return cv, summary(*time_calls(scipy_gauss, repeat))


def ratio(a, b):
    return a / b if a and b else None


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def main(argv=None):
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
        w, h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        ap.error(f"--size: expected WxH, got {args.size!r}")

    cv2.setNumThreads(args.threads)
    machine = machine_info(args.threads)
    lumen_rows = run_lumen(args.lumen, w, h, args.repeat, args.threads)
    img = np.random.default_rng(42).random((h, w), dtype=np.float32)

    rows = []
    for lr in lumen_rows:
        cv, sp = peer_cases(lr, img, args.repeat)
        target = TARGETS.get(lr["name"])
        r_cv = ratio(lr["ms_min"], cv["ms_min"])
        rows.append({
            "name": lr["name"], "op": lr["op"], "ksize": lr["ksize"], "sigma": lr["sigma"],
            "width": w, "height": h,
            "lumen": {k: lr[k] for k in ("ms_cold", "ms_min", "ms_median", "method", "isa",
                                         "threads", "device")},
            "cv2": cv, "scipy": sp,
            "ratio_cv2": r_cv, "ratio_cv2_median": ratio(lr["ms_median"], cv["ms_median"]),
            "ratio_scipy": ratio(lr["ms_min"], sp["ms_min"]) if sp else None,
            "target": target,
            "verdict": None if target is None or r_cv is None else
                       ("PASS" if r_cv <= target else "MISS"),
        })

    if args.json:
        json.dump({"machine": machine, "rows": rows}, sys.stdout, indent=2)
        print()
        return 0

    isa = lumen_rows[0]["isa"] if lumen_rows else "?"
    print(f"machine: {machine['cpu']}, {machine['cpus_usable']} usable of "
          f"{machine['cpus_online']} CPUs; lumen isa {isa}; numpy {machine['numpy']}, "
          f"cv2 {machine['cv2']}, scipy {machine['scipy']}")
    print(f"image {w}x{h} f32, 1 channel, border reflect; {args.repeat} warm runs; "
          f"lumen and cv2 on {args.threads} threads, scipy on 1; ratios on min ms")
    head = (f"{'case':<13} {'k':>3} {'method':<10} {'lumen min/med ms':>17} "
            f"{'cv2 min/med ms':>17} {'lumen/cv2':>9} {'scipy min ms':>12} {'lumen/scipy':>11} "
            f"{'target':>7} {'':4}")
    print(head)
    print("-" * len(head))
    for r in rows:
        lu, cv, sp = r["lumen"], r["cv2"], r["scipy"]
        print(f"{r['name']:<13} {r['ksize']:>3} {lu['method']:<10} "
              f"{lu['ms_min']:>8.2f}/{lu['ms_median']:<8.2f} "
              f"{cv['ms_min']:>8.2f}/{cv['ms_median']:<8.2f} {fmt(r['ratio_cv2']):>9} "
              f"{fmt(sp and sp['ms_min'], '.1f', 'skipped'):>12} {fmt(r['ratio_scipy']):>11} "
              f"{'-' if r['target'] is None else '<=' + format(r['target'], '.1f'):>7} "
              f"{r['verdict'] or '':4}")
    misses = [r["name"] for r in rows if r["verdict"] == "MISS"]
    print(f"\n{len(rows) - len(misses)}/{len(rows)} targets met" +
          (f"; missed: {', '.join(misses)}" if misses else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
