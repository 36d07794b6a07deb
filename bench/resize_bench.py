#!/usr/bin/env python3
"""lumen.resize against cv2.resize, PIL.Image.resize and torch.nn.functional.interpolate, side
by side in one run (issue 15's benchmark; docs/resize.md, "Speed").

    PYTHONPATH=build/python /usr/bin/python3 bench/resize_bench.py [--threads 2] [--repeat 3]
        [--only u8|f32] [--no-batch] [--no-half | --only-half] [--json]

Cases: 3840x2160 RGB -> 1920x1080 and -> 7680x4320, 4000x3000 RGB -> 224x224, u8 and f32, per
rule: opencv (linear, area, cubic, lanczos against cv2.resize), pillow (linear, cubic, lanczos,
box: antialiased, against Image.resize on an "RGB" image for u8 and three "F" images for f32;
Pillow is single-threaded, so lumen's per-thread rate is printed beside it), torch (linear and
cubic with antialias=True against F.interpolate on a contiguous NCHW float tensor; torch 1.13
has no u8 here). Then a batch of 64 frames 1920x1080 u8 -> 640x360 in one lumen call against
a cv2.resize loop, in frames/s. Then f16 and bf16 storage against f32 for the same cases
(lumen alone, the dtypes alternating call by call; target f16 <= 0.7x f32). The images are smooth noise (a blurred random field), the
same arrays for every library; each result is compared with the peer's (max |difference|) so
that the timings compare like with like. Times are the minimum of --repeat calls after one
warm-up; ratios are lumen / peer. The issue's targets (2 threads): linear and area <= 1.0 x
cv2, cubic and lanczos <= 0.7 x cv2, pillow <= 0.25 x PIL, torch <= 0.5 x F.interpolate, batch
>= 1000 frames/s.
"""

import argparse
import json
import os
import platform
import time

import cv2
import numpy as np

import lumen

CV = {"linear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA, "cubic": cv2.INTER_CUBIC,
      "lanczos": cv2.INTER_LANCZOS4}
TARGET = {"linear": 1.0, "area": 1.0, "cubic": 0.7, "lanczos": 0.7}
CASES = [((3840, 2160), (1920, 1080)), ((3840, 2160), (7680, 4320)), ((4000, 3000), (224, 224))]


def image(w, h, dtype, seed=1):
    rng = np.random.default_rng(seed)
    small = rng.random((h // 8 + 1, w // 8 + 1, 3), dtype=np.float32)
    img = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    img += 0.1 * rng.random(img.shape, dtype=np.float32)
    img = np.clip(img, 0, 1)
    return (img * 255).round().astype(np.uint8) if dtype == "u8" else img


def timed(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def diff(a, b):
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def opencv_rows(src, size, dt, ctx, repeat):
    rows = []
    out = np.empty((size[1], size[0], 3), src.dtype)
    for ip, flag in CV.items():
        tl = timed(lambda: lumen.resize(src, size=size, interpolation=ip, context=ctx, out=out),
                   repeat)
        ref = cv2.resize(src, size, interpolation=flag)
        d = diff(out, ref)
        tp = timed(lambda: cv2.resize(src, size, interpolation=flag), repeat)
        rows.append(dict(rule="opencv", interp=ip, peer="cv2.resize", lumen_ms=tl * 1e3,
                         peer_ms=tp * 1e3, ratio=tl / tp, target=TARGET[ip], max_diff=d))
    return rows


def pillow_rows(src, size, dt, ctx, repeat):
    from PIL import Image
    flags = {"linear": Image.BILINEAR, "cubic": Image.BICUBIC, "lanczos": Image.LANCZOS,
             "box": Image.BOX}
    if dt == "u8":
        ims = [Image.fromarray(src, "RGB")]
    else:
        ims = [Image.fromarray(np.ascontiguousarray(src[..., c]), "F") for c in range(3)]
    rows = []
    out = np.empty((size[1], size[0], 3), src.dtype)
    mpix = src.shape[0] * src.shape[1] / 1e6
    for ip, flag in flags.items():
        tl = timed(lambda: lumen.resize(src, size=size, interpolation=ip, rule="pillow",
                                        context=ctx, out=out), repeat)
        res = [np.asarray(im.resize(size, flag)) for im in ims]
        ref = res[0] if dt == "u8" else np.stack(res, axis=-1)
        d = diff(out, ref)
        tp = timed(lambda: [im.resize(size, flag) for im in ims], repeat)
        rows.append(dict(rule="pillow", interp=ip, peer="PIL.Image.resize", lumen_ms=tl * 1e3,
                         peer_ms=tp * 1e3, ratio=tl / tp, target=0.25, max_diff=d,
                         lumen_mpix_s_per_thread=mpix / tl / ctx.threads,
                         pil_mpix_s=mpix / tp))
    return rows


def torch_rows(src, size, dt, ctx, repeat):
    if dt != "f32":
        return []
    import torch
    torch.set_num_threads(ctx.threads)
    t = torch.from_numpy(np.ascontiguousarray(src.transpose(2, 0, 1)))[None]
    rows = []
    out = np.empty((size[1], size[0], 3), src.dtype)
    for ip, mode in (("linear", "bilinear"), ("cubic", "bicubic")):
        tl = timed(lambda: lumen.resize(src, size=size, interpolation=ip, rule="torch",
                                        antialias=True, context=ctx, out=out), repeat)
        with torch.no_grad():
            ref = torch.nn.functional.interpolate(t, size=(size[1], size[0]), mode=mode,
                                                  antialias=True)
            d = diff(out, ref[0].numpy().transpose(1, 2, 0))
            tp = timed(lambda: torch.nn.functional.interpolate(
                t, size=(size[1], size[0]), mode=mode, antialias=True), repeat)
        rows.append(dict(rule="torch", interp=ip + " antialias", peer="F.interpolate",
                         lumen_ms=tl * 1e3, peer_ms=tp * 1e3, ratio=tl / tp, target=0.5,
                         max_diff=d))
    return rows


HALF = [("opencv", "linear", {}), ("opencv", "area", {}), ("opencv", "cubic", {}),
        ("opencv", "lanczos", {}), ("pillow", "linear", {}), ("pillow", "lanczos", {}),
        ("pillow", "box", {}), ("torch", "linear", {"antialias": True})]


def half_rows(src, size, ctx, repeat):
    """f16 and bf16 storage against f32 on the same values (issue 15: memory-bound resizes
    <= 0.7x their f32 time): the three dtypes alternate call by call, minimum of each."""
    import torch
    srcs = {"f32": src, "f16": src.astype(np.float16),
            "bf16": torch.from_numpy(src).to(torch.bfloat16)}
    outs = {"f32": np.empty((size[1], size[0], 3), np.float32),
            "f16": np.empty((size[1], size[0], 3), np.float16),
            "bf16": torch.empty((size[1], size[0], 3), dtype=torch.bfloat16)}
    rows = []
    for rule, ip, kw in HALF:
        def call(d):
            lumen.resize(srcs[d], size=size, interpolation=ip, rule=rule, context=ctx,
                         out=outs[d], **kw)
        best = {}
        for d in srcs:
            call(d)
            best[d] = float("inf")
        for _ in range(repeat):
            for d in srcs:
                t0 = time.perf_counter()
                call(d)
                best[d] = min(best[d], time.perf_counter() - t0)
        rows.append(dict(rule=rule, interp=ip + (" antialias" if kw else ""),
                         f32_ms=best["f32"] * 1e3, f16_ms=best["f16"] * 1e3,
                         bf16_ms=best["bf16"] * 1e3, f16_ratio=best["f16"] / best["f32"],
                         bf16_ratio=best["bf16"] / best["f32"], target=0.7))
    return rows


def batch_row(ctx, repeat):
    frames = image(1920, 1080, "u8")[None].repeat(64, axis=0)
    out = np.empty((64, 360, 640, 3), np.uint8)
    rows = []
    for ip in ("linear", "area"):
        tl = timed(lambda: lumen.resize(frames, size=(640, 360), interpolation=ip, layout="nhwc",
                                        context=ctx, out=out), repeat)
        d = diff(out[7], cv2.resize(frames[7], (640, 360), interpolation=CV[ip]))
        tp = timed(lambda: [cv2.resize(f, (640, 360), interpolation=CV[ip]) for f in frames],
                   repeat)
        rows.append(dict(rule="opencv", interp=ip, frames=64, lumen_fps=64 / tl,
                         cv2_fps=64 / tp, ratio=tl / tp, target_fps=1000, max_diff=d))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["u8", "f32"])
    ap.add_argument("--no-batch", action="store_true")
    ap.add_argument("--no-half", action="store_true", help="skip the f16/bf16 against f32 rows")
    ap.add_argument("--only-half", action="store_true", help="only the f16/bf16 rows")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    cv2.setNumThreads(a.threads)
    ctx = lumen.Context("cpu", threads=a.threads)
    report = dict(machine=platform.processor() or platform.machine(), cpus=os.cpu_count(),
                  threads=a.threads, cpu_features=ctx.cpu_features, cv2=cv2.__version__,
                  cases=[], batch=[], half=[])
    for dt in ("u8", "f32"):
        if a.only and dt != a.only or a.only_half:
            continue
        for (sw, sh), size in CASES:
            src = image(sw, sh, dt)
            for fn in (opencv_rows, pillow_rows, torch_rows):
                for r in fn(src, size, dt, ctx, a.repeat):
                    r.update(dtype=dt, src=f"{sw}x{sh}", dst=f"{size[0]}x{size[1]}")
                    report["cases"].append(r)
                    if not a.json:
                        extra = ""
                        if "lumen_mpix_s_per_thread" in r:
                            extra = (f"  lumen {r['lumen_mpix_s_per_thread']:.0f} Mpix/s/thread,"
                                     f" PIL {r['pil_mpix_s']:.0f} Mpix/s")
                        print(f"{dt:3s} {r['src']:>9s} -> {r['dst']:<9s} {r['rule']:6s} "
                              f"{r['interp']:17s} lumen {r['lumen_ms']:8.2f} ms  "
                              f"{r['peer']:16s} {r['peer_ms']:8.2f} ms  ratio {r['ratio']:.2f} "
                              f"(target <= {r['target']})  max diff {r['max_diff']:.3g}{extra}",
                              flush=True)
    if not a.no_half:
        for (sw, sh), size in CASES:
            src = image(sw, sh, "f32")
            for r in half_rows(src, size, ctx, a.repeat):
                r.update(src=f"{sw}x{sh}", dst=f"{size[0]}x{size[1]}")
                report["half"].append(r)
                if not a.json:
                    print(f"half {r['src']:>9s} -> {r['dst']:<9s} {r['rule']:6s} "
                          f"{r['interp']:17s} f32 {r['f32_ms']:8.2f} ms  f16 {r['f16_ms']:8.2f} "
                          f"ms  bf16 {r['bf16_ms']:8.2f} ms  f16/f32 {r['f16_ratio']:.2f}  "
                          f"bf16/f32 {r['bf16_ratio']:.2f} (target <= 0.7)", flush=True)
    if not a.no_batch and not a.only_half:
        for r in batch_row(ctx, a.repeat):
            report["batch"].append(r)
            if not a.json:
                print(f"batch 64 x 1920x1080 u8 -> 640x360 {r['interp']:7s} lumen "
                      f"{r['lumen_fps']:7.0f} frames/s  cv2 loop {r['cv2_fps']:7.0f} frames/s  "
                      f"ratio {r['ratio']:.2f} (target >= 1000 frames/s)  max diff "
                      f"{r['max_diff']:.3g}", flush=True)
    if a.json:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
