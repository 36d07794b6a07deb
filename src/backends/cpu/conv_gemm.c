/*
 * The fast CPU conv2d: implicit im2col + a blocked, register-tiled SGEMM.
 *
 * Per group g the conv is the GEMM  Y_g (K/g x N*P*Q) = W_g (K/g x C/g*R*S) * X_g, where column
 * j = (b, oy, ox) of X_g holds the taps x[b, c, oy*sh - ph + r*dh, ox*sw - pw + s*dw] (zero
 * outside x) in row p = (c*R + r)*S + s. X_g is never formed: each thread packs the part it
 * needs straight from x into nr-wide slivers (the im2col is the GEMM's B packing, so a 1x1
 * stride-1 conv is a plain GEMM on x's rows: there an image's columns are one contiguous span
 * of each channel plane, packed as runs of whole slivers rather than of output rows). Batching
 * all images into the columns keeps small planes (7x7) from wasting tile columns.
 *
 * The microkernel (mr x nr, chosen per shape among the context's ISA's tiles) and everything
 * derived from the shape -- blocking, item split, packed-weight and scratch buffers -- form a
 * plan kept in ctx->plans under the shape's geometry, so a repeated shape neither re-decides
 * nor re-allocates. The weights are re-packed on every call (in parallel, a transpose of mr
 * contiguous rows): the same pointer may hold new weights (training), and packing costs about
 * what comparing or hashing them would (it reads them once and writes them once).
 *
 * Blocking (BLIS order): a thread takes an item (group, run of column slivers) and, per
 * reduction block of kc terms, packs B (kc x cols) into L2, then for each mr-row sliver of W
 * (kc x mr, kept in L1) runs the microkernel over every B sliver of the item. The first block
 * writes y = bias + partial, later blocks add their partial sums (kernels fold register chunks
 * of LUMEN_GEMM_SUB terms before that; see conv.h). Tiles whose nr columns are contiguous in y
 * and whose mr rows are all real are stored in place; others go through a small tile and are
 * scattered (any strides, negative ones included).
 */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

/* Columns of one sliver that share (image, output row): contiguous outputs in ox. */
typedef struct col_run {
    int32_t sl, t0, len; /* sliver within the item, first column within it, columns */
    int64_t xoff;        /* x offset of image b and the group's first channel */
    int64_t iy0, ix0;    /* input row and column of tap (0, 0) for the first column */
} col_run;

/* Everything a call derives from the shape; the data pointers are filled in per call. */
typedef struct gemm_plan {
    const float *x, *bias;
    float *y;
    int64_t xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w;
    int64_t H, W, R, S, P, Q, PQ;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t groups, cg, kg, crs, ncol;
    int64_t mr, nr;  /* the kernel's tile */
    int64_t panels;  /* mr-row slivers of W per group */
    int64_t slivers; /* nr-column slivers of Y per group */
    int64_t items;   /* column items per group */
    int64_t kc;      /* reduction block (the last may be shorter) */
    bool flat;       /* 1x1, stride 1, unpadded, rows contiguous: an image's columns are one
                        contiguous span of each channel plane (runs then end only at slivers
                        and images) */
    int64_t sl_max;  /* most slivers in one item */
    lumen_sgemm_ukr_fn ukr;
    const char *isa;
    int threads;
    float *apack;           /* packed W, refilled per call */
    unsigned char *scratch; /* per-thread workspaces, ws_bytes apart */
    size_t b_bytes, t_bytes, r_bytes, o_bytes, d_bytes, p_bytes, ws_bytes;
} gemm_plan;

/* Where one run's taps of kernel position (r, s) come from: x offset of the first tap relative
 * to the channel's plane, and the zero-padded ends [0, lo) and [hi, len). */
typedef struct run_tap {
    int64_t src;
    int32_t dst, lo, hi, len; /* dst: offset of the run in a row of the packed block */
} run_tap;

/* Per-thread scratch. */
typedef struct gemm_ws {
    float *b;              /* kc x sl_max*nr, 64-byte aligned */
    float *tile;           /* mr x nr */
    col_run *runs;         /* sl_max*nr */
    int64_t *coloff;       /* y offset of each column of the item */
    run_tap *taps;         /* R*S x runs */
    unsigned char *direct; /* per sliver: nr columns contiguous in y */
} gemm_ws;

static const float zeros[LUMEN_GEMM_MR_MAX] = {0};

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}
static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Panel gp (group g, mr rows of K/g) of W (K, C/g, R, S) into dst[p*mr + i]; rows past K/g are
 * zero. Contiguous rows (the usual layout) are read as mr sequential streams so that the
 * writes are sequential too. */
static void pack_panel(const gemm_plan *pl, const lumen_image *w, int64_t gp, float *dst)
{
    const float *wd = (const float *)w->data;
    const int64_t g = gp / pl->panels, panel = gp % pl->panels, mr = pl->mr;
    const int64_t rows = min64(mr, pl->kg - panel * mr);
    const float *wk[LUMEN_GEMM_MR_MAX];
    for (int64_t i = 0; i < rows; i++)
        wk[i] = wd + (g * pl->kg + panel * mr + i) * w->stride_n;
    if (w->stride_w == 1 && w->stride_h == w->w && w->stride_c == w->h * w->w) {
        for (int64_t p = 0; p < pl->crs; p++, dst += mr) {
            int64_t i = 0;
            for (; i < rows; i++)
                dst[i] = wk[i][p];
            for (; i < mr; i++)
                dst[i] = 0.0f;
        }
        return;
    }
    for (int64_t c = 0; c < w->c; c++)
        for (int64_t r = 0; r < w->h; r++)
            for (int64_t s = 0; s < w->w; s++, dst += mr) {
                const int64_t off = c * w->stride_c + r * w->stride_h + s * w->stride_w;
                int64_t i = 0;
                for (; i < rows; i++)
                    dst[i] = wk[i][off];
                for (; i < mr; i++)
                    dst[i] = 0.0f;
            }
}

/* Runs, column offsets in y and direct-store flags of columns [j0, j1) of one group. */
static int64_t build_runs(const gemm_plan *pl, int64_t g, int64_t j0, int64_t j1, gemm_ws *ws)
{
    const int64_t nr = pl->nr;
    int64_t n = 0;
    for (int64_t j = j0; j < j1;) {
        const int64_t b = j / pl->PQ, rem = j % pl->PQ, oy = rem / pl->Q, ox = rem % pl->Q;
        const int64_t t = j - j0, t0 = t % nr;
        const int64_t len = min64(min64(nr - t0, pl->flat ? pl->PQ - rem : pl->Q - ox), j1 - j);
        col_run *ru = &ws->runs[n++];
        ru->sl = (int32_t)(t / nr), ru->t0 = (int32_t)t0, ru->len = (int32_t)len;
        ru->xoff = b * pl->xs_n + g * pl->cg * pl->xs_c;
        ru->iy0 = oy * pl->sh - pl->ph;
        ru->ix0 = ox * pl->sw - pl->pw;
        for (int64_t u = 0, y = oy, q = ox; u < len; u++, q++) { /* flat runs span rows */
            if (q == pl->Q) q = 0, y++;
            ws->coloff[t + u] = b * pl->ys_n + y * pl->ys_h + q * pl->ys_w;
        }
        j += len;
    }
    const int64_t cols = j1 - j0, nsl = cdiv(cols, nr);
    for (int64_t s = 0; s < nsl; s++) {
        bool ok = cols - s * nr >= nr;
        for (int64_t t = 1; ok && t < nr; t++)
            ok = ws->coloff[s * nr + t] == ws->coloff[s * nr] + t;
        ws->direct[s] = ok;
    }
    return n;
}

/* The taps of every run at every (r, s), once per item: packing then only adds c * xs_c. */
static void build_taps(const gemm_plan *pl, const gemm_ws *ws, int64_t nruns, int64_t kc)
{
    for (int64_t r = 0; r < pl->R; r++)
        for (int64_t s = 0; s < pl->S; s++)
            for (int64_t i = 0; i < nruns; i++) {
                const col_run *ru = &ws->runs[i];
                run_tap *tp = &ws->taps[(r * pl->S + s) * nruns + i];
                const int64_t len = ru->len, iy = ru->iy0 + r * pl->dh, ix = ru->ix0 + s * pl->dw;
                int64_t lo = ix >= 0 ? 0 : cdiv(-ix, pl->sw);
                int64_t hi = ix >= pl->W ? 0 : cdiv(pl->W - ix, pl->sw);
                if (iy < 0 || iy >= pl->H) lo = hi = len;
                if (pl->flat) lo = 0, hi = len; /* the run continues on the next rows */
                lo = min64(lo, len), hi = min64(hi, len);
                if (hi < lo) hi = lo;
                tp->src = ru->xoff + iy * pl->xs_h + ix * pl->xs_w;
                tp->dst = (int32_t)(ru->sl * kc * pl->nr + ru->t0);
                tp->lo = (int32_t)lo, tp->hi = (int32_t)hi, tp->len = (int32_t)len;
            }
}

/* 1x1 convs stream x once per call, one run of <= nr floats per channel row, rows xs_c apart:
 * too many streams for the hardware prefetcher. Prefetching the same run this many channels
 * ahead made pw_256x28x28_k1 4-20% faster (2-core Zen 4, AVX-512; 4 beat 8 and 16). Larger
 * kernels reread their rows across taps from cache and are left alone. */
#define PREFETCH_ROWS 4

/* Reduction rows [p0, p0 + kc) of the item's columns into ws->b as nsl slivers of kc x nr. */
static void pack_b(const gemm_plan *pl, const gemm_ws *ws, int64_t nruns, int64_t cols, int64_t p0,
                   int64_t kc)
{
    const int64_t nr = pl->nr, nsl = cdiv(cols, nr), rs = pl->R * pl->S;
    const int64_t step = pl->sw * pl->xs_w; /* x distance of adjacent columns */
    if (cols % nr) memset(ws->b + (nsl - 1) * kc * nr, 0, (size_t)(kc * nr) * sizeof(float));
    for (int64_t p = 0; p < kc; p++) {
        const int64_t c = (p0 + p) / rs, k = (p0 + p) % rs;
        const float *xc = pl->x + c * pl->xs_c;
        float *dp = ws->b + p * nr;
        const run_tap *tp = ws->taps + k * nruns;
        for (int64_t i = 0; i < nruns; i++, tp++) {
            float *restrict d = dp + tp->dst;
            const float *restrict src = xc + tp->src;
            if (rs == 1 && p + PREFETCH_ROWS < kc && tp->hi > tp->lo) {
                const float *ahead = src + PREFETCH_ROWS * pl->xs_c; /* a channel inside x */
                __builtin_prefetch(ahead + tp->lo * step);
                __builtin_prefetch(ahead + (tp->hi - 1) * step);
            }
            if (tp->len == nr && tp->hi == nr && tp->lo == 0 && step == 1 && nr % 16 == 0) {
                for (int64_t u = 0; u < nr; u += 16) /* a whole sliver row (flat 1x1) */
                    memcpy(d + u, src + u, 16 * sizeof(float));
                continue;
            }
            int64_t t = 0;
            for (; t < tp->lo; t++)
                d[t] = 0.0f;
            if (step == 1)
                for (; t < tp->hi; t++)
                    d[t] = src[t];
            else if (step == 2) /* a constant stride vectorises (stride-2 stems: 40% -> 10%) */
                for (; t < tp->hi; t++)
                    d[t] = src[2 * t];
            else
                for (; t < tp->hi; t++)
                    d[t] = src[t * step];
            for (; t < tp->len; t++)
                d[t] = 0.0f;
        }
    }
}

/* One row segment: d = (first ? bias : d) + t over len contiguous floats (vectorised). */
static inline void put_row(float *restrict d, const float *restrict t, int64_t len, float bias,
                           bool first)
{
    if (first)
        for (int64_t u = 0; u < len; u++)
            d[u] = bias + t[u];
    else
        for (int64_t u = 0; u < len; u++)
            d[u] += t[u];
}

/* Writes (first) or adds the tile's valid rows x nc corner to y through the column offsets,
 * one segment of columns contiguous in y at a time (a 32-column sliver of 7x7 planes spans
 * images, so most slivers come here). */
static void scatter_tile(const gemm_plan *pl, const float *tile, int64_t k0, int64_t rows,
                         const int64_t *coloff, int64_t nc, bool first)
{
    for (int64_t t = 0; t < nc;) {
        int64_t len = 1;
        if (pl->ys_w == 1)
            while (t + len < nc && coloff[t + len] == coloff[t] + len)
                len++;
        for (int64_t i = 0; i < rows; i++) {
            float *yk = pl->y + (k0 + i) * pl->ys_c + coloff[t];
            put_row(yk, tile + i * pl->nr + t, len, pl->bias ? pl->bias[k0 + i] : 0.0f, first);
        }
        t += len;
    }
}

/* The kernel on W sliver `panel` x B sliver `sl` of the item, in place when it can be. */
static inline void tile_op(const gemm_plan *pl, const gemm_ws *ws, int64_t g, int64_t panel,
                           int64_t sl, int64_t cols, int64_t p0, int64_t kc)
{
    const int64_t mr = pl->mr, nr = pl->nr;
    const float *a = pl->apack + ((g * pl->panels + panel) * pl->crs + p0) * mr;
    const float *bs = ws->b + sl * kc * nr;
    const int64_t *co = ws->coloff + sl * nr;
    const int64_t k0 = g * pl->kg + panel * mr, rows = min64(mr, pl->kg - panel * mr);
    const bool first = p0 == 0;
    if (ws->direct[sl] && rows == mr) {
        pl->ukr(kc, a, bs, pl->y + k0 * pl->ys_c + co[0], pl->ys_c,
                pl->bias ? pl->bias + k0 : zeros, first);
    } else {
        pl->ukr(kc, a, bs, ws->tile, nr, zeros, 1);
        scatter_tile(pl, ws->tile, k0, rows, co, min64(nr, cols - sl * nr), first);
    }
}

static void run_item(const gemm_plan *pl, gemm_ws *ws, int64_t item)
{
    const int64_t g = item / pl->items, it = item % pl->items, nr = pl->nr;
    const int64_t sl0 = it * pl->slivers / pl->items, sl1 = (it + 1) * pl->slivers / pl->items;
    const int64_t j0 = sl0 * nr, j1 = min64(sl1 * nr, pl->ncol), cols = j1 - j0;
    if (cols <= 0) return;
    const int64_t nruns = build_runs(pl, g, j0, j1, ws), nsl = cdiv(cols, nr);
    for (int64_t p0 = 0; p0 < pl->crs; p0 += pl->kc) {
        const int64_t kc = min64(pl->kc, pl->crs - p0);
        if (p0 == 0 || kc != pl->kc) build_taps(pl, ws, nruns, kc); /* dst depends on kc */
        pack_b(pl, ws, nruns, cols, p0, kc);
        /* The W sliver (kc x mr) stays in L1 while the item's B slivers stream from L2. */
        for (int64_t panel = 0; panel < pl->panels; panel++)
            for (int64_t sl = 0; sl < nsl; sl++)
                tile_op(pl, ws, g, panel, sl, cols, p0, kc);
    }
}

/* Items per group: about `per` slivers each, and a multiple of the threads when there is one
 * group, so that the dynamic schedule ends evenly. */
static int64_t choose_items(int64_t slivers, int64_t per, int64_t groups, int threads)
{
    int64_t items = (slivers + per / 2) / per;
    if (items < 1) items = 1;
    if (groups * items < 4 * (int64_t)threads) items = cdiv(4 * (int64_t)threads, groups);
    if (groups == 1) items = cdiv(items, threads) * threads;
    return min64(items, slivers);
}

/* Slivers per item, and columns per item of flat convs. Those pack a plain copy of x, whose cost
 * is waiting on memory: items of 768 columns (24 slivers of 32; the B block 256 x 768 floats,
 * 768 KB in Zen 5's 1 MB L2) made pw_256x28x28_k1 1.08x faster than 12 slivers at one thread
 * (Zen 5, AVX-512; 18, 36 and 49 slivers were slower than 24). */
#define ITEM_SLIVERS 12
#define ITEM_COLUMNS_FLAT 768

static size_t round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* The plan cache's key: the geometry of the job, the threads and the kernel. */
typedef struct plan_key {
    char tag[16];
    int64_t geo[32];
    const void *kernel;
    int64_t threads;
} plan_key;

static plan_key make_key(const lumen_conv_job *job, const lumen_sgemm_kernel *k, int threads)
{
    plan_key key;
    memset(&key, 0, sizeof key); /* padding too: the key is compared as bytes */
    memcpy(key.tag, "conv2d.gemm.v1", 15);
    const lumen_image *x = job->x, *w = job->w, *y = job->y;
    const lumen_conv2d_params *p = &job->p;
    const int64_t geo[] = {x->n,        x->c,        x->h,          x->w,          x->stride_n,
                           x->stride_c, x->stride_h, x->stride_w,   w->n,          w->c,
                           w->h,        w->w,        y->h,          y->w,          y->stride_n,
                           y->stride_c, y->stride_h, y->stride_w,   p->stride_h,   p->stride_w,
                           p->pad_h,    p->pad_w,    p->dilation_h, p->dilation_w, p->groups};
    memcpy(key.geo, geo, sizeof geo);
    key.kernel = k, key.threads = threads;
    return key;
}

static void plan_destroy(void *v)
{
    gemm_plan *pl = v;
    if (!pl) return;
    free(pl->apack);
    free(pl->scratch);
    free(pl);
}

/* Blocking and buffers for the job's shape; NULL when out of memory. */
static gemm_plan *plan_create(const lumen_conv_job *job, const lumen_sgemm_kernel *k, int threads)
{
    const lumen_image *x = job->x, *w = job->w, *y = job->y;
    const lumen_conv2d_params *p = &job->p;
    gemm_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return NULL;
    *pl = (gemm_plan){
        .xs_n = x->stride_n,
        .xs_c = x->stride_c,
        .xs_h = x->stride_h,
        .xs_w = x->stride_w,
        .ys_n = y->stride_n,
        .ys_c = y->stride_c,
        .ys_h = y->stride_h,
        .ys_w = y->stride_w,
        .H = x->h,
        .W = x->w,
        .R = w->h,
        .S = w->w,
        .P = y->h,
        .Q = y->w,
        .PQ = y->h * y->w,
        .sh = p->stride_h,
        .sw = p->stride_w,
        .ph = p->pad_h,
        .pw = p->pad_w,
        .dh = p->dilation_h,
        .dw = p->dilation_w,
        .groups = p->groups,
        .cg = w->c,
        .kg = w->n / p->groups,
        .crs = w->c * w->h * w->w,
        .ncol = x->n * y->h * y->w,
        .mr = k->mr,
        .nr = k->nr,
        .ukr = k->fn,
        .isa = k->isa,
        .threads = threads,
    };
    pl->flat = pl->R == 1 && pl->S == 1 && pl->sh == 1 && pl->sw == 1 && pl->ph == 0 &&
               pl->pw == 0 && pl->P == pl->H && pl->Q == pl->W && pl->xs_w == 1 &&
               pl->xs_h == pl->W;
    pl->panels = cdiv(pl->kg, pl->mr);
    pl->slivers = cdiv(pl->ncol, pl->nr);
    pl->items = choose_items(pl->slivers, pl->flat ? ITEM_COLUMNS_FLAT / pl->nr : ITEM_SLIVERS,
                             pl->groups, threads);
    pl->kc = cdiv(pl->crs, cdiv(pl->crs, LUMEN_GEMM_KC));
    pl->sl_max = cdiv(pl->slivers, pl->items);
    const int64_t cols_max = pl->sl_max * pl->nr;
    const size_t a_bytes =
        round64((size_t)(pl->groups * pl->panels * pl->crs * pl->mr) * sizeof(float));
    pl->b_bytes = round64((size_t)(pl->kc * cols_max) * sizeof(float));
    pl->t_bytes = round64((size_t)(pl->mr * pl->nr) * sizeof(float));
    pl->r_bytes = round64((size_t)cols_max * sizeof(col_run));
    pl->o_bytes = round64((size_t)cols_max * sizeof(int64_t));
    pl->d_bytes = round64((size_t)pl->sl_max);
    pl->p_bytes = round64((size_t)(cols_max * pl->R * pl->S) * sizeof(run_tap));
    pl->ws_bytes =
        pl->b_bytes + pl->t_bytes + pl->r_bytes + pl->o_bytes + pl->d_bytes + pl->p_bytes;
    pl->apack = aligned_alloc(64, a_bytes);
    pl->scratch = aligned_alloc(64, pl->ws_bytes * (size_t)threads);
    if (!pl->apack || !pl->scratch) {
        lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                        "conv2d: cannot allocate %zu bytes of packed "
                        "weights and %zu bytes of scratch",
                        a_bytes, pl->ws_bytes * (size_t)threads);
        plan_destroy(pl);
        return NULL;
    }
    return pl;
}

/* The cached plan of the job's shape, made on a miss. */
static gemm_plan *get_plan(lumen_context *ctx, const lumen_conv_job *job)
{
    const lumen_sgemm_kernel *k = lumen_cpu_sgemm_kernel_for_rows(ctx, job->w->n / job->p.groups);
    const plan_key key = make_key(job, k, ctx->threads);
    gemm_plan *pl = lumen_plan_cache_get(ctx->plans, &key, sizeof key);
    if (pl) return pl;
    pl = plan_create(job, k, ctx->threads);
    if (!pl) return NULL;
    const size_t bytes = (size_t)(pl->groups * pl->panels * pl->crs * pl->mr) * sizeof(float) +
                         pl->ws_bytes * (size_t)pl->threads;
    pl = lumen_plan_cache_put(ctx->plans, &key, sizeof key, pl, plan_destroy, bytes);
    if (!pl) lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "conv2d: cannot cache the plan");
    return pl;
}

static gemm_ws workspace(const gemm_plan *pl, int tid)
{
    unsigned char *base = pl->scratch + pl->ws_bytes * (size_t)tid;
    const size_t t = pl->b_bytes, r = t + pl->t_bytes, o = r + pl->r_bytes, d = o + pl->o_bytes;
    const size_t q = d + pl->d_bytes;
    return (gemm_ws){.b = (float *)base,
                     .tile = (float *)(base + t),
                     .runs = (col_run *)(base + r),
                     .coloff = (int64_t *)(base + o),
                     .direct = base + d,
                     .taps = (run_tap *)(base + q)};
}

static size_t apack_bytes(const gemm_plan *pl)
{
    return round64((size_t)(pl->groups * pl->panels * pl->crs * pl->mr) * sizeof(float));
}

typedef struct pack_run {
    const gemm_plan *pl;
    const lumen_image *w;
    float *a;
} pack_run;

static void pack_one(void *arg, int64_t gp, int tid)
{
    (void)tid;
    const pack_run *r = arg;
    pack_panel(r->pl, r->w, gp, r->a + gp * r->pl->crs * r->pl->mr);
}

/* The packing of W depends on the kernel's mr and the weights' shape only: the plan of the
 * first thread count packs what every call would. */
lumen_status lumen_cpu_conv2d_gemm_pack(lumen_context *ctx, const lumen_conv_job *job,
                                        lumen_conv_pack *pack)
{
    const gemm_plan *pl = get_plan(ctx, job);
    if (!pl) return LUMEN_ERR_OUT_OF_MEMORY;
    const size_t bytes = apack_bytes(pl);
    float *a = aligned_alloc(64, bytes);
    if (!a)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "w: cannot allocate %zu bytes of packed weights", bytes);
    pack_run r = {pl, job->w, a};
    lumen_cpu_parallel_for(pl->threads, pl->groups * pl->panels, pack_one, &r);
    pack->kernel = lumen_cpu_sgemm_kernel_for_rows(ctx, job->w->n / job->p.groups);
    pack->data = a, pack->bytes = bytes;
    return LUMEN_OK;
}

typedef struct gemm_run {
    const gemm_plan *pl;
    const lumen_image *w;
    int64_t panels; /* of W to pack first, or 0 with prepacked weights */
    lumen_cpu_sched *sched;
    lumen_cpu_stop *stop;
} gemm_run;

static void gemm_body(void *arg, int tid)
{
    const gemm_run *r = arg;
    const gemm_plan *pl = r->pl;
    gemm_ws ws = workspace(pl, tid);
#pragma omp for schedule(static)
    for (int64_t gp = 0; gp < r->panels; gp++)
        pack_panel(pl, r->w, gp, pl->apack + gp * pl->crs * pl->mr);
    /* Own share first: in a loop of calls each thread finds its items' x and y in its
     * caches (cpu_sched.c; 4-12 % faster than dynamic on pw, s2 and l4, Zen 5). */
    int turn = 0;
    for (int64_t item; (item = lumen_cpu_sched_next(r->sched, tid, &turn)) >= 0;)
        if (!lumen_cpu_should_stop(r->stop)) run_item(pl, &ws, item);
}

lumen_status lumen_cpu_conv2d_gemm(lumen_context *ctx, const lumen_conv_job *job, const char **isa)
{
    const gemm_plan *cached = get_plan(ctx, job);
    if (!cached) return LUMEN_ERR_OUT_OF_MEMORY;
    gemm_plan pl = *cached;
    pl.x = (const float *)job->x->data, pl.y = (float *)job->y->data, pl.bias = job->bias;
    const lumen_conv_pack *pk = job->pack;
    const bool prepacked = pk && pk->algo == LUMEN_CONV_GEMM &&
                           pk->kernel == lumen_cpu_sgemm_kernel_for_rows(ctx, pl.kg) &&
                           pk->bytes == apack_bytes(&pl);
    if (prepacked) pl.apack = pk->data; /* read only from here on */
    const int64_t panels = prepacked ? 0 : pl.groups * pl.panels, total = pl.groups * pl.items;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx); /* polled per item (docs/faults.md) */
    int team = lumen_cpu_team_size(ctx, lumen_cpu_conv_work(job, LUMEN_CONV_WORK_DENSE), total);
    if (team > pl.threads) team = pl.threads; /* the plan's workspaces */
    lumen_cpu_sched sched;
    gemm_run r = {&pl, job->w, panels, &sched, &stop};
    const lumen_status st = lumen_cpu_team_share(team, total, &sched, gemm_body, &r);
    if (isa) *isa = pl.isa;
    return lumen_cpu_stop_status(&stop, st);
}
