"""`lumen blur --precision fast` (the recursive Gaussian) against OpenCV and the float64 reference.

The fast mode approximates the full Gaussian; its contract (docs/gaussian-fast.md) is the
exact blur with OpenCV's kernel of size round(8 sigma + 1) | 1 and the same border rule, within
tol.FAST_GAUSS_REL of the data span (plus one level for u8/u16 rounding).
"""

import cv2
import numpy as np
import pytest

import tolerances as tol
from conftest import CV2_BORDER, CV2_BORDERS, make_image, ref_gaussian, rng_for

SHAPE = (53, 71)


def blur_fast(lumen, src, sigma, border, value=None, sigma_y=None):
    extra = ["--sigma", repr(float(sigma)), "--precision", "fast"]
    if sigma_y is not None:
        extra += ["--sigma-y", repr(float(sigma_y))]
    return lumen._op("blur", src, lumen._common(extra, border=border, value=value))


def full_ksize(sigma):
    return int(round(8 * sigma + 1)) | 1


def assert_within(got, exact, src, what, extra_values=()):
    span = tol.data_span(src, *extra_values)
    slack = 1.0 if np.issubdtype(got.dtype, np.integer) else 0.0
    err = np.abs(got.astype(np.float64) - exact)
    limit = tol.FAST_GAUSS_REL * span + slack
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= limit, (f"{what}: max error {err.max():.3g} at {worst} exceeds "
                                f"{limit:.3g} ({tol.FAST_GAUSS_REL} x span {span:.3g} + {slack})")


@pytest.mark.parametrize("sigma", [0.8, 2.5, 6, 17])
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("channels", [1, 3])
def test_fast_vs_cv2_f32(lumen, channels, border, sigma):
    """Against cv2.GaussianBlur with the full kernel, every border cv2 has."""
    shape = SHAPE if channels == 1 else SHAPE + (channels,)
    src = make_image(rng_for("fast", channels, border, sigma), shape, np.float32)
    got = blur_fast(lumen, src, sigma, border, 0.0 if border == "constant" else None)
    k = full_ksize(sigma)
    peer = cv2.GaussianBlur(src, (k, k), sigma, borderType=CV2_BORDER[border])
    assert got.shape == src.shape and got.dtype == np.float32
    assert_within(got, peer.astype(np.float64), src, f"fast f32 c{channels} {border} sigma={sigma}")


@pytest.mark.parametrize("border,value", [("wrap", None), ("constant", 0.75)])
@pytest.mark.parametrize("sigma", [3, 12])
def test_fast_wrap_and_value_vs_float64(lumen, border, value, sigma):
    src = make_image(rng_for("fast-wv", border, sigma), SHAPE, np.float32)
    got = blur_fast(lumen, src, sigma, border, value)
    exact = ref_gaussian(src, np.float32, sigma=sigma, ksize=full_ksize(sigma), border=border,
                         value=value or 0.0)
    assert_within(got, exact, src, f"fast f32 {border} value={value} sigma={sigma}",
                  [value or 0.0])


@pytest.mark.parametrize("dname", ["u8", "u16"])
@pytest.mark.parametrize("border", ["reflect", "replicate"])
def test_fast_integers_vs_float64(lumen, dname, border):
    dtype = np.uint8 if dname == "u8" else np.uint16
    src = make_image(rng_for("fast-int", dname, border), SHAPE + (3,), dtype)
    got = blur_fast(lumen, src, 4, border, sigma_y=9)
    assert got.dtype == dtype and got.shape == src.shape
    kx, ky = full_ksize(4), full_ksize(9)
    exact = ref_gaussian(src.astype(np.float32), np.float32, sigma=4, sigma_y=9, ksize=(kx, ky),
                         border=border)
    assert_within(got, exact, src, f"fast {dname} {border} sigma=4,9")


def test_fast_step_edge_large_sigma(lumen):
    """A step edge is the recursive filter's worst case; sigma larger than the image."""
    src = np.zeros(SHAPE, np.float32)
    src[:, SHAPE[1] // 2:] = 1.0
    got = blur_fast(lumen, src, 60, "reflect101")
    k = full_ksize(60)
    peer = cv2.GaussianBlur(src, (k, k), 60, borderType=cv2.BORDER_REFLECT_101)
    assert_within(got, peer.astype(np.float64), src, "fast step edge sigma=60")


def test_fast_reports_recursive_and_ignores_ksize(lumen):
    src = make_image(rng_for("fast-v"), SHAPE, np.float32)
    inp, out = lumen._paths("fast-v")
    np.save(inp, src)
    r = lumen.run("blur", inp, out, "--sigma", "5", "--ksize", "3", "--precision", "fast", "-v")
    assert r.returncode == 0, r.stderr
    assert "method recursive" in r.stderr, r.stderr
    # --ksize does not truncate the fast blur: it still matches the full kernel.
    peer = cv2.GaussianBlur(src, (full_ksize(5),) * 2, 5, borderType=cv2.BORDER_REFLECT)
    assert_within(np.load(out), peer.astype(np.float64), src, "fast with --ksize 3")
