"""lumen on Dask: the same ops on images larger than memory, and on many images.

docs/scale-out.md has the design, the exactness guarantee and the figures.

    import dask.array as da, lumen.dask
    img = da.from_zarr("mosaic.zarr")                      # or da.from_array(a, chunks=2048)
    lumen.dask.gaussian_blur(img, 8.0).to_zarr("blurred.zarr")

Every op takes a ``dask.array`` (or anything ``da.asarray`` takes) with lumen's layouts
(H x W, H x W x C, N x H x W x C, or ``layout=``) and returns a lazy ``dask.array`` whose value
is what the single-machine op gives on the whole image:

* each block is filtered with a halo of its neighbours' pixels, as wide as the kernel reaches
  on each side (asymmetric for even kernels and off-centre anchors, swapped for
  ``convolve=True``); channel and batch axes get none;
* the halo is exchanged between neighbours only (as ``map_overlap(boundary='none')`` would,
  in one task per block and without copies) and lumen applies its own border where a block
  meets the true edge of the image, so every border mode is the global one (``wrap``: the
  blocks on the edges take the opposite side's pixels);
* ``method="auto"`` is resolved once, on the client, for the whole image's shape
  (``lumen.choose_method``: the C library's choice, nothing run), and the resolved method is
  passed to every block, so blocks cannot disagree;
* blocks narrower than the kernel are merged with their neighbours (rechunked), an axis shorter
  than two kernels becomes one block.

Direct and separable results, box and integer results (direct, separable) are bit-identical
to the single-machine call; FFT results agree within the f32 tolerance (its tiles differ).
Each task runs lumen on ``threads=`` threads (default $LUMEN_NUM_THREADS, else
$OMP_NUM_THREADS, else 1) on a context of its own thread; ``context=`` is for the threaded and
synchronous schedulers only (a context does not travel to other processes).
halation and grain are global reductions and run on whole images (their docstrings).
``resize`` computes each output block from its window of the whole resize (lumen.resize's
``whole_src``/``src_origin`` window): bit-identical to the single call, every rule and dtype.
This module imports Dask; ``import lumen`` does not.
"""

import itertools
import operator
import os
import threading
import uuid

import numpy as np

try:
    import dask
    import dask.array as da
    import dask.bag as db
    from dask.array.overlap import ensure_minimum_chunksize
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError(
        "lumen.dask needs Dask (Debian: apt-get install python3-dask python3-distributed "
        f"python3-zarr): {e}") from e

import lumen

__all__ = ["filter2d", "sep_filter2d", "gaussian_blur", "box_blur", "conv2d",
           "conv_transpose2d", "resize", "bloom",
           "halation", "grain", "map_images", "from_zarr", "to_zarr", "overlap_depth",
           "task_threads"]

#: The layouts by number of dimensions (lumen's default reading) and their (H, W) axes.
_DEFAULT_LAYOUT = {2: "hw", 3: "hwc", 4: "nhwc"}
_HW_AXES = {"hw": (0, 1), "hwc": (0, 1), "chw": (1, 2), "nhwc": (1, 2), "nchw": (2, 3)}
_NDIM = {"hw": 2, "hwc": 3, "chw": 3, "nhwc": 4, "nchw": 4}


# ---- per-thread contexts ----------------------------------------------------------------------

_local = threading.local()


def task_threads(threads=None):
    """The threads one task's lumen call uses: `threads`, else $LUMEN_NUM_THREADS, else
    $OMP_NUM_THREADS (what Dask's and most launchers' per-worker settings name), else 1: Dask
    already runs one task per core, and more threads per task would oversubscribe them."""
    for v in (threads, os.environ.get("LUMEN_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS")):
        try:
            if v is not None and int(v) >= 1:
                return int(v)
        except ValueError:
            pass
    return 1


def _ctx(context, threads):
    """The context a block runs on: the caller's, else one per (worker thread, thread count),
    made where the task runs (never pickled) and not shared between threads (a shared one
    would serialise them on its lock)."""
    if context is not None:
        return context
    cache = getattr(_local, "contexts", None)
    if cache is None:
        cache = _local.contexts = {}
    t = task_threads(threads)
    if t not in cache:
        cache[t] = lumen.Context(threads=t)
    return cache[t]


class _Block:
    """block -> fn(block, *args, **kwargs) on the context of the thread that runs it (_ctx).
    Its token (the graph's names) is made of the op and its arguments."""

    def __init__(self, fn, context, threads, args, kwargs, halo=False):
        self.fn, self.context, self.threads, self.args, self.kwargs = (fn, context, threads, args,
                                                                       kwargs)
        #: fn takes halo_y, halo_x and out= (the C filters' halo): _run_group then has lumen
        #: filter only the kept part, into its destination
        self.halo = halo

    def __call__(self, b, **extra):
        """extra: the call's own keywords (halo, out=, a dtype), over the bound ones."""
        return self.fn(b, *self.args, context=_ctx(self.context, self.threads),
                       **dict(self.kwargs, **extra))

    def __dask_tokenize__(self):
        return dask.base.tokenize(getattr(self.fn, "__module__", ""),
                                  getattr(self.fn, "__qualname__", repr(self.fn)), self.args,
                                  sorted(self.kwargs.items()), self.threads,
                                  None if self.context is None else id(self.context))


def _bind(fn, context, threads, *args, **kwargs):
    """block -> fn(block, *args, **kwargs) on the block's thread's context."""
    return _Block(fn, context, threads, args, kwargs)


def _bind_halo(fn, context, threads, *args, **kwargs):
    """_bind for the filters that take a halo (lumen.filter2d, sep_filter2d, gaussian_blur)."""
    return _Block(fn, context, threads, args, kwargs, halo=True)


# ---- shapes and halos -------------------------------------------------------------------------

def _layout(shape, layout):
    """The layout every block is read with: lumen's rule applied once to the *global* shape
    (a block's own shape could look channels-first when the image does not)."""
    if layout is None:
        if len(shape) not in _DEFAULT_LAYOUT:
            raise lumen.ArgumentError(
                f"src: a {len(shape)}-D array is not an image (H x W, H x W x C, N x H x W x C)")
        layout = _DEFAULT_LAYOUT[len(shape)]
        cf = ((len(shape) == 3 and shape[0] in (1, 3, 4) and shape[2] > 4)
              or (len(shape) == 4 and shape[1] in (1, 3, 4) and shape[3] > 4))
        if cf:
            raise lumen.ArgumentError(
                f"src: an array of shape {tuple(shape)} looks channels-first; pass layout= "
                "('chw'/'nchw' for channels-first, 'hwc'/'nhwc' for channels-last) to say which")
    if layout not in _HW_AXES:
        raise lumen.ArgumentError(f"layout: expected one of {sorted(_HW_AXES)}, got {layout!r}")
    if _NDIM[layout] != len(shape):
        raise lumen.ArgumentError(
            f"layout: '{layout}' needs a {_NDIM[layout]}-D array, got shape {tuple(shape)}")
    return layout


def overlap_depth(ksize, anchor=-1, convolve=False):
    """(before, after): how far a k-tap kernel with this anchor reads behind and ahead of the
    output pixel. Correlation (cv2.filter2D) reads src(x - a) .. src(x + k - 1 - a), default
    anchor k // 2; convolution flips the kernel and moves the anchor to k - 1 - a, which swaps
    the two (DESIGN.md, "Correlation by default")."""
    k = int(ksize)
    a = k // 2 if anchor is None or anchor < 0 else int(anchor)
    if not 0 <= a < k:
        raise lumen.ArgumentError(f"anchor: {a} is outside the {k}-tap kernel")
    before, after = a, k - 1 - a
    return (after, before) if convolve else (before, after)


#: A block is filtered with its halo, and lumen computes the halo's outputs too (then dropped):
#: consecutive chunks are filtered together (one task, its result split back into the chunks)
#: until the halo is at most this share of the block's side on each axis ...
_HALO_SHARE = 1 / 32
#: ... but a group is never wider than this (nor than one chunk, if that is wider), and an axis
#: keeps at least two groups.
_MAX_GROUP_SIDE = 4096


def _axis_plan(n, chunks, before, after, wrap):
    """(chunks, (before, after)) of one image axis for a kernel reaching (before, after): the
    halo this axis gets, (0, 0) for none."""
    if before == 0 and after == 0 or len(chunks) == 1:
        return chunks, (0, 0)
    k = before + after + 1
    if n < 2 * k:  # at most one block would fit: take the axis whole
        return (n,), (0, 0)
    # Every block at least a kernel wide: a block at the true edge then holds every pixel the
    # border rule mirrors or repeats (reflect101 reaches `before` pixels in), so lumen's border
    # on the block is the border of the whole image; and every neighbour holds the whole halo
    # it lends, wrap's opposite side included.
    return ensure_minimum_chunksize(k, chunks), (before, after)


def _groups(chunks, before, after, local=False):
    """[(first, stop)]: the runs of consecutive chunks filtered as one block (_HALO_SHARE). With
    out= (local: the graph runs in this process) as wide as _MAX_GROUP_SIDE allows: a task costs
    about a millisecond of Dask and lumen set-up, which a cheap filter's 2048² block (a few ms)
    feels (5x5 direct on 16384²: 0.63x plain's speed in 2048² tasks, 0.84x in 4096²), and a
    group gathers nothing from other processes there."""
    h, c = before + after, max(chunks)
    g = 1 if h == 0 else -(-h // max(1, int(c * _HALO_SHARE)))
    if local:
        g = max(g, _MAX_GROUP_SIDE // c)
    g = max(1, min(g, max(1, _MAX_GROUP_SIDE // c), len(chunks) // 2))
    return [(i, min(i + g, len(chunks))) for i in range(0, len(chunks), g)]


#: Transparent huge pages come in aligned extents of this size (x86-64).
_HUGE_PAGE = 2 << 20


def _fresh(shape, dtype):
    """np.empty(shape, dtype), starting on a 2 MiB boundary when it is 4 MiB or more. numpy asks
    for transparent huge pages for large arrays, but only whole aligned 2 MiB extents get them:
    a block's result at a heap address pays its unaligned head and tail in 4 KiB page faults,
    about 500 per 16 MB block (docs/scale-out.md, "Fresh memory"). The slack is never touched,
    so it costs address space, not memory."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if n < 2 * _HUGE_PAGE:
        return np.empty(shape, dtype)
    raw = np.empty(n + _HUGE_PAGE, np.uint8)
    off = -raw.ctypes.data % _HUGE_PAGE
    return raw[off:off + n].view(dtype).reshape(shape)


def _root(a):
    """The object that owns a's memory (the end of its .base chain)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def _as_one_view(pieces, shape):
    """The padded block as a view, when its pieces ({(row, col) in the padded block: array})
    are views of one array laid out as in the block (da.from_array of an in-memory image):
    no copy. None otherwise."""
    corner = pieces.get((0, 0))
    if corner is None:
        return None
    strides, root = corner.strides, _root(corner)
    if root is corner:
        return None
    base = corner.__array_interface__["data"][0]
    for (r, c), p in pieces.items():
        if (p.strides != strides or p.dtype != corner.dtype or _root(p) is not root
                or p.__array_interface__["data"][0] != base + r * strides[0] + c * strides[1]):
            return None
    return np.lib.stride_tricks.as_strided(corner, shape, corner.strides, writeable=False)


def _padded(rows, cols, grid, hax, wax, view_only=False):
    """The block with its halo, from grid[i][j], the pieces of the (len(rows) x len(cols)) grid
    of chunks and strips around and inside it (rows, cols: their heights and widths): a view
    when they are views of one array (_as_one_view), else a copy (view_only: None)."""
    ref = grid[len(rows) // 2][len(cols) // 2]
    y = np.concatenate([[0], np.cumsum(rows)]).astype(int)
    x = np.concatenate([[0], np.cumsum(cols)]).astype(int)
    shape = list(ref.shape)
    shape[hax], shape[wax] = int(y[-1]), int(x[-1])
    hw_first = (hax, wax) != (0, 1)

    def first(a):  # the H and W axes first
        return np.moveaxis(a, (hax, wax), (0, 1)) if hw_first else a
    pieces = {(int(y[i]), int(x[j])): first(grid[i][j])
              for i in range(len(rows)) for j in range(len(cols))}
    view = _as_one_view(pieces, [shape[hax], shape[wax]]
                        + [n for a, n in enumerate(shape) if a not in (hax, wax)])
    if view is not None:
        return np.moveaxis(view, (0, 1), (hax, wax)) if hw_first else view
    if view_only:
        return None
    buf = _fresh(shape, ref.dtype)
    bv = first(buf)
    for (r, c), p in pieces.items():
        bv[r:r + p.shape[0], c:c + p.shape[1]] = p
    return buf


#: The directions (dy, dx) from a block to a neighbour, numbered for the graph.
_DIRS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]


def _ix(ndim, hax, wax, ys, xs):
    """The index of rows ys and columns xs of an array of ndim axes (H at hax, W at wax)."""
    idx = [slice(None)] * ndim
    idx[hax], idx[wax] = ys, xs
    return tuple(idx)


def _strip(block, hax, wax, dy, dx, before_h, after_h, before_w, after_w):
    """The halo strip a chunk lends the block in direction (dy, dx) from the borrower to it: the
    chunk above a block (dy = -1) lends its last `before_h` rows, and so on. A view."""
    def sl(d, n, before, after):
        return slice(n - before, n) if d < 0 else slice(0, after) if d > 0 else slice(0, n)
    return block[_ix(block.ndim, hax, wax, sl(dy, block.shape[hax], before_h, after_h),
                     sl(dx, block.shape[wax], before_w, after_w))]


def _export(block, hax, wax, before_h, after_h, before_w, after_w):
    """The halo strips a chunk lends its neighbours, by direction (_strip). Views: they cost
    nothing here, and on a cluster only they travel, not the chunk."""
    out = {}
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if (dy or dx) and (dy == 0 or (before_h if dy < 0 else after_h)) and \
                    (dx == 0 or (before_w if dx < 0 else after_w)):
                out[_DIRS.index((dy, dx))] = _strip(block, hax, wax, dy, dx, before_h, after_h,
                                                    before_w, after_w)
    return out


def _pick(strips, d):
    return strips[d]


def _run_group(fn, hax, wax, rows, cols, keep, grid, dest, reach, dtype):
    """One task: the group's chunks and its neighbours' strips (grid[i][j]) -> fn on the padded
    block -> the part kept. Filters with a halo (_Block.halo) compute only that part (the strips
    are their halo_y, halo_x), into dest = (out, index) when given; other ops filter the whole
    padded block and the part kept is a view of it (copied into dest). reach: the kernel's
    (before_h, after_h, before_w, after_w); dtype: the result's, made in fresh memory (_fresh)
    when there is no dest."""
    view = _padded(rows, cols, grid, hax, wax, view_only=True)
    if view is None and _banded_ok(fn, rows, cols, keep, reach):
        return _run_banded(fn, hax, wax, rows, cols, keep, grid, dest, reach, dtype)
    padded = view if view is not None else _padded(rows, cols, grid, hax, wax)
    target = None if dest is None else dest[0][dest[1]]
    if getattr(fn, "halo", False):
        (y, x), h, w = keep, padded.shape[hax], padded.shape[wax]
        extra = dict(halo_y=(y.start, h - y.stop), halo_x=(x.start, w - x.stop))
        if target is None:
            shape = list(padded.shape)
            shape[hax], shape[wax] = y.stop - y.start, x.stop - x.start
            target = _fresh(shape, dtype)
        return fn(padded, out=target, **extra)
    res = fn(padded) if target is None else fn(padded, dtype=target.dtype)  # made in out's
    kept = res[_ix(res.ndim, hax, wax, *keep)]
    if target is None:
        return kept
    target[...] = kept
    return target


#: _run_banded takes chunks at least this many times their halo (on each axis).
_BAND_HALO_SHARE = 64


def _banded_ok(fn, rows, cols, keep, reach):
    """Whether _run_banded may compute this group: a filter with a halo, by a method whose
    every output is its own window's sum (direct, separable: the same bits whatever the block;
    the FFT's thin bands would cost tiles), on a group of one chunk at least _BAND_HALO_SHARE
    times its halo on each axis: the bands' row passes redo about twice the halo's rows, which
    for a 2048 px chunk measured 0.95-1.0x the padded copy's time up to a halo of 24 px (5x5,
    25x25 direct, Gaussian sigma 3) and 1.07x at 64 px (sigma 8; docs/scale-out.md)."""
    if not getattr(fn, "halo", False):
        return False
    if fn.kwargs.get("method") not in ("direct", "separable"):
        return False
    (y, x) = keep
    own_h = [o for o in np.cumsum([0] + list(rows[:-1])) if y.start <= o < y.stop]
    own_w = [o for o in np.cumsum([0] + list(cols[:-1])) if x.start <= o < x.stop]
    bh, ah, bw, aw = reach
    share = _BAND_HALO_SHARE
    return (len(own_h) == 1 and len(own_w) == 1 and (bh + ah) * share <= y.stop - y.start
            and (bw + aw) * share <= x.stop - x.start)


def _run_banded(fn, hax, wax, rows, cols, keep, grid, dest, reach, dtype):
    """_run_group for a group of one chunk whose pieces are arrays of their own (a cluster's,
    Zarr's), without the padded copy of the block: the chunk computes its interior (every
    output whose window lies inside it) as a call on the chunk itself with a halo, and the
    outputs whose windows reach into the strips (T and B rows at the top and bottom, L and R
    columns at the sides: as many as the strips are deep, none at a true edge, where lumen's
    border applies) come from four thin bands, each a small padded copy of what it reads. Each
    output is the same sum of the same pixels as in the padded block (direct, separable)."""
    bh, ah, bw, aw = reach
    ky, kx = keep
    T, L = ky.start, kx.start
    B, R = sum(rows) - ky.stop, sum(cols) - kx.stop
    i0, j0 = (1 if T else 0), (1 if L else 0)
    c = grid[i0][j0]
    n, m, nd = c.shape[hax], c.shape[wax], c.ndim
    mid = grid[i0]  # the chunk's row of pieces: left strip, chunk, right strip

    def rows_of(pieces, ys):
        return [p[_ix(nd, hax, wax, ys, slice(None))] for p in pieces]

    def cols_of(p, xs):
        return p[_ix(nd, hax, wax, slice(None), xs)]
    # (the input, its halo_y and halo_x, the rows and columns of the block it computes)
    parts = [(c, (T, B), (L, R), slice(T, n - B), slice(L, m - R))]
    if T:
        parts.append((_padded([T, T + ah], cols, [grid[0], rows_of(mid, slice(0, T + ah))], hax,
                              wax), (T, ah), (L, R), slice(0, T), slice(0, m)))
    if B:
        parts.append((_padded([B + bh, B], cols, [rows_of(mid, slice(n - B - bh, n)), grid[-1]],
                              hax, wax), (bh, B), (L, R), slice(n - B, n), slice(0, m)))
    if L:
        parts.append((_padded([n], [L, L + aw], [[mid[0], cols_of(c, slice(0, L + aw))]], hax,
                              wax), (T, B), (L, aw), slice(T, n - B), slice(0, L)))
    if R:
        parts.append((_padded([n], [R + bw, R], [[cols_of(c, slice(m - R - bw, m)), mid[-1]]],
                              hax, wax), (T, B), (bw, R), slice(T, n - B), slice(m - R, m)))
    target = dest[0][dest[1]] if dest is not None else _fresh(c.shape, dtype)
    for src, hy, hx, ys, xs in parts:
        fn(src, out=target[_ix(nd, hax, wax, ys, xs)], halo_y=hy, halo_x=hx)
    return target


def _axis_cells(chunks, groups, gi, before, after, wrap):
    """For group gi of one axis: [(chunk index, direction, size)] of the chunks the padded block
    is made of, in order: the neighbour before (direction -1, `before` pixels), the group's own
    chunks (0), the neighbour after (+1, `after` pixels); none past a true edge (unless wrap)."""
    first, stop = groups[gi]
    n = len(chunks)
    cells = []
    if before and (first > 0 or wrap):
        cells.append(((first - 1) % n, -1, before))
    cells += [(i, 0, chunks[i]) for i in range(first, stop)]
    if after and (stop < n or wrap):
        cells.append((stop % n, 1, after))
    return cells


def _dest(out, starts, rest, hax, wax, rows, cols):
    """(out, index): the region of out that the group of chunk rows `rows` and columns `cols`
    (index ranges), at chunk index `rest` on the other axes, writes (None: no out=)."""
    if out is None:
        return None
    idx = []
    for a, st in enumerate(starts):
        lo, hi = (rows if a == hax else cols if a == wax else (rest[a], rest[a] + 1))
        idx.append(slice(int(st[lo]), int(st[hi])))
    return out, tuple(idx)


def _block_keys(x, hax, wax):
    """For each block index `rest` of x on its axes other than H and W (batch, channels; None on
    H and W): (rest, the function (name, i, j) -> the key of the block at H index i, W index j
    there)."""
    other = [range(len(c)) if a not in (hax, wax) else [None] for a, c in enumerate(x.chunks)]
    for rest in itertools.product(*other):
        def key(nm, i, j, rest=rest):
            k = list(rest)
            k[hax], k[wax] = i, j
            return (nm,) + tuple(k)
        yield rest, key


def _halo_graph(x, block_fn, plan, hax, wax, dtype, token, out=None):
    """The graph: per chunk one export task (its strips), per group one task (_run_group), and
    per chunk of a group of several a view of the group's result. With out (a numpy array of
    x's shape; the graph runs in this process), each group writes its outputs into out's region
    of it, cuts its neighbours' strips itself, and is one chunk of the result: a task per group
    and nothing else, since every task costs Dask's bookkeeping under the GIL."""
    (bh, ah), (bw, aw) = plan[hax], plan[wax]
    ch, cw = x.chunks[hax], x.chunks[wax]
    starts = [np.concatenate([[0], np.cumsum(c)]) for c in x.chunks]
    local = out is not None
    gh, gw = _groups(ch, bh, ah, local), _groups(cw, bw, aw, local)
    name = f"lumen-{token}"
    ex_name, grp_name = f"lumen-halo-{token}", f"lumen-group-{token}"
    dsk = {}
    wrap = plan["wrap"]
    for rest, key in _block_keys(x, hax, wax):
        for gi in range(len(gh)):
            rcells = _axis_cells(ch, gh, gi, bh, ah, wrap)
            for gj in range(len(gw)):
                ccells = _axis_cells(cw, gw, gj, bw, aw, wrap)
                cells = []
                for (i, dy, _) in rcells:
                    row = []
                    for (j, dx, _) in ccells:
                        if dy == 0 and dx == 0:
                            row.append(key(x.name, i, j))
                        elif local:  # the strip, cut inside the group's task
                            row.append((_strip, key(x.name, i, j), hax, wax, dy, dx, bh, ah, bw,
                                        aw))
                        else:
                            ek = key(ex_name, i, j)
                            if ek not in dsk:
                                dsk[ek] = (_export, key(x.name, i, j), hax, wax, bh, ah, bw, aw)
                            row.append((_pick, ek, _DIRS.index((dy, dx))))
                    cells.append(row)
                top = rcells[0][2] if rcells[0][1] < 0 else 0
                left = ccells[0][2] if ccells[0][1] < 0 else 0
                (r0, r1), (c0, c1) = gh[gi], gw[gj]
                kh, kw_ = sum(ch[r0:r1]), sum(cw[c0:c1])
                keep = (slice(top, top + kh), slice(left, left + kw_))
                dest = _dest(out, starts, rest, hax, wax, (r0, r1), (c0, c1))
                task = (_run_group, block_fn, hax, wax, [s for _, _, s in rcells],
                        [s for _, _, s in ccells], keep, cells, dest, (bh, ah, bw, aw), dtype)
                if local or (r1 - r0 == 1 and c1 - c0 == 1):
                    dsk[key(name, gi, gj) if local else key(name, r0, c0)] = task
                    continue
                gk = key(grp_name, gi, gj)
                dsk[gk] = task
                ys = np.concatenate([[0], np.cumsum(ch[r0:r1])])
                xs = np.concatenate([[0], np.cumsum(cw[c0:c1])])
                for a, i in enumerate(range(r0, r1)):
                    for b, j in enumerate(range(c0, c1)):
                        idx = _ix(x.ndim, hax, wax, slice(int(ys[a]), int(ys[a + 1])),
                                  slice(int(xs[b]), int(xs[b + 1])))
                        dsk[key(name, i, j)] = (operator.getitem, gk, idx)
    chunks = list(x.chunks)
    if local:  # a chunk per group: the result is out, and a task per chunk would only cost
        for ax, groups in ((hax, gh), (wax, gw)):
            chunks[ax] = tuple(sum(x.chunks[ax][a:b]) for a, b in groups)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, tuple(chunks), meta=np.empty((0,) * x.ndim, dtype))


def _apply(x, block_fn, reach_h, reach_w, border, layout, dtype, out=None):
    """block_fn (a numpy block -> numpy block of the same shape) over x with halos of
    (before, after) on H and W, exact at the global border (docs/scale-out.md, "Design"); with
    out (_check_out), computed into it (_into)."""
    hax, wax = _HW_AXES[layout]
    chunks = list(x.chunks)
    for ax in range(x.ndim):  # channels: one block (lumen filters them together)
        if ax not in (hax, wax) and not (layout.startswith("n") and ax == 0):
            chunks[ax] = (x.shape[ax],)
    # cv2.BORDER_WRAP is 3
    if isinstance(border, int):
        wrap = border == 3
    else:
        wrap = lumen.BORDER_ALIASES.get(border, border) == "wrap"
    plan = {"wrap": wrap}
    for ax, (b, a) in ((hax, reach_h), (wax, reach_w)):
        chunks[ax], plan[ax] = _axis_plan(x.shape[ax], x.chunks[ax], b, a, wrap)
    x = x.rechunk(tuple(chunks))
    token = tokenize(x.name, block_fn, plan, dtype, None if out is None else id(out))
    if out is None and plan[hax] == (0, 0) and plan[wax] == (0, 0):
        return x.map_blocks(block_fn, dtype=dtype, meta=np.empty((0,) * x.ndim, dtype),
                            name=f"lumen-{token}")
    return _halo_graph(x, block_fn, plan, hax, wax, dtype, token, out)


def _check_out(out, x, dtype=None):
    """out= of the filters: a writable numpy array of the image's shape (its dtype is the
    result's, as with lumen's own out=; a dtype= that differs is refused)."""
    if out is None:
        return None
    if not isinstance(out, np.ndarray):
        raise lumen.ArgumentError(
            f"out: expected a numpy array (the result is computed into it), got "
            f"{type(out).__name__}; for a lazy result leave out= and use .to_zarr or .compute")
    if not out.flags.writeable:
        raise lumen.ArgumentError("out: the array is read-only")
    if out.shape != tuple(x.shape):
        raise lumen.ArgumentError(f"out: shape {out.shape} differs from the image's "
                                  f"{tuple(x.shape)}")
    if dtype is not None and np.dtype(dtype) != out.dtype:
        raise lumen.ArgumentError(f"dtype: {np.dtype(dtype)} differs from out's {out.dtype}")
    return out


def _filter(x, block_fn, reach_h, reach_w, border, layout, dtype, out, scheduler):
    """_apply for the filters: the lazy result, or with out= (_check_out) the graph run into out
    (_into); the result's dtype is dtype= (None: x's), or out's."""
    out = _check_out(out, x, dtype)
    y = _apply(x, block_fn, reach_h, reach_w, border, layout,
               _out_dtype(x, dtype) if out is None else out.dtype, out)
    return y if out is None else _into(y, out, scheduler)


def _into(y, out, scheduler):
    """Runs the graph y (whose tasks write into out) and returns out. Persisting keeps each
    task's result, a view of out, where computing would gather them into one more array."""
    dask.persist(y, scheduler=scheduler or "threads")
    return out


def _out_dtype(x, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.float64) if x.dtype == np.float64 else x.dtype


def _resolve_method(op, x, args, kw, method, context, threads):
    """The method every block runs: method itself, or what "auto" chooses for the whole image
    (lumen.choose_method: the C library's choice for x's global shape, on the context the blocks
    run on, without running anything), so that blocks of different sizes cannot disagree."""
    if method != "auto":
        return method
    return lumen.choose_method(op, x, *args, method=method, context=_ctx(context, threads), **kw)


# ---- the filters ------------------------------------------------------------------------------

def _pair(v, name):
    if v is None:
        return (-1, -1)
    t = tuple(int(i) for i in v)
    if len(t) != 2:
        raise lumen.ArgumentError(f"{name}: expected (x, y), got {v!r}")
    return t


def filter2d(src, kernel, *, border="reflect", border_value=0.0, anchor=None, convolve=False,
             method="auto", dtype=None, layout=None, context=None, threads=None, out=None,
             scheduler=None):
    """lumen.filter2d on a dask array (cv2.filter2D's correlation; module docstring). With
    out= (a numpy array of the image's shape) the result is computed into it now, on
    `scheduler` (default "threads"), and out is returned."""
    x = da.asarray(src)
    lay = _layout(x.shape, layout)
    k = np.asarray(kernel, np.float32)
    if k.ndim != 2:
        raise lumen.ArgumentError(f"kernel: expected a 2-D kernel, got shape {k.shape}")
    ax, ay = _pair(anchor, "anchor")
    rw = overlap_depth(k.shape[1], ax, convolve)
    rh = overlap_depth(k.shape[0], ay, convolve)
    kw = dict(border=border, border_value=border_value, anchor=anchor, convolve=convolve,
              dtype=dtype, layout=lay)
    m = _resolve_method("filter2d", x, (k,), kw, method, context, threads)
    return _filter(x, _bind_halo(lumen.filter2d, context, threads, k, method=m, **kw), rh, rw,
                   border, lay, dtype, out, scheduler)


def sep_filter2d(src, kx, ky, *, border="reflect", border_value=0.0, anchor=None,
                 convolve=False, method="auto", dtype=None, layout=None, context=None,
                 threads=None, out=None, scheduler=None):
    """lumen.sep_filter2d on a dask array: row kernel kx, then column kernel ky (out= as
    filter2d)."""
    x = da.asarray(src)
    lay = _layout(x.shape, layout)
    kx, ky = np.asarray(kx, np.float32).ravel(), np.asarray(ky, np.float32).ravel()
    ax, ay = _pair(anchor, "anchor")
    rw, rh = overlap_depth(kx.size, ax, convolve), overlap_depth(ky.size, ay, convolve)
    kw = dict(border=border, border_value=border_value, anchor=anchor, convolve=convolve,
              dtype=dtype, layout=lay)
    m = _resolve_method("sep_filter2d", x, (kx, ky), kw, method, context, threads)
    return _filter(x, _bind_halo(lumen.sep_filter2d, context, threads, kx, ky, method=m, **kw),
                   rh, rw, border, lay, dtype, out, scheduler)


def _gauss_size(ksize, sigma, truncate):
    """The kernel size lumen.gaussian_blur uses on one axis (ksize 0/None: from sigma)."""
    if ksize:
        return int(ksize)
    if truncate is not None:  # SciPy's radius
        return 2 * int(float(truncate) * float(sigma) + 0.5) + 1
    return lumen.gaussian_ksize(float(sigma), "float32")


def gaussian_blur(src, sigma, *, sigma_y=None, ksize=None, border="reflect", border_value=0.0,
                  precision="exact", method="auto", mode=None, cval=None, truncate=None,
                  dtype=None, layout=None, context=None, threads=None, out=None, scheduler=None):
    """lumen.gaussian_blur on a dask array (cv2.GaussianBlur's kernel; out= as filter2d).
    precision="fast" (the recursive filter, whose every output depends on the whole row) is
    refused."""
    if precision != "exact":
        raise lumen.ArgumentError(
            "precision: lumen.dask runs the exact Gaussian only; 'fast' is a recursive filter "
            "whose every output depends on the whole row, so it has no finite halo")
    x = da.asarray(src)
    lay = _layout(x.shape, layout)
    sx, sy = (sigma if isinstance(sigma, (tuple, list)) else (sigma, sigma))
    if sigma_y is not None:
        sy = sigma_y
    kx, ky = (ksize if isinstance(ksize, (tuple, list)) else (ksize, ksize))
    # the float rule's size (8 sigma + 1) is never below the 8-bit one's (6 sigma + 1): a halo
    # that may be wider than the kernel needs, never narrower
    nx, ny = _gauss_size(kx, sx, truncate), _gauss_size(ky, sy, truncate)
    rw, rh = overlap_depth(nx), overlap_depth(ny)
    kw = dict(sigma_y=sigma_y, ksize=ksize, precision=precision, mode=mode, cval=cval,
              truncate=truncate, dtype=dtype, layout=lay)
    if mode is None:
        kw.update(border=border, border_value=border_value)
    m = _resolve_method("gaussian_blur", x, (sigma,), kw, method, context, threads)
    return _filter(x, _bind_halo(lumen.gaussian_blur, context, threads, sigma, method=m, **kw),
                   rh, rw, mode if mode is not None else border, lay, dtype, out, scheduler)


def box_blur(src, ksize, *, normalize=True, border="reflect", border_value=0.0, dtype=None,
             layout=None, context=None, threads=None, out=None, scheduler=None):
    """lumen.box_blur on a dask array: mean (cv2.blur) or sum (normalize=False) over a box
    (out= as filter2d; lumen.box_blur has no halo, so each block's result is copied there)."""
    x = da.asarray(src)
    lay = _layout(x.shape, layout)
    kw_, kh_ = (ksize if isinstance(ksize, (tuple, list)) else (ksize, ksize))
    rw, rh = overlap_depth(kw_), overlap_depth(kh_)
    kw = dict(normalize=normalize, border=border, border_value=border_value, dtype=dtype,
              layout=lay)
    return _filter(x, _bind(lumen.box_blur, context, threads, ksize, **kw), rh, rw, border, lay,
                   dtype, out, scheduler)


def _along_n(fn, x, weight, bias, context, threads, kw):
    """fn (lumen.conv2d or conv_transpose2d) on an N x C x H x W dask array, one task per block
    of images: the batch axis is the one chunked, C, H and W are taken whole."""
    x = da.asarray(x)
    if x.ndim != 4:
        raise lumen.ArgumentError(f"x: expected N x C x H x W, got shape {x.shape}")
    w = np.asarray(weight, np.float32)
    b = None if bias is None else np.asarray(bias, np.float32)
    # One zero image (a broadcast view: no memory) checks the arguments now, on the client,
    # and gives the result's K x P x Q.
    one = np.broadcast_to(np.float32(0), (1,) + tuple(x.shape[1:]))
    kpq = fn(one, w, b, context=context, **kw).shape[1:]
    x = x.rechunk((x.chunks[0],) + tuple((s,) for s in x.shape[1:]))
    return x.map_blocks(lambda blk: fn(np.asarray(blk, np.float32), w, b,
                                       context=_ctx(context, threads), **kw),
                        chunks=(x.chunks[0],) + tuple((s,) for s in kpq), dtype=np.float32,
                        meta=np.empty((0, 0, 0, 0), np.float32))


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1, context=None,
           threads=None):
    """lumen.conv2d on an N x C x H x W dask array, chunked along N. Bit-identical to the single
    call: each image's result depends on that image alone."""
    return _along_n(lumen.conv2d, x, weight, bias, context, threads,
                    dict(stride=stride, padding=padding, dilation=dilation, groups=groups))


def conv_transpose2d(x, weight, bias=None, *, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, context=None, threads=None):
    """lumen.conv_transpose2d on an N x C x H x W dask array, chunked along N (as conv2d)."""
    return _along_n(lumen.conv_transpose2d, x, weight, bias, context, threads,
                    dict(stride=stride, padding=padding, output_padding=output_padding,
                         groups=groups, dilation=dilation))


# ---- resize ----------------------------------------------------------------------------------

def _resize_shape(h, w, size, fx, fy, rule):
    """The whole result's (height, width): size (width, height), else the factors' rule
    (lumen_resize_output_size: round half to even for opencv and pillow, floor for torch)."""
    if size is not None:
        ow, oh = (size, size) if np.isscalar(size) else size
        return int(oh), int(ow)
    if fx is None:
        raise lumen.ArgumentError("size: give the size or fx (and fy)")
    fy = fx if fy is None else fy
    rnd = np.floor if rule == "torch" else np.rint
    oh, ow = int(rnd(h * fy)), int(rnd(w * fx))
    if oh < 1 or ow < 1:
        raise lumen.ArgumentError(f"fx, fy: {fx} x {w}, {fy} x {h} give an empty result")
    return oh, ow


def _resize_reach(n, out):
    """Input pixels around an output's centre that it may read, on an axis of n -> out: every
    rule's kernel (Lanczos a = 4 at most) widened by the shrink factor, plus the shifts that
    align_corners or a given factor make (half a factor each); the C call checks the window and
    names what is missing, so too little would be an error, never a wrong pixel."""
    s = max(1.0, n / out)
    return int(np.ceil(5 * s)) + 3


def _resize_bounds(n, out, chunks):
    """[(out start, out stop, src start, src stop)] of one axis: the output blocks (chunks, in
    output pixels) and the input each reads."""
    reach, edges = _resize_reach(n, out), np.concatenate([[0], np.cumsum(chunks)]).astype(int)
    res = []
    for o0, o1 in zip(edges[:-1], edges[1:]):
        c0, c1 = (o0 + 0.5) * n / out - 0.5, (o1 - 0.5) * n / out - 0.5
        res.append((int(o0), int(o1), max(0, int(np.floor(c0)) - reach),
                    min(n, int(np.ceil(c1)) + reach + 1)))
    return res


def _out_chunks(chunks, n, out):
    """Output chunks: each about the output of one input chunk (so a block reads about one
    chunk and its margins, whether the image shrinks or grows)."""
    c = max(1, int(round(max(chunks) * out / n)))
    return da.core.normalize_chunks(c, (out,))[0]


def _cuts(chunks, lo, hi):
    """[(chunk index, start, stop)]: the chunks of one axis that the range [lo, hi) overlaps,
    and the part of each inside it (in the chunk's own coordinates)."""
    edges = np.concatenate([[0], np.cumsum(chunks)]).astype(int)
    return [(i, int(max(lo, e0) - e0), int(min(hi, e1) - e0))
            for i, (e0, e1) in enumerate(zip(edges[:-1], edges[1:])) if e0 < hi and e1 > lo]


def _resize_task(fn, hax, wax, rcuts, ccuts, grid, size, kw, dtype):
    """One output block: its input window put together from the parts of the chunks it
    overlaps (grid[i][j]; a view when they are views of one array, _padded), resized as its
    window of the whole resize (into fresh memory of dtype, _fresh)."""
    pieces = []
    for (_, r0, r1), row in zip(rcuts, grid):
        pieces.append([chunk[_ix(chunk.ndim, hax, wax, slice(r0, r1), slice(c0, c1))]
                       for (_, c0, c1), chunk in zip(ccuts, row)])
    window = _padded([r1 - r0 for _, r0, r1 in rcuts], [c1 - c0 for _, c0, c1 in ccuts], pieces,
                     hax, wax)
    shape = list(window.shape)
    shape[hax], shape[wax] = size[1], size[0]
    return fn(window, size=size, out=_fresh(shape, dtype), **kw)


def _resize_graph(x, hax, wax, rows, cols, bind, kw, dtype):
    """The graph of resize: per output block (rows x cols, _resize_bounds; x's chunks on the
    other axes) one task reading the chunks its input window overlaps."""
    token = tokenize(x.name, rows, cols, bind, sorted(kw.items()))
    name = f"lumen-resize-{token}"
    dsk, chunks = {}, list(x.chunks)
    chunks[hax] = tuple(o1 - o0 for o0, o1, _, _ in rows)
    chunks[wax] = tuple(o1 - o0 for o0, o1, _, _ in cols)
    for _, key in _block_keys(x, hax, wax):
        for bi, (o0, o1, s0, s1) in enumerate(rows):
            rcuts = _cuts(x.chunks[hax], s0, s1)
            for bj, (p0, p1, t0, t1) in enumerate(cols):
                ccuts = _cuts(x.chunks[wax], t0, t1)
                grid = [[key(x.name, i, j) for j, _, _ in ccuts] for i, _, _ in rcuts]
                bkw = dict(kw, src_origin=(t0, s0), dst_origin=(p0, o0))
                dsk[key(name, bi, bj)] = (_resize_task, bind, hax, wax, rcuts, ccuts, grid,
                                          (p1 - p0, o1 - o0), bkw, dtype)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, tuple(chunks), meta=np.empty((0,) * x.ndim, dtype))


def resize(src, size=None, *, fx=None, fy=None, interpolation="linear", rule="opencv",
           antialias=False, align_corners=False, dtype=None, layout=None, chunks=None,
           context=None, threads=None):
    """lumen.resize on a dask array: each output block is computed from the input it reads
    (its window of the whole resize: whole_src, whole_dst, src_origin, dst_origin), with the
    whole resize's coefficients and summing order, so the result equals lumen.resize on the
    whole image bit for bit (every rule, interpolation and dtype). size: (width, height) as
    lumen.resize's; chunks: the result's chunks along H and W as (rows, cols) (default: each
    block the output of about one input chunk). N is chunked as src is; C is one block."""
    x = da.asarray(src)
    lay = _layout(x.shape, layout)
    hax, wax = _HW_AXES[lay]
    h, w = x.shape[hax], x.shape[wax]
    oh, ow = _resize_shape(h, w, size, fx, fy, rule)
    kw = dict(fx=fx, fy=fy, interpolation=interpolation, rule=rule, antialias=antialias,
              align_corners=align_corners, dtype=dtype, layout=lay, whole_src=(w, h),
              whole_dst=(ow, oh))
    keep = (hax, wax, 0 if lay.startswith("n") else hax)  # C: one block
    x = x.rechunk(tuple(c if a in keep else (n,) for a, (c, n) in enumerate(zip(x.chunks,
                                                                                x.shape))))
    ch = (da.core.normalize_chunks(chunks[0], (oh,))[0] if chunks else
          _out_chunks(x.chunks[hax], h, oh))
    cw = (da.core.normalize_chunks(chunks[1], (ow,))[0] if chunks else
          _out_chunks(x.chunks[wax], w, ow))
    rows, cols = _resize_bounds(h, oh, ch), _resize_bounds(w, ow, cw)
    # The arguments checked now, on the client: the first output pixel from a zero image
    one = np.broadcast_to(np.zeros((), x.dtype), tuple(
        rows[0][3] if a == hax else cols[0][3] if a == wax else 1 for a in range(x.ndim)))
    out_dtype = lumen.resize(one, (1, 1), **kw).dtype
    return _resize_graph(x, hax, wax, rows, cols, _bind(lumen.resize, context, threads), kw,
                         out_dtype)


# ---- film effects -----------------------------------------------------------------------------

def bloom(response, eta, sigma=20.0, kappa=30.0, rho=0.95, threshold=0.8, radius=0, *,
          context=None, threads=None):
    """lumen.film.bloom on a dask array: a local effect (its PSF reaches R = radius, or
    int(4 max sigma), pixels; border reflect), so blocks with an R-pixel halo give the whole
    image's result. Its convolution picks its own method per block: bit-identical where that
    is direct, within the FFT tolerance where it is the FFT."""
    x = da.asarray(response)
    lay = _layout(x.shape, None)
    r = int(radius) if radius else int(4 * float(np.max(np.atleast_1d(sigma))))
    kw = dict(eta=eta, sigma=sigma, kappa=kappa, rho=rho, threshold=threshold, radius=radius)
    return _apply(x, _bind(lumen.film.bloom, context, threads, **kw), (r, r), (r, r), "reflect",
                  lay, _out_dtype(x, None))


def _whole_planes(x, fn, dtype):
    """fn on blocks that hold whole images (H, W and C unchunked), chunked along N only."""
    if x.ndim == 4:
        x = x.rechunk((x.chunks[0],) + tuple((s,) for s in x.shape[1:]))
    else:
        x = x.rechunk(tuple((s,) for s in x.shape))
    return x.map_blocks(fn, dtype=dtype, meta=np.empty((0,) * x.ndim, dtype))


def halation(lux, effective_halation, energy_fraction=0.03, psf_radius=80.0, threshold=0.5, *,
             context=None, threads=None):
    """lumen.film.halation on a dask array. Halation rescales each channel's layer so that its
    sum over the whole image is the highlights' sum: a global reduction, so each task takes
    whole images (an N x H x W x C batch is split along N only)."""
    x = da.asarray(lux)
    _layout(x.shape, None)
    kw = dict(energy_fraction=energy_fraction, psf_radius=psf_radius, threshold=threshold)
    return _whole_planes(x, _bind(lumen.film.halation, context, threads, effective_halation, **kw),
                         _out_dtype(x, None))


def grain(lux, intensity=0.8, grain_size=1.5, grain_density=1.0, exposure_level=1000.0,
          amount=1.0, seed=0, *, context=None, threads=None):
    """lumen.film.grain on a dask array, as one task. The grain is normalised by the std of the
    whole plane (a global reduction) and its noise is keyed by the image's size and its index
    in the batch, so neither the image nor the batch can be split without changing it; for many
    images use map_images (each image is then its own, as lumen.film.grain on it alone)."""
    x = da.asarray(lux)
    _layout(x.shape, None)
    kw = dict(intensity=intensity, grain_size=grain_size, grain_density=grain_density,
              exposure_level=exposure_level, amount=amount, seed=seed)
    x = x.rechunk(tuple((s,) for s in x.shape))
    dt = _out_dtype(x, None)
    return x.map_blocks(_bind(lumen.film.grain, context, threads, **kw), dtype=dt,
                        meta=np.empty((0,) * x.ndim, dt))


# ---- Zarr -------------------------------------------------------------------------------------

def from_zarr(url, component=None, chunks=None):
    """A dask array over a Zarr array (da.from_zarr; its chunks unless chunks= says)."""
    a = da.from_zarr(url, component=component)
    return a if chunks is None else a.rechunk(chunks)


def to_zarr(arr, url, component=None, overwrite=False, compute=True, **kwargs):
    """Writes a dask array to Zarr block by block (da.to_zarr): nothing is held whole. The
    Zarr chunks are the array's blocks (each written by one task, no two tasks share one)."""
    return da.to_zarr(arr, url, component=component, overwrite=overwrite, compute=compute,
                      **kwargs)


# ---- many images ------------------------------------------------------------------------------

def _atomic_write(path, write):
    """write(tmp) then rename tmp -> path: a reader (or a restarted run) sees the whole file or
    none. The temporary name keeps the extension (lumen.write_image picks the format by it)."""
    d, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    tmp = os.path.join(d, f".{stem}.partial-{uuid.uuid4().hex}{ext}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _clean_partials(out_dir, stem):
    """Removes what a killed run left of this output (its temporary files)."""
    prefix = f".{stem}.partial-"
    for f in os.listdir(out_dir):
        if f.startswith(prefix):
            try:
                os.unlink(os.path.join(out_dir, f))
            except FileNotFoundError:
                pass


def _task(item, op, out_dir, kwargs):
    """One image: (output path, "done" or "skipped")."""
    src, out = item
    if os.path.exists(out):
        return out, "skipped"
    _clean_partials(out_dir, os.path.splitext(os.path.basename(out))[0])
    img = lumen.read_image(src) if isinstance(src, str) else np.asarray(src)
    res = np.asarray(op(img, **kwargs))
    if out.endswith(".npy"):
        _atomic_write(out, lambda p: np.save(p, res))
    else:
        _atomic_write(out, lambda p: lumen.write_image(p, res))
    return out, "done"


def _items(inputs, out_dir, ext):
    """(source, output path) per image: a path keeps its name (ext replaces its extension when
    given); an array stack's images are numbered 000000.npy ..."""
    if isinstance(inputs, (list, tuple)) and all(isinstance(p, (str, os.PathLike))
                                                 for p in inputs):
        items = []
        for p in map(os.fspath, inputs):
            stem, e = os.path.splitext(os.path.basename(p))
            items.append((p, os.path.join(out_dir, stem + (ext or e))))
        if len({o for _, o in items}) != len(items):
            raise lumen.ArgumentError("inputs: two inputs have the same file name; their "
                                      "outputs would overwrite each other")
        return items
    n = len(inputs)
    digits = max(6, len(str(n - 1)))
    return [(inputs[i], os.path.join(out_dir, f"{i:0{digits}d}{ext or '.npy'}"))
            for i in range(n)]


def map_images(inputs, op, out_dir, *, client=None, scheduler=None, npartitions=None,
               ext=None, **kwargs):
    """Runs op(image, **kwargs) on every image and writes each result to out_dir, atomically
    (a temporary file renamed into place). inputs: a list of image paths (lumen.read_image;
    results keep the file name, ext= changes its extension) or a stack of images (an array or
    dask array indexed by its first axis; results are numbered .npy files). An output that
    already exists is skipped, so a killed run restarted with the same arguments does only what
    is missing and loses nothing. Runs on `client` (a distributed.Client) when given, else on
    Dask's `scheduler` ("processes", "threads", "sync"; default: the current one). Returns
    [(output path, "done" | "skipped")] in input order."""
    if not callable(op):
        raise lumen.ArgumentError(f"op: expected a callable, got {op!r}")
    os.makedirs(out_dir, exist_ok=True)
    items = _items(inputs, os.fspath(out_dir), ext)
    if not items:
        return []
    if isinstance(inputs, da.Array):  # one task per image, each reading its own slice
        items = [(inputs[i], o) for i, (_, o) in enumerate(items)]
        bag = db.from_delayed([dask.delayed(lambda a, o: [(a, o)])(a, o) for a, o in items])
    else:
        bag = db.from_sequence(items, npartitions=npartitions or min(len(items), 64))
    res = bag.map(_task, op, os.fspath(out_dir), kwargs)
    if client is not None:
        return list(client.compute(res).result())
    return list(res.compute(scheduler=scheduler) if scheduler else res.compute())
