"""The image commands on the IO library's options (issue 12, items 4 and 6): --quality for JPEG,
--max-pixels and $LUMEN_MAX_PIXELS (a malformed value is bad usage before any read), the ICC
profile carried from IN to OUT and EXIF orientation applied, in the single form and in
batches."""

import struct
import zlib

import cv2
import numpy as np
import pytest

from conftest import run_cli


def _gray_icc(n=300):
    """A syntactically valid gray ICC profile (libraries carry it, none interprets it here)."""
    p = bytearray((i * 7 + 3) & 0xFF for i in range(n))
    p[:132] = bytes(132)
    p[0:4] = struct.pack(">I", n)
    p[8] = 4
    p[12:24] = b"mntrGRAYXYZ "
    p[36:40] = b"acsp"
    p[68:80] = struct.pack(">III", 0xF6D6, 0x10000, 0xD32D)
    return bytes(p)


def _png_chunks(data):
    pos, out = 8, {}
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        out.setdefault(kind, data[pos + 8:pos + 8 + n])
        pos += 12 + n
    return out


def _with_iccp(png, icc):
    """The PNG with an iCCP chunk after IHDR."""
    body = b"iCCP" + b"test\0\0" + zlib.compress(icc)
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))
    return png[:33] + chunk + png[33:]


def _jpeg_with_orientation(img, orientation):
    """A JPEG whose EXIF says Orientation = orientation (one IFD entry, little-endian)."""
    jpg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 100])[1].tobytes()
    tiff = b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", 1) + \
        struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    app1 = b"Exif\0\0" + tiff
    return jpg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpg[2:]


@pytest.fixture
def gray(tmp_path):
    img = np.random.default_rng(8).integers(0, 256, (48, 64), np.uint8)
    assert cv2.imwrite(str(tmp_path / "g.png"), img)
    return tmp_path, img


def test_quality_sets_jpeg_size(lumen_bin, gray):
    folder, _ = gray
    sizes = {}
    for q in ("30", "95"):
        out = folder / f"q{q}.jpg"
        r = run_cli(lumen_bin, "box", folder / "g.png", out, "--ksize", "1", "--quality", q)
        assert r.returncode == 0, r.stderr
        sizes[q] = out.stat().st_size
    assert sizes["30"] < sizes["95"]
    for bad in ("0", "101", "high"):
        r = run_cli(lumen_bin, "box", folder / "g.png", folder / "x.jpg", "--ksize", "1",
                    "--quality", bad)
        assert r.returncode == 2 and "--quality" in r.stderr


def test_max_pixels_flag_and_environment(lumen_bin, gray):
    folder, _ = gray  # 48 x 64 = 3072 pixels
    args = ["blur", folder / "g.png", folder / "o.png", "--sigma", "1"]
    r = run_cli(lumen_bin, *args, "--max-pixels", "3000")
    assert r.returncode == 1 and "g.png" in r.stderr and not (folder / "o.png").exists()
    assert run_cli(lumen_bin, *args, "--max-pixels", "3072").returncode == 0
    r = run_cli(lumen_bin, *args, env={"LUMEN_MAX_PIXELS": "3000"})
    assert r.returncode == 1 and "g.png" in r.stderr
    r = run_cli(lumen_bin, *args, "--max-pixels", "0", env={"LUMEN_MAX_PIXELS": "3000"})
    assert r.returncode == 0, r.stderr
    (folder / "o.png").unlink()
    for bad in ("lots", "-1", ""):
        r = run_cli(lumen_bin, *args, env={"LUMEN_MAX_PIXELS": bad})
        assert r.returncode == 2 and r.stderr.startswith("lumen: LUMEN_MAX_PIXELS: "), r.stderr
        r = run_cli(lumen_bin, *args, "--max-pixels", "2x")
        assert r.returncode == 2 and "--max-pixels" in r.stderr
    assert not (folder / "o.png").exists()


def test_max_pixels_in_a_batch_stops_only_the_big_file(lumen_bin, gray):
    folder, img = gray
    assert cv2.imwrite(str(folder / "small.png"), img[:10, :10])
    r = run_cli(lumen_bin, "blur", folder / "g.png", folder / "small.png", "--output-dir",
                folder / "o", "--sigma", "1", "--max-pixels", "1000")
    assert r.returncode == 1 and "g.png" in r.stderr
    assert [p.name for p in (folder / "o").iterdir()] == ["small.png"]


def test_icc_profile_carried(lumen_bin, gray):
    folder, _ = gray
    icc = _gray_icc()
    (folder / "icc.png").write_bytes(_with_iccp((folder / "g.png").read_bytes(), icc))
    r = run_cli(lumen_bin, "blur", folder / "icc.png", folder / "o.png", "--sigma", "1")
    assert r.returncode == 0, r.stderr
    chunk = _png_chunks((folder / "o.png").read_bytes()).get(b"iCCP")
    assert chunk is not None, "the ICC profile was dropped"
    assert zlib.decompress(chunk[chunk.index(b"\0") + 2:]) == icc
    r = run_cli(lumen_bin, "blur", folder / "icc.png", "--output-dir", folder / "b", "--sigma",
                "1", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert b"iCCP" in _png_chunks((folder / "b" / "icc.png").read_bytes())


def test_exif_orientation_applied(lumen_bin, tmp_path):
    """Orientation 6 (turn 90 degrees clockwise to view): the output is upright, as
    cv2.imread shows the input."""
    img = np.zeros((32, 48), np.uint8)
    img[:16, :16] = 255  # a white block at the top left of the stored pixels
    (tmp_path / "o6.jpg").write_bytes(_jpeg_with_orientation(img, 6))
    r = run_cli(lumen_bin, "box", tmp_path / "o6.jpg", tmp_path / "up.png", "--ksize", "1")
    assert r.returncode == 0, r.stderr
    got = cv2.imread(str(tmp_path / "up.png"), cv2.IMREAD_UNCHANGED)
    want = cv2.imread(str(tmp_path / "o6.jpg"), cv2.IMREAD_GRAYSCALE)  # cv2 applies it too
    assert got.shape == want.shape == (48, 32)
    assert np.abs(got.astype(int) - want).max() <= 2


def test_ignore_orientation_keeps_the_stored_pixels(lumen_bin, tmp_path):
    """--ignore-orientation filters the pixels as stored and keeps the orientation for viewers:
    the JPEG written still shows upright in cv2.imread."""
    img = np.zeros((32, 48), np.uint8)
    img[:16, :16] = 255
    (tmp_path / "o6.jpg").write_bytes(_jpeg_with_orientation(img, 6))
    r = run_cli(lumen_bin, "box", tmp_path / "o6.jpg", tmp_path / "raw.jpg", "--ksize", "1",
                "--ignore-orientation", "--quality", "100")
    assert r.returncode == 0, r.stderr
    stored = cv2.imread(str(tmp_path / "raw.jpg"),
                        cv2.IMREAD_GRAYSCALE | cv2.IMREAD_IGNORE_ORIENTATION)
    assert stored.shape == (32, 48) and np.abs(stored.astype(int) - img).max() <= 8
    assert cv2.imread(str(tmp_path / "raw.jpg"), cv2.IMREAD_GRAYSCALE).shape == (48, 32)
