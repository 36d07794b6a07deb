"""The photo cases of `python3 -m lumen.bench` (issue 30): 8- and 16-bit interleaved RGB.

Users filter u8 (sometimes u16) H x W x 3 photos of 12-50 MP, not one-channel f32. Every case
here runs on one seeded random RGB image of --photo-size (default 4000x3000, 12 MP; --size
sets both sizes when --photo-size is not given), border reflect101 (cv2.BORDER_REFLECT_101,
OpenCV's default; lumen gets border="reflect101" explicitly). bench.py's docstring lists the
cases, the peer calls and the targets; this module makes, checks and times them.

Each case is timed in one process, lumen's and the peers' calls alternating (bench.py's
time_interleaved: one cold call each, then --repeat rounds, the order reversed every other
round), min and median of the warm calls:
  lumen out=   into a preallocated, already written array (as the f32 cases)
  lumen fresh  a new result per call, as users write it: y = lumen.gaussian_blur(img, 1.0);
               its allocation and first-touch page faults are part of the time
  cv2 dst=     the same into a preallocated dst; cv2 fresh without dst
  pillow       PIL.Image methods on an Image made once outside the timing (Pillow returns a new
               Image per call: fresh only); single-threaded; u8 only (Pillow has no 16-bit RGB)
  torch        fresh only (no out=), on torch.from_numpy(img).permute(2, 0, 1)[None] (the
               same memory, channels-last); u8 only (torch 1.13 has no uint16)
"""

import dataclasses
import math

import numpy as np

import lumen

try:
    import cv2
except ImportError:
    cv2 = None

PHOTO_SIZE = "4000x3000"
DTYPES = {"u8": np.uint8, "u16": np.uint16}
#: Allowed max |lumen - peer| in levels for peers that compute the same op (cv2, torch): lumen
#: rounds the float result (within 0.51 levels of float64 here), and so do most peers.
LEVELS_TOL = 1
#: cv2.GaussianBlur on u8 and u16 is fixed-point: 0.76-1.65 levels (u8) and 1.3-2.0 (u16) from
#: the float64 result on the check image, so up to 2-3 levels from lumen's.
CV2_GAUSS_TOL = 3
SHARPEN = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
STOCK = "portra400"
CHECK_W, CHECK_H = 256, 192
#: Issue 30's targets: lumen (out=) / cv2 (dst=) on these ops, per dtype; lumen (fresh) /
#: Pillow on every case Pillow has; lumen (out=) / memory floor for u8 k <= 5.
CV2_TARGET = {"u8": 0.7, "u16": 0.8}
CV2_TARGET_OPS = {"filter2d_k3", "filter2d_k5", "gauss_s1", "gauss_s3", "box_k5"}
PIL_TARGET = 0.5
FLOOR_TARGET = 1.5
FLOOR_TARGET_OPS = {"filter2d_k3", "filter2d_k5", "box_k5"}


@dataclasses.dataclass(frozen=True)
class PhotoCase:
    name: str
    dtype: str           # "u8" or "u16"
    op: str              # filter2d, gaussian, box, resize, crop_resize, film
    tag: str             # the name after photo_<dtype>_ (filter2d_k3, gauss_s1, resize_half, ...)
    k: int = 0           # filter2d / box size
    sigma: float = 0.0
    div: int = 0         # resize: output = input / div (crop_resize: the crop's / 2)
    rule: str = "opencv"  # resize rule: opencv (vs cv2, torch) or pillow (vs Pillow)


def make_cases():
    cases = []
    for dt in DTYPES:
        def add(tag, op, **kw):
            cases.append(PhotoCase(f"photo_{dt}_{tag}", dt, op, tag, **kw))
        for k in (3, 5, 7):
            add(f"filter2d_k{k}", "filter2d", k=k)
        for s in (1, 2, 3, 5):
            add(f"gauss_s{s}", "gaussian", sigma=float(s))
        for k in (5, 15):
            add(f"box_k{k}", "box", k=k)
        for div, word in ((2, "half"), (4, "quarter")):
            add(f"resize_{word}", "resize", div=div)
            if dt == "u8":
                add(f"resize_{word}_pil", "resize", div=div, rule="pillow")
        add("crop_resize", "crop_resize", div=2)
        if dt == "u8":
            add("crop_resize_pil", "crop_resize", div=2, rule="pillow")
        add("film", "film")
    return cases


CASES = make_cases()
NAMES = [c.name for c in CASES]
GROUPS = {"photo": NAMES, **{f"photo_{dt}": [c.name for c in CASES if c.dtype == dt]
                             for dt in DTYPES}}


# ---- inputs --------------------------------------------------------------------------------

def kernel(k):
    """3: the sharpen kernel; 5, 7: lumen bench's LCG values in [0, 1) (seed 2000 + k), divided
    by their sum (a positive, normalised blur-like kernel, as `lumen bench` makes it)."""
    if k == 3:
        return SHARPEN.copy()
    from .bench import lcg_floats
    taps = lcg_floats(k * k, 2000 + k, 0.0, 1.0).reshape(k, k)
    return taps / np.float32(taps.astype(np.float64).sum())


def make_photo(w, h, dtype, seed=42):
    from .bench import aligned_copy
    hi = np.iinfo(DTYPES[dtype]).max
    rng = np.random.default_rng(seed)
    return aligned_copy(rng.integers(0, hi + 1, (h, w, 3), dtype=DTYPES[dtype]))


def crop_box(w, h):
    """The centre crop of crop_resize: half the width and height, (x0, y0, x1, y1)."""
    cw, ch = max(1, w // 2), max(1, h // 2)
    x0, y0 = (w - cw) // 2, (h - ch) // 2
    return x0, y0, x0 + cw, y0 + ch


def out_shape(case, w, h):
    """(H, W, 3) of the case's result."""
    if case.op == "crop_resize":
        x0, y0, x1, y1 = crop_box(w, h)
        w, h = x1 - x0, y1 - y0
    if case.op in ("resize", "crop_resize"):
        # n / div rounded half up, in integers: tools/lumen/bench_photo.c's sizes
        return (max(1, (h + case.div // 2) // case.div), max(1, (w + case.div // 2) // case.div),
                3)
    return (h, w, 3)


def traffic_bytes(case, w, h):
    """Bytes read + written at least: the input (or the crop) once and the output once."""
    es = np.dtype(DTYPES[case.dtype]).itemsize
    if case.op == "crop_resize":
        x0, y0, x1, y1 = crop_box(w, h)
        read = (x1 - x0) * (y1 - y0) * 3 * es
    else:
        read = w * h * 3 * es
    return read + math.prod(out_shape(case, w, h)) * es


def ksize_of(case):
    """The Gaussian's size as OpenCV derives it from sigma for the dtype (6 sigma + 1 for u8,
    8 sigma + 1 otherwise, odd); filter2d and box: k."""
    if case.op == "gaussian":
        return lumen.gaussian_ksize(case.sigma, DTYPES[case.dtype])
    return case.k or None


# ---- the calls -----------------------------------------------------------------------------

@dataclasses.dataclass
class Call:
    call: str                 # what is timed, in words
    fresh: object             # () -> result, a new array (or Image, tensor) per call
    out: object = None        # () -> result into a preallocated array; None: no such variant
    same: bool = True         # the same op and border as lumen's (results compared)
    note: str = ""
    to_numpy: object = None   # result -> H x W x 3 array, for the comparison
    tol: int = LEVELS_TOL     # allowed max |lumen - this| in levels (same-op calls)


def lumen_call(case, img, ctx, out):
    b = "reflect101"
    if case.op == "filter2d":
        k = kernel(case.k)
        fn = lambda **o: lumen.filter2d(img, k, border=b, context=ctx, **o)  # noqa: E731
        text = "lumen.filter2d"
    elif case.op == "gaussian":
        s = case.sigma
        fn = lambda **o: lumen.gaussian_blur(img, s, border=b, context=ctx, **o)  # noqa: E731
        text = "lumen.gaussian_blur"
    elif case.op == "box":
        fn = lambda **o: lumen.box_blur(img, case.k, border=b, context=ctx, **o)  # noqa: E731
        text = "lumen.box_blur"
    elif case.op in ("resize", "crop_resize"):
        src = img
        if case.op == "crop_resize":
            x0, y0, x1, y1 = crop_box(img.shape[1], img.shape[0])
            src = img[y0:y1, x0:x1]  # a view: lumen reads it in place, as cv2 does
        ho, wo, _ = out_shape(case, img.shape[1], img.shape[0])
        fn = lambda **o: lumen.resize(src, (wo, ho), interpolation="linear",  # noqa: E731
                                      rule=case.rule, context=ctx, **o)
        text = f"lumen.resize(rule={case.rule})"
    else:
        fn = lambda **o: lumen.film.film(img, STOCK, context=ctx, **o)  # noqa: E731
        text = f"lumen.film.film({STOCK})"
    return Call(text, lambda: fn(), lambda: fn(out=out))


def cv2_call(case, img, out):
    if cv2 is None or case.op == "film" or case.rule != "opencv":
        return None
    b = cv2.BORDER_REFLECT_101
    if case.op == "filter2d":
        k = kernel(case.k)
        return Call("cv2.filter2D", lambda: cv2.filter2D(img, -1, k, borderType=b),
                    lambda: cv2.filter2D(img, -1, k, dst=out, borderType=b))
    if case.op == "gaussian":
        s = case.sigma
        return Call("cv2.GaussianBlur((0,0))", lambda: cv2.GaussianBlur(img, (0, 0), s),
                    lambda: cv2.GaussianBlur(img, (0, 0), s, dst=out, borderType=b),
                    tol=CV2_GAUSS_TOL)
    if case.op == "box":
        ks = (case.k, case.k)
        return Call("cv2.blur", lambda: cv2.blur(img, ks, borderType=b),
                    lambda: cv2.blur(img, ks, dst=out, borderType=b))
    src = img
    if case.op == "crop_resize":
        x0, y0, x1, y1 = crop_box(img.shape[1], img.shape[0])
        src = img[y0:y1, x0:x1]
    ho, wo, _ = out_shape(case, img.shape[1], img.shape[0])
    lin = cv2.INTER_LINEAR
    return Call("cv2.resize(INTER_LINEAR)", lambda: cv2.resize(src, (wo, ho), interpolation=lin),
                lambda: cv2.resize(src, (wo, ho), dst=out, interpolation=lin))


def pillow_call(case, img):
    """Pillow's op on an Image made outside the timing; None where Pillow has no such op."""
    try:
        from PIL import Image, ImageFilter
    except ImportError:
        return None
    if case.dtype != "u8" or case.op == "film":
        return None
    if case.op in ("resize", "crop_resize") and case.rule != "pillow":
        return None
    pil = Image.fromarray(img)
    conv = np.asarray
    if case.op == "filter2d":
        if case.k > 5:
            return None  # ImageFilter.Kernel is 3x3 or 5x5 only
        # Pillow flips the kernel vertically (a convolution in y): flip it back for a correlation
        f = ImageFilter.Kernel((case.k, case.k), kernel(case.k)[::-1].ravel().tolist(), scale=1)
        return Call(f"Image.filter(Kernel {case.k}x{case.k})", lambda: pil.filter(f), same=False,
                    note="Pillow leaves the outer pixels unfiltered (no reflect101)",
                    to_numpy=conv)
    if case.op == "gaussian":
        f = ImageFilter.GaussianBlur(radius=case.sigma)
        return Call("Image.filter(GaussianBlur(radius=sigma))", lambda: pil.filter(f), same=False,
                    note="Pillow's GaussianBlur is an approximation by box passes, not OpenCV's "
                         "kernel", to_numpy=conv)
    if case.op == "box":
        f = ImageFilter.BoxBlur((case.k - 1) // 2)
        return Call(f"Image.filter(BoxBlur({(case.k - 1) // 2}))", lambda: pil.filter(f),
                    same=False, note="Pillow's BoxBlur repeats the edge pixel (no reflect101)",
                    to_numpy=conv)
    ho, wo, _ = out_shape(case, img.shape[1], img.shape[0])
    if case.op == "crop_resize":
        # crop, then resize: resize(box=) would read the pixels around the box as well
        box = crop_box(img.shape[1], img.shape[0])
        return Call("Image.crop(box).resize(BILINEAR, reducing_gap=None)",
                    lambda: pil.crop(box).resize((wo, ho), Image.BILINEAR, reducing_gap=None),
                    to_numpy=conv)
    return Call("Image.resize(BILINEAR, reducing_gap=None)",
                lambda: pil.resize((wo, ho), Image.BILINEAR, reducing_gap=None), to_numpy=conv)


def torch_call(case, img):
    """torchvision's gaussian_blur on the uint8 tensor; F.interpolate for the OpenCV-rule
    resizes (torch 1.13 has no uint8 bilinear: x.float(), interpolate, round, uint8, all timed,
    as a torch user has to). None where torch has no such op or dtype; a str: why not."""
    if case.dtype != "u8":
        return "torch has no uint16 tensors (torch.from_numpy refuses them)"
    import torch
    import torch.nn.functional as F
    x = torch.from_numpy(img).permute(2, 0, 1)[None]  # NCHW view of the HWC memory
    back = lambda t: t[0].permute(1, 2, 0).numpy()  # noqa: E731
    if case.op == "gaussian":
        try:
            import torchvision.transforms.functional as TF
        except ImportError:
            return "torchvision is not installed"
        ks = ksize_of(case)
        return Call("torchvision gaussian_blur(uint8)",
                    lambda: TF.gaussian_blur(x[0], [ks, ks], [case.sigma, case.sigma]),
                    to_numpy=lambda t: t.permute(1, 2, 0).numpy())
    if case.op not in ("resize", "crop_resize") or case.rule != "opencv":
        return None
    src = x
    if case.op == "crop_resize":
        x0, y0, x1, y1 = crop_box(img.shape[1], img.shape[0])
        src = x[..., y0:y1, x0:x1]
    ho, wo, _ = out_shape(case, img.shape[1], img.shape[0])

    def interp():
        with torch.no_grad():
            y = F.interpolate(src.float(), size=(ho, wo), mode="bilinear", align_corners=False)
            return y.round_().clamp_(0, 255).to(torch.uint8)
    return Call("F.interpolate(bilinear) on x.float()", interp, to_numpy=back)


# ---- comparing -----------------------------------------------------------------------------

def max_levels(a, b):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return math.inf if a.shape != b.shape else int(np.max(np.abs(a - b))) if a.size else 0


def peer_calls(case, img, ctx, outs, libs):
    """{name: Call} of lumen and the peers that have the case."""
    calls = {"lumen": lumen_call(case, img, ctx, outs["lumen"])}
    notes = {}
    if "cv2" in libs:
        c = cv2_call(case, img, outs["cv2"])
        if c:
            calls["cv2"] = c
    if "pillow" in libs:
        c = pillow_call(case, img)
        if c:
            calls["pillow"] = c
        elif case.dtype == "u16":
            notes["pillow"] = "Pillow has no 16-bit RGB mode"
    if "torch" in libs:
        c = torch_call(case, img)
        if isinstance(c, str):
            notes["torch"] = c
        elif c:
            calls["torch"] = c
    return calls, notes


def check(cases, libs, threads, context):
    """[{case, what, max_abs_diff, tol}]: lumen against every same-op peer on a small photo;
    exits at the first one over LEVELS_TOL (the timings would not compare like with like)."""
    import sys
    results = []
    ctx = context(threads)
    for case in cases:
        img = make_photo(CHECK_W, CHECK_H, case.dtype, seed=7)
        shape = out_shape(case, CHECK_W, CHECK_H)
        outs = {lib: np.zeros(shape, DTYPES[case.dtype]) for lib in ("lumen", "cv2")}
        calls, _ = peer_calls(case, img, ctx, outs, libs)
        want = calls["lumen"].fresh()
        for lib, c in calls.items():
            if lib == "lumen" or not c.same:
                continue
            got = c.fresh()
            d = max_levels(want, c.to_numpy(got) if c.to_numpy else got)
            results.append({"case": case.name, "what": c.call, "max_abs_diff": d, "tol": c.tol})
            if not d <= c.tol:
                sys.exit(f"lumen.bench: FATAL: {case.name}: {c.call} differs from lumen on a "
                         f"{CHECK_W}x{CHECK_H} {case.dtype} RGB image by {d} levels "
                         f"(> {c.tol}). The timings would not compare like with like.")
    return results


# ---- timing --------------------------------------------------------------------------------

def stats(ms):
    import statistics
    warm = ms[1:]
    return {"status": "ok", "ms_cold": ms[0], "ms_min": min(warm),
            "ms_median": statistics.median(warm)}


def run_case(case, img, args, libs, context, interleave):
    """The JSON-ready row of a case: every variant alternated in one loop."""
    from .bench import aligned_zeros
    h, w = img.shape[:2]
    shape = out_shape(case, w, h)
    outs = {lib: aligned_zeros(shape, DTYPES[case.dtype]) for lib in ("lumen", "cv2")}
    ctx = context(args.threads)
    calls, notes = peer_calls(case, img, ctx, outs, libs)
    fns = {}
    for lib, c in calls.items():
        if c.out is not None:
            fns[f"{lib} out"] = c.out
        fns[f"{lib} fresh"] = c.fresh
    try:
        ms, results = interleave(fns, args.repeat)
    except lumen.UnsupportedError as e:
        return base_row(case, w, h, shape) | {
            "lumen": {"status": "unsupported", "error": str(e)}, "peers": {}, "ratio": {},
            "ratio_median": {}, "max_abs_diff": {}, "notes": notes, "targets": []}
    # the out= run's method and ISA: call it once more after the loop (last_run is per thread)
    calls["lumen"].out()
    run = lumen.last_run() or {}
    lu = {"status": "ok", **{v: stats(ms[f"lumen {v}"]) for v in ("out", "fresh")}}
    lu.update({k: run.get(k) for k in ("method", "isa", "threads", "device")})
    peers = {}
    for lib, c in calls.items():
        if lib == "lumen":
            continue
        peers[lib] = {"call": c.call, "same_op": c.same, "note": c.note or None, "tol": c.tol,
                      "fresh": stats(ms[f"{lib} fresh"]),
                      "out": stats(ms[f"{lib} out"]) if c.out is not None else None}
    for lib, why in notes.items():
        peers[lib] = {"status": "n/a", "note": why}
    want = np.asarray(results["lumen fresh"])
    diffs = {}
    for lib, c in calls.items():
        if lib != "lumen":
            got = results[f"{lib} fresh"]
            diffs[lib] = max_levels(want, c.to_numpy(got) if c.to_numpy else got)
    ratio, ratio_med = ratios(lu, peers)
    row = base_row(case, w, h, shape) | {
        "lumen": lu, "peers": peers, "ratio": ratio, "ratio_median": ratio_med,
        "max_abs_diff": diffs, "notes": notes}
    row["targets"] = judge(case, ratio)
    return row


def base_row(case, w, h, shape):
    return {"name": case.name, "dtype": case.dtype, "op": case.op, "ksize": ksize_of(case),
            "sigma": case.sigma or None, "rule": case.rule if case.div else None,
            "width": w, "height": h, "channels": 3, "out": list(shape)}


def _r(a, b):
    return a / b if a and b else None


def ratios(lu, peers):
    """lumen / peer on the minima (and medians): cv2 dst= against lumen out=; every peer's
    fresh call against lumen's fresh one (Pillow and torch have no out=)."""
    r, rm = {}, {}
    for lib, p in peers.items():
        if p.get("status") == "n/a":
            continue
        if p.get("out"):
            r[f"{lib} out"] = _r(lu["out"]["ms_min"], p["out"]["ms_min"])
            rm[f"{lib} out"] = _r(lu["out"]["ms_median"], p["out"]["ms_median"])
        r[f"{lib} fresh"] = _r(lu["fresh"]["ms_min"], p["fresh"]["ms_min"])
        rm[f"{lib} fresh"] = _r(lu["fresh"]["ms_median"], p["fresh"]["ms_median"])
    return r, rm


def judge(case, ratio):
    """The issue's targets on the case (the floor's is added by add_floor)."""
    out = []
    if case.tag in CV2_TARGET_OPS:
        out.append(verdict("cv2 dst=", ratio.get("cv2 out"), CV2_TARGET[case.dtype]))
    if "pillow fresh" in ratio:
        out.append(verdict("Pillow", ratio.get("pillow fresh"), PIL_TARGET))
    return out


def verdict(against, r, limit):
    v = "not run" if r is None else ("met" if r <= limit else "MISSED")
    return {"against": against, "ratio": r, "limit": limit, "verdict": v}


def add_floor(row, floors):
    """row["floor"]: the memory floor `lumen bench floors` measured for the case (a memcpy of
    the photo's bytes, scaled to the case's read + write traffic) and lumen out= / floor; the
    issue's target on it (u8 k <= 5: <= 1.5x) joins the row's targets."""
    c = next((c for c in (floors.get("photo") or {}).get("cases", [])
              if c["name"] == row["name"]), None)
    if c is None:
        row["floor"] = None
        return
    lu = row["lumen"]
    r = _r(lu["out"]["ms_min"] if "out" in lu else None, c["floor_ms"])
    row["floor"] = {"ms": c["floor_ms"], "bound": "memory", "ratio": r, "limit": c["target"],
                    "bytes": c["bytes"], "memcpy_bytes": c["memcpy_bytes"]}
    if c["target"] is not None:
        row["targets"].append(verdict("memory floor", r, c["target"]))


def warnings(row):
    """Full-size results of same-op peers more than LEVELS_TOL away from lumen's."""
    return [f"{row['name']}: {p['call']} differs from lumen on the bench image by "
            f"{row['max_abs_diff'][lib]} levels (> {p['tol']})"
            for lib, p in row["peers"].items()
            if p.get("same_op") and not row["max_abs_diff"].get(lib, 0) <= p["tol"]]


# ---- printing ------------------------------------------------------------------------------

HEAD = (f"{'case':<28} {'k':>3} {'method':<9} {'lumen out=':>13} {'fresh':>13} "
        f"{'cv2 dst=':>13} {'l/cv2':>5} {'cv2 fresh':>13} {'l/cv2f':>6} {'pillow':>13} "
        f"{'l/pil':>5} {'torch':>13} {'l/tch':>5} {'floor':>7} {'l/floor':>7}")


def title(args):
    return (f"\nphoto cases: {args.photo_w}x{args.photo_h} interleaved RGB (u8, u16), border "
            f"reflect101, 1 cold + {args.repeat} warm calls of every variant, alternated; ms "
            f"min/median. l/cv2 = lumen out= / cv2 dst=, l/cv2f = fresh / fresh, l/pil and "
            f"l/tch = lumen fresh / the peer (they return new results); floor = memcpy of the "
            f"case's read + write bytes, l/floor = lumen out= / floor")


def print_row(row, fmt_mm, fmt_ratio, floor_cells):
    lu, p, r = row["lumen"], row["peers"], row["ratio"]
    k = "-" if row["ksize"] is None else str(row["ksize"])
    if "out" in lu:
        left = f"{lu.get('method') or '?':<9} {fmt_mm(lu['out']):>13} {fmt_mm(lu['fresh']):>13}"
    else:
        left = f"{'n/a':<9} {lu['status']:>27}"

    def peer(lib, v):
        return fmt_mm((p.get(lib) or {}).get(v))
    print(f"{row['name']:<28} {k:>3} {left} {peer('cv2', 'out'):>13} "
          f"{fmt_ratio(r.get('cv2 out')):>5} {peer('cv2', 'fresh'):>13} "
          f"{fmt_ratio(r.get('cv2 fresh')):>6} {peer('pillow', 'fresh'):>13} "
          f"{fmt_ratio(r.get('pillow fresh')):>5} {peer('torch', 'fresh'):>13} "
          f"{fmt_ratio(r.get('torch fresh')):>5} {floor_cells(row.get('floor'))}", flush=True)


def print_legend(rows):
    calls, notes = {}, {}
    for row in rows:
        for lib, p in row["peers"].items():
            if p.get("call"):
                calls.setdefault(lib, {}).setdefault(p["call"], None)
            if p.get("note"):
                notes.setdefault(lib, {}).setdefault(p["note"], None)
    for lib, names in calls.items():
        print(f"({lib}: {', '.join(names)})")
    for lib, ns in notes.items():
        for n in ns:
            print(f"({lib}: {n})")
    print("(Pillow runs on one thread; photo_*_film has no peer: Phos's whole chain is not "
          "in OpenCV; bench/film_bench.py times bloom + halation against it)")
