"""lumen.read_image / write_image options (issue 12, docs/io.md): quality=, lossless=, half=,
max_pixels=, ignore_orientation=. The C side (metadata, limits, formats) is tested in
tests/c/test_io_meta.c; here: the keywords reach it, and bad values are Python errors."""
import os

import numpy as np
import pytest

import lumen


def _photo(h=64, w=96):
    y, x = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(1)
    img = np.stack([x * 2, y * 3, x + y], axis=-1) + rng.integers(0, 16, (h, w, 3))
    return img.astype(np.uint8)


@pytest.mark.parametrize("ext", ["jpg", "webp"])
def test_quality_changes_size(tmp_path, ext):
    img = _photo()
    sizes = []
    for q in (10, None, 100):
        p = tmp_path / f"q{q}.{ext}"
        lumen.write_image(str(p), img, quality=q)
        sizes.append(p.stat().st_size)
    assert sizes[0] < sizes[1] < sizes[2]
    for bad in (0, 101, -1, 2.5, True, "90"):
        with pytest.raises((ValueError, TypeError)):
            lumen.write_image(str(tmp_path / f"bad.{ext}"), img, quality=bad)
    assert not (tmp_path / f"bad.{ext}").exists()


def test_webp_lossless_and_exr_half(tmp_path):
    img = _photo()
    lumen.write_image(str(tmp_path / "l.webp"), img, lossless=True)
    np.testing.assert_array_equal(lumen.read_image(str(tmp_path / "l.webp")), img)
    f = (img / 255.0).astype(np.float32)
    lumen.write_image(str(tmp_path / "f.exr"), f)
    lumen.write_image(str(tmp_path / "h.exr"), f, half=True)
    np.testing.assert_array_equal(lumen.read_image(str(tmp_path / "f.exr")), f)
    h = lumen.read_image(str(tmp_path / "h.exr"))
    np.testing.assert_array_equal(h, f.astype(np.float16).astype(np.float32))


def test_max_pixels(tmp_path, monkeypatch):
    p = str(tmp_path / "a.png")
    lumen.write_image(p, _photo(20, 20))
    with pytest.raises(Exception, match="limit of 399"):
        lumen.read_image(p, max_pixels=399)
    assert lumen.read_image(p, max_pixels=400).shape == (20, 20, 3)
    assert lumen.read_image(p, max_pixels=0).shape == (20, 20, 3)  # 0: no limit
    monkeypatch.setenv("LUMEN_MAX_PIXELS", "100")
    with pytest.raises(Exception, match="LUMEN_MAX_PIXELS"):
        lumen.read_image(p)
    assert lumen.read_image(p, max_pixels=400).shape == (20, 20, 3)  # the keyword wins
    for bad in (-1, "x", 1.5):
        with pytest.raises((ValueError, TypeError)):
            lumen.read_image(p, max_pixels=bad)


def _exif_orientation(o):
    # little-endian TIFF header, IFD0 with one entry: Orientation (0x0112), SHORT, 1 value
    return (b"II*\0" + (8).to_bytes(4, "little") + (1).to_bytes(2, "little")
            + bytes([0x12, 0x01, 3, 0]) + (1).to_bytes(4, "little") + bytes([o, 0, 0, 0])
            + bytes(4))


def test_orientation_applied_unless_ignored(tmp_path):
    img = np.zeros((32, 64, 3), np.uint8)
    img[:16, :32] = 20
    img[:16, 32:] = 90
    img[16:, :32] = 160
    img[16:, 32:] = 230
    plain = tmp_path / "plain.jpg"
    lumen.write_image(str(plain), img, quality=100)
    data = plain.read_bytes()
    payload = b"Exif\0\0" + _exif_orientation(6)
    app1 = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    rotated = tmp_path / "six.jpg"
    rotated.write_bytes(data[:2] + app1 + data[2:])
    up = lumen.read_image(str(rotated))
    assert up.shape == (64, 32, 3)
    raw = lumen.read_image(str(rotated), ignore_orientation=True)
    assert raw.shape == (32, 64, 3)
    np.testing.assert_array_equal(up, np.rot90(raw, k=-1))  # 6: 90 degrees clockwise
    cv2 = pytest.importorskip("cv2")
    np.testing.assert_array_equal(up, cv2.imread(str(rotated))[:, :, ::-1])
