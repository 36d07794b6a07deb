"""Film effects with Phos's formulas and parameter names (docs/film.md).

``film()`` runs the whole chain of a stock (data/film_stocks.ini: Kodak Portra 400, CineStill
800T, Ilford HP5 Plus 400 ...); ``bloom()``, ``halation()`` and ``grain()`` are the single
effects with the names Phos gives their parameters. Images are H x W, H x W x 3 or
N x H x W x 3 arrays (uint8, uint16, float32; float64 is computed in float32), in linear light
for the effects; ``film()`` decodes 8/16-bit images from sRGB and encodes them back, and takes
float images as linear. Every convolution runs on the context's device (``context=``)::

    import lumen
    out = lumen.film.film(photo, "cinestill800t", halation=1.5, grain=0.5, seed=7)
    lumen.film.stocks()            # [{"name": "portra400", "title": "Kodak Portra 400", ...}, ...]
"""

from . import _lumen

__all__ = ["stocks", "stock", "film", "bloom", "halation", "grain", "grain_normals"]


def stocks():
    """Every film stock as a dict of its numbers (docs/film.md, "Stocks")."""
    return _lumen._film_stocks()


def stock(name):
    """The stock named ``name`` (``lumen.ArgumentError`` lists the names when there is none)."""
    for s in stocks():
        if s["name"] == name:
            return s
    names = ", ".join(s["name"] for s in stocks())
    raise _lumen.ArgumentError(f"stock: no film stock '{name}' (there are: {names})")


def film(image, stock="portra400", *, halation=1.0, bloom=1.0, grain=1.0, seed=0, out=None,
         dtype=None, layout=None, context=None):
    """The stock's whole chain (Phos's ``optical_processing``): spectral response, grain noise,
    bloom and halation (black and white: Phos's artistic bloom), blend, tone curve.

    halation, bloom, grain: strengths, 0 (off) to 10; 1 is the stock's own look (grain 1 is
    Phos's default grain style, 0.5 its soft one). seed: the grain's seed; the same seed and
    image size give the same grain on every device and thread count."""
    return _lumen._film(image, stock, halation=float(halation), bloom=float(bloom),
                        grain=float(grain), seed=int(seed), out=out, dtype=dtype, layout=layout,
                        context=context)


def bloom(response, eta, sigma=20.0, kappa=30.0, rho=0.95, threshold=0.8, radius=0, *,
          out=None, context=None):
    """Phos's ``apply_wavelength_bloom`` / ``apply_bloom_with_psf`` on every channel:
    E = max(response - threshold, 0) * eta; clip(response - E + E (*) PSF, 0, 1), PSF(r) =
    rho exp(-r^2 / 2 sigma^2) + (1 - rho) exp(-r / kappa) normalised, radius int(4 max sigma)
    when 0, border reflect. eta, sigma, kappa, rho: one number or one per channel (R, G, B)."""
    return _lumen.bloom(response, eta=_triplet(eta), sigma=_triplet(sigma),
                        kappa=_triplet(kappa), rho=_triplet(rho), threshold=float(threshold),
                        radius=int(radius), out=out, context=context)


def halation(lux, effective_halation, energy_fraction=0.03, psf_radius=80.0, threshold=0.5, *,
             out=None, context=None):
    """Phos's ``apply_halation``: E = max(lux - threshold, 0) * f * energy_fraction, blurred by
    0.5 G(61, s) + 0.3 G(121, 2s) + 0.2 G(151, 4s) (s = 0.2 psf_radius), energy kept;
    clip(lux - E + layer, 0, 1). effective_halation: f, one number or (R, G, B)."""
    return _lumen.halation(lux, f=_triplet(effective_halation),
                           energy_fraction=float(energy_fraction), psf_radius=float(psf_radius),
                           threshold=float(threshold), out=out, context=context)


def grain(lux, intensity=0.8, grain_size=1.5, grain_density=1.0, exposure_level=1000.0,
          amount=1.0, seed=0, *, out=None, context=None):
    """Phos's Poisson grain added to the image: photon noise of mean lux * exposure_level,
    blurred (sigma grain_size), / (3 std) * grain_density * intensity clipped to [-1, 1], times
    amount, added; clipped to [0, 1]. Deterministic per (seed, image size)."""
    return _lumen.grain(lux, intensity=float(intensity), size=float(grain_size),
                        density=float(grain_density), exposure=float(exposure_level),
                        amount=float(amount), seed=int(seed), out=out, context=context)


def grain_normals(seed, h, w, image=0, channel=0):
    """The standard-normal draws the grain uses for one plane (float32 H x W): what a reference
    implementation needs to reproduce lumen's grain exactly."""
    return _lumen._grain_normals(int(seed), int(h), int(w), int(image), int(channel))


def _triplet(v):
    import numpy as np
    a = np.atleast_1d(np.asarray(v, np.float32))
    if a.shape not in ((1,), (3,)):
        raise _lumen.ArgumentError(f"expected one number or three (R, G, B), got {a.shape}")
    return a
