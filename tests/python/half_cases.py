"""The ops of the f16/bf16 checks (test_py_half.py) and of the accuracy table
(scripts/half_accuracy.py, docs/semantics.md "Half precision"): each is lumen's call and a
float64 reference computed on the very values the input holds.

Inputs are made in float64, then stored as the dtype under test: float32 and float16 as NumPy
arrays, bfloat16 as a torch tensor (NumPy has no bfloat16; lumen takes it through DLPack and
returns a torch bfloat16 tensor).
"""

import numpy as np
import scipy.ndimage as ndi
import torch
import torch.nn.functional as F

import lumen

DTYPES = ("float32", "float16", "bfloat16")

_RNG = np.random.default_rng(1516)
K3 = _RNG.standard_normal((3, 3))
K7 = _RNG.standard_normal((7, 7))
K31 = _RNG.standard_normal((31, 31)) / 31
KX, KY = _RNG.standard_normal(7), _RNG.standard_normal(5)
CONV_W = _RNG.standard_normal((8, 4, 3, 3)) / 6
CONVT_W = _RNG.standard_normal((4, 6, 3, 3)) / 6
BORDER = "reflect"  # scipy's "reflect" is the same rule


def store(a64, dtype):
    """float64 data as the dtype under test (rounded to nearest even)."""
    if dtype == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(a64, np.float32)).to(torch.bfloat16)
    return a64.astype(dtype)


def as_f64(a):
    """A result or input (NumPy array or torch tensor) as float64 NumPy."""
    if isinstance(a, torch.Tensor):
        return a.to(torch.float64).numpy()
    return np.asarray(a, np.float64)


def dtype_of(a):
    return "bfloat16" if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else \
        str(a.dtype).replace("torch.", "")


def _correlate(src, k2d):
    """float64 correlation of each channel of an H x W x C image, lumen's reflect border."""
    return ndi.correlate(src, k2d[:, :, None], mode="reflect")


def _gauss_taps(sigma):
    n = int(np.floor(sigma * 8 + 1 + 0.5)) | 1
    return lumen.gaussian_kernel(n, sigma).astype(np.float64).ravel()


def _gauss_ref(src, sigma):
    g = _gauss_taps(sigma)
    return _correlate(src, np.outer(g, g))


#: name -> (lumen call on an image (keywords such as context= passed on), float64 reference on
#: float64 data, sum|k|, tolerance kind)
IMAGE_OPS = {
    "filter2d direct 3x3": (
        lambda s, **kw: lumen.filter2d(s, K3, border=BORDER, method="direct", **kw),
        lambda s: _correlate(s, K3), np.abs(K3).sum(), "f32"),
    "filter2d direct 7x7": (
        lambda s, **kw: lumen.filter2d(s, K7, border=BORDER, method="direct", **kw),
        lambda s: _correlate(s, K7), np.abs(K7).sum(), "f32"),
    "filter2d fft 31x31": (
        lambda s, **kw: lumen.filter2d(s, K31, border=BORDER, method="fft", **kw),
        lambda s: _correlate(s, K31), np.abs(K31).sum(), "f32"),
    "sep_filter2d 7x5": (
        lambda s, **kw: lumen.sep_filter2d(s, KX, KY, border=BORDER, **kw),
        lambda s: _correlate(s, np.outer(KY, KX)), np.abs(KX).sum() * np.abs(KY).sum(), "f32"),
    "gaussian_blur exact sigma 2": (
        lambda s, **kw: lumen.gaussian_blur(s, 2.0, border=BORDER, **kw),
        lambda s: _gauss_ref(s, 2.0), 1.0, "f32"),
    "gaussian_blur fast sigma 6": (
        lambda s, **kw: lumen.gaussian_blur(s, 6.0, border=BORDER, precision="fast", **kw),
        lambda s: _gauss_ref(s, 6.0), 1.0, "fast"),
    "box_blur 5x5": (
        lambda s, **kw: lumen.box_blur(s, 5, border=BORDER, **kw),
        lambda s: _correlate(s, np.full((5, 5), 1 / 25)), 1.0, "f32"),
}


def _conv_ref(x, w, **kw):
    return F.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kw).numpy()


def _convt_ref(x, w, **kw):
    return F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), **kw).numpy()


#: name -> (lumen call on (x, w) (keywords passed on), float64 reference, weight)
TENSOR_OPS = {
    "conv2d 3x3 pad 1": (lambda x, w, **kw: lumen.conv2d(x, w, padding=1, **kw),
                         lambda x, w: _conv_ref(x, w, padding=1), CONV_W),
    "conv_transpose2d 3x3 stride 2": (
        lambda x, w, **kw: lumen.conv_transpose2d(x, w, stride=2, **kw),
        lambda x, w: _convt_ref(x, w, stride=2), CONVT_W),
}


def image_data(h=48, w=64, c=3, seed=7):
    """float64 data in [-1, 1): magnitudes of every size, so relative steps show."""
    return np.random.default_rng(seed).uniform(-1, 1, (h, w, c))


def tensor_data(seed=8):
    return np.random.default_rng(seed).uniform(-1, 1, (2, 4, 17, 19))
