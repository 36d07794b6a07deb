"""bench/charts.py draws a lumen.bench --json run: on a tiny fake run it writes the PNG and the
SVG named after the machine, with the floor and the conv panel in them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "bench" / "charts.py"

pytest.importorskip("matplotlib", reason="matplotlib is missing (Debian: python3-matplotlib, "
                                         "scripts/install-deps.sh bench): no chart to test")


def timing(ms):
    return {"status": "ok", "ms_cold": ms * 2, "ms_min": ms, "ms_median": ms * 1.1}


def fake_run():
    """Two filter cases (one with a skipped torch call) and one conv layer, with floors."""
    rows = [
        {"name": "filter2d_k3", "lumen": dict(timing(2.0), method="direct"),
         "peers": {"cv2": timing(2.5), "scipy": timing(40.0), "torch": timing(9.0)},
         "floor": {"ms": 1.2, "bound": "memory", "ratio": 2.0 / 1.2, "limit": 1.3}},
        {"name": "gaussian_s50", "lumen": dict(timing(70.0), method="separable"),
         "peers": {"cv2": timing(300.0), "scipy": {"status": "n/a"},
                   "torch": {"status": "skipped", "note": "skipped (5s/call)"}},
         "floor": {"ms": 35.0, "bound": "fft", "ratio": 2.0, "limit": 1.2}},
    ]
    conv = [{"name": "l2_64x56x56_k3", "gflop": 14.8,
             "lumen": dict(timing(80.0), gflops=185.0), "torch": dict(timing(90.0), gflops=164.0)}]
    machine = {"cpu": "Fake CPU 9000", "cpus_usable": 2, "date": "2026-11-24 01:00 UTC",
               "versions": {"lumen": "0.1.0", "cv2": "4.6.0", "torch": "1.13"},
               "threads": {"lumen": 2}}
    return {"machine": machine, "size": [3000, 2000], "rows": rows, "conv_rows": conv,
            "floors": {"fma": {"gflops": 230.0}}}


def run_charts(tmp_path, data, *extra):
    src = tmp_path / "bench.json"
    src.write_text(json.dumps(data))
    return subprocess.run([sys.executable, str(CHARTS), str(src), "--out", str(tmp_path / "out"),
                           *extra], capture_output=True, text=True, timeout=120)


def test_writes_png_and_svg_named_after_the_machine(tmp_path):
    done = run_charts(tmp_path, fake_run(), "--machine", "fake-2c")
    assert done.returncode == 0, done.stderr
    png, svg = tmp_path / "out" / "bench-fake-2c.png", tmp_path / "out" / "bench-fake-2c.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
    text = svg.read_text()
    assert "<svg" in text
    # the title names the machine and the date; the cases, the floor and the conv panel are drawn
    for words in ("fake-2c", "2026-11-24", "filter2d_k3", "gaussian_s50", "ms per call",
                  "how far from the floor", "floor (lumen bench floors)", "GFLOP/s"):
        assert words in text, words


def test_default_name_comes_from_the_cpu(tmp_path):
    done = run_charts(tmp_path, fake_run())
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "bench-fake-9000-2c.png").is_file()


def test_a_run_without_floors_or_conv_still_draws(tmp_path):
    data = fake_run()
    del data["floors"]
    data["conv_rows"] = []
    for row in data["rows"]:
        row["floor"] = None
    done = run_charts(tmp_path, data, "--machine", "bare")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "bench-bare.svg").is_file()


def test_photo_cases_get_their_panel(tmp_path):
    """Issue 30: a run with photo rows gets the photo panel, and their lumen / floor."""
    data = fake_run()
    data["photo_size"] = [4000, 3000]
    data["machine"]["versions"]["pillow"] = "9.4.0"
    data["photo_rows"] = [
        {"name": "photo_u8_gauss_s3",
         "lumen": {"status": "ok", "out": timing(20.0), "fresh": timing(24.0)},
         "peers": {"cv2": {"out": timing(30.0), "fresh": timing(33.0)},
                   "pillow": {"fresh": timing(90.0), "out": None},
                   "torch": {"status": "n/a", "note": "torchvision is not installed"}},
         "floor": {"ms": 4.0, "bound": "memory", "ratio": 5.0, "limit": None}},
        {"name": "photo_u16_film",
         "lumen": {"status": "ok", "out": timing(900.0), "fresh": timing(950.0)},
         "peers": {}, "floor": {"ms": 8.0, "bound": "memory", "ratio": 112.5, "limit": None}}]
    done = run_charts(tmp_path, data, "--machine", "photo-2c")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "bench-photo-2c.svg").read_text()
    for words in ("photo cases (issue 30)", "u8_gauss_s3", "u16_film", "lumen fresh",
                  "cv2 dst=", "Pillow", "memory floor", "4000x3000 RGB"):
        assert words in text, words
