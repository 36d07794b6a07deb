"""lumen's answers against its peers: cv2.filter2D, scipy.ndimage.correlate/convolve,
cv2.GaussianBlur, cv2.blur and cv2.boxFilter, and float64 references built on
cv2.copyMakeBorder (conftest.pad).

Each test runs the real CLI on an .npy file and the peer on the same array. Tolerances and
the reasons for them live in tolerances.py; docs/reference-tests.md lists every call pair.
"""

import cv2
import numpy as np
import pytest
import scipy.ndimage as ndi

import tolerances as tol
from conftest import (BORDERS, CV2_BORDER, CV2_BORDERS, DTYPES, SCIPY_MODE, dyadic_kernel,
                      gaussian_params, make_image, per_channel, ref_convolve, ref_correlate,
                      ref_gaussian, ref_separable, rng_for, run_cli)

H, W = 29, 37  # small and odd-sized on purpose: no power-of-two or SIMD-width luck

# name: (kh, kw, anchor (x, y) or None for lumen's and cv2's default (kw/2, kh/2))
KERNELS = {
    "3x3": (3, 3, None),
    "4x4-even": (4, 4, None),
    "w5h2": (2, 5, None),
    "w2h5-a0,1": (5, 2, (0, 1)),
    "w4h3-a3,2": (3, 4, (3, 2)),
    "1x1": (1, 1, None),
    "w7h1": (1, 7, None),
    "15x15": (15, 15, None),          # cv2.filter2D uses a DFT from 130 taps up
    "w50h41-a30,3": (41, 50, (30, 3)),  # larger than the 37x29 image in both directions
}


def kernel_for(rng, kh, kw, dtype):
    """f32 images get dense taps in [-1, 1); integer images get exact (dyadic) kernels."""
    if np.dtype(dtype) == np.float32:
        return rng.uniform(-1.0, 1.0, (kh, kw)).astype(np.float32)
    return dyadic_kernel(rng, kh, kw)


def image_shape(channels, h=H, w=W):
    return (h, w) if channels == 1 else (h, w, channels)


def cv2_anchor(anchor):
    return (-1, -1) if anchor is None else tuple(anchor)


def compare_f32(got, peer, ref_fn, atol, what):
    """got vs the peer; on failure also say how far each is from the float64 reference."""
    try:
        tol.assert_f32_close(got, peer, atol, what)
    except AssertionError as e:
        ref = ref_fn()
        with np.errstate(invalid="ignore"):
            el = np.nanmax(np.abs(got.astype(np.float64) - ref))
            ep = np.nanmax(np.abs(peer.astype(np.float64) - ref))
        raise AssertionError(f"{e}\n  vs float64 reference: lumen {el:.3g}, peer {ep:.3g} "
                             f"(atol {atol:.3g})") from None


def compare_int(got, peer, exact, dtype, window, what):
    """Integers: lumen must be the correctly rounded exact value (either neighbour only within
    `window` of a .5 tie) and must equal the peer wherever the peer is correctly rounded.
    Where the peer is not (cv2's DFT path and fixed-point paths), the first check decides."""
    tol.assert_int_exact(got, exact, dtype, window, what + " vs exact")
    right = tol.int_exact_mask(peer, exact, dtype, tol.EXACT) & ~tol.near_tie(exact, window)
    # the peers are wrong on at most ~10% of pixels (tolerances.py); far more means the
    # reference itself is off and the comparison below would be hollow
    assert right.mean() >= 0.5, f"{what}: peer correctly rounded on only {right.mean():.1%}"
    tol.assert_int_equal(got[right], peer[right], what + " vs peer where the peer rounds right")
    return float(1.0 - tol.int_exact_mask(peer, exact, dtype, tol.EXACT).mean())


# ---- filter2d vs cv2.filter2D ----------------------------------------------------------------


@pytest.mark.parametrize("kname", list(KERNELS))
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_filter2d_vs_cv2(lumen, dname, channels, border, kname):
    dtype = DTYPES[dname]
    kh, kw, anchor = KERNELS[kname]
    rng = rng_for("filter2d", dname, channels, border, kname)
    src = make_image(rng, image_shape(channels), dtype)
    k = kernel_for(rng, kh, kw, dtype)
    # cv2.filter2D's BORDER_CONSTANT is always 0, so lumen gets --value 0 there.
    value = 0.0 if border == "constant" else None
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value)
    peer = cv2.filter2D(src, -1, k, anchor=cv2_anchor(anchor), borderType=CV2_BORDER[border])
    what = f"filter {dname} c{channels} {border} {kname}"

    def ref():
        return ref_correlate(src, k, anchor, border, 0.0)

    if dtype == np.float32:
        compare_f32(got, peer, ref, tol.f32_atol(src, np.abs(k).sum()), what)
    else:
        # dyadic kernel: every f32 step is exact, so there is one right answer, ties included
        compare_int(got, peer, ref(), dtype, tol.EXACT, what)


@pytest.mark.parametrize("kname", ["3x3", "4x4-even", "w2h5-a0,1", "15x15", "w50h41-a30,3"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dname", ["u8", "u16"])
def test_filter2d_int_random_kernel(lumen, dname, border, kname):
    """Dense non-dyadic kernels on integer images: correctly rounded float64, ties aside."""
    dtype = DTYPES[dname]
    kh, kw, anchor = KERNELS[kname]
    rng = rng_for("filter2d-int", dname, border, kname)
    src = make_image(rng, (H, W), dtype)
    k = rng.uniform(-0.3, 1.0, (kh, kw))
    k = (k / k.sum()).astype(np.float32)
    value = 0.0 if border == "constant" else None
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value)
    exact = ref_correlate(src, k, anchor, border, 0.0)
    tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src, np.abs(k).sum()),
                         f"filter {dname} {border} {kname} random kernel")


# ---- constant border with a non-zero value, and wrap: copyMakeBorder + float64 correlation ---

VALUES = {"f32": [0.75, -2.5], "u8": [200.0], "u16": [40000.0]}


@pytest.mark.parametrize("kname", ["3x3", "4x4-even", "w4h3-a3,2", "w50h41-a30,3"])
@pytest.mark.parametrize("dname,value", [(d, v) for d in VALUES for v in VALUES[d]])
def test_filter2d_constant_value(lumen, dname, value, kname):
    dtype = DTYPES[dname]
    kh, kw, anchor = KERNELS[kname]
    rng = rng_for("filter2d-value", dname, value, kname)
    src = make_image(rng, (H, W), dtype)
    k = kernel_for(rng, kh, kw, dtype)
    got = lumen.filter(src, k, anchor=anchor, border="constant", value=value)
    exact = ref_correlate(src, k, anchor, "constant", value)
    what = f"filter {dname} constant value={value} {kname}"
    if dtype == np.float32:
        tol.assert_f32_close(got, exact, tol.f32_atol(src, np.abs(k).sum(), [value]), what)
    else:
        tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src, np.abs(k).sum()), what)


@pytest.mark.parametrize("kname", list(KERNELS))
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_filter2d_wrap(lumen, dname, channels, kname):
    """cv2 filters reject BORDER_WRAP: copyMakeBorder(BORDER_WRAP) + float64, scipy 'grid-wrap'."""
    dtype = DTYPES[dname]
    kh, kw, anchor = KERNELS[kname]
    rng = rng_for("filter2d-wrap", dname, channels, kname)
    src = make_image(rng, image_shape(channels), dtype)
    k = kernel_for(rng, kh, kw, dtype)
    got = lumen.filter(src, k, anchor=anchor, border="wrap")
    exact = ref_correlate(src, k, anchor, "wrap")
    what = f"filter {dname} c{channels} wrap {kname}"
    if dtype == np.float32:
        atol = tol.f32_atol(src, np.abs(k).sum())
        tol.assert_f32_close(got, exact, atol, what + " vs float64 ref")
        ax, ay = (kw // 2, kh // 2) if anchor is None else anchor
        peer = per_channel(ndi.correlate, src.astype(np.float64), k.astype(np.float64),
                           mode="grid-wrap", origin=(ay - kh // 2, ax - kw // 2))
        tol.assert_f32_close(got, peer, atol, what + " vs scipy grid-wrap")
    else:
        # dyadic kernel: exact, so the float64 result rounds to one answer
        tol.assert_int_exact(got, exact, dtype, tol.EXACT, what)


# ---- tiny images (1 pixel, one row, one column) ----------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (2, 2), (3, 2)])
@pytest.mark.parametrize("border", BORDERS)
def test_filter2d_tiny_images(lumen, shape, border):
    rng = rng_for("tiny", shape, border)
    src = make_image(rng, shape, np.float32)
    k = rng.uniform(-1, 1, (5, 6)).astype(np.float32)
    anchor = (4, 1)
    value = 0.5 if border == "constant" else None
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value)
    atol = tol.f32_atol(src, np.abs(k).sum(), [0.5])
    exact = ref_correlate(src, k, anchor, border, 0.5)
    tol.assert_f32_close(got, exact, atol, f"filter tiny {shape} {border} vs float64 ref")
    if border in CV2_BORDER and border != "constant":
        peer = cv2.filter2D(src, -1, k, anchor=anchor, borderType=CV2_BORDER[border])
        tol.assert_f32_close(got, peer, atol, f"filter tiny {shape} {border} vs cv2")


# ---- filter2d vs scipy.ndimage.correlate / convolve ------------------------------------------

# (image shape, kh, kw, anchor or None). Even kernels appear with every anchor: scipy's origin
# is anchor - k//2 for both correlate and convolve (scipy's convolve moves the origin of an
# even kernel by one when it flips it, which is exactly lumen's mirrored anchor).
SCIPY_CASES = (
    [("odd3x3", (H, W), 3, 3, None), ("w5h2", (H, W), 2, 5, None),
     ("4x4-default", (H, W), 4, 4, None),
     ("w50h41-a30,3", (H, W), 41, 50, (30, 3)),
     ("tiny-w9h13-a8,0", (5, 4), 13, 9, (8, 0))]
    + [(f"w4h2-a{ax},{ay}", (H, W), 2, 4, (ax, ay)) for ax in range(4) for ay in range(2)]
)


def scipy_reflect_bug(shape, kh, kw, anchor, convolve):
    """scipy 1.10's n-D correlate maps offsets -2m*n (m >= 2) past the low edge to cval in
    'reflect' mode (NI_InitFilterOffsets); that needs an effective anchor >= 4n."""
    ax, ay = (kw // 2, kh // 2) if anchor is None else anchor
    if convolve:
        ax, ay = kw - 1 - ax, kh - 1 - ay
    return ax >= 4 * shape[1] or ay >= 4 * shape[0]


@pytest.mark.parametrize("case", SCIPY_CASES, ids=[c[0] for c in SCIPY_CASES])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("op", ["correlate", "convolve"])
def test_filter2d_vs_scipy(lumen, op, border, case):
    name, shape, kh, kw, anchor = case
    convolve = op == "convolve"
    rng = rng_for("scipy", op, border, name)
    src = make_image(rng, shape, np.float32, -1.0, 1.0)
    k = rng.uniform(-1, 1, (kh, kw)).astype(np.float32)
    value = -0.625 if border == "constant" else None
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value, convolve=convolve)
    ax, ay = (kw // 2, kh // 2) if anchor is None else anchor
    origin = (ay - kh // 2, ax - kw // 2)
    fn = ndi.convolve if convolve else ndi.correlate
    peer = fn(src.astype(np.float64), k.astype(np.float64), mode=SCIPY_MODE[border],
              cval=-0.625, origin=origin)
    ref = (ref_convolve if convolve else ref_correlate)(src, k, anchor, border, -0.625)
    atol = tol.f32_atol(src, np.abs(k).sum(), [-0.625])
    what = f"filter --{op if convolve else 'correlate'} {border} {name}"
    if border == "reflect" and scipy_reflect_bug(shape, kh, kw, anchor, convolve):
        # scipy is wrong here (test_peer_facts.py pins the bug): judge by the float64 ref.
        tol.assert_f32_close(got, ref, atol, what + " vs float64 ref (scipy reflect bug case)")
        assert np.abs(peer - ref).max() > 1e-3, "scipy reflect bug did not show: re-check docs"
        return
    tol.assert_f32_close(got, peer, atol, what + " vs scipy")
    tol.assert_f32_close(got, ref, atol, what + " vs float64 ref")


# ---- execution paths must not change answers -------------------------------------------------


def _rank1(rng, n):
    col = rng.uniform(-1, 1, n)
    row = rng.uniform(-1, 1, n)
    col[0] = 0.0      # zero taps on purpose
    return np.outer(col, row).astype(np.float32)


PATH_FLAGS = [{}, {"method": "direct"}, {"threads": 1}, {"threads": 2}, {"no_simd": True},
              {"no_simd": True, "method": "direct"}]
PATH_CASES = ([(kind, f) for kind in ("dense7", "rank1-7", "dense15") for f in PATH_FLAGS]
              + [("rank1-7", {"method": "separable"}),
                 ("rank1-7", {"method": "separable", "no_simd": True})])


@pytest.mark.parametrize("kind,flags", PATH_CASES, ids=[
    k + ":" + (",".join(f"{a}={b}" for a, b in f.items()) or "auto") for k, f in PATH_CASES])
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_filter2d_paths_vs_cv2(lumen, dname, kind, flags):
    """--method, --threads and --no-simd (the scalar oracle) must not change answers."""
    dtype = DTYPES[dname]
    rng = rng_for("paths", dname, kind)
    src = make_image(rng, (64, 71, 3) if dname == "u8" else (64, 71), dtype)
    if kind == "rank1-7":
        k = _rank1(rng, 7)
    else:
        n = 15 if kind == "dense15" else 7
        k = kernel_for(rng, n, n, dtype)
    got = lumen.filter(src, k, border="reflect101", **flags)
    peer = cv2.filter2D(src, -1, k, borderType=cv2.BORDER_REFLECT_101)
    what = f"filter {dname} {kind} {flags}"
    ref = lambda: ref_correlate(src, k, None, "reflect101")  # noqa: E731
    if dtype == np.float32:
        compare_f32(got, peer, ref, tol.f32_atol(src, np.abs(k).sum()), what)
    elif kind == "rank1-7":
        # not dyadic: correct rounding of the exact result is the criterion
        compare_int(got, peer, ref(), dtype, tol.int_tie_window(src, np.abs(k).sum()), what)
    else:
        compare_int(got, peer, ref(), dtype, tol.EXACT, what)


# ---- Gaussian blur vs cv2.GaussianBlur -------------------------------------------------------

GAUSS_CASES = {
    "s0.8": dict(sigma=0.8),
    "s1": dict(sigma=1.0),
    "s2.5": dict(sigma=2.5),
    "s3": dict(sigma=3.0),
    "s1-sy2.5": dict(sigma=1.0, sigma_y=2.5),
    "s1-k5,3": dict(sigma=1.0, ksize=(5, 3)),
    "s2.5-k7": dict(sigma=2.5, ksize=7),
    "k5": dict(ksize=5),             # sigma from ksize: OpenCV's fixed 5-tap table
    "k7,3": dict(ksize=(7, 3)),
    "k9": dict(ksize=9),             # OpenCV 4.6 has a fixed 9-tap table too
    "k11": dict(ksize=11),           # sigma = 0.3*((11-1)/2-1)+0.8 = 2.0
    "k5,7-sy2.5": dict(ksize=(5, 7), sigma_y=2.5),
    "s3-k41": dict(sigma=3.0, ksize=41),  # larger than the 37x29 image
}


def cv2_gaussian(src, border, sigma=None, sigma_y=None, ksize=None):
    if ksize is None:
        ks = (0, 0)
    elif isinstance(ksize, tuple):
        ks = ksize
    else:
        ks = (ksize, ksize)
    return cv2.GaussianBlur(src, ks, float(sigma or 0.0), sigmaY=float(sigma_y or 0.0),
                            borderType=CV2_BORDER[border])


@pytest.mark.parametrize("case", list(GAUSS_CASES))
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_gaussian_vs_cv2(lumen, dname, border, case):
    dtype = DTYPES[dname]
    p = GAUSS_CASES[case]
    rng = rng_for("gauss", dname, border, case)
    channels = 3 if case in ("s1", "k5") else 1
    src = make_image(rng, image_shape(channels), dtype)
    value = 0.0 if border == "constant" else None
    got = lumen.blur(src, border=border, value=value, **p)
    peer = cv2_gaussian(src, border, **p)
    what = f"blur {dname} {border} {case}"

    def ref():
        return ref_gaussian(src, dtype, border=border, **p)

    if dtype == np.float32:
        compare_f32(got, peer, ref, tol.f32_atol(src), what)
    else:
        tol.assert_int_exact(got, ref(), dtype, tol.int_tie_window(src), what + " vs exact")
        tol.assert_int_close_to_cv2_gaussian(got, peer, what + " vs cv2 (fixed point)")


@pytest.mark.parametrize("case", ["s1", "s3", "k5"])
@pytest.mark.parametrize("dname", ["u8", "u16"])
def test_gaussian_int_large_image(lumen, dname, case):
    """200x256: enough pixels for the fraction that OpenCV's fixed-point path rounds apart."""
    dtype = DTYPES[dname]
    p = GAUSS_CASES[case]
    src = make_image(rng_for("gauss-large", dname, case), (200, 256), dtype)
    got = lumen.blur(src, border="reflect101", **p)
    what = f"blur {dname} 256x200 reflect101 {case}"
    exact = ref_gaussian(src, dtype, border="reflect101", **p)
    tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src), what + " vs exact")
    tol.assert_int_close_to_cv2_gaussian(got, cv2_gaussian(src, "reflect101", **p),
                                         what + " vs cv2")


@pytest.mark.parametrize("case", ["s1", "s2.5-k7", "k5", "s1-k5,3", "s3-k41"])
@pytest.mark.parametrize("border,value", [("wrap", None), ("constant", 0.375)])
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_gaussian_wrap_and_value(lumen, dname, border, value, case):
    dtype = DTYPES[dname]
    p = GAUSS_CASES[case]
    if value is not None and dtype == np.uint8:
        value = 97.0
    src = make_image(rng_for("gauss-wv", dname, border, case), (H, W), dtype)
    got = lumen.blur(src, border=border, value=value, **p)
    exact = ref_gaussian(src, dtype, border=border, value=value or 0.0, **p)
    what = f"blur {dname} {border} value={value} {case} vs float64 ref"
    if dtype == np.float32:
        tol.assert_f32_close(got, exact, tol.f32_atol(src, 1.0, [value or 0.0]), what)
    else:
        tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src), what)


def test_gaussian_params_resolution():
    """Guards the reference itself: gaussian_params derives what cv2 derives."""
    assert gaussian_params(np.float32, sigma=1.0)[:2] == (9, 9)
    assert gaussian_params(np.uint8, sigma=1.0)[:2] == (7, 7)
    assert gaussian_params(np.uint16, sigma=2.5)[:2] == (21, 21)
    assert gaussian_params(np.float32, sigma=1.0, sigma_y=2.5)[:2] == (9, 21)
    assert gaussian_params(np.float32, ksize=(5, 7), sigma_y=2.5) == (5, 7, 0.0, 2.5)


# ---- box filter vs cv2.blur / cv2.boxFilter --------------------------------------------------

BOX_KSIZES = [3, 4, (2, 3), (5, 2), (1, 6), 16, (50, 40)]  # (kw, kh); (50, 40) > the image


def _kwh(ksize):
    return (ksize, ksize) if isinstance(ksize, int) else ksize


@pytest.mark.parametrize("ksize", BOX_KSIZES, ids=str)
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_box_mean_vs_cv2_blur(lumen, dname, border, ksize):
    dtype = DTYPES[dname]
    kw, kh = _kwh(ksize)
    rng = rng_for("box", dname, border, ksize)
    src = make_image(rng, image_shape(3 if dname == "u8" else 1), dtype)
    value = 0.0 if border == "constant" else None
    got = lumen.box(src, (kw, kh), border=border, value=value)
    peer = cv2.blur(src, (kw, kh), borderType=CV2_BORDER[border])
    what = f"box {dname} {border} {kw}x{kh}"

    def ref():
        return ref_separable(src, np.ones(kw), np.ones(kh), border) / (kw * kh)

    if dtype == np.float32:
        compare_f32(got, peer, ref, tol.f32_atol(src), what)
        return
    # cv2.blur is not always correctly rounded on integers (tolerances.py)
    compare_int(got, peer, ref(), dtype, tol.int_tie_window(src), what)


@pytest.mark.parametrize("ksize", BOX_KSIZES, ids=str)
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_box_sum_vs_cv2_boxfilter(lumen, dname, border, ksize):
    """--no-normalize: f32 vs boxFilter(ddepth=CV_32F); u8/u16 vs boxFilter(ddepth=-1), which
    saturates the integer sums exactly as lumen's saturate_cast does."""
    dtype = DTYPES[dname]
    kw, kh = _kwh(ksize)
    rng = rng_for("boxsum", dname, border, ksize)
    if dtype == np.float32:
        src = make_image(rng, (H, W), dtype)
    else:
        # small values so that most sums fit and some saturate
        hi = max(1, 2 * int(np.iinfo(dtype).max) // (kw * kh))
        src = make_image(rng, (H, W), dtype, 0, hi)
    value = 0.0 if border == "constant" else None
    got = lumen.box(src, (kw, kh), normalize=False, border=border, value=value)
    ddepth = cv2.CV_32F if dtype == np.float32 else -1
    peer = cv2.boxFilter(src, ddepth, (kw, kh), normalize=False, borderType=CV2_BORDER[border])
    what = f"box --no-normalize {dname} {border} {kw}x{kh}"

    def ref():
        return ref_separable(src, np.ones(kw), np.ones(kh), border)

    if dtype == np.float32:
        compare_f32(got, peer, ref, tol.f32_atol(src, kw * kh), what)
    else:
        compare_int(got, peer, ref(), dtype, tol.EXACT, what)  # integer sums are exact


@pytest.mark.parametrize("ksize", [3, 4, (5, 2), (50, 40)], ids=str)
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("border,value", [("wrap", None), ("constant", 0.8125)])
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_box_wrap_and_value(lumen, dname, border, value, normalize, ksize):
    dtype = DTYPES[dname]
    kw, kh = _kwh(ksize)
    if value is not None and dtype == np.uint8:
        value = 13.0
    hi = None if normalize or dtype == np.float32 else max(1, 2 * 255 // (kw * kh))
    src = make_image(rng_for("box-wv", dname, border, normalize, ksize), (H, W), dtype, None, hi)
    got = lumen.box(src, (kw, kh), normalize=normalize, border=border, value=value)
    exact = ref_separable(src, np.ones(kw), np.ones(kh), border, value or 0.0)
    if normalize:
        exact /= kw * kh
    what = f"box {dname} {border} value={value} normalize={normalize} {kw}x{kh} vs float64 ref"
    if dtype == np.float32:
        atol = tol.f32_atol(src, 1.0 if normalize else kw * kh, [value or 0.0])
        tol.assert_f32_close(got, exact, atol, what)
    else:
        tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src), what)


# ---- `lumen kernel --kind gaussian` vs cv2.getGaussianKernel ---------------------------------


@pytest.mark.parametrize("n", [1, 3, 5, 7, 9, 11, 15])
def test_kernel_utility_gaussian_vs_cv2(lumen_bin, tmp_path, n):
    """The utility promises the outer product of getGaussianKernel(N, sigma from N)."""
    out = tmp_path / "g.npy"
    r = run_cli(lumen_bin, "kernel", out, "--kind", "gaussian", "--ksize", n)
    assert r.returncode == 0, r.stderr
    got = np.load(out)
    g = cv2.getGaussianKernel(n, 0, ktype=cv2.CV_32F).ravel()
    want = np.outer(g, g)
    assert got.shape == (n, n) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9,
                               err_msg=f"lumen kernel --kind gaussian --ksize {n}")
