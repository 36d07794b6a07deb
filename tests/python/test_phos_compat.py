"""lumen.compat.phos: the phos_gpu API (Phos's experiments/phos_gpu.py) on lumen.

Phos-style code that imports ``phos_gpu`` runs unchanged with the module switched in, and
gives what phos_gpu gives on a machine without a GPU: cv2.filter2D(..., BORDER_REFLECT).
Every numeric check is against cv2.filter2D or conftest.ref_correlate (float64) within the
F32_REL rule of tolerances.py; test_checks_can_fail shows that the tolerance separates the
answers the original's GPU paths gave (reflect101 border, flipped kernel) from the right one.

Runs in-process: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_phos_compat.py
"""

import inspect
import math
import sys
import threading
import types

import cv2
import numpy as np
import pytest

import lumen
import tolerances as tol
from conftest import dyadic_kernel, make_image, ref_correlate, rng_for
from lumen.compat import phos as phos_gpu

GPU_KINDS = ("discrete", "integrated")
INFO_KEYS = {"available", "backend", "device_name", "memory_total_gb", "memory_free_gb", "reason"}
BENCH_KEYS = {"cpu_time_ms", "gpu_time_ms", "speedup", "gpu_backend", "psnr_db"}


def cv2_reflect(image, kernel):
    """phos_gpu's CPU path, the answer every backend must give."""
    return cv2.filter2D(image, -1, np.asarray(kernel, np.float32), borderType=cv2.BORDER_REFLECT)


def gaussian_2d(ksize, sigma):
    g = cv2.getGaussianKernel(ksize, sigma)
    return (g @ g.T).astype(np.float32)


def lumen_has_gpu():
    return any(d["kind"] in GPU_KINDS for d in lumen.devices())


# ---- the API's shape ------------------------------------------------------------------------


def test_signatures_match_phos_gpu():
    sig = inspect.signature
    assert list(sig(phos_gpu.convolve_gpu).parameters) == ["image", "kernel", "backend"]
    assert sig(phos_gpu.convolve_gpu).parameters["backend"].default == "auto"
    assert list(sig(phos_gpu.convolve_batch_gpu).parameters) == ["images", "kernel"]
    assert list(sig(phos_gpu.get_gpu_info).parameters) == []
    bench = sig(phos_gpu.benchmark_gpu).parameters
    assert list(bench)[:2] == ["image_size", "kernel_size"]
    assert bench["image_size"].default == (2000, 3000)
    assert bench["kernel_size"].default == 201
    assert all(p.default is not inspect.Parameter.empty for p in bench.values())
    pt = sig(phos_gpu.convolve_pytorch).parameters
    assert list(pt) == ["image_np", "kernel_np", "device"] and pt["device"].default is None


def test_module_constants_describe_lumens_default_device():
    info = lumen.device_info("auto")
    gpu = info["kind"] in GPU_KINDS
    assert phos_gpu.GPU_AVAILABLE is gpu
    assert phos_gpu.GPU_BACKEND == (info["backend"] if gpu else "cpu")
    assert isinstance(phos_gpu.GPU_BACKEND, str)
    assert phos_gpu.PYTORCH_AVAILABLE is True
    assert phos_gpu.CUPY_AVAILABLE is (phos_gpu.GPU_BACKEND == "cuda")
    assert set(phos_gpu.__all__) >= {"convolve_gpu", "convolve_batch_gpu", "get_gpu_info",
                                     "benchmark_gpu", "GPU_BACKEND", "GPU_AVAILABLE"}


# ---- convolve_gpu against cv2.filter2D BORDER_REFLECT ---------------------------------------

# name: (image shape, kernel shape). Sizes odd on purpose; the big ones take lumen's FFT path.
CASES = {
    "gray-3x3": ((37, 29), (3, 3)),
    "gray-asym-w5h2": ((37, 29), (2, 5)),
    "gray-even-4x4": ((37, 29), (4, 4)),
    "rgb-7x7": ((31, 45, 3), (7, 7)),
    "gray-kernel-larger-than-image": ((23, 19), (41, 51)),
    "gray-61x61": ((130, 170), (61, 61)),
    "rgb-151x151": ((160, 210, 3), (151, 151)),
}


@pytest.mark.parametrize("case", CASES)
def test_convolve_gpu_equals_cv2_reflect(case):
    shape, (kh, kw) = CASES[case]
    rng = rng_for("phos", case)
    image = make_image(rng, shape, np.float32)
    kernel = rng.uniform(-1, 1, (kh, kw)).astype(np.float32)
    got = phos_gpu.convolve_gpu(image, kernel)
    assert type(got) is np.ndarray and got.dtype == np.float32 and got.shape == image.shape
    atol = tol.f32_atol(image, np.abs(kernel).sum())
    tol.assert_f32_close(got, cv2_reflect(image, kernel), atol, f"{case} vs cv2.filter2D")
    if kh * kw <= 64:  # the float64 oracle, independent of cv2's DFT path
        tol.assert_f32_close(got, ref_correlate(image, kernel, border="reflect"), atol,
                             f"{case} vs float64 reference")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_integer_images_equal_cv2_exactly(dtype):
    rng = rng_for("phos-int", np.dtype(dtype).name)
    image = make_image(rng, (33, 27, 3), dtype)
    kernel = dyadic_kernel(rng, 5, 5)  # exact in f32: one right answer (tolerances.py)
    got = phos_gpu.convolve_gpu(image, kernel)
    tol.assert_int_equal(got, cv2_reflect(image, kernel), f"{np.dtype(dtype).name}")


def test_float64_image_is_filtered_and_kept_float64():
    rng = rng_for("phos-f64")
    image = rng.uniform(0, 1, (41, 35))                        # float64, like cv2 accepts
    kernel = gaussian_2d(9, 2.0)
    got = phos_gpu.convolve_gpu(image, kernel)
    assert got.dtype == np.float64 and got.shape == image.shape
    want = cv2.filter2D(image, -1, kernel.astype(np.float64), borderType=cv2.BORDER_REFLECT)
    tol.assert_f32_close(got, want, tol.f32_atol(image), "float64 image")


def test_views_and_channel_slices_are_used_as_given():
    """Phos splits an H x W x 3 image into channels with image[:, :, c] (strided views)."""
    rng = rng_for("phos-views")
    rgb = make_image(rng, (50, 64, 3), np.float32)
    kernel = rng.uniform(0, 1, (9, 5)).astype(np.float32)
    before = rgb.copy()
    views = {"channel": rgb[:, :, 1], "flipped": rgb[::-1, :, 2], "crop": rgb[5:40, 3:50],
             "fortran": np.asfortranarray(rgb[:, :, 0])}
    for name, view in views.items():
        got = phos_gpu.convolve_gpu(view, kernel)
        want = cv2_reflect(np.ascontiguousarray(view), kernel)
        tol.assert_f32_close(got, want, tol.f32_atol(view, kernel.sum()), name)
    np.testing.assert_array_equal(rgb, before, err_msg="convolve_gpu wrote into its input")


def test_backends_give_the_same_answer():
    rng = rng_for("phos-backends")
    image = make_image(rng, (45, 61), np.float32)
    kernel = rng.uniform(-1, 1, (7, 11)).astype(np.float32)
    want = cv2_reflect(image, kernel)
    atol = tol.f32_atol(image, np.abs(kernel).sum())
    backends = ["auto", "pytorch", "cpu"] + (["cupy"] if phos_gpu.CUPY_AVAILABLE else [])
    for backend in backends:
        got = phos_gpu.convolve_gpu(image, kernel, backend=backend)
        tol.assert_f32_close(got, want, atol, f"backend={backend}")
    for device in (None, "cpu"):
        got = phos_gpu.convolve_pytorch(image, kernel, device)
        tol.assert_f32_close(got, want, atol, f"convolve_pytorch device={device}")


def test_cupy_backend_without_cuda_raises_runtime_error():
    if phos_gpu.CUPY_AVAILABLE:
        pytest.skip("lumen has a CUDA device here: backend='cupy' runs (test_backends_...)")
    image = np.zeros((8, 8), np.float32)
    with pytest.raises(RuntimeError, match="cupy"):
        phos_gpu.convolve_gpu(image, np.ones((3, 3), np.float32), backend="cupy")
    with pytest.raises(RuntimeError, match="cupy"):
        phos_gpu.convolve_cupy(image, np.ones((3, 3), np.float32))


# ---- convolve_batch_gpu -----------------------------------------------------------------------


def test_convolve_batch_gpu_returns_a_list_of_per_image_results():
    rng = rng_for("phos-batch")
    kernel = gaussian_2d(31, 5.0)
    images = [make_image(rng, (70, 90), np.float32), make_image(rng, (70, 90), np.float32),
              make_image(rng, (40, 52, 3), np.float32)]
    got = phos_gpu.convolve_batch_gpu(images, kernel)
    assert type(got) is list and len(got) == len(images)
    for i, (g, img) in enumerate(zip(got, images)):
        assert type(g) is np.ndarray and g.dtype == np.float32 and g.shape == img.shape
        tol.assert_f32_close(g, cv2_reflect(img, kernel), tol.f32_atol(img), f"image {i}")
    stack = np.stack(images[:2])                               # N x H x W, iterated per image
    got_stack = phos_gpu.convolve_batch_gpu(stack, kernel)
    assert type(got_stack) is list and len(got_stack) == 2
    tol.assert_f32_close(got_stack[1], got[1], tol.f32_atol(images[1]), "stacked batch")
    assert phos_gpu.convolve_batch_gpu([], kernel) == []
    pt = phos_gpu.convolve_batch_pytorch(images[:2], kernel)
    assert type(pt) is list and len(pt) == 2


# ---- get_gpu_info -----------------------------------------------------------------------------


def test_get_gpu_info_keys_types_and_honesty():
    info = phos_gpu.get_gpu_info()
    assert set(info) == INFO_KEYS
    assert type(info["available"]) is bool
    assert isinstance(info["backend"], str) and isinstance(info["device_name"], str)
    assert info["device_name"]
    dev = lumen.device_info("auto")
    assert info["device_name"] == dev["name"]
    for key, lumen_key in (("memory_total_gb", "memory_total"), ("memory_free_gb", "memory_free")):
        if dev.get(lumen_key) is None:
            assert info[key] is None
        else:
            assert type(info[key]) is float
            assert info[key] == pytest.approx(dev[lumen_key] / 1e9, rel=0.05), key
    if info["memory_total_gb"] is not None:
        assert info["memory_total_gb"] > 0
    assert info["available"] is (dev["kind"] in GPU_KINDS)
    if lumen_has_gpu():
        assert info["available"] and info["reason"] is None
    else:
        assert info["available"] is False and info["backend"] == "cpu"
        assert isinstance(info["reason"], str) and "GPU" in info["reason"]
    assert info["backend"] == phos_gpu.GPU_BACKEND
    assert info["available"] is phos_gpu.GPU_AVAILABLE


# ---- benchmark_gpu ----------------------------------------------------------------------------


def test_benchmark_gpu_small_returns_sane_numbers():
    r = phos_gpu.benchmark_gpu(image_size=(120, 160), kernel_size=31)
    assert set(r) == BENCH_KEYS
    for key in ("cpu_time_ms", "gpu_time_ms", "speedup", "psnr_db"):
        assert type(r[key]) is float, key
    assert 0 < r["cpu_time_ms"] < 60_000 and 0 < r["gpu_time_ms"] < 60_000
    assert r["speedup"] == pytest.approx(r["cpu_time_ms"] / r["gpu_time_ms"])
    assert r["gpu_backend"] == phos_gpu.GPU_BACKEND
    assert r["psnr_db"] > 100, "lumen and cv2.filter2D disagree (f32 noise gives ~130 dB)"


def test_benchmark_gpu_large_kernel_psnr():
    """A kernel larger than phos's 150-px FFT threshold, on a small image (both sides DFT)."""
    r = phos_gpu.benchmark_gpu((200, 300), 161)
    assert set(r) == BENCH_KEYS and r["psnr_db"] > 100


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("image, kernel, error, match", [
    (np.zeros((8, 8), np.float32), np.ones(3, np.float32), ValueError, "kernel"),
    (np.zeros((2, 8, 8, 1), np.float32), np.ones((3, 3)), ValueError, "H x W"),
    (np.zeros(8, np.float32), np.ones((3, 3)), ValueError, "H x W"),
    (np.zeros((8, 8), np.int32), np.ones((3, 3)), TypeError, "int32"),
    (np.zeros((8, 8), np.int16), np.ones((3, 3)), TypeError, "int16"),  # float16 is taken
    ("not an image", np.ones((3, 3)), TypeError, ""),
    (np.zeros((8, 8), np.float32), [["a", "b"]], TypeError, "kernel"),
    (np.zeros((0, 8), np.float32), np.ones((3, 3)), ValueError, "empty"),
    (np.zeros((8, 8), np.float32), np.full((3, 3), np.nan), ValueError, "finite"),
], ids=["1-D kernel", "4-D image", "1-D image", "int32", "int16", "str", "text kernel",
        "empty image", "NaN kernel"])
def test_bad_input_raises_a_clear_error(image, kernel, error, match):
    with pytest.raises(error, match=match):
        phos_gpu.convolve_gpu(image, kernel)


@pytest.mark.parametrize("backend", ["cuda", "mps", "torch", "GPU", "", None])
def test_unknown_backend_raises_value_error(backend):
    with pytest.raises(ValueError, match="Unknown backend"):
        phos_gpu.convolve_gpu(np.zeros((4, 4), np.float32), np.ones((3, 3)), backend=backend)


def test_unusable_device_raises_value_error():
    with pytest.raises(ValueError):
        phos_gpu.convolve_pytorch(np.zeros((4, 4), np.float32), np.ones((3, 3)), device="mps")


# ---- Phos-style code, unchanged ----------------------------------------------------------------

#: Written in the style of Phos (a Streamlit film simulator) using its phos_gpu module: the
#: import block of its GPU integration, a three-layer halation per channel, a bloom over a
#: list of channels, convolve_adaptive's GPU gate and the sidebar's status line.
PHOS_APP = '''
import numpy as np
import cv2

try:
    from phos_gpu import (GPU_BACKEND, convolve_gpu, convolve_batch_gpu, get_gpu_info,
                          PYTORCH_AVAILABLE)
    GPU_AVAILABLE = (GPU_BACKEND in ['mps', 'cuda'])
except ImportError:
    GPU_AVAILABLE = False
    GPU_BACKEND = 'cpu'


def get_gaussian_kernel(sigma, ksize=None):
    if ksize is None:
        ksize = int(sigma * 6) | 1
    k = cv2.getGaussianKernel(ksize, sigma)
    return (k @ k.T).astype(np.float32)


def apply_halation(lux, strength, sigma_base):
    k_small = get_gaussian_kernel(sigma_base, 21)
    k_medium = get_gaussian_kernel(sigma_base * 2.0, 41)
    k_large = get_gaussian_kernel(sigma_base * 4.0, 81)
    out = np.empty_like(lux)
    for c in range(lux.shape[2]):
        energy = lux[:, :, c]
        layer = (convolve_gpu(energy, k_small) * 0.5 + convolve_gpu(energy, k_medium) * 0.3
                 + convolve_gpu(energy, k_large) * 0.2)
        out[:, :, c] = energy * (1 - strength) + layer * strength
    return out


def apply_bloom(channels, sigma):
    psf = get_gaussian_kernel(sigma)
    return [0.9 * c + 0.1 * b for c, b in zip(channels, convolve_batch_gpu(channels, psf))]


def convolve_adaptive(image, kernel, method='auto', use_gpu=False):
    if use_gpu and GPU_AVAILABLE:
        return convolve_gpu(image, kernel)
    return cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT)


def gpu_status_line():
    info = get_gpu_info()
    if info['available']:
        return f"GPU: {info['device_name']} ({info['backend']})"
    return f"GPU unavailable: {info.get('reason', 'Unknown')}"
'''


def phos_gpu_without_gpu():
    """What phos_gpu is on a machine without a GPU: every call is its cv2 CPU path."""
    m = types.ModuleType("phos_gpu")
    m.GPU_BACKEND, m.PYTORCH_AVAILABLE = "cpu", True
    m.convolve_gpu = lambda image, kernel, backend="auto": cv2_reflect(image, kernel)
    m.convolve_batch_gpu = lambda images, kernel: [cv2_reflect(i, kernel) for i in images]
    m.get_gpu_info = lambda: {"available": False, "backend": "cpu", "reason": "No GPU available"}
    return m


def run_phos_app(module, monkeypatch):
    """Executes PHOS_APP with `module` importable as phos_gpu; returns its namespace."""
    monkeypatch.setitem(sys.modules, "phos_gpu", module)
    namespace = {"__name__": "phos_app"}
    exec(compile(PHOS_APP, "phos_app.py", "exec"), namespace)
    return namespace


def film_scene(rng, h=96, w=128):
    """A linear-light RGB scene: soft gradients, noise and a few highlights well above 1."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 0.3 + 0.2 * np.sin(x / 17.0)[..., None] * np.cos(y / 11.0)[..., None]
    lux = np.clip(base + 0.05 * rng.standard_normal((h, w, 3)), 0, None).astype(np.float32)
    for cy, cx in rng.integers(8, min(h, w) - 8, (4, 2)):
        lux[cy - 2:cy + 3, cx - 2:cx + 3] = 6.0
    return lux


def test_phos_app_runs_unchanged_and_matches_its_cpu_path(monkeypatch):
    lux = film_scene(rng_for("phos-app"))
    ours = run_phos_app(phos_gpu, monkeypatch)
    ref = run_phos_app(phos_gpu_without_gpu(), monkeypatch)
    assert ours["GPU_AVAILABLE"] is (phos_gpu.GPU_BACKEND in ("mps", "cuda"))
    atol = tol.f32_atol(lux)

    got, want = ours["apply_halation"](lux, 0.3, 3.0), ref["apply_halation"](lux, 0.3, 3.0)
    assert got.dtype == np.float32 and got.shape == lux.shape
    tol.assert_f32_close(got, want, atol, "halation")

    channels = [np.ascontiguousarray(lux[:, :, c]) for c in range(3)]
    got_b, want_b = ours["apply_bloom"](channels, 7.0), ref["apply_bloom"](channels, 7.0)
    assert type(got_b) is list and len(got_b) == 3
    for c in range(3):
        tol.assert_f32_close(got_b[c], want_b[c], atol, f"bloom channel {c}")

    k = ours["get_gaussian_kernel"](4.0)
    for use_gpu in (False, True):
        tol.assert_f32_close(ours["convolve_adaptive"](channels[0], k, use_gpu=use_gpu),
                             cv2_reflect(channels[0], k), atol, f"convolve_adaptive {use_gpu}")

    line = ours["gpu_status_line"]()
    assert line.startswith("GPU: " if lumen_has_gpu() else "GPU unavailable: lumen")


def test_concurrent_calls_from_threads():
    """Phos's Streamlit serves sessions from threads; lumen releases the GIL."""
    rng = rng_for("phos-threads")
    kernel = gaussian_2d(41, 7.0)
    images = [make_image(rng, (90, 110), np.float32) for _ in range(6)]
    results = [None] * len(images)

    def work(i):
        results[i] = phos_gpu.convolve_gpu(images[i], kernel, backend="cpu" if i % 2 else "auto")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(images))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, img in enumerate(images):
        tol.assert_f32_close(results[i], cv2_reflect(img, kernel), tol.f32_atol(img), f"thread {i}")


# ---- the checks above can fail -----------------------------------------------------------------


def test_checks_can_fail():
    """The tolerance tells BORDER_REFLECT from REFLECT_101 (phos_gpu's torch path) and
    correlation from convolution (its CuPy path): a wrong mapping would fail the tests."""
    rng = rng_for("phos-canfail")
    image = make_image(rng, (37, 29), np.float32)
    kernel = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    atol = tol.f32_atol(image, np.abs(kernel).sum())
    right = phos_gpu.convolve_gpu(image, kernel)
    wrong = {
        "reflect101": cv2.filter2D(image, -1, kernel, borderType=cv2.BORDER_REFLECT_101),
        "convolution": cv2.filter2D(image, -1, kernel[::-1, ::-1].copy(),
                                    borderType=cv2.BORDER_REFLECT),
    }
    for name, w in wrong.items():
        with pytest.raises(AssertionError):
            tol.assert_f32_close(right, w, atol, name)
    assert math.isfinite(atol) and atol > 0
