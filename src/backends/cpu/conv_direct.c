/*
 * Direct conv2d for short reductions (first layers: C <= LUMEN_DC_MAX_C, groups 1), without
 * im2col (conv.h states the contract; docs/conv2d.md the error bound and the figures).
 *
 * On the SGEMM path a 3-channel 7x7 stride-2 stem packs all C*R*S = 147 taps of every output
 * column (59 MB of packed B for 8 x 3 x 224 x 224): a quarter of its time. Here a thread takes
 * an item (image, band of output rows), copies the input rows the band reads into a scratch
 * (rows x stride phases x L floats per channel: phase f holds padded columns f, f + sw, ...,
 * zeros outside x), and then every tap of 16 (AVX-512) or 8 (AVX2) adjacent outputs of a row
 * is one contiguous load at a fixed offset from the vector's base. The tile kernel
 * (conv_direct_kernel.h) keeps V such vectors (taken in row order across the band: a row's
 * last, partial vector and the next row's first share a tile) x KB output channels in
 * registers and walks the taps once. A row's last vector, when Q is no multiple of the
 * vector, is loaded and stored masked (lanes past Q untouched); y whose rows are not dense
 * (stride_w != 1) gets each tile through a small buffer and a strided copy.
 */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

/* A thread's phase scratch is bounded (bands shrink to fit; int32 tap offsets): shapes whose
 * band of one output row needs more (very wide rows, large dilations) take the SGEMM path. */
#define DC_MAX_SCRATCH (1 << 20) /* floats per thread */
/* Output rows per item: enough to amortise the R - sh rows every band copies again. */
#define DC_BAND 16

typedef struct dc_isa {
    lumen_dc_tile_fn fn;
    int vl, v, kb;
    const char *name;
} dc_isa;

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}
static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static bool pick(const lumen_context *ctx, dc_isa *k)
{
    if (lumen_ctx_use_avx512(ctx)) {
        *k = (dc_isa){lumen_dc_tile_avx512, LUMEN_DC_AVX512_VL, LUMEN_DC_AVX512_V,
                      LUMEN_DC_AVX512_KB, "avx512"};
        return true;
    }
    if (lumen_ctx_use_avx2(ctx)) {
        *k = (dc_isa){lumen_dc_tile_avx2, LUMEN_DC_AVX2_VL, LUMEN_DC_AVX2_V, LUMEN_DC_AVX2_KB,
                      "avx2+fma"};
        return true;
    }
    return false;
}

/* Everything a call derives from the shape and the kernel. */
typedef struct dc_plan {
    const lumen_conv_job *job;
    dc_isa k;
    int64_t C, H, W, K, R, S, P, Q, sh, sw, ph, pw, dh, dw;
    int64_t nvec;   /* vectors per output row */
    int64_t L;      /* floats per phase row */
    int64_t band;   /* output rows per item */
    int64_t rows;   /* input rows of a whole band */
    int64_t bands;  /* per image */
    int64_t taps;   /* C*R*S */
    int64_t kblk;   /* channel blocks of KB */
    size_t scratch; /* floats per thread: phases, then the tile buffer */
} dc_plan;

static int64_t band_rows(const dc_plan *pl, int64_t band)
{
    return (band - 1) * pl->sh + (pl->R - 1) * pl->dh + 1;
}

static bool plan_of(const lumen_context *ctx, const lumen_conv_job *job, dc_plan *pl)
{
    const lumen_image *x = job->x, *w = job->w, *y = job->y;
    const lumen_conv2d_params *p = &job->p;
    memset(pl, 0, sizeof *pl);
    if (!pick(ctx, &pl->k)) return false;
    *pl = (dc_plan){.job = job,
                    .k = pl->k,
                    .C = x->c,
                    .H = x->h,
                    .W = x->w,
                    .K = w->n,
                    .R = w->h,
                    .S = w->w,
                    .P = y->h,
                    .Q = y->w,
                    .sh = p->stride_h,
                    .sw = p->stride_w,
                    .ph = p->pad_h,
                    .pw = p->pad_w,
                    .dh = p->dilation_h,
                    .dw = p->dilation_w};
    pl->nvec = cdiv(pl->Q, pl->k.vl);
    /* the last vector of a row reads up to column nvec*VL - 1 + (S-1)*dw/sw of a phase */
    pl->L = cdiv(pl->nvec * pl->k.vl + (pl->S - 1) * pl->dw / pl->sw, 16) * 16;
    pl->taps = pl->C * pl->R * pl->S;
    pl->kblk = cdiv(pl->K, pl->k.kb);
    /* Bands of DC_BAND rows, fewer when there would be under 4 items per thread. */
    const int64_t threads = ctx->threads, want = 4 * threads;
    pl->band = min64(DC_BAND, pl->P);
    while (pl->band > 1 && x->n * cdiv(pl->P, pl->band) < want)
        pl->band = cdiv(pl->band, 2);
    while (pl->band > 1 && pl->C * band_rows(pl, pl->band) * pl->sw * pl->L > DC_MAX_SCRATCH)
        pl->band = cdiv(pl->band, 2);
    pl->rows = band_rows(pl, pl->band);
    pl->bands = cdiv(pl->P, pl->band);
    const int64_t phases = pl->C * pl->rows * pl->sw * pl->L;
    pl->scratch = (size_t)(phases + pl->k.v * pl->k.vl * pl->k.kb);
    return phases <= DC_MAX_SCRATCH;
}

bool lumen_cpu_conv2d_direct_applies(const lumen_context *ctx, const lumen_conv_job *job)
{
    const lumen_image *x = job->x, *w = job->w;
    if (job->p.groups != 1 || x->c > LUMEN_DC_MAX_C) return false;
    if (w->h > 16 || w->w > 16) return false; /* taps in registers: short reductions only */
    dc_plan pl;
    return plan_of(ctx, job, &pl);
}

/* Input rows of band `b` of image n into the phase scratch xs (zeros outside x). */
static void fill_band(const dc_plan *pl, int64_t n, int64_t b, float *xs)
{
    const lumen_image *x = pl->job->x;
    const float *xd = (const float *)x->data + n * x->stride_n;
    const int64_t oy0 = b * pl->band, nb = min64(pl->band, pl->P - oy0);
    const int64_t rows = band_rows(pl, nb), iy0 = oy0 * pl->sh - pl->ph, sw = pl->sw;
    const int64_t step = sw * x->stride_w;
    for (int64_t c = 0; c < pl->C; c++)
        for (int64_t r = 0; r < rows; r++) {
            float *d = xs + (c * pl->rows + r) * sw * pl->L;
            const int64_t iy = iy0 + r;
            if (iy < 0 || iy >= pl->H) {
                memset(d, 0, (size_t)(sw * pl->L) * sizeof(float));
                continue;
            }
            const float *row = xd + c * x->stride_c + iy * x->stride_h;
            for (int64_t f = 0; f < sw; f++, d += pl->L) {
                /* phase column i is x column i*sw + f - pw: inside x for i in [lo, hi) */
                const int64_t lo = min64(pl->pw > f ? cdiv(pl->pw - f, sw) : 0, pl->L);
                const int64_t hi = min64(cdiv(pl->W + pl->pw - f, sw), pl->L);
                int64_t i = 0;
                for (; i < lo; i++)
                    d[i] = 0.0f;
                const float *src = row + (lo * sw + f - pl->pw) * x->stride_w;
                if (step == 1)
                    memcpy(d + lo, src, (size_t)(hi > lo ? hi - lo : 0) * sizeof(float));
                else if (step == 2) /* a constant stride vectorises */
                    for (int64_t u = 0; u < hi - lo; u++)
                        d[lo + u] = src[2 * u];
                else
                    for (int64_t u = 0; u < hi - lo; u++)
                        d[lo + u] = src[u * step];
                for (i = hi > lo ? hi : lo; i < pl->L; i++)
                    d[i] = 0.0f;
            }
        }
}

/* The tile buffer's rows back into y through its strides: lanes below Q, channels below nk. */
static void copy_out(const dc_plan *pl, const float *tb, int64_t n, int64_t k0, int nk,
                     const int64_t *oy, const int64_t *ox0, int nv)
{
    const lumen_image *y = pl->job->y;
    const int64_t vl = pl->k.vl, ldc = pl->k.v * vl;
    for (int v = 0; v < nv; v++) {
        const int64_t lanes = min64(vl, pl->Q - ox0[v]);
        for (int k = 0; k < nk; k++) {
            float *d = (float *)y->data + n * y->stride_n + (k0 + k) * y->stride_c +
                       oy[v] * y->stride_h + ox0[v] * y->stride_w;
            const float *s = tb + k * ldc + v * vl;
            for (int64_t l = 0; l < lanes; l++)
                d[l * y->stride_w] = s[l];
        }
    }
}

/* Item (image n, band b): its rows into the scratch, then per channel block every tile (the
 * block's weights stay in L1 while the band's input streams from L2: 2-11% faster than tiles
 * outermost on Zen 5). */
static void run_item(const dc_plan *pl, const float *wp, const float *bp, const int32_t *off,
                     int64_t n, int64_t b, float *xs)
{
    const lumen_image *y = pl->job->y;
    float *tb = xs + pl->C * pl->rows * pl->sw * pl->L;
    fill_band(pl, n, b, xs);
    const int64_t oy0 = b * pl->band, nb = min64(pl->band, pl->P - oy0);
    const int64_t slots = nb * pl->nvec, vl = pl->k.vl, V = pl->k.v, KB = pl->k.kb;
    const int64_t row = pl->sh * pl->sw * pl->L; /* scratch floats from one output row's taps
                                                    to the next's */
    const bool buffered = y->stride_w != 1;
    lumen_dc_tile t = {.ldc = buffered ? V * vl : y->stride_c, .off = off, .taps = pl->taps};
    for (int64_t kb = 0; kb < pl->kblk; kb++) {
        const int64_t k0 = kb * KB;
        float *yk = (float *)y->data + n * y->stride_n + k0 * y->stride_c;
        t.w = wp + kb * pl->taps * KB, t.bias = bp + k0;
        t.nk = (int)min64(KB, pl->K - k0);
        /* the slots (output row, vector) in row order, a cursor instead of divisions */
        int64_t oy = oy0, q0 = 0;
        for (int64_t s0 = 0; s0 < slots; s0 += V) {
            int64_t oys[LUMEN_DC_V_MAX], ox0[LUMEN_DC_V_MAX];
            t.nv = (int)min64(V, slots - s0);
            for (int v = 0; v < t.nv; v++) {
                oys[v] = oy, ox0[v] = q0;
                t.in[v] = xs + (oy - oy0) * row + q0;
                t.lanes[v] = buffered ? (int)vl : (int)min64(vl, pl->Q - q0);
                t.out[v] = buffered ? tb + v * vl : yk + oy * y->stride_h + q0;
                q0 += vl;
                if (q0 >= pl->Q) q0 = 0, oy++;
            }
            pl->k.fn(&t);
            if (buffered) copy_out(pl, tb, n, k0, t.nk, oys, ox0, t.nv);
        }
    }
}

/* Weights as kblk blocks of taps x KB (zeros past K), biases padded to kblk*KB, tap offsets. */
static void pack(const dc_plan *pl, float *wp, float *bp, int32_t *off)
{
    const lumen_image *w = pl->job->w;
    const float *wd = (const float *)w->data;
    const int64_t KB = pl->k.kb;
    for (int64_t kb = 0; kb < pl->kblk; kb++)
        for (int64_t c = 0, t = 0; c < pl->C; c++)
            for (int64_t r = 0; r < pl->R; r++)
                for (int64_t s = 0; s < pl->S; s++, t++)
                    for (int64_t k = 0; k < KB; k++) {
                        const int64_t kk = kb * KB + k;
                        wp[(kb * pl->taps + t) * KB + k] =
                            kk < pl->K ? wd[kk * w->stride_n + c * w->stride_c + r * w->stride_h +
                                            s * w->stride_w]
                                       : 0.0f;
                    }
    for (int64_t k = 0; k < pl->kblk * KB; k++)
        bp[k] = pl->job->bias && k < pl->K ? pl->job->bias[k] : 0.0f;
    const int64_t row = pl->sw * pl->L;
    for (int64_t c = 0, t = 0; c < pl->C; c++)
        for (int64_t r = 0; r < pl->R; r++)
            for (int64_t s = 0; s < pl->S; s++, t++)
                off[t] = (int32_t)(c * pl->rows * row + r * pl->dh * row +
                                   (s * pl->dw) % pl->sw * pl->L + s * pl->dw / pl->sw);
}

/*
 * The call's scratch (packed weights, tap offsets, the threads' phase copies) is kept in the
 * context's plan cache under its size: every byte of it is rewritten per call, so any shape of
 * that size reuses it. A fresh allocation per call was mmapped and faulted in again each time
 * (2 page faults per l4 call on 1 thread, 15 on 2; in the Zen 5 VM guest a fault costs about
 * 6 us, the cause of torch's 90 ms l4 calls there: docs/benchmarks.md, l4d). Taken out of the cache
 * while a call runs, put back after.
 */
typedef struct dc_key {
    char tag[24];
    size_t bytes;
} dc_key;

static dc_key scratch_key(size_t bytes)
{
    dc_key key;
    memset(&key, 0, sizeof key); /* padding too: the key is compared as bytes */
    memcpy(key.tag, "conv2d.direct.scratch", 22);
    key.bytes = bytes;
    return key;
}

static float *take_scratch(lumen_context *ctx, size_t bytes)
{
    const dc_key key = scratch_key(bytes);
    float *buf = lumen_plan_cache_take(ctx->plans, &key, sizeof key);
    return buf ? buf : aligned_alloc(64, (bytes + 63) / 64 * 64);
}

static void put_scratch(lumen_context *ctx, float *buf, size_t bytes)
{
    const dc_key key = scratch_key(bytes);
    lumen_plan_cache_put(ctx->plans, &key, sizeof key, buf, free, bytes); /* frees on failure */
}

typedef struct direct_run {
    const dc_plan *pl;
    const float *wp, *bp;
    const int32_t *off;
    float *xs0;
    size_t per_thread;
    lumen_cpu_sched *sched;
    lumen_cpu_stop *stop;
} direct_run;

static void direct_body(void *arg, int tid)
{
    const direct_run *r = arg;
    float *xs = r->xs0 + r->per_thread * (size_t)tid;
    /* Own share first: each thread reads and writes the same images' bands call after
     * call (cpu_sched.c; l4 4-5 % faster than dynamic at 2 threads, Zen 5). */
    int turn = 0;
    for (int64_t i; (i = lumen_cpu_sched_next(r->sched, tid, &turn)) >= 0;)
        if (!lumen_cpu_should_stop(r->stop))
            run_item(r->pl, r->wp, r->bp, r->off, i / r->pl->bands, i % r->pl->bands, xs);
}

lumen_status lumen_cpu_conv2d_direct(lumen_context *ctx, const lumen_conv_job *job,
                                     const char **isa)
{
    dc_plan pl;
    if (!plan_of(ctx, job, &pl))
        return lumen_set_error(LUMEN_ERR_INTERNAL,
                               "conv2d: the direct path cannot take this shape");
    const size_t wfl = (size_t)(pl.kblk * pl.taps * pl.k.kb), bfl = (size_t)(pl.kblk * pl.k.kb);
    const size_t per_thread = (pl.scratch + 15) / 16 * 16;
    const size_t bytes =
        (wfl + bfl + (size_t)pl.taps + per_thread * (size_t)ctx->threads + 16) * sizeof(float);
    float *buf = take_scratch(ctx, bytes);
    if (!buf)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "conv2d: cannot allocate %zu bytes of direct-conv scratch", bytes);
    float *wp = buf, *bp = wp + wfl, *xs0 = bp + (bfl + (size_t)pl.taps + 15) / 16 * 16;
    int32_t *off = (int32_t *)(bp + bfl);
    pack(&pl, wp, bp, off);
    const int64_t items = job->x->n * pl.bands;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx); /* polled per item (docs/faults.md) */
    const int team =
        lumen_cpu_team_size(ctx, lumen_cpu_conv_work(job, LUMEN_CONV_WORK_DIRECT), items);
    lumen_cpu_sched sched;
    direct_run r = {&pl, wp, bp, off, xs0, per_thread, &sched, &stop};
    const lumen_status st = lumen_cpu_team_share(team, items, &sched, direct_body, &r);
    put_scratch(ctx, buf, bytes);
    *isa = pl.k.name;
    return lumen_cpu_stop_status(&stop, st);
}
