"""`lumen crop IN OUT --mask M` (issue 15, items 2 and 4; docs/crop.md): the command the crop
descriptor makes (tools/lumen/cmd_op.c). The same pixels as lumen.crop for the same flags
(which test_py_crop.py holds against MONAI's CropForeground), the image's own foreground
without --mask, usage errors that name the flag with exit 2 and nothing written (an empty mask
among them), --empty whole, and many files with --output-dir and one mask; `lumen mask-bbox`."""

import json

import cv2
import numpy as np
import pytest

import lumen
from conftest import run_cli


def _scene(h=30, w=40, seed=0):
    rng = np.random.default_rng(seed)
    img = (rng.random((h, w, 3)) * 255).astype(np.uint8)
    mask = np.zeros((h, w), np.uint8)
    mask[5:9, 30:37] = 255
    mask[12, 33] = 1
    return img, mask


def _write(path, img):
    if str(path).endswith(".npy"):
        np.save(path, img)
    else:
        assert cv2.imwrite(str(path), img), path
    return path


def _read(path):
    if str(path).endswith(".npy"):
        return np.load(path)
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert img is not None, path
    return img


FLAG_CASES = [
    ([], {}),
    (["--margin", "3"], {"margin": 3}),
    (["--margin", "2,9", "--border", "reflect101"], {"margin": (2, 9), "border": "reflect101"}),
    (["--k-divisible", "16", "--border", "replicate"], {"k_divisible": 16, "border": "replicate"}),
    (["--aspect", "1.7777777", "--min-size", "12,20"], {"aspect": 1.7777777, "min_size": (12, 20)}),
    (["--min-size", "64", "--outside", "clip"], {"min_size": 64, "outside": "clip"}),
    (["--margin", "20", "--allow-smaller"], {"margin": 20, "allow_smaller": True}),
    (["--threshold", "100", "--border-value", "77"], {"threshold": 100, "border_value": 77}),
    (["--margin", "6", "--border", "wrap"], {"margin": 6, "border": "wrap"}),
]


@pytest.mark.parametrize("flags, kwargs", FLAG_CASES)
@pytest.mark.parametrize("ext", [".png", ".npy"])
def test_crop_equals_python(lumen_bin, tmp_path, flags, kwargs, ext):
    img, mask = _scene()
    src = _write(tmp_path / f"in{ext}", img)
    m = _write(tmp_path / "mask.png", mask)
    out = tmp_path / f"out{ext}"
    r = run_cli(lumen_bin, "crop", src, out, "--mask", m, *flags)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(_read(out), lumen.crop(img, mask, **kwargs))


def test_crop_without_mask_uses_the_image(lumen_bin, tmp_path):
    img = np.zeros((20, 24), np.uint16)
    img[4:7, 10:15] = 1000
    src = _write(tmp_path / "in.png", img)
    r = run_cli(lumen_bin, "crop", src, tmp_path / "o.png", "--margin", "1", "-v")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(_read(tmp_path / "o.png"), img[3:8, 9:16])
    assert "crop" in r.stderr and "device cpu" in r.stderr


def test_empty_mask_is_a_usage_error_or_the_whole_image(lumen_bin, tmp_path):
    img, _ = _scene()
    src = _write(tmp_path / "in.png", img)
    m = _write(tmp_path / "mask.png", np.zeros(img.shape[:2], np.uint8))
    out = tmp_path / "o.png"
    r = run_cli(lumen_bin, "crop", src, out, "--mask", m)
    assert r.returncode == 2
    assert "--mask" in r.stderr and "empty" in r.stderr
    assert not out.exists()
    r = run_cli(lumen_bin, "crop", src, out, "--mask", m, "--empty", "whole")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(_read(out), img)


@pytest.mark.parametrize("flags, culprit", [
    (["--margin", "-1"], "--margin"),
    (["--k-divisible", "0"], "--k-divisible"),
    (["--aspect", "-2"], "--aspect"),
    (["--outside", "cut"], "--outside"),
    (["--border", "mirror-ish"], "--border"),
    (["--min-size", "a,b"], "--min-size"),
    (["--empty", "skip"], "--empty"),
])
def test_bad_flags_name_themselves(lumen_bin, tmp_path, flags, culprit):
    img, mask = _scene()
    src = _write(tmp_path / "in.png", img)
    m = _write(tmp_path / "mask.png", mask)
    out = tmp_path / "o.png"
    r = run_cli(lumen_bin, "crop", src, out, "--mask", m, *flags)
    assert r.returncode == 2, r.stderr
    assert culprit in r.stderr
    assert not out.exists()


def test_mask_of_another_size(lumen_bin, tmp_path):
    img, mask = _scene()
    src = _write(tmp_path / "in.png", img)
    m = _write(tmp_path / "mask.png", mask[:, :-1])
    r = run_cli(lumen_bin, "crop", src, tmp_path / "o.png", "--mask", m)
    assert r.returncode == 2
    assert "--mask" in r.stderr
    assert not (tmp_path / "o.png").exists()
    r = run_cli(lumen_bin, "crop", src, tmp_path / "o.png", "--mask", tmp_path / "none.png")
    assert r.returncode == 1 and "none.png" in r.stderr


def test_many_files_one_mask(lumen_bin, tmp_path):
    a, mask = _scene(seed=1)
    b, _ = _scene(seed=2)
    pa, pb = _write(tmp_path / "a.png", a), _write(tmp_path / "b.png", b)
    m = _write(tmp_path / "mask.npy", (mask > 0).astype(np.uint8))
    r = run_cli(lumen_bin, "crop", pa, pb, "--mask", m, "--margin", "2", "--output-dir",
                tmp_path / "out")
    assert r.returncode == 0, r.stderr
    for name, img in (("a.png", a), ("b.png", b)):
        np.testing.assert_array_equal(_read(tmp_path / "out" / name),
                                      lumen.crop(img, mask, margin=2))


def test_help_lists_the_flags(lumen_bin):
    r = run_cli(lumen_bin, "crop", "--help")
    assert r.returncode == 0
    for text in ("lumen crop SRC OUT", "--mask FILE", "--margin H[,W]", "--min-size H[,W]",
                 "--aspect V", "--k-divisible H[,W]", "--outside NAME", "--border NAME",
                 "--threshold V", "--allow-smaller", "--empty NAME", "--output-dir"):
        assert text in r.stdout, text


def test_mask_bbox_command(lumen_bin, tmp_path):
    """`lumen mask-bbox MASK...`: a line per file (JSON with --json); an empty mask is the box
    0 0 0 0, exit 0; an unreadable file is reported (exit 1) and the others still printed."""
    _, mask = _scene()
    m = _write(tmp_path / "m.png", mask)
    e = _write(tmp_path / "e.png", np.zeros((5, 6), np.uint8))
    r = run_cli(lumen_bin, "mask-bbox", m, e)
    assert r.returncode == 0, r.stderr
    x0, y0, x1, y1 = lumen.mask_bbox(mask)
    assert r.stdout.splitlines() == [f"{m} {x0} {y0} {x1} {y1}", f"{e} 0 0 0 0"]
    r = run_cli(lumen_bin, "mask-bbox", tmp_path / "none.png", m, "--json", "--threshold", "1")
    assert r.returncode == 1 and "none.png" in r.stderr
    (line,) = r.stdout.splitlines()
    assert json.loads(line) == {"file": str(m), "box": lumen.mask_bbox(mask, 1).tolist(),
                                "empty": False}
    r = run_cli(lumen_bin, "mask-bbox", m, "--threshold", "nan")
    assert r.returncode == 2 and "--threshold" in r.stderr
