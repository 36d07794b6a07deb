"""The float64 film reference (film_reference.py) and data/film_stocks.ini.

Two groups:
- against Phos's own functions, when a checkout of Phos (latteine1217/Phos, commit 25b7978) is
  at $PHOS_DIR (default /tmp/phos); skipped without it (CI has none). Make one with
      git -C /work/.mirror/latteine1217+Phos/repo archive HEAD | tar -x -C /tmp/phos
  (Phos's numpy/cv2 modules import as they are; Phos.py itself is imported with Streamlit and
  its UI modules stubbed, to run its optical_processing chain);
- the reference's own invariants, always.

Needs numpy, cv2 and scipy only (not lumen): /usr/bin/python3 -m pytest tests/python/test_film_reference.py
"""

import contextlib
import os
import subprocess
import sys
import types
from pathlib import Path
from unittest import mock

import cv2
import numpy as np
import pytest

import film_reference as fr

REPO = Path(__file__).resolve().parents[2]
INI = REPO / "data" / "film_stocks.ini"
PHOS_DIR = Path(os.environ.get("PHOS_DIR", "/tmp/phos"))
HAVE_PHOS = (PHOS_DIR / "film_models.py").is_file() and (PHOS_DIR / "modules" / "psf_utils.py").is_file()
needs_phos = pytest.mark.skipif(not HAVE_PHOS, reason=f"no Phos checkout at {PHOS_DIR} (set PHOS_DIR)")

STOCKS = fr.load_stocks(INI)
COLOR = [n for n, s in STOCKS.items() if s["color"]]
BW = [n for n, s in STOCKS.items() if not s["color"]]
PHOS_NAME = {"portra400": "Portra400", "cinestill800t": "Cinestill800T", "gold200": "Gold200",
             "ektar100": "Ektar100", "ultramax400": "UltraMax400", "proimage100": "ProImage100",
             "velvia50": "Velvia50", "superia400": "Superia400", "c400": "C400", "nc200": "NC200",
             "business100": "Business100", "hp5plus400": "HP5Plus400", "fp4plus125": "FP4Plus125",
             "trix400": "TriX400", "acros100": "AS100", "fs200": "FS200"}


def scene(h=150, w=190, seed=3):
    """A linear RGB test image in [0, 1]: smooth gradients, dark areas and small bright lights
    (the highlights bloom and halation act on)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    img = np.stack([0.3 * x + 0.05, 0.25 * y + 0.05, 0.2 * (1 - x) * y + 0.02], axis=-1)
    img += 0.03 * rng.random((h, w, 3))
    for cy, cx, r, col in [(30, 40, 6, (1.0, 0.95, 0.8)), (100, 150, 9, (0.9, 0.6, 1.0)),
                           (120, 30, 3, (1.0, 1.0, 1.0)), (60, 120, 14, (0.85, 0.9, 0.95))]:
        m = (np.arange(h)[:, None] - cy) ** 2 + (np.arange(w)[None, :] - cx) ** 2 <= r * r
        img[m] = col
    return np.clip(img, 0, 1)


# ---- Phos, imported ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def phos(monkeypatch_module):
    """Phos's modules (film_models, modules.*, grain_strategies, bloom_strategies) and Phos.py,
    with Streamlit, PIL and Phos's UI/batch modules stubbed only while Phos.py is imported."""
    if str(PHOS_DIR) not in sys.path:
        sys.path.append(str(PHOS_DIR))
    monkeypatch_module.chdir(PHOS_DIR)  # Phos opens data/mie_lookup_table_v3.npz relative to cwd
    ns = types.SimpleNamespace()
    import film_models
    import grain_strategies
    import bloom_strategies
    from modules import optical_core, psf_utils, tone_mapping, wavelength_effects, image_processing
    ns.film_models, ns.grain, ns.bloom_strategies = film_models, grain_strategies, bloom_strategies
    ns.optical_core, ns.psf, ns.tone, ns.wl, ns.ip = (optical_core, psf_utils, tone_mapping,
                                                      wavelength_effects, image_processing)
    ns.Phos = _import_phos_py()
    return ns


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _import_phos_py():
    stubs = {}
    st = mock.MagicMock()
    st.cache_resource = lambda f: f
    stubs["streamlit"] = st
    ui = types.ModuleType("ui_components")
    for n in ("apply_custom_styles", "render_single_image_result", "render_batch_processing_ui",
              "render_welcome_page"):
        setattr(ui, n, lambda *a, **k: None)
    ui.render_sidebar = lambda: {"processing_mode": "none", "film_type": "Portra400",
                                 "grain_style": "不使用", "tone_style": "filmic", "physics_mode": None,
                                 "physics_params": {}, "uploaded_image": None, "uploaded_images": None}
    stubs["ui_components"] = ui
    pb = types.ModuleType("phos_batch")
    for n in ("BatchProcessor", "BatchResult", "create_zip_archive", "generate_zip_filename",
              "validate_batch_size", "estimate_processing_time"):
        setattr(pb, n, None)
    stubs["phos_batch"] = pb
    try:
        import PIL  # noqa: F401
    except ImportError:
        pil = types.ModuleType("PIL")
        pil.Image = mock.MagicMock()
        stubs["PIL"] = pil
    saved = {k: sys.modules.get(k) for k in stubs}
    sys.modules.update(stubs)
    try:
        import importlib
        return importlib.import_module("Phos")
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def phos_profile(phos, name):
    """A fresh Phos profile with the sidebar's defaults written over it, as process_image does."""
    f = phos.film_models.create_film_profiles()[PHOS_NAME[name]]
    f.bloom_params.mode = "physical"
    f.bloom_params.threshold = 0.8
    f.bloom_params.scattering_ratio = 0.10
    f.hd_curve_params.enabled = False
    f.grain_params.mode = "poisson"
    f.grain_params.grain_size = 1.5
    f.grain_params.intensity = 0.8
    return f


@contextlib.contextmanager
def phos_without_asserts(phos):
    """Phos's black-and-white path builds BloomParams that fail their own assertions (always:
    docs/film.md); this runs it as `python3 -O` would, with BloomParams' checks off."""
    with mock.patch.object(phos.film_models.BloomParams, "__post_init__", lambda self: None):
        yield


# ---- against Phos -----------------------------------------------------------------------------


@needs_phos
def test_ini_is_what_the_generator_writes():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen-film-stocks.py"), str(PHOS_DIR)],
                       capture_output=True, text=True, check=True)
    assert r.stdout == INI.read_text(encoding="utf-8")


@needs_phos
@pytest.mark.parametrize("name", list(STOCKS))
def test_stock_numbers_are_phos(phos, name):
    s = STOCKS[name]
    f = phos_profile(phos, name)
    sr = f.get_spectral_response()
    assert s["color"] == (f.color_type == "color")
    if s["color"]:
        np.testing.assert_array_equal(s["matrix"], sr[:9])
        table = phos.psf.load_mie_lookup_table("data/mie_lookup_table_v3.npz")
        ps = [phos.psf.lookup_mie_params(w, s["iso"], table) for w in (650.0, 550.0, 450.0)]
        for i, key in enumerate(("bloom_sigma", "bloom_kappa", "bloom_rho")):
            np.testing.assert_allclose(s[key], [p[i] for p in ps], rtol=1e-9)
        eta = [p[3] / ps[1][3] * f.bloom_params.scattering_ratio for p in ps]
        np.testing.assert_allclose(s["bloom_eta"], eta, rtol=1e-9)
        h = f.halation_params
        np.testing.assert_allclose(s["halation_f"], [h.effective_halation_r, h.effective_halation_g,
                                                     h.effective_halation_b], rtol=1e-9)
        assert (s["halation_energy"], s["halation_radius"]) == (h.energy_fraction, h.psf_radius)
    else:
        np.testing.assert_array_equal(s["matrix"][:3], sr[9:])
    t = f.tone_params
    assert s["filmic"] == [t.shoulder_strength, t.linear_strength, t.linear_angle, t.toe_strength,
                           t.toe_numerator, t.toe_denominator]


@needs_phos
def test_srgb_and_tone_curves_match_phos(phos):
    v = np.linspace(-0.2, 1.3, 3001)
    v32 = v.astype(np.float32)
    with np.errstate(invalid="ignore"):  # both give NaN below -0.055
        np.testing.assert_allclose(fr.srgb_decode(v32), phos.optical_core.srgb_to_linear(v32),
                                   atol=1e-6)
    np.testing.assert_allclose(fr.srgb_encode(v32), phos.optical_core.linear_to_srgb(v32), atol=1e-6)
    np.testing.assert_allclose(fr.reinhard(v), phos.tone.apply_reinhard_to_channel(v, 2.0), atol=1e-12)
    for name in STOCKS:
        f = phos_profile(phos, name)
        np.testing.assert_allclose(fr.filmic(v, *STOCKS[name]["filmic"]),
                                   phos.tone.apply_filmic_to_channel(v, f), atol=1e-12)


@needs_phos
def test_dual_psf_matches_phos(phos):
    for sigma, kappa, rho, R in [(19.99, 29.99, 0.95, 79), (3.0, 7.0, 0.6, 12), (0.7, 2.0, 0.3, 5)]:
        np.testing.assert_allclose(fr.dual_psf(sigma, kappa, rho, R),
                                   phos.psf.create_dual_kernel_psf(sigma, kappa, rho, radius=R),
                                   rtol=2e-6, atol=1e-12)


@needs_phos
@pytest.mark.parametrize("name", ["portra400", "cinestill800t", "gold200"])
def test_bloom_matches_phos(phos, name):
    s = STOCKS[name]
    f = phos_profile(phos, name)
    resp = fr.spectral_response(scene(), s["matrix"]).astype(np.float32)
    got = phos.wl.apply_wavelength_bloom(resp[..., 0], resp[..., 1], resp[..., 2],
                                         f.wavelength_bloom_params, f.bloom_params)
    ref = fr.bloom(resp.astype(np.float64), s["bloom_threshold"], s["bloom_eta"], s["bloom_sigma"],
                   s["bloom_kappa"], s["bloom_rho"])
    assert np.abs(ref - resp).max() > 1e-3  # the effect is there
    np.testing.assert_allclose(ref, np.stack(got, axis=-1), atol=2e-6)


@needs_phos
def test_bloom_small_image_and_explicit_radius_match_phos(phos):
    """Kernels wider than the image (reflections beyond the first) and a radius given."""
    x = scene(40, 55)[..., 1].astype(np.float32)
    for R in (79, 10):
        k32 = phos.psf.create_dual_kernel_psf(15.0, 25.0, 0.8, radius=R)
        got = phos.wl.apply_bloom_with_psf(x, 0.2, k32, 0.7)
        ref = fr.bloom(x.astype(np.float64), 0.7, [0.2] * 3, [15.0] * 3, [25.0] * 3, [0.8] * 3, radius=R)
        np.testing.assert_allclose(ref, got, atol=2e-6)


@needs_phos
@pytest.mark.parametrize("name", ["portra400", "cinestill800t"])
def test_halation_matches_phos(phos, name):
    s = STOCKS[name]
    f = phos_profile(phos, name)
    x = scene().astype(np.float32)
    got = [phos.wl.apply_halation(x[..., c], f.halation_params, wavelength=w)
           for c, w in enumerate((650.0, 550.0, 450.0))]
    ref = fr.halation(x.astype(np.float64), fr.HALATION_THRESHOLD, s["halation_f"],
                      s["halation_energy"], s["halation_radius"])
    assert np.abs(ref - x).max() > 1e-4
    np.testing.assert_allclose(ref, np.stack(got, axis=-1), atol=1e-6)


@needs_phos
def test_halation_small_image_matches_phos(phos):
    x = scene(50, 70).astype(np.float32)
    f = phos_profile(phos, "cinestill800t")
    got = phos.wl.apply_halation(x[..., 0], f.halation_params, wavelength=650.0)
    s = STOCKS["cinestill800t"]
    ref = fr.halation(x[..., 0].astype(np.float64), 0.5, [s["halation_f"][0]] * 3,
                      s["halation_energy"], s["halation_radius"])
    np.testing.assert_allclose(ref, got, atol=1e-6)


@needs_phos
@pytest.mark.parametrize("size", [1.5, 0.5, 0.8, 3.7, 5.0])
def test_grain_matches_phos(phos, size):
    x = scene()[..., 0].astype(np.float32)
    x[:10] = 0.0  # below 1 photon: the max(m, 1) guard
    gp = phos.film_models.GrainParams(mode="poisson", intensity=0.8, grain_size=size,
                                      grain_density=1.3, exposure_level=1000.0)
    np.random.seed(1234)
    got = phos.grain.generate_grain(x, gp)
    np.random.seed(1234)
    z = np.random.standard_normal(x.shape)
    ref = fr.grain_from_noise(x.astype(np.float64), z, 0.8, size, 1.3, 1000.0)
    np.testing.assert_allclose(ref, got, atol=5e-5)


def _phos_chain(phos, name, img, grain_style, tone_style, seed):
    """Phos.py optical_processing on a linear RGB image (spectral_response's matrix step done
    here in float32, as Phos does after its sRGB decode); returns RGB float in [0, 1] before
    Phos's 8-bit quantisation, by capturing what it passes to linear_to_srgb."""
    f = phos_profile(phos, name)
    f = phos.Phos.adjust_grain_intensity(f, grain_style)
    lin = img.astype(np.float32)
    sr = f.get_spectral_response()
    if f.color_type == "color":
        rs = [sr[3 * c] * lin[..., 0] + sr[3 * c + 1] * lin[..., 1] + sr[3 * c + 2] * lin[..., 2]
              for c in range(3)]
    else:
        rs = [None] * 3
    total = sr[9] * lin[..., 0] + sr[10] * lin[..., 1] + sr[11] * lin[..., 2]
    seen = []
    real = phos.Phos.linear_to_srgb

    def spy(v):
        seen.append(np.clip(np.asarray(v, np.float64), 0, 1))
        return real(v)

    np.random.seed(seed)
    with mock.patch.object(phos.Phos, "linear_to_srgb", spy):
        u8 = phos.Phos.optical_processing(rs[0], rs[1], rs[2], total, f, grain_style, tone_style)
    out = np.stack(seen, axis=-1) if len(seen) == 3 else seen[0]
    return out, u8


@needs_phos
@pytest.mark.parametrize("name,grain_style,tone", [
    ("portra400", "不使用", "filmic"), ("portra400", "默認", "filmic"),
    ("cinestill800t", "較粗", "reinhard"), ("gold200", "柔和", "filmic"),
    ("velvia50", "默認", "reinhard")])
def test_chain_matches_phos(phos, name, grain_style, tone):
    img = scene()
    strength = {"不使用": 0.0, "柔和": 0.5, "默認": 1.0, "較粗": 1.5}[grain_style]
    got, u8 = _phos_chain(phos, name, img, grain_style, tone, seed=77)
    np.random.seed(77)
    draws = np.stack([np.random.standard_normal(img.shape[:2]) for _ in range(3)], axis=-1)
    ref = fr.film(img, STOCKS[name], grain=strength, draws=draws if strength else None, tone=tone)
    np.testing.assert_allclose(ref, got, atol=2e-5)
    # Phos's own 8-bit output (BGR, truncated) against film_u8 on the same linear input: at most
    # one step apart where float32 and float64 fall on either side of an integer.
    enc = (fr.srgb_encode(ref) * 255).astype(np.uint8)
    diff = np.abs(enc.astype(int) - u8[..., ::-1].astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01


@needs_phos
@pytest.mark.parametrize("name", ["hp5plus400", "trix400"])
@pytest.mark.parametrize("grain_style", ["不使用", "默認"])
def test_bw_chain_matches_phos_without_asserts(phos, name, grain_style):
    img = scene()
    f = phos_profile(phos, name)
    with pytest.raises(ValueError):  # what Phos's app does: BloomParams' assertion fails
        phos.Phos.process_image(_png(img), PHOS_NAME[name], "不使用", "filmic",
                                {"bloom_mode": "physical", "grain_mode": "poisson",
                                 "physics_mode": phos.film_models.PhysicsMode.PHYSICAL})
    with phos_without_asserts(phos):
        got, u8 = _phos_chain(phos, name, img, grain_style, "filmic", seed=5)
    strength = 1.0 if grain_style == "默認" else 0.0
    np.random.seed(5)
    z = np.random.standard_normal(img.shape[:2])
    ref = fr.film(img, STOCKS[name], grain=strength, draws=z if strength else None)
    assert f.color_type == "single"
    np.testing.assert_allclose(ref[..., 0], got, atol=2e-5)
    np.testing.assert_array_equal(ref[..., 0], ref[..., 2])


def _png(img_lin):
    import io
    u8 = (fr.srgb_encode(img_lin) * 255).astype(np.uint8)
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(u8[..., ::-1]))
    assert ok
    return io.BytesIO(buf.tobytes())


# ---- the reference's own invariants --------------------------------------------------------------


def test_stock_file_is_complete():
    need = {"title", "color", "iso", "matrix", "tone", "filmic", "bloom_mode", "bloom_threshold",
            "bloom_eta", "bloom_sigma", "bloom_kappa", "bloom_rho", "halation", "halation_f",
            "halation_energy", "halation_radius", "diffuse", "direct", "grain_intensity",
            "grain_size", "grain_density", "grain_exposure", "grain_layer", "grain_pan",
            "sensitivity", "scattering"}
    assert {"portra400", "cinestill800t", "gold200", "hp5plus400"} <= set(STOCKS)
    for name, s in STOCKS.items():
        assert need <= set(s), (name, need - set(s))
        assert len(s["matrix"]) == 9 and len(s["filmic"]) == 6
        for k in ("bloom_eta", "bloom_sigma", "bloom_kappa", "bloom_rho", "halation_f", "diffuse",
                  "direct", "grain_layer"):
            assert len(s[k]) == 3, (name, k)
        assert s["tone"] in ("filmic", "reinhard") and s["bloom_mode"] in ("mie", "artistic")
        assert s["bloom_mode"] == ("mie" if s["color"] else "artistic")
        assert s["bloom_eta"][1] == pytest.approx(s["scattering"])
        if s["color"]:
            np.testing.assert_allclose(np.asarray(s["diffuse"]) + s["direct"], 1.0, rtol=1e-9)
            np.testing.assert_allclose(np.reshape(s["matrix"], (3, 3)).sum(1), 1.0, atol=0.011)


def test_issue_numbers():
    """The numbers issue 14 quotes from Phos."""
    p = STOCKS["portra400"]
    assert p["matrix"][:3] == [0.801, 0.079, 0.119]
    assert p["filmic"] == [0.12, 0.55, 0.15, 0.18, 0.01, 0.28]
    np.testing.assert_allclose(p["halation_f"], [0.021948, 0.0021808, 0.00043823], rtol=1e-4)
    assert p["scattering_ratio_stock"] == pytest.approx(0.1408, abs=1e-4)
    c = STOCKS["cinestill800t"]
    np.testing.assert_allclose(c["halation_f"], [0.24, 0.22, 0.18], atol=0.01)
    assert (c["halation_energy"], c["halation_radius"]) == (0.15, 150)
    assert (p["halation_energy"], p["halation_radius"]) == (0.03, 80)


@pytest.mark.parametrize("sigma,kappa,rho,R", [(20.0, 30.0, 0.95, 80), (2.0, 5.0, 0.5, 9)])
def test_dual_psf_is_normalised_and_symmetric(sigma, kappa, rho, R):
    k = fr.dual_psf(sigma, kappa, rho, R)
    assert k.shape == (2 * R + 1,) * 2
    assert k.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(k, k[::-1, :], atol=0)
    np.testing.assert_allclose(k, k.T, atol=0)
    assert k.argmax() == k.size // 2


def test_bloom_keeps_energy_away_from_clipping():
    """BORDER_REFLECT with a symmetric kernel is a symmetric operator: columns sum to 1 like the
    rows, so bloom conserves sum(x) exactly when nothing clips."""
    x = 0.85 * scene()
    s = STOCKS["portra400"]
    out = fr.bloom(x, 0.5, [0.2, 0.3, 0.4], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"])
    assert out.max() < 1.0 and np.abs(out - x).max() > 1e-3
    np.testing.assert_allclose(out.sum(axis=(0, 1)), x.sum(axis=(0, 1)), rtol=1e-12)


def test_bloom_below_threshold_is_identity():
    x = 0.79 * scene()
    s = STOCKS["portra400"]
    out = fr.bloom(x, 0.8, s["bloom_eta"], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"])
    np.testing.assert_array_equal(out, x)


def test_bloom_one_channel_uses_green():
    x = scene()
    s = STOCKS["gold200"]
    args = (0.6, s["bloom_eta"], s["bloom_sigma"], s["bloom_kappa"], s["bloom_rho"])
    np.testing.assert_array_equal(fr.bloom(x[..., 1], *args), fr.bloom(x, *args)[..., 1])


@pytest.mark.parametrize("radius", [80, 150, 30])
def test_halation_psf_sums_to_one(radius):
    assert fr.halation_psf(radius).sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("name", ["portra400", "cinestill800t"])
def test_halation_keeps_energy(name):
    s = STOCKS[name]
    x = 0.9 * scene()
    out = fr.halation(x, 0.5, s["halation_f"], s["halation_energy"], s["halation_radius"])
    assert out.max() < 1.0 and out.min() >= 0.0 and np.abs(out - x).max() > 1e-5
    err = np.abs(out.sum(axis=(0, 1)) - x.sum(axis=(0, 1))) / x.sum(axis=(0, 1))
    assert err.max() < 1e-12


def test_halation_equals_one_kernel():
    """The three Gaussians are one linear 151 x 151 kernel (border reflect101), up to the
    energy rescale, which is then a no-op far from borders."""
    x = np.zeros((400, 400))
    x[200, 200] = 1.0
    layer_from_psf = fr.halation_psf(80)
    out = fr.halation(x, 0.0, [1.0] * 3, 0.5, 80)
    expected = -0.5 * x
    expected[125:276, 125:276] += 0.5 * layer_from_psf
    np.testing.assert_allclose(out - x, expected, atol=1e-15)


@pytest.mark.parametrize("size,k", [(1.5, 7), (0.5, None), (0.51, 3), (1.0, 5), (3.7, 15), (9.0, 15)])
def test_grain_ksize(size, k):
    assert fr.grain_ksize(size) == k


def test_grain_statistics():
    rng = np.random.default_rng(9)
    x = np.full((300, 300), 0.4)
    z = rng.standard_normal(x.shape)
    g = fr.grain_from_noise(x, z, 0.8, 1.5, 1.0, 1000.0)
    assert g.std() == pytest.approx(0.8 / 3, rel=2e-3)  # normalised to 1/3, times intensity
    assert abs(g.mean()) < 0.01 and np.abs(g).max() <= 1.0
    assert fr.grain_from_noise(x, np.zeros_like(z), 0.8, 1.5, 1.0, 1000.0).max() == 0.0
    out = fr.grain(x, z, 0.8, 1.5, 1.0, 1000.0, amount=0.1)
    np.testing.assert_allclose(out, np.clip(x + 0.1 * g, 0, 1))


def test_grain_is_darker_noisier_before_normalising():
    """Relative Poisson noise: 1 / sqrt(m), larger in the dark (no blur, no clip)."""
    rng = np.random.default_rng(2)
    z = rng.standard_normal((200, 400))
    x = np.concatenate([np.full((200, 200), 0.05), np.full((200, 200), 0.8)], axis=1)
    g = fr.grain_from_noise(x, z, 0.1, 0.0, 1.0, 1000.0)
    ratio = g[:, :200].std() / g[:, 200:].std()
    assert ratio == pytest.approx(np.sqrt(0.8 / 0.05), rel=0.05)


@pytest.mark.parametrize("name", list(STOCKS))
def test_filmic_is_monotone_and_bounded(name):
    """f(0) = 0, f'(0) has the sign of C F - E: CineStill 800T's curve (C F < E) dips below 0 for
    lux < ~0.0105 (Phos's encode clips that to black); clipped to [0, 1] every curve rises."""
    A, B, C, D, E, F = STOCKS[name]["filmic"]
    v = np.linspace(0, 20, 20001)
    y = fr.filmic(v, A, B, C, D, E, F)
    assert y[0] == pytest.approx(0.0, abs=1e-15)
    if C * F > E:
        assert np.all(np.diff(y) > -1e-15) and y.min() > -1e-15
    else:
        assert y.min() < -1e-3 and np.all(np.diff(y[v > 0.01]) > 0)
    assert np.all(np.diff(y[v > 0.1]) > 0)
    assert np.all(np.diff(np.clip(y, 0, 1)) >= -1e-15)
    assert y[-1] < 1 - E / F
    np.testing.assert_array_equal(fr.filmic(-v, A, B, C, D, E, F), np.full_like(v, y[0]))


def test_reinhard():
    """Phos's x^2 / (1 + x), clipped: 1 from x = golden ratio (1.618) up."""
    v = np.linspace(0, 50, 5001)
    y = fr.reinhard(v)
    assert np.all(np.diff(y) >= 0) and np.all(np.diff(y[v < 1.6]) > 0) and y.max() == 1.0
    np.testing.assert_allclose(y, np.minimum(v * v / (1 + v), 1.0))
    assert y[v > 1.6181].min() == 1.0
    assert fr.reinhard(np.array([-0.5]))[0] == pytest.approx(0.5)  # Phos's quirk, kept


def test_srgb_round_trip():
    v = np.linspace(0, 1, 10001)
    np.testing.assert_allclose(fr.srgb_encode(fr.srgb_decode(v)), v, atol=1e-12)
    assert fr.srgb_decode(np.array([0.5]))[0] == pytest.approx(0.21404114, abs=1e-8)
    np.testing.assert_allclose(fr.srgb_encode(np.array([2.0, -1.0])), [1.0, 0.0], atol=1e-15)
    # 1.055 - 0.055 rounds below 1 (also in Phos's float32): white truncates to 254 in Phos
    assert int(fr.srgb_encode(np.array([1.0]))[0] * 255) == 254


@pytest.mark.parametrize("name", ["portra400", "cinestill800t", "hp5plus400"])
def test_film_strengths_zero_is_tone_of_response(name):
    s = STOCKS[name]
    img = scene()
    out = fr.film(img, s, halation=0, bloom=0, grain=0)
    if s["color"]:
        lux = fr.spectral_response(img, s["matrix"])
    else:
        lux = np.repeat(((img @ s["matrix"][:3]) * s["direct"][0])[..., None], 3, axis=2)
    np.testing.assert_allclose(out, np.clip(fr.filmic(lux, *s["filmic"]), 0, 1), atol=1e-15)


def test_film_shapes_and_u8():
    s = STOCKS["portra400"]
    img = scene(40, 60)
    z = np.random.default_rng(0).standard_normal(img.shape)
    out = fr.film(img, s, draws=z)
    assert out.shape == img.shape and 0 <= out.min() and out.max() <= 1
    assert fr.film(img[..., 1], s, draws=z).shape == img.shape[:2]
    bw = fr.film(img, STOCKS["hp5plus400"], draws=z[..., 0])
    np.testing.assert_array_equal(bw[..., 0], bw[..., 1])
    u8 = fr.film_u8((fr.srgb_encode(img) * 255).astype(np.uint8), s, draws=z)
    assert u8.dtype == np.uint8 and u8.shape == img.shape
    with pytest.raises(ValueError):
        fr.film(img, s)  # grain without draws


def test_film_effects_change_the_picture():
    s = STOCKS["cinestill800t"]
    img = scene()
    base = fr.film(img, s, halation=0, bloom=0, grain=0)
    for kw in ({"halation": 1}, {"bloom": 1}):
        out = fr.film(img, s, **{"halation": 0, "bloom": 0, "grain": 0, **kw})
        assert np.abs(out - base).max() > 1e-3, kw
