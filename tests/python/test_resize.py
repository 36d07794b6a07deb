"""lumen.resize against its peers, rule by rule (docs/resize.md): cv2.resize (rule "opencv"),
PIL.Image.resize (rule "pillow"; its "F" mode is the float reference) and
torch.nn.functional.interpolate (rule "torch"), up and down by integer and non-integer factors,
one axis, mixed, tiny images (1x1, 1xN, Nx1), every interpolation, u8/u16/f32, sizes and scale
factors; and the fast path against lumen's own scalar reference. Tolerances:
tests/python/tolerances.py (RESIZE_*)."""

import numpy as np
import pytest

from conftest import run_cli

from tolerances import (RESIZE_F32_REL, RESIZE_INT_LEVELS, RESIZE_SELF_F32_REL,
                        RESIZE_SELF_INT_LEVELS, data_span)

lumen = pytest.importorskip("lumen")
cv2 = pytest.importorskip("cv2")
Image = pytest.importorskip("PIL.Image")
torch = pytest.importorskip("torch")
F = torch.nn.functional

DTYPES = [np.uint8, np.uint16, np.float32]
#: (h, w) of the sources and (w, h) of the outputs: 2x and 3x down, 2x up, non-integer down and
#: up, one axis only, one axis down and the other up.
SRC = (36, 48)
SIZES = [(24, 18), (16, 12), (96, 72), (33, 25), (67, 50), (48, 10), (20, 60)]
#: tiny sources (h, w) and outputs (w, h)
TINY_SRC = [(1, 1), (1, 7), (7, 1), (2, 3)]
TINY_SIZES = [(1, 1), (5, 3), (1, 9), (9, 1)]


def make(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    if dtype == np.uint16:
        return rng.integers(0, 65536, shape, dtype=np.uint16)
    return rng.random(shape, dtype=np.float32)


def check(got, ref, src, what, exact=False):
    """f32 within RESIZE_F32_REL of the span; integers within RESIZE_INT_LEVELS (exact: 0)."""
    ref = np.asarray(ref).reshape(got.shape)
    if got.dtype == np.float32:
        atol = 0.0 if exact else RESIZE_F32_REL * data_span(src)
        err = np.abs(got.astype(np.float64) - ref).max()
        assert err <= atol, f"{what}: max |lumen - peer| {err:.3g} > {atol:.3g}"
    else:
        d = np.abs(got.astype(np.int64) - np.asarray(ref).astype(np.int64)).max()
        lim = 0 if exact else RESIZE_INT_LEVELS
        assert d <= lim, f"{what}: {d} levels from the peer (> {lim})"


def round_to(x, dtype):
    """A float peer result as dtype: rounded to nearest, ties to even, saturated."""
    if dtype == np.float32:
        return np.asarray(x, np.float32)
    info = np.iinfo(dtype)
    return np.clip(np.rint(x), info.min, info.max).astype(dtype)


# ---- opencv ----------------------------------------------------------------------------------

CV = {"nearest": cv2.INTER_NEAREST, "nearest-exact": cv2.INTER_NEAREST_EXACT,
      "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC, "area": cv2.INTER_AREA,
      "lanczos": cv2.INTER_LANCZOS4}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interp", list(CV))
def test_opencv_sizes(interp, dtype):
    src = make(SRC + (3,), dtype)
    for size in SIZES:
        got = lumen.resize(src, size=size, interpolation=interp)
        ref = cv2.resize(src, size, interpolation=CV[interp])
        check(got, ref, src, f"{interp} {size}", exact=interp.startswith("nearest"))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interp", list(CV))
def test_opencv_tiny(interp, dtype):
    for shape in TINY_SRC:
        src = make(shape, dtype, seed=shape[0] * 10 + shape[1])
        for size in TINY_SIZES:
            got = lumen.resize(src, size=size, interpolation=interp)
            ref = cv2.resize(src, size, interpolation=CV[interp])
            check(got, ref, src, f"{interp} {shape} -> {size}", exact=interp.startswith("nearest"))


@pytest.mark.parametrize("interp", list(CV))
@pytest.mark.parametrize("fx,fy", [(0.5, 0.5), (0.3, 0.7), (2.0, 2.0), (1.7, 0.45), (0.25, 3)])
def test_opencv_factors(interp, fx, fy):
    """fx/fy set the size (rounded) and the sample positions (1/fx), as cv2's dsize=None."""
    src = make((37, 53, 3), np.float32)
    got = lumen.resize(src, fx=fx, fy=fy, interpolation=interp)
    ref = cv2.resize(src, None, fx=fx, fy=fy, interpolation=CV[interp])
    assert got.shape == ref.shape
    check(got, ref, src, f"{interp} fx={fx} fy={fy}", exact=interp.startswith("nearest"))


@pytest.mark.parametrize("channels", [1, 2, 4])
def test_opencv_channels(channels):
    src = make((29, 31, channels), np.uint8)
    for interp in ("linear", "area", "cubic"):
        got = lumen.resize(src, size=(13, 45), interpolation=interp)
        ref = cv2.resize(src, (13, 45), interpolation=CV[interp])
        check(got, ref, src, f"{interp} c={channels}")


# ---- pillow ----------------------------------------------------------------------------------

PIL = {"nearest": Image.NEAREST, "linear": Image.BILINEAR, "cubic": Image.BICUBIC,
       "lanczos": Image.LANCZOS, "box": Image.BOX, "hamming": Image.HAMMING}


def pil_resize(src, size, interp):
    """Per channel: mode "L" for u8 (Pillow's own 8-bit path), else "F" (its float path;
    u16 rounded to nearest from it)."""
    chans = src[..., None] if src.ndim == 2 else src
    out = []
    for c in range(chans.shape[2]):
        plane = chans[..., c]
        if src.dtype == np.uint8:
            out.append(np.asarray(Image.fromarray(plane, "L").resize(size, PIL[interp])))
        else:
            f = Image.fromarray(plane.astype(np.float32), "F").resize(size, PIL[interp])
            out.append(round_to(np.asarray(f), src.dtype))
    return np.stack(out, axis=-1).reshape((size[1], size[0]) + src.shape[2:])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interp", list(PIL))
def test_pillow_sizes(interp, dtype):
    src = make(SRC + (3,), dtype)
    for size in SIZES:
        got = lumen.resize(src, size=size, interpolation=interp, rule="pillow")
        check(got, pil_resize(src, size, interp), src, f"{interp} {size}",
              exact=interp == "nearest" or dtype == np.uint8)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interp", list(PIL))
def test_pillow_tiny(interp, dtype):
    for shape in TINY_SRC:
        src = make(shape, dtype, seed=shape[0] * 10 + shape[1])
        for size in TINY_SIZES:
            got = lumen.resize(src, size=size, interpolation=interp, rule="pillow")
            check(got, pil_resize(src, size, interp), src, f"{interp} {shape} -> {size}",
                  exact=interp == "nearest" or dtype == np.uint8)


def test_pillow_u8_is_pillow_exactly():
    """Pillow's 8-bit path in its own integers: 22-bit weights, the horizontal pass stored as
    bytes (clipped: at a sharp edge the cubic's overshoot is cut there; an f32 pass would land
    several levels away), ties rounded as its shifts round them. Equal at every pixel, on hard
    edges, noise and a smooth photo-like field, up and down, 3 channels."""
    edges = np.zeros((40, 40), np.uint8)
    edges[::2, ::3] = 255
    edges[10:30, 10:30] = 255
    rng = np.random.default_rng(5)
    smooth = cv2.resize(rng.random((9, 12, 3), dtype=np.float32), (120, 90),
                        interpolation=cv2.INTER_CUBIC)
    smooth = np.clip(smooth * 255, 0, 255).round().astype(np.uint8)
    for src in (edges, make((61, 47, 3), np.uint8), smooth):
        for interp in PIL:
            for size in [(17, 23), (240, 180), (33, 8)]:
                got = lumen.resize(src, size=size, interpolation=interp, rule="pillow")
                check(got, pil_resize(src, size, interp), src, f"{interp} {size}", exact=True)


# ---- torch -----------------------------------------------------------------------------------

TORCH_MODE = {"nearest": "nearest", "nearest-exact": "nearest-exact", "linear": "bilinear",
              "cubic": "bicubic", "area": "area"}


def torch_resize(src, interp, size=None, scale=None, **kw):
    """F.interpolate on the HWC image as NCHW: natively for u8 nearest, else on the float
    values, rounded back to the integer dtype."""
    chans = src[..., None] if src.ndim == 2 else src
    native = src.dtype == np.uint8 and interp.startswith("nearest")
    if not native:  # torch has no uint16; integers go as float64
        chans = chans.astype(np.float32 if src.dtype == np.float32 else np.float64)
    t = torch.from_numpy(np.ascontiguousarray(chans.transpose(2, 0, 1)))[None]
    size_hw = None if size is None else (size[1], size[0])
    out = F.interpolate(t, size=size_hw, scale_factor=scale, mode=TORCH_MODE[interp], **kw)
    out = out[0].numpy().transpose(1, 2, 0)
    out = out if native else round_to(out, src.dtype)
    return out.reshape(out.shape[:2] + src.shape[2:])


def torch_cases(interp):
    if interp in ("linear", "cubic"):
        return [dict(align_corners=ac, antialias=aa) for ac in (False, True) for aa in (False, True)]
    return [{}]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interp", list(TORCH_MODE))
def test_torch_sizes(interp, dtype):
    src = make(SRC + (3,), dtype)
    for kw in torch_cases(interp):
        for size in SIZES:
            got = lumen.resize(src, size=size, interpolation=interp, rule="torch", **kw)
            check(got, torch_resize(src, interp, size=size, **kw), src, f"{interp} {size} {kw}",
                  exact=interp.startswith("nearest"))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interp", list(TORCH_MODE))
def test_torch_tiny(interp, dtype):
    for shape in TINY_SRC:
        src = make(shape, dtype, seed=shape[0] * 10 + shape[1])
        for kw in torch_cases(interp):
            for size in TINY_SIZES:
                got = lumen.resize(src, size=size, interpolation=interp, rule="torch", **kw)
                check(got, torch_resize(src, interp, size=size, **kw), src,
                      f"{interp} {shape} -> {size} {kw}", exact=interp.startswith("nearest"))


@pytest.mark.parametrize("interp", list(TORCH_MODE))
@pytest.mark.parametrize("scale", [0.3, 0.5, 1.7, 2.0, 2.5])
def test_torch_scale_factor(interp, scale):
    """scale_factor sets the size (floored) and, except for area, the sample positions."""
    src = make((37, 53, 3), np.float32)
    got = lumen.resize(src, fx=scale, interpolation=interp, rule="torch")
    ref = torch_resize(src, interp, scale=scale)
    assert got.shape == ref.shape
    check(got, ref, src, f"{interp} scale {scale}", exact=interp.startswith("nearest"))


# ---- lumen's own paths -----------------------------------------------------------------------

ALL = [("opencv", i) for i in CV] + [("pillow", i) for i in PIL] + \
      [("torch", i) for i in TORCH_MODE]


@pytest.mark.parametrize("rule,interp", ALL)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fast_path_matches_reference(rule, interp, dtype):
    """The SIMD path against the scalar reference (SIMD off), on interleaved and planar data."""
    ref_ctx = lumen.Context("cpu", simd=False)
    src = make((23, 41, 3), dtype)
    for size in [(17, 11), (90, 50), (41, 7)]:
        got = lumen.resize(src, size=size, interpolation=interp, rule=rule)
        ref = lumen.resize(src, size=size, interpolation=interp, rule=rule, context=ref_ctx)
        if dtype == np.float32:
            atol = RESIZE_SELF_F32_REL * data_span(src)
            assert np.abs(got - ref).max() <= atol, (size, np.abs(got - ref).max())
        else:
            assert np.abs(got.astype(int) - ref).max() <= RESIZE_SELF_INT_LEVELS, size
        planar = lumen.resize(np.ascontiguousarray(src.transpose(2, 0, 1)), size=size,
                              interpolation=interp, rule=rule, layout="chw")
        np.testing.assert_array_equal(planar.transpose(1, 2, 0), got)


@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
def test_u8_half_size_box_matches_reference(monkeypatch, isa):
    """u8 at exactly half the size, where every output is the 2x2 mean (OpenCV's and torch's
    linear and area): the integer path gives the reference's bytes (ties to even) for 1 to 33
    interleaved channels (33: past the permute path's 32), planar data, batches, one output
    row or column, and through each ISA cap; odd sizes (not a 2:1 box) take the f32 path."""
    monkeypatch.setenv("LUMEN_CPU_ISA", isa)
    ctx = lumen.Context("cpu")
    ref_ctx = lumen.Context("cpu", simd=False)
    rng = np.random.default_rng(7)
    cases = [((2, 2), c) for c in (1, 3)] + [((2, 130), 3), ((66, 2), 4), ((18, 98), 2),
                                             ((34, 70), 5), ((10, 22), 33), ((6, 9), 3),
                                             ((7, 10), 1)]
    for (h, w), c in cases:
        src = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
        src[0, :2] = [[1] * c, [2] * c]  # some exact halves: 1 + 2 + 1 + 2 = 6 -> 1.5 -> 2
        src[1, :2] = [[1] * c, [2] * c]
        for rule, interp in [("opencv", "linear"), ("opencv", "area"), ("torch", "linear"),
                             ("torch", "area")]:
            size = (max(w // 2, 1), max(h // 2, 1))
            kw = dict(size=size, interpolation=interp, rule=rule, layout="hwc")
            got = lumen.resize(src, context=ctx, **kw)
            ref = lumen.resize(src, context=ref_ctx, **kw)
            np.testing.assert_array_equal(got, ref, err_msg=f"{(h, w, c)} {rule} {interp}")
        planar = lumen.resize(np.ascontiguousarray(src.transpose(2, 0, 1)), size=size,
                              interpolation="area", layout="chw", context=ctx)
        np.testing.assert_array_equal(planar.transpose(1, 2, 0),
                                      lumen.resize(src, size=size, interpolation="area",
                                                   layout="hwc", context=ref_ctx))
    frames = rng.integers(0, 256, (3, 12, 20, 3), dtype=np.uint8)
    got = lumen.resize(frames, size=(10, 6), layout="nhwc", context=ctx)
    ref = lumen.resize(frames, size=(10, 6), layout="nhwc", context=ref_ctx)
    np.testing.assert_array_equal(got, ref)
    assert got[0, 0, 0, 0] == np.rint(frames[0, :2, :2, 0].astype(float).mean())
    check(got[1], cv2.resize(frames[1], (10, 6), interpolation=cv2.INTER_AREA), frames[1],
          "half-size area vs cv2")


@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
def test_pillow_u8_paths_are_pillow_integers(monkeypatch, isa):
    """Pillow's 8-bit rule, byte for byte against the reference's integers (and Image.resize)
    on every horizontal path: the AVX-512 dot products with 4, 2 and 1 output pixels per
    step and windows past 16 taps (several steps), 1 to 5 channels (5: the plain loop),
    odd sizes, one row or column, batches; and under each ISA cap."""
    monkeypatch.setenv("LUMEN_CPU_ISA", isa)
    ctx = lumen.Context("cpu")
    ref_ctx = lumen.Context("cpu", simd=False)
    rng = np.random.default_rng(11)
    for c in (1, 2, 3, 4, 5):
        src = rng.integers(0, 256, (29, 97, c), dtype=np.uint8)
        src[:, 40:50] = 255  # hard edges: the cubic's overshoot clipped between the passes
        # widths 13, 10, 7, 5: one-pixel groups (windows past 8 taps) go four at a time, so
        # every remainder of four is a last group of its own
        for size in [(48, 14), (32, 29), (13, 9), (10, 6), (7, 5), (5, 3), (1, 1), (97, 1),
                     (1, 29), (150, 40)]:
            for interp in ("box", "linear", "hamming", "cubic", "lanczos"):
                kw = dict(size=size, interpolation=interp, rule="pillow", layout="hwc")
                got = lumen.resize(src, context=ctx, **kw)
                ref = lumen.resize(src, context=ref_ctx, **kw)
                np.testing.assert_array_equal(got, ref, err_msg=f"c={c} {size} {interp}")
                if c in (1, 3) and interp == "cubic":  # (RGBA resizes premultiplied)
                    mode = {1: "L", 3: "RGB"}[c]
                    pil = Image.fromarray(src[..., 0] if c == 1 else src, mode).resize(
                        size, Image.BICUBIC)
                    np.testing.assert_array_equal(got.reshape(np.asarray(pil).shape),
                                                  np.asarray(pil))
    frames = rng.integers(0, 256, (3, 20, 41, 3), dtype=np.uint8)
    kw = dict(size=(13, 7), interpolation="lanczos", rule="pillow", layout="nhwc")
    np.testing.assert_array_equal(lumen.resize(frames, context=ctx, **kw),
                                  lumen.resize(frames, context=ref_ctx, **kw))


def test_batch_is_per_frame():
    """N x H x W x C frames in one call give each frame's own result."""
    frames = make((5, 30, 40, 3), np.uint8)
    got = lumen.resize(frames, size=(16, 12), interpolation="area", layout="nhwc")
    assert got.shape == (5, 12, 16, 3)
    for i in range(5):
        np.testing.assert_array_equal(got[i], lumen.resize(frames[i], size=(16, 12),
                                                           interpolation="area"))


def test_strided_view_and_dtype_change():
    """A non-contiguous view resizes as its copy; dtype= asks for another output dtype."""
    src = make((60, 80, 3), np.uint8)
    view = src[::2, ::-2]
    got = lumen.resize(view, size=(20, 15), interpolation="cubic")
    np.testing.assert_array_equal(got, lumen.resize(np.ascontiguousarray(view), size=(20, 15),
                                                    interpolation="cubic"))
    f = lumen.resize(src, size=(20, 15), dtype=np.float32)
    assert f.dtype == np.float32
    ref = cv2.resize(src.astype(np.float32), (20, 15))
    check(f, ref, src.astype(np.float32), "u8 -> f32")


def test_size_by_position():
    """size may come by position, as cv2.resize's dsize and PIL's size."""
    src = make((9, 11, 3), np.uint8)
    got = lumen.resize(src, (5, 4))
    assert got.shape == (4, 5, 3)
    np.testing.assert_array_equal(got, lumen.resize(src, size=(5, 4)))


@pytest.mark.parametrize("rule,interp", [("opencv", "linear"), ("opencv", "lanczos"),
                                         ("pillow", "cubic"), ("torch", "area")])
def test_float16_is_f32_rounded(rule, interp):
    """f16 storage: the f32 sums of the same (half) values, rounded once to nearest even."""
    src = make((37, 53, 3), np.float32).astype(np.float16)
    for size in [(20, 70), (53, 11)]:
        half = lumen.resize(src, size=size, interpolation=interp, rule=rule)
        assert half.dtype == np.float16
        full = lumen.resize(src.astype(np.float32), size=size, interpolation=interp, rule=rule)
        np.testing.assert_array_equal(half, full.astype(np.float16))


@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_half_storage_is_f32_rounded_on_every_path(monkeypatch, isa, half):
    """f16 and bf16 storage read and written inside the passes (widened in registers, the
    vertical pass storing the dst row in its dtype): the f32 sums of the same values rounded
    once to nearest even, for 1, 3 and 4 interleaved channels, rows long enough for the vector
    loops and their tails, both pass orders (growing: horizontal first; shrinking: vertical
    first), and planar data, under each ISA cap."""
    monkeypatch.setenv("LUMEN_CPU_ISA", isa)
    ctx = lumen.Context("cpu")

    def to_half(a):
        t = torch.from_numpy(np.ascontiguousarray(a))
        return t.to(torch.float16 if half == "f16" else torch.bfloat16)

    def as_f32(a):  # lumen returns f16 as numpy, bf16 as torch
        assert str(a.dtype).endswith("float16" if half == "f16" else "bfloat16")
        return torch.as_tensor(a).to(torch.float32).numpy()

    for c in (1, 3, 4):
        src = to_half(make((41, 67, c), np.float32, seed=c))
        full = src.to(torch.float32).numpy()
        for rule, interp in [("opencv", "linear"), ("opencv", "lanczos"), ("pillow", "cubic"),
                             ("torch", "area"), ("pillow", "box")]:
            for size in [(150, 90), (29, 17), (67, 100), (30, 41)]:
                got = lumen.resize(src, size=size, interpolation=interp, rule=rule, context=ctx)
                ref = lumen.resize(full, size=size, interpolation=interp, rule=rule,
                                   context=ctx)
                np.testing.assert_array_equal(as_f32(got), as_f32(to_half(ref)),
                                              err_msg=f"{c} {rule} {interp} {size}")
    for c in (1, 3, 6):  # exactly half the size: the fused box2 pass (AVX-512), masked tails
        src = to_half(make((40, 66, c), np.float32, seed=c))
        full = src.to(torch.float32).numpy()
        for rule, interp in [("opencv", "linear"), ("opencv", "area"), ("torch", "linear")]:
            got = lumen.resize(src, size=(33, 20), interpolation=interp, rule=rule, context=ctx,
                               layout="hwc")
            ref = lumen.resize(full, size=(33, 20), interpolation=interp, rule=rule, context=ctx,
                               layout="hwc")
            np.testing.assert_array_equal(as_f32(got), as_f32(to_half(ref)),
                                          err_msg=f"half size {c} {rule} {interp}")
    src = to_half(make((3, 41, 67), np.float32, seed=9))
    got = lumen.resize(src, size=(150, 90), interpolation="cubic", layout="chw", context=ctx)
    ref = lumen.resize(src.to(torch.float32).numpy(), size=(150, 90), interpolation="cubic",
                       layout="chw", context=ctx)
    np.testing.assert_array_equal(as_f32(got), as_f32(to_half(ref)))


def test_same_size_copies():
    src = make((9, 11, 3), np.float32)
    for rule, interp in ALL:
        np.testing.assert_array_equal(lumen.resize(src, size=(11, 9), rule=rule,
                                                   interpolation=interp), src)


@pytest.mark.parametrize("kw,match", [
    (dict(interpolation="box"), "interpolation"),
    (dict(interpolation="lanczos", rule="torch"), "interpolation"),
    (dict(interpolation="area", rule="pillow"), "interpolation"),
    (dict(antialias=True), "antialias"),
    (dict(align_corners=True, interpolation="nearest", rule="torch"), "align_corners"),
    (dict(rule="sideways"), "rule"),
])
def test_bad_arguments(kw, match):
    src = make((9, 11), np.uint8)
    kw.setdefault("size", (5, 5))
    with pytest.raises(lumen.ArgumentError, match=match):
        lumen.resize(src, **kw)


def test_size_or_factor_is_needed():
    with pytest.raises(lumen.ArgumentError, match="size"):
        lumen.resize(make((9, 11), np.uint8))
    with pytest.raises(lumen.ArgumentError, match="output size of 0"):
        lumen.resize(make((9, 11), np.uint8), fx=0.01)  # 0 pixels wide


# ---- the CLI ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args,size,call", [
    (["--size", "20x15", "--interpolation", "area"], (15, 20),
     dict(size=(20, 15), interpolation="area")),
    (["--size", "50,41", "--interpolation", "lanczos"], (41, 50),
     dict(size=(50, 41), interpolation="lanczos")),
    (["--fx", "0.5", "--rule", "torch", "--interpolation", "cubic", "--antialias"], (15, 20),
     dict(fx=0.5, rule="torch", interpolation="cubic", antialias=True)),
    (["--size", "17,11", "--rule", "pillow", "--interpolation", "hamming"], (11, 17),
     dict(size=(17, 11), rule="pillow", interpolation="hamming")),
    # a window: the whole input is the part of a 60 x 50 image at (10, 5), the output its part
    (["--size", "12,9", "--whole-src", "60,50", "--whole-dst", "30,25", "--src-origin", "10,5",
      "--dst-origin", "8,4"], (9, 12),
     dict(size=(12, 9), whole_src=(60, 50), whole_dst=(30, 25), src_origin=(10, 5),
          dst_origin=(8, 4))),
])
def test_cli_resize(lumen_bin, tmp_path, args, size, call):
    """lumen resize IN OUT ... writes what lumen.resize returns for the same arguments."""
    src = make((30, 40, 3), np.uint8)
    np.save(tmp_path / "in.npy", src)
    r = run_cli(lumen_bin, "resize", tmp_path / "in.npy", tmp_path / "out.npy", *args)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npy")
    assert got.shape == size + (3,)
    np.testing.assert_array_equal(got, lumen.resize(src, **call))


def test_cli_resize_errors(lumen_bin, tmp_path):
    np.save(tmp_path / "in.npy", make((8, 9), np.uint8))
    r = run_cli(lumen_bin, "resize", tmp_path / "in.npy", tmp_path / "out.npy", "--size", "4x")
    assert r.returncode == 2 and "--size" in r.stderr
    r = run_cli(lumen_bin, "resize", tmp_path / "in.npy", tmp_path / "out.npy", "--size", "4,4",
                "--interpolation", "box")
    # a combination the rule lacks is a mistake on the command line: usage error 2
    assert r.returncode == 2 and "--interpolation" in r.stderr and "box" in r.stderr
    assert not (tmp_path / "out.npy").exists()
    r = run_cli(lumen_bin, "resize", tmp_path / "in.npy", tmp_path / "out.npy")
    assert r.returncode == 2 and "size" in r.stderr
    # a window that does not fit the whole image, or lacks its whole result: usage errors
    r = run_cli(lumen_bin, "resize", tmp_path / "in.npy", tmp_path / "out.npy", "--size", "4,4",
                "--whole-src", "9,8", "--whole-dst", "4,4", "--src-origin", "1,0")
    assert r.returncode == 2 and "outside" in r.stderr, r.stderr
    r = run_cli(lumen_bin, "resize", tmp_path / "in.npy", tmp_path / "out.npy", "--size", "4,4",
                "--whole-src", "9,8")
    assert r.returncode == 2 and "whole_dst" in r.stderr, r.stderr
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize("rule,interp", [("opencv", "linear"), ("opencv", "area"),
                                         ("opencv", "lanczos"), ("pillow", "cubic"),
                                         ("torch", "cubic")])
def test_resize_window_is_its_part(rule, interp):
    """A window of a resize (lumen_resize_window) is its part of the whole result, bit for bit:
    blocks of the output from the input around them, shrinking and growing, u8 and f32 (the
    blocks and the whole call in one process, so the C window code runs under ASan too).
    lumen.dask.resize's tests cover every interpolation."""
    a = np.random.default_rng(6).random((50, 41, 3), dtype=np.float32)
    for src in (a, (a * 255).astype(np.uint8)):
        for ow, oh in ((13, 17), (90, 110)):
            whole = lumen.resize(src, (ow, oh), interpolation=interp, rule=rule)
            for y0, y1, x0, x1 in ((0, oh // 2, 0, ow // 3), (oh // 2, oh, ow // 3, ow)):
                sy0, sy1 = max(0, y0 * 50 // oh - 14), min(50, y1 * 50 // oh + 14)
                sx0, sx1 = max(0, x0 * 41 // ow - 14), min(41, x1 * 41 // ow + 14)
                part = lumen.resize(src[sy0:sy1, sx0:sx1], (x1 - x0, y1 - y0),
                                    interpolation=interp, rule=rule, whole_src=(41, 50),
                                    whole_dst=(ow, oh), src_origin=(sx0, sy0),
                                    dst_origin=(x0, y0))
                assert np.array_equal(part, whole[y0:y1, x0:x1]), (src.dtype, ow, y0, x0)


def test_resize_window_errors():
    """The C window refuses a src that lacks what its outputs read, and window arguments that
    do not come together, naming them."""
    a = np.random.default_rng(5).random((40, 30), dtype=np.float32)
    win = dict(whole_src=(30, 40), whole_dst=(15, 20))
    with pytest.raises(lumen.ArgumentError, match="read rows .* src holds"):
        lumen.resize(a[10:14], (15, 5), src_origin=(0, 10), dst_origin=(0, 5), **win)
    with pytest.raises(lumen.ArgumentError, match="whole_dst"):
        lumen.resize(a, (15, 20), whole_src=(30, 40))
    with pytest.raises(lumen.ArgumentError, match="outside"):
        lumen.resize(a, (15, 20), src_origin=(1, 0), **win)
    with pytest.raises(lumen.ArgumentError, match="outside"):
        lumen.resize(a, (15, 20), dst_origin=(0, 1), **win)
    part = lumen.resize(a, (15, 20), **win)  # the whole as its own window
    assert np.array_equal(part, lumen.resize(a, (15, 20)))
