/*
 * The fast Gaussian (lumen_cpu_gaussian_fast, LUMEN_PRECISION_FAST) against an
 * independent oracle: OpenCV's kernel (ksize round(8 sigma + 1) | 1) applied
 * separably in double with OpenCV's borderInterpolate loop. The contract:
 *   f32 dst      |fast - exact| <= GF_TOL * range
 *   u8/u16 dst   |fast - exact| <= 1 + GF_TOL * range
 * range: max - min of the source data (and the border value, for constant).
 * Both fast engines (portable and AVX2) run, with 1 and 2 threads, which must
 * agree bit for bit. Also: layouts, batches, tiny images, huge sigma, NaN
 * spreading, in place and overlapping views, bad arguments.
 */
#include "test_support.h"

#include "backends/cpu/gaussian_fast.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GF_TOL 1e-3

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

/* Largest error seen (relative to range), reported at the end of each test. */
static double worst;

/* ---- the oracle ---------------------------------------------------------- */

/* OpenCV's getGaussianKernel for the size lumen's FAST mode is measured against. */
static int gauss_taps(double sigma, double *k)
{
    const int n = (int)lrint(sigma * 8 + 1) | 1;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) / 2.0;
        k[i] = exp(-x * x / (2 * sigma * sigma));
        sum += k[i];
    }
    for (int i = 0; i < n; i++) k[i] /= sum;
    return n;
}

/* 1-D correlation of in[0..n) (stride s) with k (centred), border rule b, constant v. */
static double filter_at(const double *in, int64_t n, int64_t s, int64_t i, const double *k,
                        int taps, lumen_border b, double v)
{
    double acc = 0.0;
    for (int t = 0; t < taps; t++) {
        const int64_t j = ts_border_interp(i + t - taps / 2, n, b);
        acc += k[t] * (j < 0 ? v : in[j * s]);
    }
    return acc;
}

/* Exact separable blur of src in double; n*c*h*w values in NCHW order (free()). */
static double *oracle(const lumen_image *src, double sx, double sy, lumen_border b, double v)
{
    const int64_t n = src->n, c = src->c, h = src->h, w = src->w, plane = h * w;
    double *kx = malloc(sizeof(double) * (size_t)(lrint(sx * 8 + 1) | 1));
    double *ky = malloc(sizeof(double) * (size_t)(lrint(sy * 8 + 1) | 1));
    double *in = malloc(sizeof(double) * (size_t)plane);
    double *tmp = malloc(sizeof(double) * (size_t)plane);
    double *out = malloc(sizeof(double) * (size_t)(n * c * plane));
    assert_true(kx && ky && in && tmp && out);
    const int tx = gauss_taps(sx, kx), ty = gauss_taps(sy, ky);
    for (int64_t p = 0; p < n * c; p++) {
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) in[y * w + x] = ts_get(src, p / c, p % c, y, x);
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                tmp[y * w + x] = filter_at(in + y * w, w, 1, x, kx, tx, b, v);
        /* Rows outside the image are all v for the constant rule: a row of v blurs to v. */
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                out[p * plane + y * w + x] = filter_at(tmp + x, h, w, y, ky, ty, b, v);
    }
    free(kx), free(ky), free(in), free(tmp);
    return out;
}

/* max - min of the view's values, with v included for the constant rule. */
static double data_range(const lumen_image *im, lumen_border b, double v)
{
    const bool constant = b == LUMEN_BORDER_CONSTANT;
    double lo = constant ? v : INFINITY, hi = constant ? v : -INFINITY;
    for (int64_t p = 0; p < im->n * im->c; p++)
        for (int64_t y = 0; y < im->h; y++)
            for (int64_t x = 0; x < im->w; x++) {
                const double u = ts_get(im, p / im->c, p % im->c, y, x);
                lo = u < lo ? u : lo, hi = u > hi ? u : hi;
            }
    return hi > lo ? hi - lo : 1.0;
}

/* ---- running the fast path ----------------------------------------------- */

static lumen_status run_fast(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                             double sx, double sy, lumen_border b, float v)
{
    lumen_gauss_job job = {
        .src = src, .dst = dst, .sigma_x = sx, .sigma_y = sy, .border = b, .border_value = v};
    return lumen_cpu_gaussian_fast(ctx, &job);
}

typedef enum { DATA_RANDOM, DATA_STEP } gf_data;

typedef struct gf_case {
    ts_layout src_layout, dst_layout;
    lumen_dtype src_t, dst_t;
    int64_t n, c, h, w;
    double sx, sy;
    lumen_border border;
    float value;
    gf_data data;
    uint64_t seed;
} gf_case;

static gf_case make_case(ts_layout l, lumen_dtype t, int64_t h, int64_t w, double sx, double sy,
                         lumen_border b, gf_data data)
{
    gf_case cs = {l, l, t, t, 1, 1, h, w, sx, sy, b, 0.0f, data, 0};
    ts_layout_shape(l, &cs.n, &cs.c);
    cs.value = t == LUMEN_U8 ? 77.0f : t == LUMEN_U16 ? 20000.0f : 33.0f;
    cs.seed = (uint64_t)(h * 131 + w * 7 + (int64_t)(sx * 10) + b);
    return cs;
}

/* Four quadrants, low and high in a checkerboard: steps in x and y, and unequal borders. */
static void fill_step(ts_image *im)
{
    const lumen_image *v = &im->v;
    const double lo = v->dtype == LUMEN_F32 ? -50.0 : v->dtype == LUMEN_U8 ? 10.0 : 1000.0;
    const double hi = v->dtype == LUMEN_F32 ? 150.0 : v->dtype == LUMEN_U8 ? 245.0 : 64000.0;
    for (int64_t p = 0; p < v->n * v->c; p++)
        for (int64_t y = 0; y < v->h; y++)
            for (int64_t x = 0; x < v->w; x++)
                ts_set(v, p / v->c, p % v->c, y, x, ((x * 2 >= v->w) != (y * 2 >= v->h)) ? hi : lo);
}

static void describe(const gf_case *cs, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s -> %s %s, n%lld c%lld %lldx%lld, sigma %g x %g, %s, %s data",
             ts_layout_name(cs->src_layout), lumen_dtype_name(cs->src_t),
             ts_layout_name(cs->dst_layout), lumen_dtype_name(cs->dst_t), (long long)cs->n,
             (long long)cs->c, (long long)cs->h, (long long)cs->w, cs->sx, cs->sy,
             lumen_border_name(cs->border), cs->data == DATA_STEP ? "step" : "random");
}

/*
 * Largest |got - want| / range over the view (for integer dsts: want saturated,
 * and beyond the 0.5 of rounding), failing at the first one out of bounds.
 */
static double compare_oracle(const lumen_image *got, const double *want, double range, double tol,
                             const char *label)
{
    const int64_t plane = got->h * got->w;
    const bool integer = got->dtype != LUMEN_F32;
    const double top = got->dtype == LUMEN_U8 ? 255.0 : 65535.0;
    double max = 0.0;
    for (int64_t p = 0; p < got->n * got->c; p++)
        for (int64_t y = 0; y < got->h; y++)
            for (int64_t x = 0; x < got->w; x++) {
                const double g = ts_get(got, p / got->c, p % got->c, y, x);
                double wv = want[p * plane + y * got->w + x];
                if (integer) wv = wv < 0 ? 0 : wv > top ? top : wv;
                const double err = fabs(g - wv);
                if (!(err <= (integer ? 1.0 : 0.0) + tol * range))
                    fail_msg("%s: (b%lld c%lld y%lld x%lld) = %.9g, exact %.9g, error %.3g x range",
                             label, (long long)(p / got->c), (long long)(p % got->c),
                             (long long)y, (long long)x, g, wv, err / range);
                const double excess = (integer ? fmax(err - 0.5, 0.0) : err) / range;
                max = excess > max ? excess : max;
            }
    return max;
}

/*
 * Runs the case on both fast engines, threads 1 and 2: each result within the
 * bound of the oracle, equal across thread counts, no byte outside dst written,
 * src untouched.
 */
static void check_case(const gf_case *cs, double tol)
{
    char label[256], msg[256];
    describe(cs, label, sizeof label);
    ts_image src, dst, first;
    ts_image_alloc(&src, cs->src_layout, cs->src_t, cs->n, cs->c, cs->h, cs->w);
    ts_image_alloc(&dst, cs->dst_layout, cs->dst_t, cs->n, cs->c, cs->h, cs->w);
    ts_image_alloc(&first, TS_PLANAR, cs->dst_t, cs->n, cs->c, cs->h, cs->w);
    if (cs->data == DATA_STEP) fill_step(&src);
    else ts_image_fill_random(&src, cs->seed);
    unsigned char *src_copy = malloc(src.elems * src.es);
    assert_non_null(src_copy);
    memcpy(src_copy, src.buf, src.elems * src.es);
    double *want = oracle(&src.v, cs->sx, cs->sy, cs->border, cs->value);
    const double range = data_range(&src.v, cs->border, cs->value);
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++)
        for (int threads = 1; threads <= 2; threads++) {
            lumen_context *ctx = ts_context((ts_engine)e, threads);
            if (!ctx) continue;
            ts_image_fill_bytes(&dst, 0xCD);
            assert_int_equal(run_fast(ctx, &src.v, &dst.v, cs->sx, cs->sy, cs->border, cs->value),
                             LUMEN_OK);
            lumen_context_destroy(ctx);
            double err = compare_oracle(&dst.v, want, range, tol, label);
            worst = err > worst ? err : worst;
            if (!ts_guards_intact(&dst, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
            if (memcmp(src_copy, src.buf, src.elems * src.es) != 0)
                fail_msg("%s: src changed", label);
            if (threads == 1) { /* keep it: threads 2 must equal it exactly */
                for (int64_t p = 0; p < cs->n * cs->c; p++)
                    for (int64_t y = 0; y < cs->h; y++)
                        for (int64_t x = 0; x < cs->w; x++)
                            ts_set(&first.v, p / cs->c, p % cs->c, y, x,
                                   ts_get(&dst.v, p / cs->c, p % cs->c, y, x));
            } else if (ts_compare_exact(&dst.v, &first.v, msg, sizeof msg) != 0) {
                fail_msg("%s (%s): 1 and 2 threads differ: %s", label,
                         ts_engine_name((ts_engine)e), msg);
            }
        }
    free(want), free(src_copy);
    ts_image_free(&src), ts_image_free(&dst), ts_image_free(&first);
}

static int reset_worst(void **state)
{
    (void)state;
    worst = 0.0;
    return 0;
}

static void report(const char *test)
{
    print_message("%s: worst error %.3g x range (bound %.0e)\n", test, worst, GF_TOL);
    worst = 0.0;
}

/* ---- accuracy ------------------------------------------------------------- */

/* The sigma grid x every border x random and step data, f32 planar; pads longer than the image. */
static void test_sigma_grid(void **state)
{
    (void)state;
    const double sigmas[] = {0.5, 1, 2, 3, 5, 10, 30, 50};
    for (int s = 0; s < TS_COUNT(sigmas); s++)
        for (int b = 0; b < TS_COUNT(borders); b++)
            for (int d = DATA_RANDOM; d <= DATA_STEP; d++) {
                gf_case cs = make_case(TS_PLANAR, LUMEN_F32, 40, 56, sigmas[s], sigmas[s],
                                       borders[b], (gf_data)d);
                check_case(&cs, GF_TOL);
            }
    report("sigma grid");
}

/* A larger image, so the pads (5 sigma) are shorter than the border's period. */
static void test_pads_shorter_than_period(void **state)
{
    (void)state;
    const double sigmas[] = {2.5, 13, 30};
    for (int s = 0; s < TS_COUNT(sigmas); s++)
        for (int b = 0; b < TS_COUNT(borders); b++) {
            gf_case cs = make_case(TS_PLANAR, LUMEN_F32, 160, 175, sigmas[s], sigmas[s],
                                   borders[b], s == 1 ? DATA_STEP : DATA_RANDOM);
            check_case(&cs, GF_TOL);
        }
    report("pads shorter than the period");
}

/* u8 and u16 images, interleaved RGB and planar, rounding and saturating. */
static void test_integer_dtypes(void **state)
{
    (void)state;
    const double sigmas[] = {0.8, 3, 20};
    const lumen_dtype types[] = {LUMEN_U8, LUMEN_U16};
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < TS_COUNT(sigmas); s++)
            for (int b = 0; b < TS_COUNT(borders); b++) {
                gf_case cs = make_case(s == 1 ? TS_PLANAR : TS_INTERLEAVED, types[t], 33, 47,
                                       sigmas[s], sigmas[s], borders[b],
                                       b % 2 ? DATA_STEP : DATA_RANDOM);
                check_case(&cs, GF_TOL);
            }
    report("u8/u16");
}

/* Every layout of the test support (strided, negative strides, batches, HWC), mixed dtypes. */
static void test_layouts(void **state)
{
    (void)state;
    const lumen_dtype pairs[][2] = {{LUMEN_F32, LUMEN_F32}, {LUMEN_U8, LUMEN_F32},
                                    {LUMEN_F32, LUMEN_U16}, {LUMEN_U16, LUMEN_U8}};
    for (int l = 0; l < TS_LAYOUT_COUNT; l++)
        for (int p = 0; p < TS_COUNT(pairs); p++) {
            gf_case cs = make_case((ts_layout)l, pairs[p][0], 45, 97, p % 2 ? 1.5 : 4.0,
                                   p % 2 ? 6.0 : 2.2, borders[(l + p) % 5], DATA_RANDOM);
            cs.dst_t = pairs[p][1];
            cs.dst_layout = (ts_layout)((l + p) % TS_LAYOUT_COUNT);
            /* the dst layout must have the same (n, c) */
            int64_t n, c;
            ts_layout_shape(cs.dst_layout, &n, &c);
            if (n != cs.n || c != cs.c) cs.dst_layout = cs.src_layout;
            check_case(&cs, GF_TOL);
        }
    report("layouts");
}

/* 1x1, 1xN and Nx1 images, with sigma tiny, moderate and huge. */
static void test_tiny_images(void **state)
{
    (void)state;
    const int64_t sizes[][2] = {{1, 1}, {1, 23}, {19, 1}, {2, 3}};
    const double sigmas[] = {0.3, 3, 500};
    for (int z = 0; z < TS_COUNT(sizes); z++)
        for (int s = 0; s < TS_COUNT(sigmas); s++)
            for (int b = 0; b < TS_COUNT(borders); b++) {
                gf_case cs = make_case(z % 2 ? TS_INTERLEAVED : TS_PLANAR, LUMEN_F32, sizes[z][0],
                                       sizes[z][1], sigmas[s], sigmas[(s + z) % 3], borders[b],
                                       DATA_RANDOM);
                check_case(&cs, GF_TOL);
            }
    report("tiny images");
}

/* sigma_x != sigma_y, across the exact/recursive switch, and a huge sigma on a real image. */
static void test_anisotropic_and_huge(void **state)
{
    (void)state;
    const double pairs[][2] = {{0.7, 40}, {25, 1.2}, {3, 60}, {1.99, 2.0}, {500, 300}};
    for (int p = 0; p < TS_COUNT(pairs); p++)
        for (int b = 0; b < TS_COUNT(borders); b++) {
            const bool huge = pairs[p][0] > 100; /* small: the oracle's cost grows with sigma */
            gf_case cs = make_case(TS_PLANAR, LUMEN_F32, huge ? 13 : 31, huge ? 16 : 45,
                                   pairs[p][0], pairs[p][1], borders[b],
                                   p % 2 ? DATA_STEP : DATA_RANDOM);
            check_case(&cs, GF_TOL);
        }
    report("anisotropic and huge sigma");
}

/* ---- NaN, aliasing, arguments --------------------------------------------- */

/*
 * A NaN at (y0, x0) of channel 0. Recursive axis (sigma >= 2): the whole line
 * becomes NaN; exact axis (sigma < 2): the taps/2 neighbours. Channel 1 stays finite.
 */
static void check_nan(double sx, double sy)
{
    const int64_t h = 21, w = 26, y0 = 9, x0 = 12;
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 2, h, w);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 2, h, w);
    ts_image_fill_random(&src, 5);
    ts_set(&src.v, 0, 0, y0, x0, NAN);
    const int64_t rx = sx < 2 ? (lrint(sx * 8 + 1) | 1) / 2 : w;
    const int64_t ry = sy < 2 ? (lrint(sy * 8 + 1) | 1) / 2 : h;
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 2);
        if (!ctx) continue;
        assert_int_equal(run_fast(ctx, &src.v, &dst.v, sx, sy, LUMEN_BORDER_REFLECT101, 0),
                         LUMEN_OK);
        lumen_context_destroy(ctx);
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                const bool near = llabs(y - y0) <= ry && llabs(x - x0) <= rx;
                if (isnan(ts_get(&dst.v, 0, 0, y, x)) != near)
                    fail_msg("sigma %g x %g: (%lld, %lld) is %g, NaN expected: %d", sx, sy,
                             (long long)y, (long long)x, ts_get(&dst.v, 0, 0, y, x), near);
                if (!isfinite(ts_get(&dst.v, 0, 1, y, x)))
                    fail_msg("sigma %g x %g: channel 1 is not finite", sx, sy);
            }
    }
    ts_image_free(&src), ts_image_free(&dst);
}

static void test_nan(void **state)
{
    (void)state;
    check_nan(1.0, 1.0); /* exact both ways: a 9 x 9 NaN square */
    check_nan(5.0, 5.0); /* recursive both ways: the whole plane */
    check_nan(1.0, 5.0); /* NaN columns x0 +- 4 */
    check_nan(5.0, 1.0); /* NaN rows y0 +- 4 */
}

/* An infinity: +inf over the exact kernel's reach; through a recursion, NaN (inf - inf). */
static void test_inf(void **state)
{
    (void)state;
    const int64_t h = 12, w = 15;
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, h, w);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, h, w);
    ts_image_fill_random(&src, 6);
    ts_set(&src.v, 0, 0, 6, 7, INFINITY);
    lumen_context *ctx = ts_context(TS_GENERIC, 1);
    assert_int_equal(run_fast(ctx, &src.v, &dst.v, 0.5, 0.5, LUMEN_BORDER_REFLECT, 0), LUMEN_OK);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const double v = ts_get(&dst.v, 0, 0, y, x);
            const bool near = llabs(y - 6) <= 2 && llabs(x - 7) <= 2; /* 5 taps at sigma 0.5 */
            if (near ? !(isinf(v) && v > 0) : !isfinite(v))
                fail_msg("sigma 0.5: (%lld, %lld) = %g", (long long)y, (long long)x, v);
        }
    assert_int_equal(run_fast(ctx, &src.v, &dst.v, 3.0, 3.0, LUMEN_BORDER_REFLECT, 0), LUMEN_OK);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            if (!isnan(ts_get(&dst.v, 0, 0, y, x))) fail_msg("sigma 3: (%lld, %lld) is not NaN",
                                                             (long long)y, (long long)x);
    lumen_context_destroy(ctx);
    ts_image_free(&src), ts_image_free(&dst);
}

/* Runs src -> dst on the AVX2 (else portable) engine with 2 threads. */
static void run_default(const lumen_image *src, const lumen_image *dst, double sigma,
                        lumen_border b)
{
    lumen_context *ctx = ts_context(TS_AVX2, 2);
    if (!ctx) ctx = ts_context(TS_GENERIC, 2);
    assert_int_equal(run_fast(ctx, src, dst, sigma, sigma * 0.7, b, 3.0f), LUMEN_OK);
    lumen_context_destroy(ctx);
}

/* dst == src (in place) and dst overlapping src (a row lower) equal the out-of-place result. */
static void test_aliasing(void **state)
{
    (void)state;
    char msg[256];
    const ts_layout layouts[] = {TS_PLANAR, TS_INTERLEAVED};
    const lumen_dtype types[] = {LUMEN_F32, LUMEN_U8};
    const double sigmas[] = {1.2, 7};
    for (int l = 0; l < 2; l++)
        for (int s = 0; s < 2; s++) {
            ts_image a, ref;
            ts_image_alloc(&a, layouts[l], types[l], 1, l ? 3 : 1, 24, 30);
            ts_image_alloc(&ref, layouts[l], types[l], 1, l ? 3 : 1, 24, 30);
            ts_image_fill_random(&a, 9);
            run_default(&a.v, &ref.v, sigmas[s], LUMEN_BORDER_WRAP);
            run_default(&a.v, &a.v, sigmas[s], LUMEN_BORDER_WRAP);
            if (ts_compare_exact(&a.v, &ref.v, msg, sizeof msg)) fail_msg("in place: %s", msg);
            ts_image_free(&a), ts_image_free(&ref);
        }
    /* Planar f32 rows 0..h-1 in, rows 1..h out, in one buffer. */
    const int64_t h = 20, w = 27;
    float *buf = malloc(sizeof(float) * (size_t)((h + 1) * w));
    float *out = malloc(sizeof(float) * (size_t)(h * w));
    assert_true(buf && out);
    for (int64_t i = 0; i < (h + 1) * w; i++) buf[i] = (float)((i * 37) % 101);
    lumen_image src = lumen_image_nchw(buf, LUMEN_F32, 1, 1, h, w);
    lumen_image dst = lumen_image_nchw(buf + w, LUMEN_F32, 1, 1, h, w);
    lumen_image want = lumen_image_nchw(out, LUMEN_F32, 1, 1, h, w);
    run_default(&src, &want, 4.0, LUMEN_BORDER_REFLECT);
    run_default(&src, &dst, 4.0, LUMEN_BORDER_REFLECT);
    if (ts_compare_exact(&dst, &want, msg, sizeof msg)) fail_msg("overlapping: %s", msg);
    free(buf), free(out);
}

/*
 * The AVX-512 loops run every lane's recursion and FIR in the AVX2 loops' order: the same
 * bits, on widths ending in every kind of tail, both axes recursive, both FIR, and mixed,
 * planar and interleaved. Skipped where the CPU lacks AVX-512.
 */
static void test_same_bits_avx2_avx512(void **state)
{
    (void)state;
    static const double sigmas[][2] = {{3.0, 5.0}, {1.2, 0.8}, {1.5, 7.0}};
    static const int64_t widths[] = {1, 15, 17, 33, 64, 97};
    lumen_context *c2 = ts_context(TS_AVX2, 2), *c5 = ts_context(TS_AVX512, 2);
    for (int i = 0; c2 && c5 && i < TS_COUNT(sigmas); i++)
        for (int wi = 0; wi < TS_COUNT(widths); wi++)
            for (int l = 0; l < 2; l++) {
                const ts_layout lay = l ? TS_INTERLEAVED : TS_PLANAR;
                ts_image src, a, b;
                ts_image_alloc(&src, lay, LUMEN_F32, 1, 3, 29, widths[wi]);
                ts_image_alloc(&a, lay, LUMEN_F32, 1, 3, 29, widths[wi]);
                ts_image_alloc(&b, lay, LUMEN_F32, 1, 3, 29, widths[wi]);
                ts_image_fill_random(&src, 3 + wi);
                const double sx = sigmas[i][0], sy = sigmas[i][1];
                assert_int_equal(run_fast(c2, &src.v, &a.v, sx, sy, LUMEN_BORDER_REFLECT101, 0),
                                 LUMEN_OK);
                assert_int_equal(run_fast(c5, &src.v, &b.v, sx, sy, LUMEN_BORDER_REFLECT101, 0),
                                 LUMEN_OK);
                char label[96];
                snprintf(label, sizeof label, "avx512 vs avx2: sigma %g x %g, w %lld, %s", sx, sy,
                         (long long)widths[wi], ts_layout_name(lay));
                ts_assert_equal_images(&b.v, &a.v, label);
                ts_image_free(&src), ts_image_free(&a), ts_image_free(&b);
            }
    lumen_context_destroy(c2);
    lumen_context_destroy(c5);
}

static void test_bad_sigma(void **state)
{
    (void)state;
    float px[4] = {0};
    lumen_image im = lumen_image_nchw(px, LUMEN_F32, 1, 1, 2, 2);
    lumen_context *ctx = ts_context(TS_GENERIC, 1);
    const double bad[] = {0.0, -1.0, NAN, INFINITY};
    for (int i = 0; i < TS_COUNT(bad); i++) {
        assert_int_equal(run_fast(ctx, &im, &im, bad[i], 1.0, LUMEN_BORDER_REFLECT, 0),
                         LUMEN_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(lumen_last_error(), "sigma"));
        assert_int_equal(run_fast(ctx, &im, &im, 1.0, bad[i], LUMEN_BORDER_REFLECT, 0),
                         LUMEN_ERR_INVALID_ARGUMENT);
    }
    lumen_context_destroy(ctx);
}

/* An f32 intermediate that cannot be allocated: an error, not a crash (skipped under ASan). */
static void test_out_of_memory(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    print_message("note: out-of-memory test skipped under AddressSanitizer\n");
#else
    uint8_t px = 0;
    /* 2^21 x 2^21 u8 views of one byte with zero strides: never read, T would need 16 TiB. */
    lumen_image im = {&px, LUMEN_U8, 1, 1, 1 << 21, 1 << 21, 0, 0, 0, 0, 0};
    lumen_context *ctx = ts_context(TS_GENERIC, 1);
    assert_int_equal(run_fast(ctx, &im, &im, 3.0, 3.0, LUMEN_BORDER_REFLECT, 0),
                     LUMEN_ERR_OUT_OF_MEMORY);
    lumen_context_destroy(ctx);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_sigma_grid, reset_worst),
        cmocka_unit_test_setup(test_pads_shorter_than_period, reset_worst),
        cmocka_unit_test_setup(test_integer_dtypes, reset_worst),
        cmocka_unit_test_setup(test_layouts, reset_worst),
        cmocka_unit_test_setup(test_tiny_images, reset_worst),
        cmocka_unit_test_setup(test_anisotropic_and_huge, reset_worst),
        cmocka_unit_test(test_nan),
        cmocka_unit_test(test_inf),
        cmocka_unit_test(test_aliasing),
        cmocka_unit_test(test_same_bits_avx2_avx512),
        cmocka_unit_test(test_bad_sigma),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
