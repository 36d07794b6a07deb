#!/usr/bin/env python3
"""Bloom + halation: lumen against the same formulas through OpenCV, side by side in one run
(issue 14's benchmark; docs/film.md, "Speed").

    PYTHONPATH=build/python /usr/bin/python3 bench/film_bench.py [--threads 2] [--repeat 3]
        [--device cpu] [--image PATH]

The image is a photograph (matplotlib's Grace Hopper sample, Debian python-matplotlib-data, or
--image) resized to 3000 x 2000 and 4500 x 3000, sRGB-decoded to linear f32: a real
photograph's highlights, not noise. OpenCV runs Phos's own code path: per channel,
cv2.filter2D of the bloom PSF (BORDER_REFLECT) and the three cv2.GaussianBlur of halation,
with NumPy for the thresholds and sums. lumen runs lumen.film.bloom then lumen.film.halation
(the stock's numbers, Portra 400). Both outputs are compared (max |difference|) so the timings
compare like with like. Prints min-of-repeat times, the ratio lumen / OpenCV (target <= 0.15 at
3000 x 2000, 2 threads) and ms per megapixel; --json prints one JSON object instead.
"""

import argparse
import json
import os
import platform
import sys
import time

import cv2
import numpy as np

import lumen

PHOTO = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"
STOCK = "portra400"


def linear_photo(path, w, h):
    bgr = cv2.imread(path, cv2.IMREAD_COLOR)
    if bgr is None:
        sys.exit(f"film_bench: cannot read {path} (Debian: python-matplotlib-data, or --image)")
    rgb = cv2.resize(bgr[..., ::-1], (w, h), interpolation=cv2.INTER_CUBIC)
    v = np.clip(rgb.astype(np.float32) / 255.0, 0, 1)
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4).astype(np.float32)


def psf(sigma, kappa, rho, radius):
    y, x = np.ogrid[-radius:radius + 1, -radius:radius + 1]
    r = np.sqrt(x * x + y * y).astype(np.float32)
    k = rho * np.exp(-r ** 2 / (2 * sigma ** 2)) + (1 - rho) * np.exp(-r / kappa)
    return (k / k.sum()).astype(np.float32)


def opencv_bloom_halation(img, s):
    """Phos's apply_wavelength_bloom then apply_halation, channel by channel, in float32."""
    radius = int(max(s["bloom_sigma"]) * 4)
    out = np.empty_like(img)
    for c in range(3):
        x = img[..., c]
        k = psf(s["bloom_sigma"][c], s["bloom_kappa"][c], s["bloom_rho"][c], radius)
        e = np.where(x > 0.8, x - 0.8, 0.0).astype(np.float32) * s["bloom_eta"][c]
        b = np.clip(x - e + cv2.filter2D(e, -1, k, borderType=cv2.BORDER_REFLECT), 0, 1)
        e = (np.maximum(b - 0.5, 0) * s["halation_f"][c] * s["halation_energy"]).astype(np.float32)
        sg = 0.2 * s["halation_radius"]
        layer = (cv2.GaussianBlur(e, (61, 61), sg) * 0.5 + cv2.GaussianBlur(e, (121, 121), 2 * sg)
                 * 0.3 + cv2.GaussianBlur(e, (151, 151), 4 * sg) * 0.2)
        total = layer.sum()
        if total > 1e-6:
            layer *= e.sum() / total
        out[..., c] = np.clip(b - e + layer, 0, 1)
    return out


def lumen_bloom_halation(img, s, ctx, tmp):
    """Into preallocated arrays, each step out of place (as Phos's own code, whose steps return
    new arrays; in place, lumen's fused FFT path would copy its source first)."""
    lumen.film.bloom(img, s["bloom_eta"], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"],
                     out=tmp[0], context=ctx)
    return lumen.film.halation(tmp[0], s["halation_f"], s["halation_energy"],
                               s["halation_radius"], out=tmp[1], context=ctx)


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run(w, h, args, s, ctx):
    img = linear_photo(args.image, w, h)
    tmp = (np.empty_like(img), np.empty_like(img))
    lu = lumen_bloom_halation(img, s, ctx, tmp).copy()  # warm: plans, spectra, pools
    cv = opencv_bloom_halation(img, s)
    t_lu = best(lambda: lumen_bloom_halation(img, s, ctx, tmp), args.repeat)
    t_cv = best(lambda: opencv_bloom_halation(img, s), args.repeat)
    t_film = best(lambda: lumen.film.film(img, STOCK, context=ctx), args.repeat)
    mp = w * h / 1e6
    return {"size": f"{w}x{h}", "megapixels": mp, "lumen_ms": t_lu * 1e3, "opencv_ms": t_cv * 1e3,
            "ratio": t_lu / t_cv, "lumen_ms_per_mp": t_lu * 1e3 / mp,
            "opencv_ms_per_mp": t_cv * 1e3 / mp, "film_chain_ms": t_film * 1e3,
            "film_chain_ms_per_mp": t_film * 1e3 / mp,
            "max_abs_diff": float(np.abs(lu - cv).max()), "device": lumen.last_run()["device"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--image", default=PHOTO)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cv2.setNumThreads(args.threads)
    ctx = lumen.Context(threads=args.threads, device=args.device, strict=args.device != "cpu")
    s = lumen.film.stock(STOCK)
    rows = [run(3000, 2000, args, s, ctx), run(4500, 3000, args, s, ctx)]
    machine = {"cpu": platform.processor() or platform.machine(), "threads": args.threads,
               "cpus": os.cpu_count(), "lumen": lumen.__version__, "opencv": cv2.__version__,
               "image": args.image}
    try:
        with open("/proc/cpuinfo") as f:
            machine["cpu"] = next(ln.split(":", 1)[1].strip() for ln in f
                                  if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    if args.json:
        json.dump({"machine": machine, "rows": rows}, sys.stdout, indent=2)
        print()
        return 0
    print(f"bloom + halation ({STOCK}), {machine['cpu']}, {args.threads} threads, lumen "
          f"{machine['lumen']} on {args.device}, OpenCV {machine['opencv']}; min of {args.repeat}")
    print(f"{'size':>10} {'lumen ms':>9} {'OpenCV ms':>10} {'ratio':>6} {'lumen ms/MP':>12} "
          f"{'OpenCV ms/MP':>13} {'film chain ms/MP':>17} {'max |diff|':>11}")
    for r in rows:
        print(f"{r['size']:>10} {r['lumen_ms']:9.0f} {r['opencv_ms']:10.0f} {r['ratio']:6.3f} "
              f"{r['lumen_ms_per_mp']:12.1f} {r['opencv_ms_per_mp']:13.1f} "
              f"{r['film_chain_ms_per_mp']:17.1f} {r['max_abs_diff']:11.2e}")
    target = rows[0]["ratio"] <= 0.15
    print(f"target lumen / OpenCV <= 0.15 at 3000x2000: {'MET' if target else 'MISSED'} "
          f"({rows[0]['ratio']:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
