"""The op descriptors (include/lumen_ops.h) drive both front ends: for every op, the CLI command's
--help lists each argument, the Python function's signature and keyword names are the
descriptor's (plus the front end's own out/dtype/context), its docstring is the descriptor's
help, and the shipped type stubs match what the generator makes from the table. `lumen conv`,
made from the conv2d descriptor alone, gives torch's answer on NCHW .npy files; its mistakes
name the flag, exit 2 (bad usage) or 1 (a file), and leave no output behind."""

import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli

lumen = pytest.importorskip("lumen")
from lumen import _lumen  # noqa: E402

DESCRIPTORS = _lumen._op_descriptors()
OPS = [d["name"] for d in DESCRIPTORS]
BY_NAME = {d["name"]: d for d in DESCRIPTORS}


def _flag(arg):
    """The CLI spelling of an option argument: --border-value; a default-on bool is --no-X."""
    name = arg["name"].replace("_", "-")
    return f"--no-{name}" if arg["type"] == "bool" and arg["default"] else f"--{name}"


def _is_positional(arg):
    return arg["required"] and arg["type"] in ("image", "tensor", "kernel", "vector")


# ---- the table as Python sees it ---------------------------------------------------------------


def test_table_lists_every_op_once():
    assert len(OPS) == len(set(OPS)) >= 6
    assert {"filter2d", "sep_filter2d", "gaussian_blur", "box_blur", "conv2d",
            "conv_transpose2d"} <= set(OPS)
    commands = [d["command"] for d in DESCRIPTORS]
    assert len(commands) == len(set(commands)) and "conv" in commands


@pytest.mark.parametrize("op", OPS)
def test_python_keywords_are_the_descriptor_names(op):
    """Keyword parsing comes from the table: every name is accepted, an unknown one refused."""
    d = BY_NAME[op]
    params = inspect.signature(getattr(lumen, op)).parameters
    names = [a["name"] for a in d["args"]] + d["extras"]
    assert list(params) == names
    # The front end's own keywords: out, dtype and layout for images, context; gaussian_blur
    # adds SciPy's spellings first (docs/python.md).
    common = ["out", "dtype", "layout", "context"] if d["output"] == "image" else ["out", "context"]
    own = ["mode", "cval", "truncate"] if op == "gaussian_blur" else []
    assert d["extras"] == own + common
    dummy = {"real": 1.0, "int pair": 3, "int": 1}
    required = [dummy.get(a["type"], np.ones((3, 3), np.float32))
                for a in d["args"] if a["required"]]
    with pytest.raises(TypeError, match="no_such_keyword"):
        getattr(lumen, op)(*required, no_such_keyword=1)


@pytest.mark.parametrize("op", OPS)
def test_python_signature_defaults_and_kinds(op):
    d = BY_NAME[op]
    params = inspect.signature(getattr(lumen, op)).parameters
    for a in d["args"]:
        p = params[a["name"]]
        if a["required"]:
            assert p.default is inspect.Parameter.empty
            assert p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
        else:
            assert p.default == a["default"], a["name"]
            assert p.kind == (inspect.Parameter.POSITIONAL_OR_KEYWORD if a["positional"]
                              else inspect.Parameter.KEYWORD_ONLY)
    for e in d["extras"]:
        assert params[e].default is None and params[e].kind == inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("op", OPS)
def test_python_docstring_from_descriptor(op):
    d = BY_NAME[op]
    doc = getattr(lumen, op).__doc__
    assert doc.startswith(d["summary"]) and d["help"] in doc
    for a in d["args"]:
        assert f"    {a['name']}: {a['help']}" in doc
    for e in d["extras"]:
        assert f"    {e}: " in doc


def test_all_comes_from_the_table():
    assert set(OPS) <= set(lumen.__all__)
    for name in lumen.__all__:
        assert hasattr(lumen, name), name


# ---- type stubs --------------------------------------------------------------------------------


def test_stubs_shipped_and_current():
    """python/lumen/__init__.pyi is what scripts/gen_stubs.py makes from the descriptors now."""
    pkg = REPO / "python" / "lumen"
    assert (pkg / "py.typed").exists()
    r = subprocess.run([sys.executable, str(REPO / "python" / "gen_stubs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_stub_signatures_match_runtime():
    import ast
    tree = ast.parse((REPO / "python" / "lumen" / "__init__.pyi").read_text())
    stubs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for op in OPS:
        f = stubs[op]
        names = [a.arg for a in f.args.args + f.args.kwonlyargs]
        assert names == list(inspect.signature(getattr(lumen, op)).parameters), op


# ---- the CLI: one command per descriptor ---------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_cli_help_lists_every_argument(lumen_bin, op):
    d = BY_NAME[op]
    r = run_cli(lumen_bin, d["command"], "--help")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith(f"Usage: lumen {d['command']} ")
    for a in d["args"]:
        if _is_positional(a):
            assert a["name"].upper() in r.stdout.splitlines()[0]
        else:
            assert f"  {_flag(a)}" in r.stdout, a["name"]
        assert a["help"].split()[0] in r.stdout
    for common in ("--threads N", "--device D", "--strict", "--no-simd", "-v, --verbose",
                   "-h, --help"):
        assert common in r.stdout
    top = run_cli(lumen_bin, "--help").stdout
    assert f"  {d['command']} " in top


def test_threads_help_states_the_library_cap(lumen_bin):
    """One --threads line for every command, with the library's cap (LUMEN_MAX_THREADS)."""
    lines = set()
    for cmd in (["filter"], ["blur"], ["box"], ["bench"], ["bench", "conv"], ["info"], ["conv"]):
        out = run_cli(lumen_bin, *cmd, "--help").stdout
        lines |= {ln for ln in out.splitlines() if ln.startswith("  --threads")}
    assert lines == {"  --threads N       worker threads, 1-4096 (default: $LUMEN_NUM_THREADS, else"}
    r = run_cli(lumen_bin, "info", "--threads", "4096", "--json")
    assert r.returncode == 0, r.stderr
    r = run_cli(lumen_bin, "info", "--threads", "4097")
    assert r.returncode == 2 and "--threads" in r.stderr


# ---- lumen conv against torch ------------------------------------------------------------------

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.fixture
def nchw(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 11, 9)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    for name, a in (("x", x), ("w", w), ("b", b)):
        np.save(tmp_path / f"{name}.npy", a)
    return tmp_path, x, w, b


def _tol(ref):
    return 1e-5 * max(1.0, float(np.abs(ref).max()))


CONV_CASES = {
    "plain": ([], {}),
    "stride pair, padding, dilation, groups": (
        ["--stride", "2,1", "--padding", "1,2", "--dilation", "1,2", "--groups", "2"],
        dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    "single numbers": (["--stride=2", "--padding", "1"], dict(stride=2, padding=1)),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
@pytest.mark.parametrize("bias", [False, True])
def test_conv_matches_torch(lumen_bin, nchw, case, bias):
    folder, x, w, b = nchw
    flags, kw = CONV_CASES[case]
    if "groups" not in kw:
        w = np.concatenate([w, w], axis=1)  # (6, 4, 3, 3): C = 4 without groups
        np.save(folder / "w.npy", w)
    args = ["conv", folder / "x.npy", folder / "w.npy", folder / "y.npy", *flags]
    if bias:
        args += ["--bias", folder / "b.npy"]
    r = run_cli(lumen_bin, *args)
    assert r.returncode == 0, r.stderr
    ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                   torch.from_numpy(b) if bias else None, **kw).numpy()
    y = np.load(folder / "y.npy")
    assert y.shape == ref.shape and y.dtype == np.float32
    assert np.abs(y - ref).max() <= _tol(ref)


def test_conv_reads_fortran_order_and_3d(lumen_bin, nchw):
    """A Fortran-ordered file is the same tensor; an unbatched (C, H, W) file is N = 1."""
    folder, x, w, _ = nchw
    np.save(folder / "xf.npy", np.asfortranarray(x))
    np.save(folder / "x3.npy", x[0])
    r = run_cli(lumen_bin, "conv", folder / "xf.npy", folder / "w.npy", folder / "yf.npy",
                "--groups", "2", "-v")
    assert r.returncode == 0, r.stderr
    assert "lumen: conv: x 2x4x11x9 f32" in r.stderr and "algo" in r.stderr
    ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), groups=2).numpy()
    assert np.abs(np.load(folder / "yf.npy") - ref).max() <= _tol(ref)
    r = run_cli(lumen_bin, "conv", folder / "x3.npy", folder / "w.npy", folder / "y3.npy",
                "--groups", "2")
    assert r.returncode == 0, r.stderr
    assert np.load(folder / "y3.npy").shape == (1,) + ref.shape[1:]


def test_conv_transpose_matches_torch(lumen_bin, nchw):
    folder, x, _, b = nchw
    w = np.random.default_rng(3).standard_normal((4, 3, 3, 3)).astype(np.float32)
    np.save(folder / "wt.npy", w)
    r = run_cli(lumen_bin, "conv-transpose", folder / "x.npy", folder / "wt.npy",
                folder / "y.npy", "--stride", "2", "--padding", "1", "--output-padding", "1",
                "--bias", folder / "b.npy", "--groups", "2")
    assert r.returncode == 0, r.stderr
    ref = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                             stride=2, padding=1, output_padding=1, groups=2).numpy()
    y = np.load(folder / "y.npy")
    assert y.shape == ref.shape and np.abs(y - ref).max() <= _tol(ref)


def _leftovers(folder, keep):
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


CONV_USAGE = {
    "stride 0": (["--stride", "0"], "--stride"),
    "stride three numbers": (["--stride", "1,2,3"], "--stride"),
    "padding negative": (["--padding", "-1"], "--padding"),
    "dilation text": (["--dilation", "two"], "--dilation"),
    "groups do not divide": (["--groups", "3"], "--groups"),
    "unknown flag": (["--bogus"], "--bogus"),
    "missing value": (["--groups"], "--groups"),
    "switch of another op": (["--convolve"], "--convolve"),
    "output padding is conv-transpose's": (["--output-padding", "1"], "--output-padding"),
    "bias of the wrong length": (["--bias", "{w}", "--groups", "2"], "--bias"),
}


@pytest.mark.parametrize("name", list(CONV_USAGE))
def test_conv_errors_name_the_flag(lumen_bin, nchw, name):
    folder, *_ = nchw
    flags, culprit = CONV_USAGE[name]
    flags = [f.format(w=folder / "b2.npy") for f in flags]
    np.save(folder / "b2.npy", np.zeros(5, np.float32))
    r = run_cli(lumen_bin, "conv", folder / "x.npy", folder / "w.npy", folder / "y.npy", *flags)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith(f"lumen: {culprit}") or f"'{culprit}" in r.stderr \
        or f"{culprit}:" in r.stderr, r.stderr
    assert r.stdout == ""
    assert _leftovers(folder, {"x.npy", "w.npy", "b.npy", "b2.npy"}) == []


def test_conv_bad_files_exit_1_and_leave_nothing(lumen_bin, nchw):
    folder, *_ = nchw
    keep = {"x.npy", "w.npy", "b.npy", "m.npy"}
    np.save(folder / "m.npy", np.zeros((2, 2, 2, 2, 2), np.float32))
    for args, culprit in (
        ([folder / "missing.npy", folder / "w.npy"], "missing.npy"),
        ([folder / "m.npy", folder / "w.npy"], "m.npy"),
        ([folder / "x.npy", folder / "w.npy", "--bias", folder / "x.npy"], "--bias"),
    ):
        r = run_cli(lumen_bin, "conv", *args[:2], folder / "y.npy", *args[2:], "--groups", "2")
        assert r.returncode == 1, r.stderr
        assert culprit in r.stderr
        assert _leftovers(folder, keep) == []
    r = run_cli(lumen_bin, "conv", folder / "x.npy", folder / "w.npy", folder / "y.png",
                "--groups", "2")
    assert r.returncode == 1 and "y.png" in r.stderr
    assert _leftovers(folder, keep) == []


def test_required_flag_and_bad_choice_name_the_flag(lumen_bin, tmp_path):
    np.save(tmp_path / "img.npy", np.zeros((5, 6), np.float32))
    r = run_cli(lumen_bin, "gaussian-blur", tmp_path / "img.npy", tmp_path / "o.npy")
    assert r.returncode == 2 and r.stderr.startswith("lumen: --sigma: required"), r.stderr
    r = run_cli(lumen_bin, "gaussian-blur", tmp_path / "img.npy", tmp_path / "o.npy",
                "--sigma", "1", "--border", "mirror")
    assert r.returncode == 2 and r.stderr.startswith("lumen: --border: unknown value 'mirror'")
    r = run_cli(lumen_bin, "help", "conv")
    assert r.returncode == 0 and r.stdout.startswith("Usage: lumen conv X WEIGHT OUT")
    assert _leftovers(tmp_path, {"img.npy"}) == []


def test_conv_missing_positional(lumen_bin, nchw):
    folder, *_ = nchw
    r = run_cli(lumen_bin, "conv", folder / "x.npy", folder / "w.npy")
    assert r.returncode == 2 and "missing OUT" in r.stderr


# ---- the image ops through the descriptor path equal the Python binding -----------------------


def test_descriptor_image_ops_match_python(lumen_bin, tmp_path):
    rng = np.random.default_rng(5)
    img = rng.random((17, 23, 3)).astype(np.float32)
    k = rng.random((3, 5)).astype(np.float32)
    kx, ky = np.float32([1, 2, 1]) / 4, np.float32([1, -1])
    for name, a in (("img", img), ("k", k), ("kx", kx), ("ky", ky)):
        np.save(tmp_path / f"{name}.npy", a)
    cases = [
        (["filter2d", "img.npy", "k.npy", "--anchor", "1,2", "--convolve", "--border", "wrap"],
         lambda: lumen.filter2d(img, k, anchor=(1, 2), convolve=True, border="wrap")),
        (["sep-filter2d", "img.npy", "kx.npy", "ky.npy", "--border-value", "2", "--border",
          "constant"],
         lambda: lumen.sep_filter2d(img, kx, ky, border="constant", border_value=2.0)),
        (["gaussian-blur", "img.npy", "--sigma", "1.5", "--ksize", "7,5"],
         lambda: lumen.gaussian_blur(img, 1.5, ksize=(7, 5))),
        (["box-blur", "img.npy", "--ksize", "3,4", "--no-normalize"],
         lambda: lumen.box_blur(img, (3, 4), normalize=False)),
    ]
    for args, py in cases:
        r = run_cli(lumen_bin, *[tmp_path / a if a.endswith(".npy") else a for a in args],
                    tmp_path / "out.npy", "--threads", "1")
        assert r.returncode == 0, (args, r.stderr)
        np.testing.assert_allclose(np.load(tmp_path / "out.npy"), py(), rtol=1e-6, atol=1e-6,
                                   err_msg=args[0])
