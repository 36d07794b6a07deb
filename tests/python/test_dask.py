"""lumen.dask (docs/scale-out.md): every op on a chunked dask array equals the single-machine
call on the whole image — bit for bit for the direct and separable methods and for integer
results, within the f32 tolerance (tolerances.py) for the FFT — for every border, odd and even
kernels, off-centre anchors, convolution, chunks smaller than the halo, uneven last chunks,
kernels larger than a chunk or than the image; on the threaded scheduler and on a LocalCluster
of 2 worker processes. Also map_images (atomic outputs, a killed run restarted) and a Zarr
image larger than the workers' memory limit.
"""

import itertools
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lumen
from tolerances import assert_f32_close, f32_atol

try:
    import dask
    import dask.array as da
    import distributed  # noqa: F401  (the LocalCluster tests)
    import zarr
except ImportError as e:  # make test installs them (scripts/install-deps.sh test)
    pytest.skip(f"lumen.dask needs dask, distributed and zarr (Debian: python3-dask "
                f"python3-distributed python3-zarr): {e}", allow_module_level=True)

import lumen.dask as ld  # noqa: E402

BORDERS = ("constant", "replicate", "reflect", "reflect101", "wrap")
#: (kh, kw), anchor (x, y): odd centred, even (centre kw/2, kh/2: asymmetric halo), off-centre
#: anchors at the kernel's corners, a kernel taller than the image (37 rows).
KERNELS = [((5, 5), None), ((4, 6), None), ((7, 3), (0, 6)), ((2, 9), (8, 0)),
           ((40, 3), (1, 30))]
#: chunks smaller than every halo (rechunked), uneven (last chunks 1 and 5 wide), one block
#: narrower than a 12-wide kernel (below).
CHUNKS = [(2, 3), (9, 8)]
H, W = 37, 45

rng = np.random.default_rng(16)
IMG = rng.random((H, W), np.float32)
IMG3 = rng.random((H, W, 3), np.float32)


def equal(got, want, what):
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    diff = np.argwhere(got != want)
    assert diff.size == 0, (f"{what}: {len(diff)} pixels differ, first at {diff[0].tolist()}: "
                            f"{got[tuple(diff[0])]!r} != {want[tuple(diff[0])]!r}")


def test_import_lumen_does_not_import_dask():
    code = "import sys, lumen; assert 'dask' not in sys.modules, 'lumen imported dask'"
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())


def test_overlap_depth():
    assert ld.overlap_depth(5) == (2, 2)
    assert ld.overlap_depth(4) == (2, 1)          # anchor 4 // 2 = 2: reads x-2 .. x+1
    assert ld.overlap_depth(4, convolve=True) == (1, 2)
    assert ld.overlap_depth(7, 0) == (0, 6)
    assert ld.overlap_depth(7, 6, True) == (0, 6)
    with pytest.raises(lumen.ArgumentError, match="anchor"):
        ld.overlap_depth(3, 3)


def test_fresh_blocks_start_on_huge_page_boundaries():
    """Block results of 4 MiB and more start on a 2 MiB boundary (docs/scale-out.md, "Fresh
    memory"); smaller ones are plain arrays."""
    for shape, dt in (((2048, 2048), np.float32), ((3, 1024, 1024), np.float64),
                      ((1000, 700, 3), np.uint8)):  # 16 MB, 24 MB, 2 MB
        a = ld._fresh(shape, dt)
        assert a.shape == shape and a.dtype == dt and a.flags.writeable and a.flags.c_contiguous
        if a.nbytes >= 4 << 20:
            assert a.ctypes.data % (2 << 20) == 0, (shape, hex(a.ctypes.data))
        a[...] = 1  # all of it is usable
    small = ld._fresh((100, 100), np.float32)
    assert small.shape == (100, 100) and small.base is None


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("ksize,anchor", KERNELS)
def test_filter2d_exact(border, ksize, anchor, monkeypatch):
    """Chunks that are views of one array (a padded block is then a view too) and chunks that
    are arrays of their own (a cluster's, Zarr's), put together into a padded copy, or (banded)
    with each block's interior from the chunk and its edges from thin bands (_run_banded, which
    these small chunks reach only with its halo rule relaxed)."""
    k = rng.standard_normal(ksize).astype(np.float32)
    for chunks, how in itertools.product(CHUNKS, ("views", "own arrays", "banded")):
        monkeypatch.setattr(ld, "_BAND_HALO_SHARE", 1 if how == "banded" else 64)
        x = da.from_array(IMG, chunks=chunks)
        x = x if how == "views" else x.map_blocks(np.copy)
        for convolve in (False, True):
            kw = dict(border=border, border_value=0.25, anchor=anchor, convolve=convolve,
                      method="direct")
            got = ld.filter2d(x, k, **kw).compute(scheduler="sync")
            equal(got, lumen.filter2d(IMG, k, **kw),
                  f"filter2d {ksize} anchor {anchor} convolve {convolve} chunks {chunks} {how}")


@pytest.mark.parametrize("border", BORDERS)
def test_out_is_the_whole_result(border):
    """out=: each task writes its region of a numpy array (the C halo), on the threaded and the
    synchronous scheduler; every op, odd/even kernels and anchors, chunks smaller than the
    kernel, integers, channels and a batch chunked along N."""
    k = rng.standard_normal((6, 5)).astype(np.float32)
    for chunks in CHUNKS:
        x = da.from_array(IMG, chunks=chunks)
        for sched in ("threads", "sync"):
            kw = dict(border=border, border_value=0.25, anchor=(1, 4), convolve=True,
                      method="direct")
            out = np.full(IMG.shape, np.nan, np.float32)
            assert ld.filter2d(x, k, out=out, scheduler=sched, **kw) is out
            equal(out, lumen.filter2d(IMG, k, **kw), f"filter2d out= {chunks} {sched}")
    a = (IMG3 * 255).astype(np.uint8)
    x = da.from_array(a, chunks=(10, 7, 1))
    for name, fn, args in (("gaussian", "gaussian_blur", (1.5,)), ("box", "box_blur", ((3, 6),)),
                           ("sep", "sep_filter2d", ([1, 2, 1], [1, 0, -1, 2]))):
        out = np.zeros(a.shape, np.uint8)
        getattr(ld, fn)(x, *args, border=border, out=out)
        equal(out, getattr(lumen, fn)(a, *args, border=border), f"{name} u8 out=")
    out = np.zeros(a.shape, np.float32)  # out's dtype is the result's, as for lumen's own out=
    ld.gaussian_blur(x, 2.0, border=border, out=out)
    equal(out, lumen.gaussian_blur(a, 2.0, border=border, dtype=np.float32), "u8 -> f32 out=")
    batch = np.stack([IMG3, IMG3[::-1]])
    out = np.empty_like(batch)
    ld.filter2d(da.from_array(batch, chunks=(1, 9, 11, 3)), k, border=border, out=out)
    equal(out, lumen.filter2d(batch, k, border=border), "batch out=")


def test_out_errors():
    x = da.from_array(IMG, chunks=8)
    k = np.ones((3, 3), np.float32)
    with pytest.raises(lumen.ArgumentError, match="out: expected a numpy array"):
        ld.filter2d(x, k, out=x)
    with pytest.raises(lumen.ArgumentError, match="out: shape"):
        ld.filter2d(x, k, out=np.empty((3, 3), np.float32))
    with pytest.raises(lumen.ArgumentError, match="dtype"):
        ld.filter2d(x, k, dtype=np.uint8, out=np.empty(IMG.shape, np.float32))
    ro = np.empty(IMG.shape, np.float32)
    ro.flags.writeable = False
    with pytest.raises(lumen.ArgumentError, match="read-only"):
        ld.gaussian_blur(x, 1.0, out=ro)


def test_kernel_larger_than_a_chunk():
    """A 12 x 11 kernel on 5 x 4 chunks: the blocks are merged until they are a kernel wide."""
    k = rng.random((11, 12), np.float32)
    x = da.from_array(rng.random((70, 90), np.float32), chunks=(5, 4))
    for border in BORDERS:
        got = ld.filter2d(x, k, border=border, method="direct")
        assert min(got.chunks[0]) >= 5 and len(got.chunks[1]) > 1
        equal(got.compute(scheduler="sync"),
              lumen.filter2d(x.compute(), k, border=border, method="direct"), border)


@pytest.mark.parametrize("border", BORDERS)
def test_integer_and_channels(border, monkeypatch):
    """u8 and u16 H x W x 3 images and an N x H x W x C batch chunked along N too; the channel
    axes are rechunked whole, so the blocks are arrays of their own, banded (_run_banded)."""
    monkeypatch.setattr(ld, "_BAND_HALO_SHARE", 1)
    k = rng.random((5, 4), np.float32) / 5
    for dt, scale in ((np.uint8, 255), (np.uint16, 65535)):
        a = (IMG3 * scale).astype(dt)
        x = da.from_array(a, chunks=(10, 7, 1))
        equal(ld.filter2d(x, k, border=border).compute(scheduler="threads"),
              lumen.filter2d(a, k, border=border), f"filter2d {dt.__name__}")
        equal(ld.box_blur(x, (3, 6), border=border).compute(scheduler="threads"),
              lumen.box_blur(a, (3, 6), border=border), f"box_blur {dt.__name__}")
        equal(ld.gaussian_blur(x, 1.5, border=border).compute(scheduler="threads"),
              lumen.gaussian_blur(a, 1.5, border=border), f"gaussian_blur {dt.__name__}")
    batch = np.stack([IMG3, IMG3[::-1]])
    x = da.from_array(batch, chunks=(1, 9, 11, 3))
    equal(ld.gaussian_blur(x, 2.0, sigma_y=1.0, border=border).compute(scheduler="threads"),
          lumen.gaussian_blur(batch, 2.0, sigma_y=1.0, border=border), "batch")
    chw = np.ascontiguousarray(IMG3.transpose(2, 0, 1))
    x = da.from_array(chw, chunks=(1, 8, 8))
    equal(ld.box_blur(x, (5, 2), border=border, layout="chw").compute(scheduler="threads"),
          lumen.box_blur(chw, (5, 2), border=border, layout="chw"), "chw")


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("how", ("views", "banded"))
def test_separable_gaussian_box(border, how, monkeypatch):
    monkeypatch.setattr(ld, "_BAND_HALO_SHARE", 1)
    x = da.from_array(IMG, chunks=(6, 10))
    x = x if how == "views" else x.map_blocks(np.copy)
    kw = dict(border=border, border_value=0.5)
    equal(ld.sep_filter2d(x, [1, 2, 3, 4], [1, -1, 2], anchor=(0, 2), method="separable",
                          **kw).compute(scheduler="sync"),
          lumen.sep_filter2d(IMG, [1, 2, 3, 4], [1, -1, 2], anchor=(0, 2), method="separable",
                             **kw), "sep_filter2d")
    equal(ld.sep_filter2d(x, [1, 2], [3, 1, 2, 5], convolve=True, **kw).compute(
        scheduler="sync"), lumen.sep_filter2d(IMG, [1, 2], [3, 1, 2, 5], convolve=True, **kw),
        "sep_filter2d convolve")
    for sigma, ks in ((1.3, None), ((2.0, 0.7), None), (3.0, (5, 9))):
        equal(ld.gaussian_blur(x, sigma, ksize=ks, method="separable", **kw).compute(
            scheduler="sync"),
            lumen.gaussian_blur(IMG, sigma, ksize=ks, method="separable", **kw), f"gauss {sigma}")
    equal(ld.box_blur(x, (8, 3), normalize=False, **kw).compute(scheduler="sync"),
          lumen.box_blur(IMG, (8, 3), normalize=False, **kw), "box sums")


def test_float64_dtype_and_cv2_borders():
    """float64 in (filtered in float32, widened back), dtype= out, OpenCV's border integers
    (cv2.BORDER_WRAP is 3: the periodic exchange must follow it too)."""
    a = rng.random((50, 61))
    x = da.from_array(a, chunks=(13, 17))
    for border in (3, 4, 2, "circular", "mirror"):
        equal(ld.gaussian_blur(x, 1.2, border=border).compute(scheduler="sync"),
              lumen.gaussian_blur(a, 1.2, border=border), f"float64 {border}")
        equal(ld.filter2d(x, np.ones((3, 4)) / 12, dtype="uint8", border=border).compute(
            scheduler="sync"), lumen.filter2d(a, np.ones((3, 4)) / 12, dtype="uint8",
                                              border=border), f"dtype u8 {border}")


def test_scipy_spellings():
    x = da.from_array(IMG, chunks=(7, 7))
    equal(ld.gaussian_blur(x, 1.0, mode="mirror", truncate=3.0).compute(scheduler="sync"),
          lumen.gaussian_blur(IMG, 1.0, mode="mirror", truncate=3.0), "mode/truncate")


@pytest.mark.parametrize("border", BORDERS)
def test_fft_within_tolerance(border):
    """The FFT's tiles depend on the block, so blocks agree with the whole image within the
    f32 rule only; the method is the one asked for (or auto's choice) on every block."""
    k = rng.standard_normal((13, 10)).astype(np.float32)
    x = da.from_array(IMG3, chunks=(12, 16, 3))
    got = ld.filter2d(x, k, border=border, method="fft").compute(scheduler="threads")
    want = lumen.filter2d(IMG3, k, border=border, method="fft")
    assert_f32_close(got, want, f32_atol(IMG3, np.abs(k).sum()), f"fft {border}")


def test_auto_is_resolved_once(monkeypatch):
    """method='auto' is decided once, on the client, for the whole image's shape (the C
    library's method query: nothing runs), and every block is then asked for that method by
    name; it is the method lumen runs on the whole image."""
    asked, real = [], lumen.filter2d

    def spy(b, *args, **kw):
        asked.append(kw["method"])
        return real(b, *args, **kw)

    monkeypatch.setattr(lumen, "filter2d", spy)
    k = rng.random((31, 31), np.float32)
    a = rng.random((300, 260), np.float32)
    got = ld.filter2d(da.from_array(a, chunks=(100, 90)), k).compute(scheduler="threads")
    assert len(asked) == 9 and asked.count(asked[0]) == 9, asked
    ctx = lumen.Context(threads=ld.task_threads())  # the context kind the blocks run on
    assert asked[0] == lumen.choose_method("filter2d", a, k, context=ctx) in ("direct", "fft")
    want = real(a, k, context=ctx)
    assert lumen.last_run()["method"] == asked[0]
    if asked[0] == "fft":
        assert_f32_close(got, want, f32_atol(a, np.abs(k).sum()), "auto")
    else:
        equal(got, want, "auto")


def test_conv2d_along_batch():
    x = rng.standard_normal((5, 3, 12, 13)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    for kw in (dict(padding=1), dict(stride=2, dilation=2), dict(padding="same")):
        got = ld.conv2d(da.from_array(x, chunks=(2, 1, 5, 5)), w, b, **kw)
        assert got.chunks[0] == (2, 2, 1)
        equal(got.compute(scheduler="threads"), lumen.conv2d(x, w, b, **kw), f"conv2d {kw}")
    with pytest.raises(lumen.ArgumentError):
        ld.conv2d(da.from_array(x), w[:, :2], b)
    wt = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)
    kw = dict(stride=2, padding=1, output_padding=1)
    got = ld.conv_transpose2d(da.from_array(x, chunks=(3, 3, 12, 13)), wt, None, **kw)
    equal(got.compute(scheduler="threads"), lumen.conv_transpose2d(x, wt, None, **kw),
          "conv_transpose2d")


def test_film_effects():
    a = rng.random((60, 52, 3), np.float32)
    x = da.from_array(a, chunks=(25, 20, 3))
    got = ld.bloom(x, 0.5, sigma=2.0, kappa=3.0, threshold=0.3).compute(scheduler="threads")
    want = lumen.film.bloom(a, 0.5, sigma=2.0, kappa=3.0, threshold=0.3)
    assert_f32_close(got, want, f32_atol(a), "bloom")
    batch = np.stack([a, a[::-1], a[:, ::-1]])
    x = da.from_array(batch, chunks=(1, 20, 20, 3))
    # halation convolves by FFT, whose tiles follow the thread count and the batch (one image on
    # a task's thread against the batch on all threads): within the FFT's tolerance, as every
    # FFT result of lumen.dask (module docstring)
    assert_f32_close(ld.halation(x, 0.5, psf_radius=20).compute(scheduler="threads"),
                     lumen.film.halation(batch, 0.5, psf_radius=20), f32_atol(batch), "halation")
    equal(ld.grain(x, seed=3).compute(scheduler="threads"),
          lumen.film.grain(batch, seed=3), "grain")


#: every rule with its interpolations (and torch's antialias and align_corners)
RESIZE_CALLS = [("opencv", "nearest", {}), ("opencv", "nearest-exact", {}), ("opencv", "linear", {}),
                ("opencv", "cubic", {}), ("opencv", "area", {}), ("opencv", "lanczos", {}),
                ("pillow", "nearest", {}), ("pillow", "linear", {}), ("pillow", "cubic", {}),
                ("pillow", "lanczos", {}), ("pillow", "box", {}), ("pillow", "hamming", {}),
                ("torch", "nearest", {}), ("torch", "linear", {"antialias": True}),
                ("torch", "cubic", {"align_corners": True}), ("torch", "cubic", {}),
                ("torch", "area", {})]


@pytest.mark.parametrize("rule,interp,kw", RESIZE_CALLS)
def test_resize_exact(rule, interp, kw):
    """Blocks of a resize (windows of the whole one) give lumen.resize's result bit for bit:
    shrinking and growing by sizes and by factors, one axis each way, u8 and f32, chunks
    smaller than a shrink's support (every block then reads several chunks)."""
    a = rng.random((61, 53, 3), np.float32)
    for src in (a, (a * 255).astype(np.uint8)):
        for size, f in (((17, 9), None), ((131, 150), None), ((20, 90), None), (None, 0.37),
                        (None, 2.5)):
            if rule == "torch" and interp == "area" and size is None:
                continue  # adaptive pooling has no factor
            want = lumen.resize(src, size, fx=f, interpolation=interp, rule=rule, **kw)
            for chunks in ((7, 6, 3), (25, 53, 3)):
                got = ld.resize(da.from_array(src, chunks=chunks), size, fx=f,
                                interpolation=interp, rule=rule, **kw)
                equal(got.compute(scheduler="sync"), want,
                      f"{rule} {interp} {kw} {src.dtype} size {size} fx {f} chunks {chunks}")


def test_resize_layouts_batch_and_chunks():
    a = rng.random((5, 3, 40, 33), np.float32)
    x = da.from_array(a, chunks=(2, 3, 11, 12))
    got = ld.resize(x, (50, 19), interpolation="cubic", layout="nchw", chunks=(8, 16))
    assert got.chunks[0] == (2, 2, 1) and got.chunks[2] == (8, 8, 3) and got.chunks[3] == (16,) * 3 + (2,)
    equal(got.compute(scheduler="threads"),
          lumen.resize(a, (50, 19), interpolation="cubic", layout="nchw"), "nchw")
    b = (rng.random((4, 30, 41, 3)) * 65535).astype(np.uint16)
    got = ld.resize(da.from_array(b, chunks=(3, 9, 10, 3)), fx=0.5, interpolation="area",
                    dtype=np.float32)
    equal(got.compute(scheduler="threads"),
          lumen.resize(b, fx=0.5, interpolation="area", dtype=np.float32), "nhwc u16 -> f32")
    tiny = rng.random((1, 1), np.float32)
    equal(ld.resize(da.from_array(tiny), (3, 4)).compute(), lumen.resize(tiny, (3, 4)), "1x1")
    with pytest.raises(lumen.ArgumentError, match="interpolation"):
        ld.resize(da.from_array(tiny), (3, 4), rule="torch", interpolation="lanczos")
    with pytest.raises(lumen.ArgumentError, match="size"):
        ld.resize(da.from_array(tiny))


def test_errors():
    x = da.from_array(IMG, chunks=8)
    with pytest.raises(lumen.ArgumentError, match="precision"):
        ld.gaussian_blur(x, 2.0, precision="fast")
    with pytest.raises(lumen.ArgumentError, match="channels-first"):
        ld.box_blur(da.zeros((3, 40, 50), chunks=10), 3)
    with pytest.raises(lumen.ArgumentError, match="kernel"):
        ld.filter2d(x, [1, 2, 3])
    with pytest.raises(lumen.ArgumentError, match="layout"):
        ld.box_blur(x, 3, layout="nhwc")


# ---- a LocalCluster of 2 worker processes ------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    """2 worker processes (spawned: they see this process's environment, PYTHONPATH included),
    one thread each, OMP_NUM_THREADS=1 in each, and a memory limit the Zarr test relies on."""
    from distributed import Client, LocalCluster
    old = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}):
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   memory_limit="400MB", dashboard_address=None,
                                   env={"OMP_NUM_THREADS": "1"})
    finally:
        if old is None:
            os.environ.pop("OMP_NUM_THREADS")
        else:
            os.environ["OMP_NUM_THREADS"] = old
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_cluster_workers(client):
    info = client.run(lambda: (os.environ.get("OMP_NUM_THREADS"), ld.task_threads(),
                               ld._ctx(None, None).threads))
    assert len(info) == 2
    assert all(v == ("1", 1, 1) for v in info.values()), info
    os.environ["OMP_NUM_THREADS"], old = "3", os.environ.get("OMP_NUM_THREADS")
    try:
        assert ld.task_threads() == 3 and ld.task_threads(2) == 2
    finally:
        os.environ.pop("OMP_NUM_THREADS") if old is None else os.environ.update(
            OMP_NUM_THREADS=old)


def test_cluster_exact(client):
    a = rng.random((150, 170, 3), np.float32)
    x = da.from_array(a, chunks=(40, 33, 3))
    k = rng.standard_normal((6, 9)).astype(np.float32)
    for border in BORDERS:
        got = client.compute(ld.filter2d(x, k, border=border, anchor=(1, 4),
                                         method="direct")).result()
        equal(got, lumen.filter2d(a, k, border=border, anchor=(1, 4), method="direct"), border)


# ---- many images --------------------------------------------------------------------------------

def _stack():
    return (rng.random((7, 20, 24, 3)) * 255).astype(np.uint8)


def test_map_images_paths_and_stack(tmp_path, client):
    imgs = _stack()
    paths = []
    for i, im in enumerate(imgs):
        p = tmp_path / "in" / f"frame{i}.png"
        p.parent.mkdir(exist_ok=True)
        lumen.write_image(str(p), im)
        paths.append(str(p))
    out = tmp_path / "out"
    res = ld.map_images(paths, lumen.gaussian_blur, out, client=client, sigma=1.5)
    assert [s for _, s in res] == ["done"] * 7
    for p, (o, _) in zip(paths, res):
        assert os.path.basename(o) == os.path.basename(p)
        equal(lumen.read_image(o), lumen.gaussian_blur(lumen.read_image(p), 1.5), o)
    assert sorted(os.listdir(out)) == sorted(os.path.basename(p) for p in paths)
    res = ld.map_images(paths, lumen.gaussian_blur, out, scheduler="threads", sigma=1.5)
    assert [s for _, s in res] == ["skipped"] * 7
    res = ld.map_images(da.from_array(imgs, chunks=2), lumen.box_blur, tmp_path / "npy",
                        scheduler="threads", ksize=3)
    for i, (o, s) in enumerate(res):
        assert s == "done" and o.endswith(f"{i:06d}.npy")
        equal(np.load(o), lumen.box_blur(imgs[i], 3), o)


RESTART = """
import os, signal, sys, numpy as np, lumen, lumen.dask as ld
imgs = np.load(sys.argv[1])
out, kill_at = sys.argv[2], int(sys.argv[3])
def op(im, i_kill=kill_at):
    # the process dies (SIGKILL: no clean-up) while writing: after the op, inside the write
    if kill_at >= 0 and len([f for f in os.listdir(out) if not f.startswith('.')]) >= kill_at:
        real = np.save
        def dying_save(p, a):
            real(p, a[: len(a) // 2])          # half a file on disk
            os.kill(os.getpid(), signal.SIGKILL)
        np.save = dying_save
    return lumen.gaussian_blur(im, 2.0)
res = ld.map_images(imgs, op, out, scheduler="sync")
print(sum(s == "done" for _, s in res), sum(s == "skipped" for _, s in res))
"""


def test_map_images_killed_and_restarted(tmp_path):
    imgs = _stack()
    np.save(tmp_path / "imgs.npy", imgs)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(RESTART))
    out = tmp_path / "out"
    args = [sys.executable, str(script), str(tmp_path / "imgs.npy"), str(out)]
    r = subprocess.run(args + ["3"], capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, r.stderr
    done = sorted(f for f in os.listdir(out) if not f.startswith("."))
    assert done == [f"{i:06d}.npy" for i in range(3)], done    # whole files only
    assert any(f.startswith(".") for f in os.listdir(out))     # the half-written temp file
    r = subprocess.run(args + ["-1"], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["4", "3"]                      # 4 done now, 3 skipped
    assert sorted(os.listdir(out)) == [f"{i:06d}.npy" for i in range(7)]  # temp files gone
    for i in range(7):
        equal(np.load(out / f"{i:06d}.npy"), lumen.gaussian_blur(imgs[i], 2.0), str(i))


# ---- out of core: Zarr ---------------------------------------------------------------------------

def _peak_rss():
    """The process's peak resident set (VmHWM, bytes). Not getrusage's ru_maxrss, which Linux
    carries across exec: a spawned worker would report the parent's peak (pytest's, when the
    suite has run for a while)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def test_zarr_larger_than_worker_memory(tmp_path, client):
    """A 10240 x 10240 f32 image (400 MiB) in Zarr, filtered by 2 workers limited to 400 MB
    each into another Zarr array: no worker holds it (their peak RSS stays below the limit),
    and tiles of the result equal lumen on the whole image's neighbourhood of each tile."""
    n, c = 10240, 1024
    src, dst = str(tmp_path / "in.zarr"), str(tmp_path / "out.zarr")
    img = da.random.RandomState(7).random_sample((n, n), chunks=c).astype(np.float32)
    client.compute(ld.to_zarr(img, src, compute=False)).result()
    x = ld.from_zarr(src)
    assert x.nbytes > 400e6 and x.chunks[0][0] == c
    k = rng.random((9, 8), np.float32)
    client.compute(ld.to_zarr(ld.filter2d(x, k, border="reflect101", method="direct"), dst,
                              compute=False)).result()
    peaks = client.run(_peak_rss)  # measured: about 255 MB each
    assert all(0 < p < 400e6 for p in peaks.values()), f"peak RSS {peaks}, limit 400 MB"
    out = zarr.open(dst, "r")
    z = zarr.open(src, "r")
    # corners and a tile astride four blocks; lumen on the tile plus a halo of more than the
    # kernel (or up to the true edge) gives the whole image's result inside it
    for y0, x0 in ((0, 0), (n - 300, n - 300), (c - 150, 3 * c - 150)):
        ya, xa = max(y0 - 20, 0), max(x0 - 20, 0)
        yb, xb = min(y0 + 320, n), min(x0 + 320, n)
        want = lumen.filter2d(z[ya:yb, xa:xb], k, border="reflect101", method="direct")
        equal(out[y0:y0 + 300, x0:x0 + 300],
              want[y0 - ya:y0 - ya + 300, x0 - xa:x0 - xa + 300], f"tile {y0},{x0}")


# ---- the benchmark's harness -----------------------------------------------------------------

def test_bench_dask_quick():
    """python3 -m lumen.bench --case dask runs (a small image, no cluster) and finds the
    threaded scheduler's direct and separable results bit-identical to plain lumen's."""
    r = subprocess.run([sys.executable, "-m", "lumen.bench", "--case", "dask", "--size", "600",
                        "--chunk", "160", "--repeat", "1", "--workers", "", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    res = json.loads(r.stdout)
    assert [row["case"] for row in res["rows"]] == ["filter2d_k5", "filter2d_k31",
                                                    "gaussian_s8", "filter2d_k127"]
    exact = [row[k] for row in res["rows"] for k in ("threads_exact", "store_exact") if k in row]
    assert len(exact) >= 4 and all(exact), res["rows"]
    assert res["identity"]["threads_s"] > 0
