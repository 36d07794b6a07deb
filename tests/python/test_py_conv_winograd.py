"""lumen.conv2d's Winograd path (3x3, stride 1, dilation 1) against torch (1.13, CPU).

The reference is torch in float64 on the same float32 data, and the bound is per output:
|lumen - ref64| <= CONV_REL_F64 * (sum over the taps of |x * w| + |bias|), the condition-aware
form the C tests use (tests/c/test_conv_winograd.c). That sum is torch's conv of |x| and |w|.
lumen.last_run()['algo'] must say which path ran: Winograd where it applies (F(4x4) with enough
tiles, held to its own bound CONV_REL_F64_WINOGRAD_F4), not elsewhere.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lumen
from conftest import rng_for
from tolerances import CONV_REL_F64, CONV_REL_F64_WINOGRAD_F4

torch.set_num_threads(1)

WINOGRAD = "winograd-f2x2"
F4 = "winograd-f4x4"


def wino_algo(x, padding):
    """The tile the selection picks: F(4x4) from 64 tiles of 4x4 per group up (conv_winograd.c)."""
    n, _, h, w = x.shape
    p, q = h + 2 * padding - 2, w + 2 * padding - 2
    return F4 if n * -(-p // 4) * -(-q // 4) >= 64 else WINOGRAD


def data(key, shape, positive):
    lo = 0.0 if positive else -1.0
    return rng_for("winograd", key, shape).uniform(lo, 1.0, shape).astype(np.float32)


def check(x, w, b, want_algo, **kw):
    got = lumen.conv2d(x, w, b, **kw)
    if want_algo == WINOGRAD:  # either tile, by the shape
        want_algo = wino_algo(x, kw.get("padding", 0))
    assert lumen.last_run()["algo"] == want_algo, f"{kw}: algo {lumen.last_run()['algo']}"
    bound = CONV_REL_F64_WINOGRAD_F4 if want_algo == F4 else CONV_REL_F64
    t = lambda a: None if a is None else torch.from_numpy(np.asarray(a)).to(torch.float64)
    ref = F.conv2d(t(x), t(w), t(b), **kw).numpy()
    absb = None if b is None else t(b).abs()
    mag = F.conv2d(t(x).abs(), t(w).abs(), absb, **kw).numpy()
    assert got.shape == ref.shape
    ratio = np.abs(got.astype(np.float64) - ref) / np.maximum(mag, 1e-30)
    worst = float(ratio.max())
    assert worst <= bound, f"{kw}: error {worst:.3g} of sum|x*w| ({want_algo})"
    return worst


@pytest.mark.parametrize("positive", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("hw", [(1, 1), (3, 4), (7, 7), (14, 13)])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("batch", [1, 3])
def test_winograd_grid(batch, groups, hw, padding, bias, positive):
    h, wd = hw
    if h + 2 * padding < 3 or wd + 2 * padding < 3:
        pytest.skip("empty output")
    key = (batch, groups, hw, padding, bias, positive)
    c, k = 32 * groups // 2 + 16, 24 * groups
    c -= c % groups
    x = data(key + ("x",), (batch, c, h, wd), positive)
    w = data(key + ("w",), (k, c // groups, 3, 3), positive)
    b = data(key + ("b",), (k,), positive) if bias else None
    # padding 2, or padding on a 1-wide plane: im2col (Winograd's error there, docs/conv2d.md)
    wino = padding == 0 or (padding == 1 and min(h, wd) >= 2)
    check(x, w, b, WINOGRAD if wino else "im2col+sgemm", padding=padding, groups=groups)


def test_winograd_views():
    """A channels-last x and a sliced (non-contiguous) x run in place, as torch does."""
    x = data(("views",), (2, 20, 40, 32), False)
    w = data(("views", "w"), (32, 16, 3, 3), False)
    xs = x[:, 2:18, 3:31:1, 1:30]
    check(xs, w, None, WINOGRAD, padding=1)
    xt = np.ascontiguousarray(x[:, :16].transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    check(xt, w, None, WINOGRAD, padding=1)


@pytest.mark.parametrize("layer", [(2, 256, 7, 7, 256), (2, 64, 28, 28, 64), (1, 128, 14, 14, 128)])
@pytest.mark.parametrize("positive", [False, True])
def test_winograd_layers(layer, positive):
    n, c, h, wd, k = layer
    x = data(layer + ("x",), (n, c, h, wd), positive)
    w = data(layer + ("w",), (k, c, 3, 3), positive)
    b = data(layer + ("b",), (k,), positive)
    check(x, w, b, WINOGRAD, padding=1)


@pytest.mark.parametrize("kw,kernel", [
    (dict(stride=2, padding=1), 3),
    (dict(dilation=2, padding=2), 3),
    (dict(padding=2), 5),
    (dict(padding=2), 3),
    (dict(padding=1, groups=32), 3),   # depthwise: one channel per group
])
def test_not_winograd(kw, kernel):
    g = kw.get("groups", 1)
    x = data(("not", kernel), (1, 32, 12, 12), False)
    w = data(("not", kernel, "w"), (32, 32 // g, kernel, kernel), False)
    lumen.conv2d(x, w, None, **kw)
    assert lumen.last_run()["algo"] not in (WINOGRAD, F4)
