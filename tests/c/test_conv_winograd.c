/*
 * Winograd conv2d (3x3, stride 1, dilation 1): against a float64 oracle, through the public
 * call (where the selection must pick it) and directly per tile size and ISA: padding 0/1/2,
 * odd, even and tiny planes (outputs smaller than a tile, a 1x1 input), groups 1/2/C, batch
 * 1/3, strided, interleaved and flipped views, bias or none, signed and all-positive data;
 * and the selection rule itself (stride 2, dilation 2, 5x5 and few channels do not get it).
 *
 * TOLERANCE, per output: |got - want| <= REL * (sum of |x * w| over its taps + |bias|), the
 * rule of test_conv2d.c. F(2x2) meets REL = 1e-6 (the library's bound for every conv path).
 * where it is selected (padding <= 1). F(4x4) is not selected, nor F(2x2) with padding 2: their
 * direct runs are held to their own measured bounds below (docs/conv2d.md), loose enough for
 * rounding and far tighter than any wrong coefficient (which errs by 1e-5 and more).
 */
#include "test_support.h"

#include "backends/cpu/conv.h"
#include "backends/cpu/conv_winograd_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONV_REL 1e-6
#define WINO_F4_REL 1e-5
/* F(2x2) off its selected domain (padding 2: outputs that see 1 to 3 taps). */
#define WINO_F2_PAD2_REL 3e-6
#define CONV_ABS 1e-30

typedef struct wshape {
    int n, c, h, w, k, pad, groups;
} wshape;

static int64_t out_len(int in, int pad)
{
    return (int64_t)in + 2 * pad - 2;
}

static void fill(const lumen_image *im, uint64_t seed, double lo)
{
    ts_rng rng = ts_rng_make(seed);
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++)
                    ts_set(im, b, c, y, x, ts_rng_uniform(&rng, lo, 1));
}

/* Worst |got - want| / (sum |x*w| + |bias|) over y, in gather form and double. */
static double worst_ratio(const wshape *sp, const lumen_image *x, const lumen_image *w,
                          const float *bias, const lumen_image *y)
{
    const int cg = sp->c / sp->groups, kg = sp->k / sp->groups;
    double worst = 0.0;
    for (int b = 0; b < sp->n; b++)
        for (int k = 0; k < sp->k; k++)
            for (int64_t oy = 0; oy < y->h; oy++)
                for (int64_t ox = 0; ox < y->w; ox++) {
                    double acc = bias ? bias[k] : 0.0, a = fabs(acc);
                    for (int c = 0; c < cg; c++)
                        for (int r = 0; r < 3; r++)
                            for (int s = 0; s < 3; s++) {
                                const int64_t iy = oy - sp->pad + r, ix = ox - sp->pad + s;
                                if (iy < 0 || iy >= sp->h || ix < 0 || ix >= sp->w) continue;
                                const double v =
                                    ts_get(x, b, k / kg * cg + c, iy, ix) * ts_get(w, k, c, r, s);
                                acc += v, a += fabs(v);
                            }
                    const double e = fabs(ts_get(y, b, k, oy, ox) - acc) / (a + CONV_ABS);
                    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
                }
    return worst;
}

/* The Winograd tile the selection picks (conv_winograd.c): F(4x4) from 64 tiles of 4x4 per
 * group up, where it measured faster; test_selection checks the rule on its own. */
static const char *wino_algo(const wshape *sp)
{
    const int64_t th = (out_len(sp->h, sp->pad) + 3) / 4, tw = (out_len(sp->w, sp->pad) + 3) / 4;
    return sp->n * th * tw >= 64 ? "winograd-f4x4" : "winograd-f2x2";
}

/* How a case runs: the public call, or the Winograd entry with tile m on the engine. */
typedef struct runner {
    lumen_context *ctx;
    int m;                 /* 0: lumen_conv2d */
    const char *want_algo; /* public call: the algo it must report */
    int split; /* direct runs: lumen_cpu_conv2d_winograd_run's `shared` + 1 (0: _tile's choice) */
} runner;

typedef struct data_opts {
    ts_layout lx, ly;
    bool bias, positive;
    uint64_t seed;
} data_opts;

static const char *describe(const wshape *sp, const runner *ru, const data_opts *o)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "x(%d,%d,%d,%d) K=%d pad %d groups %d x %s y %s bias %s %s, %s",
             sp->n, sp->c, sp->h, sp->w, sp->k, sp->pad, sp->groups, ts_layout_name(o->lx),
             ts_layout_name(o->ly), o->bias ? "yes" : "no", o->positive ? "positive" : "signed",
             ru->m ? (ru->m == 2 ? "winograd f2 direct" : "winograd f4 direct") : "public call");
    return buf;
}

/* Runs one case and returns its worst error ratio; fails on a bad status, a wrong algo or a
 * write outside y. */
static double run_case(const runner *ru, const wshape *sp, const data_opts *o)
{
    const char *what = describe(sp, ru, o);
    const int64_t P = out_len(sp->h, sp->pad), Q = out_len(sp->w, sp->pad);
    ts_image x, w, y;
    ts_image_alloc(&x, o->lx, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp->k, sp->c / sp->groups, 3, 3);
    ts_image_alloc(&y, o->ly, LUMEN_F32, sp->n, sp->k, P, Q);
    const double lo = o->positive ? 0.0 : -1.0;
    fill(&x.v, o->seed, lo), fill(&w.v, o->seed + 1, lo);
    ts_image_fill_bytes(&y, 0x5A);
    float bias[512];
    assert_true(sp->k <= 512);
    for (int i = 0; i < sp->k; i++)
        bias[i] = o->positive ? 0.125f * (i % 5) : 0.25f * (i % 7) - 0.5f;
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = sp->pad, p.groups = sp->groups;
    const float *bp = o->bias ? bias : NULL;
    lumen_status s;
    const char *ran = NULL;
    if (ru->m) {
        const lumen_conv_job job = {.x = &x.v, .w = &w.v, .y = &y.v, .bias = bp, .p = p};
        const char *isa = NULL;
        s = lumen_cpu_conv2d_winograd_run(ru->ctx, &job, ru->m, ru->split - 1, &isa);
        if (!s && !isa) fail_msg("%s: no isa reported", what);
    } else {
        lumen_run_info info = {0};
        s = lumen_conv2d(ru->ctx, &x.v, &w.v, bp, &p, &y.v, &info);
        const char *want = ru->want_algo ? ru->want_algo : wino_algo(sp);
        if (!s && strcmp(info.algo, want))
            fail_msg("%s: algo %s, want %s", what, info.algo, want);
        ran = info.algo;
    }
    if (s) fail_msg("%s: status %d: %s", what, (int)s, lumen_last_error());
    char msg[256];
    if (!ts_guards_intact(&y, msg, sizeof msg)) fail_msg("%s: wrote outside y: %s", what, msg);
    const double worst = worst_ratio(sp, &x.v, &w.v, bp, &y.v);
    const bool f4 = ru->m == 4 || (ran && !strcmp(ran, "winograd-f4x4"));
    const double rel = f4                          ? WINO_F4_REL
                       : ru->m == 2 && sp->pad > 1 ? WINO_F2_PAD2_REL
                                                   : CONV_REL;
    if (!(worst <= rel)) fail_msg("%s: error %.3g of sum|x*w|, bound %.3g", what, worst, rel);
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
    return worst;
}

static lumen_context *make_ctx(int threads)
{
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, threads), LUMEN_OK);
    return ctx;
}

/* Engines of the direct runs: 0 portable C, 1 AVX2, 2 AVX-512; NULL where the CPU lacks it. */
static lumen_context *engine_ctx(int engine, int threads)
{
    lumen_context *ctx = make_ctx(threads);
    if ((engine >= 1 && !ctx->cpu_avx2) || (engine == 2 && !ctx->cpu_avx512)) {
        lumen_context_destroy(ctx);
        return NULL;
    }
    if (engine < 2) ctx->cpu_avx512 = false;
    if (engine < 1) ctx->cpu_avx2 = false;
    return ctx;
}

static const ts_layout layouts[] = {TS_PLANAR, TS_STRIDED, TS_FLIPPED, TS_BATCH, TS_INTERLEAVED};

/* ---- selection ------------------------------------------------------------ */

static const char *algo_of(lumen_context *ctx, int c, int k, int r, int stride, int dil)
{
    static float xb[2 * 32 * 12 * 12], wb[32 * 32 * 5 * 5], yb[2 * 32 * 12 * 12];
    lumen_image x = lumen_image_nchw(xb, LUMEN_F32, 2, c, 12, 12);
    lumen_image w = lumen_image_nchw(wb, LUMEN_F32, k, c, r, r);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.stride_h = p.stride_w = stride, p.dilation_h = p.dilation_w = dil;
    p.pad_h = p.pad_w = 1;
    int64_t oh, ow;
    assert_int_equal(lumen_conv2d_output_size(&x, &w, &p, &oh, &ow), LUMEN_OK);
    lumen_image y = lumen_image_nchw(yb, LUMEN_F32, 2, k, oh, ow);
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d(ctx, &x, &w, NULL, &p, &y, &info), LUMEN_OK);
    return info.algo;
}

/* 32 -> 32 channels, 3x3, on 12 x 12 with padding pad. */
static const char *algo_of_pad(lumen_context *ctx, int pad)
{
    static float xb[32 * 12 * 12], wb[32 * 32 * 9], yb[32 * 14 * 14];
    lumen_image x = lumen_image_nchw(xb, LUMEN_F32, 1, 32, 12, 12);
    lumen_image w = lumen_image_nchw(wb, LUMEN_F32, 32, 32, 3, 3);
    lumen_image y = lumen_image_nchw(yb, LUMEN_F32, 1, 32, 10 + 2 * pad, 10 + 2 * pad);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = pad;
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d(ctx, &x, &w, NULL, &p, &y, &info), LUMEN_OK);
    return info.algo;
}

/* 16 -> 16 channels, 3x3, padding 1, n images of hw x hw. */
static const char *algo_of_tiles(lumen_context *ctx, int n, int hw)
{
    static float xb[8 * 16 * 32 * 32], wb[16 * 16 * 9], yb[8 * 16 * 32 * 32];
    lumen_image x = lumen_image_nchw(xb, LUMEN_F32, n, 16, hw, hw);
    lumen_image w = lumen_image_nchw(wb, LUMEN_F32, 16, 16, 3, 3);
    lumen_image y = lumen_image_nchw(yb, LUMEN_F32, n, 16, hw, hw);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = 1;
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d(ctx, &x, &w, NULL, &p, &y, &info), LUMEN_OK);
    return info.algo;
}

static void test_selection(void **state)
{
    (void)state;
    lumen_context *ctx = make_ctx(2);
    assert_string_equal(algo_of(ctx, 32, 32, 3, 1, 1), "winograd-f2x2");
    assert_string_equal(algo_of(ctx, 16, 16, 3, 1, 1), "winograd-f2x2");
    /* F(4x4) from 64 tiles per group: 2 x 12x12 has 2 x 3 x 3 = 18 */
    assert_string_equal(algo_of_tiles(ctx, 3, 16), "winograd-f2x2"); /* 3 x 4 x 4 = 48 */
    assert_string_equal(algo_of_tiles(ctx, 4, 16), "winograd-f4x4"); /* 4 x 16 = 64 */
    assert_string_equal(algo_of_tiles(ctx, 1, 31), "winograd-f4x4"); /* 8 x 8 */
    assert_string_equal(algo_of(ctx, 32, 32, 3, 2, 1), "im2col+sgemm"); /* stride 2 */
    assert_string_equal(algo_of(ctx, 32, 32, 3, 1, 2), "im2col+sgemm"); /* dilation 2 */
    assert_string_equal(algo_of(ctx, 32, 32, 5, 1, 1), "im2col+sgemm"); /* 5x5 */
    assert_string_equal(algo_of(ctx, 8, 32, 3, 1, 1), "im2col+sgemm");  /* few channels */
    assert_string_equal(algo_of(ctx, 32, 4, 3, 1, 1), "im2col+sgemm");  /* few outputs */
    assert_string_equal(algo_of_pad(ctx, 2), "im2col+sgemm");           /* padding 2 */
    assert_int_equal(lumen_context_set_simd(ctx, 0), LUMEN_OK);
    assert_string_equal(algo_of(ctx, 32, 32, 3, 1, 1), "reference");
    lumen_context_destroy(ctx);
}

/* ---- through the public call ---------------------------------------------- */

/* Padding 0/1/2 x planes from 1x1 to 9x11 x batch 1/3 x groups 1/2, K = 20 (the last tile of
 * rows of U is partial for every microkernel), layouts, bias and all-positive data rotating,
 * threads 1 to 3. Padding 2 and padded 1-wide planes must go to im2col. */
static void test_public_grid(void **state)
{
    (void)state;
    static const int planes[][2] = {{1, 1}, {2, 3}, {3, 3}, {4, 4},
                                    {5, 2}, {7, 7}, {8, 6}, {9, 11}};
    static const int pads[] = {0, 1, 2}, batches[] = {1, 3}, groups[] = {1, 2};
    int idx = 0, ran = 0;
    for (int t = 1; t <= 3; t++) {
        lumen_context *ctx = make_ctx(t);
        for (int pi = 0; pi < 3; pi++)
            for (int hi = 0; hi < TS_COUNT(planes); hi++)
                for (int bi = 0; bi < 2; bi++) {
                    const int g = groups[(idx / 2) % 2];
                    const wshape sp = {
                        batches[bi], 16 * g, planes[hi][0], planes[hi][1], g == 1 ? 20 : 32,
                        pads[pi],    g};
                    idx++;
                    if (out_len(sp.h, sp.pad) < 1 || out_len(sp.w, sp.pad) < 1) continue;
                    const data_opts o = {layouts[idx % 5], layouts[(idx / 5) % 5], idx % 3 != 0,
                                         idx % 4 == 1, 500u + (uint64_t)idx};
                    /* padding 2, or padding on a plane of 1: im2col (error, see the rule) */
                    const bool wino = sp.pad < 2 && (sp.pad == 0 || (sp.h > 1 && sp.w > 1));
                    const runner ru = {ctx, 0, wino ? NULL : "im2col+sgemm", 0}; /* NULL: F2/F4 */
                    run_case(&ru, &sp, &o);
                    ran++;
                }
        lumen_context_destroy(ctx);
    }
    assert_true(ran > 100);
}

/* All-positive data (no cancellation: the error is relative to y itself) and a long reduction
 * (C = 256: two reduction blocks), many tiles (several items per thread). */
static void test_public_positive_and_large(void **state)
{
    (void)state;
    lumen_context *ctx = make_ctx(2);
    const runner ru = {ctx, 0, NULL, 0}; /* big: F(2x2) (32 tiles), wide: F(4x4) (216 tiles) */
    const wshape big = {2, 256, 14, 13, 24, 1, 1}, wide = {3, 16, 30, 33, 16, 1, 1};
    for (int pos = 0; pos < 2; pos++) {
        const data_opts o = {TS_PLANAR, TS_STRIDED, true, pos, 900u + (uint64_t)pos};
        run_case(&ru, &big, &o);
        run_case(&ru, &wide, &o);
    }
    lumen_context_destroy(ctx);
}

/* ---- direct, per tile size and ISA ------------------------------------------- */

/* Shapes the selection does not send to Winograd but the code must still get right: depthwise
 * (groups = C), 3 channels, 1x1 inputs, a reduction over three blocks, with both tiles. */
static void test_direct_tiles(void **state)
{
    (void)state;
    const wshape shapes[] = {
        {1, 4, 9, 11, 8, 1, 4},    /* depthwise, multiplier 2 */
        {3, 3, 7, 8, 5, 2, 1},     /* 3 channels, pad 2 */
        {1, 6, 1, 1, 6, 1, 2},     /* 1x1 input, pad 1: 1x1 output */
        {2, 8, 3, 3, 16, 0, 1},    /* one output per plane */
        {2, 8, 6, 5, 8, 0, 2},     /* P, Q smaller than an F(4) tile on one axis */
        {1, 300, 6, 6, 7, 1, 1},   /* reduction of 300: blocks of 100 */
        {2, 16, 21, 17, 18, 1, 1}, /* many tiles: several items, a partial last sliver */
    };
    double worst[2] = {0, 0};
    int idx = 0;
    for (int engine = 0; engine < 3; engine++)
        for (int t = 1; t <= 2; t++) {
            lumen_context *ctx = engine_ctx(engine, t);
            if (!ctx) {
                print_message("engine %d not on this CPU: skipped\n", engine);
                continue;
            }
            for (int m = 2; m <= 4; m += 2) {
                const runner ru = {ctx, m, NULL, 0};
                for (int i = 0; i < TS_COUNT(shapes); i++, idx++) {
                    const data_opts o = {layouts[idx % 5], layouts[(idx + 2) % 5], idx % 2,
                                         idx % 3 == 0, 700u + (uint64_t)idx};
                    const double e = run_case(&ru, &shapes[i], &o);
                    if (e > worst[m / 4]) worst[m / 4] = e;
                }
            }
            lumen_context_destroy(ctx);
        }
    print_message("worst error / sum|x*w|: F(2x2) %.3g, F(4x4) %.3g\n", worst[0], worst[1]);
}

/* ---- shared blocks ---------------------------------------------------------
 * The work splits of lumen_cpu_conv2d_winograd_run (items per thread; shared blocks of one
 * sliver, so several blocks per group; shared blocks of every tile) must each meet the oracle
 * and give the same bits as each other, on every engine and thread count: several panels, a
 * partial last panel and sliver, groups, reductions over several blocks, and a U large enough
 * for the AVX-512 weight transform's streaming stores. */
static void run_split(lumen_context *ctx, const wshape *sp, int m, int shared, float *out,
                      size_t bytes)
{
    const int64_t P = out_len(sp->h, sp->pad), Q = out_len(sp->w, sp->pad);
    ts_image x, w, y;
    ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp->k, sp->c / sp->groups, 3, 3);
    ts_image_alloc(&y, TS_PLANAR, LUMEN_F32, sp->n, sp->k, P, Q);
    fill(&x.v, 77, -1.0), fill(&w.v, 78, -1.0);
    float bias[512];
    assert_true(sp->k <= 512);
    for (int i = 0; i < sp->k; i++)
        bias[i] = 0.25f * (i % 7) - 0.5f;
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = sp->pad, p.groups = sp->groups;
    const lumen_conv_job job = {.x = &x.v, .w = &w.v, .y = &y.v, .bias = bias, .p = p};
    assert_int_equal(lumen_cpu_conv2d_winograd_run(ctx, &job, m, shared, NULL), LUMEN_OK);
    assert_true(bytes == (size_t)(sp->n * sp->k * P * Q) * sizeof(float));
    memcpy(out, y.v.data, bytes);
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
}

static void test_shared_blocks(void **state)
{
    (void)state;
    const wshape shapes[] = {
        {2, 70, 21, 17, 40, 1, 1}, /* F(2): 7 slivers, F(4): 2; 3+ panels; kc blocks of 35 */
        {3, 16, 9, 12, 18, 1, 2},  /* groups 2, a partial last panel */
        {1, 6, 1, 1, 6, 1, 2},     /* one tile per group */
        {1, 352, 6, 5, 352, 1, 1}, /* F(4x4)'s U over 16 MB: streamed stores (AVX-512) */
    };
    int idx = 0;
    for (int engine = 0; engine < 3; engine++)
        for (int t = 1; t <= 3; t++) {
            lumen_context *ctx = engine_ctx(engine, t);
            if (!ctx) continue;
            for (int m = 2; m <= 4; m += 2)
                for (int i = 0; i < TS_COUNT(shapes); i++) {
                    const wshape *sp = &shapes[i];
                    const size_t bytes = (size_t)(sp->n * sp->k * out_len(sp->h, sp->pad) *
                                                  out_len(sp->w, sp->pad)) *
                                         sizeof(float);
                    float *ref = malloc(bytes), *got = malloc(bytes);
                    assert_non_null(ref), assert_non_null(got);
                    run_split(ctx, sp, m, 0, ref, bytes);
                    for (int shared = 1; shared <= 1000; shared += 999) {
                        run_split(ctx, sp, m, shared, got, bytes);
                        if (memcmp(ref, got, bytes))
                            fail_msg("%s: shared blocks of %d slivers differ from items",
                                     describe(sp, &(runner){ctx, m, NULL, shared + 1},
                                              &(data_opts){0}),
                                     shared);
                        const runner ru = {ctx, m, NULL, shared + 1};
                        const data_opts o = {layouts[idx % 5], layouts[(idx + 1) % 5], idx % 2,
                                             idx % 3 == 0, 800u + (uint64_t)idx};
                        run_case(&ru, sp, &o);
                        idx++;
                    }
                    free(ref), free(got);
                }
            lumen_context_destroy(ctx);
        }
}

/* ---- the weight transform's two forms ----------------------------------------
 * weight_rows (lanes over a panel's output channels; AVX-512: registers, a block tile, streamed
 * stores) must write exactly what weight (lanes over channels) writes for each row, and zeros in
 * the rows past n: every tile height, channel counts around the 16-channel blocks, dense and
 * strided weights, streamed or not, on every engine the CPU has. */
static void test_weight_rows(void **state)
{
    (void)state;
    typedef void (*row_fn)(const float *, int64_t, int64_t, int64_t, int64_t, float *, int64_t,
                           int64_t);
    typedef void (*rows_fn)(const float *, int64_t, int64_t, int64_t, int64_t, int, int64_t,
                            float *, int64_t, int64_t, bool);
    const row_fn one[3][2] = {{lumen_wino_weight_f2_generic, lumen_wino_weight_f4_generic},
                              {lumen_wino_weight_f2_avx2, lumen_wino_weight_f4_avx2},
                              {lumen_wino_weight_f2_avx512, lumen_wino_weight_f4_avx512}};
    const rows_fn all[3][2] = {
        {lumen_wino_weight_rows_f2_generic, lumen_wino_weight_rows_f4_generic},
        {lumen_wino_weight_rows_f2_avx2, lumen_wino_weight_rows_f4_avx2},
        {lumen_wino_weight_rows_f2_avx512, lumen_wino_weight_rows_f4_avx512}};
    lumen_context *probe = make_ctx(1);
    const int engines = probe->cpu_avx512 ? 3 : probe->cpu_avx2 ? 2 : 1;
    lumen_context_destroy(probe);
    const int chans[] = {1, 15, 16, 17, 40};
    for (int e = 0; e < engines; e++)
        for (int t = 0; t < 2; t++)
            for (int mr = 6; mr <= 16; mr++)
                for (int ci = 0; ci < TS_COUNT(chans); ci++)
                    for (int v = 0; v < 4; v++) {
                        const int cg = chans[ci], n = mr - (v & 1) * (mr / 3);
                        const bool stream = v & 2, strided = (ci + mr) & 1;
                        const int64_t a2 = t ? 36 : 16, u_pos = (int64_t)cg * mr + 16 * (v & 1);
                        const int64_t ws_w = strided ? 2 : 1, ws_h = 3 * ws_w, ws_c = 9 * ws_w + 5;
                        const int64_t ws_n = (int64_t)cg * ws_c + 3;
                        /* aligned_alloc takes multiples of the alignment */
                        const size_t u_bytes =
                            (sizeof(float) * (size_t)(a2 * u_pos) + 127) / 64 * 64;
                        float *w = malloc(sizeof(float) * (size_t)(ws_n * n));
                        float *u1 = aligned_alloc(64, u_bytes);
                        float *u2 = aligned_alloc(64, u_bytes);
                        assert_non_null(w), assert_non_null(u1), assert_non_null(u2);
                        ts_rng rng = ts_rng_make(1000u + (uint64_t)(mr * 64 + ci * 4 + v));
                        for (int64_t i = 0; i < ws_n * n; i++)
                            w[i] = (float)ts_rng_uniform(&rng, -1, 1);
                        memset(u1, 0, u_bytes);
                        memset(u2, 0x5A, u_bytes);
                        for (int j = 0; j < n; j++)
                            one[e][t](w + j * ws_n, ws_c, ws_h, ws_w, cg, u1 + j, u_pos, mr);
                        all[e][t](w, ws_n, ws_c, ws_h, ws_w, n, cg, u2, u_pos, mr, stream);
                        for (int64_t xi = 0; xi < a2; xi++)
                            for (int64_t c = 0; c < cg; c++)
                                if (memcmp(u1 + xi * u_pos + c * mr, u2 + xi * u_pos + c * mr,
                                           sizeof(float) * (size_t)mr))
                                    fail_msg("engine %d F(%d) mr %d n %d channels %d%s%s: "
                                             "position %d channel %d differs",
                                             e, t ? 4 : 2, mr, n, cg, stream ? " streamed" : "",
                                             strided ? " strided" : "", (int)xi, (int)c);
                        free(w), free(u1), free(u2);
                    }
}

/* ---- the componentwise bound (docs/conv2d.md, "Winograd's bound") -----------
 * Rounding each step of y = A^T [sum_c (G g_c G^T) . (B^T d_c B)] A to first order bounds the
 * error of every output by gamma_n * S, S = sum_c |A^T| [(|G| |g_c| |G^T|) . (|B^T| |d_c| |B|)] |A|
 * (d_c the tile's zero-padded input patch), n the longest chain of roundings an output sees:
 * 2 alpha in the input transform, 1 for U (double, rounded once), the GEMM's kc-term chunks plus
 * one fold per chunk, 2 alpha + 1 in the output transform and bias. Unlike the sum|x*w| form it
 * holds for any data: checked per output here against the float64 oracle. */

static const double F2_BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
static const double F2_G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double F2_AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
static const double F4_BT[6][6] = {{1, -1.5, -2, 1.5, 1, 0}, {0, -1, 0.5, 2.5, 1, 0},
                                   {0, 1, -2.5, 0.5, 1, 0},  {0, -2, -1, 2, 1, 0},
                                   {0, 0.5, -1, -0.5, 1, 0}, {0, 1, -1.5, -2, 1.5, 1}};
static const double F4_G[6][3] = {{1, 0, 0},
                                  {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                  {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                                  {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                  {1.0 / 15, -2.0 / 15, 4.0 / 15},
                                  {0, 0, 1}};
static const double F4_AT[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5, -2, 0}, {0, 1, 1, 0.25, 4, 0}, {0, 1, -1, 0.125, -8, 1}};

/* |M| entry (i, j) of an alpha-column matrix stored row-major. */
static double mabs(const double *m, int cols, int i, int j)
{
    return fabs(m[i * cols + j]);
}

typedef struct bound_stats {
    double worst_in_u; /* max |err| / (u * S) */
    double worst_s;    /* max S / (sum|x*w| + |bias|) */
} bound_stats;

static void componentwise_case(lumen_context *ctx, const wshape *sp, int m, bool positive,
                               uint64_t seed, bound_stats *st)
{
    const int a = m + 2;
    const double *BT = m == 2 ? &F2_BT[0][0] : &F4_BT[0][0];
    const double *G = m == 2 ? &F2_G[0][0] : &F4_G[0][0];
    const double *AT = m == 2 ? &F2_AT[0][0] : &F4_AT[0][0];
    const int64_t P = out_len(sp->h, sp->pad), Q = out_len(sp->w, sp->pad);
    const int cg = sp->c / sp->groups, kg = sp->k / sp->groups;
    ts_image x, w, y;
    ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp->k, cg, 3, 3);
    ts_image_alloc(&y, TS_PLANAR, LUMEN_F32, sp->n, sp->k, P, Q);
    fill(&x.v, seed, positive ? 0.0 : -1.0), fill(&w.v, seed + 1, positive ? 0.0 : -1.0);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = sp->pad, p.groups = sp->groups;
    const lumen_conv_job job = {.x = &x.v, .w = &w.v, .y = &y.v, .p = p};
    assert_int_equal(lumen_cpu_conv2d_winograd_tile(ctx, &job, m, NULL), LUMEN_OK);
    const int kc = cg < 32 ? cg : (cg + (cg + 31) / 32 - 1) / ((cg + 31) / 32);
    const int n = 2 * a + 1 + kc + (cg + kc - 1) / kc + 2 * a + 1;
    const double u = 0x1p-24, gamma = n * u / (1 - n * u);
    double gu[6][6], bd[6][6];
    for (int b = 0; b < sp->n; b++)
        for (int k = 0; k < sp->k; k++)
            for (int64_t oy = 0; oy < P; oy++)
                for (int64_t ox = 0; ox < Q; ox++) {
                    const int64_t ty = oy / m * m, tx = ox / m * m;
                    const int i = (int)(oy - ty), j = (int)(ox - tx);
                    double S = 0, exact = 0, xw = 0;
                    for (int c = 0; c < cg; c++) {
                        const int xc = k / kg * cg + c;
                        for (int e = 0; e < a; e++)
                            for (int f = 0; f < a; f++) {
                                double gs = 0, bs = 0;
                                for (int r = 0; r < 3; r++)
                                    for (int q = 0; q < 3; q++)
                                        gs += mabs(G, 3, e, r) * fabs(ts_get(&w.v, k, c, r, q)) *
                                              mabs(G, 3, f, q);
                                for (int r = 0; r < a; r++)
                                    for (int q = 0; q < a; q++) {
                                        const int64_t iy = ty - sp->pad + r, ix = tx - sp->pad + q;
                                        if (iy < 0 || iy >= sp->h || ix < 0 || ix >= sp->w)
                                            continue;
                                        bs += mabs(BT, a, e, r) * fabs(ts_get(&x.v, b, xc, iy, ix)) *
                                              mabs(BT, a, f, q);
                                    }
                                gu[e][f] = gs, bd[e][f] = bs;
                            }
                        for (int e = 0; e < a; e++)
                            for (int f = 0; f < a; f++)
                                S += mabs(AT, a, i, e) * gu[e][f] * bd[e][f] * mabs(AT, a, j, f);
                        for (int r = 0; r < 3; r++)
                            for (int q = 0; q < 3; q++) {
                                const int64_t iy = oy - sp->pad + r, ix = ox - sp->pad + q;
                                if (iy < 0 || iy >= sp->h || ix < 0 || ix >= sp->w) continue;
                                const double v = ts_get(&x.v, b, xc, iy, ix) * ts_get(&w.v, k, c, r, q);
                                exact += v, xw += fabs(v);
                            }
                    }
                    const double err = fabs(ts_get(&y.v, b, k, oy, ox) - exact);
                    if (!(err <= 1.01 * gamma * S + CONV_ABS))
                        fail_msg("F(%dx%d) x(%d,%d,%d,%d) K=%d pad %d: y[%d,%d,%lld,%lld] error "
                                 "%.3g over gamma_%d * S = %.3g",
                                 m, m, sp->n, sp->c, sp->h, sp->w, sp->k, sp->pad, b, k,
                                 (long long)oy, (long long)ox, err, n, gamma * S);
                    if (S > 0 && err / (u * S) > st->worst_in_u) st->worst_in_u = err / (u * S);
                    if (xw > 0 && S / xw > st->worst_s) st->worst_s = S / xw;
                }
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
}

static void test_componentwise_bound(void **state)
{
    (void)state;
    const wshape shapes[] = {
        {2, 16, 10, 9, 16, 1, 1}, /* padding 1, partial tiles */
        {1, 64, 8, 8, 8, 1, 1},   /* a reduction of two 32-term blocks */
        {1, 8, 9, 11, 8, 0, 2},   /* groups, no padding */
    };
    for (int engine = 0; engine < 3; engine++) {
        lumen_context *ctx = engine_ctx(engine, 2);
        if (!ctx) continue;
        for (int m = 2; m <= 4; m += 2) {
            bound_stats st = {0, 0};
            for (int i = 0; i < TS_COUNT(shapes); i++)
                for (int pos = 0; pos < 2; pos++)
                    componentwise_case(ctx, &shapes[i], m, pos, 40u + (uint64_t)(i * 2 + pos),
                                       &st);
            print_message("engine %d F(%dx%d): worst error %.3g u * S; S up to %.3g sum|x*w|\n",
                          engine, m, m, st.worst_in_u, st.worst_s);
        }
        lumen_context_destroy(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_public_grid),
        cmocka_unit_test(test_public_positive_and_large),
        cmocka_unit_test(test_direct_tiles),
        cmocka_unit_test(test_shared_blocks),
        cmocka_unit_test(test_weight_rows),
        cmocka_unit_test(test_componentwise_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
