#!/usr/bin/python3
"""lumen.mask_bbox and lumen.crop against what MONAI's CropForeground does on NumPy arrays
(docs/crop.md), side by side in one run: the box by `mask > 0` reduced with any() and where()
(generate_spatial_bounding_box), the crop by slicing and np.pad (crop_pad); a crop's NumPy time
includes its box, as CropForeground computes one per call (and lumen.crop two: the output's
shape, then the call).

    /usr/bin/python3 bench/crop_bench.py [--threads N] [--repeat N]

Prints min and median milliseconds of warm calls and lumen / NumPy. Inputs are written before
timing (no first-touch page faults in the numbers). The machine is noisy: quote ratios.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

try:
    import lumen
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "build" / "python"))
    import lumen


def timed(fn, repeat):
    fn()
    t = []
    for _ in range(repeat):
        a = time.perf_counter()
        fn()
        t.append((time.perf_counter() - a) * 1e3)
    return min(t), float(np.median(t))


def numpy_bbox(mask):
    fg = mask > 0
    ys, xs = np.where(fg.any(1))[0], np.where(fg.any(0))[0]
    return (xs[0], ys[0], xs[-1] + 1, ys[-1] + 1) if len(xs) else (0, 0, 0, 0)


def numpy_crop(img, win):
    """MONAI's crop_pad of a window: slice, then np.pad with zeros."""
    h, w = img.shape[:2]
    x0, y0, x1, y1 = win
    piece = img[max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)]
    widths = ((max(-y0, 0), max(y1 - h, 0)), (max(-x0, 0), max(x1 - w, 0)))
    return np.pad(piece, widths + ((0, 0),) * (img.ndim - 2))


def grown(box, margin):
    x0, y0, x1, y1 = box
    return (x0 - margin, y0 - margin, x1 + margin, y1 + margin)


def row(name, ours, theirs):
    print(f"{name:<48} lumen {ours[0]:8.3f} / {ours[1]:8.3f} ms   numpy {theirs[0]:8.3f} / "
          f"{theirs[1]:8.3f} ms   ratio {ours[0] / theirs[0]:6.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args(argv)
    ctx = lumen.Context(threads=a.threads)
    print(f"min / median of {a.repeat} warm calls, {a.threads} threads")
    for name, fill in (("an object in the middle", (slice(1000, 2000), slice(1500, 2500))),
                       ("empty", None), ("one pixel at the bottom right", (2999, 3999))):
        m = np.zeros((3000, 4000), np.uint8)
        m[...] = 0
        if fill is not None:
            m[fill] = 1
        assert tuple(lumen.mask_bbox(m)) == numpy_bbox(m)
        row(f"mask_bbox 4000x3000 u8, {name}", timed(lambda: lumen.mask_bbox(m, context=ctx), a.repeat),
            timed(lambda: numpy_bbox(m), a.repeat))
    mk = np.zeros((2160, 3840), np.uint8)
    mk[100:2000, 200:3700] = 1
    for dt in (np.uint8, np.float32):
        img = (np.random.default_rng(0).random((2160, 3840, 3)) * 255).astype(dt)
        for margin in (0, 300):
            win = (200 - margin, 100 - margin, 3700 + margin, 2000 + margin)
            assert np.array_equal(lumen.crop(img, mk, margin=margin), numpy_crop(img, win))
            # MONAI's CropForeground: the box of the mask, then the crop (both timed)
            theirs = timed(lambda: numpy_crop(img, grown(numpy_bbox(mk), margin)), a.repeat)
            row(f"crop 3840x2160x3 {np.dtype(dt).name}, margin {margin}",
                timed(lambda: lumen.crop(img, mk, margin=margin, context=ctx), a.repeat), theirs)
            out = np.empty_like(numpy_crop(img, win))
            row("  the same into out= (no new output's page faults)",
                timed(lambda: lumen.crop(img, mk, margin=margin, context=ctx, out=out), a.repeat),
                theirs)
    frames = np.random.default_rng(1).integers(0, 255, (64, 1080, 1920, 3), np.uint8)
    fm = np.zeros((1080, 1920), np.uint8)
    fm[200:900, 300:1500] = 1
    win = (300 - 8, 200 - 8, 1500 + 8, 900 + 8)
    row("crop 64 frames 1920x1080x3 u8, one mask, margin 8",
        timed(lambda: lumen.crop(frames, fm, margin=8, context=ctx), max(a.repeat // 4, 3)),
        timed(lambda: np.stack([numpy_crop(f, grown(numpy_bbox(fm), 8)) for f in frames]),
              max(a.repeat // 4, 3)))


if __name__ == "__main__":
    main()
