"""f16 and bf16 storage (docs/semantics.md, "Half precision"; issue 15, item 3): NumPy float16
arrays and torch float16/bfloat16 tensors in, the same dtype out; every op against a float64
reference on the same input values (the f32 bound plus the store's one rounding,
tolerances.half_atol); the half result is exactly lumen's f32 result rounded once; torch
tensors round-trip through DLPack; dtype= conversions; conv2d on half tensors.
"""

import numpy as np
import pytest
import torch

import half_cases as hc
import lumen
import tolerances as tol


def _compare(got, want64, dtype, f32_bound, what):
    got64 = hc.as_f64(got)
    assert got64.shape == want64.shape, what
    bound = tol.half_atol(want64, dtype, f32_bound)
    err = np.abs(got64 - want64)
    bad = err > bound
    if bad.any():
        i = np.unravel_index(int(np.argmax(err - bound)), err.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} elements outside; worst at {i}: got "
                             f"{got64[i]!r}, float64 {want64[i]!r}, bound {bound[i]:.3g}")


@pytest.mark.parametrize("dtype", hc.DTYPES)
@pytest.mark.parametrize("op", list(hc.IMAGE_OPS))
def test_image_op_against_float64(op, dtype):
    fn, ref, ksum, kind = hc.IMAGE_OPS[op]
    src = hc.store(hc.image_data(), dtype)
    got = fn(src)
    assert hc.dtype_of(got) == dtype, f"{op}: result dtype {hc.dtype_of(got)}"
    assert type(got) is type(src)  # NumPy in, NumPy out; a bf16 tensor in, a bf16 tensor out
    x64 = hc.as_f64(src)
    want = ref(x64)
    span = tol.data_span(x64)
    f32_bound = (tol.FAST_GAUSS_REL * span if kind == "fast" else
                 tol.F32_REL * span * max(1.0, ksum))
    _compare(got, want, dtype, f32_bound, f"{op} {dtype}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(hc.IMAGE_OPS))
def test_half_is_the_f32_result_rounded_once(op, dtype):
    """Accumulation in f32, one rounding to nearest even on store: bit for bit NumPy's and
    torch's own rounding of lumen's f32 result on the same values."""
    fn = hc.IMAGE_OPS[op][0]
    src = hc.store(hc.image_data(seed=11), dtype)
    got = fn(src)
    f32 = fn(np.ascontiguousarray(hc.as_f64(src), np.float32))
    if dtype == "bfloat16":
        assert torch.equal(got, torch.from_numpy(f32).to(torch.bfloat16))
    else:
        np.testing.assert_array_equal(got, f32.astype(np.float16))


@pytest.mark.parametrize("dtype", hc.DTYPES)
@pytest.mark.parametrize("op", list(hc.TENSOR_OPS))
def test_conv_against_float64(op, dtype):
    fn, ref, w64 = hc.TENSOR_OPS[op]
    x, w = hc.store(hc.tensor_data(), dtype), hc.store(w64, dtype)
    got = fn(x, w)
    assert hc.dtype_of(got) == dtype
    x64, wq64 = hc.as_f64(x), hc.as_f64(w)
    want = ref(x64, wq64)
    terms = ref(np.abs(x64), np.abs(wq64))  # sum |x * w| per output: conv's condition
    bound = tol.half_atol(want, dtype, 0.0) + 1e-6 * terms  # TS_CONV_REL, the C table's
    err = np.abs(hc.as_f64(got) - want)
    assert (err <= bound).all(), f"{op} {dtype}: worst {float((err - bound).max()):.3g} over"


def test_float16_nonfinite_and_overflow():
    src = np.ones((6, 9), np.float16)
    src[2, 3] = np.nan
    src[4, 7] = np.inf
    got = lumen.box_blur(src, 1)
    assert got.dtype == np.float16
    assert np.isnan(got[2, 3]) and got[4, 7] == np.inf
    # f32 values past 65504 overflow to inf in f16 (IEEE), bf16 keeps them
    big = np.full((4, 5), 70000.0, np.float32)
    assert np.isinf(lumen.box_blur(big, 3, dtype="float16")).all()
    out = torch.empty(4, 5, dtype=torch.bfloat16)
    lumen.box_blur(big, 3, out=out)
    assert (out == 70144.0).all()  # 70000 rounded to bf16's 8 bits


def test_torch_half_tensors_round_trip():
    """torch float16 and bfloat16 tensors in through DLPack, zero copy; bf16 comes back as a
    torch tensor (NumPy cannot hold it), f16 as a NumPy float16 array torch shares."""
    base = torch.from_numpy(hc.image_data(seed=3).astype(np.float32))
    for dt in (torch.float16, torch.bfloat16):
        t = base.to(dt)
        got = lumen.gaussian_blur(t, 1.5)
        back = got if isinstance(got, torch.Tensor) else torch.from_dlpack(got)
        assert back.dtype == dt and back.shape == t.shape
        want = lumen.gaussian_blur(t.float().numpy(), 1.5)
        assert torch.equal(back, torch.from_numpy(want).to(dt))
        # in place on the tensor's own memory
        t2 = t.clone()
        lumen.gaussian_blur(t2, 1.5, out=t2)
        assert torch.equal(t2, back)
    # channels-first torch images: layout='chw'
    chw = base.permute(2, 0, 1).to(torch.bfloat16)
    got = lumen.box_blur(chw, 3, layout="chw")
    want = lumen.box_blur(chw.float().numpy(), 3, layout="chw")
    assert torch.equal(got, torch.from_numpy(want).to(torch.bfloat16))


def test_dtype_conversions():
    u8 = np.random.default_rng(5).integers(0, 256, (16, 20, 3)).astype(np.uint8)
    f16 = lumen.gaussian_blur(u8, 1.2, dtype="float16")
    assert f16.dtype == np.float16
    f32 = lumen.gaussian_blur(u8, 1.2, dtype=np.float32)
    np.testing.assert_array_equal(f16, f32.astype(np.float16))
    back = lumen.gaussian_blur(f16, 1.2, dtype=np.uint8)
    assert back.dtype == np.uint8
    # bfloat16 results need somewhere to live: a bf16 input to make them like, or out=
    with pytest.raises(TypeError, match="bfloat16"):
        lumen.gaussian_blur(u8, 1.2, dtype="bfloat16")
    out = torch.empty(16, 20, 3, dtype=torch.bfloat16)
    lumen.gaussian_blur(u8, 1.2, out=out)
    assert torch.equal(out, torch.from_numpy(f32).to(torch.bfloat16))
    # torch's dtype objects are taken too; a bf16 input makes a bf16 result
    t = torch.from_numpy(f32).to(torch.bfloat16)
    assert lumen.gaussian_blur(t, 1.2, dtype=torch.bfloat16).dtype == torch.bfloat16
    assert lumen.gaussian_blur(t, 1.2, dtype=torch.float16).dtype == np.float16


def test_conv_float16_same_padding():
    """padding='same' with an even extent: the f32 result shifted, then rounded once."""
    x = hc.tensor_data().astype(np.float16)
    w = np.random.default_rng(2).standard_normal((3, 4, 2, 2)).astype(np.float16)
    got = lumen.conv2d(x, w, padding="same")
    want = lumen.conv2d(x.astype(np.float32), w.astype(np.float32), padding="same")
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want.astype(np.float16))


def test_npy_float16_files(tmp_path):
    a = hc.image_data(seed=9).astype(np.float16)
    p = tmp_path / "a.npy"
    np.save(p, a)
    img = lumen.read_image(str(p))
    assert img.dtype == np.float16
    np.testing.assert_array_equal(img, a)
    lumen.write_image(str(tmp_path / "b.npy"), lumen.box_blur(img, 3))
    b = np.load(tmp_path / "b.npy")
    assert b.dtype == np.float16
    np.testing.assert_array_equal(b, lumen.box_blur(a, 3))


def _vulkan_context():
    specs = [d["spec"] for d in lumen.devices()]
    if not any(s.startswith("vulkan") for s in specs):
        pytest.skip("no Vulkan device")
    return lumen.Context(device="vulkan", strict=True)


def test_vulkan_conversions_are_the_cpus():
    """The shaders' f16/bf16 loads and stores (shaders/common.glsl, integer steps) against the
    CPU's, bit for bit: a 1x1 box is a pure load and store. f32 values: a stride through every
    bit pattern, and every f16 tie and its neighbours; loads: every f16 pattern."""
    cv, cc = _vulkan_context(), lumen.Context(device="cpu")
    pats = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    h = np.arange(0x7c00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mid = ((h[:-1] + h[1:]) / 2).astype(np.float32)
    m = mid.view(np.uint32)
    v = np.concatenate([pats, mid, (m + 1).view(np.float32), (m - 1).view(np.float32), -mid])
    v = v[: len(v) // 64 * 64].reshape(64, -1)
    a = lumen.box_blur(v, 1, dtype="float16", context=cv)
    assert lumen.last_run()["device"].startswith("vulkan")
    b = lumen.box_blur(v, 1, dtype="float16", context=cc)
    np.testing.assert_array_equal(a.view(np.uint16), b.view(np.uint16))
    ob, oc = (torch.empty(v.shape, dtype=torch.bfloat16) for _ in range(2))
    lumen.box_blur(v, 1, out=ob, context=cv)
    lumen.box_blur(v, 1, out=oc, context=cc)
    assert torch.equal(ob.view(torch.int16), oc.view(torch.int16))
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    a = lumen.box_blur(every, 1, dtype=np.float32, context=cv)
    b = lumen.box_blur(every, 1, dtype=np.float32, context=cc)
    same = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
    assert same.all()


def test_cli_half(lumen_bin, tmp_path):
    """`lumen blur --dtype f16|bf16`: .npy out (bf16 as exact <f4), the Python result's values;
    a half input stays half; PNG refuses halves naming the dtype."""
    from conftest import run_cli
    src = hc.image_data(seed=4).astype(np.float32)
    np.save(tmp_path / "in.npy", src)
    for dt, npdt in (("f16", np.float16), ("bf16", np.float32)):
        r = run_cli(lumen_bin, "blur", str(tmp_path / "in.npy"), str(tmp_path / f"{dt}.npy"),
                    "--sigma", "1.5", "--dtype", dt)
        assert r.returncode == 0, r.stderr
        got = np.load(tmp_path / f"{dt}.npy")
        assert got.dtype == npdt
        want = lumen.gaussian_blur(src, 1.5)
        want = want.astype(np.float16) if dt == "f16" else \
            torch.from_numpy(want).to(torch.bfloat16).float().numpy()
        np.testing.assert_array_equal(got, want)
    r = run_cli(lumen_bin, "box", tmp_path / "f16.npy", tmp_path / "b.npy", "--ksize", "3")
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "b.npy").dtype == np.float16
    r = run_cli(lumen_bin, "blur", tmp_path / "f16.npy", tmp_path / "x.png", "--sigma", "1")
    assert r.returncode != 0 and "f16" in r.stderr


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["filter2d fft 31x31", "gaussian_blur fast sigma 6"])
def test_vulkan_half_ops_against_float64(op, dtype):
    """The device's halves by the same rule as the CPU's (strict: no fallback)."""
    cv = _vulkan_context()
    fn, ref, ksum, kind = hc.IMAGE_OPS[op]
    src = hc.store(hc.image_data(), dtype)
    got = fn(src, context=cv)
    assert lumen.last_run()["device"].startswith("vulkan")
    x64 = hc.as_f64(src)
    span = tol.data_span(x64)
    f32_bound = (tol.FAST_GAUSS_REL * span if kind == "fast" else
                 tol.F32_REL * span * max(1.0, ksum))
    _compare(got, ref(x64), dtype, f32_bound, f"vulkan {op} {dtype}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_vulkan_conv_half(dtype):
    cv = _vulkan_context()
    fn, ref, w64 = hc.TENSOR_OPS["conv2d 3x3 pad 1"]
    x, w = hc.store(hc.tensor_data(), dtype), hc.store(w64, dtype)
    got = lumen.conv2d(x, w, padding=1, context=cv)
    assert lumen.last_run()["device"].startswith("vulkan")
    assert hc.dtype_of(got) == dtype
    x64, wq64 = hc.as_f64(x), hc.as_f64(w)
    want = ref(x64, wq64)
    bound = tol.half_atol(want, dtype, 0.0) + 1e-6 * ref(np.abs(x64), np.abs(wq64))
    assert (np.abs(hc.as_f64(got) - want) <= bound).all()
