"""lumen.conv2d / lumen.conv_transpose2d against torch.nn.functional (torch 1.13, CPU).

Reference: torch in float64 on the very same float32 data (so only lumen's accumulation error
is measured), and torch's own float32 result within a looser bound (tolerances.py, CONV_*).
Arguments follow torch's names, order and int-or-pair rules; every combination torch rejects
must raise ValueError (or TypeError for types) with a message naming the argument.
"""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lumen
from conftest import rng_for
from tolerances import CONV_REL_F64, CONV_REL_TORCH_F32

torch.set_num_threads(1)

# torch's own note on padding='same' with an even extent (it pads a copy; lumen does not).
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


# ---- helpers ----------------------------------------------------------------------------------


def rand(key, shape):
    return rng_for("conv", key, shape).uniform(-1.0, 1.0, shape).astype(np.float32)


def ptr(a):
    return a.__array_interface__["data"][0]


def as_torch(a, dtype):
    if a is None:
        return None
    if isinstance(a, torch.Tensor):
        return a.detach().to(dtype)
    return torch.from_numpy(np.array(a, dtype=np.float32)).to(dtype)


def torch_ref(transposed, x, w, b, **kw):
    """(float64 result, float32 result) of torch on the same data."""
    fn = F.conv_transpose2d if transposed else F.conv2d
    r64 = fn(as_torch(x, torch.float64), as_torch(w, torch.float64), as_torch(b, torch.float64),
             **kw).numpy()
    r32 = fn(as_torch(x, torch.float32), as_torch(w, torch.float32), as_torch(b, torch.float32),
             **kw).numpy()
    return r64, r32


def lumen_op(transposed):
    return lumen.conv_transpose2d if transposed else lumen.conv2d


def assert_close(got, r64, r32, what=""):
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{what}: dtype {got.dtype}"
    assert got.shape == r64.shape, f"{what}: shape {got.shape} != torch {r64.shape}"
    scale = max(float(np.abs(r64).max()), 1e-30)
    e64 = float(np.abs(got.astype(np.float64) - r64).max()) / scale
    e32 = float(np.abs(got.astype(np.float64) - r32.astype(np.float64)).max()) / scale
    assert e64 <= CONV_REL_F64, f"{what}: max|lumen - torch f64| / max|ref| = {e64:.3g}"
    assert e32 <= CONV_REL_TORCH_F32, f"{what}: max|lumen - torch f32| / max|ref| = {e32:.3g}"


def check(transposed, x, w, b=None, **kw):
    """Runs lumen and torch on the same arrays; both must succeed and agree, or both refuse."""
    try:
        r64, r32 = torch_ref(transposed, x, w, b, **kw)
    except RuntimeError as e:
        with pytest.raises(ValueError):
            lumen_op(transposed)(x, w, b, **kw)
        return str(e)
    got = lumen_op(transposed)(x, w, b, **kw)
    assert isinstance(got, np.ndarray)
    assert_close(got, r64, r32, f"{'conv_transpose2d' if transposed else 'conv2d'} {kw}")
    return got


# ---- the grid ---------------------------------------------------------------------------------

KERNELS = {"k1": (1, 1), "k3": (3, 3), "k5": (5, 5), "k7": (7, 7), "k3x5": (3, 5)}
C, K = 4, 8   # groups 1, 2 and C = 4 divide both


def with_bias(key):
    return bool(rng_for("bias?", key).integers(2))


def grid_case(key, transposed, kernel, batch, groups):
    g = C if groups == "C" else int(groups)
    kh, kw = KERNELS[kernel]
    h, w = (13, 15) if batch == 1 else (9, 14)   # odd and non-square
    x = rand(key + ("x",), (batch, C, h, w))
    wshape = (C, K // g, kh, kw) if transposed else (K, C // g, kh, kw)
    wt = rand(key + ("w",), wshape)
    b = rand(key + ("b",), (K,)) if with_bias(key) else None
    return x, wt, b, g


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("groups", ["1", "2", "C"])
@pytest.mark.parametrize("dilation", [1, 2])
@pytest.mark.parametrize("padding", [0, 1, 3])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_conv2d_grid(kernel, stride, padding, dilation, groups, batch):
    key = (kernel, stride, padding, dilation, groups, batch)
    x, w, b, g = grid_case(key, False, kernel, batch, groups)
    check(False, x, w, b, stride=stride, padding=padding, dilation=dilation, groups=g)


@pytest.mark.parametrize("output_padding", [0, 1])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("groups", ["1", "2", "C"])
@pytest.mark.parametrize("dilation", [1, 2])
@pytest.mark.parametrize("padding", [0, 1, 3])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_conv_transpose2d_grid(kernel, stride, padding, dilation, groups, batch,
                               output_padding):
    key = ("t", kernel, stride, padding, dilation, groups, batch, output_padding)
    x, w, b, g = grid_case(key, True, kernel, batch, groups)
    check(True, x, w, b, stride=stride, padding=padding, dilation=dilation, groups=g,
          output_padding=output_padding)


def test_grid_bias_both_ways():
    """The grid's bias choice (by hash of the case) covers both None and given."""
    keys = list(itertools.product(KERNELS, [1, 2], [0, 1, 3], [1, 2], ["1", "2", "C"], [1, 3]))
    assert 0.2 < np.mean([with_bias(k) for k in keys]) < 0.8


STANDARD = {  # (kernel, stride, padding)
    "k3_s1_p0": (3, 1, 0), "k3_s1_p1": (3, 1, 1), "k3_s2_p1": (3, 2, 1),
    "k1_s1_p0": (1, 1, 0), "k1_s2_p0": (1, 2, 0), "k7_s2_p3": (7, 2, 3),
}


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
@pytest.mark.parametrize("case", list(STANDARD))
def test_standard_cases(case, transposed, bias):
    k, s, p = STANDARD[case]
    n, c, kk, h, w = 2, 8, 16, 17, 19
    x = rand((case, "x"), (n, c, h, w))
    wt = rand((case, "w", transposed), (c, kk, k, k) if transposed else (kk, c, k, k))
    b = rand((case, "b"), (kk,)) if bias else None
    kw = dict(stride=s, padding=p)
    if transposed and s > 1:
        kw["output_padding"] = 1
    check(transposed, x, wt, b, **kw)


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_asymmetric_parameters(transposed):
    x = rand("asym", (2, 6, 11, 8))
    w = rand(("asym", transposed), (6, 2, 3, 5) if transposed else (4, 3, 3, 5))
    kw = dict(stride=(2, 1), padding=(2, 0), dilation=(1, 2), groups=2)
    if transposed:
        kw["output_padding"] = (1, 0)
    check(transposed, x, w, rand("asymb", (4,)), **kw)


def test_pair_forms():
    x, w = rand("pf", (1, 2, 10, 9)), rand("pfw", (3, 2, 3, 3))
    base = lumen.conv2d(x, w, stride=(2, 2), padding=(1, 1), dilation=(1, 1))
    for kw in (dict(stride=2, padding=1), dict(stride=[2, 2], padding=[1, 1]),
               dict(stride=(2,), padding=(1,), dilation=(1,)),
               dict(stride=np.int64(2), padding=torch.Size([1, 1]))):
        np.testing.assert_array_equal(lumen.conv2d(x, w, **kw), base, err_msg=str(kw))


def test_bias_positional_and_forms():
    x, w = rand("bp", (2, 3, 6, 7)), rand("bpw", (4, 3, 3, 3))
    b = rand("bpb", (4,))
    ref = lumen.conv2d(x, w, b)
    np.testing.assert_array_equal(lumen.conv2d(x, w, bias=b), ref)
    for other in (b.astype(np.float64), b.tolist(), torch.from_numpy(b)):
        np.testing.assert_array_equal(lumen.conv2d(x, w, other), ref)
    r64, r32 = torch_ref(False, x, w, b)
    assert_close(ref, r64, r32)
    with pytest.raises(TypeError):
        lumen.conv2d(x, w, None, 2)   # stride and the rest are keyword-only


# ---- padding strings (conv2d only, as torch) -------------------------------------------------


@pytest.mark.parametrize("kernel,dilation", [((3, 3), 1), ((5, 3), 2), ((2, 4), 1), ((3, 4), 1),
                                             ((2, 2), 2), ((4, 1), 3), ((1, 1), 1)])
def test_padding_same(kernel, dilation):
    x = rand(("same", kernel), (2, 4, 9, 10))
    w = rand(("samew", kernel), (6, 2, *kernel))
    got = check(False, x, w, rand("sameb", (6,)), padding="same", dilation=dilation, groups=2)
    assert got.shape[2:] == x.shape[2:]


def test_padding_same_into_out():
    """Asymmetric 'same' (even extent) written into a strided out=."""
    x, w = rand("so", (1, 3, 7, 8)), rand("sow", (2, 3, 2, 4))
    big = np.full((1, 2, 7, 16), np.nan, np.float32)
    out = big[:, :, :, ::2]
    r = lumen.conv2d(x, w, padding="same", out=out)
    assert r is out and np.isnan(big[..., 1::2]).all()
    r64, r32 = torch_ref(False, x, w, None, padding="same")
    assert_close(out, r64, r32)
    assert lumen.last_run()["dst_ptr"] == ptr(out)


def test_padding_valid():
    x, w = rand("v", (1, 2, 9, 8)), rand("vw", (3, 2, 3, 3))
    check(False, x, w, padding="valid", stride=2)
    np.testing.assert_array_equal(lumen.conv2d(x, w, padding="valid"), lumen.conv2d(x, w))


def test_padding_same_strided_refused():
    x, w = rand("s2", (1, 2, 9, 8)), rand("s2w", (3, 2, 3, 3))
    with pytest.raises(RuntimeError):
        F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding="same", stride=2)
    with pytest.raises(ValueError, match="padding"):
        lumen.conv2d(x, w, padding="same", stride=(1, 2))
    with pytest.raises(ValueError, match="padding"):
        lumen.conv2d(x, w, padding="Same")
    with pytest.raises(TypeError, match="padding"):
        lumen.conv_transpose2d(x, rand("s2t", (2, 3, 3, 3)), padding="same")


# ---- strides, views, DLPack, out= -------------------------------------------------------------


def strided_views(key, shape):
    """x-shaped (N, C, H, W) views of several layouts; all share one value set."""
    n, c, h, w = shape
    base = rand(key, shape)
    big = np.zeros((n, 2 * c, h + 3, 2 * w + 1), np.float32)
    big[:, ::2, 1:h + 1, 1:2 * w + 1:2] = base
    nhwc = np.ascontiguousarray(base.transpose(0, 2, 3, 1))
    flipped = np.ascontiguousarray(base[:, :, ::-1, ::-1])
    return base, {
        "contiguous": base,
        "sliced": big[:, ::2, 1:h + 1, 1:2 * w + 1:2],
        "channels_last": nhwc.transpose(0, 3, 1, 2),
        "negative": flipped[:, :, ::-1, ::-1],
        "fortran": np.asfortranarray(base),
    }


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
@pytest.mark.parametrize("layout", ["contiguous", "sliced", "channels_last", "negative",
                                    "fortran"])
def test_noncontiguous_x_and_weight(layout, transposed):
    base, views = strided_views("nc", (2, 4, 9, 11))
    x = views[layout]
    np.testing.assert_array_equal(x, base)
    wbase, wviews = strided_views(("ncw", transposed), (4, 2, 3, 5))
    w = wviews[layout]
    kw = dict(stride=2, padding=1, groups=2)
    if transposed:
        kw["output_padding"] = 1
    got = lumen_op(transposed)(x, w, **kw)
    assert lumen.last_run()["src_ptr"] == ptr(x), "x was copied"
    r64, r32 = torch_ref(transposed, base, wbase, None, **kw)
    assert_close(got, r64, r32, layout)


@pytest.mark.parametrize("layout", ["contiguous", "sliced", "channels_last", "negative"])
def test_out(layout):
    x, w, b = rand("o", (2, 3, 8, 9)), rand("ow", (4, 3, 3, 3)), rand("ob", (4,))
    want = lumen.conv2d(x, w, b, padding=1)
    _, views = strided_views(("out", layout), want.shape)
    out = views[layout]
    out[...] = np.nan
    r = lumen.conv2d(x, w, b, padding=1, out=out)
    assert r is out
    assert lumen.last_run()["dst_ptr"] == ptr(out)
    np.testing.assert_array_equal(out, want)


def test_out_transposed():
    x, w = rand("ot", (1, 4, 5, 6)), rand("otw", (4, 3, 3, 3))
    out = np.empty((1, 3, 12, 14), np.float32)
    assert lumen.conv_transpose2d(x, w, stride=2, output_padding=(1, 1), out=out) is out
    r64, r32 = torch_ref(True, x, w, None, stride=2, output_padding=1)
    assert_close(out, r64, r32)


def test_torch_tensors_zero_copy():
    x = torch.from_numpy(rand("t", (2, 4, 10, 12)))
    w = torch.from_numpy(rand("tw", (6, 2, 3, 3)))
    b = torch.from_numpy(rand("tb", (6,)))
    got = lumen.conv2d(x, w, b, stride=(1, 2), padding=1, groups=2)
    assert lumen.last_run()["src_ptr"] == x.data_ptr(), "the torch tensor was copied"
    r64, r32 = torch_ref(False, x, w, b, stride=(1, 2), padding=1, groups=2)
    assert_close(got, r64, r32)
    # channels_last memory and a channel slice, into a torch out=
    xc = x.to(memory_format=torch.channels_last)
    out = torch.empty(2, 6, 10, 6).to(memory_format=torch.channels_last)
    r = lumen.conv2d(xc, w, b, stride=(1, 2), padding=1, groups=2, out=out)
    assert r is out
    assert lumen.last_run()["src_ptr"] == xc.data_ptr()
    assert lumen.last_run()["dst_ptr"] == out.data_ptr()
    assert_close(out.numpy(), r64, r32, "channels_last")
    xs = x[:, 1:3]
    got = lumen.conv_transpose2d(xs, torch.from_numpy(rand("tt", (2, 3, 3, 3))), stride=2)
    assert lumen.last_run()["src_ptr"] == xs.data_ptr()
    r64, r32 = torch_ref(True, xs, torch.from_numpy(rand("tt", (2, 3, 3, 3))), None, stride=2)
    assert_close(got, r64, r32, "sliced torch")


def test_torch_requires_grad_passes_torch_error():
    x = torch.from_numpy(rand("g", (1, 2, 5, 5))).requires_grad_()
    with pytest.raises(RuntimeError, match="detach"):
        lumen.conv2d(x, rand("gw", (1, 2, 3, 3)))


def test_context_and_last_run():
    x, w = rand("c", (1, 2, 6, 6)), rand("cw", (2, 2, 3, 3))
    ctx = lumen.Context(threads=1)
    got = lumen.conv2d(x, w, context=ctx)
    run = lumen.last_run()
    assert run["src_ptr"] == ptr(x) and run["dst_ptr"] == ptr(got)
    assert run["algo"] in ("im2col+sgemm", "winograd-f2x2", "winograd-f4x4", "direct",
                           "reference")
    np.testing.assert_array_equal(got, lumen.conv2d(x, w))
    with pytest.raises(TypeError, match="context"):
        lumen.conv2d(x, w, context="cpu")


# ---- output shapes ----------------------------------------------------------------------------


def shape_cases(transposed, count=150):
    rng = np.random.default_rng(6 + transposed)
    for _ in range(count):
        h, w = rng.integers(1, 13, 2)
        r, s = rng.integers(1, 6, 2)
        yield dict(size=(int(h), int(w)), kernel=(int(r), int(s)),
                   stride=tuple(int(v) for v in rng.integers(1, 4, 2)),
                   padding=tuple(int(v) for v in rng.integers(0, 4, 2)),
                   dilation=tuple(int(v) for v in rng.integers(1, 4, 2)),
                   output_padding=tuple(int(v) for v in rng.integers(0, 3, 2)))


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_output_shapes_match_torch(transposed):
    agreed = refused = 0
    for case in shape_cases(transposed):
        x = np.zeros((1, 2, *case["size"]), np.float32)
        w = np.zeros(((2, 3) if transposed else (3, 2)) + case["kernel"], np.float32)
        kw = {k: case[k] for k in ("stride", "padding", "dilation")}
        if transposed:
            kw["output_padding"] = case["output_padding"]
        fn = F.conv_transpose2d if transposed else F.conv2d
        try:
            want = tuple(fn(torch.from_numpy(x), torch.from_numpy(w), **kw).shape)
        except RuntimeError:
            with pytest.raises(ValueError):
                lumen_op(transposed)(x, w, **kw)
            refused += 1
            continue
        got = lumen_op(transposed)(x, w, **kw)
        assert got.shape == want, f"{case}: lumen {got.shape} != torch {want}"
        agreed += 1
    assert agreed > 30 and refused > 10, (agreed, refused)


# ---- errors: what torch refuses ---------------------------------------------------------------

X = rand("ex", (2, 4, 6, 7))
W = rand("ew", (6, 2, 3, 3))      # conv2d, groups 2
WT = rand("ewt", (4, 3, 3, 3))    # conv_transpose2d: K = 3 * groups

# (transposed, x, weight, kwargs, argument the message names)
TORCH_REFUSES = {
    "stride0": (False, X, W, dict(stride=0, groups=2), "stride"),
    "stride_neg_w": (False, X, W, dict(stride=(1, -1), groups=2), "stride"),
    "dilation0": (False, X, W, dict(dilation=0, groups=2), "dilation"),
    "dilation_neg_h": (False, X, W, dict(dilation=(-2, 1), groups=2), "dilation"),
    "padding_neg": (False, X, W, dict(padding=-1, groups=2), "padding"),
    "padding_neg_w": (False, X, W, dict(padding=(0, -2), groups=2), "padding"),
    "groups0": (False, X, W, dict(groups=0), "groups"),
    "groups_neg": (False, X, W, dict(groups=-2), "groups"),
    "groups_not_dividing_c": (False, X, rand("e3", (6, 1, 3, 3)), dict(groups=3), "groups"),
    "groups_not_dividing_k": (False, X, rand("e5", (5, 2, 3, 3)), dict(groups=2), "groups"),
    "weight_channels": (False, X, W, dict(groups=1), "weight"),
    "weight_channels_g": (False, X, rand("e6", (6, 3, 3, 3)), dict(groups=2), "weight"),
    "empty_output": (False, X, rand("e7", (6, 2, 7, 7)), dict(groups=2), "x"),
    "empty_output_dilated": (False, X, W, dict(groups=2, dilation=(1, 4)), "x"),
    "t_stride0": (True, X, WT, dict(stride=0), "stride"),
    "t_dilation0": (True, X, WT, dict(dilation=(1, 0)), "dilation"),
    "t_padding_neg": (True, X, WT, dict(padding=-1), "padding"),
    "t_groups0": (True, X, WT, dict(groups=0), "groups"),
    "t_groups_not_dividing_c": (True, X, WT, dict(groups=3), "groups"),
    "t_weight_channels": (True, X, rand("e8", (3, 3, 3, 3)), dict(), "weight"),
    "t_output_padding_eq_stride": (True, X, WT, dict(stride=2, output_padding=2),
                                   "output_padding"),
    "t_output_padding_stride1": (True, X, WT, dict(output_padding=1), "output_padding"),
    "t_output_padding_w": (True, X, WT, dict(stride=(2, 1), output_padding=(1, 1)),
                           "output_padding"),
    "t_output_padding_dilation": (True, X, WT, dict(dilation=2, output_padding=2),
                                  "output_padding"),
    "t_output_padding_neg": (True, X, WT, dict(stride=2, output_padding=-1), "output_padding"),
    "t_empty_output": (True, X, WT, dict(padding=5), "x"),
    "x_5d": (False, X[None], W, dict(groups=2), "x"),
    "weight_3d": (False, X, W[0], dict(groups=2), "weight"),
    "weight_5d": (False, X, W[None], dict(groups=2), "weight"),
    "t_x_2d": (True, X[0, 0], WT, dict(), "x"),
}


@pytest.mark.parametrize("case", list(TORCH_REFUSES))
def test_refused_like_torch(case):
    transposed, x, w, kw, name = TORCH_REFUSES[case]
    fn = F.conv_transpose2d if transposed else F.conv2d
    with pytest.raises(RuntimeError):
        fn(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(w), **kw)
    with pytest.raises(ValueError) as e:
        lumen_op(transposed)(x, w, **kw)
    msg = str(e.value)
    assert msg.startswith(name), f"{case}: message does not name {name!r}: {msg}"


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_unbatched_input_like_torch(transposed):
    """torch reads a (C, H, W) input as one unbatched image and returns (K, P, Q)."""
    x = rand("unbatched", (4, 9, 7))
    w = WT if transposed else W
    got = check(transposed, x, w, rand("ub_bias", (w.shape[1] * 2 if transposed else 6,)),
                stride=2, padding=1, groups=2)
    assert got.ndim == 3
    out = np.full(got.shape, np.nan, np.float32)
    assert lumen_op(transposed)(x, w, stride=2, padding=1, groups=2, out=out) is out
    np.testing.assert_array_equal(out, lumen_op(transposed)(x, w, stride=2, padding=1, groups=2))


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_empty_batch_like_torch(transposed):
    """A batch of 0 images gives torch's empty (0, K, P, Q) result after the same checks."""
    x, w = np.zeros((0, 4, 9, 7), np.float32), WT if transposed else W
    fn = F.conv_transpose2d if transposed else F.conv2d
    want = fn(torch.from_numpy(x), torch.from_numpy(w), stride=2, groups=2).shape
    got = lumen_op(transposed)(x, w, stride=2, groups=2)
    assert isinstance(got, np.ndarray) and got.shape == tuple(want) and got.dtype == np.float32
    out = np.empty(tuple(want), np.float32)
    assert lumen_op(transposed)(x, w, stride=2, groups=2, out=out) is out
    with pytest.raises(ValueError, match="^out"):
        lumen_op(transposed)(x, w, stride=2, groups=2, out=np.empty((0, 1, 1, 1), np.float32))
    with pytest.raises(ValueError, match="^groups"):
        lumen_op(transposed)(x, w, groups=3)
    with pytest.raises(RuntimeError):
        fn(torch.from_numpy(x), torch.from_numpy(w), groups=3)


def test_output_padding_limit_is_max_of_stride_and_dilation():
    """output_padding < max(stride, dilation): stride 1, dilation 3 allows 2 (torch agrees)."""
    x = rand("opd", (1, 4, 5, 5))
    check(True, x, WT, stride=1, dilation=3, output_padding=2)
    check(True, x, WT, stride=3, dilation=1, output_padding=(2, 1))


@pytest.mark.parametrize("what", ["x", "weight", "out"])
@pytest.mark.parametrize("dtype", [np.float64, np.uint8, np.int32])  # float16: test_py_half.py
def test_dtype_refused(what, dtype):
    x, w, out = X, W, np.zeros((2, 6, 4, 5), np.float32)
    args = {"x": x, "weight": w, "out": out}
    args[what] = args[what].astype(dtype)
    with pytest.raises(TypeError, match=f"^{what}"):
        lumen.conv2d(args["x"], args["weight"], groups=2, out=args["out"])


def test_torch_dtype_refused():
    with pytest.raises(TypeError, match="^x"):
        lumen.conv2d(torch.from_numpy(X).double(), W, groups=2)
    with pytest.raises(TypeError, match="^weight"):
        lumen.conv2d(X, torch.from_numpy(W).to(torch.int16), groups=2)


@pytest.mark.parametrize("bias,exc", [
    (np.zeros(5, np.float32), ValueError), (np.zeros((6, 1), np.float32), ValueError),
    (np.zeros(7), ValueError), (1.0, ValueError), (np.zeros(6, np.complex64), TypeError),
    (np.array(["a"] * 6), TypeError), (np.zeros(6, bool), TypeError),
], ids=["short", "2d", "long", "scalar", "complex", "str", "bool"])
def test_bias_refused(bias, exc):
    with pytest.raises(exc, match="^bias"):
        lumen.conv2d(X, W, bias, groups=2)
    with pytest.raises(exc, match="^bias"):
        lumen.conv_transpose2d(X, WT, bias, groups=2)   # K = 3 * 2 = 6 as well


@pytest.mark.parametrize("kw,exc,name", [
    (dict(stride=1.5), TypeError, "stride"), (dict(stride=True), TypeError, "stride"),
    (dict(stride=(1, 2, 3)), ValueError, "stride"), (dict(stride=()), ValueError, "stride"),
    (dict(padding=(1, "a")), TypeError, "padding"), (dict(dilation="2"), TypeError, "dilation"),
    (dict(groups=(2,)), TypeError, "groups"), (dict(groups=2.0), TypeError, "groups"),
    (dict(padding="full"), ValueError, "padding"),
])
def test_argument_types(kw, exc, name):
    kw.setdefault("groups", 2)
    with pytest.raises(exc, match=f"^{name}"):
        lumen.conv2d(X, W, **kw)


def test_output_padding_not_for_conv2d():
    with pytest.raises(TypeError):
        lumen.conv2d(X, W, groups=2, output_padding=1)


def test_out_refused():
    x, w = X, W
    with pytest.raises(ValueError, match="^out"):
        lumen.conv2d(x, w, groups=2, out=np.zeros((2, 6, 4, 6), np.float32))
    with pytest.raises(ValueError, match="^out"):
        lumen.conv2d(x, w, groups=2, out=np.zeros((6, 4, 5), np.float32))
    ro = np.zeros((2, 6, 4, 5), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="^out"):
        lumen.conv2d(x, w, groups=2, out=ro)
    with pytest.raises(ValueError, match="^out"):   # a broadcast view
        lumen.conv2d(x, w, groups=2, out=np.broadcast_to(np.float32(0), (2, 6, 4, 5)))
    buf = np.zeros((2, 6, 6, 7), np.float32)    # out overlapping x
    with pytest.raises(ValueError, match="^out"):
        lumen.conv2d(buf[:, :4], w, groups=2, out=buf[:, :, :4, :5])


def test_not_an_array():
    with pytest.raises(TypeError, match="^out"):
        lumen.conv2d(X, W, groups=2, out=[[0.0]])
    with pytest.raises(TypeError, match="^x"):   # nested lists become float64 arrays
        lumen.conv2d(X.tolist(), W, groups=2)
    got = lumen.conv2d(np.asarray(X.tolist(), np.float32), W, groups=2)
    np.testing.assert_array_equal(got, lumen.conv2d(X, W, groups=2))
