"""lumen.choose_method (include/lumen.h, "Method queries"): the method an op would run, asked
without running it, equals lumen.last_run()["method"] of the real call, for every op that
chooses one, across shapes, dtypes, layouts, kernels (small, rank 1, FFT-sized), anchors,
convolution and thread counts; it reads no pixels (a shape too big to allocate is answered)
and refuses what the call refuses.
"""

import numpy as np
import pytest

import lumen

rng = np.random.default_rng(7)

IMAGES = [  # shape, dtype, layout
    ((64, 48), np.float32, None),
    ((700, 530, 3), np.uint8, None),
    ((2, 300, 410, 1), np.uint16, None),
    ((3, 260, 900), np.float32, "chw"),
    ((1500, 1100), np.float64, None),
]
KERNELS = [
    rng.standard_normal((3, 3)).astype(np.float32),
    np.outer([1, 4, 6, 4, 1], [1, 2, 1]).astype(np.float32) / 64,   # rank 1
    rng.standard_normal((15, 15)).astype(np.float32),
    rng.standard_normal((31, 24)).astype(np.float32),
    rng.standard_normal((63, 63)).astype(np.float32),
    np.outer(np.hanning(41), np.hanning(41)).astype(np.float32),       # rank 1, FFT-sized
]


def image(shape, dtype):
    a = rng.random(shape)
    return (a * 200).astype(dtype) if np.dtype(dtype).kind == "u" else a.astype(dtype)


def same(op, src, *args, **kw):
    """choose_method, then the real call on the same (fresh) context: the same method."""
    ctx = lumen.Context(threads=kw.pop("threads", 1))
    asked = lumen.choose_method(op, src, *args, context=ctx, **kw)
    getattr(lumen, op)(src, *args, context=ctx, **kw)
    ran = lumen.last_run()["method"]
    assert asked == ran, f"{op} {src.shape} {src.dtype} {kw}: query {asked}, call ran {ran}"
    return asked


@pytest.mark.parametrize("shape,dtype,layout", IMAGES)
def test_filter2d(shape, dtype, layout):
    src = image(shape, dtype)
    seen = set()
    for i, k in enumerate(KERNELS):
        kw = {} if layout is None else {"layout": layout}
        seen.add(same("filter2d", src, k, threads=1 + i % 2, **kw))
        kh, kw_ = k.shape
        same("filter2d", src, k, anchor=(kw_ - 1, 0), convolve=True, border="wrap", **kw)
        for m in ("direct", "fft"):
            assert same("filter2d", src, k, method=m, **kw) == m
    assert "direct" in seen or "separable" in seen


def test_all_three_methods_are_chosen():
    """The shapes and kernels above make auto choose each method at least once (otherwise
    the equality would test one branch)."""
    src = image((1500, 1100), np.float32)
    got = {same("filter2d", src, k) for k in KERNELS}
    assert got == {"direct", "separable", "fft"}, got


@pytest.mark.parametrize("shape,dtype,layout", IMAGES)
def test_sep_gaussian_box(shape, dtype, layout):
    src = image(shape, dtype)
    kw = {} if layout is None else {"layout": layout}
    for n in (3, 9, 61):
        kx, ky = rng.random(n).astype(np.float32), rng.random(n + 4).astype(np.float32)
        same("sep_filter2d", src, kx, ky, **kw)
        same("sep_filter2d", src, kx, ky, anchor=(0, 2), convolve=True, threads=2, **kw)
    for sigma in (1.0, 4.0, 12.0, (30.0, 2.0)):
        same("gaussian_blur", src, sigma, **kw)
        same("gaussian_blur", src, sigma, dtype="float32", threads=2, **kw)
    same("gaussian_blur", src, 3.0, mode="wrap", truncate=6.0, **kw)
    assert same("gaussian_blur", src, 5.0, precision="fast", **kw) == "recursive"
    assert same("box_blur", src, (7, 3), normalize=False, **kw) == "separable"


def test_reads_no_pixels():
    """The answer for an image far too big to allocate (80 GB), given only as .shape/.dtype,
    and for a dask array; the stand-in costs no memory."""
    class Big:
        shape, dtype = (200000, 100000), np.dtype(np.float32)
    k = rng.standard_normal((31, 31)).astype(np.float32)
    assert lumen.choose_method("filter2d", Big(), k) == "fft"
    assert lumen.choose_method(lumen.filter2d, Big(), k, method="direct") == "direct"
    assert lumen.choose_method("gaussian_blur", Big(), 2.0) == "separable"
    da = pytest.importorskip("dask.array")
    x = da.zeros((3000, 4000), chunks=500, dtype=np.float32)
    assert lumen.choose_method("filter2d", x, k) == same("filter2d", x.compute(), k)


def test_refuses_what_the_call_refuses():
    src = image((50, 40), np.float32)
    k = rng.standard_normal((5, 5)).astype(np.float32)
    with pytest.raises(lumen.ArgumentError, match="not separable"):
        lumen.choose_method("filter2d", src, k, method="separable")
    with pytest.raises(lumen.ArgumentError, match="anchor"):
        lumen.choose_method("filter2d", src, k, anchor=(5, 0))
    with pytest.raises(lumen.ArgumentError, match="sep_filter2d runs"):
        lumen.choose_method("sep_filter2d", src, [1, 2], [1], method="direct")
    with pytest.raises(lumen.ArgumentError, match="ksize"):
        lumen.choose_method("gaussian_blur", src, 1.0, ksize=4)
    with pytest.raises(lumen.ArgumentError, match="no method to choose"):
        lumen.choose_method("conv2d", src, k)
    with pytest.raises(TypeError, match="out="):
        lumen.choose_method("box_blur", src, 3, out=src)
    with pytest.raises(lumen.ArgumentError, match="channels-first"):
        lumen.choose_method("box_blur", np.zeros((3, 40, 50), np.float32), 3)
