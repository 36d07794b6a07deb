"""Float64 reference of lumen's film effects: Phos's formulas (latteine1217/Phos, commit 25b7978).

Our own code, written from the formulas docs/film.md states; every function names the Phos
function it mirrors. Phos computes in float32; this computes the same steps in float64, with
the same clip points, thresholds, guards (1e-6) and borders:

    bloom      filter2D(..., BORDER_REFLECT)         -> pad BORDER_REFLECT, FFT correlation
    halation   GaussianBlur, default BORDER_REFLECT_101 -> pad BORDER_REFLECT_101, the same taps
               (cv2.getGaussianKernel in CV_64F), separable correlation
    grain      GaussianBlur, default BORDER_REFLECT_101 -> as halation

Images are float64 arrays, H x W (one channel) or H x W x C (channels R, G, B). Per-channel
parameters are indexed by channel; a one-channel image uses index 1 (green), as lumen does.

Used by tests/python/test_film_reference.py (against Phos's own functions when a checkout of
Phos is present) and by lumen's own film tests.
"""

import configparser

import cv2
import numpy as np
from scipy.signal import fftconvolve

#: Phos constants (the file and name in Phos).
HALATION_THRESHOLD = 0.5  # modules/wavelength_effects.py apply_halation, halation_threshold
HALATION_LAYERS = ((61, 1.0, 0.5), (121, 2.0, 0.3), (151, 4.0, 0.2))  # (ksize, sigma / s, weight)
HALATION_SIGMA_PER_RADIUS = 0.2  # sigma_base = psf_radius * 0.2 (psf_type "exponential")
GRAIN_LINEAR_RGB_COMPENSATION = 0.30  # modules/image_processing.py
FILMIC_EXPOSURE_SCALE = 10.0  # film_models.py, used by modules/tone_mapping.py
# Phos.py calculate_bloom_params / film_models.py constants (black-and-white bloom only).
SENSITIVITY_SCALE, SENSITIVITY_BASE = 0.75, 0.10
SENSITIVITY_MIN, SENSITIVITY_MAX = 0.10, 0.70
BLOOM_STRENGTH_FACTOR, BLOOM_RADIUS_FACTOR = 23.0, 20.0
BLOOM_RADIUS_MIN, BLOOM_RADIUS_MAX = 1, 50
BASE_DIFFUSION_FACTOR = 0.05
ARTISTIC_BLUR_SIGMA_SCALE = 15.0  # bloom_strategies.py apply_bloom blur_sigma_scale default


# ---- colour ---------------------------------------------------------------------------------


def srgb_decode(v):
    """sRGB -> linear (modules/optical_core.py srgb_to_linear): no clip."""
    v = np.asarray(v, np.float64)
    return np.where(v <= 0.04045, v / 12.92, np.power((v + 0.055) / 1.055, 2.4))


def srgb_encode(v):
    """linear -> sRGB (optical_core.linear_to_srgb): clip to [0, 1] first."""
    v = np.clip(np.asarray(v, np.float64), 0.0, 1.0)
    return np.where(v <= 0.0031308, v * 12.92, 1.055 * np.power(v, 1.0 / 2.4) - 0.055)


def filmic(x, A, B, C, D, E, F):
    """modules/tone_mapping.py apply_filmic_to_channel: x' = 10 max(x, 0);
    (x'(A x' + C B) + D E) / (x'(A x' + B) + D F) - E / F, 0 where the denominator is 0; no clip."""
    x = FILMIC_EXPOSURE_SCALE * np.maximum(np.asarray(x, np.float64), 0.0)
    num = x * (A * x + C * B) + D * E
    den = x * (A * x + B) + D * F
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / den - E / F, 0.0)


def reinhard(x):
    """tone_mapping.apply_reinhard_to_channel: clip(max(x * x / (1 + x), 0), 0, 1) (Phos's
    x^2 / (1 + x), not x / (1 + x); no max(x, 0) before it, so -1 < x < 0 maps above 0)."""
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = x * (x / (1.0 + x))
    return np.clip(np.maximum(m, 0.0), 0.0, 1.0)


def spectral_response(lin, matrix, color=True):
    """optical_core.spectral_response on linear RGB (H x W x 3): colour: rows R, G, B of the 3x3
    matrix; black and white: matrix[0:3] are the panchromatic weights, result H x W."""
    lin = np.asarray(lin, np.float64)
    m = np.asarray(matrix, np.float64).reshape(3, 3)
    if color:
        return np.einsum("hwk,ck->hwc", lin, m)
    return lin @ m[0]


# ---- convolution helpers ----------------------------------------------------------------------


def _channels(x):
    x = np.asarray(x, np.float64)
    if x.ndim == 2:
        return [x], [1], lambda planes: planes[0]
    return [x[..., c] for c in range(x.shape[2])], list(range(x.shape[2])), \
        lambda planes: np.stack(planes, axis=-1)


def correlate_reflect(plane, kernel, border):
    """2-D correlation of a float64 plane with an odd square kernel, centred, cv2 border mode."""
    kh, kw = kernel.shape
    ry, rx = kh // 2, kw // 2
    padded = cv2.copyMakeBorder(np.ascontiguousarray(plane, np.float64), ry, ry, rx, rx, border)
    return fftconvolve(padded, kernel[::-1, ::-1], mode="valid")


def gaussian_blur(plane, ksize, sigma, border=cv2.BORDER_REFLECT_101):
    """cv2.GaussianBlur(plane, (ksize, ksize), sigma) in float64: the CV_64F taps of
    cv2.getGaussianKernel, separable, border reflect101 (GaussianBlur's default)."""
    g = cv2.getGaussianKernel(int(ksize), float(sigma), cv2.CV_64F)[:, 0]
    r = len(g) // 2
    p = cv2.copyMakeBorder(np.ascontiguousarray(plane, np.float64), r, r, r, r, border)
    h, w = plane.shape
    rows = sum(g[i] * p[i:i + h, :] for i in range(len(g)))
    return sum(g[i] * rows[:, i:i + w] for i in range(len(g)))


# ---- bloom --------------------------------------------------------------------------------------


def dual_psf(sigma, kappa, rho, radius):
    """psf_utils.create_dual_kernel_psf: K(r) = rho exp(-r^2 / 2 sigma^2) + (1 - rho) exp(-r / kappa)
    on the (2 radius + 1)^2 square, normalised to sum 1 (a centred delta if the sum <= 1e-10)."""
    y, x = np.mgrid[-radius:radius + 1, -radius:radius + 1].astype(np.float64)
    r = np.sqrt(x * x + y * y)
    k = rho * np.exp(-r * r / (2.0 * sigma * sigma)) + (1.0 - rho) * np.exp(-r / kappa)
    s = k.sum()
    if s > 1e-10:
        return k / s
    k = np.zeros_like(k)
    k[radius, radius] = 1.0
    return k


def bloom_radius(sigma):
    """wavelength_effects.apply_wavelength_bloom: int(max(sigma_r, sigma_g, sigma_b) * 4)."""
    return int(max(sigma) * 4)


def bloom(x, threshold, eta, sigma, kappa, rho, radius=0):
    """wavelength_effects.apply_wavelength_bloom + apply_bloom_with_psf, per channel c:
    E = (x > threshold ? x - threshold : 0) * eta[c]; out = clip(x - E + E (*) K_c, 0, 1),
    K_c = dual_psf(sigma[c], kappa[c], rho[c], R), one R for all channels (radius 0:
    int(4 max sigma)), correlation with border reflect (cv2.BORDER_REFLECT)."""
    R = int(radius) if radius else bloom_radius(sigma)
    planes, idx, join = _channels(x)
    out = []
    for p, c in zip(planes, idx):
        e = np.where(p > threshold, p - threshold, 0.0) * eta[c]
        k = dual_psf(sigma[c], kappa[c], rho[c], R)
        out.append(np.clip(p - e + correlate_reflect(e, k, cv2.BORDER_REFLECT), 0.0, 1.0))
    return join(out)


# ---- halation -----------------------------------------------------------------------------------


def halation_kernel_1d(psf_radius):
    """The three truncated Gaussians of apply_halation as 1-D taps (ksize, taps, weight)."""
    s = HALATION_SIGMA_PER_RADIUS * psf_radius
    return [(k, cv2.getGaussianKernel(k, m * s, cv2.CV_64F)[:, 0], w) for k, m, w in HALATION_LAYERS]


def halation_psf(psf_radius):
    """The halation layer's 2-D kernel: sum of w * g g^T of the three Gaussians, 151 x 151 (the
    61 and 121 ones centred in it). Sums to 1 up to rounding (each getGaussianKernel sums to 1)."""
    K = np.zeros((151, 151))
    for k, g, w in halation_kernel_1d(psf_radius):
        o = (151 - k) // 2
        K[o:o + k, o:o + k] += w * np.outer(g, g)
    return K


def halation(x, threshold, f, energy_fraction, psf_radius):
    """wavelength_effects.apply_halation (psf_type "exponential"), per channel c:
    E = max(x - threshold, 0) * f[c] * energy_fraction (Phos: threshold 0.5);
    L = 0.5 G(61, s) + 0.3 G(121, 2 s) + 0.2 G(151, 4 s) of E, s = 0.2 psf_radius, G = GaussianBlur
    (border reflect101); L *= sum(E) / sum(L) when sum(L) > 1e-6; out = clip(x - E + L, 0, 1)."""
    s = HALATION_SIGMA_PER_RADIUS * psf_radius
    planes, idx, join = _channels(x)
    out = []
    for p, c in zip(planes, idx):
        e = np.maximum(p - threshold, 0.0) * f[c] * energy_fraction
        layer = sum(w * gaussian_blur(e, k, m * s) for k, m, w in HALATION_LAYERS)
        total_in, total_out = e.sum(), layer.sum()
        if total_out > 1e-6:
            layer = layer * (total_in / total_out)
        out.append(np.clip(p - e + layer, 0.0, 1.0))
    return join(out)


# ---- grain --------------------------------------------------------------------------------------


def grain_ksize(size):
    """PoissonGrainStrategy: int(4 size) | 1 clamped to [3, 15]; None (no blur) when size <= 0.5."""
    if size <= 0.5:
        return None
    return max(3, min(int(size * 4) | 1, 15))


def grain_from_noise(x, normal_draws, intensity, size, density, exposure):
    """grain_strategies.PoissonGrainStrategy.apply on one plane, given the standard-normal draws z:
    m = max(x exposure, 1); photons = max(m + sqrt(m) z, 0); n = (photons - m) / (m + 1e-6);
    n = GaussianBlur(n, ksize, size) (reflect101) when size > 0.5; n /= 3 std(n) when std > 1e-6
    (population std over the plane); return clip(n density intensity, -1, 1).
    x and normal_draws: same shape (a plane, or H x W x C: each channel separately)."""
    x = np.asarray(x, np.float64)
    z = np.asarray(normal_draws, np.float64)
    if x.ndim == 3:
        return np.stack([grain_from_noise(x[..., c], z[..., c], intensity, size, density, exposure)
                         for c in range(x.shape[2])], axis=-1)
    m = np.maximum(x * exposure, 1.0)
    photons = np.maximum(m + np.sqrt(m) * z, 0.0)
    n = (photons - m) / (m + 1e-6)
    k = grain_ksize(size)
    if k is not None:
        n = gaussian_blur(n, k, size)
    sd = n.std()
    if sd > 1e-6:
        n = n / (3.0 * sd)
    return np.clip(n * density * intensity, -1.0, 1.0)


def grain(x, normal_draws, intensity, size, density, exposure, amount=1.0):
    """lumen_grain on its own (include/lumen.h): clip(x + amount * grain_from_noise(x, ...), 0, 1).
    Not a Phos function: Phos adds grain only inside the chain (see film())."""
    g = grain_from_noise(x, normal_draws, intensity, size, density, exposure)
    return np.clip(np.asarray(x, np.float64) + amount * g, 0.0, 1.0)


# ---- black-and-white bloom (Phos's artistic bloom) -----------------------------------------------


def artistic_bloom_params(mean_response, sensitivity_factor):
    """Phos.py calculate_bloom_params: (sens, radius, strength, base) from the mean response."""
    avg = float(np.clip(mean_response, 0.0, 1.0))
    sens = (1.0 - avg ** (1.0 / 2.2)) * SENSITIVITY_SCALE + SENSITIVITY_BASE
    sens = float(np.clip(sens, SENSITIVITY_MIN, SENSITIVITY_MAX))
    strength = BLOOM_STRENGTH_FACTOR * sens ** 2 * sensitivity_factor
    radius = int(np.clip(int(BLOOM_RADIUS_FACTOR * sens ** 2 * sensitivity_factor),
                         BLOOM_RADIUS_MIN, BLOOM_RADIUS_MAX))
    base = BASE_DIFFUSION_FACTOR * sensitivity_factor
    return sens, radius, strength, base


def artistic_bloom(x, sens, radius, strength, base):
    """bloom_strategies.ArtisticBloomStrategy.apply (blur_scale 1, blur_sigma_scale 15):
    w = clip((base + x^2) sens, 0, 1); b = GaussianBlur(x w, k, 15 sens) with k = radius made odd
    (+1 if even), reflect101; e = b w strength; return e / (1 + e)."""
    x = np.asarray(x, np.float64)
    w = np.clip((base + x * x) * sens, 0.0, 1.0)
    k = radius if radius % 2 == 1 else radius + 1
    b = gaussian_blur(x * w, k, sens * ARTISTIC_BLUR_SIGMA_SCALE)
    e = b * w * strength
    return e / (1.0 + e)


# ---- stocks ----------------------------------------------------------------------------------


_NUMBER_LISTS = ("matrix", "filmic", "bloom_eta", "bloom_eta_ratio", "bloom_sigma", "bloom_kappa",
                 "bloom_rho", "halation_f", "diffuse", "direct", "grain_layer")
_INTS = ("color", "iso", "halation")


def load_stocks(path):
    """data/film_stocks.ini -> {name: dict}; number lists as lists of float, color/iso/halation as
    int, title/tone/bloom_mode as str, every other key as float."""
    cp = configparser.ConfigParser(comment_prefixes=("#",), inline_comment_prefixes=None,
                                   interpolation=None)
    cp.optionxform = str
    with open(path, encoding="utf-8") as fh:
        cp.read_file(fh)
    stocks = {}
    for name in cp.sections():
        d = {"name": name}
        for key, value in cp.items(name):
            if key in _NUMBER_LISTS:
                d[key] = [float(v) for v in value.split()]
            elif key in _INTS:
                d[key] = int(value)
            elif key in ("title", "tone", "bloom_mode"):
                d[key] = value.strip()
            else:
                d[key] = float(value)
        stocks[name] = d
    return stocks


# ---- the chain ----------------------------------------------------------------------------------


def _as_rgb(img):
    img = np.asarray(img, np.float64)
    if img.ndim == 2:
        return np.repeat(img[..., None], 3, axis=2)
    return img


def film(img, stock, halation=1.0, bloom=1.0, grain=1.0, draws=None, tone=None):
    """Phos.py optical_processing with its sidebar defaults (docs/film.md, "The chain"), on a
    linear image (H x W x 3, or H x W taken as R = G = B), in float64. Returns the tone-mapped
    linear image clipped to [0, 1] (what Phos sRGB-encodes), of the input's shape.

    halation, bloom, grain: strengths (1 = the stock's, 0 = off): they scale halation's
    energy_fraction, bloom's eta (black and white: the artistic bloom term) and the grain terms.
    draws: standard-normal draws for the grain, H x W x 3 (colour: per emulsion layer R, G, B)
    or H x W (black and white); required when grain != 0.
    tone: "filmic" or "reinhard" (default: the stock's)."""
    src = np.asarray(img, np.float64)
    lin = _as_rgb(src)
    tone = tone or stock["tone"]
    use_grain = grain != 0
    if use_grain and draws is None:
        raise ValueError("film(): grain != 0 needs draws (standard normal, one per layer and pixel)")
    gp = (stock["grain_intensity"], stock["grain_size"], stock["grain_density"], stock["grain_exposure"])

    if stock["color"]:
        resp = spectral_response(lin, stock["matrix"], True)
        eta = [e * bloom for e in stock["bloom_eta"]]
        b = _bloom(resp, stock["bloom_threshold"], eta, stock["bloom_sigma"],
                   stock["bloom_kappa"], stock["bloom_rho"])
        if stock["halation"]:
            b = _halation(b, HALATION_THRESHOLD, stock["halation_f"],
                          stock["halation_energy"] * halation, stock["halation_radius"])
        d = np.asarray(stock["diffuse"])
        i = np.asarray(stock["direct"])
        lux = b * d + resp * i
        if use_grain:
            g = grain_from_noise(resp, draws, *gp)
            pan = stock["grain_pan"] * grain
            layer = np.asarray(stock["grain_layer"]) * GRAIN_LINEAR_RGB_COMPENSATION * grain
            # every output channel gets the red layer's noise at its own layer's weight and the
            # green and blue layers' noise at the panchromatic weight (combine_layers_for_channel)
            lux = lux + g[..., 0:1] * layer + (g[..., 1:2] + g[..., 2:3]) * pan
    else:
        total = spectral_response(lin, stock["matrix"], False)
        sens, radius, strength, base = artistic_bloom_params(total.mean(), stock["sensitivity"])
        b = artistic_bloom(total, sens, radius, strength, base) * bloom
        lux = b * stock["diffuse"][0] + total * stock["direct"][0]
        if use_grain:
            z = np.asarray(draws, np.float64)
            z = z[..., 1] if z.ndim == 3 else z
            lux = lux + grain_from_noise(total, z, *gp) * stock["grain_pan"] * grain
        lux = lux[..., None]

    if tone == "filmic":
        out = filmic(lux, *stock["filmic"])
    elif tone == "reinhard":
        out = reinhard(lux)
    else:
        raise ValueError(f"unknown tone {tone!r}")
    out = np.clip(out, 0.0, 1.0)
    if out.shape[2] == 1:
        out = np.repeat(out, 3, axis=2)
    return out[..., 1] if src.ndim == 2 else out


_bloom = bloom  # film()'s parameters shadow the effect functions
_halation = halation


def film_u8(img_u8, stock, **kw):
    """The chain as Phos's app runs it on an 8-bit RGB image: v / 255, sRGB decode, film(),
    sRGB encode, then (v * 255).astype(uint8) -- truncation, as Phos does -- to RGB uint8."""
    lin = srgb_decode(np.asarray(img_u8, np.float64) / 255.0)
    enc = srgb_encode(film(lin, stock, **kw))
    return (enc * 255.0).astype(np.uint8)
