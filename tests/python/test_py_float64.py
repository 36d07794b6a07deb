"""float64 images (docs/python.md, "float64"): `img / 255.0` is taken as OpenCV takes it. lumen
filters a float32 copy and widens the result, so the answer is the float32 path's exactly, and
against OpenCV's float64 computation it is within tolerances.F64_VIA_F32_REL (issue 12, item 3).
"""

import cv2
import numpy as np
import pytest
import torch

import lumen
from conftest import CV2_BORDER
from lumen import _lumen
from tolerances import assert_f32_close, f64_atol

H, W = 29, 37
RNG = np.random.default_rng(64)
U8 = RNG.integers(0, 256, (H, W, 3)).astype(np.uint8)
IMG = U8 / 255.0                                  # the case: float64 in [0, 1]
K = RNG.standard_normal((5, 3))
KX, KY = RNG.standard_normal(7), RNG.standard_normal(3)

#: (lumen call, cv2 call on the same float64 data, sum|k|)
CASES = {
    "filter2d": (lambda s, b, **kw: lumen.filter2d(s, K, border=b, **kw),
                 lambda s, b: cv2.filter2D(s, -1, K, borderType=b), np.abs(K).sum()),
    "sep_filter2d": (lambda s, b, **kw: lumen.sep_filter2d(s, KX, KY, border=b, **kw),
                     lambda s, b: cv2.sepFilter2D(s, -1, KX, KY, borderType=b),
                     np.abs(KX).sum() * np.abs(KY).sum()),
    "gaussian_blur": (lambda s, b, **kw: lumen.gaussian_blur(s, 2.5, border=b, **kw),
                      lambda s, b: cv2.GaussianBlur(s, (0, 0), 2.5, borderType=b), 1.0),
    "box_blur": (lambda s, b, **kw: lumen.box_blur(s, (5, 3), border=b, **kw),
                 lambda s, b: cv2.blur(s, (5, 3), borderType=b), 1.0),
}


@pytest.mark.parametrize("border", ["reflect", "reflect101", "replicate", "constant"])
@pytest.mark.parametrize("op", list(CASES))
def test_f64_against_cv2(op, border):
    ours, theirs, ksum = CASES[op]
    got = ours(IMG, border)
    assert got.dtype == np.float64 and got.shape == IMG.shape
    want = theirs(IMG, CV2_BORDER[border])
    assert want.dtype == np.float64
    assert_f32_close(got, want, f64_atol(IMG, ksum), f"{op} {border} f64")


@pytest.mark.parametrize("op", list(CASES))
def test_f64_is_the_f32_path_widened(op):
    """The stated precision, exactly: a float32 copy in, the float32 result out, widened."""
    ours = CASES[op][0]
    data = RNG.standard_normal((2, H, W, 3)) * 1e3
    got = ours(data, "reflect")
    want = ours(data.astype(np.float32), "reflect").astype(np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_f64_dtype_and_out():
    want32 = lumen.gaussian_blur(IMG.astype(np.float32), 1.5)
    r = lumen.gaussian_blur(IMG, 1.5, dtype="float32")
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, want32)
    r = lumen.gaussian_blur(IMG, 1.5, dtype=np.uint8)
    assert r.dtype == np.uint8
    # a float32 image asked for a float64 result
    r = lumen.gaussian_blur(IMG.astype(np.float32), 1.5, dtype=np.float64)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r, want32.astype(np.float64))
    # out= of float64, from float64 and from float32 input; returned as given
    for src in (IMG, IMG.astype(np.float32)):
        out = np.full(IMG.shape, np.nan)
        assert lumen.gaussian_blur(src, 1.5, out=out) is out
        np.testing.assert_array_equal(out, want32.astype(np.float64))
    # a strided float64 out= view, and in place
    big = np.zeros((2 * H, 2 * W, 3))
    lumen.gaussian_blur(IMG, 1.5, out=big[::2, ::2])
    np.testing.assert_array_equal(big[::2, ::2], want32)
    a = IMG.copy()
    assert lumen.gaussian_blur(a, 1.5, out=a) is a
    np.testing.assert_array_equal(a, want32)
    # float64 in, float32 out=
    out32 = np.zeros(IMG.shape, np.float32)
    lumen.gaussian_blur(IMG, 1.5, out=out32)
    np.testing.assert_array_equal(out32, want32)


def test_f64_out_errors():
    ro = np.zeros(IMG.shape)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        lumen.box_blur(IMG, 3, out=ro)
    with pytest.raises(lumen.ArgumentError, match="out: has a zero stride"):
        lumen.box_blur(IMG, 3, out=np.lib.stride_tricks.as_strided(np.zeros(1), IMG.shape,
                                                                   (0, 0, 0), writeable=True))
    with pytest.raises(lumen.ArgumentError, match="out: shape"):
        lumen.box_blur(IMG, 3, out=np.zeros((H, W + 1, 3)))
    with pytest.raises(lumen.ArgumentError, match="dtype: float32 differs from out's dtype float64"):
        lumen.box_blur(IMG, 3, out=np.zeros(IMG.shape), dtype="float32")


def test_f64_generic_binding_agrees():
    for op, args in (("box_blur", (3,)), ("gaussian_blur", (1.2,)), ("filter2d", (K,))):
        h = getattr(_lumen, op)(IMG, *args)
        g = _lumen._op_call(op, IMG, *args)
        assert g.dtype == np.float64 and g.tobytes() == h.tobytes()
        out = np.zeros(IMG.shape)
        assert _lumen._op_call(op, IMG, *args, out=out) is out
        np.testing.assert_array_equal(out, h)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_f64_nonfinite_and_huge_values():
    """NaN and Inf stay where float32 puts them; values past float32's range become Inf (and
    NumPy's cast says so with a RuntimeWarning)."""
    a = np.zeros((H, W))
    a[3, 4] = np.nan
    a[20, 30] = 1e300
    got = lumen.box_blur(a, 3)
    assert np.isnan(got[3, 4]) and np.isinf(got[20, 30]) and got[10, 10] == 0


def test_f64_layout_chw():
    chw = np.ascontiguousarray(IMG.transpose(2, 0, 1))
    got = lumen.gaussian_blur(chw, 1.5, layout="chw")
    assert got.dtype == np.float64 and got.shape == chw.shape
    np.testing.assert_array_equal(got.transpose(1, 2, 0), lumen.gaussian_blur(IMG, 1.5))


def test_torch_f64_still_refused():
    """DLPack float64 is not converted (documented): the message says what to do."""
    with pytest.raises(TypeError, match="src.*dtype"):
        lumen.gaussian_blur(torch.zeros(H, W, 3, dtype=torch.float64), 1.0)
