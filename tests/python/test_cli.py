"""The CLI's contract: exit 0 success, 1 a failed read/write/operation, 2 bad usage; errors on
stderr naming the culprit; no OUT file unless the command succeeded; formats by extension."""

import json
import os

import cv2
import numpy as np
import pytest

from conftest import run_cli

SUBCOMMANDS = ["filter", "blur", "box", "bench", "info", "scene", "kernel"]


@pytest.fixture
def files(tmp_path):
    """A valid f32 input, a 3x3 kernel, and the OUT path (not yet existing)."""
    src = np.random.default_rng(0).random((9, 11)).astype(np.float32)
    np.save(tmp_path / "in.npy", src)
    np.save(tmp_path / "k.npy", np.full((3, 3), 1 / 9, np.float32))
    return tmp_path / "in.npy", tmp_path / "k.npy", tmp_path / "out.npy"


def _no_leftovers(folder, keep):
    """Atomic writes leave nothing behind on failure: no OUT, no temporary files."""
    extra = sorted(p.name for p in folder.iterdir() if p.name not in keep)
    assert not extra, f"unexpected files after a failed command: {extra}"


# ---- help --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_subcommand_help(lumen_bin, cmd, flag):
    r = run_cli(lumen_bin, cmd, flag)
    assert r.returncode == 0, r.stderr
    assert f"lumen {cmd}" in r.stdout and "Usage" in r.stdout
    assert r.stderr == ""


def test_top_level_help_and_version(lumen_bin):
    r = run_cli(lumen_bin, "--help")
    assert r.returncode == 0 and all(c in r.stdout for c in ["filter", "blur", "box", "bench"])
    r = run_cli(lumen_bin, "--version")
    assert r.returncode == 0 and r.stdout.startswith("lumen ")
    r = run_cli(lumen_bin, "help", "blur")
    assert r.returncode == 0 and "--sigma" in r.stdout


# ---- bad usage: exit 2, nothing written --------------------------------------------------------

BAD_USAGE = {
    "no command": [],
    "unknown command": ["frobnicate"],
    "filter unknown flag": ["filter", "{in}", "{out}", "--kernel", "{k}", "--bogus"],
    "filter missing --kernel": ["filter", "{in}", "{out}"],
    "filter missing OUT": ["filter", "{in}", "--kernel", "{k}"],
    "filter extra positional": ["filter", "{in}", "{out}", "extra", "--kernel", "{k}"],
    "filter bad border": ["filter", "{in}", "{out}", "--kernel", "{k}", "--border", "mirror"],
    "filter bad method": ["filter", "{in}", "{out}", "--kernel", "{k}", "--method", "recursive"],
    "filter method upper case": ["filter", "{in}", "{out}", "--kernel", "{k}", "--method", "FFT"],
    "blur method direct": ["blur", "{in}", "{out}", "--sigma", "2", "--method", "direct"],
    "blur bad precision": ["blur", "{in}", "{out}", "--sigma", "2", "--precision", "rough"],
    "blur fast with method": ["blur", "{in}", "{out}", "--sigma", "2", "--precision", "fast",
                              "--method", "fft"],
    "filter bad fft planning": ["filter", "{in}", "{out}", "--kernel", "{k}", "--fft-planning",
                                "patient"],
    "filter anchor outside": ["filter", "{in}", "{out}", "--kernel", "{k}", "--anchor", "3,0"],
    # -1 is the centre of its axis (OpenCV's (-1, -1)); below it is refused
    "filter anchor negative": ["filter", "{in}", "{out}", "--kernel", "{k}", "--anchor", "-2,0"],
    "filter anchor one number": ["filter", "{in}", "{out}", "--kernel", "{k}", "--anchor", "1"],
    "filter value nan": ["filter", "{in}", "{out}", "--kernel", "{k}", "--border", "constant",
                         "--value", "nan"],
    "filter value text": ["filter", "{in}", "{out}", "--kernel", "{k}", "--value", "1.5x"],
    "filter threads 0": ["filter", "{in}", "{out}", "--kernel", "{k}", "--threads", "0"],
    "filter missing value": ["filter", "{in}", "{out}", "--kernel", "{k}", "--border"],
    "filter switch with value": ["filter", "{in}", "{out}", "--kernel", "{k}", "--convolve=1"],
    "blur no sigma or ksize": ["blur", "{in}", "{out}"],
    "blur negative sigma": ["blur", "{in}", "{out}", "--sigma", "-1"],
    "blur zero sigma": ["blur", "{in}", "{out}", "--sigma", "0"],
    "blur even ksize": ["blur", "{in}", "{out}", "--ksize", "4"],
    "blur bad ksize pair": ["blur", "{in}", "{out}", "--ksize", "5,x"],
    "blur sigma inf": ["blur", "{in}", "{out}", "--sigma", "inf"],
    "box missing ksize": ["box", "{in}", "{out}"],
    "box zero ksize": ["box", "{in}", "{out}", "--ksize", "0"],
    "box negative ksize": ["box", "{in}", "{out}", "--ksize", "3,-1"],
    "bench bad size": ["bench", "--size", "0x10"],
    "bench bad repeat": ["bench", "--repeat", "1"],
}


@pytest.mark.parametrize("name", list(BAD_USAGE))
def test_bad_usage_exit_2(lumen_bin, files, name):
    inp, k, out = files
    args = [a.format(**{"in": inp, "out": out, "k": k}) for a in BAD_USAGE[name]]
    r = run_cli(lumen_bin, *args)
    assert r.returncode == 2, f"{name}: exit {r.returncode}, stderr {r.stderr!r}"
    assert r.stderr.strip(), f"{name}: no message on stderr"
    assert r.stdout == "" or name == "no command"
    _no_leftovers(inp.parent, {"in.npy", "k.npy"})


# ---- failures: exit 1, message names the file, nothing written ---------------------------------


@pytest.mark.parametrize("cmd", [["filter", "--kernel", "{k}"], ["blur", "--sigma", "1"],
                                 ["box", "--ksize", "3"]], ids=lambda c: c[0])
def test_missing_input(lumen_bin, files, cmd):
    inp, k, out = files
    missing = inp.parent / "does-not-exist.npy"
    args = [cmd[0], missing, out] + [a.format(k=k) for a in cmd[1:]]
    r = run_cli(lumen_bin, *args)
    assert r.returncode == 1, r.stderr
    assert "does-not-exist.npy" in r.stderr
    _no_leftovers(inp.parent, {"in.npy", "k.npy"})


def test_missing_kernel_file(lumen_bin, files):
    inp, _, out = files
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", inp.parent / "nokernel.npy")
    assert r.returncode == 1 and "nokernel.npy" in r.stderr
    assert not out.exists()


def _truncated_npy(path):
    np.save(path, np.random.default_rng(1).random((20, 20)).astype(np.float32))
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 100])


def _bad_header_npy(path):
    np.save(path, np.zeros((4, 4), np.float32))
    data = bytearray(path.read_bytes())
    data[10:20] = b"}{garbage!"
    path.write_bytes(bytes(data))


CORRUPT = {
    "garbage.png": lambda p: p.write_bytes(os.urandom(300)),
    "truncated.png": lambda p: p.write_bytes(
        cv2.imencode(".png", np.random.default_rng(2).integers(0, 255, (40, 40), np.uint8))[1]
        .tobytes()[:120]),
    "garbage.tif": lambda p: p.write_bytes(b"II*\x00" + os.urandom(200)),
    "garbage.jpg": lambda p: p.write_bytes(b"\xff\xd8\xff" + os.urandom(200)),
    "truncated.npy": _truncated_npy,
    "badheader.npy": _bad_header_npy,
    "empty.npy": lambda p: p.write_bytes(b""),
    "notnpy.npy": lambda p: p.write_text("hello, I am not an array\n"),
    "complex.npy": lambda p: np.save(p, np.zeros((4, 4), np.complex64)),
    "4d.npy": lambda p: np.save(p, np.zeros((2, 3, 4, 5), np.float32)),
    "zero-size.npy": lambda p: np.save(p, np.zeros((0, 5), np.float32)),
}


@pytest.mark.parametrize("name", list(CORRUPT))
def test_corrupt_input(lumen_bin, tmp_path, name):
    bad = tmp_path / name
    CORRUPT[name](bad)
    out = tmp_path / ("out" + bad.suffix)
    r = run_cli(lumen_bin, "blur", bad, out, "--sigma", "1")
    assert r.returncode == 1, f"{name}: exit {r.returncode}, stderr {r.stderr!r}"
    assert name in r.stderr, f"{name}: message does not name the file: {r.stderr!r}"
    _no_leftovers(tmp_path, {name})


def test_unwritable_output_dir(lumen_bin, files, tmp_path):
    inp, k, _ = files
    # a missing folder, and a "folder" that is a regular file (works even as root)
    for out in [tmp_path / "no" / "such" / "dir" / "out.npy", inp / "out.npy"]:
        r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k)
        assert r.returncode == 1, f"{out}: exit {r.returncode}, {r.stderr!r}"
        assert r.stderr.strip()
    _no_leftovers(tmp_path, {"in.npy", "k.npy"})


def test_unsupported_output_extension(lumen_bin, files):
    """A path no writer takes is bad usage, refused before the input is read (issue 12)."""
    inp, k, _ = files
    out = inp.parent / "out.bmp"
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k)
    assert r.returncode == 2 and "out.bmp" in r.stderr
    _no_leftovers(inp.parent, {"in.npy", "k.npy"})


def test_f32_to_png_refused(lumen_bin, files):
    """OUT keeps IN's dtype: an f32 image cannot become a PNG, and nothing is written."""
    inp, k, _ = files
    out = inp.parent / "out.png"
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k)
    assert r.returncode == 1, r.stderr
    _no_leftovers(inp.parent, {"in.npy", "k.npy"})


def test_failed_op_exit_1(lumen_bin, files):
    """--method separable with a rank-2 kernel is a valid command line that the op refuses."""
    inp, _, out = files
    k = inp.parent / "k2.npy"
    np.save(k, np.array([[1, 0], [0, 1]], np.float32))
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k, "--method", "separable")
    assert r.returncode == 1, r.stderr
    assert "separable" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("kernel", [np.array([[1.0, np.nan]], np.float32),
                                    np.zeros((2, 2, 2), np.float32)], ids=["nan", "3-d"])
def test_bad_kernel_exit_1(lumen_bin, files, kernel):
    inp, _, out = files
    k = inp.parent / "bad_kernel.npy"
    np.save(k, kernel)
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k)
    assert r.returncode == 1, r.stderr
    assert "bad_kernel.npy" in r.stderr
    assert not out.exists()


def test_output_overwrites_existing_file(lumen_bin, files):
    inp, k, out = files
    out.write_bytes(b"old contents")
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k)
    assert r.returncode == 0, r.stderr
    assert np.load(out).shape == (9, 11)


def test_verbose_reports_on_stderr(lumen_bin, files):
    inp, k, out = files
    r = run_cli(lumen_bin, "filter", inp, out, "--kernel", k, "--verbose", "--threads", "2")
    assert r.returncode == 0 and r.stdout == ""
    assert "threads 2" in r.stderr and "method" in r.stderr


# ---- dtypes, channels and formats -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.uint16, np.float64])
@pytest.mark.parametrize("shape", [(9, 11), (9, 11, 1), (9, 11, 3), (9, 11, 4)], ids=str)
def test_npy_dtype_and_shape_kept(lumen_bin, tmp_path, dtype, shape):
    rng = np.random.default_rng(3)
    src = (rng.random(shape) * 200).astype(dtype)
    np.save(tmp_path / "in.npy", src)
    r = run_cli(lumen_bin, "box", tmp_path / "in.npy", tmp_path / "out.npy", "--ksize", "1")
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npy")
    # f64 is read as f32 (documented in lumen.h); everything else keeps its dtype
    want_dtype = np.float32 if dtype == np.float64 else dtype
    assert got.dtype == want_dtype
    # The channel count is kept; an explicit H x W x 1 comes back as H x W (lumen's images
    # carry no "2-D or 3-D" flag). Anything else must keep its shape.
    allowed = {shape, shape[:2]} if len(shape) == 3 and shape[2] == 1 else {shape}
    assert got.shape in allowed, f"{shape} -> {got.shape}"
    # a 1x1 box is the identity
    np.testing.assert_array_equal(got.reshape(shape), src.astype(want_dtype))


def test_fortran_order_npy(lumen_bin, tmp_path):
    src = np.asfortranarray(np.arange(6 * 7, dtype=np.float32).reshape(6, 7))
    np.save(tmp_path / "in.npy", src)
    r = run_cli(lumen_bin, "box", tmp_path / "in.npy", tmp_path / "out.npy", "--ksize", "1")
    if r.returncode == 0:
        np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), src)
    else:
        assert r.returncode == 1 and "in.npy" in r.stderr  # refusing is fine, garbling is not


@pytest.mark.parametrize("ext,dtype,channels", [
    (".png", np.uint8, 1), (".png", np.uint8, 3), (".png", np.uint16, 1), (".png", np.uint8, 4),
    (".tif", np.uint8, 3), (".tif", np.uint16, 1), (".tif", np.float32, 1),
    (".tif", np.float32, 3),
])
def test_image_formats_match_npy(lumen_bin, tmp_path, ext, dtype, channels):
    """IN/OUT by extension: the same pixels through PNG/TIFF give the .npy result."""
    rng = np.random.default_rng(4)
    shape = (23, 31) if channels == 1 else (23, 31, channels)
    src = (rng.random(shape) * (1 if dtype == np.float32 else np.iinfo(dtype).max)).astype(dtype)
    if ext == ".tif" and dtype == np.float32 and channels == 3:
        # cv2 writes 3-channel float TIFF as lossy LogLuv (compression 34676), which lumen
        # refuses; let lumen write the input (a 1x1 box is a copy) and cv2 read it back.
        np.save(tmp_path / "src.npy", src)
        r = run_cli(lumen_bin, "box", tmp_path / "src.npy", tmp_path / f"in{ext}", "--ksize", "1")
        assert r.returncode == 0, r.stderr
    else:
        assert cv2.imwrite(str(tmp_path / f"in{ext}"), src)
    np.save(tmp_path / "in.npy", cv2.imread(str(tmp_path / f"in{ext}"), cv2.IMREAD_UNCHANGED))
    for stem in ["in.npy", f"in{ext}"]:
        out = tmp_path / stem.replace("in", "out")
        r = run_cli(lumen_bin, "blur", tmp_path / stem, out, "--sigma", "1.5",
                    "--border", "replicate")
        assert r.returncode == 0, r.stderr
    via_npy = np.load(tmp_path / "out.npy")
    via_img = cv2.imread(str(tmp_path / f"out{ext}"), cv2.IMREAD_UNCHANGED)
    assert via_img is not None and via_img.dtype == dtype
    np.testing.assert_array_equal(via_img, via_npy)


def test_jpeg_roundtrip(lumen_bin, tmp_path):
    src = np.random.default_rng(5).integers(0, 255, (16, 24, 3), np.uint8)
    assert cv2.imwrite(str(tmp_path / "in.jpg"), src)
    r = run_cli(lumen_bin, "box", tmp_path / "in.jpg", tmp_path / "out.jpg", "--ksize", "3")
    assert r.returncode == 0, r.stderr
    out = cv2.imread(str(tmp_path / "out.jpg"), cv2.IMREAD_UNCHANGED)
    assert out.shape == src.shape and out.dtype == np.uint8


# ---- bench --json ----------------------------------------------------------------------------


def test_bench_json(lumen_bin):
    r = run_cli(lumen_bin, "bench", "--json", "--size", "64x48", "--repeat", "5", "--threads",
                "2", timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    names = [row["name"] for row in rows]
    photo = [row for row in rows if row["name"].startswith("photo_")]
    assert names[:len(names) - len(photo)] == [
        "filter2d_k3", "filter2d_k7", "filter2d_k15", "filter2d_k31",
        "filter2d_k61", "filter2d_k121", "filter2d_k201", "filter2d_k61_batch10",
        "gaussian_s1", "gaussian_s3", "gaussian_s10", "gaussian_s30", "gaussian_s50",
        "gaussian_fast_s30", "gaussian_fast_s50"]
    # issue 30's photo cases follow (u8 then u16 RGB, --size's when no --photo-size)
    assert len(photo) == 29 and photo[0]["name"] == "photo_u8_filter2d_k3"
    assert {(r["dtype"], r["channels"], r["width"], r["height"]) for r in photo} == {
        ("u8", 3, 64, 48), ("u16", 3, 64, 48)}
    assert all(r["floor_ms"] > 0 and r["floor_ratio"] > 0 for r in photo)
    rows = rows[:len(names) - len(photo)]
    assert all(row["status"] == "ok" for row in rows), [r for r in rows if r["status"] != "ok"]
    keys = {"name", "op", "ksize", "sigma", "width", "height", "method", "device", "isa",
            "threads", "ms_cold", "ms_min", "ms_median"}
    for row in rows:
        assert keys <= set(row), f"missing keys {keys - set(row)}"
        assert (row["width"], row["height"], row["threads"]) == (64, 48, 2)
        assert 0 < row["ms_min"] <= row["ms_median"]
        assert row["ms_cold"] > 0
    by = {row["name"]: row for row in rows}
    assert [by[f"filter2d_k{k}"]["ksize"] for k in (3, 7, 15)] == [3, 7, 15]
    # gaussian cases: ksize = 2*round(3*sigma)+1
    assert [by[f"gaussian_s{s}"]["ksize"] for s in (1, 3, 10)] == [7, 19, 61]
    assert [by[f"gaussian_s{s}"]["sigma"] for s in (1, 3, 10)] == [1, 3, 10]
    assert [by[f"gaussian_fast_s{s}"]["method"] for s in (30, 50)] == ["recursive"] * 2
    # which of direct/fft wins on a 64x48 image is the calibrated cost model's call
    assert all(by[f"filter2d_k{k}"]["method"] in ("direct", "fft") for k in (121, 201))
    assert by["filter2d_k61_batch10"]["batch"] == 10


def test_bench_photo_cases_are_picked_by_group(lumen_bin):
    """Issue 30: --case photo_u16_gauss picks the four u16 Gaussians, on --photo-size's image."""
    r = run_cli(lumen_bin, "bench", "--json", "--photo-size", "40x30", "--repeat", "5",
                "--case", "photo_u16_gauss,photo_u8_resize_quarter", timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["name"] for row in rows] == [
        "photo_u8_resize_quarter", "photo_u16_gauss_s1", "photo_u16_gauss_s2",
        "photo_u16_gauss_s3", "photo_u16_gauss_s5"]
    assert [row["ksize"] for row in rows[1:]] == [9, 17, 25, 41]  # OpenCV's 8 sigma + 1 for u16
    assert (rows[0]["out_width"], rows[0]["out_height"], rows[0]["rule"]) == (10, 8, "opencv")
    assert all(row["status"] == "ok" and row["width"] == 40 for row in rows)
