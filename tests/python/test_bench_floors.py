"""`lumen bench floors` (issue 17): the machine's floors and each case's, and how lumen.bench
puts them next to its cases."""

import json
import os
import subprocess

import pytest

from conftest import LUMEN_BIN

SIZE_W, SIZE_H = 96, 64


def floors(*extra, env=None):
    r = subprocess.run([str(LUMEN_BIN), "bench", "floors", "--size", f"{SIZE_W}x{SIZE_H}",
                        "--repeat", "3", "--threads", "2", "--json", *extra],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def smooth7_even(n):
    if n % 2:
        return False
    for p in (2, 3, 5, 7):
        while n % p == 0:
            n //= p
    return n == 1


@pytest.fixture(scope="module")
def got():
    return floors()


def test_machine_floors_are_measured(got):
    assert got["width"] == SIZE_W and got["height"] == SIZE_H and got["threads"] == 2
    assert got["memcpy"]["bytes"] == SIZE_W * SIZE_H * 4
    assert 0 < got["memcpy"]["ms_min"] <= got["memcpy"]["ms_median"]
    assert got["fma"]["gflops"] > 0.5  # any CPU of this century
    assert got["fft"]["planning"] == "estimate"


def test_each_case_floor_follows_its_rule(got):
    cases = {c["name"]: c for c in got["cases"]}
    px = SIZE_W * SIZE_H
    peak = got["fma"]["gflops"] * 1e9
    memcpy = got["memcpy"]["ms_min"]
    for c in cases.values():
        assert c["memory_ms"] == pytest.approx(memcpy * c["passes"] * c["batch"], rel=1e-3,
                                               abs=2e-4)
        assert c["fma_ms"] == pytest.approx(c["flops_per_pixel"] * px * c["batch"] / peak * 1e3,
                                            rel=1e-3, abs=2e-4)
        want = {"memory": c["memory_ms"], "fma": c["fma_ms"], "fft": c["fft_ms"]}[c["bound"]]
        assert c["floor_ms"] == pytest.approx(want, abs=1e-4)
        if c["ksize"] and c["ksize"] >= 31:  # an FFT pair over the padded image
            w, h = c["fft_size"]
            assert w >= SIZE_W + c["ksize"] - 1 and h >= SIZE_H + c["ksize"] - 1
            assert smooth7_even(w) and smooth7_even(h)
            assert c["fft_ms"] > 0
        else:
            assert c["fft_ms"] is None
    # the targets: which floor each case is judged against
    assert cases["filter2d_k3"]["bound"] == "memory" and cases["filter2d_k3"]["target"] == 1.3
    assert cases["filter2d_k7"]["bound"] == "fma" and cases["filter2d_k15"]["target"] == 1.5
    assert cases["filter2d_k201"]["bound"] == "fft" and cases["gaussian_s30"]["bound"] == "fft"
    assert cases["gaussian_fast_s50"]["passes"] == 2
    assert cases["filter2d_k15"]["flops_per_pixel"] == 2 * 15 * 15
    assert cases["gaussian_s10"]["flops_per_pixel"] == 2 * 2 * 61
    assert cases["gaussian_s1"]["target"] is None


@pytest.mark.parametrize("cap, isa", [("generic", "sse"), ("avx2", "avx2")])
def test_lumen_cpu_isa_caps_the_fma_unit(cap, isa):
    got = floors(env={"LUMEN_CPU_ISA": cap})
    assert got["fma"]["isa"].startswith(isa)


def test_bad_repeat_is_a_usage_error():
    r = subprocess.run([str(LUMEN_BIN), "bench", "floors", "--repeat", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--repeat" in r.stderr


def test_lumen_bench_puts_the_floor_next_to_a_case(got):
    bench = pytest.importorskip("lumen.bench")
    row = {"name": "filter2d_k3", "lumen": {"status": "ok", "ms_min": 2.0}, "targets": []}
    bench.add_floor(row, got)
    fl = row["floor"]
    floor = next(c for c in got["cases"] if c["name"] == "filter2d_k3")["floor_ms"]
    assert fl["ms"] == floor and fl["ratio"] == pytest.approx(2.0 / floor)
    assert row["targets"][-1]["against"] == "memory floor"
    assert row["targets"][-1]["verdict"] == ("met" if 2.0 / floor <= 1.3 else "MISSED")
    conv = {"name": "l2", "gflop": 2.0, "lumen": {"status": "ok", "ms_min": 10.0, "gflops": 200}}
    bench.add_conv_floor(conv, got)
    assert conv["floor"]["ms"] == pytest.approx(2.0 / got["fma"]["gflops"] * 1e3)
    missing = {"name": "no_such_case", "lumen": {"status": "ok", "ms_min": 1.0}, "targets": []}
    bench.add_floor(missing, got)
    assert missing["floor"] is None and missing["targets"] == []


def run_bench(*args):
    import sys
    r = subprocess.run([sys.executable, "-m", "lumen.bench", "--size", f"{SIZE_W}x{SIZE_H}",
                        "--repeat", "1", "--case", "filter2d_k3,gaussian_s50", "--no-scipy",
                        "--no-torch", "--json", *args], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, LUMEN_BIN=str(LUMEN_BIN)))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_bench_measures_the_floors_in_the_same_run():
    report = run_bench()
    assert report["floors"]["width"] == SIZE_W and report["floors"]["threads"] == 2
    rows = {r["name"]: r for r in report["rows"]}
    k3, s50 = rows["filter2d_k3"]["floor"], rows["gaussian_s50"]["floor"]
    assert k3["bound"] == "memory" and k3["ratio"] > 0
    assert s50["bound"] == "fft" and s50["fft_ms"] == s50["ms"]
    assert [t["against"] for t in rows["gaussian_s50"]["targets"]][-1] == "FFTW pair"


def test_no_floors_leaves_the_columns_empty():
    report = run_bench("--no-floors")
    assert "error" in report["floors"]
    assert all(r["floor"] is None for r in report["rows"])


def test_photo_floors_scale_a_memcpy_of_the_photo(got):
    """Issue 30: the photo cases' memory floors (--photo-size: --size when not given)."""
    p = got["photo"]
    assert (p["width"], p["height"]) == (SIZE_W, SIZE_H)
    assert p["memcpy"]["u8"]["bytes"] == SIZE_W * SIZE_H * 3
    assert p["memcpy"]["u16"]["bytes"] == SIZE_W * SIZE_H * 6
    cases = {c["name"]: c for c in p["cases"]}
    assert len(cases) == 29
    for c in cases.values():
        m = p["memcpy"][c["dtype"]]
        assert c["memcpy_bytes"] == m["bytes"] and c["bound"] == "memory"
        assert c["floor_ms"] == pytest.approx(m["ms_min"] * c["bytes"] / (2 * m["bytes"]),
                                              rel=1e-3, abs=2e-6)
    assert cases["photo_u8_filter2d_k3"]["bytes"] == 2 * SIZE_W * SIZE_H * 3
    assert cases["photo_u8_resize_half"]["bytes"] == SIZE_W * SIZE_H * 3 * 5 // 4
    assert [n for n, c in cases.items() if c["target"]] == [
        "photo_u8_filter2d_k3", "photo_u8_filter2d_k5", "photo_u8_box_k5"]
    assert floors("--photo-size", "40x30")["photo"]["width"] == 40
