"""Batches on the image op commands (issue 12, item 5): many inputs or folders with
--output-dir, output name patterns, '-' for stdin/stdout, --jobs, --json records, a progress
bar only on a terminal, and on errors: the rest goes on, a summary, exit 1. Output paths the
writer cannot take are refused (exit 2) before any input is read. The same machinery
(tools/lumen/batch.c) serves the hand-written commands and the descriptor-made ones."""

import json
import os
import pty
import subprocess

import cv2
import numpy as np
import pytest

from conftest import run_cli

# Every image command, with the flags that make it run on one 3-channel u8 image.
COMMANDS = {
    "blur": ["--sigma", "1.5"],
    "box": ["--ksize", "3"],
    "filter": ["--kernel", "{k}"],
    "gaussian-blur": ["--sigma", "1.5"],
    "box-blur": ["--ksize", "3"],
}


@pytest.fixture
def photos(tmp_path):
    """A folder of 4 small PNGs (and a text file and a hidden file that are not inputs), a
    3x3 kernel next to it."""
    rng = np.random.default_rng(11)
    src = tmp_path / "photos"
    src.mkdir()
    for i in range(4):
        img = rng.integers(0, 256, (13 + i, 17, 3), np.uint8)
        assert cv2.imwrite(str(src / f"p{i}.png"), img)
    (src / "notes.txt").write_text("not an image\n")
    (src / ".p9.png.Ab12Cd").write_bytes(b"an interrupted write's temporary")
    np.save(tmp_path / "k.npy", rng.random((3, 3)).astype(np.float32))
    return src


def _args(cmd, tmp_path):
    return [a.format(k=tmp_path / "k.npy") for a in COMMANDS[cmd]]


def _read(path):
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert img is not None, path
    return img


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_folder_and_files_equal_single_runs(lumen_bin, photos, cmd):
    """A folder, or many files, into --output-dir: each output keeps its input's base name and
    equals what the single form IN OUT writes. --jobs 2 changes nothing in the results."""
    tmp = photos.parent
    flags = _args(cmd, tmp)
    r = run_cli(lumen_bin, cmd, photos, "--output-dir", tmp / "out", *flags)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp / "out").iterdir()) == [f"p{i}.png" for i in range(4)]
    files = [photos / f"p{i}.png" for i in (2, 0)]
    r = run_cli(lumen_bin, cmd, *files, "--output-dir", tmp / "par", "--jobs", "2", *flags)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp / "par").iterdir()) == ["p0.png", "p2.png"]
    for i in range(4):
        single = tmp / f"single{i}.png"
        r = run_cli(lumen_bin, cmd, photos / f"p{i}.png", single, *flags)
        assert r.returncode == 0, r.stderr
        np.testing.assert_array_equal(_read(tmp / "out" / f"p{i}.png"), _read(single))
        if i in (0, 2):
            np.testing.assert_array_equal(_read(tmp / "par" / f"p{i}.png"), _read(single))


def test_filter2d_kernel_follows_the_images(lumen_bin, photos):
    """A descriptor command with another positional: the images take what the kernel leaves."""
    tmp = photos.parent
    r = run_cli(lumen_bin, "filter2d", photos / "p0.png", photos / "p1.png", tmp / "k.npy",
                "--output-dir", tmp / "out")
    assert r.returncode == 0, r.stderr
    r = run_cli(lumen_bin, "filter2d", photos / "p1.png", tmp / "k.npy", tmp / "one.png")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(_read(tmp / "out" / "p1.png"), _read(tmp / "one.png"))


def test_name_pattern_and_format(lumen_bin, photos):
    tmp = photos.parent
    r = run_cli(lumen_bin, "blur", photos, "--output-dir", tmp / "o", "--sigma", "1",
                "--name", "{n}-{stem}-soft.{ext}", "--format", "tif")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp / "o").iterdir())
    assert names == [f"{i + 1}-p{i}-soft.tif" for i in range(4)]
    assert _read(tmp / "o" / "1-p0-soft.tif").shape == (13, 17, 3)


@pytest.mark.parametrize("flags,culprit", [
    (["--name", "{stem}/x.png"], "--name"),
    (["--name", "{base}.png"], "--name"),
    (["--format", "bmp"], ".bmp"),
    (["--name", "same.png"], "same.png"),
    (["--dtype", "f32", "--format", "png"], "f32"),
    (["--jobs", "0"], "--jobs"),
    (["--dtype", "f64"], "--dtype"),
], ids=["slash", "unknown field", "bad format", "duplicate outputs", "dtype for png", "jobs 0",
        "bad dtype"])
def test_batch_usage_errors_before_any_work(lumen_bin, photos, flags, culprit):
    tmp = photos.parent
    r = run_cli(lumen_bin, "blur", photos, "--output-dir", tmp / "o", "--sigma", "1", *flags)
    assert r.returncode == 2, r.stderr
    assert culprit in r.stderr
    assert not (tmp / "o").exists()


def test_outputs_checked_before_the_input_is_read(lumen_bin, tmp_path):
    """An output the writer refuses is bad usage, found before reading: the input here does
    not even exist, and the message is about the output."""
    missing = tmp_path / "missing.png"
    for cmd in COMMANDS:
        for out, extra in ((tmp_path / "out.bmp", []),
                           (tmp_path / "out.png", ["--dtype", "f32"]),
                           (tmp_path / "out.jpg", ["--dtype", "u16"])):
            r = run_cli(lumen_bin, cmd, missing, out, *_args(cmd, tmp_path), *extra)
            assert r.returncode == 2, (cmd, out, r.stderr)
            assert out.name in r.stderr and "missing.png" not in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_single_form_mistakes(lumen_bin, photos):
    tmp = photos.parent
    cases = [
        ([photos / "p0.png", photos / "p1.png", tmp / "o.png"], "--output-dir"),  # 3 positionals
        ([photos, tmp / "o.png"], "folder"),                                      # IN a folder
        ([photos / "p0.png", photos], "--output-dir"),                            # OUT a folder
        ([photos / "p0.png", tmp / "o.png", "--name", "x.png"], "--name"),
        ([photos / "p0.png", tmp / "o.png", "--format", "png"], "--format"),
        ([photos / "p0.png", "-"], "--format"),                                   # stdout
        ([photos / "p0.png", "-", "--format", "png", "--json"], "--json"),
        (["-", "--output-dir", tmp / "o"], "stdin"),
    ]
    for args, culprit in cases:
        r = run_cli(lumen_bin, "blur", *args, "--sigma", "1")
        assert r.returncode == 2 and culprit in r.stderr, (args, r.stderr)
        assert r.stdout == ""
    assert not (tmp / "o.png").exists() and not (tmp / "o").exists()


def test_empty_folder(lumen_bin, photos):
    """A folder without images is reported; with nothing at all to do the run is bad usage."""
    tmp = photos.parent
    (tmp / "empty").mkdir()
    r = run_cli(lumen_bin, "blur", tmp / "empty", "--output-dir", tmp / "o", "--sigma", "1")
    assert r.returncode == 2 and "no image files" in r.stderr and "no input" in r.stderr
    assert not (tmp / "o").exists()
    r = run_cli(lumen_bin, "blur", tmp / "empty", photos / "p0.png", "--output-dir", tmp / "o",
                "--sigma", "1")
    assert r.returncode == 0 and "no image files" in r.stderr
    assert [p.name for p in (tmp / "o").iterdir()] == ["p0.png"]


def test_output_never_replaces_its_input(lumen_bin, photos):
    r = run_cli(lumen_bin, "blur", photos, "--output-dir", photos, "--sigma", "1")
    assert r.returncode == 2 and "its own input" in r.stderr


def test_errors_go_on_with_a_summary_and_json(lumen_bin, photos):
    """A corrupt file and an unreadable one among good ones: the good ones are written, each
    failure is reported, a summary line follows, exit 1; --json has a record per file."""
    tmp = photos.parent
    (photos / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    gone = tmp / "gone.png"
    r = run_cli(lumen_bin, "blur", photos, gone, "--output-dir", tmp / "o", "--sigma", "1",
                "--json", "--jobs", "2")
    assert r.returncode == 1, r.stderr
    written = sorted(p.name for p in (tmp / "o").iterdir())
    assert written == [f"p{i}.png" for i in range(4)]
    assert "bad.png" in r.stderr and "gone.png" in r.stderr
    assert "2 of 6 files failed" in r.stderr.splitlines()[-1]
    run = json.loads(r.stdout)
    assert (run["command"], run["ok"], run["failed"]) == ("blur", 4, 2)
    by = {os.path.basename(f["input"]): f for f in run["files"]}
    assert list(by) == ["bad.png"] + [f"p{i}.png" for i in range(4)] + ["gone.png"]
    for name in ("bad.png", "gone.png"):
        assert by[name]["status"] == "failed" and name in by[name]["error"]
    ok = by["p1.png"]
    assert ok["status"] == "ok" and ok["error"] is None and ok["ms"] >= ok["op_ms"] > 0
    assert ok["output"] == str(tmp / "o" / "p1.png")
    assert ok["method"] in ("separable", "fft") and ok["device"] == "cpu"
    assert (ok["width"], ok["height"], ok["channels"], ok["dtype"]) == (17, 14, 3, "u8")
    assert ok["threads"] >= 1


def test_single_file_json(lumen_bin, photos, tmp_path):
    r = run_cli(lumen_bin, "box", photos / "p0.png", tmp_path / "o.png", "--ksize", "3",
                "--json", "--threads", "1")
    assert r.returncode == 0, r.stderr
    files = json.loads(r.stdout)["files"]
    assert len(files) == 1 and files[0]["status"] == "ok" and files[0]["threads"] == 1


def test_jobs_share_the_threads(lumen_bin, photos):
    tmp = photos.parent
    r = run_cli(lumen_bin, "blur", photos, "--output-dir", tmp / "o", "--sigma", "1", "--json",
                "--jobs", "2", "--threads", "4")
    assert r.returncode == 0, r.stderr
    assert {f["threads"] for f in json.loads(r.stdout)["files"]} == {2}


def test_stdin_to_stdout(lumen_bin, photos, tmp_path):
    """'-' reads stdin (its format told by its bytes) and writes stdout in --format."""
    data = (photos / "p0.png").read_bytes()
    r = subprocess.run([lumen_bin, "blur", "-", "-", "--sigma", "1.5", "--format", "png"],
                       input=data, capture_output=True)
    assert r.returncode == 0, r.stderr
    got = cv2.imdecode(np.frombuffer(r.stdout, np.uint8), cv2.IMREAD_UNCHANGED)
    run_cli(lumen_bin, "blur", photos / "p0.png", tmp_path / "f.png", "--sigma", "1.5")
    np.testing.assert_array_equal(got, _read(tmp_path / "f.png"))
    # stdin to a file, a file to stdout as .npy
    r = subprocess.run([lumen_bin, "box", "-", tmp_path / "s.png", "--ksize", "3"], input=data,
                       capture_output=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([lumen_bin, "box", photos / "p0.png", "-", "--ksize", "3", "--format",
                        "npy"], capture_output=True)
    assert r.returncode == 0 and r.stdout.startswith(b"\x93NUMPY"), r.stderr
    # a failure writes nothing to stdout and names <stdin>
    r = subprocess.run([lumen_bin, "blur", "-", "-", "--sigma", "1", "--format", "png"],
                       input=data[:60], capture_output=True)
    assert r.returncode == 1 and r.stdout == b"" and b"<stdin>" in r.stderr


def test_dtype_keeps_values_as_convert_to(lumen_bin, tmp_path):
    """--dtype sets the result's type, values kept (rounded, saturated) as OpenCV's convertTo
    and lumen's dtype= in Python: u8 -> f32 is the f32 blur of the same numbers, and f32 ->
    u8 rounds and clips it."""
    rng = np.random.default_rng(3)
    u8 = rng.integers(0, 256, (21, 19), np.uint8)
    np.save(tmp_path / "u8.npy", u8)
    np.save(tmp_path / "f32.npy", u8.astype(np.float32) * 1.5 - 60)
    r = run_cli(lumen_bin, "blur", tmp_path / "u8.npy", tmp_path / "as_f32.npy", "--sigma", "2",
                "--ksize", "13", "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    want = cv2.GaussianBlur(u8.astype(np.float32), (13, 13), 2, borderType=cv2.BORDER_REFLECT)
    got = np.load(tmp_path / "as_f32.npy")
    assert got.dtype == np.float32 and np.abs(got - want).max() < 1e-3
    r = run_cli(lumen_bin, "blur", tmp_path / "f32.npy", tmp_path / "f.npy", "--sigma", "2")
    assert r.returncode == 0, r.stderr
    for ext in ("png", "npy"):
        r = run_cli(lumen_bin, "blur", tmp_path / "f32.npy", tmp_path / f"as_u8.{ext}",
                    "--sigma", "2", "--dtype", "u8")
        assert r.returncode == 0, r.stderr
        got = _read(tmp_path / "as_u8.png") if ext == "png" else np.load(tmp_path / "as_u8.npy")
        want = np.clip(np.rint(np.load(tmp_path / "f.npy")), 0, 255).astype(np.uint8)
        assert got.dtype == np.uint8 and np.abs(got.astype(int) - want).max() <= 1


def _stderr_on_a_terminal(args):
    """Runs lumen with stderr on a pseudo-terminal; returns (exit status, what it showed)."""
    master, slave = pty.openpty()
    try:
        r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=slave, timeout=120)
    finally:
        os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return r.returncode, out.decode(errors="replace")


def test_progress_bar_only_on_a_terminal(lumen_bin, photos):
    tmp = photos.parent
    base = [lumen_bin, "blur", str(photos), "--sigma", "1", "--output-dir"]
    rc, shown = _stderr_on_a_terminal(base + [str(tmp / "a")])
    assert rc == 0 and "[" in shown and "4/4" in shown and "\r" in shown, shown
    assert "4 files written" in shown
    rc, shown = _stderr_on_a_terminal(base + [str(tmp / "b"), "--quiet"])
    assert rc == 0 and shown == "", shown
    r = run_cli(lumen_bin, *base[1:], tmp / "c")  # stderr a pipe: nothing at all
    assert r.returncode == 0 and r.stderr == "" and r.stdout == ""


def test_help_lists_the_batch_flags(lumen_bin):
    for cmd in list(COMMANDS) + ["filter2d", "sep-filter2d"]:
        out = run_cli(lumen_bin, cmd, "--help").stdout
        for flag in ("--output-dir DIR", "--name PATTERN", "--format EXT", "--dtype T",
                     "-j, --jobs N", "--json", "-q, --quiet"):
            assert flag in out, (cmd, flag)
        assert "IN... --output-dir DIR" in out or "SRC... " in out, cmd
    assert "--output-dir" not in run_cli(lumen_bin, "conv", "--help").stdout
