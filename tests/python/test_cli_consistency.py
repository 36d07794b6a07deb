"""The CLI agrees with OpenCV and lumen's other front ends (issue 12, item 7): blur derives
sigma from --ksize when --sigma is 0, filter's --anchor takes -1 per axis for the centre, an
unknown --device is bad usage (exit 2) naming the flag and listing the devices, and a bad
$LUMEN_NUM_THREADS is refused rather than ignored; the default thread count follows
$OMP_NUM_THREADS and the CPU affinity."""

import cv2
import numpy as np
import pytest

from conftest import run_cli


@pytest.fixture
def img(tmp_path):
    src = np.random.default_rng(2).random((19, 23)).astype(np.float32)
    np.save(tmp_path / "in.npy", src)
    return tmp_path, src


def test_blur_sigma_zero_derives_it_from_ksize(lumen_bin, img):
    folder, src = img
    r = run_cli(lumen_bin, "blur", folder / "in.npy", folder / "o.npy", "--sigma", "0",
                "--ksize", "9", "--border", "replicate")
    assert r.returncode == 0, r.stderr
    want = cv2.GaussianBlur(src, (9, 9), 0, borderType=cv2.BORDER_REPLICATE)
    np.testing.assert_allclose(np.load(folder / "o.npy"), want, atol=1e-5)
    # as with no --sigma at all
    r = run_cli(lumen_bin, "blur", folder / "in.npy", folder / "p.npy", "--ksize", "9",
                "--border", "replicate")
    assert r.returncode == 0
    np.testing.assert_array_equal(np.load(folder / "o.npy"), np.load(folder / "p.npy"))
    # still needed: a size or a sigma
    r = run_cli(lumen_bin, "blur", folder / "in.npy", folder / "q.npy", "--sigma", "0")
    assert r.returncode == 2 and "--ksize" in r.stderr


@pytest.mark.parametrize("anchor,want", [("-1,-1", (1, 2)), ("-1,0", (1, 0)), ("0,-1", (0, 2))])
def test_filter_anchor_minus_one_is_the_centre(lumen_bin, img, anchor, want):
    folder, src = img
    k = np.random.default_rng(4).random((5, 3)).astype(np.float32)  # kh 5, kw 3: centre (1, 2)
    np.save(folder / "k.npy", k)
    r = run_cli(lumen_bin, "filter", folder / "in.npy", folder / "o.npy", "--kernel",
                folder / "k.npy", "--anchor", anchor)
    assert r.returncode == 0, r.stderr
    ref = cv2.filter2D(src, -1, k, anchor=want, borderType=cv2.BORDER_REFLECT)
    np.testing.assert_allclose(np.load(folder / "o.npy"), ref, atol=1e-5)


@pytest.mark.parametrize("cmd", [["blur", "--sigma", "1"], ["gaussian-blur", "--sigma", "1"],
                                 ["box", "--ksize", "3"]], ids=lambda c: c[0])
@pytest.mark.parametrize("device", ["cuda:7", "opencl", "cuda:x"])
def test_unknown_device_is_usage(lumen_bin, img, cmd, device):
    folder, _ = img
    r = run_cli(lumen_bin, cmd[0], folder / "in.npy", folder / "o.npy", *cmd[1:], "--device",
                device)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"lumen: --device: no device '{device}'") and "cpu" in r.stderr
    assert not (folder / "o.npy").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-2", "4097", "2x"])
def test_bad_num_threads_env_is_usage(lumen_bin, img, value):
    folder, _ = img
    args = ["blur", folder / "in.npy", folder / "o.npy", "--sigma", "1"]
    r = run_cli(lumen_bin, *args, env={"LUMEN_NUM_THREADS": value})
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("lumen: LUMEN_NUM_THREADS: ") and f"'{value}'" in r.stderr
    assert "4096" in r.stderr and not (folder / "o.npy").exists()
    # --threads wins over the variable
    r = run_cli(lumen_bin, *args, "--threads", "1", env={"LUMEN_NUM_THREADS": value})
    assert r.returncode == 0, r.stderr
    r = run_cli(lumen_bin, *args, "-v", env={"LUMEN_NUM_THREADS": "1"})
    assert r.returncode == 0 and "threads 1" in r.stderr


def _info_threads(lumen_bin, env, cpus=None):
    """`lumen info --json`'s default thread count under env (LUMEN_NUM_THREADS and
    OMP_NUM_THREADS unset unless env sets them), pinned to `cpus` when given."""
    import json
    import os
    import subprocess
    full = {k: v for k, v in os.environ.items()
            if k not in ("LUMEN_NUM_THREADS", "OMP_NUM_THREADS")}
    full.update(env)
    pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
    r = subprocess.run([str(lumen_bin), "info", "--json"], capture_output=True, text=True,
                       env=full, preexec_fn=pin, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["threads"]


def test_default_threads_follow_omp_num_threads_and_affinity(lumen_bin):
    """The library's default thread count (lumen_default_threads): $LUMEN_NUM_THREADS, else
    $OMP_NUM_THREADS (its first count), else the CPUs this process may run on — so a Dask
    worker started with OMP_NUM_THREADS=1, or a process pinned to one core, does not
    oversubscribe its cores."""
    import os
    mine = os.sched_getaffinity(0)
    assert _info_threads(lumen_bin, {}) == len(mine)
    assert _info_threads(lumen_bin, {}, {min(mine)}) == 1
    assert _info_threads(lumen_bin, {"OMP_NUM_THREADS": "1"}) == 1
    assert _info_threads(lumen_bin, {"OMP_NUM_THREADS": "3,2"}) == 3
    assert _info_threads(lumen_bin, {"OMP_NUM_THREADS": "3", "LUMEN_NUM_THREADS": "2"}) == 2
    # a value OpenMP would refuse is ignored (with the library's warning), not obeyed
    assert _info_threads(lumen_bin, {"OMP_NUM_THREADS": "x"}, {min(mine)}) == 1


def test_python_context_default_threads_follow_omp_num_threads():
    """lumen.Context() takes the same default as the CLI (one rule, in the library)."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "LUMEN_NUM_THREADS"}
    env["OMP_NUM_THREADS"] = "1"
    r = subprocess.run([sys.executable, "-c", "import lumen; print(lumen.Context().threads)"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr
