"""The CLI agrees with OpenCV and lumen's other front ends (issue 12, item 7): blur derives
sigma from --ksize when --sigma is 0, filter's --anchor takes -1 per axis for the centre, an
unknown --device is bad usage (exit 2) naming the flag and listing the devices, and a bad
$LUMEN_NUM_THREADS is refused rather than ignored."""

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
