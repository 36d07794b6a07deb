"""lumen on Dask against plain lumen (python3 -m lumen.bench --case dask; docs/scale-out.md).

    python3 -m lumen.bench --case dask [--size N] [--chunk C] [--repeat R] [--workers 1,2]
                                       [--json]

One N x N f32 image (default 16384, 1 GiB; seeded uniform values) in C x C blocks (default
2048), four filters, each timed as (the min of R warm runs, after one cold run):

  plain      lumen.filter2d / gaussian_blur on the whole image, out= preallocated,
             lumen.Context(threads=2)
  threads    lumen.dask on Dask's threaded scheduler (2 threads, one lumen thread per task)
             into a preallocated array with lumen.dask's out= (the same output as plain's
             out=: each task filters its block with the halo, lumen.filter2d's halo_y/halo_x,
             straight into its region of out)
  store      the same graph without out=, written by da.store into the preallocated array
             (each block's result is new memory, then copied)
  new, persist   the same two into new memory: plain lumen without out= (it allocates its
             result) against dask.persist on the threaded scheduler (the result kept in
             memory as blocks, as the cluster runs keep theirs and as a Dask pipeline hands
             blocks on to Zarr or the next op); first touches of new memory are costly on a
             VM, and both pay them
  cluster W  a LocalCluster of W worker processes (1 thread each, OMP_NUM_THREADS=1), the
             image persisted on the workers beforehand; the result is persisted there too
             (the time includes building the graph, the halo exchange and every task, but
             not moving the image in or out). The workers get WORKER_MALLOC (below) unless
             --dask-malloc keeps Distributed's own setting

Kernels: 5 x 5 and 31 x 31 (random, non-separable), Gaussian sigma 8 (ksize 65) and a
127 x 127 kernel, the FFT's size. The method is chosen once, by plain lumen's auto on the
whole image, and every run is asked for it, so all columns do the same arithmetic.
Mpix/s = N^2 / time; "thr/plain" is threads' throughput over plain's (target >= 0.8),
"pers/new" persist's over new's,
"2w/1w" cluster 2 over cluster 1 (target >= 1.5). The graphs' own cost: an identity (halo 15,
the 31 x 31 kernel's) through Dask's map_overlap and through lumen.dask's graph, on each
scheduler, against np.copyto of the image. Between cluster runs the results are released and
forgotten (untimed): lumen.dask names its graphs by their inputs, so a rerun would find them.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import lumen

#: glibc's malloc settings for the cluster's workers. Distributed sets MALLOC_TRIM_THRESHOLD_ =
#: 65536 for its workers (to hand freed memory back to the OS), and setting any such threshold
#: turns off glibc's dynamic mmap threshold: every block-sized array (16 MB here) is then a
#: fresh mapping whose pages the kernel zeroes on first touch, freed and mapped again for the
#: next block. Serving allocations up to 32 MiB (glibc's ceiling) from the heap and trimming
#: it only past 256 MiB reuses that memory instead (docs/scale-out.md, "Figures").
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}

CASES = [  # name, kind, argument
    ("filter2d_k5", "filter2d", 5),
    ("filter2d_k31", "filter2d", 31),
    ("gaussian_s8", "gaussian", 8.0),
    ("filter2d_k127", "filter2d", 127),
]


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="python3 -m lumen.bench --case dask", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="dask")
    ap.add_argument("--size", type=int, default=16384, metavar="N", help="image side (16384)")
    ap.add_argument("--chunk", type=int, default=2048, metavar="C", help="block side (2048)")
    ap.add_argument("--repeat", type=int, default=3, metavar="R", help="warm runs (3)")
    ap.add_argument("--workers", default="1,2", metavar="W,W",
                    help="LocalCluster sizes to time ('' for none; default 1,2)")
    ap.add_argument("--threads", type=int, default=2, metavar="T",
                    help="plain lumen's threads and the threaded scheduler's (2)")
    ap.add_argument("--dask-malloc", action="store_true",
                    help="keep Distributed's malloc setting for the workers (see WORKER_MALLOC)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    a.workers = [int(w) for w in a.workers.split(",") if w.strip()]
    return a


def kernel_of(kind, arg):
    if kind == "gaussian":
        return None
    r = np.random.default_rng(arg)
    return r.random((arg, arg), np.float32) / (arg * arg)


def best(fn, repeat, after=None):
    """The min of `repeat` warm runs of fn (after a cold one); after(fn's result), untimed,
    follows each run."""
    after = after or (lambda r: None)
    after(fn())  # cold: plans, spectra, worker imports
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = fn()
        ts.append(time.perf_counter() - t)
        after(r)
    return min(ts)


def forget(client, y):
    """Releases y's results on the cluster and waits until the scheduler has forgotten them:
    lumen.dask's graphs are named by their inputs, so the next identical run would otherwise
    find its results still in memory and do nothing."""
    from dask.core import flatten
    keys = list(flatten(y.__dask_keys__()))
    client.cancel(y)
    del y

    def held(dask_scheduler, keys):
        return sum(k in dask_scheduler.tasks for k in keys)
    while client.run_on_scheduler(held, keys=keys):
        time.sleep(0.01)


def plain_call(img, out, kind, arg, method, ctx):
    """plain lumen into out, or into new memory when out is None"""
    if kind == "gaussian":
        return lambda: lumen.gaussian_blur(img, arg, method=method, out=out, context=ctx)
    k = kernel_of(kind, arg)
    return lambda: lumen.filter2d(img, k, method=method, out=out, context=ctx)


def dask_op(x, kind, arg, method, **kw):
    import lumen.dask as ld
    if kind == "gaussian":
        return ld.gaussian_blur(x, arg, method=method, threads=1, **kw)
    return ld.filter2d(x, kernel_of(kind, arg), method=method, threads=1, **kw)


def identity(x):
    return x.map_overlap(lambda b: b, depth=15, boundary="none", dtype=x.dtype,
                         meta=np.empty((0, 0), x.dtype))


def _same(b, context=None):
    return b


def identity_lumen(x):
    """lumen.dask's own graph (halo 15) with a block function that returns its block."""
    import lumen.dask as ld
    return ld._apply(x, ld._bind(_same, None, 1), (15, 15), (15, 15), "reflect", "hw", x.dtype)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import dask
    import dask.array as da
    n, c, rep = args.size, args.chunk, args.repeat
    mpix = n * n / 1e6
    src = da.random.RandomState(0).random_sample((n, n), chunks=c).astype(np.float32)
    img = src.compute(scheduler="threads")
    out = np.empty_like(img)
    ctx = lumen.Context(threads=args.threads)
    rows = []
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, flush=True))
    log(f"lumen.dask bench: {n}x{n} f32 in {c}x{c} blocks, min of {rep} warm runs, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    for name, kind, arg in CASES:
        plain_call(img[:512, :512], out[:512, :512], kind, arg, "auto", ctx)()
        plain_call(img, out, kind, arg, "auto", ctx)()  # auto on the whole image
        method = lumen.last_run()["method"]
        want = out.copy() if method != "fft" else None
        t = best(plain_call(img, out, kind, arg, method, ctx), rep)
        row = {"case": name, "method": method, "plain_s": t}
        x = da.from_array(img, chunks=c)

        def threaded():
            with dask.config.set(num_workers=args.threads):
                dask_op(x, kind, arg, method, out=out, scheduler="threads")

        def stored():
            da.store(dask_op(x, kind, arg, method), out, lock=False, scheduler="threads",
                     num_workers=args.threads)
        row["store_s"] = best(stored, rep)
        if want is not None:
            row["store_exact"] = bool(np.array_equal(out, want))
        out.fill(0)  # so that threads_exact checks what the out= run wrote
        row["threads_s"] = best(threaded, rep)
        row["new_s"] = best(plain_call(img, None, kind, arg, method, ctx), rep)
        row["persist_s"] = best(lambda: dask.persist(dask_op(x, kind, arg, method),
                                                     scheduler="threads",
                                                     num_workers=args.threads), rep)
        if want is not None:
            row["threads_exact"] = bool(np.array_equal(out, want))
        rows.append(row)
        log(f"  {name:15s} {method:9s} plain {mpix / row['plain_s']:8.1f} Mpix/s  threads "
            f"{mpix / row['threads_s']:8.1f} Mpix/s  thr/plain "
            f"{row['plain_s'] / row['threads_s']:.2f}  store {mpix / row['store_s']:8.1f}  "
            f"new {mpix / row['new_s']:8.1f}  persist "
            f"{mpix / row['persist_s']:8.1f}  pers/new {row['new_s'] / row['persist_s']:.2f}")
    del want
    ov = {"copy_s": best(lambda: np.copyto(out, img), rep)}
    xi = da.from_array(img, chunks=c)
    for pre, ident in (("", identity), ("lumen_", identity_lumen)):
        ov[f"{pre}threads_s"] = best(lambda: da.store(ident(xi), out, lock=False,
                                                      scheduler="threads",
                                                      num_workers=args.threads), rep)
    for w in args.workers:
        from distributed import Client, LocalCluster, wait
        os.environ["OMP_NUM_THREADS"] = "1"
        cfg = {"distributed.worker.daemon": False}
        if not args.dask_malloc:
            cfg["distributed.nanny.pre-spawn-environ"] = dict(
                dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_MALLOC)
        with dask.config.set(cfg), \
                LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                             memory_limit=0, dashboard_address=None,
                             env={"OMP_NUM_THREADS": "1"}) as cl, Client(cl) as client:
            xp = client.persist(src)
            wait(xp)
            for row, (name, kind, arg) in zip(rows, CASES):
                def run():
                    y = client.persist(dask_op(xp, kind, arg, row["method"]))
                    wait(y)
                    return y
                row[f"cluster{w}_s"] = best(run, rep, lambda y: forget(client, y))
                log(f"  {name:15s} cluster {w} worker(s) {mpix / row[f'cluster{w}_s']:8.1f} "
                    "Mpix/s")

            for pre, ident in (("", identity), ("lumen_", identity_lumen)):
                def run_ident():
                    y = client.persist(ident(xp))
                    wait(y)
                    return y
                ov[f"{pre}cluster{w}_s"] = best(run_ident, rep, lambda y: forget(client, y))
    summary(args, rows, ov, mpix)
    return 0


def summary(args, rows, ov, mpix):
    if args.json:
        json.dump({"size": args.size, "chunk": args.chunk, "repeat": args.repeat,
                   "rows": rows, "identity": ov, "dask_malloc": args.dask_malloc,
                   "loadavg_end": os.getloadavg()}, sys.stdout,
                  indent=2)
        print()
        return
    cols = ["plain", "threads", "store", "new", "persist"] + [f"cluster{w}" for w in args.workers]
    print("\ncase            method     " + "".join(f"{c:>11s}" for c in cols)
          + "  thr/plain  pers/new" + ("  2w/1w" if {1, 2} <= set(args.workers) else ""))
    print("                           (Mpix/s)")
    for r in rows:
        line = f"{r['case']:15s} {r['method']:9s}  " + "".join(
            f"{mpix / r[c + '_s']:11.1f}" for c in cols)
        line += f"  {r['plain_s'] / r['threads_s']:9.2f}  {r['new_s'] / r['persist_s']:8.2f}"
        if {1, 2} <= set(args.workers):
            line += f"  {r['cluster1_s'] / r['cluster2_s']:5.2f}"
        if "threads_exact" in r:
            same = r["threads_exact"] and r["store_exact"]
            line += "  bit-identical" if same else "  DIFFERS"
        print(line)
    print("\nThe graphs' own cost: an identity (halo 15) through Dask's map_overlap and through "
          "lumen.dask's graph (lumen_*), vs np.copyto of the image:")
    print(f"  copy {mpix / ov['copy_s']:9.1f} Mpix/s ({ov['copy_s'] * 1e3:.0f} ms)")
    for k, v in ov.items():
        if k != "copy_s":
            print(f"  {k[:-2]:15s} {mpix / v:9.1f} Mpix/s ({v * 1e3:.0f} ms)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    sys.exit(main())
