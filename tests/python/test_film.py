"""lumen's film effects against the float64 reference of Phos's formulas (film_reference.py),
on every device present (the CPU, and lavapipe's vulkan:0 in CI).

Targets (issue 14, Phos's acceptance criteria tightened): PSNR > 60 dB against the float64
reference and max |error| < 1e-3 on [0, 1]; halation's energy error < 0.01 %; ten images in a
row with no memory growth. The grain is compared exactly: the reference takes lumen's own
normal draws (lumen.film.grain_normals)."""

import resource
from pathlib import Path

import numpy as np
import pytest

import film_reference as ref
import lumen

REPO = Path(__file__).resolve().parents[2]
STOCKS = ref.load_stocks(REPO / "data" / "film_stocks.ini")
PSNR_MIN, MAX_ERR = 60.0, 1e-3


def devices():
    return [d["spec"] for d in lumen.devices() if d["backend"] in ("cpu", "vulkan", "cuda")]


DEVICES = devices()


@pytest.fixture(scope="module", params=DEVICES)
def ctx(request):
    return lumen.Context(device=request.param, strict=request.param != "cpu", threads=2)


def scene(h=96, w=128, seed=1):
    """Linear light with highlights above both thresholds: lamps, a bright edge, noise."""
    rng = np.random.default_rng(seed)
    img = rng.random((h, w, 3)) * 0.45
    yy, xx = np.mgrid[0:h, 0:w]
    for cy, cx, r, c in ((30, 40, 6, (1.0, 0.9, 0.7)), (60, 100, 4, (0.95, 1.0, 1.0)),
                         (80, 20, 9, (1.0, 0.3, 0.2))):
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = c
    img[:, 118:] = 0.85
    return img.astype(np.float32)


def psnr(got, want):
    mse = float(np.mean((np.asarray(got, np.float64) - want) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(1.0 / mse)


def check(got, want, what):
    err = float(np.abs(np.asarray(got, np.float64) - want).max())
    p = psnr(got, want)
    assert err < MAX_ERR and p > PSNR_MIN, f"{what}: max |err| {err:.3g}, PSNR {p:.1f} dB"


def test_stocks_are_the_data_file():
    got = {s["name"]: s for s in lumen.film.stocks()}
    assert set(got) == set(STOCKS)
    for name, want in STOCKS.items():
        s = got[name]
        assert s["color"] == bool(want["color"]) and s["iso"] == want["iso"], name
        assert np.allclose(s["matrix"], want["matrix"]) and np.allclose(s["filmic"], want["filmic"])
        assert np.allclose(s["bloom_eta"], want["bloom_eta"]), name
        assert np.allclose(s["halation_f"], want["halation_f"]), name
        assert s["bloom_mode"] == want["bloom_mode"], name
    with pytest.raises(lumen.ArgumentError, match="portra400"):
        lumen.film.stock("kodachrome25")


def test_bloom(ctx):
    x = scene()
    p = dict(threshold=0.8, eta=[0.16, 0.1, 0.12], sigma=[6.0, 5.5, 5.0], kappa=[9.0, 8.0, 7.0],
             rho=[0.95, 0.9, 0.85])
    got = lumen.film.bloom(x, p["eta"], p["sigma"], p["kappa"], p["rho"], p["threshold"],
                           context=ctx)
    check(got, ref.bloom(x, p["threshold"], p["eta"], p["sigma"], p["kappa"], p["rho"]),
          f"bloom on {ctx.device}")
    # the stock's own PSF (sigma 20, radius 79: wider than this image's side)
    s = STOCKS["portra400"]
    got = lumen.film.bloom(x, s["bloom_eta"], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"],
                           context=ctx)
    want = ref.bloom(x, 0.8, s["bloom_eta"], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"])
    check(got, want, f"bloom portra400 on {ctx.device}")


@pytest.mark.parametrize("name", ["portra400", "cinestill800t"])
def test_halation_and_its_energy(ctx, name):
    s = STOCKS[name]
    x = scene(150, 170) * 0.9  # below 1: nothing clips, so the energy is exactly kept
    got = lumen.film.halation(x, s["halation_f"], s["halation_energy"], s["halation_radius"],
                              context=ctx)
    want = ref.halation(x, 0.5, s["halation_f"], s["halation_energy"], s["halation_radius"])
    check(got, want, f"halation {name} on {ctx.device}")
    e = np.maximum(x.astype(np.float64) - 0.5, 0) * np.asarray(s["halation_f"]) * s["halation_energy"]
    moved = (got.astype(np.float64) - x).sum(axis=(0, 1))  # x - E + layer: sum(layer) = sum(E)
    assert np.all(np.abs(moved) <= 1e-4 * e.sum(axis=(0, 1)) + 1e-3), (moved, e.sum(axis=(0, 1)))


def test_grain_exact_with_lumens_draws(ctx):
    x = scene(64, 80)
    h, w = x.shape[:2]
    z = np.stack([lumen.film.grain_normals(9, h, w, 0, c) for c in range(3)], axis=-1)
    for size in (0.3, 1.5, 4.0):
        got = lumen.film.grain(x, 0.8, size, 1.0, 1000.0, seed=9, context=ctx)
        want = ref.grain(x, z, 0.8, size, 1.0, 1000.0)
        check(got, want, f"grain size {size} on {ctx.device}")
    again = lumen.film.grain(x, 0.8, 1.5, seed=9, context=ctx)
    assert np.array_equal(again, lumen.film.grain(x, 0.8, 1.5, seed=9, context=ctx))
    assert not np.array_equal(again, lumen.film.grain(x, 0.8, 1.5, seed=10, context=ctx))


def draws(stock, h, w, seed):
    if stock["color"]:
        return np.stack([lumen.film.grain_normals(seed, h, w, 0, c) for c in range(3)], -1)
    z = np.zeros((h, w, 3), np.float32)
    z[..., 1] = lumen.film.grain_normals(seed, h, w, 0, 0)  # the one grey plane's draws
    return z


@pytest.mark.parametrize("name", ["portra400", "cinestill800t", "gold200", "hp5plus400"])
def test_the_chain_f32(ctx, name):
    s = STOCKS[name]
    x = scene(90, 120, seed=3)
    for strengths in ((1, 1, 1), (1.5, 0.5, 0), (0, 0, 0.5)):
        hal, blo, gra = strengths
        got = lumen.film.film(x, name, halation=hal, bloom=blo, grain=gra, seed=5, context=ctx)
        want = ref.film(x, s, halation=hal, bloom=blo, grain=gra, draws=draws(s, 90, 120, 5))
        check(got, want, f"film {name} {strengths} on {ctx.device}")


def test_the_chain_u8_decodes_and_encodes_srgb(ctx):
    rng = np.random.default_rng(4)
    img = (rng.random((70, 90, 3)) * 255).astype(np.uint8)
    img[20:30, 30:45] = 255
    s = STOCKS["portra400"]
    got = lumen.film.film(img, "portra400", seed=2, context=ctx)
    want = ref.srgb_encode(ref.film(ref.srgb_decode(img / 255.0), s, draws=draws(s, 70, 90, 2)))
    # lumen rounds to the nearest level; Phos truncates (docs/film.md): one level at most
    assert got.dtype == np.uint8
    assert np.abs(got.astype(np.float64) - want * 255).max() <= 0.5 + 1e-3 * 255


def test_strength_zero_is_the_tone_curve_alone(ctx):
    x = scene(40, 50)
    s = STOCKS["portra400"]
    got = lumen.film.film(x, "portra400", halation=0, bloom=0, grain=0, context=ctx)
    want = ref.film(x, s, halation=0, bloom=0, grain=0)
    check(got, want, "strengths 0")


def test_bad_arguments():
    x = scene(20, 20)
    with pytest.raises(lumen.ArgumentError, match="stock"):
        lumen.film.film(x, "nope")
    with pytest.raises(lumen.ArgumentError, match="strength"):
        lumen.film.film(x, halation=-1)
    with pytest.raises(lumen.ArgumentError, match="channels"):
        lumen.film.film(np.zeros((10, 10, 2), np.float32))
    with pytest.raises(lumen.ArgumentError, match="eta"):
        lumen.film.bloom(x, eta=[2.0])
    with pytest.raises(lumen.ArgumentError, match="overlaps src"):
        lumen.film.halation(x[1:], 0.2, out=x[:-1])
    y = x.copy()  # in place is fine
    assert np.array_equal(lumen.film.film(y, out=y), lumen.film.film(x))


def test_ten_images_rss_does_not_grow():
    x = scene(600, 800)
    ctx = lumen.Context(threads=2)
    rss = []
    for i in range(10):
        lumen.film.film(x, "cinestill800t", seed=i, context=ctx)
        rss.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    # the peak settles after the first calls (plans, spectra, pools); later calls add nothing
    assert rss[-1] - rss[2] < 8 * 1024, rss  # KiB


def test_film_sums_do_not_depend_on_the_thread_count():
    """The chain's own sums (the grain's std, the black-and-white bloom's mean) add their rows in
    order: 1 and 2 threads give the same bits. (Halation's and bloom's FFTs are left out: the
    FFT's tile sizes follow the thread count, which may move a result by an ulp.)"""
    x = scene(120, 150, seed=6)
    for name, strengths in (("portra400", dict(halation=0, bloom=0)), ("hp5plus400", {})):
        one = lumen.film.film(x, name, seed=4, context=lumen.Context(threads=1), **strengths)
        two = lumen.film.film(x, name, seed=4, context=lumen.Context(threads=2), **strengths)
        assert np.array_equal(one, two), name


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
@pytest.mark.parametrize("shape", ["hwc", "batch", "gray", "in-place"])
def test_fused_path_equals_the_separate_passes(dtype, shape):
    """On the CPU, bloom and halation run E, the convolution and the blend inside the FFT's
    tile loads and stores (docs/film.md, "Speed"); with SIMD off they run as separate passes
    over the reference filter. Both give the same image (up to the FFT's rounding)."""
    # small, as the separate passes run the scalar reference filter, but not so small that the
    # cost model finds the direct sum as cheap as the FFT (the fused path is the FFT's): at
    # 40 x 48 a gray image's tile costs as much as 1920 pixels x 159^2 taps
    x = scene(80, 96, seed=8)
    x[:3, :20] = 0.95  # highlights at the border: halation's layer keeps E's energy by a scale
    if shape == "batch":  # well away from 1 here (reflect101 counts edge pixels unevenly)
        x = np.stack([x, scene(80, 96, seed=9)])
    elif shape == "gray":
        x = np.ascontiguousarray(x[..., 1])
    if dtype == np.uint8:
        x = np.round(x * 255).astype(np.uint8)
    fused, passes = lumen.Context(threads=2), lumen.Context(threads=2, simd=False)
    s = STOCKS["cinestill800t"]
    bloom = (s["bloom_eta"], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"])  # 159 x 159
    for op, args in ((lumen.film.bloom, bloom),
                     (lumen.film.halation, (s["halation_f"], s["halation_energy"], 40.0))):
        want = op(x, *args, context=passes)
        if shape == "in-place":
            got = x.copy()
            op(got, *args, out=got, context=fused)
        else:
            got = op(x, *args, context=fused)
        assert lumen.last_run()["method"] == "fft", lumen.last_run()
        diff = np.abs(got.astype(np.float64) - want).max()
        assert diff <= (1 if dtype == np.uint8 else 1e-5), (op.__name__, shape, diff)
