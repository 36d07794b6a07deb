/*
 * lumen_box_blur: fast engines vs reference vs oracle over borders x dtypes x layouts x sizes
 * (odd, even, 1) x normalize; integer exactness (sums of ones, then the scale); box ==
 * filter2d of ones.
 */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

static const lumen_dtype dtype_pairs[][2] = {
    {LUMEN_U8, LUMEN_U8},  {LUMEN_U16, LUMEN_U16}, {LUMEN_F32, LUMEN_F32},
    {LUMEN_U8, LUMEN_F32}, {LUMEN_U8, LUMEN_U16},  {LUMEN_F32, LUMEN_U8},
};

static const int ksizes[][2] = {{3, 3}, {2, 2}, {1, 1}, {4, 3}, {5, 1}, {1, 6}, {15, 15}, {2, 9}};

static void test_matrix(void **state)
{
    const lumen_border b = *(const lumen_border *)*state;
    int idx = 0;
    for (int d = 0; d < TS_COUNT(dtype_pairs); d++)
        for (int l = 0; l < TS_LAYOUT_COUNT; l++, idx++) {
            const int ks = (l + 3 * d + b) % TS_COUNT(ksizes), kw = ksizes[ks][0],
                      kh = ksizes[ks][1];
            ts_op op = ts_with_border(ts_op_box(kw, kh, idx % 3 != 2), b,
                                      dtype_pairs[d][0] == LUMEN_F32 ? 300.0f : 17.0f);
            ts_case cs =
                ts_case_make((ts_layout)l, dtype_pairs[d][0], dtype_pairs[d][1], idx % 2 ? 17 : 33,
                             idx % 2 ? 31 : 40, 1 + idx % 3, 29 * idx + b);
            ts_check(&op, &cs);
        }
}

/* 700 x 9 with a 3x301 box (strips, kernel >> image) and a 4x4 one; threads 1..3. */
static void test_wide_image(void **state)
{
    (void)state;
    for (int bi = 0; bi < TS_COUNT(borders); bi++)
        for (int threads = 1; threads <= 3; threads++) {
            const int big = (bi + threads) % 2;
            ts_op op = ts_with_border(big ? ts_op_box(3, 301, 1) : ts_op_box(4, 4, threads != 2),
                                      borders[bi], 250.0f);
            const lumen_dtype t = threads == 2 ? LUMEN_U16 : LUMEN_U8;
            ts_case cs = ts_case_make(threads == 3 ? TS_STRIDED : TS_PLANAR, t, big ? t : LUMEN_F32,
                                      9, 700, threads, 31 * bi + threads);
            cs.c = 1;
            cs.no_oracle = big && threads != 1;
            ts_check(&op, &cs);
        }
}

/* ---- integer exactness ---------------------------------------------------- */

/* Exact window sum of integer data with the oracle's border rule. */
static int64_t window_sum(const lumen_image *s, int kw, int kh, lumen_border b, int v, int64_t y,
                          int64_t x)
{
    int64_t sum = 0;
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++) {
            const int64_t yy = ts_border_interp(y + i - kh / 2, s->h, b);
            const int64_t xx = ts_border_interp(x + j - kw / 2, s->w, b);
            sum += yy < 0 || xx < 0 ? v : (int64_t)ts_get(s, 0, 0, yy, xx);
        }
    return sum;
}

/* sum / area rounded to nearest, ties to even, in integers. */
static int64_t round_div(int64_t sum, int64_t area)
{
    int64_t q = sum / area, r2 = 2 * (sum % area);
    return r2 > area || (r2 == area && q % 2) ? q + 1 : q;
}

/* One engine, one size: normalised box on integers equals the integer oracle. Ties (possible
 * for even areas) may go either way unless the area is a power of two. */
static void check_exact(ts_engine e, lumen_dtype t, int kw, int kh, lumen_border b, int threads)
{
    lumen_context *ctx = ts_context(e, threads);
    if (!ctx) return;
    const int64_t area = (int64_t)kw * kh, maxv = t == LUMEN_U8 ? 255 : 65535;
    const int v = t == LUMEN_U8 ? 250 : 60000;
    ts_image src, dst, sums;
    ts_image_alloc(&src, TS_PLANAR, t, 1, 1, 13, 45);
    ts_image_alloc(&dst, TS_PLANAR, t, 1, 1, 13, 45);
    ts_image_alloc(&sums, TS_PLANAR, LUMEN_F32, 1, 1, 13, 45);
    ts_image_fill_random(&src, (uint64_t)(kw * 100 + kh));
    assert_int_equal(lumen_box_blur(ctx, &src.v, &dst.v, kw, kh, 1, b, (float)v, NULL), LUMEN_OK);
    assert_int_equal(lumen_box_blur(ctx, &src.v, &sums.v, kw, kh, 0, b, (float)v, NULL), LUMEN_OK);
    for (int64_t y = 0; y < 13; y++)
        for (int64_t x = 0; x < 45; x++) {
            const int64_t sum = window_sum(&src.v, kw, kh, b, v, y, x), want = round_div(sum, area);
            const double got = ts_get(&dst.v, 0, 0, y, x), got_sum = ts_get(&sums.v, 0, 0, y, x);
            const bool tie = 2 * (sum % area) == area && (area & (area - 1));
            if ((double)sum != got_sum || !(got == want || (tie && fabs(got - want) == 1)) ||
                got > maxv)
                fail_msg("box %dx%d %s %s [%s, threads %d] at (%lld, %lld): sum %g (want %lld), "
                         "mean %g (want %lld)",
                         kw, kh, lumen_dtype_name(t), lumen_border_name(b), ts_engine_name(e),
                         threads, (long long)y, (long long)x, got_sum, (long long)sum, got,
                         (long long)want);
        }
    ts_image_free(&src), ts_image_free(&dst), ts_image_free(&sums);
    lumen_context_destroy(ctx);
}

static void test_integer_exact(void **state)
{
    (void)state;
    static const int sizes[][2] = {{3, 3}, {5, 5}, {3, 5}, {4, 4},  {2, 3},
                                   {2, 2}, {7, 1}, {1, 1}, {31, 15}};
    int idx = 0;
    for (int s = 0; s < TS_COUNT(sizes); s++)
        for (int b = 0; b < 5; b++, idx++)
            for (int e = 0; e < TS_ENGINE_COUNT; e++) {
                check_exact((ts_engine)e, LUMEN_U8, sizes[s][0], sizes[s][1], (lumen_border)b,
                            1 + idx % 3);
                if (65535 * sizes[s][0] * sizes[s][1] < (1 << 24)) /* sums exact in f32 */
                    check_exact((ts_engine)e, LUMEN_U16, sizes[s][0], sizes[s][1], (lumen_border)b,
                                1 + idx % 2);
            }
}

/* The fast engines give bit-identical integer results to the reference (sums are exact and the
 * scale is applied once, so there is no rounding difference to forgive). */
static void test_integer_bit_identical(void **state)
{
    (void)state;
    for (int b = 0; b < 5; b++)
        for (int kw = 1; kw <= 6; kw++) {
            ts_image src, ref, fast;
            const lumen_dtype t = kw % 2 ? LUMEN_U8 : LUMEN_U16;
            ts_image_alloc(&src, TS_INTERLEAVED, t, 1, 3, 11, 70);
            ts_image_alloc(&ref, TS_PLANAR, t, 1, 3, 11, 70);
            ts_image_alloc(&fast, TS_FLIPPED, t, 1, 3, 11, 70);
            ts_image_fill_random(&src, 60 + kw);
            lumen_context *rc = ts_context(TS_REF, 1);
            assert_int_equal(lumen_box_blur(rc, &src.v, &ref.v, kw, 7 - kw, 1, b, 9.0f, NULL),
                             LUMEN_OK);
            for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) {
                lumen_context *ctx = ts_context((ts_engine)e, 2);
                if (!ctx) continue;
                assert_int_equal(lumen_box_blur(ctx, &src.v, &fast.v, kw, 7 - kw, 1, b, 9.0f, NULL),
                                 LUMEN_OK);
                char label[96];
                snprintf(label, sizeof label, "box %dx%d %s %s [%s]", kw, 7 - kw,
                         lumen_dtype_name(t), lumen_border_name((lumen_border)b),
                         ts_engine_name((ts_engine)e));
                ts_assert_equal_images(&fast.v, &ref.v, label);
                lumen_context_destroy(ctx);
            }
            lumen_context_destroy(rc);
            ts_image_free(&src), ts_image_free(&ref), ts_image_free(&fast);
        }
}

/* Plain sums saturate in u8; a u8 -> u8 3x3 box of 200s is 255, its mean 200. */
static void test_unnormalised_saturates(void **state)
{
    (void)state;
    double src[12], sums[12], means[12];
    for (int i = 0; i < 12; i++)
        src[i] = 200, sums[i] = 1800, means[i] = 200;
    ts_op op = ts_op_box(3, 3, 0);
    ts_expect(&op, LUMEN_U8, 3, 4, src, sums, 0.0, "box 3x3 sums of 200 into f32");
    op.normalize = 1;
    ts_expect(&op, LUMEN_U8, 3, 4, src, means, 0.0, "box 3x3 mean of 200");
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 1);
        if (!ctx) continue;
        uint8_t s[12], d[12];
        memset(s, 200, sizeof s);
        lumen_image si = lumen_image_nchw(s, LUMEN_U8, 1, 1, 3, 4),
                    di = lumen_image_nchw(d, LUMEN_U8, 1, 1, 3, 4);
        assert_int_equal(lumen_box_blur(ctx, &si, &di, 3, 3, 0, LUMEN_BORDER_REFLECT, 0.0f, NULL),
                         LUMEN_OK);
        for (int i = 0; i < 12; i++)
            assert_int_equal(d[i], 255);
        lumen_context_destroy(ctx);
    }
}

/* box == filter2d with a kernel of 1/(kw*kh) (normalised) or of ones, same anchor kw/2, kh/2. */
static void test_equals_filter2d(void **state)
{
    (void)state;
    static const int sizes[][2] = {{2, 2}, {4, 3}, {3, 6}, {5, 5}};
    for (int s = 0; s < 4; s++)
        for (int norm = 0; norm < 2; norm++) {
            const int kw = sizes[s][0], kh = sizes[s][1];
            float k[36];
            for (int i = 0; i < kw * kh; i++)
                k[i] = norm ? 1.0f / (float)(kw * kh) : 1.0f;
            ts_op box = ts_with_border(ts_op_box(kw, kh, norm), (lumen_border)(s + norm), 5.0f);
            ts_op f2d = ts_with_border(ts_op_filter2d(k, kw, kh), (lumen_border)(s + norm), 5.0f);
            f2d.opt.method = LUMEN_METHOD_DIRECT;
            ts_image src, a, b;
            ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, 14, 37);
            ts_image_alloc(&a, TS_PLANAR, LUMEN_F32, 1, 1, 14, 37);
            ts_image_alloc(&b, TS_PLANAR, LUMEN_F32, 1, 1, 14, 37);
            ts_image_fill_random(&src, 70 + s);
            for (int e = 0; e < TS_ENGINE_COUNT; e++) {
                lumen_context *ctx = ts_context((ts_engine)e, 1);
                if (!ctx) continue;
                assert_int_equal(ts_op_run(ctx, &box, &src.v, &a.v, NULL), LUMEN_OK);
                assert_int_equal(ts_op_run(ctx, &f2d, &src.v, &b.v, NULL), LUMEN_OK);
                char msg[1024];
                const double tol = ts_f32_tol(ts_op_ksum(&box, LUMEN_F32), 192.0);
                if (ts_compare(&a.v, &b.v, NULL, tol, msg, sizeof msg))
                    fail_msg("box %dx%d normalize=%d vs filter2d [%s]: %s", kw, kh, norm,
                             ts_engine_name((ts_engine)e), msg);
                lumen_context_destroy(ctx);
            }
            ts_image_free(&src), ts_image_free(&a), ts_image_free(&b);
        }
}

/* By hand: 1x4 row [1 2 3 4], 2x1 box (anchor 1: s(x-1) + s(x)), replicate and constant 10. */
static void test_by_hand(void **state)
{
    (void)state;
    static const double src[4] = {1, 2, 3, 4};
    static const double rep[4] = {2, 3, 5, 7}, con[4] = {11, 3, 5, 7};
    static const double rep_mean[4] = {1, 1.5, 2.5, 3.5};
    ts_op op = ts_with_border(ts_op_box(2, 1, 0), LUMEN_BORDER_REPLICATE, 0.0f);
    ts_expect(&op, LUMEN_U8, 1, 4, src, rep, 0.0, "box 2x1 replicate");
    op.normalize = 1;
    ts_expect(&op, LUMEN_U8, 1, 4, src, rep_mean, 0.0, "box 2x1 mean replicate");
    op = ts_with_border(ts_op_box(2, 1, 0), LUMEN_BORDER_CONSTANT, 10.0f);
    ts_expect(&op, LUMEN_F32, 1, 4, src, con, 0.0, "box 2x1 constant 10");
}

/* Large boxes weigh the FFT (cost_model.c) for float results only: a 401x401 f32 box on
 * 1600x1200 runs whichever the machine's measured rates make cheaper (the FFT, or separable
 * since the AVX-512 kernels: which one is the cost model's call, not the test's) and equals
 * the separable sums within the filters' f32 bound (Sum|k| = 1, data in [0, 1)); a u8 result
 * stays separable (exact sums of ones, OpenCV's rounding). */
static void test_large_box_fft(void **state)
{
    (void)state;
    enum { W = 1600, H = 1200, K = 401 };
    float *src = malloc(sizeof(float) * W * H * 2), *dst = src + W * H;
    float *ones = malloc(sizeof(float) * K);
    unsigned char *u8 = malloc((size_t)W * H * 2);
    assert_non_null(src), assert_non_null(ones), assert_non_null(u8);
    for (int i = 0; i < W * H; i++)
        src[i] = (float)((i % 1000) * 7 % 1000) / 1000.0f, u8[i] = (unsigned char)(i % 251);
    for (int i = 0; i < K; i++)
        ones[i] = 1.0f / K;
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, 2), LUMEN_OK);
    lumen_image s = lumen_image_nchw(src, LUMEN_F32, 1, 1, H, W);
    lumen_image d = lumen_image_nchw(dst, LUMEN_F32, 1, 1, H, W);
    lumen_run_info info = {0};
    assert_int_equal(lumen_box_blur(ctx, &s, &d, K, K, 1, LUMEN_BORDER_REFLECT, 0.0f, &info),
                     LUMEN_OK);
    assert_true(info.method == LUMEN_METHOD_FFT || info.method == LUMEN_METHOD_SEPARABLE);
    float *ref = malloc(sizeof(float) * W * H);
    assert_non_null(ref);
    lumen_image r = lumen_image_nchw(ref, LUMEN_F32, 1, 1, H, W);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_SEPARABLE;
    assert_int_equal(lumen_sep_filter2d(ctx, &s, &r, ones, K, ones, K, &o, NULL), LUMEN_OK);
    for (int i = 0; i < W * H; i++)
        if (fabsf(dst[i] - ref[i]) > TS_F32_REL)
            fail_msg("box %d f32 by auto: at %d got %g, separable %g", K, i, dst[i], ref[i]);
    lumen_image su = lumen_image_nchw(u8, LUMEN_U8, 1, 1, H, W);
    lumen_image du = lumen_image_nchw(u8 + W * H, LUMEN_U8, 1, 1, H, W);
    assert_int_equal(lumen_box_blur(ctx, &su, &du, K, K, 1, LUMEN_BORDER_REFLECT, 0.0f, &info),
                     LUMEN_OK);
    assert_int_equal(info.method, LUMEN_METHOD_SEPARABLE);
    lumen_context_destroy(ctx);
    free(src), free(ones), free(u8), free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[0]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[1]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[2]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[3]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[4]),
        cmocka_unit_test(test_wide_image),
        cmocka_unit_test(test_integer_exact),
        cmocka_unit_test(test_integer_bit_identical),
        cmocka_unit_test(test_unnormalised_saturates),
        cmocka_unit_test(test_equals_filter2d),
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_large_box_fft),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
