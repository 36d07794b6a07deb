"""Bad arguments get the right exception class (docs/python.md, "Errors") with a message that
names the argument; border names, aliases and OpenCV constants; contexts, devices, image files.
"""

import os

import cv2
import numpy as np
import pytest

import lumen
from conftest import auto_device, make_image, rng_for

H, W = 23, 31


@pytest.fixture
def src():
    return make_image(rng_for("errors"), (H, W, 3), np.float32)


K3 = np.full((3, 3), 1 / 9, np.float32)


def raises(exc, fn, *names):
    """fn() raises exc (exactly that class or a subclass) and the message names one of names."""
    with pytest.raises(exc) as e:
        fn()
    msg = str(e.value)
    assert any(n in msg for n in names), f"{type(e.value).__name__}({msg!r}) names none of {names}"
    if exc is ValueError:
        assert isinstance(e.value, lumen.ArgumentError), \
            f"ValueError {msg!r} is not a lumen.ArgumentError ({type(e.value).__mro__})"
    return e.value


ALL_OPS = {
    "filter2d": lambda s, **kw: lumen.filter2d(s, K3, **kw),
    "sep_filter2d": lambda s, **kw: lumen.sep_filter2d(s, [1, 2, 1], [0.5, 0.5, 0], **kw),
    "gaussian_blur": lambda s, **kw: lumen.gaussian_blur(s, 1.0, **kw),
    "box_blur": lambda s, **kw: lumen.box_blur(s, 3, **kw),
}


# ---- the exception classes ---------------------------------------------------------------------


def test_error_hierarchy():
    assert issubclass(lumen.Error, Exception)
    assert issubclass(lumen.ArgumentError, ValueError)
    assert issubclass(lumen.ArgumentError, lumen.Error)
    assert issubclass(lumen.UnsupportedError, lumen.Error)
    assert not issubclass(lumen.UnsupportedError, lumen.ArgumentError)
    assert not issubclass(lumen.Error, ValueError), "every lumen.Error would then be a ValueError"


# ---- images ------------------------------------------------------------------------------------


# float64 is taken (filtered in float32, test_py_float64.py); these are not.
BAD_DTYPES = [np.int32, np.int8, np.int16, np.int64, np.uint32, np.bool_,
              np.complex64, np.float128]  # float16 is taken (test_py_half.py)


@pytest.mark.parametrize("op", list(ALL_OPS))
@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda d: np.dtype(d).name)
def test_bad_dtype(op, dtype):
    a = np.zeros((H, W), dtype)
    e = raises(TypeError, lambda: ALL_OPS[op](a), "src")
    assert np.dtype(dtype).name in str(e), f"message does not name {np.dtype(dtype).name}: {e}"


def test_bad_dtype_message_is_the_documented_one():
    """docs/python.md: `src: dtype int32 is not supported (uint8, uint16, float32 or float64;
    ...)`."""
    e = raises(TypeError, lambda: lumen.gaussian_blur(np.zeros((4, 4), np.int32), 1.0), "src")
    assert str(e).startswith("src: dtype int32 is not supported ("), str(e)
    assert all(d in str(e) for d in ("uint8", "uint16", "float32", "float64")), str(e)


@pytest.mark.parametrize("order", [">", "<"])
def test_byte_order(order):
    """Strides must be multiples of the item size and the byte order native."""
    a = np.zeros((H, W), np.dtype(np.float32).newbyteorder(order))
    if a.dtype.isnative:
        assert lumen.box_blur(a, 3).dtype == np.float32
        return
    raises((TypeError, ValueError), lambda: lumen.box_blur(a, 3), "src")


def test_strides_not_multiple_of_itemsize():
    """Such a view is misaligned: as input it is copied once (C may not read it in place), as
    out= it is refused, naming out and the alignment or stride."""
    buf = np.zeros(H * (W * 4 + 2), np.uint8)
    a = np.ndarray((H, W), np.float32, buffer=buf, strides=(W * 4 + 2, 4))
    a[...] = np.arange(H * W, dtype=np.float32).reshape(H, W)
    np.testing.assert_array_equal(lumen.box_blur(a, 3), lumen.box_blur(np.ascontiguousarray(a), 3))
    raises(ValueError, lambda: lumen.box_blur(np.zeros((H, W), np.float32), 3, out=a), "out")


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4, 5, 1), (1, 2, 3, 4, 5, 6), ()], ids=str)
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_bad_ndim(op, shape):
    raises(ValueError, lambda: ALL_OPS[op](np.zeros(shape, np.float32)), "src")


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (4, 5, 0), (0, 4, 5, 3), (2, 0, 5, 1)],
                         ids=str)
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_zero_size(op, shape):
    raises(ValueError, lambda: ALL_OPS[op](np.zeros(shape, np.float32)), "src")


@pytest.mark.parametrize("obj", [[[1, 2], [3, 4]], [[1.0, 2.0], [3.0, 4.0]], "image", None, 3.5,
                                 b"\x00" * 16],
                         ids=["int-list", "float-list", "str", "None", "float", "bytes"])
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_not_an_array(op, obj):
    """Lists of numbers become int64/float64 arrays: unsupported dtypes, TypeError."""
    raises(TypeError, lambda: ALL_OPS[op](obj), "src")


# ---- kernels -----------------------------------------------------------------------------------


BAD_KERNELS = {
    "nan": (np.array([[0, np.nan, 0], [0, 1, 0], [0, 0, 0]], np.float32), ValueError),
    "inf": (np.array([[0, 0, 0], [0, np.inf, 0], [0, 0, 0]]), ValueError),
    "1d": (np.ones(3, np.float32), ValueError),
    "3d": (np.ones((3, 3, 1), np.float32), ValueError),
    "empty-2d": (np.zeros((0, 3), np.float32), ValueError),
    "empty-list": ([], ValueError),
    "strings": ([["a", "b"], ["c", "d"]], TypeError),
    "objects": (np.array([[None, 1]], dtype=object), TypeError),
    "scalar": (1.0, ValueError),
}


@pytest.mark.parametrize("bad", list(BAD_KERNELS))
def test_filter2d_bad_kernel(src, bad):
    k, exc = BAD_KERNELS[bad]
    raises(exc, lambda: lumen.filter2d(src, k), "kernel")


def test_filter2d_kernel_too_large(src):
    raises(ValueError, lambda: lumen.filter2d(src, np.ones((1, 100000), np.float32)), "kernel",
           "kw")


@pytest.mark.parametrize("kx,ky,name,exc", [
    ([1, np.nan, 1], [1], "kx", ValueError), ([1], [np.inf], "ky", ValueError),
    ([], [1], "kx", ValueError), ([1], [], "ky", ValueError),
    (np.ones((2, 2)), [1], "kx", ValueError), ([1], np.ones((3, 1, 1)), "ky", ValueError),
    ([1], ["a", "b"], "ky", TypeError)],
    ids=["kx-nan", "ky-inf", "kx-empty", "ky-empty", "kx-2d", "ky-3d", "ky-str"])
def test_sep_filter2d_bad_kernels(src, kx, ky, name, exc):
    raises(exc, lambda: lumen.sep_filter2d(src, kx, ky), name)


def test_kernels_are_converted(src):
    """Anything NumPy turns into numbers: lists, float64 and int arrays give the f32 kernel."""
    want = lumen.filter2d(src, K3)
    np.testing.assert_array_equal(lumen.filter2d(src, K3.astype(np.float64)), want)
    np.testing.assert_array_equal(lumen.filter2d(src, K3.tolist()), want)
    ki = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]])
    np.testing.assert_array_equal(lumen.filter2d(src, ki), lumen.filter2d(src, ki.astype(np.float32)))
    np.testing.assert_array_equal(lumen.filter2d(src, K3[None, 1, :][:, ::-1]),
                                  lumen.filter2d(src, np.ascontiguousarray(K3[None, 1, ::-1])))


# ---- borders -----------------------------------------------------------------------------------


#: the border table of docs/python.md: every accepted spelling -> lumen's name
ALIASES = {
    "reflect": "reflect", "symmetric": "reflect", "grid-mirror": "reflect",
    "reflect101": "reflect101", "reflect_101": "reflect101", "reflect-101": "reflect101",
    "mirror": "reflect101",
    "replicate": "replicate", "nearest": "replicate", "edge": "replicate",
    "constant": "constant", "grid-constant": "constant",
    "wrap": "wrap", "grid-wrap": "wrap", "circular": "wrap",
    cv2.BORDER_REFLECT: "reflect", cv2.BORDER_REFLECT_101: "reflect101",
    cv2.BORDER_DEFAULT: "reflect101", cv2.BORDER_REPLICATE: "replicate",
    cv2.BORDER_CONSTANT: "constant", cv2.BORDER_WRAP: "wrap",
    cv2.BORDER_REFLECT | cv2.BORDER_ISOLATED: "reflect",
    cv2.BORDER_REFLECT_101 | cv2.BORDER_ISOLATED: "reflect101",
    cv2.BORDER_REPLICATE | cv2.BORDER_ISOLATED: "replicate",
    cv2.BORDER_CONSTANT | cv2.BORDER_ISOLATED: "constant",
    cv2.BORDER_WRAP | cv2.BORDER_ISOLATED: "wrap",
}


@pytest.fixture(scope="module")
def by_name():
    """The five borders give five different results on this image (so equality means
    something), computed with lumen's own names."""
    s = make_image(rng_for("borders"), (9, 11), np.float32)
    k = make_image(rng_for("borders-k"), (5, 7), np.float32, -1, 1)
    res = {b: lumen.filter2d(s, k, border=b, border_value=0.25)
           for b in ("reflect", "reflect101", "replicate", "constant", "wrap")}
    names = list(res)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not np.array_equal(res[a], res[b]), f"{a} and {b} give the same result"
    return s, k, res


@pytest.mark.parametrize("alias", list(ALIASES), ids=str)
def test_border_alias(by_name, alias):
    s, k, res = by_name
    got = lumen.filter2d(s, k, border=alias, border_value=0.25)
    np.testing.assert_array_equal(got, res[ALIASES[alias]],
                                  err_msg=f"border={alias!r} should be {ALIASES[alias]}")


def test_border_default_is_reflect(by_name):
    s, k, res = by_name
    np.testing.assert_array_equal(lumen.filter2d(s, k), res["reflect"])


@pytest.mark.parametrize("op", list(ALL_OPS))
def test_cv2_constants_every_op(src, op):
    for code, name in [(cv2.BORDER_REFLECT, "reflect"), (cv2.BORDER_DEFAULT, "reflect101"),
                       (cv2.BORDER_REPLICATE, "replicate"), (cv2.BORDER_WRAP, "wrap")]:
        np.testing.assert_array_equal(ALL_OPS[op](src, border=code),
                                      ALL_OPS[op](src, border=name), err_msg=f"{op} {code}")


BAD_BORDERS = {
    "reflekt": ValueError, "": ValueError, "REFLECT_101x": ValueError, "zeros": ValueError,
    "BORDER_REFLECT": ValueError, "isolated": ValueError,
    cv2.BORDER_TRANSPARENT: ValueError, cv2.BORDER_TRANSPARENT | cv2.BORDER_ISOLATED: ValueError,
    -1: ValueError, 6: ValueError, 99: ValueError, 32: ValueError,
}


@pytest.mark.parametrize("bad", list(BAD_BORDERS), ids=repr)
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_bad_border(src, op, bad):
    e = raises(BAD_BORDERS[bad], lambda: ALL_OPS[op](src, border=bad), "border")
    if bad == "reflekt":
        assert "border: unknown mode 'reflekt'" in str(e), str(e)


def test_border_isolated_alone_is_constant(by_name):
    """BORDER_ISOLATED is a flag: 16 = BORDER_CONSTANT (0) | 16, accepted as constant."""
    s, k, res = by_name
    np.testing.assert_array_equal(lumen.filter2d(s, k, border=cv2.BORDER_ISOLATED,
                                                 border_value=0.25), res["constant"])


@pytest.mark.parametrize("bad", [True, False, 2.0, None, ["reflect"], b"reflect", np.bool_(True)],
                         ids=["True", "False", "2.0", "None", "list", "bytes", "np.bool_"])
def test_border_wrong_type(src, bad):
    """Booleans are not integers here; floats, None, lists and bytes are not names."""
    raises((TypeError, ValueError), lambda: lumen.filter2d(src, K3, border=bad), "border")


@pytest.mark.parametrize("value", [np.nan, "1", None], ids=repr)
def test_bad_border_value(src, value):
    exc = ValueError if isinstance(value, float) else TypeError
    raises(exc, lambda: lumen.filter2d(src, K3, border="constant", border_value=value),
           "border_value")


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 1e39, -1e300], ids=repr)
@pytest.mark.parametrize("border", ["constant", "reflect"])
@pytest.mark.parametrize("op", list(ALL_OPS))
def test_nonfinite_border_value_refused(src, op, border, value):
    """As the CLI (issue 12, item 7): a border value that is not a finite float32 is refused,
    whatever the border, by the hand-written and the generic binding, naming border_value."""
    e = raises(ValueError, lambda: ALL_OPS[op](src, border=border, border_value=value),
               "border_value")
    assert str(e).startswith("border_value: must be a finite"), str(e)
    generic = {"filter2d": (K3,), "sep_filter2d": ([1, 2, 1], [1, 2, 1]),
               "gaussian_blur": (1.0,), "box_blur": (3,)}[op]
    raises(ValueError, lambda: lumen._lumen._op_call(op, src, *generic, border=border,
                                                      border_value=value), "border_value")


def test_largest_finite_border_value_taken(src):
    r = lumen.filter2d(src, [[1.0]], border="constant", border_value=-3.4e38, anchor=(0, 0))
    np.testing.assert_array_equal(r, src)
    r = lumen.box_blur(src, 3, border="constant", border_value=-1e30)
    assert np.isfinite(r).all() and r.min() < -1e29


# ---- gaussian_ksize ----------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), float("inf")], ids=repr)
def test_gaussian_ksize_bad_sigma_message(sigma):
    """The message shows the number (it printed a literal '%g')."""
    e = raises(ValueError, lambda: lumen.gaussian_ksize(sigma), "sigma")
    assert "%g" not in str(e) and repr(float(sigma)) in str(e), str(e)


@pytest.mark.parametrize("sigma,dtype", [(1e6, "float32"), (8192.0, "float32"),
                                         (1e300, "uint16"), (11000.0, "uint8"),
                                         (9000.0, "float64")])
def test_gaussian_ksize_past_the_limit(sigma, dtype):
    """Sizes past LUMEN_MAX_KSIZE (65536) are an error naming sigma and the limit, not 65537,
    which no op takes."""
    e = raises(ValueError, lambda: lumen.gaussian_ksize(sigma, dtype), "sigma")
    assert "65536" in str(e) and "%" not in str(e), str(e)


def test_gaussian_ksize_largest():
    assert lumen.gaussian_ksize(8191.0) == 65529
    assert lumen.gaussian_ksize(10922.0, "uint8") == 65533
    assert lumen.gaussian_ksize(2.0, np.float64) == lumen.gaussian_ksize(2.0) == 17


# ---- anchors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("anchor,exc", [
    ((3, 0), ValueError), ((0, 3), ValueError), ((-2, 0), ValueError), ((0, -2), ValueError),
    ((1,), ValueError), ((1, 1, 1), ValueError), (1, TypeError), ("11", TypeError),
    ((1.5, 1), TypeError)], ids=repr)
def test_bad_anchor(src, anchor, exc):
    raises((exc, ValueError) if exc is TypeError else exc,
           lambda: lumen.filter2d(src, K3, anchor=anchor), "anchor")
    raises((exc, ValueError) if exc is TypeError else exc,
           lambda: lumen.sep_filter2d(src, [1, 1, 1], [1, 1, 1], anchor=anchor), "anchor")


def test_anchor_default_spellings(src):
    want = lumen.filter2d(src, K3 * np.arange(9).reshape(3, 3))
    for a in [None, (-1, -1), (1, 1), [1, 1]]:
        np.testing.assert_array_equal(lumen.filter2d(src, K3 * np.arange(9).reshape(3, 3),
                                                     anchor=a), want, err_msg=repr(a))


# ---- Gaussian and box parameters ----------------------------------------------------------------


@pytest.mark.parametrize("kw", [
    dict(sigma=-1.0), dict(sigma=0.0), dict(sigma=float("nan")), dict(sigma=float("inf")),
    dict(sigma=1.0, sigma_y=float("nan")), dict(sigma=0.0, sigma_y=-1.0)], ids=repr)
def test_bad_sigma(src, kw):
    sigma = kw.pop("sigma")
    raises(ValueError, lambda: lumen.gaussian_blur(src, sigma, **kw), "sigma", "ksize")


@pytest.mark.parametrize("ksize", [4, (5, 4), (4, 5), 100001, (3, 3, 3), (3,)], ids=repr)
def test_bad_gaussian_ksize(src, ksize):
    exc = (ValueError, TypeError) if isinstance(ksize, tuple) and len(ksize) != 2 else ValueError
    raises(exc, lambda: lumen.gaussian_blur(src, 1.0, ksize=ksize), "ksize")


def test_gaussian_ksize_zero_means_derived(src):
    np.testing.assert_array_equal(lumen.gaussian_blur(src, 1.0, ksize=0),
                                  lumen.gaussian_blur(src, 1.0))
    np.testing.assert_array_equal(lumen.gaussian_blur(src, 1.0, ksize=(0, 0)),
                                  lumen.gaussian_blur(src, 1.0))
    np.testing.assert_array_equal(lumen.gaussian_blur(src, 1.0, sigma_y=None),
                                  lumen.gaussian_blur(src, 1.0, sigma_y=1.0))


@pytest.mark.parametrize("ksize", [0, -1, (3, 0), (0, 3), (3,), (3, 3, 3), 100001], ids=repr)
def test_bad_box_ksize(src, ksize):
    exc = (ValueError, TypeError) if isinstance(ksize, tuple) and len(ksize) != 2 else ValueError
    raises(exc, lambda: lumen.box_blur(src, ksize), "ksize", "kw", "kh")


@pytest.mark.parametrize("ksize", ["3", 3.0, None], ids=repr)
def test_box_ksize_wrong_type(src, ksize):
    raises((TypeError, ValueError), lambda: lumen.box_blur(src, ksize), "ksize")


# ---- method and precision -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["fastest", "FFT ", "", "recursive", 1], ids=repr)
def test_bad_method(src, method):
    exc = ValueError if isinstance(method, str) else (TypeError, ValueError)
    raises(exc, lambda: lumen.filter2d(src, K3, method=method), "method")
    raises(exc, lambda: lumen.gaussian_blur(src, 1.0, method=method), "method")


@pytest.mark.parametrize("fn", [
    lambda s: lumen.sep_filter2d(s, [1, 2, 1], [1, 2, 1], method="direct"),
    lambda s: lumen.gaussian_blur(s, 1.0, method="direct")], ids=["sep_filter2d", "gaussian"])
def test_direct_is_not_a_separable_method(src, fn):
    """sep_filter2d (and the exact Gaussian built on it) run auto, separable or fft."""
    raises(ValueError, lambda: fn(src), "method")


def test_separable_method_on_rank2_kernel(src):
    """Asking to factor a kernel that has no rank-1 factors is a bad argument (the C library
    returns LUMEN_ERR_INVALID_ARGUMENT); the message says which methods do work."""
    k = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    e = raises(lumen.ArgumentError, lambda: lumen.filter2d(src, k, method="separable"),
               "method", "separable")
    assert isinstance(e, ValueError) and isinstance(e, lumen.Error)


def test_unsupported_file_extension(tmp_path):
    """Valid but not supported: lumen.UnsupportedError, a lumen.Error, and no file left."""
    path = tmp_path / "x.bmp"
    e = raises(lumen.UnsupportedError,
               lambda: lumen.write_image(path, np.zeros((4, 4), np.uint8)), "x.bmp", "extension")
    assert isinstance(e, lumen.Error) and not isinstance(e, ValueError)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("precision", ["medium", "", "EXACTLY", 1], ids=repr)
def test_bad_precision(src, precision):
    exc = ValueError if isinstance(precision, str) else (TypeError, ValueError)
    raises(exc, lambda: lumen.gaussian_blur(src, 1.0, precision=precision), "precision")


@pytest.mark.parametrize("dtype", [np.int32, "int8", "complex64", np.float128], ids=str)
def test_bad_output_dtype(src, dtype):
    raises(TypeError, lambda: lumen.box_blur(src, 3, dtype=dtype), "dtype")


# ---- keyword-only arguments -----------------------------------------------------------------


def test_options_are_keyword_only(src):
    with pytest.raises(TypeError):
        lumen.filter2d(src, K3, "reflect")
    with pytest.raises(TypeError):
        lumen.box_blur(src, 3, True)
    with pytest.raises(TypeError):
        lumen.gaussian_blur(src, 1.0, 2.0)
    with pytest.raises(TypeError):
        lumen.filter2d(src, K3, bordr="reflect")


# ---- Context, devices ----------------------------------------------------------------------------


def test_context_defaults_and_properties(src):
    ctx = lumen.Context()
    assert isinstance(ctx.threads, int) and ctx.threads >= 1
    devices = lumen.devices()
    assert ctx.device == devices[auto_device(devices)]["spec"], ctx.device  # cpu without a GPU
    assert ctx.strict is False
    assert isinstance(ctx.cpu_features, str) and ctx.cpu_features
    ctx.clear_plans()
    np.testing.assert_array_equal(lumen.gaussian_blur(src, 2.0, context=ctx),
                                  lumen.gaussian_blur(src, 2.0))
    c1 = lumen.Context(threads=1, device="cpu", strict=True, simd=False, fft_planning="estimate")
    assert c1.threads == 1 and c1.strict is True
    assert c1.cpu_features == "scalar", c1.cpu_features
    # the scalar oracle and the fast path agree within the f32 rule; u8 exactly here (dyadic)
    u = make_image(rng_for("ctx-u8"), (H, W), np.uint8)
    kd = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32) / 16
    np.testing.assert_array_equal(lumen.filter2d(u, kd, context=c1), lumen.filter2d(u, kd))


@pytest.mark.parametrize("kw,exc,names", [
    (dict(threads=-1), ValueError, ("threads",)),
    (dict(threads="4"), TypeError, ("threads",)),
    (dict(threads=1.5), TypeError, ("threads",)),
    (dict(device="cuda:7"), ValueError, ("cuda:7", "device")),
    (dict(device="cuda"), ValueError, ("cuda", "device")),
    (dict(device="tpu"), ValueError, ("tpu", "device")),
    (dict(device="cpu:3"), ValueError, ("cpu:3", "device")),
    (dict(device=3), TypeError, ("device",)),
    (dict(fft_planning="exhaustive"), ValueError, ("fft_planning",)),
], ids=["threads-neg", "threads-str", "threads-float", "cuda7", "cuda", "tpu", "cpu3",
        "device-int", "fft-planning"])
def test_bad_context(kw, exc, names):
    if kw.get("device") == "cuda" and any(d["backend"] == "cuda" for d in lumen.devices()):
        pytest.skip("a CUDA device exists here: device='cuda' is valid")
    e = raises((exc, ValueError) if exc is TypeError else exc, lambda: lumen.Context(**kw),
               *names)
    if "device" in kw and isinstance(kw["device"], str):
        # it names the devices that are there
        for d in lumen.devices():
            assert d["backend"] in str(e) or d["name"] in str(e), \
                f"{e!s} does not name the available device {d['backend']}/{d['name']}"


DEVICE_KEYS = {"index": int, "spec": str, "name": str, "backend": str, "kind": str,
               "memory_total": int,
               "memory_free": int, "compute_capability": str, "driver": str, "fp16": bool,
               "bf16": bool}


def test_devices():
    devs = lumen.devices()
    assert isinstance(devs, list) and devs, devs
    cpus = [d for d in devs if d["kind"] == "cpu"]
    assert len(cpus) == 1, devs
    for i, d in enumerate(devs):
        assert isinstance(d, dict)
        missing = set(DEVICE_KEYS) - set(d)
        assert not missing, f"device {i} lacks {missing}"
        for key, typ in DEVICE_KEYS.items():
            assert type(d[key]) is typ, f"{key}: {type(d[key]).__name__}, expected {typ.__name__}"
        assert d["kind"] in ("discrete", "integrated", "cpu", "software")
        assert d["memory_total"] > 0 and 0 <= d["memory_free"] <= d["memory_total"]
    cpu = cpus[0]
    assert cpu["compute_capability"] == "" and cpu["driver"] == "" and cpu["spec"] == "cpu"
    for d in devs:  # the spec names the device: Context(device=spec) runs there
        assert d["spec"] == "cpu" or d["spec"].startswith(d["backend"] + ":"), d
    assert cpu["backend"] == "cpu"
    # a Vulkan device names its API version and driver (lavapipe: "Vulkan 1.3..., llvmpipe")
    for d in devs:
        if d["backend"] == "vulkan":
            assert d["driver"].startswith("Vulkan 1."), d
    # the memory is the machine's, in bytes
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 2**20 <= cpu["memory_total"] <= 2 * phys, (cpu["memory_total"], phys)


@pytest.mark.parametrize("device", ["auto", "cpu", None])
def test_device_info(device):
    info = lumen.device_info() if device is None else lumen.device_info(device)
    assert isinstance(info, dict)
    assert set(DEVICE_KEYS) <= set(info), set(DEVICE_KEYS) - set(info)
    if device == "cpu":
        assert info["kind"] == "cpu"
        assert info["name"] == [d for d in lumen.devices() if d["kind"] == "cpu"][0]["name"]


def test_device_info_bad():
    raises(ValueError, lambda: lumen.device_info("cuda:7"), "cuda:7", "device")


# ---- image files ---------------------------------------------------------------------------------


ROUND_TRIPS = [("png", np.uint8, (H, W)), ("png", np.uint8, (H, W, 3)),
               ("png", np.uint16, (H, W, 3)), ("png", np.uint8, (H, W, 4)),
               ("tif", np.float32, (H, W)), ("tiff", np.uint16, (H, W, 3)),
               ("npy", np.float32, (H, W, 3)), ("npy", np.uint16, (H, W))]


@pytest.mark.parametrize("ext,dtype,shape", ROUND_TRIPS,
                         ids=[f"{e}-{np.dtype(d).name}-{len(s)}d" for e, d, s in ROUND_TRIPS])
def test_image_round_trip(tmp_path, ext, dtype, shape):
    a = make_image(rng_for("io", ext, np.dtype(dtype).name, shape), shape, dtype)
    p = tmp_path / f"img.{ext}"
    assert lumen.write_image(str(p), a) is None
    assert os.listdir(tmp_path) == [p.name], os.listdir(tmp_path)
    back = lumen.read_image(str(p))
    assert isinstance(back, np.ndarray) and back.dtype == dtype and back.shape == shape
    np.testing.assert_array_equal(back, a)
    # non-contiguous arrays are written as they look
    lumen.write_image(str(p), a[::-1])
    np.testing.assert_array_equal(lumen.read_image(str(p)), a[::-1])


def test_image_cross_check_with_cv2(tmp_path):
    a = make_image(rng_for("io-cv2"), (H, W, 3), np.uint8)
    lumen.write_image(str(tmp_path / "a.png"), a)
    np.testing.assert_array_equal(cv2.imread(str(tmp_path / "a.png"), cv2.IMREAD_UNCHANGED)
                                  [..., ::-1], a)   # cv2 is BGR, lumen's channels as given
    cv2.imwrite(str(tmp_path / "b.png"), a[..., ::-1])
    np.testing.assert_array_equal(lumen.read_image(str(tmp_path / "b.png")), a)


def test_read_missing_file(tmp_path):
    p = tmp_path / "nope.png"
    e = raises(OSError, lambda: lumen.read_image(str(p)), "nope.png")
    assert isinstance(e, lumen.Error)


def test_read_corrupt_file(tmp_path):
    p = tmp_path / "bad.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    e = raises(OSError, lambda: lumen.read_image(str(p)), "bad.png", "PNG", "png")
    assert isinstance(e, lumen.Error)


@pytest.mark.parametrize("case", ["missing-dir", "f32-as-png", "f32-as-jpg", "5-channels-png",
                                  "bad-extension", "f64"])
def test_failed_write_leaves_nothing(tmp_path, case):
    a = make_image(rng_for("io-fail"), (H, W, 3), np.float32)
    if case == "missing-dir":
        p, exc = tmp_path / "no" / "such" / "dir.png", OSError
        a = a.astype(np.uint8)
    elif case == "f32-as-png":
        p, exc = tmp_path / "x.png", lumen.Error
    elif case == "f32-as-jpg":
        p, exc = tmp_path / "x.jpg", lumen.Error
    elif case == "5-channels-png":
        p, exc = tmp_path / "x.png", lumen.Error
        a = np.zeros((H, W, 5), np.uint8)
    elif case == "bad-extension":
        p, exc = tmp_path / "x.bmpx", lumen.Error
        a = a.astype(np.uint8)
    else:
        p, exc = tmp_path / "x.npy", TypeError
        a = a.astype(np.float64)
    with pytest.raises(exc):
        lumen.write_image(str(p), a)
    left = [os.path.relpath(os.path.join(d, f), tmp_path) for d, _, fs in os.walk(tmp_path)
            for f in fs]
    assert left == [], f"a failed write left {left}"
    assert not p.exists()
