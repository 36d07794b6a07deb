"""Every tolerance the reference tests use, in one place, with the measurements behind it.

Rules (see docs/reference-tests.md for the reasoning and the full tables):

* f32 output: |lumen - peer| <= F32_REL * span * max(1, sum|k|), where span is max - min of
  the finite input values (and of the constant border value, when one is used). The test
  images are drawn from [0, 1) or [-1, 1), so the span is also the magnitude of the data; a
  tolerance relative to the span alone would be meaningless for data far from zero.
  NaN must appear at exactly the same pixels on both sides.

* u8/u16 output, exact reference: lumen must equal the float64 result rounded to nearest,
  ties to even, then saturated (OpenCV's saturate_cast / cvRound). The one allowance: when
  the exact value lies within INT_TIE_REL * sum|k| * max|x| of a .5 tie, f32 evaluation noise
  may legitimately pick the other neighbour, so either neighbour is accepted there (and only
  there). Kernels whose taps are multiples of 1/16 (with small sum|k|) make every f32 step
  exact, so for them lumen and cv2.filter2D must agree bit for bit.

* u8/u16 output against OpenCV's fixed-point paths (documented disagreements, OpenCV 4.6):
  - cv2.GaussianBlur on u8 and u16 quantises the kernel (ufixedpoint16 / ufixedpoint32) and
    rounds ties up; it differs from the exact result by up to 2 levels. Measured on the
    noise images the tests use (200x256, all four borders): see CV2_GAUSS_INT below.
  - cv2.blur on u8 (normalised box) divides with a fixed-point multiply: ties round up
    everywhere, and for window areas that are powers of two (2, 4, 8, 16 ...) it also rounds
    non-ties up (a 2x1 blur of a constant 100 image gives 101). lumen must equal cv2.blur at
    every pixel where cv2.blur is correctly rounded; elsewhere lumen must equal the exact
    result (checked against the float64 reference).
"""

import numpy as np

# ---- f32 -----------------------------------------------------------------------------------

#: f32 results must agree within this fraction of the data span (times sum|k| when > 1).
F32_REL = 1e-5


def data_span(src, *extra_values):
    """max - min over the finite values of src and any extra values (e.g. a border value)."""
    vals = np.asarray(src, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    lo = min([vals.min()] + [float(v) for v in extra_values]) if vals.size else 0.0
    hi = max([vals.max()] + [float(v) for v in extra_values]) if vals.size else 0.0
    span = hi - lo
    return span if span > 0 else max(abs(hi), 1.0)


def f32_atol(src, kernel_abs_sum=1.0, extra_values=()):
    """Absolute tolerance for an f32 result computed from src with a kernel of this sum|k|."""
    return F32_REL * data_span(src, *extra_values) * max(1.0, float(kernel_abs_sum))


def assert_f32_close(got, expected, atol, what=""):
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    nan_got, nan_exp = np.isnan(got), np.isnan(expected)
    if not np.array_equal(nan_got, nan_exp):
        extra = np.argwhere(nan_got & ~nan_exp)[:5].tolist()
        missing = np.argwhere(nan_exp & ~nan_got)[:5].tolist()
        raise AssertionError(
            f"{what}: NaN positions differ: {int((nan_got & ~nan_exp).sum())} unexpected NaN "
            f"(e.g. {extra}), {int((nan_exp & ~nan_got).sum())} missing NaN (e.g. {missing})")
    ok = ~nan_exp
    inf_exp = np.isinf(expected) & ok
    if not np.array_equal(got[inf_exp], expected[inf_exp]):
        raise AssertionError(f"{what}: infinities differ")
    fin = ok & ~inf_exp
    err = np.abs(got - expected)
    err[~fin] = 0.0
    worst = float(err.max()) if err.size else 0.0
    if worst > atol:
        idx = np.unravel_index(int(np.argmax(err)), err.shape)
        n_bad = int((err > atol).sum())
        raise AssertionError(
            f"{what}: max |diff| {worst:.3g} > atol {atol:.3g} at {tuple(int(i) for i in idx)} "
            f"(got {got[idx]!r}, expected {expected[idx]!r}); {n_bad}/{err.size} pixels outside")


# ---- integers: exact reference ----------------------------------------------------------------

#: Width of the window around a .5 tie, relative to sum|k| * max|x|, inside which either
#: neighbour is accepted (about 16 f32 ulps of the largest term).
INT_TIE_REL = 1e-6


def int_tie_window(src, kernel_abs_sum=1.0):
    xmax = float(np.max(np.abs(np.asarray(src, dtype=np.float64)))) if np.size(src) else 0.0
    return INT_TIE_REL * max(1.0, float(kernel_abs_sum)) * max(xmax, 1.0)


def round_saturate(x, dtype):
    """OpenCV's saturate_cast<dtype>(x): round to nearest, ties to even, then clamp."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(np.asarray(x, dtype=np.float64)), info.min, info.max).astype(dtype)


def int_exact_mask(got, exact, dtype, window):
    """True where got is an acceptable integer rendering of the float64 value `exact`."""
    info = np.iinfo(dtype)
    got = np.asarray(got).astype(np.int64)
    exact = np.asarray(exact, dtype=np.float64)
    want = round_saturate(exact, dtype).astype(np.int64)
    fl = np.floor(exact)
    near_tie = np.abs(exact - fl - 0.5) <= window
    lo = np.clip(fl, info.min, info.max).astype(np.int64)
    hi = np.clip(fl + 1, info.min, info.max).astype(np.int64)
    return (got == want) | (near_tie & ((got == lo) | (got == hi)))


def assert_int_exact(got, exact, dtype, window, what=""):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype} != {np.dtype(dtype)}"
    ok = int_exact_mask(got, exact, dtype, window)
    if not ok.all():
        bad = np.argwhere(~ok)
        idx = tuple(int(i) for i in bad[0])
        want = round_saturate(exact, dtype)
        raise AssertionError(
            f"{what}: {len(bad)}/{ok.size} pixels are not the correctly rounded exact value; "
            f"first at {idx}: got {int(got[idx])}, exact {float(exact[idx])!r} -> {int(want[idx])} "
            f"(tie window {window:.2g})")


def assert_int_equal(got, expected, what=""):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    if not np.array_equal(got, expected):
        d = got.astype(np.int64) - expected.astype(np.int64)
        bad = np.argwhere(d != 0)
        idx = tuple(int(i) for i in bad[0])
        raise AssertionError(
            f"{what}: {len(bad)}/{d.size} pixels differ (max |diff| {int(np.abs(d).max())}); "
            f"first at {idx}: got {int(got[idx])}, expected {int(expected[idx])}")


# ---- integers: OpenCV's fixed-point GaussianBlur ----------------------------------------------

#: lumen (exactly rounded) vs cv2.GaussianBlur on integer images, OpenCV 4.6.0. Measured over
#: the test matrix (uniform noise images, every sigma/ksize case of test_gaussian_vs_cv2, all
#: four OpenCV borders): max |diff| 2 for both dtypes; the fraction of pixels that differ
#: reached 0.25 (u8) and 0.33 (u16). Where the kernel is one of OpenCV's exact small
#: tables (ksize <= 9 with sigma derived) the only differences are ties, which OpenCV rounds up
#: (about 3% of pixels at ksize 3, 0.2% at 5, 0.02% at 7).
CV2_GAUSS_INT = {
    np.dtype(np.uint8): {"max_abs": 2, "max_frac": 0.30, "max_frac_2": 0.001},
    np.dtype(np.uint16): {"max_abs": 2, "max_frac": 0.40, "max_frac_2": 0.005},
}


def assert_int_close_to_cv2_gaussian(got, cv2_out, what=""):
    got, cv2_out = np.asarray(got), np.asarray(cv2_out)
    lim = CV2_GAUSS_INT[got.dtype]
    d = np.abs(got.astype(np.int64) - cv2_out.astype(np.int64))
    frac = float((d > 0).mean())
    frac2 = float((d > 1).mean())
    assert d.max() <= lim["max_abs"], f"{what}: max |lumen - cv2| {d.max()} > {lim['max_abs']}"
    assert frac <= lim["max_frac"], f"{what}: {frac:.4f} of pixels differ from cv2 (> {lim['max_frac']})"
    assert frac2 <= lim["max_frac_2"], f"{what}: {frac2:.5f} differ by 2 (> {lim['max_frac_2']})"
    return frac
