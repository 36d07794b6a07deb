"""lumen.compat.phos's drop-ins for Phos's effects (apply_bloom_with_psf, apply_halation) against
the float64 reference, and the one-line way to run an unmodified Phos on them
(`python3 -m lumen.compat.phos streamlit run Phos.py`), checked with stand-in Phos modules."""

import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np

import film_reference as ref
from lumen.compat import phos


def scene(h=80, w=100):
    rng = np.random.default_rng(2)
    x = rng.random((h, w)) * 0.5
    x[30:40, 40:55] = 0.98
    return x.astype(np.float32)


def test_apply_bloom_with_psf_is_phos_formula():
    x = scene()
    psf = ref.dual_psf(5.0, 8.0, 0.9, 15).astype(np.float32)
    got = phos.apply_bloom_with_psf(x, 0.12, psf, 0.8)
    want = ref.bloom(x, 0.8, [0.12] * 3, [5.0] * 3, [8.0] * 3, [0.9] * 3, radius=15)
    assert np.abs(got - want).max() < 1e-5


def test_apply_halation_interpolates_by_wavelength_as_phos():
    x = scene(150, 160)
    p = SimpleNamespace(enabled=True, effective_halation_r=0.24, effective_halation_g=0.22,
                        effective_halation_b=0.18, energy_fraction=0.15, psf_radius=150.0,
                        psf_type="exponential")
    for lam, f in ((650.0, 0.24), (550.0, 0.22), (450.0, 0.18), (600.0, 0.23), (500.0, 0.20)):
        got = phos.apply_halation(x, p, wavelength=lam)
        want = ref.halation(x, 0.5, [f] * 3, 0.15, 150.0)
        assert np.abs(got - want).max() < 1e-5, lam
    p.enabled = False
    assert phos.apply_halation(x, p) is x


def test_the_one_line_runner_patches_phos_modules(tmp_path):
    pkg = tmp_path / "modules"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "wavelength_effects.py").write_text(textwrap.dedent("""
        def apply_halation(lux, halation_params, wavelength=550.0):
            return "phos"
        def apply_bloom_with_psf(response, eta, psf, threshold):
            return "phos"
        """))
    (tmp_path / "Phos.py").write_text(textwrap.dedent("""
        from modules.wavelength_effects import apply_halation, apply_bloom_with_psf
        print(apply_halation.__module__, apply_bloom_with_psf.__module__)
        """))
    r = subprocess.run([sys.executable, "-m", "lumen.compat.phos", "Phos.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60,
                       env=dict(__import__("os").environ, PYTHONPATH=":".join(
                           [str(tmp_path)] + sys.path)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["lumen.compat.phos", "lumen.compat.phos"], r.stdout
    r = subprocess.run([sys.executable, "-m", "lumen.compat.phos", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "streamlit run Phos.py" in r.stdout
