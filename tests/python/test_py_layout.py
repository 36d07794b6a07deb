"""layout= for the image ops (docs/python.md, "Layouts"): channel-first arrays and torch tensors
are filtered per channel when the layout says so, the result keeps the input's layout, and an
array that looks channels-first without layout= is refused instead of being filtered across
the wrong axes (issue 12, item 2: an impulse in channel 0 spread into every channel).
"""

import numpy as np
import pytest
import torch

import lumen
from lumen import _lumen

H, W = 19, 27
K = np.array([[0, 1, 0], [1, 4, 1], [0, 1, 0]], np.float32) / 8
KS = np.array([0.25, 0.5, 0.25], np.float32)

#: Each image op with a call that blurs across both axes.
OPS = {
    "filter2d": lambda s, **kw: lumen.filter2d(s, K, **kw),
    "sep_filter2d": lambda s, **kw: lumen.sep_filter2d(s, KS, KS, **kw),
    "gaussian_blur": lambda s, **kw: lumen.gaussian_blur(s, 1.5, **kw),
    "box_blur": lambda s, **kw: lumen.box_blur(s, 3, **kw),
}
GENERIC = {
    "filter2d": lambda s, **kw: _lumen._op_call("filter2d", s, K, **kw),
    "sep_filter2d": lambda s, **kw: _lumen._op_call("sep_filter2d", s, KS, KS, **kw),
    "gaussian_blur": lambda s, **kw: _lumen._op_call("gaussian_blur", s, 1.5, **kw),
    "box_blur": lambda s, **kw: _lumen._op_call("box_blur", s, 3, **kw),
}


def impulse_chw(c=3, n=None):
    a = np.zeros((c, H, W), np.float32)
    a[0, H // 2, W // 2] = 1.0
    return a if n is None else np.stack([a] * n)


# ---- channels-first, said with layout= ---------------------------------------------------------


@pytest.mark.parametrize("binding", ["hand", "generic"])
@pytest.mark.parametrize("op", list(OPS))
def test_chw_impulse_stays_in_its_channel(op, binding):
    """The issue's case: an impulse in channel 0 of a C x H x W image blurs channel 0 only."""
    fn = (OPS if binding == "hand" else GENERIC)[op]
    a = impulse_chw()
    got = fn(a, layout="chw")
    assert got.shape == a.shape and got.dtype == np.float32
    assert not got[1:].any(), "the impulse leaked into other channels"
    assert got[0].sum() == pytest.approx(1.0, rel=1e-5) and got[0].max() < 1.0
    # The same numbers as filtering the channels-last transpose, bit for bit.
    want = fn(np.ascontiguousarray(a.transpose(1, 2, 0))).transpose(2, 0, 1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("binding", ["hand", "generic"])
@pytest.mark.parametrize("op", list(OPS))
def test_nchw_batch(op, binding):
    fn = (OPS if binding == "hand" else GENERIC)[op]
    rng = np.random.default_rng(5)
    a = rng.random((2, 3, H, W), dtype=np.float32)
    got = fn(a, layout="nchw")
    assert got.shape == a.shape
    want = fn(np.ascontiguousarray(a.transpose(0, 2, 3, 1)), layout="nhwc").transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(got, want)
    one = fn(impulse_chw(n=1), layout="nchw")
    assert one.shape == (1, 3, H, W) and not one[0, 1:].any()


@pytest.mark.parametrize("layout,shape", [("hw", (H, W)), ("hwc", (H, W, 3)),
                                          ("nhwc", (2, H, W, 3))])
def test_explicit_default_layouts_change_nothing(layout, shape):
    a = np.random.default_rng(1).random(shape, dtype=np.float32)
    np.testing.assert_array_equal(lumen.gaussian_blur(a, 1.2, layout=layout),
                                  lumen.gaussian_blur(a, 1.2))


def test_chw_out_in_place_and_views():
    """out= is read in the same layout; views of any strides are used in place."""
    base = np.random.default_rng(2).random((H, W, 3), dtype=np.float32)
    chw = base.transpose(2, 0, 1)                 # a C x H x W view of HWC memory
    want = lumen.box_blur(base, 5).transpose(2, 0, 1)
    out = np.zeros((3, H, W), np.float32)
    assert lumen.box_blur(chw, 5, layout="chw", out=out) is out
    np.testing.assert_array_equal(out, want)
    assert lumen.last_run()["src_ptr"] == base.ctypes.data, "the view was copied"
    a = np.ascontiguousarray(chw)
    lumen.box_blur(a, 5, layout="chw", out=a)     # in place
    np.testing.assert_array_equal(a, want)
    with pytest.raises(ValueError, match="out"):
        lumen.box_blur(chw, 5, layout="chw", out=np.zeros((H, W, 3), np.float32))


def test_torch_nchw_tensor_in_place():
    t = torch.from_numpy(impulse_chw(n=2))
    got = lumen.gaussian_blur(t, 1.0, layout="nchw")
    assert lumen.last_run()["src_ptr"] == t.data_ptr()
    assert got.shape == (2, 3, H, W) and not got[:, 1:].any()
    out = torch.zeros(2, 3, H, W)
    assert lumen.gaussian_blur(t, 1.0, layout="nchw", out=out) is out
    np.testing.assert_array_equal(out.numpy(), got)


def test_chw_with_dtype_and_u8():
    a = (impulse_chw() * 255).astype(np.uint8)
    got = lumen.gaussian_blur(a, 1.0, layout="chw", dtype=np.float32)
    assert got.dtype == np.float32 and not got[1:].any()


# ---- the ambiguous case: refused, with a message that says what to pass ---------------------


AMBIGUOUS = [(3, H, W), (1, H, W), (4, H, W), (1, 3, H, W), (2, 4, H, W), (5, 1, H, W)]


@pytest.mark.parametrize("shape", AMBIGUOUS, ids=str)
@pytest.mark.parametrize("op", list(OPS))
def test_channels_first_looking_shape_refused(op, shape):
    a = np.zeros(shape, np.float32)
    for fn in (OPS[op], GENERIC[op]):
        with pytest.raises(lumen.ArgumentError) as e:
            fn(a)
        msg = str(e.value)
        assert msg.startswith("src:") and "layout=" in msg, msg
        assert ("'chw'" if len(shape) == 3 else "'nchw'") in msg, msg


@pytest.mark.parametrize("shape", [(H, W, 3), (H, W, 4), (H, W, 1), (3, 4, 3), (3, 4, 4),
                                   (2, H, W, 3), (1, H, W, 4), (H, W, 8), (8, H, W)], ids=str)
def test_channels_last_shapes_still_taken(shape):
    """Shapes whose last axis is a plausible channel count, or whose leading axis is not one,
    keep the default reading (the existing behaviour)."""
    a = np.random.default_rng(0).random(shape, dtype=np.float32)
    assert lumen.box_blur(a, 3).shape == shape


@pytest.mark.parametrize("shape", [(3, H, W), (H, W, 8), (1, 3, H, W), (2, H, W, 16)], ids=str)
def test_torch_channels_first_tensor_refused(shape):
    """torch stores images channels-first: a 3-D/4-D tensor whose last axis is too long for
    colour channels (or whose shape looks channels-first) needs layout=."""
    t = torch.zeros(shape)
    with pytest.raises(lumen.ArgumentError, match="torch tensor.*layout="):
        lumen.gaussian_blur(t, 1.0)
    explicit = "chw" if len(shape) == 3 and shape[0] == 3 else (
        "nchw" if len(shape) == 4 and shape[1] == 3 else ("hwc" if len(shape) == 3 else "nhwc"))
    assert lumen.gaussian_blur(t, 1.0, layout=explicit).shape == shape


def test_torch_channels_last_tensor_taken():
    t = torch.rand(H, W, 3)
    np.testing.assert_array_equal(lumen.gaussian_blur(t, 1.0),
                                  lumen.gaussian_blur(t.numpy().copy(), 1.0))


# ---- bad layout arguments --------------------------------------------------------------------


@pytest.mark.parametrize("op", list(OPS))
def test_layout_errors(op):
    for fn in (OPS[op], GENERIC[op]):
        with pytest.raises(lumen.ArgumentError, match="layout='chw' needs 3 dimensions"):
            fn(np.zeros((H, W), np.float32), layout="chw")
        with pytest.raises(lumen.ArgumentError, match="layout: unknown layout 'CHW'"):
            fn(np.zeros((3, H, W), np.float32), layout="CHW")
        with pytest.raises(TypeError, match="layout"):
            fn(np.zeros((3, H, W), np.float32), layout=3)


def test_conv_takes_no_layout():
    """conv2d's tensors are N x C x H x W by definition: no layout= there."""
    with pytest.raises(TypeError, match="layout"):
        lumen.conv2d(np.zeros((1, 3, 8, 8), np.float32), np.zeros((2, 3, 3, 3), np.float32),
                     layout="nchw")
