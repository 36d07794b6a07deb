"""Devices from the command line: `lumen info` lists them, `--device`/$LUMEN_DEVICE choose one,
and what the device cannot run reruns on the CPU with exactly one warning line (`--strict` or
$LUMEN_STRICT=1: exit 1 and no output). A GPU is not needed: the test double of a backend
module (build/tests/mock/liblumen_mock.so: a software device running only the direct filter
on f32) is loaded through $LUMEN_MODULE_PATH."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import auto_device, run_cli


@pytest.fixture(scope="module")
def mock_env(lumen_bin):
    path = Path(lumen_bin).resolve().parent / "tests" / "mock" / "liblumen_mock.so"
    if not path.is_file():
        pytest.fail(f"{path} is missing: the build makes it (tests/CMakeLists.txt)")
    return {"LUMEN_MODULE_PATH": str(path), "LUMEN_DEVICE": "", "LUMEN_STRICT": ""}


@pytest.fixture
def job(tmp_path):
    """An f32 and a u8 input, a 5x5 kernel, an output path."""
    rng = np.random.default_rng(5)
    np.save(tmp_path / "f32.npy", rng.random((17, 21)).astype(np.float32))
    np.save(tmp_path / "u8.npy", (rng.random((17, 21)) * 255).astype(np.uint8))
    np.save(tmp_path / "k.npy", rng.random((5, 5)).astype(np.float32))
    return tmp_path


def filt(lumen_bin, job, name, *extra, env=None):
    return run_cli(lumen_bin, "filter", job / f"{name}.npy", job / "out.npy", "--kernel",
                   job / "k.npy", "--method", "direct", "--verbose", *extra, env=env)


def warnings(stderr):
    return [line for line in stderr.splitlines() if line.startswith("lumen warn:")]


def test_info_lists_every_device(lumen_bin, mock_env):
    plain = json.loads(run_cli(lumen_bin, "info", "--json").stdout)
    assert [d["backend"] for d in plain["devices"]][0] == "cpu"
    assert plain["device"] == auto_device(plain["devices"])  # the CPU unless a GPU is here
    cpu = plain["devices"][0]
    assert cpu["kind"] == "cpu" and cpu["memory_total"] > 0 and cpu["name"]
    r = run_cli(lumen_bin, "info", "--json", env=mock_env)
    info = json.loads(r.stdout)
    backends = [d["backend"] for d in info["devices"]]  # a GPU machine adds its CUDA devices
    assert backends[:2] == ["cpu", "mock"]
    assert info["devices"][1]["kind"] == "software"
    assert info["devices"][info["device"]]["kind"] != "software", "auto never picks software"
    text = run_cli(lumen_bin, "info", "--device", "mock", env=mock_env).stdout
    mock_line = [ln for ln in text.splitlines() if "lumen mock device" in ln]
    assert mock_line and "<- in use" in mock_line[0], text  # other backends may list more


def test_runs_on_the_chosen_device(lumen_bin, job, mock_env):
    r = filt(lumen_bin, job, "f32", "--device", "mock", env=mock_env)
    assert r.returncode == 0, r.stderr
    assert "device mock:0" in r.stderr and not warnings(r.stderr)
    on_cpu = np.load(job / "out.npy")
    r = filt(lumen_bin, job, "f32", env=dict(mock_env, LUMEN_DEVICE="mock:0"))
    assert r.returncode == 0 and "device mock:0" in r.stderr
    assert np.allclose(np.load(job / "out.npy"), on_cpu, rtol=1e-5, atol=1e-5)


def test_fallback_is_one_warning_line(lumen_bin, job, mock_env):
    want = filt(lumen_bin, job, "u8")
    assert want.returncode == 0
    expected = np.load(job / "out.npy")
    r = filt(lumen_bin, job, "u8", "--device", "mock", env=mock_env)
    assert r.returncode == 0, r.stderr
    assert len(warnings(r.stderr)) == 1, r.stderr
    assert "mock:0" in r.stderr and "running it on the CPU" in r.stderr
    assert "device cpu" in r.stderr
    np.testing.assert_array_equal(np.load(job / "out.npy"), expected)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_strict_fails_and_writes_nothing(lumen_bin, job, mock_env, how):
    extra = ("--device", "mock") + (("--strict",) if how == "flag" else ())
    env = dict(mock_env, LUMEN_STRICT="1" if how == "env" else "")
    r = filt(lumen_bin, job, "u8", *extra, env=env)
    assert r.returncode == 1
    assert "strict" in r.stderr and "mock:0" in r.stderr and not warnings(r.stderr)
    assert not (job / "out.npy").exists()


def test_unknown_device_is_an_error(lumen_bin, job):
    """Bad usage (exit 2, issue 12), naming the flag or variable and listing the devices."""
    r = filt(lumen_bin, job, "f32", "--device", "cuda:7")
    assert r.returncode == 2 and "cuda:7" in r.stderr and "cpu" in r.stderr
    assert r.stderr.startswith("lumen: --device: ")
    r = filt(lumen_bin, job, "f32", env={"LUMEN_DEVICE": "opencl"})
    assert r.returncode == 2 and "LUMEN_DEVICE='opencl'" in r.stderr
    assert not (job / "out.npy").exists()


def test_vulkan_device_from_the_cli(lumen_bin, job):
    """Where the Vulkan module finds a device (lavapipe in CI), `lumen info` names it with its
    driver, and `--device vulkan:0 --strict` runs a filter there with the CPU's answer."""
    info = json.loads(run_cli(lumen_bin, "info", "--json").stdout)
    vk = [d for d in info["devices"] if d["backend"] == "vulkan"]
    if not vk:
        pytest.skip("no Vulkan device here (make test installs lavapipe)")
    assert vk[0]["driver"].startswith("Vulkan 1."), vk[0]
    text = run_cli(lumen_bin, "info").stdout
    assert "vulkan:0" in text and "driver: Vulkan" in text, text
    want = filt(lumen_bin, job, "u8")
    expected = np.load(job / "out.npy")
    assert want.returncode == 0
    r = filt(lumen_bin, job, "u8", "--device", "vulkan:0", "--strict")
    assert r.returncode == 0, r.stderr
    assert "device vulkan:0" in r.stderr and not warnings(r.stderr), r.stderr
    # one level off where the device's f32 sum lands on the other side of a .5
    assert np.abs(np.load(job / "out.npy").astype(int) - expected).max() <= 1


def test_vulkan_pipeline_cache_across_processes(lumen_bin, job, tmp_path):
    """The Vulkan module's pipeline cache lives in lumen's cache folder, one file per device and
    driver: the first process writes it (atomically: no temporary file is left), the next one
    loads every byte of it, and a corrupt file costs compilations, never a wrong answer or a
    failure. (lavapipe keeps only a header in its VkPipelineCache, so here the file carries no
    compiled code: the debug log says "compiled" where a GPU driver says "from the pipeline
    cache".)"""
    info = json.loads(run_cli(lumen_bin, "info", "--json").stdout)
    if not any(d["backend"] == "vulkan" for d in info["devices"]):
        pytest.skip("no Vulkan device here (make test installs lavapipe)")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "LUMEN_LOG": "debug"}
    folder = tmp_path / "cache" / "lumen"

    def run():
        r = filt(lumen_bin, job, "f32", "--device", "vulkan:0", "--strict", env=env)
        assert r.returncode == 0, r.stderr
        return r.stderr, np.load(job / "out.npy")

    first, want = run()
    assert "pipeline cache: 0 bytes loaded" in first, first
    files = sorted(folder.glob("vulkan-*.bin"))
    assert len(files) == 1 and files[0].stat().st_size > 0, list(folder.iterdir())
    assert not list(folder.glob("*.tmp")), list(folder.iterdir())
    size = files[0].stat().st_size
    second, got = run()
    assert f"pipeline cache: {size} bytes loaded" in second, second
    assert np.array_equal(got, want)
    files[0].write_bytes(b"not a pipeline cache" * 3)
    third, got = run()
    assert np.array_equal(got, want), "a corrupt cache file changed the answer"
    assert "compiled" in third or "from the pipeline cache" in third, third
