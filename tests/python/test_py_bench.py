"""`python3 -m lumen.bench` runs, checks its peers and reports what the docs say it reports.

Tiny sizes only: this checks the program, not the speed (speed targets live in the benchmark).
"""

import json
import os
import subprocess
import sys

import pytest

CASES = "filter2d_k3,filter2d_k61_batch10,gaussian_s1,gaussian_fast_s30,overhead"
#: Conv cases, run with --batch 1: a target layer, the depthwise one and a transposed one.
CONV = ["l4_3x224x224_k7s2", "dw_128x56x56_k3", "tr_64x56x56_k3s2"]


def run_bench(*args, env=None):
    return subprocess.run([sys.executable, "-m", "lumen.bench", *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **(env or {})))


@pytest.fixture(scope="module")
def report():
    out = run_bench("--size", "64x48", "--repeat", "1", "--case", CASES + "," + ",".join(CONV),
                    "--batch", "1", "--overhead-calls", "200", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def torch_hidden(tmp_path_factory):
    """A folder whose `torch` package fails to import, for PYTHONPATH: torch "missing"."""
    root = tmp_path_factory.mktemp("notorch")
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text("raise ImportError('torch hidden by the test')\n")
    return str(root)


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
    for word in ("--size", "--case", "--json", "l/cv2", "overhead", "--batch", "l1_512x7x7_k3",
                 "GFLOP/s", "l/torch", "--photo-size", "photo_u8_filter2d_k3", "l/cv2f",
                 "reflect101"):
        assert word in out.stdout, word


# ---- conv ----------------------------------------------------------------------------------


def test_conv_rows_time_lumen_and_torch_on_the_same_tensors(report):
    """GFLOP/s from the bench's formula, the rate ratio, and lumen's result against torch's."""
    pytest.importorskip("torch")
    rows = {r["name"]: r for r in report["conv_rows"]}
    assert list(rows) == CONV
    work = {"l4_3x224x224_k7s2": 2 * 64 * 112 * 112 * 3 * 7 * 7,   # 2*N*K*P*Q*(C/g)*R*S
            "dw_128x56x56_k3": 2 * 128 * 56 * 56 * 1 * 3 * 3,
            "tr_64x56x56_k3s2": 2 * 64 * 56 * 56 * 32 * 3 * 3}     # 2*N*C*H*W*(K/g)*R*S
    for name, row in rows.items():
        lu, t = row["lumen"], row["torch"]
        assert row["n"] == 1 and row["gflop"] == pytest.approx(work[name] * 1e-9)
        assert lu["status"] == "ok" and t["status"] == "ok", row
        assert lu["threads"] == t["threads"] == report["machine"]["threads"]["lumen"]
        assert lu["algo"] and lu["device"] == "cpu"
        for side in (lu, t):
            assert 0 < side["ms_min"] <= side["ms_median"]
            assert side["gflops"] == pytest.approx(row["gflop"] / side["ms_min"] * 1e3)
        assert row["ratio"] == pytest.approx(lu["gflops"] / t["gflops"])
        assert row["max_rel_err"] < 1e-4, row
    assert rows["tr_64x56x56_k3s2"]["out"] == [1, 32, 112, 112]
    assert rows["tr_64x56x56_k3s2"]["torch"]["call"] == "torch.nn.functional.conv_transpose2d"
    # issue 17's target (>= 1.2x torch) is judged on l1..l4, pw, dw and s2, not on the
    # transposed cases; its verdict is not tested
    for name in ("l4_3x224x224_k7s2", "dw_128x56x56_k3"):
        (target,) = rows[name]["targets"]
        assert target["limit"] == 1.2 and target["at_least"]
        assert target["verdict"] in ("met", "MISSED")
    assert rows["tr_64x56x56_k3s2"]["targets"] == []


def test_conv_packed_column_and_onednn_isa(report):
    """conv2d rows time lumen.Conv2dWeights too; torch's oneDNN says its ISA and, per case,
    its implementation (none for conv_transpose2d, which torch 1.13 runs without it)."""
    pytest.importorskip("torch")
    rows = {r["name"]: r for r in report["conv_rows"]}
    pk = rows["l4_3x224x224_k7s2"]["lumen_packed"]
    assert pk["status"] == "ok" and pk["gflops"] > 0
    assert rows["l4_3x224x224_k7s2"]["ratio_packed"] == pytest.approx(
        pk["gflops"] / rows["l4_3x224x224_k7s2"]["torch"]["gflops"])
    assert rows["tr_64x56x56_k3s2"]["lumen_packed"] == {"status": "n/a"}
    dnn = report["machine"]["torch_onednn"]
    if "isa" not in dnn:
        pytest.skip(f"torch's oneDNN printed nothing: {dnn}")
    assert dnn["isa"] and rows["l4_3x224x224_k7s2"]["torch_impl"]
    assert rows["tr_64x56x56_k3s2"]["torch_impl"] is None


def test_conv_avx2_caps_onednn_too():
    """LUMEN_CPU_ISA=avx2 sets ONEDNN_MAX_CPU_ISA=AVX2 before torch loads: oneDNN reports AVX2."""
    pytest.importorskip("torch")
    out = run_bench("--case", "l4_3x224x224_k7s2", "--batch", "1", "--repeat", "1", "--json",
                    env={"LUMEN_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "", "DNNL_MAX_CPU_ISA": ""})
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["machine"]["onednn_max_cpu_isa"] == "AVX2"
    (row,) = r["conv_rows"]
    assert row["lumen"]["isa"] in ("avx2+fma", "generic")  # generic: a CPU without AVX2
    dnn = r["machine"]["torch_onednn"]
    if "isa" in dnn:
        assert "AVX-512" not in dnn["isa"] and dnn["cap"] == "AVX2", dnn
        assert "avx512" not in (row["torch_impl"] or "")


def test_conv_without_torch_times_lumen_alone(torch_hidden):
    path = os.pathsep.join([torch_hidden] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    out = run_bench("--case", "l3_256x14x14_k3", "--batch", "1", "--repeat", "1",
                    env={"PYTHONPATH": path})
    assert out.returncode == 0, out.stderr
    assert "torch skipped" in out.stderr
    assert "l3_256x14x14_k3" in out.stdout and "not run" in out.stdout
    out = run_bench("--case", "conv_transpose2d", "--batch", "1", "--repeat", "1", "--json",
                    env={"PYTHONPATH": path})
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["conv_rows"]
    assert [r["name"] for r in rows] == ["tr_256x14x14_k4s2", "tr_64x56x56_k3s2"]
    for r in rows:
        assert r["lumen"]["status"] == "ok" and r["torch"] == {"status": "n/a"}
        assert r["ratio"] is None and r["max_rel_err"] is None


def test_conv_bad_case_and_batch_are_usage_errors():
    for args, word in ((["--case", "l9_nope"], "l9_nope"), (["--batch", "-1"], "--batch")):
        out = run_bench(*args)
        assert out.returncode == 2 and word in out.stderr, (args, out.stderr)


def test_bench_on_a_vulkan_device():
    """--device vulkan:0 times lumen there (strict: a CPU fallback is never timed as the
    device's), checks its results against the peers first, and says that a software device's
    times say nothing about a GPU."""
    import lumen
    if not any(d["backend"] == "vulkan" for d in lumen.devices()):
        pytest.skip("no Vulkan device here (make test installs lavapipe)")
    out = run_bench("--device", "vulkan:0", "--size", "64x48", "--repeat", "1", "--case",
                    "filter2d_k3,gaussian_s1,gaussian_fast_s30,dw_128x56x56_k3", "--batch", "1",
                    "--no-torch", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["machine"]["lumen_device"].startswith("vulkan:0 "), r["machine"]
    lu = [row["lumen"] for row in r["rows"]] + [row["lumen"] for row in r["conv_rows"]]
    assert lu and all(x.get("device") == "vulkan:0" for x in lu), lu
    if "software" in r["machine"]["lumen_device"]:
        assert "software device" in out.stderr, out.stderr


def test_bench_unknown_device_is_a_usage_error():
    out = run_bench("--device", "nope:7", "--case", "filter2d_k3")
    assert out.returncode != 0 and "--device" in out.stderr and "cpu" in out.stderr, out.stderr


# ---- photo cases (issue 30) ----------------------------------------------------------------


@pytest.fixture(scope="module")
def photo_report():
    out = run_bench("--size", "64x48", "--repeat", "1", "--case", "photo", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_photo_cases_run_lumen_out_and_fresh_against_the_peers(photo_report):
    """Every photo case ran both lumen variants; cv2 has dst= and fresh; ratios, floors and
    the issue's targets are in each row (their verdicts are not tested: 64x48 on a shared
    machine)."""
    from lumen import bench_photo
    rows = {r["name"]: r for r in photo_report["photo_rows"]}
    assert list(rows) == bench_photo.NAMES and photo_report["photo_size"] == [64, 48]
    for name, row in rows.items():
        lu = row["lumen"]
        assert lu["status"] == "ok" and lu["device"] == "cpu", name
        for v in ("out", "fresh"):
            assert 0 < lu[v]["ms_min"] <= lu[v]["ms_median"], (name, v)
        assert row["floor"]["bound"] == "memory" and row["floor"]["ms"] > 0, name
        if "cv2" in row["peers"]:
            cv = row["peers"]["cv2"]
            assert cv["out"]["ms_min"] > 0 and cv["fresh"]["ms_min"] > 0
            assert row["ratio"]["cv2 out"] == pytest.approx(
                lu["out"]["ms_min"] / cv["out"]["ms_min"])
            assert row["max_abs_diff"]["cv2"] <= cv["tol"], name
    assert "cv2" not in rows["photo_u8_film"]["peers"]
    assert rows["photo_u8_gauss_s1"]["ksize"] == 7 and rows["photo_u16_gauss_s1"]["ksize"] == 9
    assert rows["photo_u8_resize_quarter"]["out"] == [12, 16, 3]
    assert [t["against"] for t in rows["photo_u8_filter2d_k3"]["targets"]] == (
        ["cv2 dst=", "Pillow", "memory floor"] if "pillow" in photo_report["machine"]["versions"]
        else ["cv2 dst=", "memory floor"])
    assert [t["limit"] for t in rows["photo_u16_box_k5"]["targets"]] == [0.8]
    assert not photo_report["warnings"], photo_report["warnings"]


def test_photo_pillow_and_torch_where_they_have_the_op(photo_report):
    pytest.importorskip("PIL")
    rows = {r["name"]: r for r in photo_report["photo_rows"]}
    assert rows["photo_u8_resize_half_pil"]["peers"]["pillow"]["same_op"]
    assert rows["photo_u8_resize_half_pil"]["max_abs_diff"]["pillow"] <= 1
    assert not rows["photo_u8_gauss_s3"]["peers"]["pillow"]["same_op"]  # box passes, not a kernel
    assert "pillow" not in rows["photo_u8_filter2d_k7"]["peers"]        # Kernel is 3x3, 5x5 only
    assert rows["photo_u16_box_k5"]["peers"]["pillow"]["status"] == "n/a"
    if "torch" in photo_report["machine"]["versions"]:
        assert rows["photo_u8_resize_half"]["peers"]["torch"]["fresh"]["ms_min"] > 0
        assert rows["photo_u16_resize_half"]["peers"]["torch"]["status"] == "n/a"


def test_photo_table_prints_every_column():
    out = run_bench("--size", "64x48", "--repeat", "1", "--case", "photo_u8_box_k5,photo_u16_film",
                    "--no-floors")
    assert out.returncode == 0, out.stderr
    for word in ("photo cases:", "lumen out=", "cv2 dst=", "l/cv2f", "photo_u8_box_k5",
                 "photo_u16_film"):
        assert word in out.stdout, word
