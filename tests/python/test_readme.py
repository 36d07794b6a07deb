"""The README's examples, run literally, so the docs cannot go stale.

Every fenced block of README.md is accounted for here: the CLI examples (lines that start
with `build/lumen`) and the Python examples run as they are written, in a folder that holds the
files they name (a scene made by `lumen scene`, NCHW tensors for `lumen conv`); the others are
run by another part of `make test`, named in COVERED_ELSEWHERE, so a new block that nobody runs
fails this test.
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LUMEN = os.environ.get("LUMEN_BIN", str(ROOT / "build" / "lumen"))

#: First line of a block -> what runs it instead of this test.
COVERED_ELSEWHERE = {
    "make run": "CI itself (.ci/run runs make test; scripts/check-newcomer.sh runs make run's "
                "configure and demo with the test packages hidden)",
    "cmake --install build --prefix /opt/lumen": "the install test (tests/install/run.sh)",
    "/usr/bin/python3 -m pip install --no-build-isolation ./python": "make test-pip",
}


def blocks(lang):
    """The README's fenced blocks of a language, as (first line number, text)."""
    text = README.read_text()
    pattern = re.compile(r"^```" + lang + r"\n(.*?)^```$", re.M | re.S)
    return [(text[:m.start()].count("\n") + 1, m.group(1)) for m in pattern.finditer(text)]


def command_lines(block):
    """A block's commands: continuation lines joined, comments and blank lines dropped."""
    lines = block.replace("\\\n", " ").splitlines()
    return [ln.split("  #")[0].strip() for ln in lines if ln.strip() and not ln.startswith("#")]


@pytest.fixture
def workdir(tmp_path):
    """A folder with the files the examples name."""
    subprocess.run([LUMEN, "scene", str(tmp_path / "photo.png"), "--size", "320x240"], check=True,
                   capture_output=True)
    rng = np.random.default_rng(7)
    np.save(tmp_path / "x.npy", rng.standard_normal((1, 4, 16, 16)).astype(np.float32))
    np.save(tmp_path / "w.npy", rng.standard_normal((6, 2, 3, 3)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal(6).astype(np.float32))
    return tmp_path


def cli_blocks():
    return [(line, b) for line, b in blocks("sh")
            if all(c.startswith("build/lumen ") for c in command_lines(b))]


def test_every_block_is_run_somewhere():
    for line, block in blocks("sh"):
        cmds = command_lines(block)
        if all(c.startswith("build/lumen ") for c in cmds):
            continue
        assert cmds and cmds[0] in COVERED_ELSEWHERE, (
            f"README.md line {line}: a sh block that no test runs: {cmds[:1]}; run it in "
            "tests/python/test_readme.py or name the test that does in COVERED_ELSEWHERE")
    assert cli_blocks(), "README.md has no CLI example block"
    assert blocks("python"), "README.md has no Python example block"


@pytest.mark.parametrize("line,block", cli_blocks(), ids=lambda v: str(v)[:12])
def test_cli_examples(workdir, line, block):
    for cmd in command_lines(block):
        argv = shlex.split(cmd)
        argv[0] = LUMEN
        r = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"README.md line {line}: `{cmd}` exited {r.returncode}:\n{r.stderr}"


@pytest.mark.parametrize("line,block", blocks("python"), ids=lambda v: str(v)[:12])
def test_python_examples(workdir, line, block):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", block], cwd=workdir, capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, f"README.md line {line}: the Python example failed:\n{r.stderr}"
