"""DLPack: any object with __dlpack__ / __dlpack_device__ is an image or out= without a copy
(docs/python.md, "DLPack"); results are NumPy arrays that torch.from_dlpack shares.
"""

import numpy as np
import pytest
import torch

import lumen
from conftest import make_image, rng_for

H, W = 23, 31


class DLOnly:
    """Exposes nothing but the DLPack protocol of a numpy array (no buffer, no
    __array_interface__), so lumen must take the DLPack path."""

    def __init__(self, a, device=None):
        self._a = a
        self._device = device
        self.exported = 0

    def __dlpack__(self, stream=None):
        self.exported += 1
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._device if self._device is not None else self._a.__dlpack_device__()


def ptr(a):
    return a.__array_interface__["data"][0]


def blur(src, **kw):
    return lumen.gaussian_blur(src, 1.5, border="reflect101", **kw)


def np_image(dtype=np.float32, shape=(H, W, 3), key="dl"):
    return make_image(rng_for(key, np.dtype(dtype).name, shape), shape, dtype)


# ---- numpy through the protocol only ---------------------------------------------------------


@pytest.mark.parametrize("view", ["contiguous", "strided", "negative", "hw"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.uint16])
def test_numpy_via_dlpack_only(dtype, view):
    a = np_image(dtype, (2 * H, 2 * W, 3))
    v = {"contiguous": np.ascontiguousarray(a[:H, :W]), "strided": a[::2, ::2],
         "negative": a[::-2, ::-2], "hw": a[:H, :W, 1]}[view]
    src = DLOnly(v)
    got = blur(src)
    assert src.exported >= 1, "__dlpack__ was not used"
    assert isinstance(got, np.ndarray) and got.dtype == dtype and got.shape == v.shape
    assert lumen.last_run()["src_ptr"] == ptr(v), "the DLPack source was copied"
    np.testing.assert_array_equal(got, blur(np.ascontiguousarray(v)))


def test_numpy_dlpack_out():
    a = np_image()
    out = np.zeros_like(a)
    dl_out = DLOnly(out)
    r = blur(a, out=dl_out)
    assert r is dl_out, "out= must be returned as given"
    assert lumen.last_run()["dst_ptr"] == ptr(out)
    np.testing.assert_array_equal(out, blur(a))


# ---- torch CPU tensors -----------------------------------------------------------------------


def _tensor(kind, dtype):
    base = torch.from_numpy(np_image(dtype, (2 * H, 2 * W, 3), key="torch"))
    if kind == "contiguous":
        return base[:H, :W].contiguous()
    if kind == "sliced":
        return base[3:3 + H, 5:5 + W]
    if kind == "stepped":
        return base[::2, 1::2]
    if kind == "transposed":
        return base[:W, :H].transpose(0, 1)
    if kind == "channel":
        return base[:H, :W, 1]
    if kind == "nchw-permuted":   # an NCHW batch seen as NHWC: the ML layout, in place
        x = base[:H, :W].permute(2, 0, 1).contiguous().reshape(1, 3, H, W)
        return x.permute(0, 2, 3, 1)
    raise AssertionError(kind)


TORCH_KINDS = ["contiguous", "sliced", "stepped", "transposed", "channel", "nchw-permuted"]


@pytest.mark.parametrize("kind", TORCH_KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_torch_input_zero_copy(dtype, kind):
    t = _tensor(kind, dtype)
    got = blur(t)
    assert lumen.last_run()["src_ptr"] == t.data_ptr(), f"{kind}: the tensor was copied"
    assert isinstance(got, np.ndarray), f"result is {type(got)}"
    assert got.shape == tuple(t.shape) and got.dtype == dtype
    np.testing.assert_array_equal(got, blur(t.numpy().copy()), err_msg=kind)
    # the result is a DLPack producer itself: torch sees the same memory
    back = torch.from_dlpack(got)
    assert back.data_ptr() == ptr(got)
    assert torch.equal(back, torch.from_numpy(got))


@pytest.mark.parametrize("kind", ["contiguous", "stepped", "nchw-permuted"])
def test_torch_out(kind):
    t = _tensor("contiguous", np.float32)
    if kind == "nchw-permuted":
        out = torch.zeros(1, 3, H, W).permute(0, 2, 3, 1)
        t = t.reshape(1, H, W, 3)
    elif kind == "stepped":
        out = torch.zeros(2 * H, 2 * W, 3)[::2, ::2]
    else:
        out = torch.zeros(H, W, 3)
    r = blur(t, out=out)
    assert r is out, "out= must be returned as given"
    assert lumen.last_run()["dst_ptr"] == out.data_ptr(), "out= tensor was not written in place"
    np.testing.assert_array_equal(out.numpy(), blur(t.numpy().copy()))


def test_torch_in_place():
    t = _tensor("contiguous", np.float32)
    want = blur(t.numpy().copy())
    r = blur(t, out=t)
    assert r is t
    np.testing.assert_array_equal(t.numpy(), want)


def test_torch_round_trip_chain():
    """tensor -> lumen -> numpy -> torch.from_dlpack -> lumen (out= the tensor view)."""
    t = _tensor("contiguous", np.float32)
    r1 = blur(t)
    t2 = torch.from_dlpack(r1)
    r2 = lumen.box_blur(t2, 3, out=t2)
    assert r2 is t2 and t2.data_ptr() == ptr(r1)
    np.testing.assert_array_equal(r1, lumen.box_blur(blur(t.numpy().copy()), 3))


# ---- refused: other devices, other dtypes --------------------------------------------------------


class FakeDevice:
    """Claims to live on another device; records whether anyone asked for its data."""

    def __init__(self, device_type, device_id=0):
        self.dev = (device_type, device_id)
        self.exported = 0
        self._a = np_image()

    def __dlpack__(self, stream=None):
        self.exported += 1
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self.dev


@pytest.mark.parametrize("dev,name", [((2, 0), "cuda:0"), ((2, 1), "cuda:1"),
                                      ((10, 0), "rocm"), ((4, 0), "opencl")],
                         ids=["cuda0", "cuda1", "rocm", "opencl"])
@pytest.mark.parametrize("role", ["src", "out"])
def test_other_device_refused(role, dev, name):
    if dev[0] == 2 and any(d["spec"] == name for d in lumen.devices()):
        pytest.skip(f"lumen has {name} here: arrays there are taken, not refused")
    fake = FakeDevice(*dev)
    src = np_image()
    with pytest.raises(ValueError) as e:
        if role == "src":
            blur(fake)
        else:
            blur(src, out=fake)
    msg = str(e.value)
    assert role in msg, f"message does not name {role}: {msg}"
    if dev[0] == 2:
        assert name in msg, f"message does not name the device {name}: {msg}"
    assert fake.exported == 0, "the data of a non-CPU array was exported (a copy in the making)"


# float16 and bfloat16 are taken (test_py_half.py)
@pytest.mark.parametrize("tdtype", [torch.float64, torch.int32, torch.int16, torch.bool,
                                    torch.int64, torch.int8, torch.complex64], ids=str)
def test_torch_unsupported_dtype(tdtype):
    t = torch.zeros(H, W, 3, dtype=tdtype)
    with pytest.raises(TypeError) as e:
        blur(t)
    assert "src" in str(e.value) and "dtype" in str(e.value), str(e.value)
    ok = torch.zeros(H, W, 3)
    with pytest.raises(TypeError) as e:
        blur(ok, out=torch.zeros(H, W, 3, dtype=tdtype))
    assert "out" in str(e.value), str(e.value)


def test_torch_requires_grad():
    """Not in the spec. torch refuses to export a tensor that requires grad through
    __dlpack__; lumen either works on the data (same answer as on the detached tensor, no
    copy) or raises an error that says what to do (detach)."""
    t = _tensor("contiguous", np.float32).requires_grad_(True)
    try:
        got = blur(t)
    except (TypeError, ValueError, RuntimeError, BufferError) as e:
        assert "grad" in str(e) or "detach" in str(e), f"unclear error for requires_grad: {e!r}"
        return
    np.testing.assert_array_equal(got, blur(t.detach().numpy().copy()))
    assert lumen.last_run()["src_ptr"] == t.data_ptr()


def test_torch_wrong_shape_out():
    with pytest.raises(ValueError) as e:
        blur(_tensor("contiguous", np.float32), out=torch.zeros(H, W + 1, 3))
    assert "out" in str(e.value)
