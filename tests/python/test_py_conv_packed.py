"""lumen.Conv2dWeights: prepacked conv2d weights (lumen_conv2d_weights_pack, docs/conv2d.md).

lumen.conv2d(x, packed, bias) must equal lumen.conv2d(x, weight, bias, **params) bit for bit on
every CPU algorithm (Winograd F(2x2) and F(4x4), im2col+SGEMM for 1x1, stride 2 and groups, depthwise,
direct), use the
packed algorithm, take torch's unbatched form and padding='same', and refuse an x of another
shape or parameters other than the packed ones with an ArgumentError naming the argument.
"""

import numpy as np
import pytest

import lumen
from conftest import rng_for

# (name, x shape, weight shape, params, algorithm)
CASES = [
    ("winograd", (2, 32, 14, 13), (32, 32, 3, 3), dict(padding=1), "winograd-f2x2"),
    ("winograd-f4", (4, 16, 16, 15), (24, 16, 3, 3), dict(padding=1), "winograd-f4x4"),
    ("winograd-groups", (1, 64, 8, 8), (64, 32, 3, 3), dict(padding=1, groups=2),
     "winograd-f2x2"),
    ("1x1", (2, 16, 7, 9), (24, 16, 1, 1), {}, "im2col+sgemm"),
    ("depthwise", (2, 8, 11, 10), (16, 1, 3, 3), dict(padding=1, groups=8), "depthwise"),
    ("stride2", (1, 8, 15, 14), (12, 8, 3, 3), dict(stride=2, padding=1), "im2col+sgemm"),
    ("groups2", (2, 8, 9, 9), (12, 4, 3, 3), dict(padding=1, groups=2), "im2col+sgemm"),
    ("same-even", (1, 16, 10, 12), (8, 16, 2, 4), dict(padding="same"), "im2col+sgemm"),
    ("direct", (2, 3, 20, 22), (16, 3, 7, 7), dict(stride=2, padding=3), "direct"),
]


def data(key, shape):
    return rng_for("packed", key, shape).uniform(-1.0, 1.0, shape).astype(np.float32)


@pytest.mark.parametrize("name,xs,ws,params,algo", CASES, ids=[c[0] for c in CASES])
def test_packed_equals_unpacked(name, xs, ws, params, algo):
    x, w = data(name + "x", xs), data(name + "w", ws)
    b = data(name + "b", (ws[0],))
    if algo == "direct" and "avx2" not in lumen.Context("cpu").cpu_features.split(","):
        algo = "im2col+sgemm"  # the generic cap has no direct kernel
    packed = lumen.Conv2dWeights(w, xs, **params)
    assert packed.algo == algo and packed.x_shape == xs and packed.shape == ws
    assert (packed.nbytes > 0) == (algo not in ("depthwise", "direct"))  # these pack per call
    want = lumen.conv2d(x, w, b, **params)
    got = lumen.conv2d(x, packed, b)
    assert lumen.last_run()["algo"] == algo
    assert got.tobytes() == want.tobytes()
    again = lumen.conv2d(x, packed, b, **params)  # the same parameters given again
    assert again.tobytes() == want.tobytes()
    out = np.full_like(want, 7.0)
    assert lumen.conv2d(x, packed, b, out=out) is out and out.tobytes() == want.tobytes()


def test_pack_is_used():
    """Against the contract (the weights change after packing): the packed call keeps the
    packed values, which shows that it does not transform the weight again."""
    xs, ws = (1, 32, 10, 10), (32, 32, 3, 3)
    x, w = data("ux", xs), data("uw", ws)
    packed = lumen.Conv2dWeights(w, xs, padding=1)
    want = lumen.conv2d(x, w, padding=1)
    w[:] = 0.5
    assert lumen.conv2d(x, packed).tobytes() == want.tobytes()


def test_unbatched_and_half():
    w = data("hw", (16, 16, 3, 3))
    x = data("hx", (16, 9, 9))
    packed = lumen.Conv2dWeights(w, (1,) + x.shape, padding=1)
    assert lumen.conv2d(x, packed).tobytes() == lumen.conv2d(x, w, padding=1).tobytes()
    wh, xh = w.astype(np.float16), data("hx4", (1, 16, 9, 9)).astype(np.float16)
    ph = lumen.Conv2dWeights(wh, xh.shape, padding=1)
    assert lumen.conv2d(xh, ph).tobytes() == lumen.conv2d(xh, wh, padding=1).tobytes()


def test_other_context_ignores_the_pack():
    xs, ws = (1, 32, 10, 10), (32, 32, 3, 3)
    x, w = data("cx", xs), data("cw", ws)
    packed = lumen.Conv2dWeights(w, xs, padding=1)
    ref = lumen.Context("cpu", simd=False)
    want = lumen.conv2d(x, w, padding=1, context=ref)
    assert lumen.conv2d(x, packed, context=ref).tobytes() == want.tobytes()


def test_errors_name_the_argument():
    xs, ws = (2, 32, 14, 14), (32, 32, 3, 3)
    x, w = data("ex", xs), data("ew", ws)
    packed = lumen.Conv2dWeights(w, xs, padding=1)
    with pytest.raises(lumen.ArgumentError, match=r"^x: shape \(1, 32, 14, 14\) differs"):
        lumen.conv2d(x[:1], packed)
    with pytest.raises(lumen.ArgumentError, match=r"^x: shape \(2, 32, 14, 15\) differs"):
        lumen.conv2d(data("ex2", (2, 32, 14, 15)), packed)
    with pytest.raises(lumen.ArgumentError, match=r"^stride \(height\): 2 differs"):
        lumen.conv2d(x, packed, stride=2)
    with pytest.raises(lumen.ArgumentError, match=r"^padding \(width\): 0 differs"):
        lumen.conv2d(x, packed, padding=(1, 0))
    with pytest.raises(lumen.ArgumentError, match=r"^groups: 2 differs"):
        lumen.conv2d(x, packed, groups=2)
    with pytest.raises(lumen.ArgumentError, match=r"^weight:"):
        lumen.Conv2dWeights(w, (2, 16, 14, 14))
    with pytest.raises(lumen.ArgumentError, match=r"^x_shape:"):
        lumen.Conv2dWeights(w, (2, 32, 14))
    with pytest.raises(lumen.ArgumentError, match=r"^groups:"):
        lumen.Conv2dWeights(w, xs, groups=3)
