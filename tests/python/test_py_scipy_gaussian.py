"""gaussian_blur in SciPy's and OpenCV's spellings (docs/python.md, "Gaussian"): sigma=(sx, sy),
mode= with scipy.ndimage's names, cval=, truncate= (radius int(truncate*sigma + 0.5)); the
answer is scipy.ndimage.gaussian_filter's within the f32 rule, on float32 and float64 images,
in every mode. Combinations that do not map are refused (issue 12, item 3)."""

import cv2
import numpy as np
import pytest
from scipy import ndimage

import lumen
from lumen import _lumen
from tolerances import assert_f32_close, f32_atol, f64_atol

H, W = 31, 23
RNG = np.random.default_rng(12)
IMG32 = RNG.random((H, W), dtype=np.float32)
IMG64 = RNG.random((H, W))

SCIPY_MODES = ["reflect", "mirror", "nearest", "constant", "wrap", "grid-wrap", "grid-mirror",
               "grid-constant"]


def both_bindings():
    return [lumen.gaussian_blur, lambda *a, **kw: _lumen._op_call("gaussian_blur", *a, **kw)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mode", SCIPY_MODES)
@pytest.mark.parametrize("sigma,truncate", [(1.0, None), (0.6, None), (2.3, 4.0), (1.7, 2.0),
                                            ((1.2, 3.1), 3.0), ((0.8, 0.0), None)], ids=str)
def test_against_scipy_gaussian_filter(dtype, mode, sigma, truncate):
    img = IMG32 if dtype == np.float32 else IMG64
    sx, sy = sigma if isinstance(sigma, tuple) else (sigma, sigma)
    kw = {} if truncate is None else {"truncate": truncate}
    # scipy's sigma sequence is per axis, rows first: (sy, sx); lumen's pair is (sx, sy).
    want = ndimage.gaussian_filter(img, (sy, sx), mode=mode, cval=0.25, **kw)
    for fn in both_bindings():
        got = fn(img, sigma, mode=mode, cval=0.25, **kw)
        assert got.dtype == img.dtype and got.shape == img.shape
        atol = (f32_atol if dtype == np.float32 else f64_atol)(img, 1.0, (0.25,))
        assert_f32_close(got, want, atol, f"sigma={sigma} mode={mode} truncate={truncate}")


def test_channels_and_batches_match_scipy_per_channel():
    img = RNG.random((2, H, W, 3), dtype=np.float32)
    want = ndimage.gaussian_filter(img, (0, 2.0, 1.5, 0), mode="nearest", truncate=3.5)
    got = lumen.gaussian_blur(img, (1.5, 2.0), mode="nearest", truncate=3.5)
    assert_f32_close(got, want, f32_atol(img), "nhwc nearest")


def test_size_rules():
    """truncate=4.0 is scipy's default and comes with mode=; without mode= the size is
    OpenCV's. sigma 0.6 is where the two rules differ (5 vs 7 taps)."""
    impulse = np.zeros((1, 21), np.float32)
    impulse[0, 10] = 1
    taps = lambda r: int((r[0] != 0).sum())
    assert lumen.gaussian_ksize(0.6) == 7
    assert taps(lumen.gaussian_blur(impulse, 0.6, border="constant")) == 7
    assert taps(lumen.gaussian_blur(impulse, 0.6, mode="constant")) == 5
    assert taps(lumen.gaussian_blur(impulse, 0.6, truncate=4.0, border="constant")) == 5
    assert taps(lumen.gaussian_blur(impulse, 0.6, mode="constant", ksize=(7, 1))) == 7
    assert taps(lumen.gaussian_blur(impulse, 2.0, truncate=1.0, border="constant")) == 5


def test_sigma_pair_is_x_then_y():
    img = RNG.random((H, W, 3), dtype=np.float32)
    for fn in both_bindings():
        got = fn(img, (1.0, 2.5))
        np.testing.assert_array_equal(got, lumen.gaussian_blur(img, 1.0, sigma_y=2.5))
        want = cv2.GaussianBlur(img, (0, 0), sigmaX=1.0, sigmaY=2.5,
                                borderType=cv2.BORDER_REFLECT)
        assert_f32_close(got, want, f32_atol(img), "sigma pair vs cv2")
        np.testing.assert_array_equal(fn(img, [1.0, 2.5]), got)


@pytest.mark.parametrize("kw,exc,name", [
    (dict(sigma=(1.0, 2.0), sigma_y=2.0), ValueError, "sigma_y"),
    (dict(sigma=(1.0, 2.0, 3.0)), ValueError, "sigma"),
    (dict(sigma=(1.0,)), ValueError, "sigma"),
    (dict(sigma=("a", 1.0)), TypeError, "sigma"),
    (dict(mode="reflect", border="reflect"), ValueError, "mode"),
    (dict(mode="constant", border_value=1.0), ValueError, "border_value"),
    (dict(mode="bogus"), ValueError, "mode"),
    (dict(mode=("reflect", "nearest")), TypeError, "mode"),
    (dict(mode=2), TypeError, "mode"),
    (dict(cval=1.0), ValueError, "cval"),
    (dict(border="constant", cval=1.0), ValueError, "cval"),
    (dict(mode="constant", cval=float("nan")), ValueError, "cval"),
    (dict(truncate=4.0, ksize=9), ValueError, "truncate"),
    (dict(truncate=0.0), ValueError, "truncate"),
    (dict(truncate=-1.0), ValueError, "truncate"),
    (dict(truncate=float("inf")), ValueError, "truncate"),
    (dict(truncate="4"), TypeError, "truncate"),
    (dict(sigma=1e5, truncate=4.0), ValueError, "truncate"),
    (dict(sigma=-1.0, mode="nearest"), ValueError, "sigma"),
], ids=repr)
def test_refused_combinations(kw, exc, name):
    kw = dict(kw)
    sigma = kw.pop("sigma", 1.0)
    for fn in both_bindings():
        with pytest.raises(exc) as e:
            fn(IMG32, sigma, **kw)
        assert str(e.value).startswith(name), str(e.value)
        if exc is ValueError:
            assert isinstance(e.value, lumen.ArgumentError)
