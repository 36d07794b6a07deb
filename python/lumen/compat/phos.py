"""The ``phos_gpu`` API of Phos-style film-emulation tools, computed by lumen.

Switch with one line::

    from lumen.compat import phos as phos_gpu

What maps to what (phos_gpu = Phos's ``experiments/phos_gpu.py``, version 1.0):

=========================================  ===================================================
phos_gpu                                   here
=========================================  ===================================================
``convolve_gpu(image, kernel, backend)``   ``lumen.filter2d(image, kernel, border="reflect")``
``convolve_batch_gpu(images, kernel)``     the same for each image, returned as a list
``convolve_pytorch``, ``convolve_cupy``,   ``convolve_gpu`` with backend ``"pytorch"`` or
``convolve_batch_pytorch``                 ``"cupy"`` (or on an explicit ``device``)
``get_gpu_info()``                         ``lumen.device_info("auto")`` in phos_gpu's keys
``benchmark_gpu(image_size, kernel_size)`` ``cv2.filter2D`` (BORDER_REFLECT) timed against lumen
``GPU_BACKEND``, ``GPU_AVAILABLE``, ...    read from ``lumen.device_info("auto")`` at import
=========================================  ===================================================

Every function computes what phos_gpu's CPU path computes, ``cv2.filter2D(image, -1, kernel,
borderType=cv2.BORDER_REFLECT)``: correlation, centre anchor ``(kw // 2, kh // 2)``, border
``cba|abcd|dcb``. lumen picks direct or FFT itself. phos_gpu's own GPU paths differed from its
CPU path (torch padded with its ``"reflect"``, which is BORDER_REFLECT_101; CuPy flipped the
kernel); here every backend gives the CPU path's answer.

"GPU" means the best device lumen has. Today that is the CPU, so ``GPU_AVAILABLE`` is False,
``GPU_BACKEND`` is ``"cpu"`` and ``get_gpu_info()`` says why; the convolutions still run (on
lumen's CPU code).
"""

import math
import threading
import time

import numpy as np

import lumen

__all__ = [
    "GPU_AVAILABLE", "GPU_BACKEND", "GPU_DEVICE", "PYTORCH_AVAILABLE", "CUPY_AVAILABLE",
    "convolve_gpu", "convolve_batch_gpu", "get_gpu_info", "benchmark_gpu",
    "convolve_pytorch", "convolve_batch_pytorch", "convolve_cupy",
    "apply_bloom_with_psf", "apply_halation", "apply_wavelength_bloom", "install",
]

#: lumen.devices() kinds that count as a GPU for phos_gpu's ``available``.
_GPU_KINDS = ("discrete", "integrated")

_AUTO = lumen.device_info("auto")

#: True when lumen's default device is a GPU (phos_gpu: torch found MPS or CUDA).
GPU_AVAILABLE = _AUTO["kind"] in _GPU_KINDS
#: The default device's backend ("cuda", ...), or "cpu" when it is not a GPU.
GPU_BACKEND = _AUTO["backend"] if GPU_AVAILABLE else "cpu"
#: The lumen device string the default device is asked for by (phos_gpu: a torch.device).
GPU_DEVICE = GPU_BACKEND
#: True: convolve_pytorch and convolve_batch_pytorch work (on lumen; PyTorch is not used).
PYTORCH_AVAILABLE = True
#: True when backend="cupy" can run, i.e. lumen has a CUDA device.
CUPY_AVAILABLE = GPU_BACKEND == "cuda"

_BACKENDS = ("auto", "pytorch", "cupy", "cpu")
_tls = threading.local()


def convolve_gpu(image, kernel, backend="auto"):
    """``cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT)``, computed by lumen.

    image: H x W or H x W x C (each channel filtered alone), uint8, uint16, float16, float32 or
    float64,
    any strides. float64 is filtered in float32 and returned as float64 (cv2 also keeps the
    input's dtype). Other dtypes raise TypeError, other shapes ValueError.
    kernel: a 2-D array of numbers (used as float32); correlation, centre anchor.
    backend: "auto" and "pytorch" run on lumen's default device, "cpu" on its CPU, "cupy" on
    its CUDA device (RuntimeError when it has none, as phos_gpu without CuPy). Any other value
    raises ValueError("Unknown backend: ...").
    Returns a new array of the image's shape and dtype.
    """
    return _filter(image, kernel, _context(_backend_device(backend)))


def convolve_batch_gpu(images, kernel):
    """``[convolve_gpu(image, kernel) for image in images]``: a list of new arrays.

    images: any iterable of images (a list, or an N x H x W array); they may differ in shape
    and dtype. lumen's per-thread context keeps FFT plans and kernel spectra between calls.
    """
    return [convolve_gpu(image, kernel) for image in images]


def get_gpu_info():
    """The device convolve_gpu runs on (``lumen.device_info("auto")``), in phos_gpu's keys.

    available: bool, True when that device is a GPU. backend: its backend ("cuda", ...) or
    "cpu". device_name: its name (the CPU's model today). memory_total_gb, memory_free_gb: its
    memory in GB of 10**9 bytes (as phos_gpu), None when lumen cannot tell. reason: why no GPU
    is used (a sentence), or None when one is.
    """
    info = lumen.device_info("auto")
    gpu = info["kind"] in _GPU_KINDS
    return {
        "available": bool(gpu),
        "backend": info["backend"] if gpu else "cpu",
        "device_name": str(info["name"]),
        "memory_total_gb": _gb(info.get("memory_total")),
        "memory_free_gb": _gb(info.get("memory_free")),
        "reason": None if gpu else _no_gpu_reason(info),
    }


def benchmark_gpu(image_size=(2000, 3000), kernel_size=201, *, repeat=3):
    """phos_gpu's benchmark: cv2.filter2D (BORDER_REFLECT) against convolve_gpu.

    Both filter the same random float32 image of image_size (H, W) in [0, 1) with the same
    normalised Gaussian kernel_size x kernel_size kernel (sigma = kernel_size / 6, the outer
    product of cv2.getGaussianKernel). Each runs once to warm up, then `repeat` times.
    Returns cpu_time_ms (cv2, best run), gpu_time_ms (lumen, best run), speedup (cpu / gpu),
    gpu_backend (GPU_BACKEND: the backend lumen ran on) and psnr_db (10 log10(1 / MSE) between
    the two results, peak 1; inf when they are equal). Needs OpenCV (cv2).
    """
    import cv2

    h, w = (int(n) for n in image_size)
    image = np.random.default_rng(0).random((h, w), dtype=np.float32)
    g = cv2.getGaussianKernel(int(kernel_size), kernel_size / 6.0)
    kernel = (g @ g.T).astype(np.float32)
    cpu_ms, ref = _best_ms(
        lambda: cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT), repeat)
    gpu_ms, got = _best_ms(lambda: convolve_gpu(image, kernel), repeat)
    mse = float(np.mean((ref.astype(np.float64) - got.astype(np.float64)) ** 2))
    return {
        "cpu_time_ms": cpu_ms,
        "gpu_time_ms": gpu_ms,
        "speedup": cpu_ms / gpu_ms if gpu_ms > 0 else math.inf,
        "gpu_backend": GPU_BACKEND,
        "psnr_db": 10.0 * math.log10(1.0 / mse) if mse > 0 else math.inf,
    }


def convolve_pytorch(image_np, kernel_np, device=None):
    """phos_gpu's torch path: convolve_gpu on `device`.

    device: None (lumen's default device), a lumen device string ("cpu", "cuda", "cuda:0") or
    anything whose str() is one, e.g. torch.device("cuda"). Other devices raise ValueError.
    """
    return _filter(image_np, kernel_np, _context(None if device is None else str(device)))


def convolve_batch_pytorch(images_np, kernel_np, device=None):
    """``[convolve_pytorch(image, kernel_np, device) for image in images_np]``."""
    return [convolve_pytorch(image, kernel_np, device) for image in images_np]


def convolve_cupy(image_np, kernel_np):
    """phos_gpu's CuPy path: ``convolve_gpu(image_np, kernel_np, backend="cupy")``."""
    return convolve_gpu(image_np, kernel_np, backend="cupy")


# ---- helpers -----------------------------------------------------------------------------


def _backend_device(backend):
    """phos_gpu backend name -> lumen device string, or None for lumen's default device."""
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"Unknown backend: {backend!r} (expected one of {', '.join(_BACKENDS)})")
    if backend == "cupy":
        if not CUPY_AVAILABLE:
            raise RuntimeError("backend 'cupy' needs a CUDA device and lumen has none "
                               f"({_device_names()}); use backend='auto'")
        return "cuda"
    return "cpu" if backend == "cpu" else None


def _context(device):
    """None (lumen's per-thread default context) for the default device, else this thread's
    lumen.Context on `device` (kept, so its FFT plans and kernel spectra are reused)."""
    if device is None or (device == "cpu" and not GPU_AVAILABLE):
        return None
    contexts = _tls.__dict__.setdefault("contexts", {})
    if device not in contexts:
        contexts[device] = lumen.Context(device=device)
    return contexts[device]


def _filter(image, kernel, context):
    """lumen.filter2d with cv2.filter2D's BORDER_REFLECT semantics; float64 via float32."""
    ndim = getattr(image, "ndim", None)
    if ndim is not None and ndim not in (2, 3):
        raise ValueError("image: expected H x W or H x W x C (one image), got shape "
                         f"{tuple(image.shape)}; use convolve_batch_gpu for several")
    if isinstance(image, np.ndarray) and image.dtype == np.float64:
        out = lumen.filter2d(image.astype(np.float32), kernel, border="reflect", context=context)
        return out.astype(np.float64)
    return lumen.filter2d(image, kernel, border="reflect", context=context)


def _best_ms(fn, repeat):
    """Runs fn once to warm up, then `repeat` times; returns (best time in ms, last result)."""
    result = fn()
    best = math.inf
    for _ in range(max(1, int(repeat))):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, (time.perf_counter() - t0) * 1000.0)
    return best, result


def _gb(nbytes):
    return None if nbytes is None else float(nbytes) / 1e9


def _device_names():
    return "devices: " + ", ".join(f"{d['name']} ({d['kind']})" for d in lumen.devices())


def _no_gpu_reason(info):
    return (f"lumen found no GPU ({_device_names()}); convolutions run on the CPU "
            f"({info['name']}) with the same results")


# ---- Phos's effects (modules/wavelength_effects.py), computed by lumen -------------------------
#
# Drop-ins with Phos's signatures and results (docs/film.md): the same formulas, lumen's
# convolutions (on lumen's default device, or the one of $LUMEN_DEVICE). An unmodified Phos uses
# them when started through lumen, one line (install() patches Phos's modules as they load):
#
#     python3 -m lumen.compat.phos streamlit run Phos.py

_WAVELENGTHS = {650.0: 0, 550.0: 1, 450.0: 2}


def apply_bloom_with_psf(response, eta, psf, threshold):
    """Phos's apply_bloom_with_psf: E = (response - threshold where above, else 0) * eta;
    clip(response - E + filter2D(E, psf, BORDER_REFLECT), 0, 1), float32."""
    r = np.asarray(response, np.float32)
    e = (np.where(r > threshold, r - threshold, 0.0) * eta).astype(np.float32)
    scattered = lumen.filter2d(e, np.asarray(psf, np.float32), border="reflect",
                               context=_context(None))
    return np.clip(r - e + scattered, 0.0, 1.0)


def _halation_f(params, wavelength):
    """Phos's interpolation of effective_halation_r/g/b by wavelength (apply_halation)."""
    r, g, b = (params.effective_halation_r, params.effective_halation_g,
               params.effective_halation_b)
    if wavelength <= 450:
        return b
    if wavelength >= 650:
        return r
    if wavelength < 550:
        t = (wavelength - 450) / 100.0
        return (1 - t) * b + t * g
    t = (wavelength - 550) / 100.0
    return (1 - t) * g + t * r


def apply_halation(lux, halation_params, wavelength=550.0):
    """Phos's apply_halation (psf_type "exponential", its default): lumen.film.halation on the
    channel with f interpolated by wavelength as Phos does. Other psf types run Phos's own
    function when install() patched it, else raise NotImplementedError."""
    if not halation_params.enabled:
        return lux
    if getattr(halation_params, "psf_type", "exponential") != "exponential":
        original = _ORIGINALS.get("apply_halation")
        if original is None:
            raise NotImplementedError(f"psf_type {halation_params.psf_type!r}: lumen has the "
                                      "'exponential' halation only")
        return original(lux, halation_params, wavelength)
    f = _halation_f(halation_params, float(wavelength))
    return lumen.film.halation(np.asarray(lux, np.float32), [f],
                               float(halation_params.energy_fraction),
                               float(halation_params.psf_radius), context=_context(None))


def apply_wavelength_bloom(response_r, response_g, response_b, wavelength_params, bloom_params):
    """Phos's apply_wavelength_bloom: sigma, kappa, rho, eta from Phos's own Mie table (Phos's
    psf_utils, so this needs a Phos checkout on sys.path) at 650/550/450 nm and the ISO, eta
    normalised to green times scattering_ratio; then lumen.film.bloom per channel."""
    from modules.psf_utils import load_mie_lookup_table, lookup_mie_params
    table = load_mie_lookup_table(wavelength_params.mie_lookup_path)
    iso = wavelength_params.iso_value
    lams = (wavelength_params.lambda_r, wavelength_params.lambda_g, wavelength_params.lambda_b)
    p = [lookup_mie_params(lam, iso, table) for lam in lams]
    ratio = bloom_params.scattering_ratio
    eta = [p[0][3] / p[1][3] * ratio, ratio, p[2][3] / p[1][3] * ratio]
    radius = int(max(q[0] for q in p) * 4)
    out = []
    for c, resp in enumerate((response_r, response_g, response_b)):
        out.append(lumen.film.bloom(np.asarray(resp, np.float32), [eta[c]], [p[c][0]],
                                    [p[c][1]], [p[c][2]], bloom_params.threshold, radius,
                                    context=_context(None)))
    return tuple(out)


#: Phos's own functions, kept by install() (the fallbacks of what lumen lacks).
_ORIGINALS = {}
_PATCHED = ("apply_bloom_with_psf", "apply_halation", "apply_wavelength_bloom")


def _patch(module):
    for name in _PATCHED:
        if hasattr(module, name) and getattr(module, name) is not globals()[name]:
            _ORIGINALS.setdefault(name, getattr(module, name))
            setattr(module, name, globals()[name])


def install():
    """Makes Phos use lumen's effects: patches modules.wavelength_effects now if it is loaded,
    and as soon as it loads otherwise (so `from modules.wavelength_effects import
    apply_halation` in Phos.py gets lumen's). Returns the names patched."""
    import importlib.abc
    import sys

    target = "modules.wavelength_effects"
    if target in sys.modules:
        _patch(sys.modules[target])
        return _PATCHED

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target_=None):
            if name != target:
                return None
            sys.meta_path.remove(self)
            try:
                import importlib.util
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            exec_module = loader.exec_module

            def exec_and_patch(module):
                exec_module(module)
                _patch(module)
            loader.exec_module = exec_and_patch
            return spec

    sys.meta_path.insert(0, _Finder())
    return _PATCHED


def _main(argv=None):
    """python3 -m lumen.compat.phos MODULE [ARGS...]: runs a Python module (streamlit, or
    python3's script runner) with Phos's effects patched to lumen's."""
    import runpy
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m lumen.compat.phos streamlit run Phos.py [ARGS...]\n"
              "       python3 -m lumen.compat.phos SCRIPT.py [ARGS...]\n"
              "Runs Phos (or any program using Phos's modules) with its bloom and halation\n"
              "computed by lumen (docs/film.md). LUMEN_DEVICE picks the device.")
        return 0 if argv else 2
    install()
    if argv[0].endswith(".py"):
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    else:
        sys.argv = argv
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    # run as `python3 -m`: this file is __main__; patch with the importable module's functions
    from lumen.compat import phos as _module
    raise SystemExit(_module._main())
