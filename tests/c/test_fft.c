/*
 * The FFT method (tiled overlap-save with FFTW, src/backends/cpu/fft_filter.c) against the
 * scalar reference and the independent oracle, by the one tolerance rule of test_support.h:
 * every border x dtype x layout; kernels from 4x4 to larger than the image; anchors at the
 * corners; convolution; images cut into several tiles with partial edge tiles; threads 1..3;
 * sep_filter2d and gaussian_blur_ex through the FFT; NaN and Inf; exact .5 ties of dyadic
 * kernels on integer images; the plan cache and the planning policies (FFTW wisdom and the
 * cost model written under a private $XDG_CACHE_HOME); what auto chooses; the accuracy bound
 * against a float64 direct sum (printed); the argument errors of the new API.
 */
#define _XOPEN_SOURCE 700

#include "test_support.h"

#include "backends/cpu/cpu.h"

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MSG 1024

/* The private cache folder ($XDG_CACHE_HOME) of this program, made in main. */
static char g_cache[] = "/tmp/lumen-test-fft-XXXXXX";

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

/* Same-dtype pairs and mixed ones (source -> destination). */
static const lumen_dtype dtype_pairs[][2] = {
    {LUMEN_U8, LUMEN_U8},  {LUMEN_U16, LUMEN_U16}, {LUMEN_F32, LUMEN_F32},
    {LUMEN_U8, LUMEN_F32}, {LUMEN_U16, LUMEN_U8},  {LUMEN_F32, LUMEN_U16},
};

/* Border value per source dtype: non-zero and inside the dtype's range. */
static float border_value(lumen_dtype t)
{
    return t == LUMEN_F32 ? -37.5f : t == LUMEN_U8 ? 201.0f : 40000.0f;
}

/* Anchor variant a: default, the four corners, an interior off-centre point. */
static void set_anchor(ts_op *op, int a)
{
    const int kw = op->kw, kh = op->kh;
    const int ax[6] = {-1, 0, kw - 1, kw - 1, 0, kw / 3};
    const int ay[6] = {-1, 0, kh - 1, 0, kh - 1, (2 * kh) / 3};
    op->opt.anchor_x = ax[a % 6];
    op->opt.anchor_y = ay[a % 6];
}

static ts_op fft_filter_op(const float *k, int kw, int kh, lumen_border b, float v)
{
    ts_op op = ts_with_border(ts_op_filter2d(k, kw, kh), b, v);
    op.opt.method = LUMEN_METHOD_FFT;
    return op;
}

static ts_case fft_case(ts_layout l, lumen_dtype s, lumen_dtype d, int64_t h, int64_t w,
                        int threads, uint64_t seed)
{
    ts_case cs = ts_case_make(l, s, d, h, w, threads, seed);
    cs.want_method = LUMEN_METHOD_FFT;
    return cs;
}

/* The tiling the FFT path uses for a kw x kh kernel on n x c x h x w with `threads`. */
static lumen_fft_tiling tiling_for(int64_t n, int64_t c, int64_t h, int64_t w, int kw, int kh,
                                   int threads)
{
    static float dummy;
    lumen_image s = lumen_image_nchw(&dummy, LUMEN_F32, n, c, h, w);
    lumen_filter_job job = {.src = &s, .dst = &s, .taps = LUMEN_TAPS_2D,
                            .border = LUMEN_BORDER_REFLECT, .kw = kw, .kh = kh, .ax = kw / 2,
                            .ay = kh / 2, .kernel = &dummy, .scale = 1.0f};
    return lumen_cpu_fft_tiling(&job, threads);
}

/* Fails unless h x w is cut into several tiles, with a partial tile at the bottom or right. */
static void assert_multi_tile(int64_t h, int64_t w, int kw, int kh, int threads)
{
    const lumen_fft_tiling t = tiling_for(1, 1, h, w, kw, kh, threads);
    const int64_t th = t.nh - kh + 1, tw = t.nw - kw + 1;
    const int64_t ty = (h + th - 1) / th, tx = (w + tw - 1) / tw;
    if (t.tiles < 2 || ty * tx != t.tiles || (h % th == 0 && w % tw == 0))
        fail_msg("test premise: %lldx%lld with a %dx%d kernel and %d threads should make several "
                 "tiles with a partial edge tile; the FFT path uses %dx%d transforms, %lldx%lld "
                 "outputs each, %lld tiles",
                 (long long)w, (long long)h, kw, kh, threads, t.nw, t.nh, (long long)tw,
                 (long long)th, (long long)t.tiles);
}

static lumen_context *fast_context(int threads)
{
    lumen_context *ctx = ts_context(TS_AVX2, threads);
    return ctx ? ctx : ts_context(TS_GENERIC, threads);
}

static void run_ok(lumen_context *ctx, const ts_op *op, const lumen_image *src,
                   const lumen_image *dst, lumen_run_info *info, const char *what)
{
    const lumen_status s = ts_op_run(ctx, op, src, dst, info);
    if (s != LUMEN_OK) fail_msg("%s: status %d (%s)", what, (int)s, lumen_last_error());
}

/* The reference's result of op on src into a planar image of dtype t (threads 2). */
static void reference_into(const ts_op *op, const ts_image *src, lumen_dtype t, ts_image *out)
{
    lumen_context *ref = ts_context(TS_REF, 2);
    const lumen_image *s = &src->v;
    ts_image_alloc(out, TS_PLANAR, t, s->n, s->c, s->h, s->w);
    run_ok(ref, op, s, &out->v, NULL, "reference");
    lumen_context_destroy(ref);
}

/* The f32 tolerance of the table for op on src (constant border value counted). */
static double op_tol(const ts_op *op, const ts_image *src)
{
    double range = ts_absmax(&src->v);
    if (op->opt.border == LUMEN_BORDER_CONSTANT && fabs(op->opt.border_value) > range)
        range = fabs(op->opt.border_value);
    return ts_f32_tol(ts_op_ksum(op, src->v.dtype), range);
}

/* got (any dtype) vs the reference by the table: `want` in got's dtype, `exact` f32. */
static void expect_close(const ts_image *got, const ts_image *want, const ts_image *exact,
                         double tol, const char *what)
{
    char msg[MSG];
    const lumen_image *ex = got->v.dtype == LUMEN_F32 ? NULL : &exact->v;
    if (ts_compare(&got->v, &want->v, ex, tol, msg, sizeof msg)) fail_msg("%s: %s", what, msg);
}

/* ---- a float64 direct sum at sampled pixels ------------------------------------------------ */

/*
 * Plane (b, c) of src extended by border b (value v) for a kw x kh kernel anchored at (ax, ay),
 * as doubles: p[(y + i) * pw + x + j] is the tap (i, j) of output (y, x). The border is the
 * oracle's (ts_border_interp), independent of lumen's.
 */
typedef struct padded {
    double *p;
    int pw, kw, kh;
    const float *k;
} padded;

static padded pad_plane_f64(const lumen_image *s, int64_t pb, int64_t pc, const float *k, int kw,
                            int kh, int ax, int ay, lumen_border b, float v)
{
    padded r = {NULL, (int)s->w + kw - 1, kw, kh, k};
    const int ph = (int)s->h + kh - 1;
    r.p = malloc(sizeof(double) * (size_t)r.pw * ph);
    assert_non_null(r.p);
    for (int y = 0; y < ph; y++)
        for (int x = 0; x < r.pw; x++) {
            const int64_t yy = ts_border_interp(y - ay, s->h, b);
            const int64_t xx = ts_border_interp(x - ax, s->w, b);
            r.p[(size_t)y * r.pw + x] = yy < 0 || xx < 0 ? v : ts_get(s, pb, pc, yy, xx);
        }
    return r;
}

static padded pad_f64(const lumen_image *s, const float *k, int kw, int kh, int ax, int ay,
                      lumen_border b, float v)
{
    return pad_plane_f64(s, 0, 0, k, kw, kh, ax, ay, b, v);
}

/* The correlation at (y, x) in double (four partial sums, so it runs at a decent speed). */
static double f64_at(const padded *r, int y, int x)
{
    double acc[4] = {0, 0, 0, 0};
    for (int i = 0; i < r->kh; i++) {
        const double *row = r->p + (size_t)(y + i) * r->pw + x;
        const float *kr = r->k + (size_t)i * r->kw;
        int j = 0;
        for (; j + 4 <= r->kw; j += 4)
            for (int u = 0; u < 4; u++)
                acc[u] += (double)kr[j + u] * row[j + u];
        for (; j < r->kw; j++)
            acc[0] += (double)kr[j] * row[j];
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* Sampled pixels: rows and columns 0, 1, every `step`th and the last two, plus `extra` random. */
typedef struct samples {
    int *y, *x, n;
} samples;

static samples grid_samples(int h, int w, int step, int extra, uint64_t seed)
{
    samples s = {malloc(sizeof(int) * (size_t)(h * w + extra)), NULL, 0};
    s.x = malloc(sizeof(int) * (size_t)(h * w + extra));
    assert_non_null(s.y), assert_non_null(s.x);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (y % step == 0 || x % step == 0 || y == 1 || x == 1 || y >= h - 2 || x >= w - 2)
                s.y[s.n] = y, s.x[s.n++] = x;
    ts_rng r = ts_rng_make(seed);
    for (int i = 0; i < extra; i++)
        s.y[s.n] = (int)(ts_rng_u32(&r) % (uint32_t)h),
        s.x[s.n++] = (int)(ts_rng_u32(&r) % (uint32_t)w);
    return s;
}

static samples all_pixels(int h, int w)
{
    samples s = {malloc(sizeof(int) * (size_t)(h * w)), malloc(sizeof(int) * (size_t)(h * w)), 0};
    assert_non_null(s.y), assert_non_null(s.x);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            s.y[s.n] = y, s.x[s.n++] = x;
    return s;
}

static void samples_free(samples *s)
{
    free(s->y), free(s->x);
}

/* ---- every border x dtype x layout ------------------------------------------------------ */

static const int small_ksizes[][2] = {{4, 4}, {5, 9}, {17, 17}, {31, 20}};

/*
 * One border: every dtype pair x every layout (planar, interleaved c=3, strided sub-view,
 * negative strides, batch n=2, strided and flipped interleaved); kernels 4x4, 5w x 9h, 17x17,
 * 31w x 20h, anchors (default, corners, interior), convolution and threads 1..3 rotate.
 */
static void test_matrix(void **state)
{
    const lumen_border b = *(const lumen_border *)*state;
    float k[31 * 20];
    int idx = 0;
    for (int d = 0; d < TS_COUNT(dtype_pairs); d++)
        for (int l = 0; l < TS_LAYOUT_COUNT; l++, idx++) {
            const int ks = (l + 2 * d + (int)b) % TS_COUNT(small_ksizes);
            const int kw = small_ksizes[ks][0], kh = small_ksizes[ks][1];
            ts_random_kernel(k, kw * kh, 1000 + 100 * b + idx);
            ts_op op = fft_filter_op(k, kw, kh, b, border_value(dtype_pairs[d][0]));
            set_anchor(&op, l + d + (int)b);
            op.opt.convolve = idx % 3 == 2;
            const int64_t h = idx % 2 ? 19 : 24, w = idx % 2 ? 29 : 35;
            ts_case cs = fft_case((ts_layout)l, dtype_pairs[d][0], dtype_pairs[d][1], h, w,
                                  1 + idx % 3, 31 * idx + b);
            cs.no_oracle = idx % 3 != 0; /* the FFT is judged against the reference */
            ts_check(&op, &cs);
        }
}

/* Every kernel size x anchor (default, 4 corners, interior) x correlation/convolution. */
static void test_kernel_sizes_anchors(void **state)
{
    (void)state;
    static const int ksizes[][2] = {{4, 4}, {5, 9}, {17, 17}, {31, 20}, {64, 61}};
    static float k[64 * 61];
    int idx = 0;
    for (int s = 0; s < TS_COUNT(ksizes); s++)
        for (int a = 0; a < 6; a++)
            for (int conv = 0; conv < 2; conv++, idx++) {
                const int kw = ksizes[s][0], kh = ksizes[s][1];
                const lumen_dtype t = idx % 2 ? LUMEN_U8 : LUMEN_F32;
                ts_random_kernel(k, kw * kh, 2000 + idx);
                ts_op op = fft_filter_op(k, kw, kh, borders[idx % 5], border_value(t));
                set_anchor(&op, a);
                op.opt.convolve = conv;
                const bool big = kw * kh > 1000;
                ts_case cs =
                    fft_case(TS_PLANAR, t, t, big ? 25 : 29, big ? 33 : 41, 1 + idx % 3, idx);
                cs.no_oracle = big && a % 2; /* the oracle still sees three anchors of 64x61 */
                ts_check(&op, &cs);
            }
}

/*
 * Kernels larger than the image: 64w x 61h and 101x101 on 37w x 23h, every border; f32 planar
 * (with the oracle for 64x61), u8 interleaved c=3, u16 -> f32 with negative strides in
 * rotation; anchors rotate.
 */
static void test_kernel_larger_than_image(void **state)
{
    (void)state;
    static const int ksizes[][2] = {{64, 61}, {101, 101}};
    static const struct {
        ts_layout l;
        lumen_dtype s, d;
    } variants[] = {{TS_PLANAR, LUMEN_F32, LUMEN_F32},
                    {TS_INTERLEAVED, LUMEN_U8, LUMEN_U8},
                    {TS_FLIPPED, LUMEN_U16, LUMEN_F32}};
    static float k[101 * 101];
    int idx = 0;
    for (int bi = 0; bi < 5; bi++)
        for (int s = 0; s < 2; s++, idx++) {
            const int v = (bi + 2 * s) % 3;
            const int kw = ksizes[s][0], kh = ksizes[s][1];
            ts_random_kernel(k, kw * kh, 3000 + idx);
            ts_op op = fft_filter_op(k, kw, kh, borders[bi], border_value(variants[v].s));
            set_anchor(&op, idx);
            op.opt.convolve = idx % 4 == 1;
            ts_case cs = fft_case(variants[v].l, variants[v].s, variants[v].d, 23, 37, 1 + idx % 3,
                                  50 + idx);
            cs.no_oracle = v != 0 || s != 0;
            ts_check(&op, &cs);
        }
}

/* Tiny images (1x1, 1x7, 6x1, 2x3, 5x4) under 17x17, 5w x 9h and 4x4 kernels, every border. */
static void test_tiny_images(void **state)
{
    (void)state;
    static const int shapes[][2] = {{1, 1}, {1, 7}, {6, 1}, {2, 3}, {5, 4}}; /* h, w */
    static const int ksizes[][2] = {{17, 17}, {5, 9}, {4, 4}};
    float k[17 * 17];
    int idx = 0;
    for (int s = 0; s < TS_COUNT(shapes); s++)
        for (int ki = 0; ki < TS_COUNT(ksizes); ki++)
            for (int bi = 0; bi < 5; bi++, idx++) {
                const int kw = ksizes[ki][0], kh = ksizes[ki][1];
                ts_random_kernel(k, kw * kh, 4000 + idx);
                const lumen_dtype t = idx % 3 == 1 ? LUMEN_U8 : LUMEN_F32;
                ts_op op = fft_filter_op(k, kw, kh, borders[bi], border_value(t));
                set_anchor(&op, idx);
                op.opt.convolve = idx % 2;
                ts_case cs =
                    fft_case(TS_PLANAR, t, t, shapes[s][0], shapes[s][1], 1 + idx % 2, idx);
                ts_check(&op, &cs);
            }
}

/* ---- several tiles, threads 1..3 ---------------------------------------------------------- */

/*
 * 900w x 600h with 17x17 kernels: 2 or 3 tiles with partial edge tiles for threads 1..3 (the
 * premise is checked; smaller images now take one tile on one thread, as a tile's fixed cost
 * makes cheapest). Every border x threads 1..3; dtype pairs and layouts (planar,
 * interleaved c=3, batch n=2) rotate.
 */
static void test_tiles_threads(void **state)
{
    (void)state;
    static const ts_layout layouts[] = {TS_PLANAR, TS_INTERLEAVED, TS_BATCH};
    float k[17 * 17];
    for (int threads = 1; threads <= 3; threads++)
        assert_multi_tile(600, 900, 17, 17, threads);
    int idx = 0;
    for (int bi = 0; bi < 5; bi++)
        for (int threads = 1; threads <= 3; threads++, idx++) {
            const int d = idx % TS_COUNT(dtype_pairs);
            ts_random_kernel(k, 17 * 17, 5000 + idx);
            ts_op op = fft_filter_op(k, 17, 17, borders[bi], border_value(dtype_pairs[d][0]));
            set_anchor(&op, idx);
            op.opt.convolve = idx % 4 == 3;
            const ts_layout l = layouts[idx % 3];
            ts_case cs = fft_case(l, dtype_pairs[d][0], dtype_pairs[d][1], 600, 900, threads, idx);
            cs.n = l == TS_BATCH ? 2 : 1;
            cs.c = l == TS_INTERLEAVED ? 3 : 1;
            cs.no_oracle = true; /* the reference is checked against it above on small images */
            ts_check(&op, &cs);
        }
}

/*
 * The medium case: a 61x61 random kernel on 900w x 600h f32 (2 or 3 tiles, partial edge
 * tiles; premise checked). Explicit FFT on every fast engine with threads 1, 2, 3, and auto,
 * which must report FFT; all within the table's tolerance of a float64 direct sum (the
 * reference's definition, unrounded) at every pixel of every 16th row and column, the edge
 * rows and columns and 3000 random pixels (a full reference here would take seconds).
 */
static void test_medium_61_auto_fft(void **state)
{
    (void)state;
    enum { H = 600, W = 900, K = 61 };
    static float k[K * K];
    for (int threads = 1; threads <= 3; threads++)
        assert_multi_tile(H, W, K, K, threads);
    ts_random_kernel(k, K * K, 61);
    ts_op op = ts_op_filter2d(k, K, K); /* reflect */
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    ts_image_fill_random(&src, 610);
    padded pd = pad_f64(&src.v, k, K, K, K / 2, K / 2, LUMEN_BORDER_REFLECT, 0.0f);
    samples sm = grid_samples(H, W, 16, 3000, 61);
    double *want = malloc(sizeof(double) * (size_t)sm.n);
    assert_non_null(want);
    for (int i = 0; i < sm.n; i++)
        want[i] = f64_at(&pd, sm.y[i], sm.x[i]);
    const double tol = op_tol(&op, &src);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++)
        for (int run = 1; run <= 4; run++) {
            const int threads = run == 4 ? 2 : run;
            lumen_context *ctx = ts_context((ts_engine)e, threads);
            if (!ctx) continue;
            const lumen_method m = run == 4 ? LUMEN_METHOD_AUTO : LUMEN_METHOD_FFT;
            op.opt.method = m;
            lumen_run_info info;
            char what[160];
            snprintf(what, sizeof what, "61x61 on 600x400 f32, method %s, %s, threads %d",
                     lumen_method_name(m), ts_engine_name((ts_engine)e), threads);
            ts_image_fill_bytes(&dst, 0x5A);
            run_ok(ctx, &op, &src.v, &dst.v, &info, what);
            if (info.method != LUMEN_METHOD_FFT)
                fail_msg("%s: ran %s, want fft", what, lumen_method_name(info.method));
            for (int i = 0; i < sm.n; i++) {
                const double got = ts_get(&dst.v, 0, 0, sm.y[i], sm.x[i]);
                if (!(fabs(got - want[i]) <= tol))
                    fail_msg("%s: at (y=%d, x=%d) got %.9g, float64 direct sum %.9g, tolerance "
                             "%.3g",
                             what, sm.y[i], sm.x[i], got, want[i], tol);
            }
            lumen_context_destroy(ctx);
        }
    free(want), free(pd.p);
    samples_free(&sm);
    ts_image_free(&src), ts_image_free(&dst);
}

/* ---- shared tiles: one tile at a time on all threads --------------------------------------- */

/* The job lumen_filter2d would give the CPU for op (a filter2d correlation, anchors resolved). */
static lumen_filter_job job_of(const ts_op *op, const lumen_image *src, const lumen_image *dst)
{
    return (lumen_filter_job){.src = src,
                              .dst = dst,
                              .taps = LUMEN_TAPS_2D,
                              .border = op->opt.border,
                              .border_value = op->opt.border_value,
                              .kw = op->kw,
                              .kh = op->kh,
                              .ax = op->opt.anchor_x < 0 ? op->kw / 2 : op->opt.anchor_x,
                              .ay = op->opt.anchor_y < 0 ? op->kh / 2 : op->opt.anchor_y,
                              .kernel = op->kernel,
                              .scale = 1.0f};
}

/*
 * Shared tiles (one tile at a time on all the context's threads: FFTW's threads inside the
 * transforms, the loads, product and stores split by rows), forced with lumen_cpu_fft_tiled: 97h
 * x 143w cut into 7 x 6 tiles of 16 x 28 outputs (32 x 40 transforms, a 13w x 17h kernel) with
 * partial edge tiles; every border; threads 1, 2, 3 (1: the plain path); planar f32, interleaved
 * c=3 u8 (three channels per tile, stored as one run), strided interleaved c=4 u16 -> planar f32,
 * batch n=2 u16 -> u8, flipped f32 -> u16. Every output against the reference (dst is first
 * filled with a byte pattern, so a row written to the wrong place or not at all fails), the
 * bytes around each view intact, and the shared run within twice the tolerance of the same
 * tiling run tile by tile.
 */
static void test_shared_tiles(void **state)
{
    (void)state;
    enum { H = 97, W = 143, KW = 13, KH = 17, NH = 32, NW = 40 };
    static const struct {
        ts_layout sl, dl;
        lumen_dtype s, d;
        int64_t n, c;
    } variants[] = {{TS_PLANAR, TS_PLANAR, LUMEN_F32, LUMEN_F32, 1, 1},
                    {TS_INTERLEAVED, TS_INTERLEAVED, LUMEN_U8, LUMEN_U8, 1, 3},
                    {TS_STRIDED_HWC, TS_PLANAR, LUMEN_U16, LUMEN_F32, 1, 4},
                    {TS_BATCH, TS_BATCH, LUMEN_U16, LUMEN_U8, 2, 1},
                    {TS_FLIPPED, TS_STRIDED, LUMEN_F32, LUMEN_U16, 1, 2}};
    float k[KW * KH];
    int idx = 0;
    for (int bi = 0; bi < 5; bi++)
        for (int threads = 1; threads <= 3; threads++, idx++) {
            const int v = (bi + threads) % TS_COUNT(variants);
            ts_random_kernel(k, KW * KH, 7000 + idx);
            ts_op op = fft_filter_op(k, KW, KH, borders[bi], border_value(variants[v].s));
            set_anchor(&op, idx);
            ts_image src, want, exact, got, spread;
            ts_image_alloc(&src, variants[v].sl, variants[v].s, variants[v].n, variants[v].c, H, W);
            ts_image_fill_random(&src, 7100 + idx);
            reference_into(&op, &src, variants[v].d, &want);
            reference_into(&op, &src, LUMEN_F32, &exact);
            const double tol = op_tol(&op, &src);
            for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
                lumen_context *ctx = ts_context((ts_engine)e, threads);
                if (!ctx) continue;
                lumen_cpu_fit_threads(ctx);
                char what[256], o[200];
                snprintf(what, sizeof what, "[%s %s %s->%s %s, threads %d, shared 32x40 tiles]",
                         ts_op_describe(&op, o, sizeof o), ts_layout_name(variants[v].sl),
                         lumen_dtype_name(variants[v].s), lumen_dtype_name(variants[v].d),
                         ts_engine_name((ts_engine)e), threads);
                for (int shared = 0; shared < 2; shared++) {
                    ts_image *out = shared ? &got : &spread;
                    ts_image_alloc(out, variants[v].dl, variants[v].d, variants[v].n, variants[v].c,
                                   H, W);
                    ts_image_fill_bytes(out, 0x5A);
                    const lumen_filter_job job = job_of(&op, &src.v, &out->v);
                    const lumen_fft_tiling t = {NH, NW, 0, 0.0, shared ? threads : 1};
                    if (lumen_cpu_fft_tiled(ctx, &job, t) != LUMEN_OK)
                        fail_msg("%s: %s", what, lumen_last_error());
                    char msg[MSG];
                    if (!ts_guards_intact(out, msg, sizeof msg)) fail_msg("%s: %s", what, msg);
                }
                expect_close(&got, &want, &exact, tol, what);
                expect_close(&spread, &want, &exact, tol, what);
                if (variants[v].d == LUMEN_F32) expect_close(&got, &spread, NULL, 2 * tol, what);
                ts_image_free(&got), ts_image_free(&spread);
                lumen_context_destroy(ctx);
            }
            ts_image_free(&src), ts_image_free(&want), ts_image_free(&exact);
        }
}

/*
 * What the tiling chooses with FFTW's threads linked: a single tile shared by both threads when
 * the image takes one big tile (a 201x201 kernel on 400 x 300, a 512 x 640 transform: tiles
 * fewer than threads), tiles spread over the threads when there are many (17x17 on 900 x 600,
 * test_tiles_threads' premise), never a shared tile below 2^18 elements (61x61 on 67 x 45) nor
 * on one thread. Through filter2d, the shared single tile agrees with the reference.
 */
static void test_shared_tiling_choice(void **state)
{
    (void)state;
    const lumen_fft_tiling one = tiling_for(1, 1, 300, 400, 201, 201, 2);
    const lumen_fft_tiling many = tiling_for(1, 1, 600, 900, 17, 17, 2);
    const lumen_fft_tiling alone = tiling_for(1, 1, 300, 400, 201, 201, 1);
    const lumen_fft_tiling small = tiling_for(1, 1, 45, 67, 61, 61, 2);
    assert_int_equal(small.tile_threads, 1); /* below MIN_SHARED_TILE_ELEMS */
    assert_int_equal(alone.tile_threads, 1);
    assert_int_equal(many.tile_threads, 1);
    if (!lumen_cpu_fft_threads_linked()) {
        assert_int_equal(one.tile_threads, 1);
        return;
    }
    if (one.tile_threads != 2 || one.tiles != 1)
        fail_msg("201x201 on 400x300, 2 threads: %lld tiles of %dx%d on %d thread(s), want one "
                 "shared tile",
                 (long long)one.tiles, one.nw, one.nh, one.tile_threads);
    static float k[201 * 201];
    ts_random_kernel(k, 201 * 201, 6161);
    ts_op op = fft_filter_op(k, 201, 201, LUMEN_BORDER_REFLECT101, 0.0f);
    /* one plane (the reference's 201x201 sums take seconds; test_shared_tiles covers layouts) */
    ts_case cs = fft_case(TS_PLANAR, LUMEN_F32, LUMEN_F32, 300, 400, 2, 6161);
    cs.no_oracle = true;
    ts_check(&op, &cs);
}

/* ---- sep_filter2d and gaussian_blur_ex through the FFT ------------------------------------ */

/*
 * sep_filter2d with method FFT: Gaussian row/column kernels (31 taps sigma 5, 17 taps sigma 3)
 * and random asymmetric ones (9 and 23 taps), anchors, convolution; every border x dtype pair
 * x layout in rotation.
 */
static void test_sep_fft(void **state)
{
    (void)state;
    float g31[31], g17[17], r9[9], r23[23];
    assert_int_equal(lumen_gaussian_kernel(31, 5.0, g31), LUMEN_OK);
    assert_int_equal(lumen_gaussian_kernel(17, 3.0, g17), LUMEN_OK);
    ts_random_kernel(r9, 9, 91);
    ts_random_kernel(r23, 23, 92);
    int idx = 0;
    for (int bi = 0; bi < 5; bi++)
        for (int d = 0; d < TS_COUNT(dtype_pairs); d++, idx++) {
            const int which = idx % 3;
            ts_op op = which == 0   ? ts_op_sep(g31, 31, g17, 17)
                       : which == 1 ? ts_op_sep(g17, 17, g31, 31)
                                    : ts_op_sep(r9, 9, r23, 23);
            op = ts_with_border(op, borders[bi], border_value(dtype_pairs[d][0]));
            op.opt.method = LUMEN_METHOD_FFT;
            set_anchor(&op, idx);
            op.opt.convolve = idx % 4 == 2;
            const ts_layout l = (ts_layout)(idx % TS_LAYOUT_COUNT);
            ts_case cs = fft_case(l, dtype_pairs[d][0], dtype_pairs[d][1], idx % 2 ? 45 : 38,
                                  idx % 2 ? 52 : 61, 1 + idx % 3, 600 + idx);
            cs.no_oracle = idx % 3 != 0;
            ts_check(&op, &cs);
        }
}

/*
 * gaussian_blur_ex, precision EXACT, method FFT against the reference (and the oracle, every
 * fourth case) by ts_check; then FFT against SEPARABLE on the same engine by the table (f32:
 * within twice the tolerance, as each is within it of the reference; integers: each is the
 * exact value rounded, either neighbour only within the tolerance of a .5 tie).
 */
static void test_gaussian_ex_fft_vs_separable(void **state)
{
    (void)state;
    static const struct {
        int kx, ky;
        double sx, sy;
    } cases[] = {{0, 0, 5.0, 0.0}, {0, 0, 3.0, 7.0}, {31, 17, 0.0, 0.0}, {41, 9, 6.0, 2.0}};
    static const struct {
        ts_layout l;
        lumen_dtype s, d;
    } variants[] = {{TS_PLANAR, LUMEN_F32, LUMEN_F32},
                    {TS_INTERLEAVED, LUMEN_U8, LUMEN_U8},
                    {TS_BATCH, LUMEN_U16, LUMEN_U8},
                    {TS_STRIDED, LUMEN_F32, LUMEN_U16}};
    int idx = 0;
    for (int c = 0; c < TS_COUNT(cases); c++)
        for (int bi = 0; bi < 5; bi++, idx++) {
            const int v = idx % TS_COUNT(variants);
            ts_op op = ts_op_gaussian(cases[c].kx, cases[c].ky, cases[c].sx, cases[c].sy);
            op = ts_with_border(op, borders[bi], border_value(variants[v].s));
            ts_case cs = ts_case_make(variants[v].l, variants[v].s, variants[v].d, 36, 50,
                                      1 + idx % 3, 700 + idx);
            cs.no_oracle = idx % 4 != 0;
            op.opt.method = cs.want_method = LUMEN_METHOD_FFT;
            ts_check(&op, &cs);

            /* FFT vs SEPARABLE directly, on each fast engine. */
            ts_image src, exact, a, b;
            ts_image_alloc(&src, variants[v].l, variants[v].s, cs.n, cs.c, cs.h, cs.w);
            ts_image_fill_random(&src, cs.seed);
            op.opt.method = LUMEN_METHOD_SEPARABLE;
            reference_into(&op, &src, LUMEN_F32, &exact);
            const double tol = op_tol(&op, &src);
            for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
                lumen_context *ctx = ts_context((ts_engine)e, cs.threads);
                if (!ctx) continue;
                ts_image_alloc(&a, TS_PLANAR, variants[v].d, cs.n, cs.c, cs.h, cs.w);
                ts_image_alloc(&b, TS_PLANAR, variants[v].d, cs.n, cs.c, cs.h, cs.w);
                lumen_run_info ia, ib;
                op.opt.method = LUMEN_METHOD_FFT;
                run_ok(ctx, &op, &src.v, &a.v, &ia, "gaussian_blur_ex fft");
                op.opt.method = LUMEN_METHOD_SEPARABLE;
                run_ok(ctx, &op, &src.v, &b.v, &ib, "gaussian_blur_ex separable");
                assert_int_equal(ia.method, LUMEN_METHOD_FFT);
                assert_int_equal(ib.method, LUMEN_METHOD_SEPARABLE);
                char what[256], o[200];
                snprintf(what, sizeof what, "[%s %s->%s %s]: fft vs separable",
                         ts_op_describe(&op, o, sizeof o), lumen_dtype_name(variants[v].s),
                         lumen_dtype_name(variants[v].d), ts_engine_name((ts_engine)e));
                if (variants[v].d == LUMEN_F32) {
                    /* each is within tol of the reference, so they agree within 2 tol */
                    expect_close(&a, &b, NULL, 2 * tol, what);
                } else {
                    /* both are the exact value rounded, a tie window aside: equal elsewhere */
                    expect_close(&a, &b, &exact, tol, what);
                    expect_close(&b, &a, &exact, tol, what);
                }
                ts_image_free(&a), ts_image_free(&b);
                lumen_context_destroy(ctx);
            }
            ts_image_free(&src), ts_image_free(&exact);
        }
}

/* ---- NaN and Inf ---------------------------------------------------------------------------- */

/* Random f32 data with NaN, +Inf and -Inf at a few places (corners, middle, an Inf pair). */
static void fill_nonfinite(ts_image *im, uint64_t seed)
{
    const lumen_image *v = &im->v;
    ts_image_fill_random(im, seed);
    for (int64_t b = 0; b < v->n; b++) {
        const int64_t c = (b + (int64_t)seed) % v->c; /* one channel per image */
        ts_set(v, b, c, 0, 0, NAN);
        ts_set(v, b, c, v->h / 2, v->w / 3, INFINITY);
        ts_set(v, b, c, v->h / 2 + 1, v->w / 3 + 3, -INFINITY); /* +Inf + -Inf = NaN nearby */
        ts_set(v, b, c, 7 % v->h, (v->w * 3) / 4, NAN);
        ts_set(v, b, c, v->h - 1, 5 % v->w, INFINITY);
    }
}

static int64_t count_class(const lumen_image *im, int want_finite)
{
    int64_t n = 0;
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++)
                    n += (isfinite(ts_get(im, b, c, y, x)) != 0) == want_finite;
    return n;
}

/*
 * NaN and +-Inf in f32 input: the FFT path gives NaN and Inf at exactly the reference's
 * positions (a non-finite window is summed directly; other tiles still use the FFT), kernels
 * with zero taps (0 * NaN = NaN), every border, f32 and u8 (NaN -> 0) outputs.
 */
static void test_nan_inf(void **state)
{
    (void)state;
    float k17[17 * 17], k31[31 * 20];
    ts_random_kernel(k17, 17 * 17, 17);
    ts_random_kernel(k31, 31 * 20, 31);
    for (int i = 0; i < 17 * 17; i += 5)
        k17[i] = 0.0f;
    for (int i = 0; i < 31 * 20; i += 3)
        k31[i] = 0.0f;
    int idx = 0;
    for (int bi = 0; bi < 5; bi++)
        for (int v = 0; v < 3; v++, idx++) {
            const bool big = v == 1;
            ts_op op = big ? fft_filter_op(k31, 31, 20, borders[bi], -4.25f)
                           : fft_filter_op(k17, 17, 17, borders[bi], -4.25f);
            set_anchor(&op, idx);
            const ts_layout l = v == 2 ? TS_INTERLEAVED : TS_PLANAR;
            ts_case cs = fft_case(l, LUMEN_F32, v == 2 ? LUMEN_U8 : LUMEN_F32, 90, 120, 1 + idx % 3,
                                  800 + idx);
            cs.c = l == TS_INTERLEAVED ? 2 : 1;
            cs.fill = fill_nonfinite;
            cs.no_oracle = v != 0;
            ts_check(&op, &cs);
        }
    /* The premise: some outputs are NaN or Inf and most are finite (no smearing). */
    ts_image src, ref;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, 90, 120);
    fill_nonfinite(&src, 3);
    ts_op op = fft_filter_op(k17, 17, 17, LUMEN_BORDER_REFLECT, 0.0f);
    lumen_context *ctx = fast_context(2);
    ts_image_alloc(&ref, TS_PLANAR, LUMEN_F32, 1, 1, 90, 120);
    run_ok(ctx, &op, &src.v, &ref.v, NULL, "nan premise");
    const int64_t nonfinite = count_class(&ref.v, 0), finite = count_class(&ref.v, 1);
    if (nonfinite < 4 * 17 || finite < 90 * 120 / 2)
        fail_msg("premise: %lld non-finite and %lld finite outputs", (long long)nonfinite,
                 (long long)finite);
    lumen_context_destroy(ctx);
    ts_image_free(&src), ts_image_free(&ref);
}

/* ---- exact ties: dyadic kernels on integer images ---------------------------------------- */

/*
 * Dyadic kernels on integer data have exact results with many exact .5 ties. The FFT path must
 * give the correctly rounded exact value (ties to even) at every pixel: binomial 5x5 / 256 and
 * a 17x17 kernel of multiples of 1/64 (and a 31w x 20h one of multiples of 1/256), u8 and u16,
 * every border (integer border values), threads 1..3, several tiles.
 */
static void test_dyadic_ties_exact(void **state)
{
    (void)state;
    static const float b5[5] = {1, 4, 6, 4, 1};
    float k5[25], k17[17 * 17], k31[31 * 20];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            k5[i * 5 + j] = b5[i] * b5[j] / 256.0f;
    ts_rng r = ts_rng_make(64);
    int sum = 0;
    for (int i = 0; i < 17 * 17; i++)
        sum += (int)(k17[i] = (float)(ts_rng_u32(&r) % 8) - 2.0f);
    k17[17 * 8 + 8] += 64.0f - (float)sum; /* taps sum to 64/64 = 1 */
    for (int i = 0; i < 17 * 17; i++)
        k17[i] /= 64.0f;
    sum = 0;
    for (int i = 0; i < 31 * 20; i++)
        sum += (int)(k31[i] = (float)(ts_rng_u32(&r) % 4));
    k31[31 * 10 + 15] += 256.0f - (float)sum;
    for (int i = 0; i < 31 * 20; i++)
        k31[i] /= 256.0f;

    static const struct {
        ts_layout l;
        lumen_dtype s, d;
    } variants[] = {{TS_PLANAR, LUMEN_U8, LUMEN_U8},
                    {TS_INTERLEAVED, LUMEN_U16, LUMEN_U16},
                    {TS_PLANAR, LUMEN_U8, LUMEN_U16},
                    {TS_STRIDED, LUMEN_U16, LUMEN_U8}};
    int64_t ties_total = 0;
    int idx = 0;
    for (int kk = 0; kk < 3; kk++)
        for (int bi = 0; bi < 5; bi++)
            for (int vv = 0; vv < 2; vv++, idx++) {
                const int v = (2 * (kk + bi) + vv) % TS_COUNT(variants);
                const int kw = kk == 0   ? 5
                               : kk == 1 ? 17
                                         : 31,
                          kh = kk == 0   ? 5
                               : kk == 1 ? 17
                                         : 20;
                const float *k = kk == 0 ? k5 : kk == 1 ? k17 : k31;
                ts_op op = fft_filter_op(k, kw, kh, borders[bi], border_value(variants[v].s));
                if (kk == 2) set_anchor(&op, idx);
                const int threads = 1 + idx % 3;
                ts_image src, dst;
                int64_t n, c;
                ts_layout_shape(variants[v].l, &n, &c);
                ts_image_alloc(&src, variants[v].l, variants[v].s, n, c, 90, 120);
                ts_image_alloc(&dst, variants[v].l, variants[v].d, n, c, 90, 120);
                ts_image_fill_random(&src, 900 + idx);
                /* exact in double: every term is dyadic, every partial sum representable */
                double *exact = malloc(sizeof(double) * (size_t)(n * c * 90 * 120));
                assert_non_null(exact);
                for (int64_t b = 0, i = 0; b < n; b++)
                    for (int64_t ch = 0; ch < c; ch++) {
                        padded pd = pad_plane_f64(&src.v, b, ch, k, kw, kh,
                                                  op.opt.anchor_x < 0 ? kw / 2 : op.opt.anchor_x,
                                                  op.opt.anchor_y < 0 ? kh / 2 : op.opt.anchor_y,
                                                  borders[bi], border_value(variants[v].s));
                        for (int y = 0; y < 90; y++)
                            for (int x = 0; x < 120; x++)
                                exact[i++] = f64_at(&pd, y, x);
                        free(pd.p);
                    }
                for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
                    lumen_context *ctx = ts_context((ts_engine)e, threads);
                    if (!ctx) continue;
                    lumen_run_info info;
                    char what[256], o[200];
                    snprintf(what, sizeof what, "[%s %s->%s %s %s threads=%d]",
                             ts_op_describe(&op, o, sizeof o), lumen_dtype_name(variants[v].s),
                             lumen_dtype_name(variants[v].d), ts_layout_name(variants[v].l),
                             ts_engine_name((ts_engine)e), threads);
                    run_ok(ctx, &op, &src.v, &dst.v, &info, what);
                    assert_int_equal(info.method, LUMEN_METHOD_FFT);
                    int64_t i = 0, bad = 0, ties = 0;
                    for (int64_t b = 0; b < n; b++)
                        for (int64_t ch = 0; ch < c; ch++)
                            for (int64_t y = 0; y < 90; y++)
                                for (int64_t x = 0; x < 120; x++, i++) {
                                    const double want = ts_quantize(exact[i], variants[v].d);
                                    const double got = ts_get(&dst.v, b, ch, y, x);
                                    const bool tie =
                                        exact[i] - floor(exact[i]) == 0.5 && exact[i] > 0 &&
                                        exact[i] < (variants[v].d == LUMEN_U8 ? 255 : 65535);
                                    ties += tie;
                                    if (got != want && bad++ == 0)
                                        print_message(
                                            "%s: first wrong pixel (b=%lld c=%lld y=%lld "
                                            "x=%lld): exact %.9g, want %.0f, got %.0f%s\n",
                                            what, (long long)b, (long long)ch, (long long)y,
                                            (long long)x, exact[i], want, got,
                                            tie ? " (a tie)" : "");
                                }
                    if (bad)
                        fail_msg("%s: %lld pixels not the correctly rounded exact value", what,
                                 (long long)bad);
                    if (e == TS_GENERIC) ties_total += ties;
                    lumen_context_destroy(ctx);
                }
                free(exact);
                ts_image_free(&src), ts_image_free(&dst);
            }
    /* the premise: the data produced plenty of exact ties */
    if (ties_total < 1000) fail_msg("premise: only %lld exact ties", (long long)ties_total);
    print_message("dyadic kernels: %lld exact .5 ties, all rounded to even\n",
                  (long long)ties_total);
}

/* ---- plan cache and planning policies ------------------------------------------------------ */

static bool file_nonempty(const char *name)
{
    char path[sizeof g_cache + 64];
    struct stat st;
    snprintf(path, sizeof path, "%s/lumen/%s", g_cache, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/*
 * One context: a second call gives identical bits (cached plan and spectrum), and so does a
 * call after lumen_context_clear_plans; a different kernel of the same size, the convolution
 * (flipped kernel) and a separable pair on the same context are not served a stale spectrum;
 * in place (dst == src) equals out of place.
 */
static void test_plan_cache(void **state)
{
    (void)state;
    enum { H = 90, W = 120 };
    float ka[31 * 20], kb[31 * 20], kx[31], ky[20];
    ts_random_kernel(ka, 31 * 20, 1);
    ts_random_kernel(kb, 31 * 20, 2);
    ts_random_kernel(kx, 31, 3);
    ts_random_kernel(ky, 20, 4);
    ts_image src, first, again, want;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    ts_image_alloc(&first, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    ts_image_alloc(&again, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    ts_image_fill_random(&src, 5);
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 2);
        if (!ctx) continue;
        ts_op a = fft_filter_op(ka, 31, 20, LUMEN_BORDER_REFLECT101, 0.0f);
        run_ok(ctx, &a, &src.v, &first.v, NULL, "plan cache: first call");
        ts_image_fill_bytes(&again, 0x5A);
        run_ok(ctx, &a, &src.v, &again.v, NULL, "plan cache: second call");
        ts_assert_equal_images(&again.v, &first.v, "plan cache: second call vs first");
        lumen_context_clear_plans(ctx);
        ts_image_fill_bytes(&again, 0x5A);
        run_ok(ctx, &a, &src.v, &again.v, NULL, "plan cache: after clear_plans");
        ts_assert_equal_images(&again.v, &first.v, "plan cache: after clear_plans vs first");
        reference_into(&a, &src, LUMEN_F32, &want);
        expect_close(&first, &want, NULL, op_tol(&a, &src), "plan cache: kernel a");
        ts_image_free(&want);

        /* other kernels of the same size on the same context */
        ts_op others[4];
        others[0] = fft_filter_op(kb, 31, 20, LUMEN_BORDER_REFLECT101, 0.0f);
        others[1] = a, others[1].opt.convolve = 1;
        others[2] = ts_with_border(ts_op_sep(kx, 31, ky, 20), LUMEN_BORDER_REFLECT101, 0.0f);
        others[2].opt.method = LUMEN_METHOD_FFT;
        others[3] = a, others[3].opt.anchor_x = 0, others[3].opt.anchor_y = 19;
        for (int i = 0; i < 4; i++) {
            reference_into(&others[i], &src, LUMEN_F32, &want);
            ts_image_fill_bytes(&again, 0x5A);
            run_ok(ctx, &others[i], &src.v, &again.v, NULL, "plan cache: other kernel");
            char what[96];
            snprintf(what, sizeof what, "plan cache: kernel %d after a on one context [%s]", i,
                     ts_engine_name((ts_engine)e));
            expect_close(&again, &want, NULL, op_tol(&others[i], &src), what);
            ts_image_free(&want);
        }
        /* back to a: still bit-identical */
        run_ok(ctx, &a, &src.v, &again.v, NULL, "plan cache: a again");
        ts_assert_equal_images(&again.v, &first.v, "plan cache: a after other kernels");
        /* in place */
        ts_image inplace;
        ts_image_alloc(&inplace, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
        memcpy(inplace.buf, src.buf, src.elems * src.es);
        run_ok(ctx, &a, &inplace.v, &inplace.v, NULL, "plan cache: in place");
        ts_assert_equal_images(&inplace.v, &first.v, "fft in place vs out of place");
        ts_image_free(&inplace);
        lumen_context_destroy(ctx);
    }
    ts_image_free(&src), ts_image_free(&first), ts_image_free(&again);
}

/*
 * MEASURE planning (small sizes, so FFTW measures quickly): results within tolerance of the
 * reference, and FFTW wisdom written under $XDG_CACHE_HOME/lumen/; back to ESTIMATE works too.
 */
static void test_measure_planning(void **state)
{
    (void)state;
    float k[9 * 13];
    ts_random_kernel(k, 9 * 13, 913);
    ts_op op = fft_filter_op(k, 9, 13, LUMEN_BORDER_WRAP, 0.0f);
    ts_image src, want, got;
    ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_F32, 1, 3, 40, 30);
    ts_image_alloc(&got, TS_PLANAR, LUMEN_F32, 1, 3, 40, 30);
    ts_image_fill_random(&src, 913);
    reference_into(&op, &src, LUMEN_F32, &want);
    const double tol = op_tol(&op, &src);
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 2);
        if (!ctx) continue;
        for (int round = 0; round < 3; round++) {
            const lumen_fft_planning p = round == 1 ? LUMEN_FFT_MEASURE : LUMEN_FFT_ESTIMATE;
            assert_int_equal(lumen_context_set_fft_planning(ctx, p), LUMEN_OK);
            ts_image_fill_bytes(&got, 0x5A);
            lumen_run_info info;
            char what[96];
            snprintf(what, sizeof what, "planning %s [%s]",
                     p == LUMEN_FFT_MEASURE ? "measure" : "estimate", ts_engine_name((ts_engine)e));
            run_ok(ctx, &op, &src.v, &got.v, &info, what);
            assert_int_equal(info.method, LUMEN_METHOD_FFT);
            expect_close(&got, &want, NULL, tol, what);
            if (p == LUMEN_FFT_MEASURE && !file_nonempty("fftw-wisdom-f32"))
                fail_msg("%s: no FFTW wisdom in %s/lumen/", what, g_cache);
        }
        lumen_context_destroy(ctx);
    }
    ts_image_free(&src), ts_image_free(&want), ts_image_free(&got);
}

/* ---- contexts in parallel ------------------------------------------------------------------ */

/*
 * FFTW's planner is not thread-safe; lumen serialises planning. Two threads, each with its own
 * context, filter by FFT at once with kernel sizes that need new plans every call (contexts
 * created and destroyed inside, so plan destruction overlaps planning too); every result must
 * match the one computed on the main thread within tolerance.
 */
enum { PAR_CALLS = 6, PAR_H = 40, PAR_W = 52 };
typedef struct par_job {
    const ts_image *src;
    const float *k;
    int ksize[PAR_CALLS];
    const ts_image *want; /* PAR_CALLS results */
    double tol[PAR_CALLS];
    int bad_call; /* -1: all good */
    char msg[MSG];
} par_job;

static void *par_worker(void *arg)
{
    par_job *j = arg;
    j->bad_call = -1;
    ts_image dst;
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, PAR_H, PAR_W);
    for (int c = 0; c < PAR_CALLS && j->bad_call < 0; c++) {
        lumen_context *ctx = NULL;
        lumen_status st = lumen_context_create(&ctx);
        if (st == LUMEN_OK) st = lumen_context_set_threads(ctx, 1);
        lumen_filter_options o = lumen_filter_options_default();
        o.method = LUMEN_METHOD_FFT;
        if (st == LUMEN_OK)
            st = lumen_filter2d(ctx, &j->src->v, &dst.v, j->k, j->ksize[c], j->ksize[c], &o, NULL);
        lumen_context_destroy(ctx);
        if (st != LUMEN_OK)
            j->bad_call = c,
            snprintf(j->msg, sizeof j->msg, "status %d (%s)", (int)st, lumen_last_error());
        else if (ts_compare(&dst.v, &j->want[c].v, NULL, j->tol[c], j->msg, sizeof j->msg))
            j->bad_call = c;
    }
    ts_image_free(&dst);
    return NULL;
}

static void test_contexts_in_parallel(void **state)
{
    (void)state;
    static float k[45 * 45];
    ts_random_kernel(k, 45 * 45, 4545);
    ts_image src;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, PAR_H, PAR_W);
    ts_image_fill_random(&src, 4545);
    par_job jobs[2];
    ts_image want[2][PAR_CALLS];
    for (int t = 0; t < 2; t++) {
        jobs[t].src = &src, jobs[t].k = k, jobs[t].want = want[t];
        for (int c = 0; c < PAR_CALLS; c++) {
            const int ks = 5 + 4 * c + 2 * t + (c % 2) * 9; /* differ per thread and per call */
            jobs[t].ksize[c] = ks;
            ts_op op = ts_op_filter2d(k, ks, ks); /* the first ks*ks taps, as the worker uses */
            reference_into(&op, &src, LUMEN_F32, &want[t][c]);
            jobs[t].tol[c] = op_tol(&op, &src);
        }
    }
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_create(&th[t], NULL, par_worker, &jobs[t]), 0);
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    for (int t = 0; t < 2; t++)
        if (jobs[t].bad_call >= 0)
            fail_msg("thread %d, %dx%d kernel: %s", t, jobs[t].ksize[jobs[t].bad_call],
                     jobs[t].ksize[jobs[t].bad_call], jobs[t].msg);
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < PAR_CALLS; c++)
            ts_image_free(&want[t][c]);
    ts_image_free(&src);
}

/* ---- auto ------------------------------------------------------------------------------------ */

/*
 * What auto runs (fast engines): a 3x3 kernel direct; a rank-1 9x9 Gaussian outer product
 * separable or FFT, never direct; all within tolerance. (The 61x61 case is the medium test.)
 * The calibrated rates are then cached in $XDG_CACHE_HOME/lumen/cost-model-v7.
 */
static void test_auto_choices(void **state)
{
    (void)state;
    float k3[9], g9[9], k9[81];
    ts_random_kernel(k3, 9, 33);
    assert_int_equal(lumen_gaussian_kernel(9, 2.0, g9), LUMEN_OK);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 9; j++)
            k9[i * 9 + j] = g9[i] * g9[j];
    ts_image src, want, got;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, 150, 200);
    ts_image_alloc(&got, TS_PLANAR, LUMEN_F32, 1, 1, 150, 200);
    ts_image_fill_random(&src, 99);
    for (int which = 0; which < 2; which++) {
        ts_op op = which ? ts_op_filter2d(k9, 9, 9) : ts_op_filter2d(k3, 3, 3);
        op = ts_with_border(op, LUMEN_BORDER_REPLICATE, 0.0f);
        reference_into(&op, &src, LUMEN_F32, &want);
        for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
            lumen_context *ctx = ts_context((ts_engine)e, 2);
            if (!ctx) continue;
            lumen_run_info info;
            char what[96];
            snprintf(what, sizeof what, "auto, %s kernel [%s]", which ? "rank-1 9x9" : "3x3",
                     ts_engine_name((ts_engine)e));
            run_ok(ctx, &op, &src.v, &got.v, &info, what);
            const bool ok =
                which ? info.method == LUMEN_METHOD_SEPARABLE || info.method == LUMEN_METHOD_FFT
                      : info.method == LUMEN_METHOD_DIRECT;
            if (!ok) fail_msg("%s: ran %s", what, lumen_method_name(info.method));
            expect_close(&got, &want, NULL, op_tol(&op, &src), what);
            lumen_context_destroy(ctx);
        }
        ts_image_free(&want);
    }
    ts_image_free(&src), ts_image_free(&got);
    if (!file_nonempty("cost-model-v7"))
        fail_msg("auto weighed the FFT but left no %s/lumen/cost-model-v7", g_cache);
}

/* ---- accuracy against a float64 direct sum --------------------------------------------------- */

/*
 * The bound: on a 300x200 f32 image with data in [0, 1) (so the data range and max|x|
 * are both ~1), the FFT result is within 1e-5 x sum|k| x range of a float64 direct sum, for
 * random 31, 61, 121 and 201 square kernels (reflect, threads 2: two tiles each). The float64
 * sum is taken at every pixel for 31 and 61, and for 121 and 201 at every 64th row and column,
 * the edge rows and columns and 1000 random pixels. Prints the measured max relative error,
 * one line per size.
 */
static void test_accuracy_vs_f64(void **state)
{
    (void)state;
    enum { H = 200, W = 300 };
    static const int sizes[] = {31, 61, 121, 201};
    ts_image src, got;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    ts_image_alloc(&got, TS_PLANAR, LUMEN_F32, 1, 1, H, W);
    ts_rng r = ts_rng_make(300200);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            ts_set(&src.v, 0, 0, y, x, (float)ts_rng_uniform(&r, 0.0, 1.0));
    const double range = ts_absmax(&src.v);
    lumen_context *ctx = fast_context(2);
    for (int s = 0; s < TS_COUNT(sizes); s++) {
        const int K = sizes[s];
        float *k = malloc(sizeof(float) * (size_t)K * K);
        assert_non_null(k);
        ts_random_kernel(k, K * K, 7000 + K);
        double ksum = 0.0;
        for (int i = 0; i < K * K; i++)
            ksum += fabs(k[i]);
        ts_op op = fft_filter_op(k, K, K, LUMEN_BORDER_REFLECT, 0.0f);
        lumen_run_info info;
        run_ok(ctx, &op, &src.v, &got.v, &info, "accuracy");
        assert_int_equal(info.method, LUMEN_METHOD_FFT);
        padded pd = pad_f64(&src.v, k, K, K, K / 2, K / 2, LUMEN_BORDER_REFLECT, 0.0f);
        const bool full = K <= 61;
        samples sm = full ? all_pixels(H, W) : grid_samples(H, W, 64, 1000, K);
        double worst = 0.0;
        int wi = 0;
        for (int i = 0; i < sm.n; i++) {
            const double err =
                fabs(ts_get(&got.v, 0, 0, sm.y[i], sm.x[i]) - f64_at(&pd, sm.y[i], sm.x[i]));
            if (err > worst) worst = err, wi = i;
        }
        const lumen_fft_tiling t = tiling_for(1, 1, H, W, K, K, 2);
        print_message("fft accuracy %3dx%-3d on 300x200 f32: max |fft - f64 direct| = %.3g x "
                      "sum|k| x max|x| (bound %.0e; %d pixels checked; %lld tiles of %dx%d)\n",
                      K, K, worst / (ksum * range), TS_F32_REL, sm.n, (long long)t.tiles, t.nw,
                      t.nh);
        if (worst > ts_f32_tol(ksum, range))
            fail_msg("%dx%d: |fft - f64| = %.3g at (y=%d, x=%d) exceeds %.3g", K, K, worst,
                     sm.y[wi], sm.x[wi], ts_f32_tol(ksum, range));
        samples_free(&sm);
        free(k), free(pd.p);
    }
    lumen_context_destroy(ctx);
    ts_image_free(&src), ts_image_free(&got);
}

/* ---- large finite values ------------------------------------------------------------------- */

/*
 * Finite data near the top of the f32 range (|x| up to 1e36): the transform's intermediate
 * sums (up to N*N*max|x|) must not overflow into Inf/NaN where the result is finite.
 */
static void fill_huge(ts_image *im, uint64_t seed)
{
    ts_image_fill_random(im, seed); /* [-64, 192) */
    const lumen_image *v = &im->v;
    for (int64_t y = 0; y < v->h; y++)
        for (int64_t x = 0; x < v->w; x++)
            ts_set(v, 0, 0, y, x, ts_get(v, 0, 0, y, x) * 5e33);
}

static void test_huge_finite_values(void **state)
{
    (void)state;
    float k[31 * 31];
    ts_random_kernel(k, 31 * 31, 311);
    ts_op op = fft_filter_op(k, 31, 31, LUMEN_BORDER_REFLECT, 0.0f);
    ts_case cs = fft_case(TS_PLANAR, LUMEN_F32, LUMEN_F32, 90, 120, 2, 1);
    cs.fill = fill_huge;
    cs.no_oracle = true;
    ts_check(&op, &cs);
}

/* ---- errors -----------------------------------------------------------------------------------
 */

static void expect_err_(lumen_status got, const char *arg, const ts_image *dst, const char *what,
                        int line)
{
    const char *msg = lumen_last_error();
    bool untouched = true;
    if (dst)
        for (size_t i = 0; i < dst->elems * dst->es; i++)
            if (dst->inside[i / dst->es] && dst->buf[i] != 0x77) untouched = false;
    if (got != LUMEN_ERR_INVALID_ARGUMENT || !ts_names(msg, arg) || !untouched)
        fail_msg("line %d, %s: status %d (want %d), message '%s' (want one naming '%s'), dst %s",
                 line, what, (int)got, (int)LUMEN_ERR_INVALID_ARGUMENT, msg, arg,
                 untouched ? "untouched" : "WRITTEN");
}
#define expect_err(got, arg, dst, what) expect_err_(got, arg, dst, what, __LINE__)

static void test_errors(void **state)
{
    (void)state;
    float k[25], g[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
    ts_random_kernel(k, 25, 1);
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, 20, 24);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, 20, 24);
    ts_image_fill_random(&src, 1);
    ts_image_fill_bytes(&dst, 0x77);
    lumen_context *ctx = fast_context(2);
    lumen_filter_options o = lumen_filter_options_default();
    static const int bad_methods[] = {5, -1, 99, LUMEN_METHOD_RECURSIVE};
    for (int i = 0; i < TS_COUNT(bad_methods); i++) {
        o.method = (lumen_method)bad_methods[i];
        expect_err(lumen_filter2d(ctx, &src.v, &dst.v, k, 5, 5, &o, NULL), "method", &dst,
                   "filter2d bad method");
        expect_err(lumen_sep_filter2d(ctx, &src.v, &dst.v, g, 5, g, 5, &o, NULL), "method", &dst,
                   "sep_filter2d bad method");
    }
    o.method = LUMEN_METHOD_DIRECT;
    expect_err(lumen_sep_filter2d(ctx, &src.v, &dst.v, g, 5, g, 5, &o, NULL), "method", &dst,
               "sep_filter2d method direct");

    lumen_gaussian_options go = lumen_gaussian_options_default();
    go.sigma_x = 2.0;
    static const int bad_precisions[] = {9, -1, 2};
    for (int i = 0; i < TS_COUNT(bad_precisions); i++) {
        go.precision = (lumen_precision)bad_precisions[i];
        expect_err(lumen_gaussian_blur_ex(ctx, &src.v, &dst.v, &go, NULL), "precision", &dst,
                   "gaussian_blur_ex bad precision");
    }
    go.precision = LUMEN_PRECISION_EXACT;
    static const int bad_gauss_methods[] = {LUMEN_METHOD_DIRECT, 5, -1, LUMEN_METHOD_RECURSIVE};
    for (int i = 0; i < TS_COUNT(bad_gauss_methods); i++) {
        go.method = (lumen_method)bad_gauss_methods[i];
        expect_err(lumen_gaussian_blur_ex(ctx, &src.v, &dst.v, &go, NULL), "method", &dst,
                   "gaussian_blur_ex precision exact, bad method");
    }

    /* lumen_method_parse / lumen_method_name */
    static const char *good[] = {"auto", "direct", "separable", "fft"};
    for (int i = 0; i < 4; i++) {
        lumen_method m = (lumen_method)77;
        assert_int_equal(lumen_method_parse(good[i], &m), LUMEN_OK);
        assert_int_equal(m, i);
        assert_string_equal(lumen_method_name(m), good[i]);
    }
    assert_string_equal(lumen_method_name(LUMEN_METHOD_FFT), "fft");
    static const char *bad_names[] = {"fourier", "FFT", "", "fft ", "recursive"};
    for (int i = 0; i < TS_COUNT(bad_names); i++) {
        lumen_method m = (lumen_method)77;
        expect_err(lumen_method_parse(bad_names[i], &m), "method", NULL, bad_names[i]);
        assert_int_equal(m, 77);
    }
    lumen_method m;
    expect_err(lumen_method_parse(NULL, &m), "method", NULL, "method_parse(NULL)");
    expect_err(lumen_method_parse("fft", NULL), "out", NULL, "method_parse(out NULL)");

    /* planning policy */
    expect_err(lumen_context_set_fft_planning(ctx, (lumen_fft_planning)7), "fft_planning", NULL,
               "set_fft_planning(7)");
    expect_err(lumen_context_set_fft_planning(ctx, (lumen_fft_planning)-1), "fft_planning", NULL,
               "set_fft_planning(-1)");
    expect_err(lumen_context_set_fft_planning(NULL, LUMEN_FFT_ESTIMATE), "ctx", NULL,
               "set_fft_planning(NULL ctx)");
    lumen_context_clear_plans(NULL); /* a no-op */
    /* the context still works, by FFT */
    o.method = LUMEN_METHOD_FFT;
    lumen_run_info info;
    assert_int_equal(lumen_filter2d(ctx, &src.v, &dst.v, k, 5, 5, &o, &info), LUMEN_OK);
    assert_int_equal(info.method, LUMEN_METHOD_FFT);
    lumen_context_destroy(ctx);
    ts_image_free(&src), ts_image_free(&dst);
}

/* ---- main -------------------------------------------------------------------------------------
 */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int main(void)
{
    /* Before any FFT: wisdom and the cost model go to a private folder, removed at the end. */
    if (!mkdtemp(g_cache) || setenv("XDG_CACHE_HOME", g_cache, 1) != 0) {
        perror("test_fft: private XDG_CACHE_HOME");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[0]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[1]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[2]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[3]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[4]),
        cmocka_unit_test(test_kernel_sizes_anchors),
        cmocka_unit_test(test_kernel_larger_than_image),
        cmocka_unit_test(test_tiny_images),
        cmocka_unit_test(test_tiles_threads),
        cmocka_unit_test(test_shared_tiles),
        cmocka_unit_test(test_shared_tiling_choice),
        cmocka_unit_test(test_sep_fft),
        cmocka_unit_test(test_gaussian_ex_fft_vs_separable),
        cmocka_unit_test(test_nan_inf),
        cmocka_unit_test(test_dyadic_ties_exact),
        cmocka_unit_test(test_huge_finite_values),
        cmocka_unit_test(test_plan_cache),
        cmocka_unit_test(test_measure_planning),
        cmocka_unit_test(test_contexts_in_parallel),
        cmocka_unit_test(test_auto_choices),
        cmocka_unit_test(test_medium_61_auto_fft),
        cmocka_unit_test(test_accuracy_vs_f64),
    };
    const char *only = getenv("LUMEN_TEST_FILTER"); /* e.g. "test_nan*" while debugging */
    if (only && *only) cmocka_set_test_filter(only);
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(g_cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed;
}
