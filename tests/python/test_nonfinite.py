"""NaN and Inf in f32 input: lumen follows IEEE arithmetic over the whole window, so every
output whose window covers a NaN is NaN, zero taps included (0 * NaN = NaN, 0 * Inf = NaN).

The peers do not: cv2.filter2D and scipy.ndimage.correlate skip zero kernel taps, cv2's DFT
path (kernels of 130 taps or more) spreads one NaN over the whole image, and cv2.blur's running
sums smear it along rows and columns (test_peer_facts.py pins each). So lumen is compared with
a float64 numpy reference here, which multiplies every tap.
"""

import numpy as np
import pytest

import tolerances as tol
from conftest import make_image, ref_correlate, ref_gaussian, ref_separable, rng_for

H, W = 29, 37


def poisoned(rng, what):
    src = make_image(rng, (H, W), np.float32)
    bad = np.nan if what == "nan" else np.inf
    src[10, 12] = bad
    src[0, 0] = bad          # at a corner: the border rules replicate it into the padding
    src[H - 1, 20] = -bad if what == "inf" else bad
    return src


LAPLACE = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)


def _sparse15(rng):
    k = np.zeros((15, 15), np.float32)
    k[7, 7] = 1.0
    k[0, 3] = -0.5
    k[14, 14] = 0.25
    return k


def _rank1_with_zeros(rng):
    return np.outer([0.0, 1.0, 2.0, 0.0], [1.0, 0.0, -1.0]).astype(np.float32)


KERNELS = {
    "laplace3x3": lambda rng: LAPLACE,
    "sparse15x15": _sparse15,
    "rank1-w3h4-zeros": _rank1_with_zeros,
    "w50h41": lambda rng: rng.uniform(-1, 1, (41, 50)).astype(np.float32),
}


@pytest.mark.parametrize("kname", list(KERNELS))
@pytest.mark.parametrize("border", ["reflect", "constant", "wrap", "replicate"])
@pytest.mark.parametrize("what", ["nan", "inf"])
def test_filter2d_nonfinite(lumen, what, border, kname):
    rng = rng_for("nonfinite", what, border, kname)
    src = poisoned(rng, what)
    k = KERNELS[kname](rng)
    value = 0.0 if border == "constant" else None
    got = lumen.filter(src, k, border=border, value=value)
    with np.errstate(invalid="ignore"):
        exact = ref_correlate(src, k, None, border, 0.0)
    assert np.isnan(exact).any()  # the case must exercise NaN (Inf * 0 gives NaN too)
    tol.assert_f32_close(got, exact, tol.f32_atol(src, np.abs(k).sum()),
                         f"filter {what} {border} {kname}")


@pytest.mark.parametrize("p", [dict(sigma=1.0), dict(ksize=5), dict(sigma=2.5, ksize=(7, 3))],
                         ids=str)
def test_gaussian_nan(lumen, p):
    src = poisoned(rng_for("nan-gauss", p), "nan")
    got = lumen.blur(src, border="reflect101", **p)
    exact = ref_gaussian(src, np.float32, border="reflect101", **p)
    tol.assert_f32_close(got, exact, tol.f32_atol(src), f"blur nan {p}")


@pytest.mark.parametrize("ksize", [(3, 3), (4, 2)], ids=str)
@pytest.mark.parametrize("normalize", [True, False])
def test_box_nan(lumen, ksize, normalize):
    """A NaN must stay inside its windows: running-sum box filters get this wrong."""
    kw, kh = ksize
    src = poisoned(rng_for("nan-box", ksize, normalize), "nan")
    got = lumen.box(src, ksize, normalize=normalize, border="replicate")
    exact = ref_separable(src, np.ones(kw), np.ones(kh), "replicate")
    if normalize:
        exact /= kw * kh
    tol.assert_f32_close(got, exact, tol.f32_atol(src, 1 if normalize else kw * kh),
                         f"box nan {ksize} normalize={normalize}")
