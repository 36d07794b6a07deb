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
    rounds ties up; it differs from the exact result by up to 2 levels, on up to a third of
    the pixels of a noise image. Measured numbers: CV2_GAUSS_INT below.
  - cv2.blur on u8 (normalised box) divides with a fixed-point multiply: exact .5 ties
    round up instead of to even, and for window areas that are powers of two it also
    rounds some non-ties up (2x2: 119.25 -> 120; 2x1 of a constant 100 image -> 101).
    Measured share of pixels where cv2.blur u8 is not correctly rounded: 3x3 0, 2x3 8.0%,
    5x2 5.7%, 1x6 8.9%, 4x4 9.5%, 16x16 0.7%, 50x40 0. On u16 it is exact except for very
    long sums (50x40: 0.37%, f32 sums past 2^24).
  - cv2.filter2D switches to a DFT for kernels of 130 taps or more (f32, u8; the u16 cases
    here, 225 and 2050 taps, take it too); exact .5 ties then round either way (about 40%
    of the ties in the 15x15 and 50x41 cases).
  In all three cases lumen must equal the exactly rounded value, and must equal cv2 at every
  pixel where cv2 is exactly rounded (test_reference.compare_int).
"""

import numpy as np

# ---- f32 -----------------------------------------------------------------------------------

#: f32 results must agree within this fraction of the data span (times sum|k| when > 1).
F32_REL = 1e-5


#: The fast (recursive) Gaussian's documented bound against the exact blur, as a fraction of
#: the data span (docs/gaussian-fast.md; measured worst 2.9e-4). Integer results may also be
#: one level off by rounding.
FAST_GAUSS_REL = 1e-3


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
    err = np.zeros(got.shape, np.float64)
    err[fin] = np.abs(got[fin] - expected[fin])
    worst = float(err.max()) if err.size else 0.0
    if worst > atol:
        idx = np.unravel_index(int(np.argmax(err)), err.shape)
        n_bad = int((err > atol).sum())
        raise AssertionError(
            f"{what}: max |diff| {worst:.3g} > atol {atol:.3g} at {tuple(int(i) for i in idx)} "
            f"(got {got[idx]!r}, expected {expected[idx]!r}); {n_bad}/{err.size} pixels outside")


# ---- float64 input (docs/python.md, "float64") -------------------------------------------------

#: lumen filters a float64 image as float32 (one rounding of each value, relative error <= 2^-24)
#: and widens the float32 result. Against a peer that computes in float64 (cv2, scipy) the
#: difference is the f32 rule's, with the span widened to max(span, max|x|) because the input
#: rounding is relative to each value's magnitude, not to the span:
#: |lumen - peer| <= F64_VIA_F32_REL * max(span, max|x|) * max(1, sum|k|).
#: Measured on test_py_float64.py's cases (u8 / 255 data, Gaussian, box, random 5x3 and 7x3
#: kernels, four borders): worst 1.8e-7 of that scale; the bound is F32_REL's.
F64_VIA_F32_REL = F32_REL


def f64_atol(src, kernel_abs_sum=1.0, extra_values=()):
    """Absolute tolerance for a float64 result lumen computed in float32 from src."""
    vals = np.asarray(src, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    mag = float(np.abs(vals).max()) if vals.size else 0.0
    scale = max(data_span(src, *extra_values), mag)
    return F64_VIA_F32_REL * scale * max(1.0, float(kernel_abs_sum))


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


#: Pass as `window` when every step is exact (dyadic kernels, integer sums): no allowance at
#: all, so exact .5 ties must round to even as saturate_cast does.
EXACT = None


def near_tie(exact, window):
    """True where the exact value is within `window` of a .5 tie (never for EXACT)."""
    exact = np.asarray(exact, dtype=np.float64)
    if window is None:
        return np.zeros(exact.shape, bool)
    return np.abs(exact - np.floor(exact) - 0.5) <= window


def int_exact_mask(got, exact, dtype, window):
    """True where got is an acceptable integer rendering of the float64 value `exact`."""
    info = np.iinfo(dtype)
    got = np.asarray(got).astype(np.int64)
    exact = np.asarray(exact, dtype=np.float64)
    want = round_saturate(exact, dtype).astype(np.int64)
    fl = np.floor(exact)
    lo = np.clip(fl, info.min, info.max).astype(np.int64)
    hi = np.clip(fl + 1, info.min, info.max).astype(np.int64)
    return (got == want) | (near_tie(exact, window) & ((got == lo) | (got == hi)))


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
            f"(tie window {'none' if window is None else format(window, '.2g')})")


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

#: lumen (exactly rounded) vs cv2.GaussianBlur on integer images, OpenCV 4.6.0, measured over
#: test_gaussian_vs_cv2 (37x29 uniform noise, every case but k9, all four OpenCV borders) and
#: test_gaussian_int_large_image (256x200):
#:   u8:  pixels that differ: up to 24.8% (sigma 3), 6-7% at sigma 1, 0.2-0.4% for the exact
#:        small tables (k5, k7,3: ties only, OpenCV rounds them up); |diff| = 2 on 0.004% of
#:        pixels (256x200, sigma 3), never more than 2.
#:   u16: up to 34.2% (sigma 1); |diff| = 2 on up to 0.40% of pixels; never more than 2.
#: Smooth (photographic) images differ far less (0.1-7% at u8) than noise.
CV2_GAUSS_INT = {
    np.dtype(np.uint8): {"max_abs": 2, "max_frac": 0.30, "max_frac_2": 0.001},
    np.dtype(np.uint16): {"max_abs": 2, "max_frac": 0.40, "max_frac_2": 0.01},
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


# ---- the Python package (test_py_*.py) ---------------------------------------------------------

#: Peak of the memory tracemalloc sees (NumPy's allocations) during one op on a 2000x2000 f32
#: image, in units of the output's size: the output itself and nothing image-sized besides
#: (a hidden copy of the input or a second output would make it 2). With out= given: nothing.
PY_PEAK_OUTPUTS = 1.25
PY_PEAK_OUTPUTS_WITH_OUT = 0.25

#: Allowed growth of the resident set (/proc/self/statm) over 10 000 calls of one kind after a
#: warm-up: malloc arenas and caches move a little; a leak of 256 bytes per call would not fit.
PY_RSS_GROWTH_BYTES = 2 * 2**20

# ---- neural-network convolution (test_py_conv2d.py) -------------------------------------------

#: lumen.conv2d / conv_transpose2d against torch in float64 on the same float32 data:
#: max |lumen - ref64| <= CONV_REL_F64 * max |ref64| (relative to the output's magnitude, not
#: per element: outputs near 0 carry the absolute error of their large partial sums). Issue 6
#: asks 1e-6 for f32; the inputs are exact in both, so this is lumen's accumulation error only.
CONV_REL_F64 = 1e-6

#: The same measure against torch's own float32 result (oneDNN / its direct kernels), which
#: carries its own f32 accumulation error, hence looser: both sides err by up to ~1e-6.
CONV_REL_TORCH_F32 = 1e-5
#: Winograd F(4x4, 3x3)'s own bound, per output relative to sum|x*w| as CONV_REL_F64 (C:
#: WINO_F4_REL in tests/c/test_conv_winograd.c; measured up to 4.8e-6; docs/conv2d.md).
CONV_REL_F64_WINOGRAD_F4 = 1e-5

# ---- resize (test_resize.py, docs/resize.md) ---------------------------------------------------

#: f32 resize against a peer's float result (cv2.resize, PIL "F" mode, F.interpolate): within
#: this fraction of the data span. The weights are the same numbers; only the order of the
#: f32 (Pillow: double) sums and the peers' float vs double coefficient arithmetic differ.
RESIZE_F32_REL = 1e-5

#: u8/u16 resize against a peer's integer result: levels apart. The peers' own fixed point
#: differs from lumen's f32 sums: cv2's INTER_LINEAR/CUBIC/LANCZOS4 on u8 use 11-bit weights,
#: its 2x2 INTER_AREA rounds ties up; torch has no u8 linear/cubic/area in 1.13, so its float
#: result on the same data is rounded to nearest (ties to even) for the comparison. (Pillow's
#: 8-bit path is matched exactly: lumen runs its integer arithmetic; u16 against its "F" mode.)
RESIZE_INT_LEVELS = 1

#: lumen's fast path against its own scalar reference (double sums): f32 within this fraction
#: of the span; integers within one level (a sum at a .5 tie may round either way in f32).
RESIZE_SELF_F32_REL = 1e-5
RESIZE_SELF_INT_LEVELS = 1

# ---- f16 / bf16 storage (docs/semantics.md, "Half precision") ---------------------------------

#: A half result is the f32 result rounded once to nearest even: that store errs by at most half
#: a unit in the last place, 2^-11 of |value| for f16 (11 significant bits) and 2^-8 for bf16
#: (8 bits). Against the float64 result on the same (half) input values the bound is the f32
#: rule's plus this share of |exact| (plus, for f16, half its smallest subnormal, 2^-25, where
#: values underflow). Not slack: the store's own error, which test_py_half.py also pins down
#: exactly (the half result equals lumen's f32 result rounded by NumPy / torch).
HALF_STORE_REL = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 0.0}
HALF_STORE_ABS = {"float16": 2.0**-25, "bfloat16": 0.0, "float32": 0.0}


def half_atol(exact, dtype, f32_bound):
    """Per-element bound of a half (or f32) result against the float64 result `exact`."""
    exact = np.abs(np.asarray(exact, dtype=np.float64))
    return f32_bound + HALF_STORE_REL[dtype] * (exact + f32_bound) + HALF_STORE_ABS[dtype]
