#!/usr/bin/env python3
"""lumen on a CUDA GPU against cupyx.scipy.ndimage and PyTorch, in one process, on one device.

    python3 bench/gpu_bench.py [--size WxH] [--repeat N] [--budget S] [--device cuda:N]
                               [--case NAMES] [--build DIR] [--markdown FILE|DIR] [--json FILE]
                               [--no-cupy] [--no-torch-peer] [--keep-going] [--quick]

Run it with the python that has torch and cupy (on the GPU machines of docs/gpu-check.md that
is the plain `python3`); `bash scripts/gpu-check.sh` builds lumen and runs it. Without a CUDA
device, or without torch, it says so and exits with status 4 (nothing to measure here).

What is timed (issue 5's setting: 3000x2000 f32 = H 2000 x W 3000, one channel, seeded random
values in [0, 1), every call warm, all libraries in this process, on the same device):

  filter2d_kK   K = 3, 7, 15, 31, 61, 121, 201: lumen bench's random K x K kernel (LCG taps,
                the same as `lumen bench` and `python3 -m lumen.bench`)
      lumen     lumen.filter2d(src, k, border="reflect", out=dst, context=ctx)
      cupyx     cupyx.scipy.ndimage.correlate(x, k, output=o, mode="reflect")
                (scipy's "reflect" = lumen's "reflect" = cv2.BORDER_REFLECT)
      lumen101  lumen.filter2d(src, k, border="reflect101", out=dst, context=ctx)
      torch     F.conv2d(F.pad(x, (p, p, p, p), mode="reflect"), k): torch's "reflect" is
                lumen's "reflect101", so torch is compared with the lumen101 run, and the
                F.pad is INSIDE torch's timing (issue 5: "conv2d after F.pad")
  gaussian_sS   S = 3, 10, ksize 2*round(3S)+1 (19, 61), taps lumen.gaussian_kernel(ksize, S)
      lumen     lumen.gaussian_blur(src, S, ksize=ksize, border=..., out=dst, context=ctx)
      cupyx     correlate1d along x, then along y (mode="reflect")
      torch     F.pad(reflect) then conv2d with the 1 x k row, then with the k x 1 column
  gaussian_fast_s10
      lumen     lumen.gaussian_blur(src, 10, precision="fast", ...) (recursive; no peers; checked
                against the exact blur with OpenCV's own ksize within 1e-3 x span, the documented
                bound of docs/gaussian-fast.md)
  host_filter2d_k15, host_filter2d_k201, host_gaussian_s10
      lumen     the same calls with NumPy (pageable host) arrays: lumen uploads through its pinned
                staging, filters and downloads; the end-to-end time includes every transfer
      copy      the copy alone: the same bytes up and down between pinned host memory and the
                device, with torch (tensor.copy_(non_blocking=True)) and cupy (ndarray.set/get);
                the baseline is the faster library's min(up) + min(down)

src and dst are torch CUDA tensors (DLPack kDLCUDA): the binding hands lumen device-resident views
and synchronises before it returns. ctx = lumen.Context(device="cuda:0", strict=True): a fallback
to the CPU would be an error, not a silent CPU timing, and lumen.last_run()["device"] must say
the device. cuDNN runs with TF32 off (torch.backends.cudnn.allow_tf32 = False,
torch.backends.cuda.matmul.allow_tf32 = False: the same f32 precision as lumen) and with
torch.backends.cudnn.benchmark = True (torch picks its fastest algorithm in the cold call).

Timing: every call is synchronous as seen from Python (torch.cuda.synchronize() before and after
each call; lumen's call synchronises by itself), timed with time.perf_counter. One cold first
call (lumen: on a fresh Context, so stream, memory pool, cuFFT plan and kernel spectrum are paid
there; torch: cuDNN's algorithm search; cupy: kernel compilation), --warmup untimed calls, then up
to --repeat timed calls, stopping early (after at least 3) once --budget seconds are spent on
that call; a call slower than --cap seconds is timed once ("(1 run)"). min and median are
reported; ratios and targets use the minima.

Verification (before anything is believed): the output is poisoned with NaN before lumen's cold
call and before one last call after the timed ones; both results, and every peer's, are compared
with lumen's CPU result (lumen.Context(device="cpu")) and the peers also with lumen's GPU result,
by max |diff| <= 1e-5 x span x max(1, sum|k|), the reference suite's f32 rule
(tests/python/tolerances.py). A mismatch aborts the run (status 1) unless --keep-going.

  conv_*        NCHW conv2d / conv_transpose2d (issue 6's layers) on torch CUDA tensors:
      lumen     lumen.conv2d(x, w, bias, stride=, padding=, out=y, context=ctx) (cuDNN inside,
                FP32 with FMA math; bias is a NumPy array: the binding takes host bias only)
      torch     F.conv2d(x, w, bias, stride, padding) (cudnn.benchmark = True, TF32 off)
      conv_32x512x7x7_k512_r3_p1 (target: lumen >= 1.0x torch, i.e. lumen min <= torch min),
      conv_8x64x56x56_k64_r3_p1, conv_8x256x14x14_k256_r3_p1, conv_8x3x224x224_k64_r7_s2_p3,
      convT_8x256x14x14_k128_r4_s2_p1 (conv_transpose2d, a DCGAN-style upsampling layer).
      Checked: lumen's and torch's outputs agree within 2e-5 x max(conv(|x|, |w|)); lumen's
      run info must name the device. --no-conv leaves them out, --conv-only runs only them.

Targets (issue 5; H100/H200; ratios of minima):
  filter2d k=201 <= 1 ms, k=15 <= 0.3 ms, gaussian sigma=10 <= 0.2 ms (lumen min, warm);
  filter2d k >= 15: lumen <= 1/3 of cupyx.scipy.ndimage.correlate and <= 1/3 of torch
  (conv2d after F.pad), i.e. >= 3x faster;
  host arrays: end-to-end <= 2x the pinned host<->device copy of the same bytes.

Exit status: 0 every case ran, every result verified, every target met; 1 a result differs, lumen
ran elsewhere than asked, or a call failed; 2 bad usage; 3 everything verified but a target was
missed or could not be judged (a peer missing, an op unsupported); 4 nothing to measure on this
machine (no CUDA device, no torch, no numpy); 5 a CUDA device is there but lumen has no CUDA device
(its CUDA module is missing or did not load: the run prints LUMEN_LOG=info's lines).
"""

import argparse
import datetime
import importlib
import importlib.machinery
import json
import math
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_MISSED, EXIT_NO_CUDA, EXIT_NO_LUMEN_CUDA = 0, 1, 2, 3, 4, 5

F32_REL = 1e-5            # tests/python/tolerances.py: F32_REL
FAST_GAUSS_REL = 1e-3     # tests/python/tolerances.py: FAST_GAUSS_REL (docs/gaussian-fast.md)
DEFAULT_SIZE = "3000x2000"

FILTER_KS = (3, 7, 15, 31, 61, 121, 201)
GAUSS_SIGMAS = (3, 10)
FAST_SIGMA = 10
HOST_CASES = (("filter2d", 15), ("filter2d", 201), ("gaussian", 10))

#: Absolute targets, ms of lumen's warm minimum (device-resident).
ABS_TARGETS_MS = {"filter2d_k201": 1.0, "filter2d_k15": 0.3, "gaussian_s10": 0.2}
#: filter2d k >= this: lumen min <= RATIO_LIMIT x peer min, against cupyx and torch.
RATIO_MIN_K = 15
RATIO_LIMIT = 1.0 / 3.0
#: Host arrays: end-to-end min <= HOST_LIMIT x (pinned up + pinned down).
HOST_LIMIT = 2.0


class Case:
    """One row: op, kernel size, sigma, precision, host or device-resident."""

    def __init__(self, op, ksize=0, sigma=0.0, precision="exact", host=False):
        self.op, self.ksize, self.sigma = op, ksize, sigma
        self.precision, self.host = precision, host
        if op == "filter2d":
            base = f"filter2d_k{ksize}"
        elif precision == "fast":
            base = f"gaussian_fast_s{sigma:g}"
        else:
            base = f"gaussian_s{sigma:g}"
        self.base = base
        self.name = ("host_" if host else "") + base


def gaussian_ksize(sigma):
    """lumen bench's Gaussian size 2*round(3*sigma)+1 (C's lround)."""
    return 2 * int(math.floor(3.0 * sigma + 0.5)) + 1


def all_cases():
    cases = [Case("filter2d", k) for k in FILTER_KS]
    cases += [Case("gaussian", gaussian_ksize(s), float(s)) for s in GAUSS_SIGMAS]
    cases += [Case("gaussian", 0, float(FAST_SIGMA), "fast")]
    for op, v in HOST_CASES:
        cases.append(Case("filter2d", v, host=True) if op == "filter2d"
                     else Case("gaussian", gaussian_ksize(v), float(v), host=True))
    return cases


CASE_NAMES = [c.name for c in all_cases()]


# ---- arguments -----------------------------------------------------------------------------

def select_cases(spec):
    """Case names from a comma list: exact names or prefixes (filter2d, gaussian, host)."""
    if not spec:
        return list(CASE_NAMES)
    chosen = set()
    for tok in (t.strip() for t in spec.split(",") if t.strip()):
        hits = [tok] if tok in CASE_NAMES else [n for n in CASE_NAMES if n.startswith(tok)]
        if not hits:
            raise ValueError(f"unknown case '{tok}' (valid: {', '.join(CASE_NAMES)})")
        chosen.update(hits)
    return [n for n in CASE_NAMES if n in chosen]


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="gpu_bench.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__)
    ap.add_argument("--size", default=DEFAULT_SIZE, metavar="WxH",
                    help="image width x height (default 3000x2000, issue 5's 2000x3000 HxW)")
    ap.add_argument("--repeat", type=int, default=30, metavar="N",
                    help="at most N timed warm calls per library and case (default 30)")
    ap.add_argument("--budget", type=float, default=2.0, metavar="S",
                    help="stop timing a call after S seconds of timed calls, once 3 ran "
                         "(default 2)")
    ap.add_argument("--warmup", type=int, default=2, metavar="N",
                    help="untimed calls after the cold one (default 2)")
    ap.add_argument("--cap", type=float, default=3.0, metavar="S",
                    help="a warm call slower than S seconds is timed once: no warm-up after a "
                         "cold call over S, and the first timed call over S is the only one "
                         "(default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="--repeat 10 --budget 0.5 --warmup 1 (smoke runs; the numbers are "
                         "still real, only less settled)")
    ap.add_argument("--device", default="cuda:0", metavar="cuda:N",
                    help="lumen's device spec and torch's device (default cuda:0)")
    ap.add_argument("--case", default="", metavar="NAMES",
                    help="comma list of case names or prefixes (filter2d, gaussian, host); "
                         "default all: " + ", ".join(CASE_NAMES))
    ap.add_argument("--build", default=None, metavar="DIR",
                    help="import lumen from DIR/python (default: the first of build-gpu/, build/ "
                         "whose extension fits this python, else an installed lumen)")
    ap.add_argument("--markdown", default=None, metavar="FILE|DIR",
                    help="write the docs/benchmarks-<gpu>.md page to FILE; for a folder, to "
                         "DIR/benchmarks-<gpu-name-slug>.md")
    ap.add_argument("--json", default=None, metavar="FILE",
                    help="write every number (machine, timings, checks, targets) as JSON to FILE")
    ap.add_argument("--no-cupy", action="store_true", help="leave cupyx out")
    ap.add_argument("--no-torch-peer", action="store_true",
                    help="leave torch out as a peer (it still holds the device tensors)")
    ap.add_argument("--no-conv", action="store_true", help="leave out the NCHW conv layers")
    ap.add_argument("--conv-only", action="store_true",
                    help="run only the NCHW conv layers (no filter cases)")
    ap.add_argument("--keep-going", action="store_true",
                    help="on a result mismatch, mark the row and go on (status 1 at the end) "
                         "instead of aborting")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeat, args.budget, args.warmup = 10, 0.5, 1
    try:
        args.w, args.h = (int(v) for v in args.size.lower().split("x"))
        assert args.w > 0 and args.h > 0
    except (ValueError, AssertionError):
        ap.error(f"--size: expected WxH, got {args.size!r}")
    if args.repeat < 1 or args.budget <= 0 or args.warmup < 0 or args.cap <= 0:
        ap.error("--repeat must be >= 1, --budget and --cap > 0, --warmup >= 0")
    m = re.fullmatch(r"cuda:(\d+)", args.device)
    if not m:
        ap.error(f"--device: expected cuda:N, got {args.device!r}")
    args.ordinal = int(m.group(1))
    try:
        args.cases = select_cases(args.case)
    except ValueError as e:
        ap.error(f"--case: {e}")
    return args


# ---- environment ---------------------------------------------------------------------------

def say(msg=""):
    print(msg, flush=True)


def skip(msg):
    """Nothing to measure on this machine: a clear line and status 4."""
    say(f"gpu_bench: SKIPPED: {msg}")
    say("gpu_bench: nothing was measured. Run it on a machine with an NVIDIA GPU, torch and "
        "cupy: see docs/gpu-check.md (bash scripts/gpu-check.sh).")
    sys.exit(EXIT_NO_CUDA)


def ext_fits(pkg_dir):
    """True when pkg_dir/lumen holds a _lumen extension this interpreter can load."""
    return any((pkg_dir / "lumen").glob(f"_lumen*{suffix}")
               for suffix in importlib.machinery.EXTENSION_SUFFIXES if suffix != ".abi3.so")


def import_lumen(build):
    """lumen from --build DIR/python, else build-gpu/ or build/ when they fit, else installed."""
    if build:
        cand = [Path(build).resolve() / "python"]
    else:
        cand = [REPO / "build-gpu" / "python", REPO / "build" / "python"]
    for d in cand:
        if ext_fits(d):
            sys.path.insert(0, str(d))
            break
    else:
        if build:
            say(f"gpu_bench: FATAL: {cand[0]} has no lumen extension for this python "
                f"({sys.executable}, {'/'.join(importlib.machinery.EXTENSION_SUFFIXES[:1])})")
            sys.exit(EXIT_FAIL)
    try:
        return importlib.import_module("lumen")
    except ImportError as e:
        say(f"gpu_bench: FATAL: cannot import lumen ({e}). Build the package with this python: "
            f"cmake -S . -B build-gpu -DPython3_EXECUTABLE={sys.executable} ... "
            "(scripts/gpu-check.sh does it)")
        sys.exit(EXIT_FAIL)


def run_cmd(cmd, timeout=20, env=None):
    """stdout of a command, or None."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def lumen_log_info(lumen):
    """What LUMEN_LOG=info says while lumen loads its modules (a fresh process)."""
    env = dict(os.environ, LUMEN_LOG="info", PYTHONPATH=os.pathsep.join(
        [str(Path(lumen.__file__).resolve().parents[1])] + [os.environ.get("PYTHONPATH", "")]))
    try:
        r = subprocess.run([sys.executable, "-c", "import lumen; print(lumen.devices())"],
                           capture_output=True, text=True, timeout=60, env=env)
        return (r.stderr + r.stdout).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"(could not run: {e})"


def module_files(lumen):
    """liblumen_*.so files where lumen looks for modules (next to the extension, build tree)."""
    pkg = Path(lumen.__file__).resolve().parent
    dirs = [pkg / "lumen-modules", pkg]  # docs/devices.md: lumen-modules/ beside it, or beside
    for b in ("build-gpu", "build"):
        dirs.append(REPO / b / "lumen-modules")
    for p in os.environ.get("LUMEN_MODULE_PATH", "").split(":"):
        if p:
            dirs.append(Path(p))
    found = []
    for d in dirs:
        if d.is_file():
            found.append(str(d))
        elif d.is_dir():
            found += [str(f) for f in sorted(d.glob("liblumen_*.so"))]
    return found


def smi_query(fields):
    out = run_cmd(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"])
    return out.splitlines() if out else None


def driver_version():
    try:
        import pynvml
        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else v
    except Exception:  # noqa: BLE001 - any failure: try nvidia-smi
        pass
    rows = smi_query("driver_version")
    return rows[0] if rows else "?"


def cuda_version_str(v):
    """12040 -> '12.4'."""
    return f"{v // 1000}.{(v % 1000) // 10}" if isinstance(v, int) and v > 0 else "?"


def nvcc_version():
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                    if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    out = run_cmd([nvcc, "--version"]) if nvcc else None
    m = re.search(r"release ([\d.]+), (V[\d.]+)", out or "")
    return f"{m.group(1)} ({m.group(2)})" if m else "not found"


def git_commit():
    """$GPU_CHECK_COMMIT when set, else HEAD and whether the tree differs."""
    given = os.environ.get("GPU_CHECK_COMMIT")
    if given:  # the caller knows: the copy's .git, where one travels, can be an older one
        return f"{given} (as given by GPU_CHECK_COMMIT)"
    rev = run_cmd(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"])
    if not rev:
        return "unknown (no git checkout)"
    dirty = run_cmd(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
    untracked = run_cmd(["git", "-C", str(REPO), "status", "--porcelain"])
    note = " + uncommitted changes" if dirty else (" + untracked files" if untracked else "")
    return rev + note


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def gpu_state():
    rows = smi_query("clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate,utilization.gpu")
    return rows[0] if rows else "nvidia-smi not available"


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


# ---- timing --------------------------------------------------------------------------------

class Timer:
    def __init__(self, sync, args):
        self.sync, self.args = sync, args

    def run(self, fn, cold_fn=None):
        """{"ms_cold", "ms_min", "ms_median", "runs"}: one cold call (cold_fn, else fn), the
        warm-ups, then timed calls until --repeat, or --budget once 3 ran; a call slower than
        --cap seconds ends it at once (a slow peer must not eat the run's time)."""
        sync, pc, cap_ms = self.sync, time.perf_counter, self.args.cap * 1e3
        sync()
        t0 = pc()
        (cold_fn or fn)()
        sync()
        cold = (pc() - t0) * 1e3
        for _ in range(self.args.warmup if cold <= cap_ms else 0):
            fn()
            sync()
        times, start = [], pc()
        while len(times) < self.args.repeat:
            sync()
            t0 = pc()
            fn()
            sync()
            times.append((pc() - t0) * 1e3)
            if (len(times) >= 3 and pc() - start > self.args.budget) or times[-1] > cap_ms:
                break
        return {"status": "ok", "ms_cold": cold, "ms_min": min(times),
                "ms_median": statistics.median(times), "runs": len(times)}


# ---- the bench -----------------------------------------------------------------------------

class Mismatch(Exception):
    pass


class Bench:
    def __init__(self, args, np, torch, cupy, lumen):
        self.args, self.np, self.torch, self.cp, self.lumen = args, np, torch, cupy, lumen
        self.F = importlib.import_module("torch.nn.functional")
        self.dev = torch.device(args.device)
        self.timer = Timer(lambda: torch.cuda.synchronize(self.dev), args)
        self.img = np.random.default_rng(42).random((args.h, args.w), dtype=np.float32)
        self.span = float(self.img.max() - self.img.min()) or 1.0
        self.src = torch.from_numpy(self.img).to(self.dev)
        self.dst = torch.empty_like(self.src)
        self.cpu_ctx = lumen.Context(device="cpu")
        self.checks, self.failures, self.warnings = [], [], []
        self.copy = None
        if cupy is not None:
            self.x_cp = cupy.asarray(self.img)
            self.o_cp = cupy.empty_like(self.x_cp)
            self.t_cp = cupy.empty_like(self.x_cp)
        torch.cuda.synchronize(self.dev)

    # -- helpers --

    def kernel(self, case):
        from lumen.bench import filter_kernel  # lumen bench's LCG taps: the same kernels
        return filter_kernel(case.ksize)

    def taps(self, case):
        return self.np.asarray(self.lumen.gaussian_kernel(case.ksize, case.sigma),
                               self.np.float32).reshape(-1)

    def tol(self, case):
        if case.precision == "fast":
            return FAST_GAUSS_REL * self.span
        ksum = float(self.np.abs(self.kernel(case)).sum()) if case.op == "filter2d" else 1.0
        return F32_REL * self.span * max(1.0, ksum)

    def host(self, x):
        """A result as a float64 NumPy array (torch tensor, cupy array or NumPy)."""
        np = self.np
        if hasattr(x, "detach"):
            x = x.detach().to("cpu").numpy()
        elif self.cp is not None and isinstance(x, self.cp.ndarray):
            x = self.cp.asnumpy(x)
        return np.asarray(x, np.float64).reshape(self.args.h, self.args.w)

    def check(self, case, what, got, want, tol):
        """Records max |got - want|; a NaN (an unwritten output) or a difference > tol fails."""
        np = self.np
        g, w = self.host(got), self.host(want)
        d = np.abs(g - w)
        worst = float(d.max()) if np.isfinite(d).all() else math.inf
        rec = {"case": case.name, "what": what, "max_abs_diff": worst, "tol": tol,
               "ok": worst <= tol}
        self.checks.append(rec)
        if not rec["ok"]:
            n_bad = int((~(d <= tol)).sum())
            msg = (f"{case.name}: {what}: max |diff| {worst:.3g} > tol {tol:.3g} "
                   f"({n_bad} of {d.size} pixels outside)")
            self.failures.append(msg)
            say(f"gpu_bench: MISMATCH: {msg}")
            if not self.args.keep_going:
                raise Mismatch(msg)
        return rec

    def check_ran_on_device(self, case, what, src=None, dst=None):
        run = self.lumen.last_run() or {}
        if run.get("device") != self.args.device:
            msg = (f"{case.name}: {what}: lumen.last_run() says device {run.get('device')!r}, "
                   f"not {self.args.device!r}")
            self.failures.append(msg)
            raise Mismatch(msg)  # strict mode should make this impossible: never time it
        if src is not None and run.get("src_ptr") != src.data_ptr():
            self.warnings.append(f"{case.name}: {what}: lumen's src pointer is not the tensor's")
        if dst is not None and run.get("dst_ptr") != dst.data_ptr():
            self.warnings.append(f"{case.name}: {what}: lumen's dst pointer is not the tensor's")
        return run

    # -- lumen --

    def lumen_call(self, case, border, src, dst, ctx):
        L = self.lumen
        if case.op == "filter2d":
            k = self.kernel(case)
            return lambda: L.filter2d(src, k, border=border, out=dst, context=ctx)
        if case.precision == "fast":
            return lambda: L.gaussian_blur(src, case.sigma, precision="fast", border=border,
                                           out=dst, context=ctx)
        return lambda: L.gaussian_blur(src, case.sigma, ksize=case.ksize, border=border,
                                       out=dst, context=ctx)

    def cpu_reference(self, case, border):
        """lumen's CPU result (and its time, one call) for the case."""
        np = self.np
        out = np.empty_like(self.img)
        if case.precision == "fast":  # what the fast blur approximates: OpenCV's own ksize
            exact = Case("gaussian", int(self.lumen.gaussian_ksize(case.sigma)), case.sigma)
            fn = self.lumen_call(exact, border, self.img, out, self.cpu_ctx)
        else:
            fn = self.lumen_call(case, border, self.img, out, self.cpu_ctx)
        t0 = time.perf_counter()
        fn()
        return out, (time.perf_counter() - t0) * 1e3

    def time_lumen(self, case, border, ref):
        """Times lumen on device tensors (host arrays for host cases) on a fresh strict context;
        checks where it ran, and verifies the warm result and one more from a poisoned output
        against the CPU reference. Returns (timing, a copy of the result or None)."""
        np, L = self.np, self.lumen
        tol = self.tol(case)
        if case.host:
            src, dst = self.img, np.zeros_like(self.img)
            poison = lambda: dst.fill(np.nan)  # noqa: E731
        else:
            src, dst = self.src, self.dst
            poison = lambda: dst.fill_(float("nan"))  # noqa: E731
        in_place = (None, None) if case.host else (src, dst)
        try:
            ctx = L.Context(device=self.args.device, strict=True)
            fn = self.lumen_call(case, border, src, dst, ctx)
            poison()

            def cold():
                fn()
                self.check_ran_on_device(case, f"lumen {border}", *in_place)
            r = self.timer.run(fn, cold_fn=cold)
            self.check(case, f"lumen GPU {border} (warm) vs lumen CPU", dst, ref, tol)
            poison()
            self.timer.sync()
            fn()
            run = self.check_ran_on_device(case, f"lumen {border}", *in_place)
            self.check(case, f"lumen GPU {border} (poisoned output, last call) vs lumen CPU",
                       dst, ref, tol)
            r.update({"method": run.get("method"), "device": run.get("device")})
            return r, (dst.copy() if case.host else dst.clone())
        except Mismatch:
            raise
        except L.UnsupportedError as e:
            say(f"gpu_bench: {case.name}: lumen {border}: unsupported on {self.args.device}: {e}")
            return {"status": "unsupported", "error": str(e)}, None
        except Exception as e:  # noqa: BLE001 - lumen.Error, MemoryError ...: reported, run on
            msg = f"{case.name}: lumen {border}: {type(e).__name__}: {e}"
            self.failures.append(msg)
            say(f"gpu_bench: ERROR: {msg}")
            return {"status": "error", "error": str(e)}, None

    # -- peers --

    def cupyx_call(self, case):
        cp = self.cp
        import cupyx.scipy.ndimage as cnd
        x, o, t = self.x_cp, self.o_cp, self.t_cp
        if case.op == "filter2d":
            w = cp.asarray(self.kernel(case))
            return (lambda: cnd.correlate(x, w, output=o, mode="reflect")), o, \
                "cupyx.scipy.ndimage.correlate(mode='reflect')"
        g = cp.asarray(self.taps(case))

        def sep():
            cnd.correlate1d(x, g, axis=1, output=t, mode="reflect")
            cnd.correlate1d(t, g, axis=0, output=o, mode="reflect")
        return sep, o, "cupyx correlate1d x, then y (mode='reflect')"

    def torch_call(self, case):
        torch, F = self.torch, self.F
        x = self.src[None, None]
        if case.op == "filter2d":
            p = case.ksize // 2
            w = torch.from_numpy(self.kernel(case)).to(self.dev)[None, None]
            holder = {}

            def conv():
                holder["y"] = F.conv2d(F.pad(x, (p, p, p, p), mode="reflect"), w)
            return conv, holder, "F.conv2d(F.pad(x, mode='reflect'), k)"
        p = case.ksize // 2
        g = torch.from_numpy(self.taps(case)).to(self.dev)
        row, col = g.reshape(1, 1, 1, -1), g.reshape(1, 1, -1, 1)
        holder = {}

        def sep():
            holder["y"] = F.conv2d(F.conv2d(F.pad(x, (p, p, p, p), mode="reflect"), row), col)
        return sep, holder, "F.pad(reflect), F.conv2d 1 x k, then k x 1"

    def time_peer(self, case, lib, ref_cpu, ref_gpu):
        tol = self.tol(case)
        try:
            if lib == "cupyx":
                fn, out, call = self.cupyx_call(case)
                poison = lambda: out.fill(self.cp.nan)  # noqa: E731
                result = lambda: out  # noqa: E731
            else:
                fn, holder, call = self.torch_call(case)
                poison = holder.clear
                result = lambda: holder["y"][0, 0]  # noqa: E731
            poison()
            with self.torch.inference_mode():
                r = self.timer.run(fn)
                poison()
                fn()
                self.timer.sync()
        except Exception as e:  # noqa: BLE001 - a peer that breaks is reported, not fatal
            msg = f"{case.name}: {lib}: {type(e).__name__}: {e}"
            self.warnings.append(msg)
            say(f"gpu_bench: warning: {msg}")
            return {"status": "error", "error": str(e)}
        r["call"] = call
        border = "reflect" if lib == "cupyx" else "reflect101"
        self.check(case, f"{lib} vs lumen CPU {border}", result(), ref_cpu, tol)
        if ref_gpu is not None:
            self.check(case, f"{lib} vs lumen GPU {border}", result(), ref_gpu, tol)
        return r

    # -- host<->device copies --

    def time_copies(self):
        """Pinned (and, for information, pageable) copies of the image's bytes, up and down."""
        torch, np = self.torch, self.np
        res = {"bytes": int(self.img.nbytes)}
        h_up = torch.from_numpy(self.img).pin_memory()
        h_down = torch.empty(self.img.shape, dtype=torch.float32, pin_memory=True)
        d = torch.empty(self.img.shape, dtype=torch.float32, device=self.dev)
        res["torch_pinned_up"] = self.timer.run(lambda: d.copy_(h_up, non_blocking=True))
        res["torch_pinned_down"] = self.timer.run(lambda: h_down.copy_(d, non_blocking=True))
        if not np.array_equal(h_down.numpy(), self.img):
            self.failures.append("copy baseline: torch's pinned round trip changed the bytes")
        pageable = np.zeros_like(self.img)
        pg = torch.from_numpy(pageable)
        res["torch_pageable_up"] = self.timer.run(lambda: d.copy_(torch.from_numpy(self.img)))
        res["torch_pageable_down"] = self.timer.run(lambda: pg.copy_(d))
        if self.cp is not None:
            try:
                cp = self.cp
                import cupyx
                p_up = cupyx.empty_pinned(self.img.shape, np.float32)
                p_up[...] = self.img
                p_down = cupyx.empty_pinned(self.img.shape, np.float32)
                dc = cp.empty(self.img.shape, cp.float32)
                res["cupy_pinned_up"] = self.timer.run(lambda: dc.set(p_up))
                res["cupy_pinned_down"] = self.timer.run(lambda: dc.get(out=p_down))
            except Exception as e:  # noqa: BLE001
                self.warnings.append(f"cupy pinned copies: {type(e).__name__}: {e}")
        rt = {}
        for lib in ("torch", "cupy"):
            if f"{lib}_pinned_up" in res:
                rt[lib] = res[f"{lib}_pinned_up"]["ms_min"] + res[f"{lib}_pinned_down"]["ms_min"]
        best = min(rt, key=rt.get)
        res["baseline_lib"], res["baseline_ms"] = best, rt[best]
        res["up_ms"] = res[f"{best}_pinned_up"]["ms_min"]
        res["down_ms"] = res[f"{best}_pinned_down"]["ms_min"]
        gbs = lambda ms: res["bytes"] / (ms * 1e-3) / 1e9  # noqa: E731
        res["up_gbs"], res["down_gbs"] = gbs(res["up_ms"]), gbs(res["down_ms"])
        self.copy = res
        return res

    # -- a case --

    def run_case(self, case):
        row = {"name": case.name, "op": case.op, "ksize": case.ksize or None,
               "sigma": case.sigma or None, "precision": case.precision, "host": case.host,
               "tol": self.tol(case)}
        ref, row["cpu_ms"] = self.cpu_reference(case, "reflect")
        row["lumen"], got = self.time_lumen(case, "reflect", ref)
        if case.host:
            if self.copy is None:
                self.time_copies()
            lu = row["lumen"]
            row["copy_ms"] = self.copy["baseline_ms"]
            row["ratio_copy"] = (lu["ms_min"] / self.copy["baseline_ms"]
                                 if lu.get("status") == "ok" else None)
            return row
        row["peers"] = {}
        if case.precision == "fast":
            return row
        if not self.args.no_cupy and self.cp is not None:
            row["peers"]["cupyx"] = self.time_peer(case, "cupyx", ref, got)
        del got
        if not self.args.no_torch_peer:
            ref101, row["cpu101_ms"] = self.cpu_reference(case, "reflect101")
            row["lumen101"], got101 = self.time_lumen(case, "reflect101", ref101)
            row["peers"]["torch"] = self.time_peer(case, "torch", ref101, got101)
            del got101
        lu, lu101 = row["lumen"], row.get("lumen101", {})
        row["ratio"] = {
            "cupyx": ratio(lu, row["peers"].get("cupyx")),
            "torch": ratio(lu101, row["peers"].get("torch")),
        }
        return row


def ratio(a, b):
    if not a or not b or a.get("status") != "ok" or b.get("status") != "ok":
        return None
    return a["ms_min"] / b["ms_min"]


# ---- targets -------------------------------------------------------------------------------

def judge(rows, copy):
    """[{target, limit, value, verdict}]: met, MISSED, or 'not run' when a side is absent."""
    by = {r["name"]: r for r in rows}
    out = []

    def add(target, limit, value, unit, missing_note=None):
        if value is None:
            verdict = "not run" + (f" ({missing_note})" if missing_note else "")
        else:
            verdict = "met" if value <= limit else "MISSED"
        out.append({"target": target, "limit": limit, "value": value, "unit": unit,
                    "verdict": verdict})

    for name, limit in ABS_TARGETS_MS.items():
        r = by.get(name)
        if r is None:
            continue
        lu = r["lumen"]
        add(f"{name}: lumen warm min", limit, lu.get("ms_min"), "ms", lu.get("status"))
    for k in FILTER_KS:
        r = by.get(f"filter2d_k{k}")
        if r is None or k < RATIO_MIN_K:
            continue
        for lib, what in (("cupyx", "cupyx.scipy.ndimage.correlate"),
                          ("torch", "torch conv2d after F.pad")):
            peer = r.get("peers", {}).get(lib)
            note = "peer left out" if peer is None else peer.get("status")
            add(f"filter2d_k{k}: lumen / {what}", RATIO_LIMIT, (r.get("ratio") or {}).get(lib),
                "x", note)
    for r in rows:
        if r["host"]:
            add(f"{r['name']}: end-to-end / pinned copy up+down", HOST_LIMIT,
                r.get("ratio_copy"), "x", r["lumen"].get("status"))
    return out


# ---- NCHW conv (issue 6) ---------------------------------------------------------------------

#: name, transposed, N, C, H, W, K, R(=S), stride, pad, output_padding
CONV_LAYERS = (
    ("conv_32x512x7x7_k512_r3_p1", False, 32, 512, 7, 7, 512, 3, 1, 1, 0),
    ("conv_8x64x56x56_k64_r3_p1", False, 8, 64, 56, 56, 64, 3, 1, 1, 0),
    ("conv_8x256x14x14_k256_r3_p1", False, 8, 256, 14, 14, 256, 3, 1, 1, 0),
    ("conv_8x3x224x224_k64_r7_s2_p3", False, 8, 3, 224, 224, 64, 7, 2, 3, 0),
    ("convT_8x256x14x14_k128_r4_s2_p1", True, 8, 256, 14, 14, 128, 4, 2, 1, 0),
)
#: lumen min / torch min at most this (lumen at least as fast as torch)
CONV_TARGETS = {"conv_32x512x7x7_k512_r3_p1": 1.0}
CONV_REL = 2e-5


def run_conv_layer(bench, layer):
    """One conv layer: lumen and torch on the same CUDA tensors, verified, timed."""
    name, transposed, n, c, h, w, k, r, stride, pad, opad = layer
    torch, lumen, F = bench.torch, bench.lumen, bench.F
    dev = bench.dev
    g = torch.Generator(device="cpu").manual_seed(6)
    x = torch.randn(n, c, h, w, generator=g).to(dev)
    wshape = (c, k, r, r) if transposed else (k, c, r, r)
    wt = (torch.randn(*wshape, generator=g) / math.sqrt(c * r * r)).to(dev)
    b = torch.randn(k, generator=g).to(dev)
    b_np = b.cpu().numpy()
    if transposed:
        def tcall():
            return F.conv_transpose2d(x, wt, b, stride=stride, padding=pad, output_padding=opad)
    else:
        def tcall():
            return F.conv2d(x, wt, b, stride=stride, padding=pad)
    want = tcall()
    y = torch.empty_like(want)
    state = {"ctx": lumen.Context(device=bench.args.device, strict=True)}

    def lcall():
        if transposed:
            lumen.conv_transpose2d(x, wt, b_np, stride=stride, padding=pad, output_padding=opad,
                                   out=y, context=state["ctx"])
        else:
            lumen.conv2d(x, wt, b_np, stride=stride, padding=pad, out=y, context=state["ctx"])

    def lcold():
        state["ctx"] = lumen.Context(device=bench.args.device, strict=True)  # empty plan cache
        lcall()

    row = {"name": name, "shape": list(layer[1:]), "lumen": {}, "torch": {}}
    try:
        y.fill_(float("nan"))
        row["lumen"] = bench.timer.run(lcall, lcold)
        run = lumen.last_run() or {}
        row["algo"], row["device"] = run.get("algo"), run.get("device")
    except Exception as e:  # noqa: BLE001 - an unsupported call is a row, not a crash
        row["lumen"] = {"status": f"error: {type(e).__name__}: {e}"}
        bench.failures.append(f"{name}: lumen: {e}")
        return row
    row["torch"] = bench.timer.run(tcall)
    # error scale: conv(|x|, |w|) in float64 on the device
    fn = F.conv_transpose2d if transposed else F.conv2d
    kw = {"output_padding": opad} if transposed else {}
    scale = fn(x.double().abs(), wt.double().abs(), None, stride=stride, padding=pad, **kw)
    tol = CONV_REL * float(scale.max()) + 1e-6 * float(b.abs().max())
    diff = (y.double() - want.double()).abs()
    worst = float(diff.max()) if bool(torch.isfinite(diff).all()) else math.inf
    rec = {"case": name, "what": "lumen vs torch", "max_abs_diff": worst, "tol": tol,
           "ok": worst <= tol}
    bench.checks.append(rec)
    if not rec["ok"]:
        msg = f"{name}: lumen vs torch: max |diff| {worst:.3g} > tol {tol:.3g}"
        bench.failures.append(msg)
        say(f"gpu_bench: MISMATCH: {msg}")
        if not bench.args.keep_going:
            raise Mismatch(msg)
    if row.get("device") != bench.args.device:
        bench.failures.append(f"{name}: lumen ran on {row.get('device')!r}")
    elif not str(row.get("algo", "")).startswith("cudnn:"):
        bench.warnings.append(f"{name}: lumen used {row.get('algo')} (not cuDNN)")
    lm, tm = row["lumen"].get("ms_min"), row["torch"].get("ms_min")
    row["ratio"] = lm / tm if lm and tm else None
    flops = 2.0 * n * k * c * r * r * (want.shape[2] * want.shape[3] if not transposed
                                      else h * w)
    row["tflops_lumen"] = flops / (lm * 1e-3) / 1e12 if lm else None
    row["tflops_torch"] = flops / (tm * 1e-3) / 1e12 if tm else None
    return row


def conv_targets(conv_rows):
    out = []
    for r in conv_rows:
        limit = CONV_TARGETS.get(r["name"])
        if limit is None:
            continue
        v = r.get("ratio")
        verdict = "not run" if v is None else "met" if v <= limit else "MISSED"
        out.append({"target": f"{r['name']}: lumen / torch F.conv2d (warm min)", "limit": limit,
                    "value": v, "unit": "x", "verdict": verdict})
    return out


CONV_HEAD = ["layer", "lumen algo", "lumen min/med ms", "cold ms", "torch min/med ms",
             "cold ms", "lumen/torch", "TFLOP/s lumen/torch"]


def conv_cells(r):
    lu, to = r.get("lumen", {}), r.get("torch", {})
    return [r["name"], str(r.get("algo", lu.get("status", "-"))), min_med(lu), ms(lu.get("ms_cold")),
            min_med(to), ms(to.get("ms_cold")), fr(r.get("ratio")),
            (f"{r['tflops_lumen']:.1f} / {r['tflops_torch']:.1f}"
             if r.get("tflops_lumen") and r.get("tflops_torch") else "-")]


def conv_report(conv_rows):
    if not conv_rows:
        return []
    return ["", "## NCHW conv (cuDNN, FP32 with FMA; torch with TF32 off)", "",
            md_table(CONV_HEAD, [conv_cells(r) for r in conv_rows])]


# ---- printing ------------------------------------------------------------------------------

def ms(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def min_med(r):
    if not r:
        return "-"
    if r.get("status") != "ok":
        return r.get("status", "-")
    one = " (1 run)" if r.get("runs") == 1 else ""
    return f"{ms(r['ms_min'])}/{ms(r['ms_median'])}{one}"


def fr(x):
    """A ratio with three significant digits: 0.000123, 0.0456, 0.317, 2.45, 458."""
    return "-" if x is None else f"{x:.3g}"


DEV_HEAD = ["case", "k", "method", "cold", "lumen min/med", "cupyx min/med", "l/cupyx",
            "lumen101 min/med", "torch min/med", "l101/torch", "targets"]
HOST_HEAD = ["case", "k", "method", "cold", "lumen e2e min/med", "copy up+down", "e2e/copy",
             "targets"]


def row_verdict(r, targets):
    """The row's targets in one word: met, MISSED, not run, or '-' when it has none."""
    if targets is None:
        return ""
    mine = [t["verdict"] for t in targets if t["target"].startswith(r["name"] + ":")]
    if not mine:
        return "-"
    if any(v == "MISSED" for v in mine):
        return "MISSED"
    if any(v.startswith("not run") for v in mine):
        return "not run"
    return "met"


def dev_cells(r, targets=None):
    lu, lu101, p = r["lumen"], r.get("lumen101"), r.get("peers", {})
    ra = r.get("ratio") or {}
    return [r["name"], str(r["ksize"] or "-"), lu.get("method") or "-",
            ms(lu.get("ms_cold")), min_med(lu), min_med(p.get("cupyx")), fr(ra.get("cupyx")),
            min_med(lu101), min_med(p.get("torch")), fr(ra.get("torch")),
            row_verdict(r, targets)]


def host_cells(r, copy, targets=None):
    lu = r["lumen"]
    return [r["name"], str(r["ksize"] or "-"), lu.get("method") or "-", ms(lu.get("ms_cold")),
            min_med(lu), ms(copy and copy["baseline_ms"]), fr(r.get("ratio_copy")),
            row_verdict(r, targets)]


WIDTHS = {"case": 20, "k": 4, "method": 10, "cold": 8, "targets": 8}


def text_row(cells, head):
    return " ".join(c.ljust(WIDTHS.get(h, 18)) if h in ("case", "method", "targets")
                    else c.rjust(WIDTHS.get(h, 18 if "/" in h and "min" in h else 11))
                    for c, h in zip(cells, head))


def md_table(head, rows):
    left = ("case", "method", "targets")
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if h in left else "---:" for h in head) + "|"]
    lines += ["| " + " | ".join(c) + " |" for c in rows]
    return "\n".join(lines)


# ---- the report ----------------------------------------------------------------------------

def machine_info(args, np, torch, cupy, lumen):
    props = torch.cuda.get_device_properties(args.ordinal)
    lumen_dev = next((d for d in lumen.devices()
                      if d.get("backend") == "cuda" and device_ordinal(lumen, d) == args.ordinal),
                     {})
    info = {
        "gpu_torch": torch.cuda.get_device_name(args.ordinal),
        "gpu_lumen": lumen_dev.get("name", "?"),
        "lumen_device": lumen_dev,
        "compute_capability": f"{props.major}.{props.minor}",
        "sms": props.multi_processor_count,
        "memory_gib": props.total_memory / 2**30,
        "driver": driver_version(),
        "cuda_torch": torch.version.cuda,
        "cudnn": str(torch.backends.cudnn.version()),
        "nvcc": nvcc_version(),
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "torch": torch.__version__, "lumen": getattr(lumen, "__version__", "?")},
        "lumen_package": str(Path(lumen.__file__).resolve().parent),
        "lumen_modules": module_files(lumen),
        "commit": git_commit(),
        "cpu": cpu_model(), "cpus": os.cpu_count(), "host": socket.gethostname(),
        "os": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python3", "bench/gpu_bench.py"] + sys.argv[1:]),
        "python": sys.executable,
        "gpu_state_start": gpu_state(),
    }
    if cupy is not None:
        info["versions"]["cupy"] = cupy.__version__
        try:
            info["cuda_driver_api"] = cuda_version_str(cupy.cuda.runtime.driverGetVersion())
            info["cuda_cupy_runtime"] = cuda_version_str(cupy.cuda.runtime.runtimeGetVersion())
        except Exception:  # noqa: BLE001
            pass
    info["torch_flags"] = torch_flags(torch)
    return info


def device_ordinal(lumen, d):
    """The N of cuda:N for a lumen device entry (its rank among the backend's devices)."""
    same = [x for x in lumen.devices() if x.get("backend") == d.get("backend")]
    return [x.get("index") for x in same].index(d.get("index"))


def torch_flags(torch):
    flags = {}
    for name, get in (("cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
                      ("cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                      ("cudnn.benchmark", lambda: torch.backends.cudnn.benchmark)):
        try:
            flags[name] = get()
        except Exception as e:  # noqa: BLE001 - torch refuses to read mixed legacy/new APIs
            flags[name] = f"unreadable: {e}"
    return flags


def print_report(args, info, rows, copy, targets, checks, failures, warnings):
    dev_rows = [r for r in rows if not r["host"]]
    host_rows = [r for r in rows if r["host"]]
    say()
    if dev_rows:
        say("device-resident (torch CUDA tensors in and out), ms:")
        say(text_row(DEV_HEAD, DEV_HEAD))
        for r in dev_rows:
            say(text_row(dev_cells(r, targets), DEV_HEAD))
    if host_rows:
        say("\nhost arrays (NumPy in and out; transfers included), ms:")
        say(text_row(HOST_HEAD, HOST_HEAD))
        for r in host_rows:
            say(text_row(host_cells(r, copy, targets), HOST_HEAD))
    if copy:
        say(f"copy alone ({copy['bytes'] / 1e6:.1f} MB, pinned, {copy['baseline_lib']}): up "
            f"{ms(copy['up_ms'])} ms ({copy['up_gbs']:.1f} GB/s), down {ms(copy['down_ms'])} ms "
            f"({copy['down_gbs']:.1f} GB/s); pageable (torch): up "
            f"{ms(copy['torch_pageable_up']['ms_min'])}, down "
            f"{ms(copy['torch_pageable_down']['ms_min'])} ms")
    if info.get("conv"):
        say("\nNCHW conv (torch CUDA tensors; cuDNN FP32 with FMA, torch TF32 off), ms:")
        say(text_row(CONV_HEAD, CONV_HEAD))
        for r in info["conv"]:
            say(text_row(conv_cells(r), CONV_HEAD))
    say("\ntargets:")
    for t in targets:
        val = "-" if t["value"] is None else f"{t['value']:.3g} {t['unit']}"
        say(f"  {t['target']:<62} <= {t['limit']:.3g} {t['unit']:<3} {val:>12}  {t['verdict']}")
    met = sum(t["verdict"] == "met" for t in targets)
    say(f"\n{met}/{len(targets)} targets met")
    worst = max(checks, key=lambda c: c["max_abs_diff"] / c["tol"], default=None)
    bad = [c for c in checks if not c["ok"]]
    if worst:
        say(f"verification: {len(checks)} comparisons, {len(bad)} outside tolerance; closest to "
            f"its tolerance: {worst['case']} {worst['what']} ({worst['max_abs_diff']:.3g} of "
            f"{worst['tol']:.3g})")
    for f in failures:
        say(f"  FAILURE: {f}")
    for w in warnings:
        say(f"  warning: {w}")
    say(f"GPU state at the end: {gpu_state()}")


def markdown(args, info, rows, copy, targets, checks, failures, warnings):
    gpu = info["gpu_lumen"] if info["gpu_lumen"] != "?" else info["gpu_torch"]
    v = info["versions"]
    dev_rows = [r for r in rows if not r["host"]]
    host_rows = [r for r in rows if r["host"]]
    met = sum(t["verdict"] == "met" for t in targets)
    worst = max(checks, key=lambda c: c["max_abs_diff"] / c["tol"], default=None)
    L = [f"# lumen on {gpu}: benchmark", "",
         f"Measured {info['date']} by `bench/gpu_bench.py` through `scripts/gpu-check.sh` "
         "(docs/gpu-check.md), lumen called through its Python package on torch CUDA tensors, "
         "with cupyx.scipy.ndimage and PyTorch timed in the same process on the same GPU.", "",
         "```sh", info["command"], "```", "",
         *([f"(run by `{os.environ['GPU_CHECK_RUN']}`; its test results are at the end)", ""]
           if os.environ.get("GPU_CHECK_RUN") else []),
         "## Machine", "",
         "| | |", "|---|---|",
         f"| GPU | {gpu} (torch: {info['gpu_torch']}), compute capability "
         f"{info['compute_capability']}, {info['sms']} SMs, {info['memory_gib']:.1f} GiB |",
         f"| driver | {info['driver']} (CUDA driver API {info.get('cuda_driver_api', '?')}) |",
         f"| CUDA | nvcc {info['nvcc']} (built lumen's module); torch built for "
         f"{info['cuda_torch']}, cuDNN {info['cudnn']}; cupy runtime "
         f"{info.get('cuda_cupy_runtime', '?')} |",
         "| software | " + ", ".join(f"{k} {val}" for k, val in v.items()) + " |",
         f"| lumen | {v['lumen']}, commit {info['commit']}; modules: "
         + (", ".join(f"`{Path(m).name}`" for m in info["lumen_modules"]) or "none found")
         + " |",
         f"| host | {info['cpu']}, {info['cpus']} CPUs; {info['os']} |",
         f"| GPU state (nvidia-smi: SM MHz, mem MHz, °C, W, pstate, util) | start: "
         f"{info['gpu_state_start']}; end: {info.get('gpu_state_end', '?')} |",
         "| torch flags | " + ", ".join(f"{k} = {val}" for k, val in info["torch_flags"].items())
         + " |", "",
         "## Method", "",
         f"- Image {args.w}×{args.h} (W×H) f32, one channel, seeded random values in [0, 1); "
         "filter2d kernels are lumen bench's random k×k taps in [-1, 1) (non-separable); "
         "Gaussians use `lumen.gaussian_kernel(ksize, sigma)`, ksize = 2·round(3σ)+1.",
         "- Every call is synchronous as Python sees it: `torch.cuda.synchronize()` before and "
         "after, `time.perf_counter()` around it (lumen's call synchronises before it returns). "
         f"One cold call, {args.warmup} untimed warm-up(s), then up to {args.repeat} timed calls "
         f"(at least 3, stopping after {args.budget:g} s); min/median in ms, ratios on minima.",
         "- lumen: `lumen.filter2d(src, k, border=..., out=dst, context=ctx)` with torch CUDA "
         f"tensors and `ctx = lumen.Context(device='{args.device}', strict=True)`; "
         f"`lumen.last_run()['device'] == '{args.device}'` checked. `cold` is the first call on "
         "a fresh context.",
         "- cupyx: `cupyx.scipy.ndimage.correlate(x, k, output=o, mode='reflect')` against "
         "lumen `border='reflect'` (the same rule); Gaussians `correlate1d` along x then y.",
         "- torch: `F.conv2d(F.pad(x, (p,)*4, mode='reflect'), k)` with the pad **inside** the "
         "timing, against lumen `border='reflect101'` (torch's 'reflect' is lumen's reflect101: "
         "column `lumen101`); TF32 off (`torch.backends.cudnn.allow_tf32 = False`, "
         "`torch.backends.cuda.matmul.allow_tf32 = False`), `cudnn.benchmark = True`.",
         "- Host rows: the same lumen calls on NumPy arrays (pageable), transfers included, "
         "against the copy alone: the same bytes up and down between pinned host memory and the "
         "device (torch `copy_(non_blocking=True)`, cupy `set`/`get`; the faster library's "
         "min up + min down).",
         "- Verified: lumen's GPU results (output poisoned with NaN first) and every peer's "
         "equal lumen's CPU result, and the peers lumen's GPU result, within 1e-5 × span × "
         "max(1, Σ|k|) (tests/python/tolerances.py; the fast Gaussian: 1e-3 × span against the "
         "exact blur).", "",
         "## Device-resident (torch CUDA tensors in and out), ms", ""]
    if dev_rows:
        L.append(md_table(DEV_HEAD, [dev_cells(r, targets) for r in dev_rows]))
        L += ["", "`l/cupyx`, `l101/torch`: lumen min / peer min (below 1/3 = over 3× faster)."]
    if host_rows:
        L += ["", "## Host arrays (NumPy in and out, transfers included), ms", "",
              md_table(HOST_HEAD, [host_cells(r, copy, targets) for r in host_rows])]
    if copy:
        L += ["", f"Copy alone, {copy['bytes'] / 1e6:.1f} MB each way, pinned "
              f"({copy['baseline_lib']}): up {ms(copy['up_ms'])} ms ({copy['up_gbs']:.1f} GB/s), "
              f"down {ms(copy['down_ms'])} ms ({copy['down_gbs']:.1f} GB/s). Pageable (torch, "
              f"for information): up {ms(copy['torch_pageable_up']['ms_min'])} ms, down "
              f"{ms(copy['torch_pageable_down']['ms_min'])} ms."]
    L += conv_report(info.get("conv"))
    L += ["", "## Targets (issues 5 and 6)", "", "| target | limit | value | verdict |",
          "|---|---:|---:|---|"]
    for t in targets:
        val = "-" if t["value"] is None else f"{t['value']:.3g} {t['unit']}"
        L.append(f"| {t['target']} | ≤ {t['limit']:.3g} {t['unit']} | {val} | {t['verdict']} |")
    L += ["", f"{met} of {len(targets)} targets met."]
    L += ["", "## Verification", ""]
    if worst:
        L.append(f"{len(checks)} comparisons, {sum(not c['ok'] for c in checks)} outside "
                 f"tolerance; the closest to its tolerance: {worst['case']}, {worst['what']}: "
                 f"{worst['max_abs_diff']:.3g} of {worst['tol']:.3g}.")
    for f in failures:
        L.append(f"- FAILURE: {f}")
    for w in warnings:
        L.append(f"- warning: {w}")
    return "\n".join(L) + "\n"


def write_outputs(args, info, rows, copy, targets, checks, failures, warnings, complete):
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"complete": complete, "machine": info, "size": [args.w, args.h],
                       "repeat": args.repeat, "budget_s": args.budget, "rows": rows,
                       "copy": copy, "targets": targets, "checks": checks,
                       "failures": failures, "warnings": warnings}, f, indent=2, default=str)
        say(f"gpu_bench: wrote {args.json}")
    if args.markdown and complete:
        gpu = info["gpu_lumen"] if info["gpu_lumen"] != "?" else info["gpu_torch"]
        dest = Path(args.markdown)
        if dest.is_dir() or args.markdown.endswith("/"):
            dest = dest / f"benchmarks-{slug(gpu)}.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(markdown(args, info, rows, copy, targets, checks, failures, warnings))
        say(f"gpu_bench: wrote {dest} (commit it as docs/benchmarks-{slug(gpu)}.md)")
    elif args.markdown:
        say("gpu_bench: no markdown written: the run did not complete (see the FATAL line)")


# ---- main ----------------------------------------------------------------------------------

def main(argv=None):
    args = parse_args(argv)
    try:
        import numpy as np
    except ImportError as e:
        skip(f"numpy is not importable with {sys.executable} ({e})")
    try:
        import torch
    except ImportError as e:
        skip(f"torch is not importable with {sys.executable} ({e}); it holds the device tensors. "
             "Use the python that has torch and cupy")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        built = torch.version.cuda or "no CUDA (a CPU-only build)"
        skip(f"no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, "
             f"built for {built})")
    if args.ordinal >= torch.cuda.device_count():
        skip(f"no {args.device}: torch sees {torch.cuda.device_count()} CUDA device(s)")
    cupy = None
    if not args.no_cupy:
        try:
            import cupy
            importlib.import_module("cupyx.scipy.ndimage")
        except ImportError as e:
            cupy = None
            say(f"gpu_bench: warning: cupy is not importable ({e}): the cupyx column and its "
                "targets are 'not run' (status 3)")
    lumen = import_lumen(args.build)
    name = torch.cuda.get_device_name(args.ordinal)
    say(f"gpu_bench: torch sees {name}; lumen {getattr(lumen, '__version__', '?')} from "
        f"{Path(lumen.__file__).resolve().parent}")
    cuda_devs = [d for d in lumen.devices() if d.get("backend") == "cuda"]
    try:
        lumen.Context(device=args.device, strict=True)
    except Exception as e:  # noqa: BLE001 - ValueError naming the devices lumen has
        say(f"gpu_bench: FATAL: lumen cannot use {args.device}: {e}")
        say(f"gpu_bench: lumen's devices: {lumen.devices()}")
        mods = module_files(lumen)
        say("gpu_bench: CUDA module files where lumen looks: "
            + (", ".join(mods) if mods else "none (was lumen built with -DLUMEN_CUDA=ON and "
                                             "nvcc? look for build-gpu/lumen-modules/liblumen_cuda.so)"))
        say("gpu_bench: what LUMEN_LOG=info says while lumen loads its modules:")
        for line in lumen_log_info(lumen).splitlines():
            say(f"    {line}")
        sys.exit(EXIT_NO_LUMEN_CUDA if not cuda_devs else EXIT_FAIL)

    # equal precision: no TF32 in cuDNN or cuBLAS; torch's best algorithm (cold call)
    try:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    except Exception as e:  # noqa: BLE001
        say(f"gpu_bench: warning: could not set torch's TF32 flags: {e}")
    torch.set_grad_enabled(False)
    torch.cuda.set_device(args.ordinal)

    info = machine_info(args, np, torch, cupy, lumen)
    say(f"gpu_bench: {info['gpu_lumen']} (cc {info['compute_capability']}, {info['sms']} SMs, "
        f"{info['memory_gib']:.0f} GiB), driver {info['driver']}, torch {torch.__version__} "
        f"(CUDA {info['cuda_torch']}, cuDNN {info['cudnn']})"
        + (f", cupy {cupy.__version__}" if cupy is not None else ", no cupy")
        + f"; torch flags {info['torch_flags']}")
    say(f"gpu_bench: image {args.w}x{args.h} f32; 1 cold + {args.warmup} warm-up + up to "
        f"{args.repeat} timed calls (budget {args.budget:g} s per call); GPU state: "
        f"{info['gpu_state_start']}")

    bench = Bench(args, np, torch, cupy, lumen)
    rows, complete = [], False
    conv_rows = info["conv"] = []
    try:
        for case in (c for c in all_cases() if c.name in args.cases and not args.conv_only):
            t0 = time.perf_counter()
            row = bench.run_case(case)
            rows.append(row)
            cells = host_cells(row, bench.copy) if case.host else dev_cells(row)
            head = HOST_HEAD if case.host else DEV_HEAD
            say("  " + "  ".join(f"{h}={c}" for h, c in zip(head, cells) if h != "targets")
                + f"  [{time.perf_counter() - t0:.1f}s]")
        for layer in CONV_LAYERS if not args.no_conv else ():
            t0 = time.perf_counter()
            row = run_conv_layer(bench, layer)
            conv_rows.append(row)
            say("  " + "  ".join(f"{h}={c}" for h, c in zip(CONV_HEAD, conv_cells(row)))
                + f"  [{time.perf_counter() - t0:.1f}s]")
        complete = True
    except Mismatch as e:
        say(f"gpu_bench: FATAL: {e}")
        say("gpu_bench: the results disagree, so the timings would not compare like with like; "
            "aborted (--keep-going runs on and marks the rows)")
    except Exception as e:  # noqa: BLE001 - a bug must not lose the rows measured so far
        import traceback
        traceback.print_exc()
        bench.failures.append(f"internal error: {type(e).__name__}: {e}")
        say(f"gpu_bench: FATAL: internal error: {type(e).__name__}: {e}")
    info["gpu_state_end"] = gpu_state()
    targets = judge(rows, bench.copy) + conv_targets(conv_rows)
    print_report(args, info, rows, bench.copy, targets, bench.checks, bench.failures,
                 bench.warnings)
    write_outputs(args, info, rows, bench.copy, targets, bench.checks, bench.failures,
                  bench.warnings, complete)
    if not complete or bench.failures:
        return EXIT_FAIL
    if any(t["verdict"] != "met" for t in targets):
        return EXIT_MISSED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
