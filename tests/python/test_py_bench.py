"""`python3 -m lumen.bench` runs, checks its peers and reports what the docs say it reports.

Tiny sizes only: this checks the program, not the speed (speed targets live in the benchmark).
"""

import json
import os
import subprocess
import sys

import pytest

CASES = "filter2d_k3,filter2d_k61_batch10,gaussian_s1,gaussian_fast_s30,overhead"


@pytest.fixture(scope="module")
def report():
    out = subprocess.run(
        [sys.executable, "-m", "lumen.bench", "--size", "64x48", "--repeat", "1", "--case", CASES,
         "--overhead-calls", "200", "--json"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_case_ran_on_lumen_and_the_peers(report):
    rows = {r["name"]: r for r in report["rows"]}
    assert set(rows) == set(CASES.split(",")) - {"overhead"}
    for name, row in rows.items():
        assert row["lumen"]["status"] == "ok", name
        assert row["lumen"]["ms_min"] > 0 and row["lumen"]["device"] == "cpu"
        assert row["peers"]["cv2"]["status"] == "ok", name
    assert rows["gaussian_fast_s30"]["lumen"]["method"] == "recursive"


def test_peers_agree_with_lumen_at_full_size(report):
    """The bench compares each exact case's peer results with lumen's after timing."""
    for row in report["rows"]:
        for peer, diff in row.get("max_abs_diff", {}).items():
            assert diff is not None and diff < 1e-3, (row["name"], peer, diff)
    assert not report["warnings"], report["warnings"]


def test_overhead_is_measured_against_the_c_call(report):
    o = report["overhead"]
    assert o["image"] == "64x64 f32" and o["threads"] == 1 and o["limit_us"] == 5.0
    assert o["c_us"]["min"] > 0 and o["python_out_us"]["min"] > 0
    assert {t["against"] for t in o["targets"]} == {"C call, out= given", "C call, new output"}


def test_help_explains_the_columns():
    out = subprocess.run([sys.executable, "-m", "lumen.bench", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    for word in ("--size", "--case", "--json", "l/cv2", "overhead"):
        assert word in out.stdout, word
