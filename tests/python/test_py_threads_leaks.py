"""Threads and leaks in the Python package: the GIL is released while the C code runs, a shared
Context is safe from several threads, each thread's last_run() is its own, and 10 000 calls of
each kind (errors, out=, DLPack included) leak neither memory nor references.

Timing is not measured as speed-up (a 2-core shared machine makes that flaky): instead a Python
thread must keep running, with short gaps, while another thread is inside a long lumen call.
Tests that could deadlock run in a subprocess with a timeout.
"""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

import lumen
import tolerances as tol
from conftest import make_image, rng_for

H, W = 23, 31


# ---- the GIL -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_call():
    """Operands of a call that takes >= 0.15 s on one thread (grown until it does)."""
    ctx = lumen.Context(threads=1)
    k = make_image(rng_for("gil-k"), (15, 15), np.float32, -1, 1)
    n = 600
    while True:
        src = make_image(rng_for("gil", n), (n, n), np.float32)
        t0 = time.perf_counter()
        lumen.filter2d(src, k, method="direct", context=ctx)
        dt = time.perf_counter() - t0
        if dt >= 0.15 or n >= 6000:
            return src, k, ctx, dt
        n = int(n * min(3.0, max(1.3, (0.2 / dt) ** 0.5)))


def _gaps_during(call, min_total=0.15, min_calls=3):
    """Runs call() repeatedly in a thread (at least min_total seconds and min_calls calls); the
    main thread spins and records its iteration times. Returns, for each call, (its duration,
    main-thread iterations inside it, largest main-thread pause inside it)."""
    spans = []

    def worker():
        t_start = time.perf_counter()
        while len(spans) < min_calls or time.perf_counter() - t_start < min_total:
            t0 = time.perf_counter()
            call()
            spans.append((t0, time.perf_counter()))

    stamps = []
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        th = threading.Thread(target=worker)
        th.start()
        while th.is_alive():
            stamps.append(time.perf_counter())
        th.join()
    finally:
        sys.setswitchinterval(old)
    stamps = np.array(stamps)
    res = []
    for t0, t1 in spans:
        inside = stamps[(stamps >= t0) & (stamps <= t1)]
        edges = np.concatenate([[t0], inside, [t1]])
        res.append((t1 - t0, len(inside), float(np.diff(edges).max())))
    return res


GIL_CALLS = {
    "filter2d-direct": lambda s, k, c: lumen.filter2d(s, k, method="direct", context=c),
    "filter2d-no-context": lambda s, k, c: lumen.filter2d(s, k, method="direct"),
    "filter2d-fft": lambda s, k, c: lumen.filter2d(s, k, method="fft", context=c),
    "sep_filter2d": lambda s, k, c: lumen.sep_filter2d(s, k[0], k[:, 0], method="separable",
                                                       context=c),
    "gaussian-exact": lambda s, k, c: lumen.gaussian_blur(s, 12.0, method="separable",
                                                          context=c),
    "gaussian-fast": lambda s, k, c: lumen.gaussian_blur(s, 12.0, precision="fast", context=c),
    "box": lambda s, k, c: lumen.box_blur(s, 31, context=c),
    "torch-input": lambda s, k, c: lumen.filter2d(torch.from_numpy(s), k, method="direct",
                                                  context=c),
}


@pytest.mark.parametrize("name", list(GIL_CALLS))
def test_gil_released(long_call, name):
    src, k, ctx, single = long_call
    # A call that holds the GIL pauses the main thread for all of every call; the call with the
    # smallest pause is judged, so that one pause of the OS scheduler (another process taking
    # the core: 281 ms once in an ASan run on a loaded 2-core host) is not read as the GIL.
    calls = _gaps_during(lambda: GIL_CALLS[name](src, k, ctx))
    dur, n_inside, gap = min(calls, key=lambda c: c[2] / c[0])
    if dur < 0.01:
        pytest.skip(f"{name}: one call takes only {dur * 1e3:.1f} ms on {src.shape}: too short "
                    "to see whether the GIL is held")
    assert n_inside >= 5 and gap < 0.5 * dur, (
        f"{name}: while one lumen call ran for {dur * 1e3:.0f} ms the main Python thread made "
        f"{n_inside} iterations, largest pause {gap * 1e3:.0f} ms: the GIL is held in C")


_SHARED_CTX_SCRIPT = r"""
import sys, threading, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import lumen
ctx = lumen.Context(threads=1)
src = np.random.default_rng(0).random((1200, 1200), dtype=np.float32)
k = np.random.default_rng(1).random((11, 11), dtype=np.float32)
want = lumen.filter2d(src, k, method="direct")
res = {}
def work(i):
    res[i] = [lumen.filter2d(src, k, method="direct", context=ctx) for _ in range(3)]
ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
spins = 0
t0 = time.perf_counter()
for t in ts: t.start()
while any(t.is_alive() for t in ts):
    spins += 1
for t in ts: t.join()
ok = all(np.array_equal(r, want) for rs in res.values() for r in rs)
print("OK" if ok else "WRONG", spins, round(time.perf_counter() - t0, 3))
"""


def test_shared_context_contention_no_deadlock():
    """Three threads on one Context (they queue on its lock): waiting for the lock must not
    hold the GIL, or the holder could never return. Run in a subprocess with a timeout."""
    build = os.environ.get("LUMEN_PY_BUILD") or os.path.dirname(os.path.dirname(lumen.__file__))
    try:
        r = subprocess.run([sys.executable, "-c", _SHARED_CTX_SCRIPT, build],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("threads sharing one Context deadlocked (no result in 120 s)")
    assert r.returncode == 0, r.stderr
    status, spins, secs = r.stdout.split()
    assert status == "OK", "threads sharing one Context got wrong results"
    assert int(spins) > 100, f"the main thread spun only {spins} times in {secs} s"


# ---- correctness from threads ------------------------------------------------------------------


def _jobs():
    rng = rng_for("thread-jobs")
    jobs = []
    for i in range(40):
        dtype = [np.float32, np.uint8, np.uint16][i % 3]
        src = make_image(rng, (17 + i % 5, 29 + i % 7, 1 + i % 3), dtype)
        op = i % 5
        if op == 0:
            k = rng.uniform(-1, 1, (3 + i % 4, 5)).astype(np.float32)
            f = (lambda s, k=k, **kw: lumen.filter2d(s, k, border="reflect101", **kw))
        elif op == 1:
            f = (lambda s, **kw: lumen.gaussian_blur(s, 1.5, border="wrap", **kw))
        elif op == 2:
            f = (lambda s, **kw: lumen.box_blur(s, (3, 4), border="replicate", **kw))
        elif op == 3:
            k = rng.uniform(-1, 1, (21, 21)).astype(np.float32)
            f = (lambda s, k=k, **kw: lumen.filter2d(s, k, method="fft", **kw))
        else:
            f = (lambda s, **kw: lumen.gaussian_blur(s, 3.0, precision="fast", **kw))
        jobs.append((f, src))
    return jobs


@pytest.mark.parametrize("shared", [True, False], ids=["shared-context", "default-contexts"])
def test_threads_give_serial_results(shared):
    ctx = lumen.Context() if shared else None
    jobs = _jobs()
    kw = {"context": ctx} if shared else {}
    want = [f(s, **kw) for f, s in jobs]
    errors = []

    def work(tid):
        try:
            for rep in range(3):
                for j in range(tid, len(jobs), 2) if tid < 2 else range(len(jobs)):
                    f, s = jobs[j]
                    got = f(s, **kw)
                    if not np.array_equal(got, want[j]):
                        errors.append(f"thread {tid} job {j} rep {rep}: differs")
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(f"thread {tid}: {e!r}")

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "a thread did not finish in 120 s"
    assert not errors, errors[:5]


def test_last_run_is_per_thread():
    src = make_image(rng_for("last-run"), (40, 50), np.float32)
    k = make_image(rng_for("last-run-k"), (15, 15), np.float32)
    barrier = threading.Barrier(2)
    seen = {}

    def work(method):
        for _ in range(30):
            lumen.filter2d(src, k, method=method)
            barrier.wait(10)        # the other thread has also just finished a call
            seen.setdefault(method, set()).add(lumen.last_run()["method"])
            barrier.wait(10)

    ts = [threading.Thread(target=work, args=(m,)) for m in ("direct", "fft")]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert seen == {"direct": {"direct"}, "fft": {"fft"}}, seen


# ---- leaks -------------------------------------------------------------------------------------


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


S32 = make_image(rng_for("leak-f32"), (16, 16, 3), np.float32)
S8 = make_image(rng_for("leak-u8"), (16, 16), np.uint8)
K = np.full((3, 3), 1 / 9, np.float32)
OUT = np.empty_like(S32)
CTX = lumen.Context(threads=1)


class DLOnly:
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCuda:
    def __dlpack__(self, stream=None):
        raise AssertionError("must not be exported")

    def __dlpack_device__(self):
        return (2, 0)


def _expect(exc, fn):
    try:
        fn()
    except exc:
        return
    raise AssertionError(f"{fn} did not raise {exc}")


LEAK_CALLS = {
    "filter2d": lambda: lumen.filter2d(S32, K),
    "filter2d-list-kernel": lambda: lumen.filter2d(S8, [[0, 1, 0], [1, 2, 1], [0, 1, 0]]),
    "filter2d-fft": lambda: lumen.filter2d(S32, np.ones((9, 9), np.float32), method="fft"),
    "sep_filter2d": lambda: lumen.sep_filter2d(S8, [1, 2, 1], [0.25, 0.5, 0.25], anchor=(0, 2)),
    "gaussian": lambda: lumen.gaussian_blur(S32, 1.5, border="wrap"),
    "gaussian-fast": lambda: lumen.gaussian_blur(S32, 4.0, precision="fast"),
    "box": lambda: lumen.box_blur(S8, (3, 5), normalize=False),
    "dtype-out": lambda: lumen.box_blur(S8, 3, dtype=np.float32),
    "out": lambda: lumen.gaussian_blur(S32, 1.0, out=OUT),
    "in-place": lambda: lumen.box_blur(OUT, 3, out=OUT),
    "context": lambda: lumen.box_blur(S32, 3, context=CTX),
    "view": lambda: lumen.box_blur(S32[::-1, ::2, 1:], 3),
    "err-border": lambda: _expect(ValueError, lambda: lumen.box_blur(S32, 3, border="reflekt")),
    "err-dtype": lambda: _expect(TypeError, lambda: lumen.box_blur(S32.astype(np.int32), 3)),
    # float64 (a float32 copy in, a float64 result out), layouts and SciPy's Gaussian spellings
    "f64": lambda: lumen.box_blur(S32.astype(np.float64), 3),
    "f64-out": lambda: lumen.gaussian_blur(S32, 1.0, out=np.empty(S32.shape, np.float64)),
    "layout-chw": lambda: lumen.box_blur(S32.transpose(2, 0, 1), 3, layout="chw"),
    "scipy-forms": lambda: lumen.gaussian_blur(S32, (1.0, 2.0), mode="constant", cval=0.5),
    "err-layout": lambda: _expect(ValueError, lambda: lumen.box_blur(S32.transpose(2, 0, 1), 3)),
    "err-mode": lambda: _expect(ValueError, lambda: lumen.gaussian_blur(S32, 1.0, mode="x")),
    "err-kernel-nan": lambda: _expect(ValueError, lambda: lumen.filter2d(S32, [[np.nan]])),
    "err-sigma": lambda: _expect(ValueError, lambda: lumen.gaussian_blur(S32, -1.0)),
    "err-out-shape": lambda: _expect(ValueError, lambda: lumen.box_blur(S32, 3, out=S8)),
    "err-read": lambda: _expect(OSError, lambda: lumen.read_image("/nonexistent/x.png")),
    "err-cuda": lambda: _expect(ValueError, lambda: lumen.box_blur(FakeCuda(), 3)),
    "torch-fresh-input": lambda: lumen.box_blur(torch.rand(64, 64), 3),
    "torch-out": lambda: lumen.box_blur(S32, 3, out=torch.empty(16, 16, 3)),
    "torch-err-dtype": lambda: _expect(TypeError, lambda: lumen.box_blur(
        torch.zeros(64, 64, dtype=torch.float64), 3)),
    "dlpack-numpy": lambda: lumen.box_blur(DLOnly(np.empty((64, 64), np.float32)), 3),
    "last_run": lambda: lumen.last_run(),
    "devices": lambda: (lumen.devices(), lumen.device_info()),
    "gaussian_kernel": lambda: lumen.gaussian_kernel(31, 5.0),
}


@pytest.mark.parametrize("name", list(LEAK_CALLS))
def test_no_rss_growth(name):
    fn = LEAK_CALLS[name]
    for _ in range(500):
        fn()
    before = rss()
    for _ in range(10_000):
        fn()
    grown = rss() - before
    assert grown <= tol.PY_RSS_GROWTH_BYTES, (
        f"{name}: resident set grew by {grown / 2**20:.2f} MiB over 10 000 calls "
        f"({grown / 10_000:.0f} bytes per call; limit {tol.PY_RSS_GROWTH_BYTES / 2**20} MiB)")


def test_no_rss_growth_contexts_and_files(tmp_path):
    """Contexts and image files: fewer calls (each is slower), same limit."""
    p = str(tmp_path / "x.npy")
    a = make_image(rng_for("leak-io"), (32, 32), np.uint16)

    def once():
        c = lumen.Context(threads=1)
        lumen.box_blur(S8, 3, context=c)
        del c
        lumen.write_image(p, a)
        lumen.read_image(p)

    for _ in range(200):
        once()
    before = rss()
    for _ in range(3000):
        once()
    grown = rss() - before
    assert grown <= tol.PY_RSS_GROWTH_BYTES, f"grew by {grown / 2**20:.2f} MiB over 3000 rounds"


def _refcounts(objs):
    return [sys.getrefcount(o) for o in objs]


def test_refcounts_unchanged():
    """A leaked (or stolen) reference per call shows as a count that moves by 100."""
    src = make_image(rng_for("ref"), (12, 14, 3), np.float32)
    u8 = make_image(rng_for("ref8"), (12, 14), np.uint8)
    k = np.ones((3, 3), np.float32) / 9
    kx = np.array([0.25, 0.5, 0.25], np.float32)
    out = np.empty_like(src)
    ctx = lumen.Context()
    border = "".join(["re", "flect101"])   # not interned: its count is ours
    t = torch.rand(12, 14, 3)
    dl_arr = np.ones((12, 14), np.float32)
    dl = DLOnly(dl_arr)
    bad = src.astype(np.int32)
    f64, out64 = src.astype(np.float64), np.empty(src.shape, np.float64)
    chw = np.ascontiguousarray(src.transpose(2, 0, 1))
    sigma, mode = (1.0, 2.0), "".join(["con", "stant"])
    descrs = [np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.uint16)]
    objs = [src, u8, k, kx, out, ctx, border, t, dl_arr, dl, bad, f64, out64, chw, sigma,
            mode] + descrs
    names = ["src", "u8", "kernel", "kx", "out", "ctx", "border", "tensor", "dl array",
             "dl wrapper", "i32 src", "f64 src", "f64 out", "chw", "sigma pair", "mode",
             "dtype f32", "dtype u8", "dtype u16"]

    def calls():
        lumen.filter2d(src, k, border=border, context=ctx)
        lumen.sep_filter2d(u8, kx, kx, border=border)
        lumen.gaussian_blur(src, 1.0, out=out, context=ctx)
        lumen.box_blur(u8, 3, dtype=np.float32)
        lumen.box_blur(out, 3, out=out)
        lumen.box_blur(t, 3, out=t)
        lumen.box_blur(dl, 3)
        _expect(TypeError, lambda: lumen.box_blur(bad, 3, border=border))
        lumen.box_blur(f64, 3, out=out64)
        lumen.box_blur(f64, 3, context=ctx)
        lumen.gaussian_blur(chw, sigma, layout="chw", mode=mode, cval=0.5)
        lumen._lumen._op_call("gaussian_blur", f64, sigma, mode=mode, out=out64)
        _expect(ValueError, lambda: lumen.box_blur(chw, 3))
        _expect(ValueError, lambda: lumen.gaussian_blur(src, sigma, mode=mode, border=border))
        _expect(ValueError, lambda: lumen.filter2d(src, k, border="reflekt", context=ctx))
        _expect(ValueError, lambda: lumen.box_blur(src, 3, out=u8))
        _expect(ValueError, lambda: lumen.filter2d(src, k, anchor=(5, 5)))

    calls()
    before = _refcounts(objs)
    for _ in range(100):
        calls()
    after = _refcounts(objs)
    moved = {n: (b, a) for n, b, a in zip(names, before, after) if a != b}
    assert not moved, f"reference counts moved over 100 rounds (before, after): {moved}"


@pytest.mark.parametrize("case", ["new", "out", "dtype", "torch-out"])
def test_result_refcount(case):
    src = make_image(rng_for("ref-res"), (12, 14, 3), np.float32)
    if case == "new":
        r = lumen.gaussian_blur(src, 1.0)
        assert sys.getrefcount(r) == 2, "a new result carries an extra reference"
        assert r.base is None or sys.getrefcount(r.base) == 2
    elif case == "dtype":
        r = lumen.gaussian_blur(src, 1.0, dtype=np.uint8)
        assert sys.getrefcount(r) == 2
    elif case == "out":
        out = np.empty_like(src)
        n0 = sys.getrefcount(out)
        r = lumen.gaussian_blur(src, 1.0, out=out)
        assert r is out and sys.getrefcount(out) == n0 + 1
        del r
        assert sys.getrefcount(out) == n0
    else:
        out = torch.empty(12, 14, 3)
        n0 = sys.getrefcount(out)
        r = lumen.gaussian_blur(src, 1.0, out=out)
        assert r is out and sys.getrefcount(out) == n0 + 1
        del r
        assert sys.getrefcount(out) == n0


# ---- the thread count never changes direct / separable results -----------------------------------


_KX = np.array([0.1, -0.3, 0.7, 0.2, 0.05, 0.25], np.float32)
_KY = np.array([0.3, 0.5, -0.1, 0.3], np.float32)
_SYM11 = np.array([0.02, 0.05, 0.08, 0.11, 0.13, 0.22, 0.13, 0.11, 0.08, 0.05, 0.02], np.float32)
_KD = make_image(rng_for("det-k"), (5, 7), np.float32, -1, 1)
DETERMINISTIC = {
    "gaussian-exact-separable": lambda s, c: lumen.gaussian_blur(s, 1.7, method="separable",
                                                                 context=c),
    "gaussian-sigma5": lambda s, c: lumen.gaussian_blur(s, 5.0, sigma_y=2.0, method="separable",
                                                        context=c),
    "sep_filter2d-symmetric": lambda s, c: lumen.sep_filter2d(
        s, [0.2, 0.6, 0.2], [0.13, 0.21, 0.32, 0.21, 0.13], method="separable", context=c),
    "sep_filter2d": lambda s, c: lumen.sep_filter2d(s, _KX, _KY, method="separable", context=c),
    "sep_filter2d-symmetric-11": lambda s, c: lumen.sep_filter2d(s, _SYM11[2:-2], _SYM11,
                                                                 method="separable", context=c),
    "filter2d-direct": lambda s, c: lumen.filter2d(s, _KD, method="direct", context=c),
    "filter2d-rank1": lambda s, c: lumen.filter2d(s, np.outer(_KY, _KX), method="separable",
                                                  context=c),
    "box": lambda s, c: lumen.box_blur(s, (5, 3), context=c),
    "gaussian-fast": lambda s, c: lumen.gaussian_blur(s, 4.0, precision="fast", context=c),
}


@pytest.mark.parametrize("shape", [(46, 62), (23, 31, 3), (2, 23, 31, 2), (200, 300)], ids=str)
@pytest.mark.parametrize("op", list(DETERMINISTIC))
def test_same_bits_any_thread_count(op, shape):
    """docs/semantics.md: 'The direct and separable paths give the same bits for any thread
    count' (only the FFT's tile size may change its last bits)."""
    src = make_image(rng_for("det", op, shape), shape, np.float32)
    fn = DETERMINISTIC[op]
    want = fn(src, lumen.Context(threads=1))
    for n in (2, 3, 4):
        got = fn(src, lumen.Context(threads=n))
        diff = got != want
        assert not diff.any(), (
            f"{op} {shape}: threads={n} differs from threads=1 at {int(diff.sum())} pixels "
            f"(max |diff| {float(np.abs(got - want).max()):.3g}; first at "
            f"{tuple(int(i) for i in np.argwhere(diff)[0])}; method {lumen.last_run()['method']})")
