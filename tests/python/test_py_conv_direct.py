"""lumen.conv2d's direct path for short reductions (C <= 4, groups 1) against torch (1.13, CPU).

The reference is torch in float64 on the same float32 data, and the bound is per output:
|lumen - ref64| <= CONV_REL_F64 * (sum over the taps of |x * w| + |bias|), the C tests' form
(tests/c/test_conv2d.c); that sum is torch's conv of |x| and |w|. lumen.last_run()['algo'] must
be 'direct' under the AVX-512 and AVX2 caps (where the CPU has them) and im2col+sgemm under the
generic cap, which has no direct kernel (docs/conv2d.md). The AVX2 and AVX-512 results must be
the same bits.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lumen
from conftest import rng_for
from tolerances import CONV_REL_F64

torch.set_num_threads(1)


FEATURE = {"avx512": "avx512f", "avx2": "avx2", "generic": None}


def capped(monkeypatch, isa):
    """A context under the cap $LUMEN_CPU_ISA=isa (read when it is made); skips without it."""
    monkeypatch.setenv("LUMEN_CPU_ISA", isa)
    ctx = lumen.Context("cpu", threads=2)
    if FEATURE[isa] and FEATURE[isa] not in ctx.cpu_features.split(","):
        pytest.skip(f"no {isa} on this CPU")
    return ctx


def default_algo(ctx):
    """What a context without a cap of ours runs (the environment may cap it: make test)."""
    return "direct" if "avx2" in ctx.cpu_features.split(",") else "im2col+sgemm"


def data(key, shape, positive=False):
    lo = 0.0 if positive else -1.0
    return rng_for("direct", key, shape).uniform(lo, 1.0, shape).astype(np.float32)


def check(ctx, x, w, b, want_algo, **kw):
    got = lumen.conv2d(x, w, b, context=ctx, **kw)
    assert lumen.last_run()["algo"] == want_algo, f"{kw}: algo {lumen.last_run()['algo']}"
    t = lambda a: None if a is None else torch.from_numpy(np.ascontiguousarray(a)).to(
        torch.float64)
    ref = F.conv2d(t(x), t(w), t(b), **kw).numpy()
    absb = None if b is None else t(b).abs()
    mag = F.conv2d(t(x).abs(), t(w).abs(), absb, **kw).numpy()
    assert got.shape == ref.shape
    worst = float((np.abs(got.astype(np.float64) - ref) / np.maximum(mag, 1e-30)).max())
    assert worst <= CONV_REL_F64, f"{kw}: error {worst:.3g} of sum|x*w|"
    return got


# (x shape, weight shape, params): strides 1/2/4 and mixed, paddings (one past the kernel's
# reach), dilation, Q not a multiple of 16 or 8 and below one vector, K not a multiple of 8 or 4,
# batches, several bands of output rows (P > 16), C = 1..4, 147 and 484 taps
CASES = {
    "l4": ((2, 3, 46, 50), (64, 3, 7, 7), dict(stride=2, padding=3)),
    "c1-q5": ((1, 1, 9, 5), (3, 1, 3, 3), dict(padding=1)),
    "c4-q70": ((3, 4, 37, 70), (9, 4, 5, 5), dict(padding=2)),
    "stride4": ((1, 2, 35, 67), (5, 2, 3, 4), dict(stride=4, padding=(1, 2))),
    "dilated": ((2, 3, 20, 33), (17, 3, 3, 3), dict(stride=(2, 1), padding=(0, 1),
                                                     dilation=(2, 3))),
    "k11": ((1, 4, 18, 48), (16, 4, 11, 11), dict(padding=5)),
    "pad-past-reach": ((2, 2, 3, 4), (3, 2, 3, 3), dict(padding=4)),
    "1x1": ((1, 3, 24, 64), (8, 3, 1, 1), {}),
}


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])
def test_direct_against_torch(monkeypatch, isa, case, bias):
    ctx = capped(monkeypatch, isa)
    xs, ws, kw = CASES[case]
    x, w = data((case, "x"), xs), data((case, "w"), ws)
    b = data((case, "b"), (ws[0],)) if bias else None
    check(ctx, x, w, b, "im2col+sgemm" if isa == "generic" else "direct", **kw)


@pytest.mark.parametrize("case", ["l4", "k11"])
def test_direct_all_positive(case):
    """All-positive data: the error is a fraction of the sum itself (no cancellation), the worst
    case of the fixed-order f32 sum (147 and 484 taps, folded into y every 64)."""
    xs, ws, kw = CASES[case]
    x, w = data((case, "px"), xs, True), data((case, "pw"), ws, True)
    ctx = lumen.Context("cpu")
    check(ctx, x, w, None, default_algo(ctx), **kw)


def test_direct_views_and_out():
    """x sliced and channels-last, y a sliced out= (lanes not contiguous: the tile buffer)."""
    base = data("views", (2, 3, 30, 41))
    big = np.zeros((2, 6, 33, 83), np.float32)
    big[:, ::2, 1:31, 1:83:2] = base
    w = data("views-w", (10, 3, 5, 5))
    ctx = lumen.Context("cpu")
    want = check(ctx, base, w, None, default_algo(ctx), stride=2, padding=2)
    for x in (big[:, ::2, 1:31, 1:83:2], base.transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2)):
        np.testing.assert_array_equal(lumen.conv2d(x, w, stride=2, padding=2, context=ctx), want)
    outbig = np.full((2, 10, want.shape[2], 2 * want.shape[3]), np.nan, np.float32)
    out = outbig[:, :, :, ::2]
    assert lumen.conv2d(base, w, stride=2, padding=2, out=out, context=ctx) is out
    assert lumen.last_run()["algo"] == default_algo(ctx)
    np.testing.assert_array_equal(out, want)
    assert np.isnan(outbig[:, :, :, 1::2]).all()


def test_direct_same_bits_avx2_avx512(monkeypatch):
    ys = {}
    for isa in ("avx2", "avx512"):
        ctx = capped(monkeypatch, isa)
        ys[isa] = [lumen.conv2d(data((c, "x"), xs), data((c, "w"), ws),
                                data((c, "b"), (ws[0],)), context=ctx, **kw)
                   for c, (xs, ws, kw) in CASES.items()]
        assert lumen.last_run()["algo"] == "direct"
    for c, a, b in zip(CASES, ys["avx2"], ys["avx512"]):
        assert a.tobytes() == b.tobytes(), c
