"""Devices from Python, without a GPU: the test double of a backend module (a software device
running only the direct filter and conv2d on f32, build/tests/mock/liblumen_mock.so) is loaded through
$LUMEN_MODULE_PATH in a child interpreter, since modules are loaded once per process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lumen

CHILD = r"""
import json, numpy as np, lumen
out = {"devices": [d["backend"] for d in lumen.devices()]}
rng = np.random.default_rng(1)
f32 = rng.random((15, 17)).astype(np.float32)
u8 = (rng.random((15, 17)) * 255).astype(np.uint8)
k = rng.random((3, 3))
ctx = lumen.Context(device="mock")
out["ctx"] = ctx.device
want = lumen.filter2d(f32, k, method="direct", context=lumen.Context(device="cpu"))
got = lumen.filter2d(f32, k, method="direct", context=ctx)
out["f32"] = [lumen.last_run()["device"], float(abs(got - want).max())]
want8 = lumen.filter2d(u8, k, context=lumen.Context(device="cpu"))
got8 = lumen.filter2d(u8, k, context=ctx)
out["u8"] = [lumen.last_run()["device"], bool((got8 == want8).all())]
try:
    lumen.filter2d(u8, k, context=lumen.Context(device="mock", strict=True))
    out["strict"] = "no error"
except lumen.UnsupportedError as e:
    out["strict"] = str(e)
x = rng.standard_normal((2, 4, 7, 9)).astype(np.float32)
w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
b = rng.standard_normal(6).astype(np.float32)
cpu = lumen.Context(device="cpu")
want = lumen.conv2d(x, w, b, padding=1, groups=2, context=cpu)
got = lumen.conv2d(x, w, b, padding=1, groups=2, context=ctx)
run = lumen.last_run()
out["conv2d"] = [run["device"], run["algo"], float(abs(got - want).max())]
wt = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
want = lumen.conv_transpose2d(x, wt, stride=2, groups=2, context=cpu)
got = lumen.conv_transpose2d(x, wt, stride=2, groups=2, context=ctx)
out["conv_transpose2d"] = [lumen.last_run()["device"], float(abs(got - want).max())]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def child():
    build = Path(lumen.__file__).resolve().parents[2]
    mock = build / "tests" / "mock" / "liblumen_mock.so"
    if not mock.is_file():
        pytest.fail(f"{mock} is missing (built by tests/CMakeLists.txt)")
    env = dict(os.environ, LUMEN_MODULE_PATH=str(mock), LUMEN_DEVICE="", LUMEN_STRICT="")
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_the_module_device_is_listed(child):
    out, _ = child
    assert out["devices"][:2] == ["cpu", "mock"] and out["ctx"] == "mock:0"


def test_runs_on_the_device(child):
    out, _ = child
    assert out["f32"][0] == "mock:0" and out["f32"][1] < 1e-5


def test_falls_back_with_one_warning(child):
    out, stderr = child
    assert out["u8"] == ["cpu", True]
    warnings = [line for line in stderr.splitlines() if line.startswith("lumen warn:")]
    filters = [line for line in warnings if "filter" in line]
    assert len(filters) == 1 and "running it on the CPU" in filters[0], stderr


def test_conv2d_runs_on_the_device(child):
    out, _ = child
    device, algo, err = out["conv2d"]
    assert device == "mock:0" and algo == "mock:direct" and err < 1e-5


def test_conv_transpose2d_falls_back_with_one_warning(child):
    out, stderr = child
    device, err = out["conv_transpose2d"]
    assert device == "cpu" and err < 1e-5
    warnings = [line for line in stderr.splitlines() if "conv_transpose2d on mock:0" in line]
    assert len(warnings) == 1 and warnings[0].startswith("lumen warn:"), stderr
    assert not any("conv2d on" in line for line in stderr.splitlines()), stderr


def test_strict_raises(child):
    out, _ = child
    assert "strict" in out["strict"] and "mock:0" in out["strict"]


def vulkan_devices():
    return [d for d in lumen.devices() if d["backend"] == "vulkan"]


@pytest.mark.skipif(not vulkan_devices(), reason="no Vulkan device here (make test installs "
                    "lavapipe, a Vulkan driver on the CPU)")
def test_vulkan_context():
    """`lumen.Context(device="vulkan")` runs the filters on the first Vulkan device, strict (no
    CPU fallback), with the CPU's answers; lumen.devices() names its driver."""
    import numpy as np
    ctx = lumen.Context(device="vulkan", strict=True)
    assert ctx.device.startswith("vulkan:"), ctx.device
    cpu = lumen.Context(device="cpu")
    rng = np.random.default_rng(3)
    img = rng.random((2, 19, 23, 3)).astype(np.float32)  # a batch of interleaved images
    for name, call in [
        ("direct", lambda c: lumen.filter2d(img, rng2.random((5, 5)), method="direct",
                                            context=c)),
        ("separable", lambda c: lumen.gaussian_blur(img, sigma=1.5, context=c)),
        ("box", lambda c: lumen.box_blur(img, 7, context=c)),
    ]:
        rng2 = np.random.default_rng(4)
        want = call(cpu)
        rng2 = np.random.default_rng(4)
        got = call(ctx)
        run = lumen.last_run()
        assert run["device"] == ctx.device and run["algo"].startswith("vulkan:"), (name, run)
        assert np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max()), name
    assert vulkan_devices()[0]["driver"].startswith("Vulkan 1.")
