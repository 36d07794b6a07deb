"""The Python package (`import lumen`) against its peers for the same call: cv2 (filter2D,
sepFilter2D, GaussianBlur, blur, boxFilter), scipy.ndimage (correlate / convolve with the
mapped mode, origin and cval) and torch (F.pad + conv2d).

The tolerance rules are test_reference.py's (tolerances.py): f32 within F32_REL of the span
(times sum|k|); u8/u16 must be the exactly rounded float64 value (dyadic kernels: no tie
window at all) and equal cv2 wherever cv2 is correctly rounded; cv2's fixed-point u8/u16
GaussianBlur within CV2_GAUSS_INT. scipy on float64 data is the "exact" value for integers.

Images are 23x31 (odd) in three layouts: H x W, H x W x 3 and N x H x W x C (N=2, C=2).
"""

import cv2
import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
import torch.nn.functional as F

import lumen
import test_reference as tr
import tolerances as tol
from conftest import (BORDERS, CV2_BORDER, DTYPES, SCIPY_MODE, dyadic_kernel, gaussian_ksize,
                      gaussian_params, make_image, rng_for)

H, W = 23, 31
LAYOUTS = {"hw": (H, W), "hwc3": (H, W, 3), "nhwc": (2, H, W, 2)}
OPS = ["filter2d", "sep_filter2d", "gaussian", "box_mean", "box_sum"]

#: a value per dtype for the constant border with a non-zero value
VALUE = {np.dtype(np.float32): -0.625, np.dtype(np.uint8): 200.0,
         np.dtype(np.uint16): 40000.0}


# ---- helpers -----------------------------------------------------------------------------------


def each_image(fn, src):
    """fn on each H x W (x C) image of src (a batch is N x H x W x C); shape kept (cv2 drops a
    trailing channel axis of 1)."""
    if src.ndim == 4:
        return np.stack([each_image(fn, s) for s in src])
    return np.asarray(fn(np.ascontiguousarray(src))).reshape(src.shape)


def each_plane(fn, src):
    """fn on each 2-D plane (scipy filters one plane at a time)."""
    src = np.asarray(src)
    if src.ndim == 2:
        return fn(src)
    out = np.empty(src.shape, np.float64)
    for idx in np.ndindex(src.shape[:-3] + (src.shape[-1],)):
        sl = idx[:-1] + (slice(None), slice(None), idx[-1])
        out[sl] = fn(src[sl])
    return out


def scipy_correlate(src, k2d, anchor=None, border="reflect", value=0.0, convolve=False):
    """scipy.ndimage.correlate (or convolve) on float64 data, lumen's anchor as scipy's origin:
    origin = (ay - kh//2, ax - kw//2) for both (docs/reference-tests.md)."""
    k = np.asarray(k2d, np.float64)
    kh, kw = k.shape
    ax, ay = (kw // 2, kh // 2) if anchor is None or tuple(anchor) == (-1, -1) else anchor
    fn = ndi.convolve if convolve else ndi.correlate
    return each_plane(lambda p: fn(p.astype(np.float64), k, mode=SCIPY_MODE[border],
                                   cval=float(value), origin=(ay - kh // 2, ax - kw // 2)), src)


def image(key, layout, dname, lo=None, hi=None):
    return make_image(rng_for("py", *key), LAYOUTS[layout] if isinstance(layout, str) else layout,
                      DTYPES[dname], lo, hi)


def f32_kernel(rng, kh, kw):
    return rng.uniform(-1.0, 1.0, (kh, kw)).astype(np.float32)


def dyadic_1d(rng, n):
    """Taps that are multiples of 1/8 summing to 1 with sum|k| <= 2: a separable pass on u16
    stays exact in f32 (row sums < 2^24 units of 1/64), so u8/u16 have one right answer."""
    while True:
        m = rng.integers(-1, 4, n).astype(np.float64)
        m[n // 2] += 8 - m.sum()
        if np.abs(m).sum() <= 16:
            return (m / 8).astype(np.float32)


def check(got, src, k_abs_sum, exact, peer=None, what="", window="default", extra_values=()):
    """The suite's rules. f32: vs exact (scipy/float64) and vs the cv2 peer within F32_REL.
    Integers: exactly rounded `exact` (tie window unless EXACT), equal to the peer where the
    peer is right (test_reference.compare_int)."""
    assert got.shape == src.shape, f"{what}: shape {got.shape} != {src.shape}"
    if got.dtype == np.float32:
        atol = tol.f32_atol(src, k_abs_sum, extra_values)
        tol.assert_f32_close(got, exact, atol, what + " vs scipy/float64")
        if peer is not None:
            tr.compare_f32(got, peer, lambda: exact, atol, what + " vs cv2")
        return
    if window == "default":
        window = tol.int_tie_window(src, k_abs_sum)
    if peer is None:
        tol.assert_int_exact(got, exact, got.dtype, window, what + " vs exact")
    else:
        tr.compare_int(got, peer, exact, got.dtype, window, what)


# ---- the op table ------------------------------------------------------------------------------


class Case:
    """One op on one image: runs lumen, cv2 and the float64 (scipy) reference of the same call."""

    def __init__(self, op, src, rng, border="reflect", value=0.0):
        self.op, self.src, self.border, self.value = op, src, border, value
        dtype = src.dtype
        self.exact_ints = True    # every f32 step exact on integer data: no tie window
        if op == "filter2d":
            self.k = f32_kernel(rng, 3, 5) if dtype == np.float32 else dyadic_kernel(rng, 3, 5)
        elif op == "sep_filter2d":
            if dtype == np.float32:
                self.kx = rng.uniform(-1, 1, 5).astype(np.float32)
                self.ky = rng.uniform(-1, 1, 3).astype(np.float32)
            else:
                self.kx, self.ky = dyadic_1d(rng, 5), dyadic_1d(rng, 3)
            self.k = np.outer(self.ky.astype(np.float64), self.kx.astype(np.float64))
        elif op == "gaussian":
            self.sigma = 1.3
            kx, ky, sx, sy = gaussian_params(dtype, sigma=self.sigma)
            gx = cv2.getGaussianKernel(kx, sx, ktype=cv2.CV_32F).ravel().astype(np.float64)
            gy = cv2.getGaussianKernel(ky, sy, ktype=cv2.CV_32F).ravel().astype(np.float64)
            self.k = np.outer(gy, gx)
            self.exact_ints = False
        elif op in ("box_mean", "box_sum"):
            self.ksize = (4, 3)   # (kw, kh): even width on purpose
            self.k = np.ones((3, 4))
            if op == "box_mean":
                self.k = self.k / 12.0
                self.exact_ints = False   # 1/12 is not exact
        else:
            raise AssertionError(op)

    @property
    def k_abs_sum(self):
        return float(np.abs(self.k).sum())

    def lumen(self, src=None, **kw):
        src = self.src if src is None else src
        b = dict(border=self.border, border_value=self.value)
        b.update(kw)
        if self.op == "filter2d":
            return lumen.filter2d(src, self.k, **b)
        if self.op == "sep_filter2d":
            return lumen.sep_filter2d(src, self.kx, self.ky, **b)
        if self.op == "gaussian":
            return lumen.gaussian_blur(src, self.sigma, **b)
        return lumen.box_blur(src, self.ksize, normalize=self.op == "box_mean", **b)

    def exact(self, value=None):
        return scipy_correlate(self.src, self.k, None, self.border,
                               self.value if value is None else value)

    def cv2(self):
        if self.border not in CV2_BORDER or (self.border == "constant" and self.value != 0):
            return None   # cv2 filters reject BORDER_WRAP; their constant is always 0
        b = CV2_BORDER[self.border]
        if self.op == "filter2d":
            fn = lambda s: cv2.filter2D(s, -1, self.k, borderType=b)  # noqa: E731
        elif self.op == "sep_filter2d":
            fn = lambda s: cv2.sepFilter2D(s, -1, self.kx, self.ky, borderType=b)  # noqa: E731
        elif self.op == "gaussian":
            fn = lambda s: cv2.GaussianBlur(s, (0, 0), self.sigma, borderType=b)  # noqa: E731
        elif self.op == "box_mean":
            fn = lambda s: cv2.blur(s, self.ksize, borderType=b)  # noqa: E731
        else:
            dd = cv2.CV_32F if self.src.dtype == np.float32 else -1
            fn = lambda s: cv2.boxFilter(s, dd, self.ksize, normalize=False,  # noqa: E731
                                         borderType=b)
        return each_image(fn, self.src)

    def compare(self, got, what, value=None):
        exact = self.exact(value)
        peer = self.cv2()
        ints = got.dtype != np.float32
        extra = [self.value] if self.border == "constant" else []
        if ints and self.op == "gaussian" and peer is not None:
            # cv2.GaussianBlur on u8/u16 is fixed point: exact value, and close to cv2
            check(got, self.src, self.k_abs_sum, exact, None, what)
            tol.assert_int_close_to_cv2_gaussian(got, peer, what + " vs cv2 (fixed point)")
            return
        window = tol.EXACT if (ints and self.exact_ints) else "default"
        check(got, self.src, self.k_abs_sum, exact, peer, what, window, extra)


def int_source(op, dname, layout, key):
    """Integer images for box sums are scaled so that about half the sums saturate."""
    if op == "box_sum" and dname != "f32":
        hi = max(1, 2 * int(np.iinfo(DTYPES[dname]).max) // 12)
        return image(key, layout, dname, 0, hi)
    return image(key, layout, dname)


# ---- every op x border x dtype x layout ----------------------------------------------------------


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("op", OPS)
def test_op_border_dtype_layout(op, border, dname, layout):
    key = ("matrix", op, border, dname, layout)
    src = int_source(op, dname, layout, key)
    case = Case(op, src, rng_for("k", *key), border, 0.0)
    got = case.lumen()
    assert isinstance(got, np.ndarray), f"result is {type(got)}, not a numpy array"
    assert got.dtype == src.dtype, f"dtype {got.dtype} != {src.dtype}"
    case.compare(got, f"{op} {border} {dname} {layout}")


@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
@pytest.mark.parametrize("op", OPS)
def test_constant_border_value(op, dname):
    """border='constant' with a non-zero border_value (in pixel units) vs scipy's cval."""
    key = ("value", op, dname)
    src = int_source(op, dname, "hwc3", key)
    value = VALUE[src.dtype]
    case = Case(op, src, rng_for("k", *key), "constant", value)
    got = case.lumen()
    case.compare(got, f"{op} constant value={value} {dname}")
    # and the value matters: the same call with 0 differs (test able to fail)
    assert not np.array_equal(got, case.lumen(border_value=0.0)), "border_value had no effect"


# ---- anchors and convolution -----------------------------------------------------------------


ANCHORS = [(0, 0), (4, 2), (1, 2), (-1, -1)]


@pytest.mark.parametrize("border", ["reflect", "reflect101", "replicate", "wrap", "constant"])
@pytest.mark.parametrize("anchor", ANCHORS, ids=str)
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_filter2d_anchor(dname, anchor, border):
    """5w x 3h kernel at (x, y) anchors: cv2.filter2D(anchor=(x, y)), scipy origin (y-1, x-2)."""
    key = ("anchor", dname, anchor, border)
    src = image(key, "hwc3", dname)
    rng = rng_for("k", *key)
    k = f32_kernel(rng, 3, 5) if dname == "f32" else dyadic_kernel(rng, 3, 5)
    value = VALUE[src.dtype] if border == "constant" else 0.0
    got = lumen.filter2d(src, k, anchor=anchor, border=border, border_value=value)
    exact = scipy_correlate(src, k, anchor, border, value)
    peer = None
    if border in CV2_BORDER and border != "constant":
        peer = cv2.filter2D(src, -1, k, anchor=tuple(anchor), borderType=CV2_BORDER[border])
    check(got, src, np.abs(k).sum(), exact, peer, f"filter2d anchor={anchor} {border} {dname}",
          tol.EXACT if dname != "f32" else "default", [value])


@pytest.mark.parametrize("anchor", [(0, 0), (4, 2), (3, 1)], ids=str)
@pytest.mark.parametrize("dname", ["f32", "u16"])
def test_sep_filter2d_anchor(dname, anchor):
    key = ("sep-anchor", dname, anchor)
    src = image(key, "hw", dname)
    rng = rng_for("k", *key)
    if dname == "f32":
        kx, ky = rng.uniform(-1, 1, 5).astype(np.float32), rng.uniform(-1, 1, 3).astype(np.float32)
    else:
        kx, ky = dyadic_1d(rng, 5), dyadic_1d(rng, 3)
    k = np.outer(ky.astype(np.float64), kx.astype(np.float64))
    got = lumen.sep_filter2d(src, kx, ky, anchor=anchor, border="reflect101")
    peer = cv2.sepFilter2D(src, -1, kx, ky, anchor=tuple(anchor),
                           borderType=cv2.BORDER_REFLECT_101)
    exact = scipy_correlate(src, k, anchor, "reflect101")
    check(got, src, np.abs(k).sum(), exact, peer, f"sep_filter2d anchor={anchor} {dname}",
          tol.EXACT if dname != "f32" else "default")


# kernel (kh, kw), anchor: even kernels are where convolution's mirrored anchor matters
CONV_CASES = [((3, 5), None), ((2, 4), None), ((2, 4), (0, 1)), ((2, 4), (3, 0)),
              ((4, 4), (1, 2))]


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("kshape,anchor", CONV_CASES, ids=[f"{k[0]}x{k[1]}-a{a}" for k, a in
                                                            CONV_CASES])
def test_convolve_vs_scipy(kshape, anchor, border):
    """convolve=True is scipy.ndimage.convolve with origin (ay - kh//2, ax - kw//2)."""
    key = ("conv", kshape, anchor, border)
    src = image(key, "hw", "f32", -1.0, 1.0)
    rng = rng_for("k", *key)
    k = f32_kernel(rng, *kshape)
    value = -0.625
    got = lumen.filter2d(src, k, anchor=anchor, convolve=True, border=border, border_value=value)
    peer = scipy_correlate(src, k, anchor, border, value, convolve=True)
    check(got, src, np.abs(k).sum(), peer, None, f"filter2d convolve {kshape} {anchor} {border}",
          extra_values=[value])
    corr = lumen.filter2d(src, k, anchor=anchor, convolve=False, border=border,
                          border_value=value)
    assert not np.allclose(corr, got), "convolve=True gave the correlation"
    # sep_filter2d: the same with k = outer(ky, kx)
    kx, ky = rng.uniform(-1, 1, kshape[1]).astype(np.float32), \
        rng.uniform(-1, 1, kshape[0]).astype(np.float32)
    k2 = np.outer(ky.astype(np.float64), kx.astype(np.float64))
    got = lumen.sep_filter2d(src, kx, ky, anchor=anchor, convolve=True, border=border,
                             border_value=value)
    peer = scipy_correlate(src, k2, anchor, border, value, convolve=True)
    check(got, src, np.abs(k2).sum(), peer, None,
          f"sep_filter2d convolve {kshape} {anchor} {border}", extra_values=[value])


# ---- dtype= output conversion ------------------------------------------------------------------


DTYPE_PAIRS = [("u8", "f32"), ("u16", "f32"), ("f32", "u8"), ("f32", "u16"), ("u16", "u8"),
               ("u8", "u16")]


@pytest.mark.parametrize("op", ["filter2d", "gaussian", "box_mean"])
@pytest.mark.parametrize("din,dout", DTYPE_PAIRS, ids=[f"{a}-to-{b}" for a, b in DTYPE_PAIRS])
def test_dtype_conversion(din, dout, op):
    """dtype= picks the output: f32 out is not rounded; u8/u16 out rounds to nearest (ties to
    even) and saturates the float64 value. Values stay in the source's pixel units."""
    key = ("dtype", din, dout, op)
    if din == "f32":   # so that rounding and saturation both happen
        src = image(key, "hwc3", "f32", -20.0, float(np.iinfo(DTYPES[dout]).max) + 20.0)
    else:
        src = image(key, "hwc3", din)
    rng = rng_for("k", *key)
    case = Case(op, src, rng, "reflect101")
    if op == "filter2d":   # a dense, non-dyadic kernel: its f32 result is not an integer
        case.k = rng.uniform(-0.3, 1.0, (3, 5)).astype(np.float32)
        case.k /= case.k.sum()
    got = case.lumen(dtype=np.dtype(DTYPES[dout]))
    assert got.dtype == DTYPES[dout], f"dtype= {dout}: got {got.dtype}"
    assert got.shape == src.shape
    exact = case.exact()
    what = f"{op} {din} -> {dout}"
    if dout == "f32":
        tol.assert_f32_close(got, exact, tol.f32_atol(src, case.k_abs_sum), what)
        if op == "filter2d":
            peer = cv2.filter2D(src, cv2.CV_32F, case.k, borderType=cv2.BORDER_REFLECT_101)
            tol.assert_f32_close(got, peer, tol.f32_atol(src, case.k_abs_sum), what + " vs cv2")
        if din != "f32":
            assert (got != np.rint(got)).any(), f"{what}: f32 output looks rounded"
    else:
        tol.assert_int_exact(got, exact, DTYPES[dout], tol.int_tie_window(src, case.k_abs_sum),
                             what)
    # the same through out= of that dtype
    out = np.empty(src.shape, DTYPES[dout])
    r = case.lumen(out=out)
    assert r is out
    np.testing.assert_array_equal(out, got, err_msg=f"{what}: out= differs from dtype=")


# ---- methods -------------------------------------------------------------------------------------


def _rank1_dyadic(rng):
    col = np.array([1, 2, 1], np.float64) / 4
    row = np.array([1, 4, 6, 4, 1], np.float64) / 16
    return np.outer(col, row).astype(np.float32)


FILTER_METHODS = ["direct", "separable", "fft", "auto"]


@pytest.mark.parametrize("border", ["reflect", "wrap", "constant"])
@pytest.mark.parametrize("method", FILTER_METHODS)
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_filter2d_methods(dname, method, border):
    """Every method gives the peers' answer; last_run() names the method that ran.
    The kernel is rank 1 so that separable is valid, and dyadic on integers (one answer)."""
    key = ("methods", dname, method, border)
    src = image(key, "hwc3", dname)
    rng = rng_for("k", *key)
    k = _rank1_dyadic(rng)
    if dname == "f32":
        k = np.outer(rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 5)).astype(np.float32)
    value = VALUE[src.dtype] if border == "constant" else 0.0
    got = lumen.filter2d(src, k, method=method, border=border, border_value=value)
    ran = lumen.last_run()["method"]
    if method == "auto":
        assert ran in ("direct", "separable", "fft"), f"auto ran {ran!r}"
    else:
        assert ran == method, f"method={method!r} but last_run() says {ran!r}"
    exact = scipy_correlate(src, k, None, border, value)
    check(got, src, np.abs(k).sum(), exact, None, f"filter2d method={method} {border} {dname}",
          tol.EXACT if dname != "f32" else "default", [value])


@pytest.mark.parametrize("method", ["separable", "fft", "auto"])
@pytest.mark.parametrize("op", ["sep_filter2d", "gaussian"])
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_separable_ops_methods(dname, op, method):
    key = ("sep-methods", dname, op, method)
    src = image(key, "hwc3", dname)
    case = Case(op, src, rng_for("k", *key), "reflect101")
    got = case.lumen(method=method)
    ran = lumen.last_run()["method"]
    if method == "auto":
        assert ran in ("separable", "fft"), f"auto ran {ran!r}"
    else:
        assert ran == method, f"method={method!r} but last_run() says {ran!r}"
    case.compare(got, f"{op} method={method} {dname}")


# ---- large kernels (larger than the image) ----------------------------------------------------


@pytest.mark.parametrize("method", ["auto", "fft", "direct"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_large_kernel(dname, border, method):
    """41h x 45w kernel anchored at (40, 2) on a 23 x 31 image."""
    key = ("large", dname, border, method)
    src = image(key, "hw", dname)
    rng = rng_for("k", *key)
    k = f32_kernel(rng, 41, 45) if dname == "f32" else dyadic_kernel(rng, 41, 45)
    anchor = (40, 2)
    value = VALUE[src.dtype] if border == "constant" else 0.0
    got = lumen.filter2d(src, k, anchor=anchor, method=method, border=border, border_value=value)
    if method != "auto":
        assert lumen.last_run()["method"] == method
    exact = tr.ref_correlate(src, k, anchor, border, value)   # copyMakeBorder based, any size
    check(got, src, np.abs(k).sum(), exact, None, f"filter2d 41x45 {method} {border} {dname}",
          tol.EXACT if dname != "f32" else "default", [value])


@pytest.mark.parametrize("border", ["reflect", "reflect101", "wrap"])
def test_large_gaussian(border):
    """sigma 6 (49 taps, larger than the image) vs cv2 and the float64 separable reference."""
    src = image(("large-gauss", border), "hwc3", "f32")
    got = lumen.gaussian_blur(src, 6.0, border=border)
    exact = tr.ref_gaussian(src, np.float32, sigma=6.0, border=border)
    peer = None if border == "wrap" else cv2.GaussianBlur(src, (0, 0), 6.0,
                                                          borderType=CV2_BORDER[border])
    check(got, src, 1.0, exact, peer, f"gaussian sigma=6 {border}")


# ---- Gaussian parameters, fast precision, utilities ----------------------------------------------


GAUSS_CASES = {
    "s0.8": dict(sigma=0.8),
    "s1-sy2.5": dict(sigma=1.0, sigma_y=2.5),
    "s1-k5,3": dict(sigma=1.0, ksize=(5, 3)),
    "s2-k7": dict(sigma=2.0, ksize=7),
    "k5": dict(sigma=0.0, ksize=5),
    "k9": dict(sigma=0.0, ksize=9),
}


@pytest.mark.parametrize("case", list(GAUSS_CASES))
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_gaussian_params_vs_cv2(dname, case):
    p = GAUSS_CASES[case]
    src = image(("gauss-params", dname, case), "hw", dname)
    kw = {k: v for k, v in p.items() if k != "sigma"}
    got = lumen.gaussian_blur(src, p["sigma"], border="reflect101", **kw)
    ks = p.get("ksize")
    peer = tr.cv2_gaussian(src, "reflect101", sigma=p["sigma"], sigma_y=p.get("sigma_y"),
                           ksize=ks)
    exact = tr.ref_gaussian(src, DTYPES[dname], sigma=p["sigma"], sigma_y=p.get("sigma_y"),
                            ksize=ks, border="reflect101")
    what = f"gaussian {case} {dname}"
    if dname == "f32":
        check(got, src, 1.0, exact, peer, what)
    else:
        check(got, src, 1.0, exact, None, what)
        tol.assert_int_close_to_cv2_gaussian(got, peer, what + " vs cv2 (fixed point)")


def _full_ksize(sigma):
    return int(round(8 * sigma + 1)) | 1


@pytest.mark.parametrize("sigma", [2.5, 7.0])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_gaussian_fast(dname, border, sigma):
    """precision='fast' within FAST_GAUSS_REL of the span (+1 level on integers) of the exact
    blur with the full kernel round(8 sigma + 1)|1 and the same border (docs/gaussian-fast.md)."""
    src = image(("fast", dname, border, sigma), "hwc3", dname)
    value = VALUE[src.dtype] if border == "constant" else 0.0
    got = lumen.gaussian_blur(src, sigma, precision="fast", border=border, border_value=value)
    assert lumen.last_run()["method"] == "recursive", lumen.last_run()
    assert got.dtype == src.dtype and got.shape == src.shape
    n = _full_ksize(sigma)
    exact = tr.ref_gaussian(src.astype(np.float32), np.float32, sigma=sigma, ksize=n,
                            border=border, value=value)
    span = tol.data_span(src, *([value] if border == "constant" else []))
    limit = tol.FAST_GAUSS_REL * span + (0.0 if dname == "f32" else 1.0)
    err = np.abs(got.astype(np.float64) - exact).max()
    assert err <= limit, f"fast {dname} {border} sigma={sigma}: max error {err:.3g} > {limit:.3g}"


@pytest.mark.parametrize("n,sigma", [(1, 0), (3, 0), (5, 0), (7, 0), (9, 0), (11, 0), (7, 1.5),
                                     (15, 2.0), (31, 5.0)])
def test_gaussian_kernel_vs_cv2(n, sigma):
    got = lumen.gaussian_kernel(n, sigma)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (n,)
    want = cv2.getGaussianKernel(n, sigma, ktype=cv2.CV_32F).ravel()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=f"n={n} sigma={sigma}")


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.3, 2.5, 6.0])
@pytest.mark.parametrize("dname", ["float32", "uint8", "uint16"])
def test_gaussian_ksize(sigma, dname):
    assert lumen.gaussian_ksize(sigma, dname) == gaussian_ksize(sigma, dname)
    assert lumen.gaussian_ksize(sigma, np.dtype(dname)) == gaussian_ksize(sigma, dname)
    assert lumen.gaussian_ksize(sigma) == gaussian_ksize(sigma, np.float32)


# ---- torch: F.pad + conv2d ---------------------------------------------------------------------

#: lumen border -> torch F.pad mode (torch's 'reflect' is lumen's reflect101)
TORCH_MODE = {"constant": "constant", "replicate": "replicate", "reflect101": "reflect",
              "wrap": "circular"}


def torch_filter(src_nhwc, k, mode, value=0.0, anchor=None):
    """Per-channel correlation in torch: F.pad (left, right, top, bottom) + grouped conv2d."""
    k = np.asarray(k, np.float32)
    kh, kw = k.shape
    ax, ay = (kw // 2, kh // 2) if anchor is None else anchor
    x = torch.from_numpy(np.ascontiguousarray(src_nhwc)).permute(0, 3, 1, 2)
    c = x.shape[1]
    pad = (ax, kw - 1 - ax, ay, kh - 1 - ay)
    xp = F.pad(x, pad, mode=mode, value=value) if mode == "constant" else F.pad(x, pad, mode=mode)
    wt = torch.from_numpy(k).expand(c, 1, kh, kw).contiguous()
    with torch.no_grad():
        y = F.conv2d(xp, wt, groups=c)
    return y.permute(0, 2, 3, 1).numpy()


@pytest.mark.parametrize("border", list(TORCH_MODE))
@pytest.mark.parametrize("op", ["filter2d", "filter2d-even", "gaussian", "box_mean"])
def test_vs_torch(op, border):
    key = ("torch", op, border)
    src = image(key, (2, H, W, 3), "f32")
    rng = rng_for("k", *key)
    value = -0.625 if border == "constant" else 0.0
    if op == "filter2d":
        k = f32_kernel(rng, 3, 5)
        got = lumen.filter2d(src, k, border=border, border_value=value)
    elif op == "filter2d-even":
        k = f32_kernel(rng, 2, 4)
        got = lumen.filter2d(src, k, anchor=(1, 0), border=border, border_value=value)
    elif op == "gaussian":
        g = cv2.getGaussianKernel(11, 1.3, ktype=cv2.CV_32F).ravel().astype(np.float64)
        k = np.outer(g, g)
        got = lumen.gaussian_blur(src, 1.3, border=border, border_value=value)
    else:
        k = np.full((3, 4), 1 / 12)
        got = lumen.box_blur(src, (4, 3), border=border, border_value=value)
    anchor = (1, 0) if op == "filter2d-even" else None
    peer = torch_filter(src, k, TORCH_MODE[border], value, anchor)
    tol.assert_f32_close(got, peer, tol.f32_atol(src, np.abs(k).sum(), [value]),
                         f"{op} {border} vs torch F.pad({TORCH_MODE[border]!r}) + conv2d")


def test_torch_reflect_is_lumen_reflect101_not_reflect():
    """The trap the border table warns about, on real numbers."""
    src = image(("torch-trap",), (1, H, W, 1), "f32")
    k = f32_kernel(rng_for("k", "torch-trap"), 5, 5)
    peer = torch_filter(src, k, "reflect")
    atol = tol.f32_atol(src, np.abs(k).sum())
    tol.assert_f32_close(lumen.filter2d(src, k, border="reflect101"), peer, atol, "reflect101")
    tol.assert_f32_close(lumen.filter2d(src, k, border="circular"),
                         torch_filter(src, k, "circular"), atol, "circular alias")
    assert np.abs(lumen.filter2d(src, k, border="reflect") - peer).max() > 100 * atol, \
        "lumen 'reflect' should differ from torch 'reflect'"
