"""`--method fft` (the tiled FFT path) against the peers: cv2.filter2D, scipy.ndimage.convolve,
cv2.GaussianBlur, and float64 references built on cv2.copyMakeBorder (conftest.pad).

Kernels here are big (31x31, 45w x 20h, larger than the image), so two peer facts matter
(docs/reference-tests.md): cv2.filter2D itself switches to a DFT from 130 taps and then breaks
exact .5 ties either way on integer images, and cv2 filters reject BORDER_WRAP. So integer
results must be the correctly rounded float64 value at every pixel (tolerances.py's int rule;
no tie window at all for dyadic kernels, whose arithmetic is exact) and equal cv2 only where
cv2 is correctly rounded (test_reference.compare_int); wrap and non-zero constant borders are
judged by the float64 reference. f32 uses the one f32 rule. All tolerances: tolerances.py.
"""

import subprocess

import cv2
import numpy as np
import pytest
import scipy.ndimage as ndi

import tolerances as tol
from conftest import (BORDERS, CV2_BORDER, CV2_BORDERS, DTYPES, SCIPY_MODE, dyadic_kernel,
                      make_image, ref_convolve, ref_correlate, ref_gaussian, rng_for, run_cli)
from test_reference import (compare_f32, compare_int, cv2_anchor, cv2_gaussian,
                            scipy_reflect_bug)

# name: (kh, kw, anchor (x, y) or None, image (h, w)); the first two are smaller than their
# image, the last two larger than it in both directions.
KERNELS = {
    "31x31-a3,27": (31, 31, (3, 27), (64, 80)),
    "w45h20-a40,2": (20, 45, (40, 2), (64, 80)),
    "w61h50-a10,45": (50, 61, (10, 45), (29, 37)),
    "31x31-on-23x19": (31, 31, None, (19, 23)),
}

#: Sizes and sigmas for blur: sigma 5 (41 taps) and 12 (97 taps, bigger than the image's height).
BLUR_SIGMAS = [5.0, 12.0]
BLUR_SHAPE = (90, 130)


# ---- the CLI must have the FFT method --------------------------------------------------------


def _help_mentions_fft(binary, cmd):
    r = run_cli(binary, cmd, "--help")
    return r.returncode == 0 and "fft" in r.stdout


@pytest.fixture(scope="module")
def fft_filter(lumen_bin):
    if not _help_mentions_fft(lumen_bin, "filter"):
        pytest.skip("`lumen filter --help` does not offer --method fft: this CLI predates the FFT "
                    "method")


@pytest.fixture(scope="module")
def fft_blur(lumen_bin):
    if not _help_mentions_fft(lumen_bin, "blur"):
        pytest.skip("`lumen blur --help` does not offer --method fft: this CLI predates the FFT "
                    "method")


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """FFTW wisdom and the cost model go to a temporary $XDG_CACHE_HOME, not ~/.cache."""
    cache = tmp_path_factory.getbasetemp() / "xdg-cache"
    cache.mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))


def blur_fft(lumen, src, sigma, border, value=None):
    extra = ["--sigma", repr(float(sigma)), "--method", "fft"]
    return lumen._op("blur", src, lumen._common(extra, border=border, value=value))


def image_for(rng, shape, channels, dtype):
    return make_image(rng, shape if channels == 1 else shape + (channels,), dtype)


def dense_dyadic_kernel(rng, kh, kw, denom=256):
    """Taps that are multiples of 1/denom summing to exactly 1, about 3/4 * denom of them
    non-zero (spread over the whole kernel): every output is a long exact sum, and integer
    images hit exact .5 ties (about one pixel in denom)."""
    k = np.zeros(kh * kw, np.float64)
    k[rng.choice(kh * kw, size=min(kh * kw, 3 * denom // 4), replace=False)] = 1.0
    k = k.reshape(kh, kw)
    k[kh // 2, kw // 2] += denom - k.sum()
    return (k / denom).astype(np.float32)


# ---- filter --method fft vs cv2.filter2D -----------------------------------------------------


@pytest.mark.parametrize("kname", list(KERNELS))
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_filter_fft_vs_cv2(fft_filter, lumen, dname, channels, border, kname):
    dtype = DTYPES[dname]
    kh, kw, anchor, shape = KERNELS[kname]
    rng = rng_for("fft-filter", dname, channels, border, kname)
    src = image_for(rng, shape, channels, dtype)
    if dtype == np.float32:
        k = rng.uniform(-1.0, 1.0, (kh, kw)).astype(np.float32)
    else:
        k = dyadic_kernel(rng, kh, kw)
    value = 0.0 if border == "constant" else None  # cv2's constant is always 0
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value, method="fft")
    peer = cv2.filter2D(src, -1, k, anchor=cv2_anchor(anchor), borderType=CV2_BORDER[border])
    what = f"filter --method fft {dname} c{channels} {border} {kname}"

    def ref():
        return ref_correlate(src, k, anchor, border, 0.0)

    if dtype == np.float32:
        compare_f32(got, peer, ref, tol.f32_atol(src, np.abs(k).sum()), what)
    else:
        # dyadic kernel: one right answer, ties included; cv2 (a DFT here) only where it has it
        compare_int(got, peer, ref(), dtype, tol.EXACT, what)


@pytest.mark.parametrize("kname", list(KERNELS))
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dname", ["u8", "u16"])
def test_filter_fft_int_dense_kernels(fft_filter, lumen, dname, border, kname):
    """Dense kernels on integer images: dyadic ones (multiples of 1/256) must give the exact
    value rounded to even at every pixel, ties included; non-dyadic ones the correctly rounded
    float64 value, either neighbour only within the tie window."""
    dtype = DTYPES[dname]
    kh, kw, anchor, shape = KERNELS[kname]
    rng = rng_for("fft-int-dense", dname, border, kname)
    src = make_image(rng, shape, dtype)
    value = {np.uint8: 201.0, np.uint16: 40000.0}[dtype] if border == "constant" else None
    kd = dense_dyadic_kernel(rng, kh, kw)
    got = lumen.filter(src, kd, anchor=anchor, border=border, value=value, method="fft")
    exact = ref_correlate(src, kd, anchor, border, value or 0.0)
    ties = int((np.abs(exact - np.floor(exact) - 0.5) == 0).sum())
    if src.size >= 64 * 80:  # about 20 expected; small images may have none
        assert ties > 0, "premise: the dyadic case should produce exact .5 ties"
    tol.assert_int_exact(got, exact, dtype, tol.EXACT,
                         f"filter --method fft {dname} {border} {kname} dyadic ({ties} ties)")
    kr = rng.uniform(-0.3, 1.0, (kh, kw))
    kr = (kr / kr.sum()).astype(np.float32)
    got = lumen.filter(src, kr, anchor=anchor, border=border, value=value, method="fft")
    exact = ref_correlate(src, kr, anchor, border, value or 0.0)
    tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src, np.abs(kr).sum()),
                         f"filter --method fft {dname} {border} {kname} random kernel")


@pytest.mark.parametrize("kname", list(KERNELS))
@pytest.mark.parametrize("border,value", [("wrap", None), ("constant", "nonzero")])
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("dname", ["f32", "u8", "u16"])
def test_filter_fft_wrap_and_value(fft_filter, lumen, dname, channels, border, value, kname):
    """No cv2 peer (wrap is rejected, its constant is 0): the float64 reference."""
    dtype = DTYPES[dname]
    kh, kw, anchor, shape = KERNELS[kname]
    rng = rng_for("fft-wrap-value", dname, channels, border, kname)
    src = image_for(rng, shape, channels, dtype)
    if value is not None:
        value = {np.float32: -2.5, np.uint8: 200.0, np.uint16: 40000.0}[dtype]
    k = rng.uniform(-1.0, 1.0, (kh, kw)).astype(np.float32) if dtype == np.float32 \
        else dyadic_kernel(rng, kh, kw)
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value, method="fft")
    exact = ref_correlate(src, k, anchor, border, value or 0.0)
    what = f"filter --method fft {dname} c{channels} {border} value={value} {kname}"
    if dtype == np.float32:
        tol.assert_f32_close(got, exact, tol.f32_atol(src, np.abs(k).sum(), [value or 0.0]),
                             what + " vs float64 ref")
    else:
        tol.assert_int_exact(got, exact, dtype, tol.EXACT, what + " vs float64 ref")


# ---- filter --method fft --convolve vs scipy.ndimage.convolve ---------------------------------


@pytest.mark.parametrize("kname", ["31x31-a3,27", "w45h20-a40,2", "w61h50-a10,45"])
@pytest.mark.parametrize("border", BORDERS)
def test_filter_fft_convolve_vs_scipy(fft_filter, lumen, border, kname):
    """scipy's origin is anchor - k//2 for convolve too (docs/reference-tests.md)."""
    kh, kw, anchor, shape = KERNELS[kname]
    rng = rng_for("fft-scipy", border, kname)
    src = make_image(rng, shape, np.float32, -1.0, 1.0)
    k = rng.uniform(-1, 1, (kh, kw)).astype(np.float32)
    value = -0.625 if border == "constant" else None
    got = lumen.filter(src, k, anchor=anchor, border=border, value=value, convolve=True,
                       method="fft")
    ax, ay = anchor
    ref = ref_convolve(src, k, anchor, border, -0.625)
    atol = tol.f32_atol(src, np.abs(k).sum(), [-0.625])
    what = f"filter --method fft --convolve {border} {kname}"
    tol.assert_f32_close(got, ref, atol, what + " vs float64 ref")
    if border == "reflect" and scipy_reflect_bug(shape, kh, kw, anchor, True):
        return  # scipy is wrong there (test_peer_facts.py); the float64 ref decided above
    peer = ndi.convolve(src.astype(np.float64), k.astype(np.float64), mode=SCIPY_MODE[border],
                        cval=-0.625, origin=(ay - kh // 2, ax - kw // 2))
    tol.assert_f32_close(got, peer, atol, what + " vs scipy")


# ---- blur --method fft vs cv2.GaussianBlur -----------------------------------------------------


@pytest.mark.parametrize("sigma", BLUR_SIGMAS)
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("channels", [1, 3])
def test_blur_fft_vs_cv2(fft_blur, lumen, channels, border, sigma):
    rng = rng_for("fft-blur", channels, border, sigma)
    src = image_for(rng, BLUR_SHAPE, channels, np.float32)
    value = 0.0 if border == "constant" else None
    got = blur_fft(lumen, src, sigma, border, value)
    peer = cv2_gaussian(src, border, sigma=sigma)

    def ref():
        return ref_gaussian(src, np.float32, sigma=sigma, border=border)

    compare_f32(got, peer, ref, tol.f32_atol(src), f"blur --method fft f32 c{channels} {border} "
                f"sigma={sigma}")


@pytest.mark.parametrize("sigma", BLUR_SIGMAS)
@pytest.mark.parametrize("border,value", [("wrap", None), ("constant", 0.375)])
def test_blur_fft_wrap_and_value(fft_blur, lumen, border, value, sigma):
    src = make_image(rng_for("fft-blur-wv", border, sigma), BLUR_SHAPE, np.float32)
    got = blur_fft(lumen, src, sigma, border, value)
    exact = ref_gaussian(src, np.float32, sigma=sigma, border=border, value=value or 0.0)
    tol.assert_f32_close(got, exact, tol.f32_atol(src, 1.0, [value or 0.0]),
                         f"blur --method fft f32 {border} value={value} sigma={sigma} vs float64")


@pytest.mark.parametrize("sigma", BLUR_SIGMAS)
@pytest.mark.parametrize("border", ["reflect101", "wrap"])
@pytest.mark.parametrize("dname", ["u8", "u16"])
def test_blur_fft_int_exact(fft_blur, lumen, dname, border, sigma):
    """cv2.GaussianBlur on integers is fixed point (tolerances.py): judge by the float64 value."""
    dtype = DTYPES[dname]
    src = make_image(rng_for("fft-blur-int", dname, border, sigma), BLUR_SHAPE, dtype)
    got = blur_fft(lumen, src, sigma, border)
    exact = ref_gaussian(src, dtype, sigma=sigma, border=border)
    tol.assert_int_exact(got, exact, dtype, tol.int_tie_window(src),
                         f"blur --method fft {dname} {border} sigma={sigma} vs exact")


# ---- threads: one tile shared by them, or tiles spread over them -------------------------------

#: image (h, w) and square kernel size: with 2 threads the first is one tile run by both threads
#: together (FFTW's threads, the loads and stores split by rows: tiles fewer than threads), the
#: second several tiles spread over them (docs/large-kernels.md). Odd sizes, partial tiles.
THREAD_CASES = {"one-tile": ((251, 311), 201), "many-tiles": ((613, 901), 17)}


def _links_fftw_omp(binary):
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    return "fftw3f_omp" in r.stdout


@pytest.mark.parametrize("case", list(THREAD_CASES))
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("border", CV2_BORDERS)
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("dname", ["f32", "u8"])
def test_filter_fft_threads_vs_cv2(fft_filter, lumen_bin, tmp_path, dname, channels, border,
                                   threads, case):
    """Each thread count and tiling against cv2.filter2D and the float64 reference; the debug
    log's tiling line shows which way the tiles ran (shared by 2 threads for one-tile whenever
    FFTW's OpenMP threads are linked, one thread per tile for many-tiles and for 1 thread)."""
    dtype = DTYPES[dname]
    shape, ks = THREAD_CASES[case]
    rng = rng_for("fft-threads", dname, channels, border, case)
    src = image_for(rng, shape, channels, dtype)
    k = rng.uniform(-1.0, 1.0, (ks, ks)).astype(np.float32) if dtype == np.float32 \
        else dyadic_kernel(rng, ks, ks)
    np.save(tmp_path / "in.npy", src)
    np.save(tmp_path / "k.npy", k)
    r = run_cli(lumen_bin, "filter", tmp_path / "in.npy", tmp_path / "out.npy", "--kernel",
                tmp_path / "k.npy", "--method", "fft", "--border", border, "--threads", threads,
                env={"LUMEN_LOG": "debug"})
    assert r.returncode == 0, r.stderr
    tiling = [line for line in r.stderr.splitlines() if "per tile" in line]
    assert tiling, f"no tiling line in the debug log: {r.stderr!r}"
    shared = threads > 1 and case == "one-tile" and _links_fftw_omp(lumen_bin)
    want = f"{threads} thread(s) per tile" if shared else "1 thread(s) per tile"
    assert want in tiling[-1], f"{case}, {threads} threads: {tiling[-1]!r}, want {want!r}"
    got = np.load(tmp_path / "out.npy")
    peer = cv2.filter2D(src, -1, k, borderType=CV2_BORDER[border])
    what = f"filter --method fft --threads {threads} {dname} c{channels} {border} {case}"
    if dtype == np.float32:
        compare_f32(got, peer, lambda: ref_correlate(src, k, None, border, 0.0),
                    tol.f32_atol(src, np.abs(k).sum()), what)
    else:
        compare_int(got, peer, ref_correlate(src, k, None, border, 0.0), dtype, tol.EXACT, what)


# ---- the method really is the FFT; planning policy ---------------------------------------------


def _verbose(lumen_bin, tmp_path, cmd, *extra):
    src = make_image(rng_for("fft-verbose", cmd), (40, 50), np.float32)
    np.save(tmp_path / "in.npy", src)
    np.save(tmp_path / "k.npy", np.full((21, 21), 1 / 441, np.float32))
    r = run_cli(lumen_bin, cmd, tmp_path / "in.npy", tmp_path / "out.npy", *extra, "-v")
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_filter_method_fft_is_reported(fft_filter, lumen_bin, tmp_path):
    err = _verbose(lumen_bin, tmp_path, "filter", "--kernel", tmp_path / "k.npy", "--method", "fft")
    assert "method fft" in err, f"-v does not report the FFT method: {err!r}"


def test_blur_method_fft_is_reported(fft_blur, lumen_bin, tmp_path):
    err = _verbose(lumen_bin, tmp_path, "blur", "--sigma", "4", "--method", "fft")
    assert "method fft" in err, f"-v does not report the FFT method: {err!r}"


def _measure(lumen_bin, tmp_path, cache):
    rng = rng_for("fft-measure")
    src = make_image(rng, (33, 47), np.float32)
    k = rng.uniform(-1, 1, (13, 17)).astype(np.float32)
    np.save(tmp_path / "in.npy", src)
    np.save(tmp_path / "k.npy", k)
    r = run_cli(lumen_bin, "filter", tmp_path / "in.npy", tmp_path / "out.npy", "--kernel",
                tmp_path / "k.npy", "--method", "fft", "--fft-planning", "measure",
                env={"XDG_CACHE_HOME": str(cache)})
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npy")
    tol.assert_f32_close(got, ref_correlate(src, k), tol.f32_atol(src, np.abs(k).sum()),
                         "filter --method fft --fft-planning measure vs float64 ref")
    return cache / "lumen" / "fftw-wisdom-f32"


def test_filter_fft_planning_measure(fft_filter, lumen_bin, tmp_path):
    """--fft-planning measure: same answer (f32 rule), and FFTW wisdom kept in the cache folder."""
    cache = tmp_path / "cache"
    cache.mkdir()
    wisdom = _measure(lumen_bin, tmp_path, cache)
    assert wisdom.is_file() and wisdom.stat().st_size > 0, \
        f"--fft-planning measure left no FFTW wisdom at {wisdom}"


def test_fft_planning_creates_missing_xdg_cache_home(fft_filter, lumen_bin, tmp_path):
    """$XDG_CACHE_HOME set to a folder that does not exist yet (a fresh account or container):
    the XDG base directory spec says to create it (0700), as lumen creates ~/.cache when
    XDG_CACHE_HOME is unset; otherwise wisdom and the cost model are silently never kept."""
    cache = tmp_path / "not-yet" / "cache"
    wisdom = _measure(lumen_bin, tmp_path, cache)
    assert wisdom.is_file() and wisdom.stat().st_size > 0, \
        f"with XDG_CACHE_HOME={cache} (missing), --fft-planning measure kept no wisdom at {wisdom}"
