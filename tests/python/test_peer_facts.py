"""Facts about the peers (OpenCV 4.6, SciPy 1.10, NumPy) that the reference tests and
docs/reference-tests.md rely on. They do not run lumen. If a peer is upgraded and one of these
starts failing, the peer changed: update the mapping, the tolerance or the docs, then this.
"""

import cv2
import numpy as np
import pytest
import scipy.ndimage as ndi

from conftest import CV2_BORDER, NUMPY_PAD_MODE, SCIPY_MODE, pad, ref_correlate

ROW = np.arange(1, 9, dtype=np.float64)   # "abcdefgh" = 1..8
# docs/semantics.md's border table, three pixels out on each side
BORDER_PATTERNS = {
    "constant": "vvv|abcdefgh|vvv",
    "replicate": "aaa|abcdefgh|hhh",
    "reflect": "cba|abcdefgh|hgf",
    "reflect101": "dcb|abcdefgh|gfe",
    "wrap": "fgh|abcdefgh|abc",
}


def _letters(values):
    return "".join("v" if v == -1 else "abcdefgh"[int(v) - 1] for v in values)


def design_index(i, n, border):
    """docs/semantics.md's border rule written out: the source index for any integer i (-1: value)."""
    if 0 <= i < n:
        return i
    if border == "constant":
        return -1
    if border == "replicate":
        return 0 if i < 0 else n - 1
    if border == "reflect":                     # period 2n: cba|abc
        p = i % (2 * n)
        return p if p < n else 2 * n - 1 - p
    if border == "reflect101":                  # period 2n-2: dcb|abcd (n == 1: itself)
        if n == 1:
            return 0
        p = i % (2 * n - 2)
        return p if p < n else 2 * n - 2 - p
    return i % n                                # wrap


@pytest.mark.parametrize("border", list(BORDER_PATTERNS))
def test_design_index_matches_design_table(border):
    got = _letters([ROW[design_index(i, 8, border)] if design_index(i, 8, border) >= 0 else -1
                    for i in range(-3, 11)])
    assert f"{got[:3]}|{got[3:11]}|{got[11:]}" == BORDER_PATTERNS[border]


@pytest.mark.parametrize("border", list(BORDER_PATTERNS))
def test_reference_pad_matches_design_rule_far_out(border):
    """conftest.pad (cv2.copyMakeBorder) follows the rule also for pads many times the image
    and different on each side: the 'kernel larger than the image' case."""
    for h, w in [(1, 1), (1, 2), (2, 3), (5, 4), (3, 7)]:
        a = (np.arange(h)[:, None] * 100 + np.arange(w)[None, :] + 1).astype(np.float64)
        for top, bottom, left, right in [(1, 0, 2, 1), (0, 4 * h + 3, 5 * w + 1, 1),
                                         (3 * h + 2, 1, 0, 4 * w + 5), (9, 9, 9, 9)]:
            got = pad(a, top, bottom, left, right, border, value=-1.0)
            yi = [design_index(i, h, border) for i in range(-top, h + bottom)]
            xi = [design_index(i, w, border) for i in range(-left, w + right)]
            want = np.array([[a[y, x] if y >= 0 and x >= 0 else -1.0 for x in xi] for y in yi])
            np.testing.assert_array_equal(got, want, err_msg=f"{border} {h}x{w} "
                                          f"pads {top},{bottom},{left},{right}")


@pytest.mark.parametrize("border", list(BORDER_PATTERNS))
def test_numpy_pad_modes_match_design_table(border):
    """numpy.pad agrees with the table for short, equal pads ..."""
    kw = {"constant_values": -1.0} if border == "constant" else {}
    row = np.pad(ROW, 3, mode=NUMPY_PAD_MODE[border], **kw)
    got = _letters(row)
    assert f"{got[:3]}|{got[3:11]}|{got[11:]}" == BORDER_PATTERNS[border], NUMPY_PAD_MODE[border]


@pytest.mark.parametrize("border", ["wrap", "reflect", "reflect101"])
def test_numpy_pad_wrong_for_wide_unequal_pads(border):
    """... but not for pads wider than the array with different widths on the two sides
    (numpy 1.24; numpy issues 22464 and 24436 for wrap, 28575 for symmetric/reflect).
    This is why conftest.pad uses cv2.copyMakeBorder."""
    bad = []
    for n in (2, 3, 5):
        a = np.arange(float(n))
        for left in range(0, 4 * n):
            for right in range(0, 4 * n):
                got = np.pad(a, (left, right), mode=NUMPY_PAD_MODE[border])
                want = [a[design_index(i, n, border)] for i in range(-left, n + right)]
                if not np.array_equal(got, want):
                    bad.append((n, left, right))
    assert bad, f"numpy.pad({NUMPY_PAD_MODE[border]!r}) is right far out now: pad() may use it"
    assert all(left != right for _, left, right in bad)   # equal pads are fine


@pytest.mark.parametrize("border", list(BORDER_PATTERNS))
def test_scipy_modes_match_design_table(border):
    out = []
    for shift in range(-3, 11):      # a one-tap kernel at offset `shift` reads x + shift
        w = np.zeros(23)
        w[11 + shift] = 1.0
        out.append(ndi.correlate1d(ROW, w, mode=SCIPY_MODE[border], cval=-1.0)[0])
    got = _letters(out)
    assert f"{got[:3]}|{got[3:11]}|{got[11:]}" == BORDER_PATTERNS[border], SCIPY_MODE[border]


@pytest.mark.parametrize("border", [b for b in BORDER_PATTERNS if b in CV2_BORDER])
def test_cv2_border_codes_match_design_table(border):
    row = cv2.copyMakeBorder(ROW[None, :], 0, 0, 3, 3, CV2_BORDER[border], value=-1.0)[0]
    got = _letters(row)
    assert f"{got[:3]}|{got[3:11]}|{got[11:]}" == BORDER_PATTERNS[border]


@pytest.mark.parametrize("fn", ["filter2D", "GaussianBlur", "blur", "boxFilter", "sepFilter2D"])
def test_cv2_filters_reject_border_wrap(fn):
    a = np.zeros((8, 8), np.float32)
    k = np.ones((3, 3), np.float32)
    calls = {
        "filter2D": lambda: cv2.filter2D(a, -1, k, borderType=cv2.BORDER_WRAP),
        "GaussianBlur": lambda: cv2.GaussianBlur(a, (3, 3), 1, borderType=cv2.BORDER_WRAP),
        "blur": lambda: cv2.blur(a, (3, 3), borderType=cv2.BORDER_WRAP),
        "boxFilter": lambda: cv2.boxFilter(a, -1, (3, 3), borderType=cv2.BORDER_WRAP),
        "sepFilter2D": lambda: cv2.sepFilter2D(a, -1, k[0], k[0], borderType=cv2.BORDER_WRAP),
    }
    with pytest.raises(cv2.error):
        calls[fn]()


def test_scipy_wrap_and_grid_wrap_agree_for_large_kernels():
    rng = np.random.default_rng(0)
    a = rng.random((5, 4))
    k = rng.random((13, 17))
    for origin in [(0, 0), (-6, 8), (6, -8)]:
        w = ndi.correlate(a, k, mode="wrap", origin=origin)
        g = ndi.correlate(a, k, mode="grid-wrap", origin=origin)
        np.testing.assert_array_equal(w, g)


def test_scipy_nd_reflect_bug_far_below_the_edge():
    """scipy.ndimage.correlate (n-D, NI_InitFilterOffsets) with mode='reflect' maps offsets
    -2m*n, m >= 2, past the low edge to index -1: sz2*(-cc/sz2)+cc gives 0 and the next line
    turns 0 into -1, so scipy reads whatever lies before the array (out of bounds) or cval.
    correlate1d (NI_ExtendLine) and numpy.pad('symmetric') are right."""
    a = np.array([1.0, 2.0])
    k = np.zeros(9)
    k[0] = 1.0                      # reads x - 8 for anchor 8
    nd = ndi.correlate(a, k, mode="reflect", origin=8 - 4)[0]
    one_d = ndi.correlate1d(a, k, mode="reflect", origin=8 - 4)[0]
    right = ref_correlate(a[None, :], k[None, :], (8, 0), "reflect")[0, 0]
    assert right == 1.0 and one_d == 1.0
    assert nd != right, "scipy fixed its reflect bug: drop the workaround in test_filter2d_vs_scipy"


def test_scipy_convolve_even_kernel_origin():
    """convolve(x, w, origin=o) == correlate(x, w[::-1], origin=-o - 1) for even len(w): with
    o = anchor - len//2 that is lumen's mirrored anchor len-1-anchor."""
    x = np.random.default_rng(1).random(11)
    w = np.array([1.0, 2.0, 3.0, 5.0])
    for anchor in range(4):
        o = anchor - 2
        conv = ndi.convolve1d(x, w, mode="reflect", origin=o)
        corr = ndi.correlate1d(x, w[::-1], mode="reflect", origin=(3 - anchor) - 2)
        np.testing.assert_allclose(conv, corr)


def test_cv2_gaussian_kernel_9_tap_table():
    """getGaussianKernel(9, sigma <= 0) is a fixed table, not the sigma = 1.7 formula."""
    k = cv2.getGaussianKernel(9, 0, ktype=cv2.CV_32F).ravel()
    np.testing.assert_array_equal(k * 256, [4, 13, 30, 51, 60, 51, 30, 13, 4])
    x = np.arange(9) - 4.0
    formula = np.exp(-x * x / (2 * 1.7 ** 2))
    assert np.abs(k - formula / formula.sum()).max() > 5e-4


def test_cv2_blur_u8_power_of_two_area_rounds_up():
    a = np.full((16, 16), 100, np.uint8)
    assert cv2.blur(a, (2, 1))[8, 8] == 101            # the mean of 100s is 100
    assert cv2.blur(a.astype(np.float32), (2, 1))[8, 8] == 100
    b = np.zeros((8, 8), np.uint8)
    b[:, 1::2] = 1                                      # 2x2 windows sum to 2: mean 0.5 -> 0
    assert cv2.blur(b, (2, 2), borderType=cv2.BORDER_REFLECT)[4, 4] == 1


def test_cv2_gaussian_u8_is_not_exactly_rounded():
    a = np.random.default_rng(2).integers(0, 256, (64, 64), np.uint8)
    k = cv2.getGaussianKernel(7, 1.0, ktype=cv2.CV_32F).ravel().astype(np.float64)
    exact = cv2.sepFilter2D(a.astype(np.float64), -1, k, k, borderType=cv2.BORDER_REFLECT)
    got = cv2.GaussianBlur(a, (7, 7), 1.0, borderType=cv2.BORDER_REFLECT)
    assert (got != np.rint(exact)).mean() > 0.01


def test_cv2_and_scipy_skip_zero_taps_on_nan():
    a = np.random.default_rng(3).random((20, 20)).astype(np.float32)
    a[10, 10] = np.nan
    lap = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
    ieee = ref_correlate(a, lap, None, "reflect")
    assert np.isnan(ieee).sum() == 9
    assert np.isnan(cv2.filter2D(a, -1, lap, borderType=cv2.BORDER_REFLECT)).sum() == 5
    assert np.isnan(ndi.correlate(a.astype(np.float64), lap.astype(np.float64))).sum() == 5
    # the DFT path (130 taps and up) turns one NaN into an all-NaN image
    big = np.ones((15, 15), np.float32)
    assert np.isnan(cv2.filter2D(a, -1, big, borderType=cv2.BORDER_REFLECT)).all()
    # running sums smear a NaN beyond its 3x3 windows
    assert np.isnan(cv2.blur(a, (3, 3), borderType=cv2.BORDER_REFLECT)).sum() > 9
