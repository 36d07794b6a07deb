"""`lumen bench conv`: the cases, the JSON fields, the spot check and the usage errors.

Tiny runs only (--batch 1): this checks the program, not the speed.
"""

import json

import pytest

from conftest import run_cli

NAMES = ["l1_512x7x7_k3", "l2_64x56x56_k3", "l3_256x14x14_k3", "l4_3x224x224_k7s2",
         "pw_256x28x28_k1", "dw_128x56x56_k3", "s2_128x28x28_k3s2", "tr_256x14x14_k4s2",
         "tr_64x56x56_k3s2"]

#: name -> (transposed, C, H, W, K, R, S, stride, pad, output_pad, groups); N is --batch.
SHAPES = {
    "l1_512x7x7_k3": (0, 512, 7, 7, 512, 3, 3, 1, 1, 0, 1),
    "l2_64x56x56_k3": (0, 64, 56, 56, 64, 3, 3, 1, 1, 0, 1),
    "l3_256x14x14_k3": (0, 256, 14, 14, 256, 3, 3, 1, 1, 0, 1),
    "l4_3x224x224_k7s2": (0, 3, 224, 224, 64, 7, 7, 2, 3, 0, 1),
    "pw_256x28x28_k1": (0, 256, 28, 28, 128, 1, 1, 1, 0, 0, 1),
    "dw_128x56x56_k3": (0, 128, 56, 56, 128, 3, 3, 1, 1, 0, 128),
    "s2_128x28x28_k3s2": (0, 128, 28, 28, 256, 3, 3, 2, 1, 0, 1),
    "tr_256x14x14_k4s2": (1, 256, 14, 14, 128, 4, 4, 2, 1, 0, 1),
    "tr_64x56x56_k3s2": (1, 64, 56, 56, 32, 3, 3, 2, 1, 1, 1),
}

KEYS = {"name", "op", "shape", "n", "c", "h", "w", "k", "r", "s", "stride", "pad", "dilation",
        "groups", "output_pad", "out_h", "out_w", "dtype", "gflop", "repeat", "status", "algo",
        "device", "isa", "threads", "ms_cold", "ms_min", "ms_median", "gflops",
        "gflops_median", "check", "check_points", "check_max_abs_err"}


def expected(shape, n):
    """(out_h, out_w, GFLOP of one call) by PyTorch's size rules and the bench's formula."""
    tr, c, h, w, k, r, s, st, pad, opad, g = shape
    if tr:
        oh, ow = (h - 1) * st - 2 * pad + r + opad, (w - 1) * st - 2 * pad + s + opad
        terms = c * h * w * (k // g)
    else:
        oh, ow = (h + 2 * pad - r) // st + 1, (w + 2 * pad - s) // st + 1
        terms = k * oh * ow * (c // g)
    return oh, ow, 2.0 * n * terms * r * s * 1e-9


@pytest.fixture(scope="module")
def rows(lumen_bin):
    r = run_cli(lumen_bin, "bench", "conv", "--json", "--batch", "1", "--repeat", "5",
                "--threads", "2", timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_every_case_runs_in_order(rows):
    assert [row["name"] for row in rows] == NAMES
    for row in rows:
        assert KEYS <= set(row), f"missing keys {KEYS - set(row)}"
        assert row["status"] == "ok", row


def test_shapes_sizes_and_gflops(rows):
    for row in rows:
        tr, c, h, w, k, r, s, st, pad, opad, g = SHAPES[row["name"]]
        assert row["op"] == ("conv_transpose2d" if tr else "conv2d")
        assert (row["n"], row["c"], row["h"], row["w"], row["k"], row["r"], row["s"]) == \
            (1, c, h, w, k, r, s)
        assert (row["stride"], row["pad"], row["output_pad"], row["groups"]) == (st, pad, opad, g)
        oh, ow, gflop = expected(SHAPES[row["name"]], 1)
        assert (row["out_h"], row["out_w"]) == (oh, ow), row["name"]
        assert row["gflop"] == pytest.approx(gflop, rel=1e-5), row["name"]
        assert 0 < row["ms_min"] <= row["ms_median"] and row["ms_cold"] > 0
        assert row["gflops"] == pytest.approx(gflop / row["ms_min"] * 1e3, rel=1e-3)
        assert row["gflops_median"] == pytest.approx(gflop / row["ms_median"] * 1e3, rel=1e-3)
        assert row["threads"] == 2 and row["repeat"] == 5 and row["device"] == "cpu"
        assert isinstance(row["algo"], str) and row["algo"] not in ("", "?"), row
    assert SHAPES.keys() == set(NAMES)


def test_spot_check_agrees_with_float64(rows):
    """32 outputs per case recomputed in float64: a broken fast path fails here."""
    for row in rows:
        assert row["check"] == "ok" and row["check_points"] == 32, row
        assert 0 <= row["check_max_abs_err"] < 1e-3, row


def test_case_selection_by_name_and_op(lumen_bin):
    r = run_cli(lumen_bin, "bench", "conv", "--json", "--batch", "1", "--repeat", "5",
                "--case", "dw_128x56x56_k3,conv_transpose2d")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert [row["name"] for row in got] == ["dw_128x56x56_k3", "tr_256x14x14_k4s2",
                                            "tr_64x56x56_k3s2"]


def test_batch_scales_n_and_work(lumen_bin):
    r = run_cli(lumen_bin, "bench", "conv", "--json", "--batch", "2", "--repeat", "5",
                "--case", "pw_256x28x28_k1")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["n"] == 2 and row["shape"].startswith("2x256x28x28 * 128x256x1x1")
    assert row["gflop"] == pytest.approx(expected(SHAPES["pw_256x28x28_k1"], 2)[2], rel=1e-5)


def test_no_simd_runs_the_reference(lumen_bin):
    """docs/conv2d.md: with SIMD off, conv2d is the scalar reference."""
    r = run_cli(lumen_bin, "bench", "conv", "--json", "--batch", "1", "--repeat", "5",
                "--case", "dw_128x56x56_k3", "--no-simd")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["algo"] == "reference" and row["check"] == "ok"


def test_table_output(lumen_bin):
    r = run_cli(lumen_bin, "bench", "conv", "--batch", "1", "--repeat", "5", "--case",
                "l4_3x224x224_k7s2")
    assert r.returncode == 0, r.stderr
    assert "GFLOP/s" in r.stdout and "1x3x224x224 * 64x3x7x7 s2 p3" in r.stdout
    assert "l4_3x224x224_k7s2" in r.stdout and "1x64x112x112" in r.stdout


@pytest.mark.parametrize("args, culprit", [
    (["--case", "l9_nope"], "--case"),
    (["--case", "l1_512x7x7_k3,conv3d"], "--case"),
    (["--batch", "0"], "--batch"),
    (["--batch", "x"], "--batch"),
    (["--batch", "1024", "--case", "l4_3x224x224_k7s2"], "--batch"),  # over 2^28 elements
    (["--repeat", "1"], "--repeat"),
    (["--threads", "0"], "--threads"),
    (["--frobnicate"], "--frobnicate"),
    (["extra"], "extra"),
])
def test_bad_usage_exit_2(lumen_bin, args, culprit):
    r = run_cli(lumen_bin, "bench", "conv", *args)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert culprit in r.stderr and r.stderr.startswith("lumen: "), r.stderr
    assert r.stdout == ""


def test_bad_case_lists_the_valid_names(lumen_bin):
    r = run_cli(lumen_bin, "bench", "conv", "--case", "l9_nope")
    assert "'l9_nope'" in r.stderr
    assert all(name in r.stderr for name in NAMES + ["conv2d", "conv_transpose2d"])


def test_help(lumen_bin):
    r = run_cli(lumen_bin, "bench", "conv", "--help")
    assert r.returncode == 0 and r.stderr == ""
    assert "lumen bench conv" in r.stdout and "GFLOP/s" in r.stdout
    assert all(name in r.stdout for name in NAMES)
    r = run_cli(lumen_bin, "bench", "--help")
    assert r.returncode == 0 and "lumen bench conv" in r.stdout
    r = run_cli(lumen_bin, "--help")
    assert "bench conv" in r.stdout
