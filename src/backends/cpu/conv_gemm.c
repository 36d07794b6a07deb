/*
 * The fast CPU conv2d: implicit im2col + a blocked, register-tiled SGEMM.
 *
 * Per group g the conv is the GEMM  Y_g (K/g x N*P*Q) = W_g (K/g x C/g*R*S) * X_g, where column
 * j = (b, oy, ox) of X_g holds the taps x[b, c, oy*sh - ph + r*dh, ox*sw - pw + s*dw] (zero
 * outside x) in row p = (c*R + r)*S + s. X_g is never formed: each thread packs the part it
 * needs straight from x into NR-wide slivers (the im2col is the GEMM's B packing, so a 1x1
 * stride-1 conv is a plain GEMM on x's rows). Batching all images into the columns keeps
 * small planes (7x7) from wasting tile columns.
 *
 * Blocking (GotoBLAS/BLIS order): W is packed once per call into MR-row slivers over the whole
 * reduction; a thread takes an item (group, run of column slivers) and, per reduction block of
 * at most LUMEN_GEMM_KC terms, packs B (kc x nc), then for each B sliver (kc x 16 floats, kept
 * in L1) runs the microkernel over every W sliver of the group (the kc x K/g block of W stays
 * in L2). The first block writes y = bias + partial, later blocks add their partial sums: f32
 * accumulation, with the reduction split into <= 256-term blocks. Tiles whose 16 columns are
 * contiguous in y and whose 6 rows are all real are stored in place; others go through a small
 * tile and are scattered (any strides, negative ones included).
 */
#include "conv.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MR LUMEN_GEMM_MR
#define NR LUMEN_GEMM_NR

/* Columns of one sliver that share (image, output row): contiguous outputs in ox. */
typedef struct col_run {
    int32_t sl, t0, len; /* sliver within the item, first column within it, columns */
    int64_t xoff;        /* x offset of image b and the group's first channel */
    int64_t iy0, ix0;    /* input row and column of tap (0, 0) for the first column */
} col_run;

typedef struct gemm_plan {
    const float *x, *bias;
    float *y;
    int64_t xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w;
    int64_t H, W, R, S, P, Q, PQ;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t groups, cg, kg, crs, ncol;
    int64_t panels;  /* MR-row slivers of W per group */
    int64_t slivers; /* NR-column slivers of Y per group */
    int64_t items;   /* column items per group */
    int64_t kc;      /* reduction block (the last may be shorter) */
    int64_t sl_max;  /* most slivers in one item */
    const float *apack;
    lumen_sgemm_ukr_fn ukr;
} gemm_plan;

/* Per-thread scratch. */
typedef struct gemm_ws {
    float *b;       /* kc x sl_max*NR, 64-byte aligned */
    float *tile;    /* MR x NR */
    col_run *runs;  /* sl_max*NR */
    int64_t *coloff; /* y offset of each column of the item */
    unsigned char *direct; /* per sliver: 16 columns contiguous in y */
} gemm_ws;

static const float zeros[MR] = {0};

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* W (K, C/g, R, S) into apack[(g*panels + panel)*crs*MR + p*MR + i], rows past K/g zero. */
static void pack_weights(const gemm_plan *pl, const lumen_image *w, float *apack, int threads)
{
    const float *wd = (const float *)w->data;
    const int64_t total = pl->groups * pl->panels;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t gp = 0; gp < total; gp++) {
        const int64_t g = gp / pl->panels, panel = gp % pl->panels;
        float *dst = apack + gp * pl->crs * MR;
        for (int i = 0; i < MR; i++) {
            const int64_t kk = panel * MR + i;
            if (kk >= pl->kg) {
                for (int64_t p = 0; p < pl->crs; p++) dst[p * MR + i] = 0.0f;
                continue;
            }
            const float *wk = wd + (g * pl->kg + kk) * w->stride_n;
            int64_t p = 0;
            for (int64_t c = 0; c < w->c; c++)
                for (int64_t r = 0; r < w->h; r++)
                    for (int64_t s = 0; s < w->w; s++, p++)
                        dst[p * MR + i] = wk[c * w->stride_c + r * w->stride_h + s * w->stride_w];
        }
    }
}

/* Runs, column offsets in y and direct-store flags of columns [j0, j1) of one group. */
static int64_t build_runs(const gemm_plan *pl, int64_t g, int64_t j0, int64_t j1, gemm_ws *ws)
{
    int64_t n = 0;
    for (int64_t j = j0; j < j1;) {
        const int64_t b = j / pl->PQ, rem = j % pl->PQ, oy = rem / pl->Q, ox = rem % pl->Q;
        const int64_t t = j - j0, t0 = t % NR;
        const int64_t len = min64(min64(NR - t0, pl->Q - ox), j1 - j);
        col_run *ru = &ws->runs[n++];
        ru->sl = (int32_t)(t / NR), ru->t0 = (int32_t)t0, ru->len = (int32_t)len;
        ru->xoff = b * pl->xs_n + g * pl->cg * pl->xs_c;
        ru->iy0 = oy * pl->sh - pl->ph;
        ru->ix0 = ox * pl->sw - pl->pw;
        for (int64_t u = 0; u < len; u++)
            ws->coloff[t + u] = b * pl->ys_n + oy * pl->ys_h + (ox + u) * pl->ys_w;
        j += len;
    }
    const int64_t cols = j1 - j0, nsl = cdiv(cols, NR);
    for (int64_t s = 0; s < nsl; s++) {
        bool ok = cols - s * NR >= NR;
        for (int t = 1; ok && t < NR; t++)
            ok = ws->coloff[s * NR + t] == ws->coloff[s * NR] + t;
        ws->direct[s] = ok;
    }
    return n;
}

/* One run's taps for reduction row (c, r, s) into dst[0..len): zero outside x. */
static inline void pack_run(const gemm_plan *pl, const col_run *ru, int64_t c, int64_t r,
                            int64_t s, float *dst)
{
    const int64_t len = ru->len, iy = ru->iy0 + r * pl->dh;
    if (iy < 0 || iy >= pl->H) {
        memset(dst, 0, (size_t)len * sizeof(float));
        return;
    }
    const float *row = pl->x + ru->xoff + c * pl->xs_c + iy * pl->xs_h;
    const int64_t ix = ru->ix0 + s * pl->dw, sw = pl->sw;
    int64_t lo = ix >= 0 ? 0 : cdiv(-ix, sw);
    int64_t hi = ix >= pl->W ? 0 : cdiv(pl->W - ix, sw);
    if (lo > len) lo = len;
    if (hi > len) hi = len;
    if (hi < lo) hi = lo;
    for (int64_t t = 0; t < lo; t++) dst[t] = 0.0f;
    if (pl->xs_w == 1 && sw == 1) {
        memcpy(dst + lo, row + ix + lo, (size_t)(hi - lo) * sizeof(float));
    } else if (pl->xs_w == 1) {
        for (int64_t t = lo; t < hi; t++) dst[t] = row[ix + t * sw];
    } else {
        for (int64_t t = lo; t < hi; t++) dst[t] = row[(ix + t * sw) * pl->xs_w];
    }
    for (int64_t t = hi; t < len; t++) dst[t] = 0.0f;
}

/* Reduction rows [p0, p0 + kc) of the item's columns into ws->b as nsl slivers of kc x NR. */
static void pack_b(const gemm_plan *pl, const gemm_ws *ws, int64_t nruns, int64_t cols,
                   int64_t p0, int64_t kc)
{
    const int64_t nsl = cdiv(cols, NR);
    if (cols % NR) memset(ws->b + (nsl - 1) * kc * NR, 0, (size_t)(kc * NR) * sizeof(float));
    const int64_t rs = pl->R * pl->S;
    int64_t c = p0 / rs, r = (p0 % rs) / pl->S, s = p0 % pl->S;
    for (int64_t p = 0; p < kc; p++) {
        float *dp = ws->b + p * NR;
        for (int64_t i = 0; i < nruns; i++) {
            const col_run *ru = &ws->runs[i];
            pack_run(pl, ru, c, r, s, dp + ru->sl * kc * NR + ru->t0);
        }
        if (++s == pl->S) {
            s = 0;
            if (++r == pl->R) r = 0, c++;
        }
    }
}

/* Writes (first) or adds the tile's valid mr x nc corner to y through the column offsets. */
static void scatter_tile(const gemm_plan *pl, const float *tile, int64_t k0, int64_t mr,
                         const int64_t *coloff, int64_t nc, bool first)
{
    for (int64_t i = 0; i < mr; i++) {
        float *yk = pl->y + (k0 + i) * pl->ys_c;
        const float bv = pl->bias ? pl->bias[k0 + i] : 0.0f;
        for (int64_t t = 0; t < nc; t++) {
            float *d = yk + coloff[t];
            *d = (first ? bv : *d) + tile[i * NR + t];
        }
    }
}

static void run_item(const gemm_plan *pl, gemm_ws *ws, int64_t item)
{
    const int64_t g = item / pl->items, it = item % pl->items;
    const int64_t sl0 = it * pl->slivers / pl->items, sl1 = (it + 1) * pl->slivers / pl->items;
    const int64_t j0 = sl0 * NR, j1 = min64(sl1 * NR, pl->ncol), cols = j1 - j0;
    if (cols <= 0) return;
    const int64_t nruns = build_runs(pl, g, j0, j1, ws), nsl = cdiv(cols, NR);
    const float *abase = pl->apack + g * pl->panels * pl->crs * MR;
    for (int64_t p0 = 0; p0 < pl->crs; p0 += pl->kc) {
        const int64_t kc = min64(pl->kc, pl->crs - p0);
        const bool first = p0 == 0;
        pack_b(pl, ws, nruns, cols, p0, kc);
        for (int64_t sl = 0; sl < nsl; sl++) {
            const float *bs = ws->b + sl * kc * NR;
            const int64_t *co = ws->coloff + sl * NR, nc = min64(NR, cols - sl * NR);
            for (int64_t panel = 0; panel < pl->panels; panel++) {
                const float *a = abase + (panel * pl->crs + p0) * MR;
                const int64_t k0 = g * pl->kg + panel * MR, mr = min64(MR, pl->kg - panel * MR);
                if (ws->direct[sl] && mr == MR) {
                    pl->ukr(kc, a, bs, pl->y + k0 * pl->ys_c + co[0], pl->ys_c,
                            pl->bias ? pl->bias + k0 : zeros, first);
                } else {
                    pl->ukr(kc, a, bs, ws->tile, NR, zeros, 1);
                    scatter_tile(pl, ws->tile, k0, mr, co, nc, first);
                }
            }
        }
    }
}

/* Items per group: about 12 slivers each, and a multiple of the threads when there is one
 * group, so that the dynamic schedule ends evenly. */
static int64_t choose_items(int64_t slivers, int64_t groups, int threads)
{
    int64_t items = (slivers + 6) / 12;
    if (items < 1) items = 1;
    if (groups * items < 4 * (int64_t)threads) items = cdiv(4 * (int64_t)threads, groups);
    if (groups == 1) items = cdiv(items, threads) * threads;
    return min64(items, slivers);
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

lumen_status lumen_cpu_conv2d_gemm(lumen_context *ctx, const lumen_conv_job *job, const char **isa)
{
    const lumen_image *x = job->x, *w = job->w, *y = job->y;
    const lumen_conv2d_params *p = &job->p;
    const bool avx2 = lumen_ctx_use_avx2(ctx);
    gemm_plan pl = {
        .x = (const float *)x->data, .bias = job->bias, .y = (float *)y->data,
        .xs_n = x->stride_n, .xs_c = x->stride_c, .xs_h = x->stride_h, .xs_w = x->stride_w,
        .ys_n = y->stride_n, .ys_c = y->stride_c, .ys_h = y->stride_h, .ys_w = y->stride_w,
        .H = x->h, .W = x->w, .R = w->h, .S = w->w, .P = y->h, .Q = y->w, .PQ = y->h * y->w,
        .sh = p->stride_h, .sw = p->stride_w, .ph = p->pad_h, .pw = p->pad_w,
        .dh = p->dilation_h, .dw = p->dilation_w, .groups = p->groups, .cg = w->c,
        .kg = w->n / p->groups, .crs = w->c * w->h * w->w, .ncol = x->n * y->h * y->w,
        .ukr = avx2 ? lumen_sgemm_ukr_avx2 : lumen_sgemm_ukr_generic,
    };
    const int threads = ctx->threads;
    pl.panels = cdiv(pl.kg, MR);
    pl.slivers = cdiv(pl.ncol, NR);
    pl.items = choose_items(pl.slivers, pl.groups, threads);
    pl.kc = cdiv(pl.crs, cdiv(pl.crs, LUMEN_GEMM_KC));
    pl.sl_max = cdiv(pl.slivers, pl.items);
    const int64_t cols_max = pl.sl_max * NR;

    const size_t a_bytes = round64((size_t)(pl.groups * pl.panels * pl.crs * MR) * sizeof(float));
    const size_t b_bytes = round64((size_t)(pl.kc * cols_max) * sizeof(float));
    const size_t t_bytes = round64(MR * NR * sizeof(float));
    const size_t r_bytes = round64((size_t)cols_max * sizeof(col_run));
    const size_t o_bytes = round64((size_t)cols_max * sizeof(int64_t));
    const size_t d_bytes = round64((size_t)pl.sl_max);
    const size_t ws_bytes = b_bytes + t_bytes + r_bytes + o_bytes + d_bytes;
    float *apack = aligned_alloc(64, a_bytes);
    unsigned char *scratch = aligned_alloc(64, ws_bytes * (size_t)threads);
    if (!apack || !scratch) {
        free(apack), free(scratch);
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "conv2d: cannot allocate %zu bytes of "
                               "packed weights and %zu bytes of scratch", a_bytes,
                               ws_bytes * (size_t)threads);
    }
    pack_weights(&pl, w, apack, threads);
    pl.apack = apack;

    const int64_t total = pl.groups * pl.items;
#pragma omp parallel num_threads(threads)
    {
#ifdef _OPENMP
        const int tid = omp_get_thread_num();
#else
        const int tid = 0;
#endif
        unsigned char *base = scratch + ws_bytes * (size_t)tid;
        gemm_ws ws = {
            .b = (float *)base,
            .tile = (float *)(base + b_bytes),
            .runs = (col_run *)(base + b_bytes + t_bytes),
            .coloff = (int64_t *)(base + b_bytes + t_bytes + r_bytes),
            .direct = base + b_bytes + t_bytes + r_bytes + o_bytes,
        };
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < total; item++) run_item(&pl, &ws, item);
    }
    free(apack);
    free(scratch);
    if (isa) *isa = avx2 ? "avx2+fma" : "generic";
    return LUMEN_OK;
}
