"""`lumen film` (issue 14, item 2): the film look from a stock preset on one image or many.

Its command line: usage errors that name the argument (an unknown stock lists the stocks),
exit 2 and nothing written; many files with --output-dir (the batch machinery of
tools/lumen/batch.c); --compare's before | after picture; atomic outputs; the progress bar on a
terminal and a line per file elsewhere, with the closing line (files, megapixels, ms per
megapixel, device); the same bytes for the same --seed; the CPU and a Vulkan device close.
What the film does to the pixels is tested against the float64 reference elsewhere."""

import json
import os
import re
import subprocess

import cv2
import numpy as np
import pytest

from conftest import run_cli
from test_cli_batch import _stderr_on_a_terminal

STOCK = "portra400"


def _scene(h=40, w=56, c=3, dtype=np.uint8, seed=0):
    """A smooth image with bright spots (what halation and bloom act on), u8/u16 sRGB levels or
    f32 linear light in [0, 1]."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = 0.15 + 0.5 * (x / w) * (y / h)
    img = np.repeat(base[..., None], c, axis=2)
    img = img + 0.05 * rng.random((h, w, c))
    for cy, cx in ((h // 3, w // 4), (2 * h // 3, 3 * w // 4)):
        img[max(cy - 2, 0):cy + 3, max(cx - 2, 0):cx + 3] = 1.0
    img = np.clip(img, 0, 1)
    if dtype == np.float32:
        return img.astype(np.float32)
    top = np.iinfo(dtype).max
    return np.rint(img * top).astype(dtype)


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


def film(lumen_bin, *args, stock=STOCK, env=None):
    extra = ["--stock", stock] if stock else []
    return run_cli(lumen_bin, "film", *args, *extra, env=env)


def stocks(lumen_bin):
    r = run_cli(lumen_bin, "film", "--list-stocks")
    assert r.returncode == 0, r.stderr
    return [line.split()[0] for line in r.stdout.splitlines()]


@pytest.fixture
def photo(tmp_path):
    return _write(tmp_path / "photo.png", _scene())


# ---- help and stocks ---------------------------------------------------------------------


def test_help(lumen_bin):
    r = run_cli(lumen_bin, "film", "--help")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    for text in ("lumen film IN OUT --stock NAME", "IN... --output-dir DIR", "--halation S",
                 "--bloom S", "--grain S", "--seed N", "--compare", "--list-stocks",
                 "--device D", "-j, --jobs N", "-q, --quiet", "0-10"):
        assert text in r.stdout, text
    assert run_cli(lumen_bin, "help", "film").stdout == r.stdout
    top = run_cli(lumen_bin, "--help").stdout
    assert re.search(r"^  film +", top, re.M), top


def test_list_stocks(lumen_bin):
    """--list-stocks and --stock list print every stock of the library with its title, on
    stdout, and need no files."""
    a = run_cli(lumen_bin, "film", "--list-stocks")
    b = run_cli(lumen_bin, "film", "--stock", "list")
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout and a.stderr == ""
    names = stocks(lumen_bin)
    assert STOCK in names and len(names) == len(set(names)) >= 2
    for line in a.stdout.splitlines():
        assert re.match(r"^[a-z0-9]+ +\S.* \((colour|black and white), ISO \d+", line), line
    assert "Portra 400" in a.stdout


# ---- usage errors: exit 2, the argument named, nothing written ------------------------------


@pytest.mark.parametrize("args,culprit", [
    (["{in}", "{out}", "--stock", "nosuch"], "--stock"),
    (["{in}", "{out}"], "--stock"),
    (["{in}", "--stock", STOCK], "missing OUT"),
    (["--stock", STOCK], "missing IN"),
    (["{in}", "{out}", "--stock", STOCK, "--halation", "-1"], "--halation"),
    (["{in}", "{out}", "--stock", STOCK, "--bloom", "10.5"], "--bloom"),
    (["{in}", "{out}", "--stock", STOCK, "--grain", "lots"], "--grain"),
    (["{in}", "{out}", "--stock", STOCK, "--grain", "nan"], "--grain"),
    (["{in}", "{out}", "--stock", STOCK, "--seed", "-1"], "--seed"),
    (["{in}", "{out}", "--stock", STOCK, "--seed", "1.5"], "--seed"),
    (["{in}", "{out}", "--stock", STOCK, "--seed", "18446744073709551616"], "--seed"),
    (["{in}", "{out}", "--stock", STOCK, "--dtype", "f32"], "--dtype"),
    (["{in}", "-", "--stock", STOCK, "--format", "png", "--compare"], "--compare"),
    (["{in}", "{dir}/out.bmp", "--stock", STOCK], ".bmp"),
    (["{in}", "{out}", "--stock", STOCK, "--device", "nosuch:7"], "--device"),
    (["{in}", "{out}", "--stock", STOCK, "--frobnicate"], "--frobnicate"),
    (["{in}", "{in}", "--output-dir", "{dir}/o", "--stock", STOCK], "output of both"),
], ids=["unknown stock", "no stock", "no OUT", "no IN", "halation < 0", "bloom > 10",
        "grain not a number", "grain nan", "seed < 0", "seed not whole", "seed too big",
        "dtype", "compare to stdout", "bad extension", "bad device", "unknown flag",
        "duplicate outputs"])
def test_usage_errors(lumen_bin, photo, args, culprit):
    tmp = photo.parent
    argv = [a.format(**{"in": photo, "out": tmp / "out.png", "dir": tmp}) for a in args]
    r = run_cli(lumen_bin, "film", *argv)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert culprit in r.stderr, r.stderr
    assert r.stdout == ""
    assert sorted(p.name for p in tmp.iterdir()) == ["photo.png"], "something was written"


def test_unknown_stock_lists_the_stocks(lumen_bin, photo):
    r = film(lumen_bin, photo, photo.parent / "o.png", stock="Portra-9000")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "'Portra-9000'" in line and "--list-stocks" in line, line
    for name in stocks(lumen_bin):
        assert name in line, (name, line)
    r = film(lumen_bin, photo, photo.parent / "o.png", stock=None)
    for name in stocks(lumen_bin):
        assert name in r.stderr, (name, r.stderr)


# ---- one file -----------------------------------------------------------------------------


@pytest.mark.parametrize("name,img", [
    ("rgb.png", _scene()),
    ("grey.png", _scene(c=1)[..., 0]),
    ("rgb16.png", _scene(dtype=np.uint16)),
    ("linear.npy", _scene(dtype=np.float32)),
], ids=["u8 rgb", "u8 grey", "u16 rgb", "f32 npy"])
def test_one_file_keeps_shape_and_dtype(lumen_bin, tmp_path, name, img):
    src = _write(tmp_path / name, img)
    out = tmp_path / ("out" + os.path.splitext(name)[1])
    r = film(lumen_bin, src, out)
    assert r.returncode == 0, r.stderr
    got = _read(out)
    assert got.shape == img.shape and got.dtype == img.dtype
    assert not np.array_equal(got, img), "the film changed nothing"
    if img.dtype == np.float32:
        assert np.isfinite(got).all() and got.min() >= 0 and got.max() <= 1


def test_alpha_is_kept(lumen_bin, tmp_path):
    """RGBA (and grey + alpha): the colour channels are filmed, the alpha channel is kept."""
    rgb = _scene()
    alpha = np.linspace(0, 255, rgb.shape[1]).astype(np.uint8)[None, :].repeat(rgb.shape[0], 0)
    _write(tmp_path / "rgba.png", np.dstack([rgb, alpha]))
    _write(tmp_path / "rgb.png", rgb)
    assert film(lumen_bin, tmp_path / "rgba.png", tmp_path / "o4.png").returncode == 0
    assert film(lumen_bin, tmp_path / "rgb.png", tmp_path / "o3.png").returncode == 0
    got = _read(tmp_path / "o4.png")
    assert got.shape == rgb.shape[:2] + (4,)
    np.testing.assert_array_equal(got[..., 3], alpha)
    np.testing.assert_array_equal(got[..., :3], _read(tmp_path / "o3.png"))


def test_strength_zero_turns_an_effect_off(lumen_bin, photo):
    """With --grain 0 the seed changes nothing; with grain it does."""
    tmp = photo.parent
    for seed in (1, 2):
        r = film(lumen_bin, photo, tmp / f"g0-{seed}.png", "--grain", "0", "--seed", seed)
        assert r.returncode == 0, r.stderr
        r = film(lumen_bin, photo, tmp / f"g1-{seed}.png", "--seed", seed)
        assert r.returncode == 0, r.stderr
    assert (tmp / "g0-1.png").read_bytes() == (tmp / "g0-2.png").read_bytes()
    assert (tmp / "g1-1.png").read_bytes() != (tmp / "g1-2.png").read_bytes()


def test_same_seed_same_bytes(lumen_bin, photo):
    """The same --seed gives the same file twice, alone or in a batch of parallel jobs (with
    as many threads each)."""
    tmp = photo.parent
    runs = []
    for i in range(2):
        r = film(lumen_bin, photo, tmp / f"s{i}.png", "--seed", "12345", "--halation", "2.5",
                 "--threads", "1")
        assert r.returncode == 0, r.stderr
        runs.append((tmp / f"s{i}.png").read_bytes())
    assert runs[0] == runs[1]
    other = _write(tmp / "other.png", _scene(seed=3))
    r = film(lumen_bin, other, photo, "--output-dir", tmp / "b", "--jobs", "2", "--threads",
             "2", "--seed", "12345", "--halation", "2.5")
    assert r.returncode == 0, r.stderr
    assert (tmp / "b" / "photo.png").read_bytes() == runs[0]


def test_stdin_to_stdout(lumen_bin, photo):
    tmp = photo.parent
    assert film(lumen_bin, photo, tmp / "f.png").returncode == 0
    r = subprocess.run([lumen_bin, "film", "-", "-", "--stock", STOCK, "--format", "png"],
                       input=photo.read_bytes(), capture_output=True)
    assert r.returncode == 0, r.stderr
    got = cv2.imdecode(np.frombuffer(r.stdout, np.uint8), cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(got, _read(tmp / "f.png"))


# ---- many files ---------------------------------------------------------------------------


def test_many_files_with_output_dir(lumen_bin, tmp_path):
    """A folder and a file into --output-dir: each output keeps its input's name and format
    and equals the single run; a line per file and the closing line on stderr."""
    src = tmp_path / "shots"
    src.mkdir()
    for i in range(3):
        _write(src / f"p{i}.png", _scene(seed=i))
    _write(tmp_path / "q.jpg", _scene(h=32, w=48, seed=9))
    r = film(lumen_bin, src, tmp_path / "q.jpg", "--output-dir", tmp_path / "out", "--jobs", "2",
             "--threads", "2")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["p0.png", "p1.png", "p2.png", "q.jpg"]
    for i in range(3):
        r1 = film(lumen_bin, src / f"p{i}.png", tmp_path / f"one{i}.png", "--threads", "1")
        assert r1.returncode == 0, r1.stderr
        assert ((tmp_path / "out" / f"p{i}.png").read_bytes() ==
                (tmp_path / f"one{i}.png").read_bytes())
    lines = r.stderr.splitlines()
    assert len(lines) == 5, r.stderr
    for i in range(3):
        assert any(f"p{i}.png -> {tmp_path / 'out' / f'p{i}.png'}, 56x40" in ln for ln in lines)
    mp = (3 * 56 * 40 + 48 * 32) / 1e6
    m = re.search(r"film: 4 files, ([\d.]+) MP, stock portra400, device (\S+) \((\d+) threads?\): "
                  r"film ([\d.]+) ms/MP; with reading and writing ([\d.]+) ms/MP", lines[-1])
    assert m, lines[-1]
    assert float(m.group(1)) == pytest.approx(mp, abs=0.006)
    assert m.group(2) == "cpu" and float(m.group(4)) > 0 and float(m.group(5)) > 0


def test_a_failed_file_among_good_ones(lumen_bin, tmp_path):
    """A corrupt input fails alone: the others are written, exit 1, a summary of the failure,
    and no temporary file anywhere."""
    src = tmp_path / "shots"
    src.mkdir()
    for i in range(2):
        _write(src / f"p{i}.png", _scene(seed=i))
    (src / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    r = film(lumen_bin, src, "--output-dir", tmp_path / "out", "--compare", "--json")
    assert r.returncode == 1, r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "p0-compare.png", "p0.png", "p1-compare.png", "p1.png"]
    assert "bad.png" in r.stderr and "1 of 3 files failed" in r.stderr
    assert "film: 2 files and their compare pictures" in r.stderr.splitlines()[-1]
    run = json.loads(r.stdout)
    assert (run["command"], run["ok"], run["failed"]) == ("film", 2, 1)
    assert {f["device"] for f in run["files"] if f["status"] == "ok"} == {"cpu"}


# ---- --compare ----------------------------------------------------------------------------


def _srgb8(linear):
    v = np.clip(linear.astype(np.float64), 0, 1)
    e = np.where(v <= 0.0031308, 12.92 * v, 1.055 * v ** (1 / 2.4) - 0.055)
    return np.rint(e * 255).astype(np.uint8)


@pytest.mark.parametrize("name,img", [
    ("rgb.png", _scene()),
    ("grey.png", _scene(c=1)[..., 0]),
    ("rgb16.tif", _scene(dtype=np.uint16)),
    ("linear.npy", _scene(dtype=np.float32)),
], ids=["u8 rgb", "u8 grey", "u16", "f32"])
def test_compare_is_before_and_after(lumen_bin, tmp_path, name, img):
    """OUT's stem + '-compare.png': twice as wide, 8-bit; the left half the input and the right
    the output, as 8-bit sRGB (f32 linear values encoded)."""
    src = _write(tmp_path / name, img)
    out = tmp_path / ("film" + os.path.splitext(name)[1])
    r = film(lumen_bin, src, out, "--compare")
    assert r.returncode == 0, r.stderr
    pic = _read(tmp_path / "film-compare.png")
    h, w = img.shape[:2]
    assert pic.dtype == np.uint8 and pic.shape[:2] == (h, 2 * w)
    assert pic.ndim == img.ndim and (pic.ndim == 2 or pic.shape[2] == img.shape[2])
    before, after = _read(src), _read(out)
    if img.dtype == np.uint16:
        before, after = (np.rint(x / 257.0).astype(np.uint8) for x in (before, after))
    elif img.dtype == np.float32:  # .npy holds RGB, cv2 gives the picture as BGR
        before, after = _srgb8(before), _srgb8(after)
        pic = pic[..., ::-1]
    assert np.abs(pic[:, :w].astype(int) - before).max() <= 1
    assert np.abs(pic[:, w:].astype(int) - after).max() <= 1


def test_compare_in_a_batch_and_its_collisions(lumen_bin, tmp_path):
    src = tmp_path / "shots"
    src.mkdir()
    _write(src / "a.png", _scene())
    _write(src / "b.jpg", _scene(seed=1))
    r = film(lumen_bin, src, "--output-dir", tmp_path / "out", "--compare")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "a-compare.png", "a.png", "b-compare.png", "b.jpg"]
    # a.png and a.jpg would share a-compare.png; x-compare.png's output is x.png's picture
    _write(src / "a.jpg", _scene(seed=2))
    r = film(lumen_bin, src, "--output-dir", tmp_path / "o2", "--compare")
    assert r.returncode == 2 and "a-compare.png" in r.stderr, r.stderr
    assert not (tmp_path / "o2").exists()
    (src / "a.jpg").unlink()
    _write(src / "a-compare.png", _scene(seed=3))
    r = film(lumen_bin, src, "--output-dir", tmp_path / "o3", "--compare")
    assert r.returncode == 2 and "a-compare.png" in r.stderr, r.stderr
    assert not (tmp_path / "o3").exists()


# ---- atomic outputs -----------------------------------------------------------------------


def test_failure_leaves_an_existing_output_untouched(lumen_bin, tmp_path):
    """Outputs are written to a temporary file and renamed: a failed run leaves the old output
    as it was and no temporary file."""
    out = tmp_path / "out.png"
    out.write_bytes(b"the previous result")
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(200))
    r = film(lumen_bin, tmp_path / "bad.png", out, "--compare")
    assert r.returncode == 1 and "bad.png" in r.stderr, r.stderr
    assert out.read_bytes() == b"the previous result"
    r = film(lumen_bin, tmp_path / "missing.png", out)
    assert r.returncode == 1 and "missing.png" in r.stderr
    assert out.read_bytes() == b"the previous result"
    # 5 channels: the film's own refusal, after the read
    np.save(tmp_path / "five.npy", np.zeros((8, 8, 5), np.float32))
    r = film(lumen_bin, tmp_path / "five.npy", tmp_path / "five-out.npy")
    assert r.returncode == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.png", "five.npy", "out.png"]


def test_success_leaves_no_temporary_file(lumen_bin, photo):
    tmp = photo.parent
    (tmp / "out.png").write_bytes(b"old")
    r = film(lumen_bin, photo, tmp / "out.png", "--compare")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp.iterdir()) == ["out-compare.png", "out.png", "photo.png"]
    assert _read(tmp / "out.png").shape == (40, 56, 3)


# ---- progress -----------------------------------------------------------------------------


def test_progress_bar_on_a_terminal_lines_elsewhere(lumen_bin, tmp_path):
    src = tmp_path / "shots"
    src.mkdir()
    for i in range(3):
        _write(src / f"p{i}.png", _scene(seed=i))
    base = [lumen_bin, "film", str(src), "--stock", STOCK, "--output-dir"]
    rc, shown = _stderr_on_a_terminal(base + [str(tmp_path / "a")])
    assert rc == 0 and "lumen film [" in shown and "3/3" in shown and "\r" in shown, shown
    assert "3 files written" in shown and " -> " not in shown
    assert re.search(r"film: 3 files, [\d.]+ MP, .* ms/MP", shown), shown
    rc, shown = _stderr_on_a_terminal(base + [str(tmp_path / "b"), "--quiet"])
    assert rc == 0 and shown == "", shown
    r = run_cli(*base, tmp_path / "c")  # stderr a pipe: a line per file, then the summary
    assert r.returncode == 0 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 4 and "\r" not in r.stderr, r.stderr
    assert sorted(ln.split(" -> ")[0] for ln in lines[:3]) == [
        f"lumen: film: {src / f'p{i}.png'}" for i in range(3)]
    assert "ms/MP" in lines[3] and "device cpu" in lines[3]
    # one file on a terminal: no bar, its line and the summary
    rc, shown = _stderr_on_a_terminal(base[:2] + [str(src / "p0.png"), str(tmp_path / "one.png"),
                                                  "--stock", STOCK])
    assert rc == 0 and "[" not in shown and " -> " in shown and "1 file," in shown, shown


def test_verbose(lumen_bin, photo):
    r = film(lumen_bin, photo, photo.parent / "v.png", "-v", "--threads", "1", "--grain", "0.5",
             "--seed", "9")
    assert r.returncode == 0, r.stderr
    assert re.search(r"film: 56x40 3ch u8, stock portra400, halation 1, bloom 1, grain 0.5, "
                     r"seed 9, device cpu, isa \S+, threads 1, [\d.]+ ms", r.stderr), r.stderr


# ---- devices -----------------------------------------------------------------------------


def _vulkan_devices(lumen_bin):
    info = json.loads(run_cli(lumen_bin, "info", "--json").stdout)
    return [d for d in info["devices"] if d["backend"] == "vulkan"]


@pytest.mark.parametrize("name,img,tol", [
    ("rgb.png", _scene(h=72, w=96), 2),
    ("linear.npy", _scene(h=72, w=96, dtype=np.float32), 2e-3),
], ids=["u8", "f32"])
def test_cpu_and_vulkan_close(lumen_bin, tmp_path, name, img, tol):
    """--device cpu and --device vulkan:0 --strict (lavapipe in CI): close, not necessarily
    the same bits (the sums run in another order)."""
    if not _vulkan_devices(lumen_bin):
        pytest.skip("no Vulkan device here (make test installs lavapipe)")
    src = _write(tmp_path / name, img)
    ext = os.path.splitext(name)[1]
    outs = {}
    for dev in ("cpu", "vulkan:0"):
        out = tmp_path / f"{dev.replace(':', '')}{ext}"
        r = film(lumen_bin, src, out, "--device", dev, "--strict", "--seed", "4")
        assert r.returncode == 0, r.stderr
        assert f"device {dev}" in r.stderr.splitlines()[-1], r.stderr
        outs[dev] = _read(out).astype(np.float64)
    assert np.abs(outs["cpu"] - outs["vulkan:0"]).max() <= tol
