"""halo_y / halo_x (lumen_halo): src's margins are read as the neighbours of the pixels inside
them but not filtered, and the result equals the matching region of src filtered whole.

The whole-image call is the reference: direct, separable and every integer result must be the
same bits (the same taps are summed in the same order, only the output window moved); FFT
results agree within the f32 tolerance (the tiles fall elsewhere; f16 results one rounding to
f16 more) and integer FFT results within one level (a value that close to a .5 tie may round the other way). Every border mode,
odd and even kernels, off-centre anchors, convolution, 1 and 3 threads (row bands), the
scalar reference (simd=False), the CPU kernels' layouts (interleaved, planar, batches).
"""

import subprocess

import numpy as np
import pytest

import lumen
from tolerances import HALF_STORE_REL, assert_f32_close, f32_atol

BORDERS = ["reflect", "reflect101", "replicate", "constant", "wrap"]
HALOS = [((0, 0), (0, 0)), ((3, 5), (2, 6)), ((1, 0), (0, 9)), ((11, 11), (13, 13))]


def image(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random(shape)
    if dtype == np.uint8:
        return (a * 255).astype(np.uint8)
    return a.astype(dtype)


def region(full, hy, hx, layout):
    """full less the margins hy = (top, bottom), hx = (left, right), on layout's H and W."""
    h_axis = {"hwc": 0, "chw": 1, "nhwc": 1}[layout]
    idx = [slice(None)] * full.ndim
    idx[h_axis] = slice(hy[0], full.shape[h_axis] - hy[1])
    idx[h_axis + 1] = slice(hx[0], full.shape[h_axis + 1] - hx[1])
    return full[tuple(idx)]


def check(got, want, src, method, ksum, what):
    if method == "fft":
        if got.dtype == np.uint8:
            assert np.abs(got.astype(int) - want.astype(int)).max() <= 1, what
        else:  # f16: the f32 sums' tolerance, and one rounding of the result to f16 apart
            half = HALF_STORE_REL.get(np.dtype(got.dtype).name, 0.0) * 2 * np.abs(want).max()
            assert_f32_close(got, want, f32_atol(src, ksum) * 4 + half, what)
    else:
        assert got.dtype == want.dtype and np.array_equal(got, want), what


def contexts():
    return [("threads1", lumen.Context(threads=1)), ("threads3", lumen.Context(threads=3)),
            ("reference", lumen.Context(threads=2, simd=False))]


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("method", ["direct", "fft"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.float16])
def test_filter2d_halo_equals_the_region_of_the_whole(border, method, dtype):
    rng = np.random.default_rng(1)
    for layout, shape in (("hwc", (41, 57, 3)), ("chw", (2, 38, 45)), ("nhwc", (2, 30, 33, 1))):
        a = image(shape, dtype)
        for kshape, anchor, convolve in (((5, 4), None, False), ((3, 7), (5, 0), True),
                                         ((6, 6), (1, 4), False)):
            k = (rng.random(kshape) - 0.3).astype(np.float32)
            for name, ctx in contexts():
                if method == "fft" and name == "reference":
                    continue  # the reference has no FFT of its own: it defines it directly
                kw = dict(border=border, border_value=0.25, anchor=anchor, convolve=convolve,
                          method=method, layout=layout, context=ctx)
                full = lumen.filter2d(a, k, **kw)
                for hy, hx in HALOS:
                    got = lumen.filter2d(a, k, halo_y=hy, halo_x=hx, **kw)
                    check(got, region(full, hy, hx, layout), a, method, np.abs(k).sum(),
                          f"{layout} k{kshape} {name} halo {hy} {hx}")


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.uint16])
def test_sep_filter2d_and_gaussian_halo(border, dtype):
    a = image((53, 47, 3), dtype, seed=2)
    kx = np.array([1, 4, 6, 4, 1, 2], np.float32) / 18
    ky = np.array([-1, 2, 5], np.float32) / 6
    for name, ctx in contexts():
        for hy, hx in HALOS:
            kw = dict(border=border, border_value=7, anchor=(4, 0), context=ctx)
            full = lumen.sep_filter2d(a, kx, ky, **kw)
            got = lumen.sep_filter2d(a, kx, ky, halo_y=hy, halo_x=hx, **kw)
            check(got, region(full, hy, hx, "hwc"), a, "separable", 1, f"sep {name} {hy} {hx}")
            full = lumen.gaussian_blur(a, 2.5, border=border, context=ctx)
            got = lumen.gaussian_blur(a, 2.5, border=border, halo_y=hy, halo_x=hx, context=ctx)
            check(got, region(full, hy, hx, "hwc"), a, "separable", 1, f"gauss {name} {hy} {hx}")


def test_gaussian_fft_halo():
    a = image((300, 260), np.float32, seed=3)
    full = lumen.gaussian_blur(a, 12.0, method="fft", border="reflect101")
    got = lumen.gaussian_blur(a, 12.0, method="fft", border="reflect101", halo_y=(40, 30),
                              halo_x=(0, 75))
    assert_f32_close(got, full[40:270, 0:185], f32_atol(a) * 4, "gaussian fft halo")


def test_halo_into_a_view_of_a_larger_array():
    """The use it exists for: a block with its neighbours' pixels, written into its own region
    of the whole result (lumen.dask's out=)."""
    a = image((96, 128), np.float32, seed=4)
    k = image((5, 5), np.float32, seed=5)
    whole = lumen.filter2d(a, k, border="wrap")
    out = np.full_like(a, np.nan)
    for y0, x0 in ((0, 0), (0, 64), (48, 0), (48, 64)):
        top, left = min(y0, 2), min(x0, 2)
        bottom, right = min(96 - y0 - 48, 2), min(128 - x0 - 64, 2)
        block = a[y0 - top:y0 + 48 + bottom, x0 - left:x0 + 64 + right]
        lumen.filter2d(block, k, border="wrap", halo_y=(top, bottom), halo_x=(left, right),
                       out=out[y0:y0 + 48, x0:x0 + 64])
    # blocks at the image's edges apply the border themselves: only wrap, whose border reads
    # the opposite side, differs there, so compare the interior (2 pixels in) only
    assert np.array_equal(out[2:-2, 2:-2], whole[2:-2, 2:-2])


def test_halo_errors_name_the_argument():
    a = image((20, 30), np.float32)
    k = np.ones((3, 3), np.float32)
    with pytest.raises(lumen.ArgumentError, match="halo"):
        lumen.filter2d(a, k, halo_y=(-1, 0))
    with pytest.raises(lumen.ArgumentError, match="halo.*leave nothing"):
        lumen.filter2d(a, k, halo_x=(15, 15))
    with pytest.raises(lumen.ArgumentError, match="out"):
        lumen.filter2d(a, k, halo_y=2, out=np.empty((20, 30), np.float32))
    with pytest.raises(lumen.ArgumentError, match="halo.*fast"):
        lumen.gaussian_blur(a, 2.0, precision="fast", halo_y=1)
    # with the right shape it runs
    assert lumen.filter2d(a, k, halo_y=2, out=np.empty((16, 30), np.float32)).shape == (16, 30)


def test_halo_method_query_and_shape():
    a = np.zeros((500, 400), np.float32)
    assert lumen.filter2d(a, np.ones((3, 3), np.float32), halo_y=(1, 2), halo_x=3).shape == \
        (497, 394)
    k = np.random.default_rng(6).random((61, 61)).astype(np.float32)  # rank > 1
    assert lumen.choose_method("filter2d", a, k, halo_y=30,
                               halo_x=30) == "fft"


def test_cli_halo(lumen_bin, tmp_path):
    """--halo-y / --halo-x: the output file has src's shape less the margins and the region's
    values; margins that leave nothing are a usage error (2) and no file is written."""
    from conftest import run_cli
    a = image((40, 50), np.float32, seed=7)
    k = image((3, 4), np.float32, seed=8)
    np.save(tmp_path / "in.npy", a)
    np.save(tmp_path / "k.npy", k)
    r = run_cli(lumen_bin, "filter2d", tmp_path / "in.npy", tmp_path / "k.npy",
                tmp_path / "out.npy", "--halo-y", "3,2", "--halo-x", "4", "--border", "wrap")
    assert r.returncode == 0, r.stderr
    want = lumen.filter2d(a, k, border="wrap")[3:38, 4:46]
    assert np.array_equal(np.load(tmp_path / "out.npy"), want)
    r = run_cli(lumen_bin, "filter2d", tmp_path / "in.npy", tmp_path / "k.npy",
                tmp_path / "bad.npy", "--halo-y", "30,20")
    assert r.returncode == 2 and "halo" in r.stderr and not (tmp_path / "bad.npy").exists()


def test_cli_halo_on_a_shared_fft_tile(lumen_bin, tmp_path):
    """The FFT's shared tiles (one tile on all threads, test_fft_reference's one-tile case)
    with a halo: the tiles cover dst, their windows map into src."""
    from conftest import run_cli
    a = image((251 + 30, 311 + 25), np.float32, seed=9)
    k = (image((201, 201), np.float32, seed=10) - 0.5) / 100
    np.save(tmp_path / "in.npy", a)
    np.save(tmp_path / "k.npy", k)
    full = lumen.filter2d(a, k, method="fft", border="reflect101")
    r = run_cli(lumen_bin, "filter2d", tmp_path / "in.npy", tmp_path / "k.npy",
                tmp_path / "out.npy", "--method", "fft", "--border", "reflect101", "--threads",
                2, "--halo-y", "20,10", "--halo-x", "5,20", env={"LUMEN_LOG": "debug"})
    assert r.returncode == 0, r.stderr
    tiling = [line for line in r.stderr.splitlines() if "per tile" in line]
    linked = "fftw3f_omp" in subprocess.run(["ldd", lumen_bin], capture_output=True,
                                             text=True).stdout
    assert tiling and ("2 thread(s) per tile" in tiling[-1] or not linked), r.stderr
    assert_f32_close(np.load(tmp_path / "out.npy"), full[20:271, 5:316],
                     f32_atol(a, np.abs(k).sum()) * 4, "halo on the FFT's tiles")
