"""Views, strides, out= and zero copy in the Python package (docs/python.md, "Images", "Output").

Any strides are used in place: a result on a view must equal (bit for bit) the result on
np.ascontiguousarray of the same view, and lumen.last_run() must report that the C op got the
view's own data pointer (element [0, 0, ...], which is __array_interface__['data'][0] also for
negative strides) and out='s pointer.
"""

import gc
import tracemalloc

import numpy as np
import pytest

import lumen
import tolerances as tol
from conftest import make_image, rng_for

H, W = 23, 31


def ptr(a):
    return a.__array_interface__["data"][0]


def base(dtype, shape=(2 * H, 2 * W, 4)):
    return make_image(rng_for("views", np.dtype(dtype).name, shape), shape, dtype)


#: name -> function of a (2H x 2W x 4) parent returning the view under test
VIEWS = {
    "contiguous-hw": lambda a: np.ascontiguousarray(a[:H, :W, 0]),
    "contiguous-hwc": lambda a: np.ascontiguousarray(a[:H, :W, :3]),
    "crop-hw": lambda a: a[3:3 + H, 5:5 + W, 0],
    "crop-hwc": lambda a: a[3:3 + H, 5:5 + W, :3],
    "steps-hw": lambda a: a[1::2, 3::2, 2],
    "steps-3": lambda a: a[::3, ::2, 1],
    "channel-slice-1:2": lambda a: a[..., 1:2],
    "channel-step-::2": lambda a: a[:, :, ::2],
    "channel-reversed": lambda a: a[:, :, 2::-1],
    "neg-hw": lambda a: a[::-1, ::-1, 0],
    "neg-hwc": lambda a: a[::-1, ::-1, :3],
    "neg-steps": lambda a: a[-2::-3, ::-2, 1:3],
    "fortran-hw": lambda a: np.asfortranarray(a[:H, :W, 0]),
    "fortran-hwc": lambda a: np.asfortranarray(a[:H, :W, :3]),
    "transposed-hw": lambda a: a[:H, :W, 0].T,
    "transposed-hwc": lambda a: a[:H, :W, :3].transpose(1, 0, 2),
    "planar-as-hwc": lambda a: np.ascontiguousarray(a[:H, :W, :3].transpose(2, 0, 1))
    .transpose(1, 2, 0),                       # CHW memory seen as HWC
    "batch-steps": lambda a: a[:, :, :3].reshape(2, H, 2 * W, 3)[:, ::2, ::-3],
    "batch-nchw-as-nhwc": lambda a: np.ascontiguousarray(
        a[:, :, :2].reshape(2, H, 2 * W, 2).transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1),
    "broadcast-channels": lambda a: np.broadcast_to(a[:H, :W, :1], (H, W, 3)),
}


def run_op(op, src, **kw):
    if op == "gaussian":
        return lumen.gaussian_blur(src, 1.7, border="reflect101", **kw)
    if op == "filter2d":
        k = np.arange(15, dtype=np.float32).reshape(3, 5) / 100 - 0.05
        return lumen.filter2d(src, k, anchor=(1, 2), border="wrap", **kw)
    if op == "sep_filter2d":
        return lumen.sep_filter2d(src, [0.25, 0.5, 0.25], [-1, 0, 2, 0.5], border="constant",
                                  border_value=3.0, **kw)
    if op == "box":
        return lumen.box_blur(src, (4, 3), border="replicate", **kw)
    raise AssertionError(op)


OPS = ["gaussian", "filter2d", "sep_filter2d", "box"]


# ---- any strides give the contiguous answer, with no copy ---------------------------------------


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_view_equals_contiguous(view, dname, op):
    a = base({"f32": np.float32, "u8": np.uint8, "u16": np.uint16}[dname])
    v = VIEWS[view](a)
    before = a.copy()
    got = run_op(op, v)
    info = lumen.last_run()
    want = run_op(op, np.ascontiguousarray(v))
    assert got.shape == v.shape and got.dtype == v.dtype
    np.testing.assert_array_equal(got, want, err_msg=f"{op} on view {view} ({v.strides})")
    np.testing.assert_array_equal(a, before, err_msg="the source was modified")
    assert not np.shares_memory(got, a), "the result shares memory with the source"
    # zero copy: the C op got the view's own pointer
    assert info["src_ptr"] == ptr(v), (f"{view}: src_ptr {info['src_ptr']:#x} != view data "
                                       f"{ptr(v):#x} (strides {v.strides}): a copy was made")
    assert info["dst_ptr"] == ptr(got)


@pytest.mark.parametrize("view", ["crop-hwc", "neg-hwc", "fortran-hwc", "steps-hw"])
def test_view_method_fft_and_fast(view):
    """The FFT tiles and the recursive Gaussian read strided sources in place too."""
    a = base(np.float32)
    v = VIEWS[view](a)
    k = make_image(rng_for("fftk"), (9, 11), np.float32)
    for fn in (lambda s: lumen.filter2d(s, k, method="fft"),
               lambda s: lumen.gaussian_blur(s, 4.0, precision="fast")):
        got = fn(v)
        assert lumen.last_run()["src_ptr"] == ptr(v)
        np.testing.assert_array_equal(got, fn(np.ascontiguousarray(v)))


def test_misaligned_but_itemsize_strides():
    """A float32 view starting 1 byte into a buffer: strides are multiples of the item size,
    so it is valid; it must give the right answer (copying is allowed but not required)."""
    buf = np.zeros(H * W * 4 + 8, np.uint8)
    v = np.ndarray((H, W), np.float32, buffer=buf, offset=1)
    v[...] = make_image(rng_for("misaligned"), (H, W), np.float32)
    got = lumen.gaussian_blur(v, 1.5)
    np.testing.assert_array_equal(got, lumen.gaussian_blur(np.ascontiguousarray(v), 1.5))


# ---- out= --------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_out_new_array(op):
    src = base(np.float32)[:H, :W, :3]
    want = run_op(op, src)
    out = np.full(src.shape, np.nan, np.float32)
    r = run_op(op, src, out=out)
    assert r is out, "out= must be returned"
    assert lumen.last_run()["dst_ptr"] == ptr(out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("kind", ["steps", "negative", "fortran", "crop", "channels-strided"])
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_out_strided(kind, dname):
    dtype = np.float32 if dname == "f32" else np.uint8
    src = make_image(rng_for("out-strided", dname), (H, W, 3), dtype)
    want = run_op("gaussian", src)
    sentinel = 7
    if kind == "steps":
        big = np.full((2 * H, 2 * W, 3), sentinel, dtype)
        out = big[::2, ::2]
    elif kind == "negative":
        big = np.full((2 * H, 2 * W, 3), sentinel, dtype)
        out = big[::-2, ::-2]
    elif kind == "crop":
        big = np.full((H + 4, W + 6, 3), sentinel, dtype)
        out = big[2:2 + H, 3:3 + W]
    elif kind == "channels-strided":
        big = np.full((H, W, 6), sentinel, dtype)
        out = big[:, :, ::2]
    else:
        big = np.full((3, H, W), sentinel, dtype).transpose(1, 2, 0)   # planar memory
        out = big
    r = run_op("gaussian", src, out=out)
    assert r is out
    assert lumen.last_run()["dst_ptr"] == ptr(out), "out= was not written in place"
    np.testing.assert_array_equal(out, want, err_msg=f"out= {kind}")
    mask = np.ones(big.shape, bool)
    if kind == "steps":
        mask[::2, ::2] = False
    elif kind == "negative":
        mask[::-2, ::-2] = False
    elif kind == "crop":
        mask[2:2 + H, 3:3 + W] = False
    elif kind == "channels-strided":
        mask[:, :, ::2] = False
    else:
        mask[...] = False
    assert (big[mask] == sentinel).all(), "out= wrote outside its view"


def test_out_other_dtype_than_src():
    """out= of another supported dtype converts like dtype= (u8 in, f32 out)."""
    src = make_image(rng_for("out-dtype"), (H, W, 3), np.uint8)
    out = np.empty((H, W, 3), np.float32)
    r = lumen.gaussian_blur(src, 1.2, out=out)
    assert r is out
    np.testing.assert_array_equal(out, lumen.gaussian_blur(src, 1.2, dtype=np.float32))
    assert (out != np.rint(out)).any(), "u8 -> f32 output was rounded"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dname", ["f32", "u16"])
def test_out_is_input_in_place(op, dname):
    dtype = np.float32 if dname == "f32" else np.uint16
    a = make_image(rng_for("inplace", op, dname), (H, W, 3), dtype)
    want = run_op(op, a.copy())
    r = run_op(op, a, out=a)
    assert r is a
    np.testing.assert_array_equal(a, want, err_msg=f"{op} in place")


@pytest.mark.parametrize("kind", ["flipped", "shifted-rows", "same-view-strided"])
def test_out_overlaps_input(kind):
    """Overlap other than identity: lumen filters from a copy, so the answer is unchanged."""
    parent = make_image(rng_for("overlap", kind), (H + 2, W, 3), np.float32)
    if kind == "flipped":
        src, out = parent[:H], parent[:H][::-1, ::-1]
    elif kind == "shifted-rows":
        src, out = parent[:H], parent[2:2 + H]
    else:
        src = out = parent[::2]
    want = run_op("filter2d", src.copy())
    run_op("filter2d", src, out=out)
    np.testing.assert_array_equal(out, want, err_msg=f"overlapping out= ({kind})")


BAD_OUTS = {
    "shape": (lambda s: np.empty((H, W + 1, 3), np.float32), ValueError),
    "shape-channels": (lambda s: np.empty((H, W), np.float32), ValueError),
    "shape-batch": (lambda s: np.empty((1, H, W, 3), np.float32), ValueError),
    "dtype-i32": (lambda s: np.empty(s.shape, np.int32), TypeError),
    "dtype-i32": (lambda s: np.empty(s.shape, np.int32), TypeError),
    "readonly": (lambda s: _readonly(np.empty(s.shape, np.float32)), ValueError),
    "broadcast": (lambda s: np.broadcast_to(np.zeros((1, 1, 3), np.float32), s.shape),
                  ValueError),
    "list": (lambda s: s.tolist(), TypeError),
}


def _readonly(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("bad", list(BAD_OUTS))
@pytest.mark.parametrize("op", OPS)
def test_out_rejected(op, bad):
    src = make_image(rng_for("bad-out"), (H, W, 3), np.float32)
    make, exc = BAD_OUTS[bad]
    out = make(src)
    snapshot = np.array(out, copy=True) if isinstance(out, np.ndarray) else None
    with pytest.raises(exc) as e:
        run_op(op, src, out=out)
    assert "out" in str(e.value), f"message does not name out=: {e.value}"
    if snapshot is not None:
        np.testing.assert_array_equal(out, snapshot, err_msg="a refused out= was written")


# ---- memory: one output, not two ---------------------------------------------------------------


BIG = (2000, 2000)


def _peak_during(fn):
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base_now, _ = tracemalloc.get_traced_memory()
        r = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return r, peak - base_now


@pytest.fixture(scope="module")
def big_f32():
    return make_image(rng_for("big"), (BIG[0], 2 * BIG[1]), np.float32)


@pytest.mark.parametrize("kind", ["contiguous", "strided", "negative", "fortran"])
def test_peak_memory_is_one_output(big_f32, kind):
    """tracemalloc sees NumPy's allocations: a call may allocate its output, nothing the size of
    the image besides (no hidden np.ascontiguousarray of the input, no second output)."""
    if kind == "contiguous":
        src = np.ascontiguousarray(big_f32[:, :BIG[1]])
    elif kind == "strided":
        src = big_f32[:, ::2]
    elif kind == "negative":
        src = big_f32[::-1, -1:-2 * BIG[1] - 1:-2]
    else:
        src = np.asfortranarray(big_f32[:, :BIG[1]])
    assert src.shape == BIG
    out_bytes = BIG[0] * BIG[1] * 4
    r, peak = _peak_during(lambda: lumen.gaussian_blur(src, 2.0))
    assert r.shape == BIG
    assert peak <= tol.PY_PEAK_OUTPUTS * out_bytes, (
        f"{kind}: traced peak {peak / 2**20:.1f} MiB during one call; one output is "
        f"{out_bytes / 2**20:.1f} MiB (limit {tol.PY_PEAK_OUTPUTS} outputs)")
    assert lumen.last_run()["src_ptr"] == ptr(src)
    del r
    # with out= nothing image-sized is allocated at all
    out = np.empty(BIG, np.float32)
    _, peak = _peak_during(lambda: lumen.gaussian_blur(src, 2.0, out=out))
    assert peak <= tol.PY_PEAK_OUTPUTS_WITH_OUT * out_bytes, (
        f"{kind} with out=: traced peak {peak / 2**20:.1f} MiB")
