"""The generic, descriptor-driven binding (python/src/generic.c): any op of the descriptor table
called from Python with no hand-written code. Held against the hand-written function of each of
the six ops: bit-identical results (dtypes, layouts, every border, anchors, out= in place,
dtype=), the same exception types with messages naming the argument, no reference leaks, a
real inspect.signature. Registration is shown end to end: an op with no hand-written function
is bound at import, reaches the package and __all__, and the stubs do not depend on how it is
bound ($_LUMEN_PY_GENERIC makes the import bind today's ops generically, in a subprocess)."""

import functools
import inspect
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import BORDERS, REPO

lumen = pytest.importorskip("lumen")
from lumen import _lumen  # noqa: E402

OPS = [d["name"] for d in _lumen._op_descriptors()]
SIX = ["filter2d", "sep_filter2d", "gaussian_blur", "box_blur", "conv2d", "conv_transpose2d"]
LAYOUTS = {"hw": (13, 21), "hwc": (13, 21, 3), "nhwc": (2, 13, 21, 4)}
DTYPES = (np.uint8, np.uint16, np.float32)


def generic(op):
    return functools.partial(_lumen._op_call, op)


def hand(op):
    """The extension's own function (lumen.conv2d adds torch's extra forms in Python)."""
    return getattr(_lumen, op)


def image(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)


def same(a, b):
    assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def both(op, *args, **kw):
    """Calls the hand-written and the generic binding alike and checks they agree bit for bit."""
    r_hand = hand(op)(*args, **kw)
    r_gen = generic(op)(*args, **kw)
    same(r_hand, r_gen)
    return r_gen


# ---- results: bit-identical to the hand-written binding ---------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("border", BORDERS)
def test_filters_every_border(layout, dtype, border):
    src = image(LAYOUTS[layout], dtype)
    k = image((3, 5), np.float32, 1)
    kx, ky = image((5,), np.float32, 2), image((3,), np.float32, 3)
    both("filter2d", src, k, border=border, border_value=7.5)
    both("sep_filter2d", src, kx, ky, border=border, border_value=-2)
    both("gaussian_blur", src, 1.5, border=border, border_value=3)
    both("box_blur", src, (5, 3), border=border, border_value=1)


@pytest.mark.parametrize("anchor", [None, (0, 0), (4, 2), [1, 1]])
@pytest.mark.parametrize("convolve", [False, True])
def test_filter_anchors_and_convolve(anchor, convolve):
    src = image(LAYOUTS["hwc"], np.float32)
    k = image((3, 5), np.float32, 1)
    both("filter2d", src, k, anchor=anchor, convolve=convolve, border="constant")
    both("sep_filter2d", src, k[0], k[:, 0], anchor=anchor, convolve=convolve)


@pytest.mark.parametrize("method", ["auto", "direct", "separable", "fft"])
def test_filter2d_methods(method):
    src = image(LAYOUTS["hw"], np.float32)
    k = np.outer([1, 2, 1], [1, 0, -1]).astype(np.float32)
    both("filter2d", src, k, method=method)


@pytest.mark.parametrize("kw", [dict(), dict(sigma_y=0.7), dict(ksize=7), dict(ksize=(5, 9)),
                                dict(sigma_y=None, ksize=None), dict(precision="fast"),
                                dict(method="fft")])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_gaussian_blur_options(kw, dtype):
    both("gaussian_blur", image(LAYOUTS["nhwc"], dtype), 1.2, **kw)
    both("gaussian_blur", image(LAYOUTS["hw"], dtype), 0, ksize=5)


@pytest.mark.parametrize("ksize", [1, 4, (3, 7), [9, 2]])
@pytest.mark.parametrize("normalize", [True, False])
def test_box_blur_options(ksize, normalize):
    both("box_blur", image(LAYOUTS["hwc"], np.uint16), ksize, normalize=normalize)


@pytest.mark.parametrize("border", ["mirror", "edge", "circular", 0, 4, 2 | 16])
def test_border_aliases_and_cv2_constants(border):
    """An ENUM named border goes through the hand-written border converter."""
    both("box_blur", image(LAYOUTS["hw"], np.uint8), 3, border=border)


def test_strided_views_are_used_in_place():
    base = image((40, 60, 3), np.float32)
    src = base[3::2, ::-3]
    out = np.zeros((38, 41, 3), np.float32)[::2, 1::2]
    r = generic("gaussian_blur")(src, 2.0, out=out)
    assert r is out
    last = lumen.last_run()
    assert last["src_ptr"] == src.__array_interface__["data"][0]
    assert last["dst_ptr"] == out.__array_interface__["data"][0]
    same(hand("gaussian_blur")(src, 2.0), out.copy())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_out_in_place(dtype):
    a = image(LAYOUTS["hwc"], dtype)
    b = a.copy()
    assert hand("box_blur")(a, 5, out=a) is a
    assert generic("box_blur")(b, 5, out=b) is b
    same(a, b)
    k = image((3, 3), np.float32, 4)
    assert hand("filter2d")(a, k, out=a) is a
    assert generic("filter2d")(b, k, out=b) is b
    same(a, b)


@pytest.mark.parametrize("src_dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("dst_dt", ["uint8", "uint16", "float32", np.float32])
def test_dtype(src_dt, dst_dt):
    src = image(LAYOUTS["nhwc"], src_dt)
    r = both("gaussian_blur", src, 1.0, dtype=dst_dt)
    assert r.dtype == np.dtype(dst_dt)
    out = np.empty(src.shape, dst_dt)
    assert generic("box_blur")(src, 3, out=out, dtype=dst_dt) is out
    same(hand("box_blur")(src, 3, dtype=dst_dt), out)


def test_dlpack_image():
    class DLOnly:
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, stream=None):
            return self._a.__dlpack__()

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    src = image(LAYOUTS["hwc"], np.float32)
    same(generic("box_blur")(DLOnly(src), 3), hand("box_blur")(src, 3))


CONV_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(groups=2),
    dict(padding=[1, 1], dilation=2, groups=4),
]


@pytest.mark.parametrize("kw", CONV_CASES, ids=str)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d(kw, with_bias):
    x = image((2, 4, 11, 10), np.float32, 5)
    g = kw.get("groups", 1)
    w = image((8, 4 // g, 3, 3), np.float32, 6)
    bias = image((8,), np.float32, 7) if with_bias else None
    both("conv2d", x, w, bias, **kw)
    both("conv2d", x, w, bias=bias, **kw)


@pytest.mark.parametrize("kw", CONV_CASES + [dict(stride=2, output_padding=1),
                                             dict(stride=(3, 2), output_padding=(2, 1))], ids=str)
def test_conv_transpose2d(kw):
    x = image((2, 4, 7, 6), np.float32, 8)
    g = kw.get("groups", 1)
    w = image((4, 6 // g if 6 % g == 0 else 2, 3, 3), np.float32, 9)
    both("conv_transpose2d", x, w, image((w.shape[1] * g,), np.float32, 10), **kw)


def test_conv_out_and_strided_input():
    x = image((2, 4, 20, 22), np.float32, 11)[:, :, ::2, 1::2]
    w = image((3, 4, 3, 3), np.float32, 12)
    out = np.full((2, 3, 8, 9), np.nan, np.float32)
    assert generic("conv2d")(x, w, out=out) is out
    assert lumen.last_run()["dst_ptr"] == out.ctypes.data
    same(hand("conv2d")(x, w), out)


# ---- errors: the same types, messages naming the argument --------------------------------------

SRC = image(LAYOUTS["hwc"], np.float32)
K = image((3, 3), np.float32)
X = image((1, 4, 8, 8), np.float32)
W = image((2, 4, 3, 3), np.float32)

# (op, args, kwargs, the argument the generic message names)
BAD = [
    # missing required
    ("filter2d", (SRC,), {}, "kernel"),
    ("sep_filter2d", (SRC, K[0]), {}, "ky"),
    ("gaussian_blur", (SRC,), {}, "sigma"),
    ("box_blur", (), {}, "src"),
    ("conv2d", (X,), {}, "weight"),
    ("conv_transpose2d", (), {"weight": W}, "x"),
    # wrong type
    ("filter2d", (SRC, K), {"border": 1.5}, "border"),
    ("filter2d", (SRC, K), {"anchor": 1}, "anchor"),
    ("filter2d", (SRC, K), {"method": 3}, "method"),
    ("filter2d", (SRC, K), {"border_value": "x"}, "border_value"),
    ("filter2d", ("not an image", K), {}, "src"),
    ("filter2d", (SRC.astype(np.int32), K), {}, "src"),
    ("filter2d", (SRC, np.array([["a"]])), {}, "kernel"),
    ("box_blur", (SRC, "3"), {}, "ksize"),
    ("box_blur", (SRC, 3.0), {}, "ksize"),
    ("box_blur", (SRC, 3), {"dtype": "int32"}, "dtype"),
    ("box_blur", (SRC, 3), {"context": 5}, "context"),
    ("gaussian_blur", (SRC, 1.0), {"precision": 1}, "precision"),
    ("conv2d", (X, W), {"stride": "2"}, "stride"),
    ("conv2d", (X, W), {"groups": 1.0}, "groups"),
    ("conv2d", (X.astype(np.float64), W), {}, "x"),
    ("conv_transpose2d", (X, W), {"output_padding": None}, "output_padding"),
    # out of range
    ("box_blur", (SRC, 0), {}, "ksize"),
    ("box_blur", (SRC, (3, 70000)), {}, "ksize"),
    ("gaussian_blur", (SRC, 1.0), {"ksize": -3}, "ksize"),
    ("gaussian_blur", (SRC, -1.0), {}, "sigma"),
    ("filter2d", (SRC, K), {"anchor": (3, 0)}, "anchor"),
    ("conv2d", (X, W), {"groups": 0}, "groups"),
    ("conv2d", (X, W), {"stride": (1, 0)}, "stride"),
    ("conv2d", (X, W), {"dilation": -1}, "dilation"),
    ("conv2d", (X, W), {"padding": (1, 2, 3)}, "padding"),
    ("box_blur", (SRC, (3,)), {}, "ksize"),
    ("gaussian_blur", (SRC, 1.0), {"ksize": [3, 3, 3]}, "ksize"),
    ("filter2d", (SRC, K), {"anchor": (1,)}, "anchor"),
    ("conv2d", (X, W, np.ones(3)), {}, "bias"),
    ("conv2d", (X, W[:, :3]), {}, "weight"),
    ("conv2d", (X, W), {"groups": 3}, "groups"),
    ("conv_transpose2d", (X, W), {"stride": 2, "output_padding": 2}, "output_padding"),
    # unknown choice
    ("filter2d", (SRC, K), {"border": "bogus"}, "border"),
    ("filter2d", (SRC, K), {"border": 9}, "border"),
    ("filter2d", (SRC, K), {"method": "bogus"}, "method"),
    ("gaussian_blur", (SRC, 1.0), {"precision": "bogus"}, "precision"),
    # out= of the wrong shape, dtype or kind
    ("box_blur", (SRC, 3), {"out": SRC[:5]}, "out"),
    ("box_blur", (SRC, 3), {"out": SRC[..., 0]}, "out"),
    ("box_blur", (SRC, 3), {"out": np.empty(SRC.shape, np.uint8), "dtype": "float32"}, "dtype"),
    ("box_blur", (SRC, 3), {"out": [1, 2]}, "out"),
    ("conv2d", (X, W), {"out": np.empty((1, 2, 6, 7), np.float32)}, "out"),
    ("conv2d", (X, W), {"out": X}, "out"),
    # keywords and positions
    ("box_blur", (SRC, 3), {"no_such_keyword": 1}, "no_such_keyword"),
    ("box_blur", (SRC, 3, True), {}, "positional"),
    ("box_blur", (SRC, 3), {"src": SRC}, "src"),
    ("conv2d", (X, W), {"dtype": "float32"}, "dtype"),
]


@pytest.mark.parametrize("op,args,kw,name", BAD, ids=[f"{b[0]}-{b[3]}-{i}"
                                                      for i, b in enumerate(BAD)])
def test_errors_match_the_hand_written_binding(op, args, kw, name):
    with pytest.raises(Exception) as h:
        hand(op)(*args, **kw)
    with pytest.raises(Exception) as g:
        generic(op)(*args, **kw)
    assert type(g.value) is type(h.value), (h.value, g.value)
    assert isinstance(g.value, (TypeError, ValueError, lumen.Error))
    assert name in str(g.value), g.value


def test_error_types_are_the_librarys():
    with pytest.raises(lumen.ArgumentError):
        generic("box_blur")(SRC, 0)
    with pytest.raises(ValueError):
        generic("filter2d")(SRC, K, method="bogus")
    with pytest.raises(TypeError, match=r"box_blur\(\) missing required argument 'ksize'"):
        generic("box_blur")(SRC)


def test_op_call_unknown_name():
    with pytest.raises(lumen.ArgumentError, match="no_such_op"):
        _lumen._op_call("no_such_op", SRC)
    with pytest.raises(TypeError):
        _lumen._op_call()
    with pytest.raises(lumen.ArgumentError):
        _lumen._bind_generic("no_such_op")


# ---- references: nothing kept, nothing released wrongly ---------------------------------------


def test_no_reference_leaks():
    src = image(LAYOUTS["hwc"], np.float32)
    k, kx = image((3, 3), np.float32), image((5,), np.float32)
    out = np.empty_like(src)
    x, w, b = X.copy(), W.copy(), np.ones(2, np.float32)
    objs = (src, k, kx, out, x, w, b)
    before = [sys.getrefcount(o) for o in objs]
    for _ in range(1500):
        generic("filter2d")(src, k, border="wrap", anchor=(0, 1), out=out)
        generic("sep_filter2d")(src, kx, kx, method="separable")
        generic("box_blur")(src, (3, 5), out=out, dtype="float32")
        generic("conv2d")(x, w, b, padding=1)
        for bad in (dict(border="bogus"), dict(out=out[:2]), dict(ksize=0)):
            with pytest.raises(Exception):
                generic("box_blur")(src, bad.pop("ksize", 3), **bad)
        with pytest.raises(Exception):
            generic("conv2d")(x, w, b[:1])
    assert [sys.getrefcount(o) for o in objs] == before


def test_results_are_owned_once():
    src = image(LAYOUTS["hw"], np.uint8)
    r = generic("box_blur")(src, 3)
    assert sys.getrefcount(r) == 2 and r.base is None and r.flags.owndata
    x = generic("conv2d")(X, W)
    assert sys.getrefcount(x) == 2 and x.flags.owndata


def test_results_start_on_a_cache_line():
    """Results lumen allocates start on a 64-byte line (views.c: NumPy's own large arrays start
    16 bytes past one), own their memory and free it (the leak tests run these ops too)."""
    big = np.zeros((1000, 1000), np.float32)  # large enough for glibc to mmap NumPy's copy
    for r in (generic("box_blur")(big, 3), generic("resize")(big, (300, 200)),
              generic("box_blur")(image(LAYOUTS["hw"], np.uint8), 3),
              generic("gaussian_blur")(big.astype(np.float16), 1.0),
              generic("conv2d")(X, W)):
        assert r.ctypes.data % 64 == 0 and r.flags.owndata and r.base is None


def test_large_results_on_huge_pages_and_reused():
    """Results of 4 MiB and more start on a 2 MiB page, and the last one freed is reused by the
    next that fits (views.c: a reused block has no pages to fault in or clear); its old values
    never leak into the new result, and a result twice smaller does not take it."""
    src = image((1100, 1400, 3), np.uint8)  # a 4.6 MB result
    first = generic("box_blur")(src, 3)
    addr, want = first.ctypes.data, first.copy()
    assert addr % (2 << 20) == 0
    del first
    again = generic("gaussian_blur")(src, 2.0)
    assert again.ctypes.data == addr
    assert np.array_equal(again, hand("gaussian_blur")(src, 2.0))
    assert not np.array_equal(again, want)
    del again
    half = generic("box_blur")(image((700, 1100, 3), np.uint8), 3)  # 2.3 MB: not large
    assert half.ctypes.data != addr


def test_threads_share_nothing():
    """The GIL is released during the op: threads run it at once, each with its own context."""
    src = image((64, 96, 3), np.float32)
    want = hand("gaussian_blur")(src, 3.0)
    errors = []

    def work():
        for _ in range(20):
            if generic("gaussian_blur")(src, 3.0).tobytes() != want.tobytes():
                errors.append("differs")

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


# ---- generic function objects: names, signatures, docstrings ----------------------------------


@pytest.mark.parametrize("op", OPS)
def test_bound_function_signature_and_doc(op):
    f = _lumen._bind_generic(op)
    assert callable(f) and f.__name__ == op and f.__module__ == "lumen._lumen"
    assert str(inspect.signature(f)) == str(inspect.signature(hand(op)))
    d = next(d for d in _lumen._op_descriptors() if d["name"] == op)
    assert f.__doc__.startswith(d["summary"]) and "generic binding" in f.__doc__
    for a in d["args"]:
        assert f"    {a['name']}: {a['help']}" in f.__doc__


@pytest.mark.parametrize("op", SIX)
def test_bound_function_behaves_like_the_hand_written_one(op):
    f = _lumen._bind_generic(op)
    if op in ("conv2d", "conv_transpose2d"):
        same(f(X, W if op == "conv2d" else W.transpose(1, 0, 2, 3).copy(), stride=1),
             hand(op)(X, W if op == "conv2d" else W.transpose(1, 0, 2, 3).copy(), stride=1))
        return
    args = {"filter2d": (K,), "sep_filter2d": (K[0], K[1]), "gaussian_blur": (1.0,),
            "box_blur": (3,)}[op]
    same(f(SRC, *args, border="replicate"), hand(op)(SRC, *args, border="replicate"))


# ---- registration: every descriptor is a function of the package ------------------------------


def test_every_descriptor_is_a_callable_of_the_package():
    generic_ops = _lumen._generic_ops()
    assert set(generic_ops) <= set(OPS)
    for op in OPS:
        assert callable(getattr(lumen, op)) and op in lumen.__all__
        fn = getattr(_lumen, op)
        # A hand-written function's self is the module; a generic one's is its descriptor.
        assert (fn.__self__ is not _lumen) == (op in generic_ops), op


def _import_with(ops, code):
    env = dict(os.environ, _LUMEN_PY_GENERIC=ops, LUMEN_DEVICE="cpu")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_import_binds_an_op_without_hand_written_function():
    """The import binds what the module lacks; $_LUMEN_PY_GENERIC hides the hand-written
    box_blur and conv2d from it, so the path a new op takes runs on them."""
    out = _import_with("box_blur,conv2d", """
import inspect, numpy as np, lumen
from lumen import _lumen
print(_lumen._generic_ops())
assert type(_lumen.box_blur.__self__).__name__ == "PyCapsule"
assert _lumen.filter2d.__self__ is _lumen
assert lumen.box_blur is _lumen.box_blur and "box_blur" in lumen.__all__
assert list(inspect.signature(lumen.box_blur).parameters)[:2] == ["src", "ksize"]
img = np.arange(60, dtype=np.float32).reshape(5, 12)
print(lumen.box_blur(img, 3, border="wrap").sum())
x = np.ones((2, 5, 5), np.float32)              # unbatched: lumen/_conv.py wraps conv2d
print(lumen.conv2d(x, np.ones((3, 2, 3, 3), np.float32), padding=1).shape)
""")
    want = hand("box_blur")(np.arange(60, dtype=np.float32).reshape(5, 12), 3, border="wrap")
    # bound generically: the two hidden ones, and the ops that never had a hand-written
    # function (the film effects: bloom, halation, grain)
    always = [n for n in lumen._lumen._generic_ops() if n not in ("box_blur", "conv2d")]
    assert set(always) >= {"bloom", "halation", "grain"}, always
    assert out.splitlines() == [str(["box_blur", "conv2d"] + always), str(want.sum()), "(3, 5, 5)"]


def test_stubs_do_not_depend_on_the_binding():
    """gen_stubs.py writes the same stub when every op is bound generically."""
    env = dict(os.environ, _LUMEN_PY_GENERIC="all")
    r = subprocess.run([sys.executable, str(REPO / "python" / "gen_stubs.py"), "--check"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_descriptor_tests_pass_on_generic_functions():
    """The signature, keyword, docstring and __all__ tests of test_descriptors.py, run on a
    package whose every op the import bound generically."""
    env = dict(os.environ, _LUMEN_PY_GENERIC="all", LUMEN_DEVICE="cpu")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(REPO / "tests" / "python" / "test_descriptors.py"),
                        "-k", "python or stub or all_comes"],
                       env=env, capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "failed" not in r.stdout
