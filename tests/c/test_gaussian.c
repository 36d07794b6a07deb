/*
 * Gaussian: lumen_gaussian_kernel and lumen_gaussian_ksize against OpenCV's rules
 * (getGaussianKernel, createGaussianKernels), lumen_gaussian_blur's size/sigma derivation,
 * and fast engines vs reference vs oracle over borders x dtypes x layouts.
 */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

/* ---- lumen_gaussian_kernel ---------------------------------------------- */

/* OpenCV 4's small_gaussian_tab for odd n <= 9 and sigma <= 0 (9 taps in 1/256ths). */
static void test_kernel_tables(void **state)
{
    (void)state;
    static const float tab[5][9] = {
        {1.0f},
        {0.25f, 0.5f, 0.25f},
        {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f},
        {0.03125f, 0.109375f, 0.21875f, 0.28125f, 0.21875f, 0.109375f, 0.03125f},
        {0.015625f, 0.05078125f, 0.1171875f, 0.19921875f, 0.234375f, 0.19921875f, 0.1171875f,
         0.05078125f, 0.015625f},
    };
    const double sigmas[] = {0.0, -1.0, -0.0};
    for (int s = 0; s < TS_COUNT(sigmas); s++)
        for (int t = 0; t < 5; t++) {
            float out[9];
            const int n = 2 * t + 1;
            assert_int_equal(lumen_gaussian_kernel(n, sigmas[s], out), LUMEN_OK);
            for (int i = 0; i < n; i++)
                assert_float_equal(out[i], tab[t][i], 0.0f);
        }
}

/* G_i = exp(-(i-(n-1)/2)^2 / (2 sigma^2)) normalised, in double (the definition). */
static void formula(int n, double sigma, double *g)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) / 2.0;
        g[i] = exp(-x * x / (2 * sigma * sigma));
        sum += g[i];
    }
    for (int i = 0; i < n; i++)
        g[i] /= sum;
}

/* out equals the formula to float precision, sums to 1 and is exactly symmetric. */
static void check_formula(int n, double sigma, double want_sigma)
{
    float out[64];
    double g[64], sum = 0.0;
    assert_int_equal(lumen_gaussian_kernel(n, sigma, out), LUMEN_OK);
    formula(n, want_sigma, g);
    for (int i = 0; i < n; i++) {
        if (fabs(out[i] - g[i]) > 2.5e-7 * g[i] + 1e-12)
            fail_msg("gaussian_kernel(%d, %g)[%d] = %.9g, want %.9g", n, sigma, i, out[i], g[i]);
        if (out[i] != out[n - 1 - i])
            fail_msg("gaussian_kernel(%d, %g) is not symmetric at %d", n, sigma, i);
        sum += out[i];
    }
    if (fabs(sum - 1.0) > 1e-6) fail_msg("gaussian_kernel(%d, %g) sums to %.9g", n, sigma, sum);
}

static void test_kernel_formula(void **state)
{
    (void)state;
    const int sizes[] = {1, 2, 3, 4, 5, 7, 9, 11, 31, 61};
    const double sigmas[] = {0.3, 0.5, 1.0, 1.5, 3.0, 10.0, 100.0};
    for (int i = 0; i < TS_COUNT(sizes); i++)
        for (int j = 0; j < TS_COUNT(sigmas); j++)
            check_formula(sizes[i], sigmas[j], sigmas[j]);
    /* sigma <= 0 outside the tables: sigma = 0.3*((n-1)/2 - 1) + 0.8. */
    const int derived[] = {2, 4, 6, 8, 10, 11, 25};
    for (int i = 0; i < TS_COUNT(derived); i++) {
        const int n = derived[i];
        check_formula(n, 0.0, 0.3 * ((n - 1) * 0.5 - 1) + 0.8);
        check_formula(n, -2.0, 0.3 * ((n - 1) * 0.5 - 1) + 0.8);
    }
}

/* By hand: n = 3, sigma = 1: e = exp(-1/2); [e, 1, e] / (1 + 2e). */
static void test_kernel_by_hand(void **state)
{
    (void)state;
    float out[3];
    assert_int_equal(lumen_gaussian_kernel(3, 1.0, out), LUMEN_OK);
    assert_float_equal(out[0], 0.274068619f, 1e-7f);
    assert_float_equal(out[1], 0.451862762f, 1e-7f);
    assert_float_equal(out[2], 0.274068619f, 1e-7f);
    /* n = 5 with sigma 1.1 (> 0) uses the formula, not the table. */
    float five[5];
    assert_int_equal(lumen_gaussian_kernel(5, 1.1, five), LUMEN_OK);
    assert_true(fabsf(five[0] - 0.0625f) > 1e-3f);
}

/* ---- lumen_gaussian_ksize ----------------------------------------------- */

/* round(sigma*4*2+1)|1 (f32, u16), round(sigma*3*2+1)|1 (u8). */
static void test_ksize_rule(void **state)
{
    (void)state;
    static const struct {
        double sigma;
        int f32, u16, u8;
    } rows[] = {
        {1.0, 9, 9, 7},     {1.5, 13, 13, 11}, {0.5, 5, 5, 5},        {2.0, 17, 17, 13},
        {0.3, 3, 3, 3},     {0.8, 7, 7, 7},    {3.3, 27, 27, 21},     {0.25, 3, 3, 3},
        {10.0, 81, 81, 61}, {0.1, 3, 3, 3},    {37.4, 301, 301, 225},
    };
    for (int i = 0; i < TS_COUNT(rows); i++) {
        const double s = rows[i].sigma;
        if (lumen_gaussian_ksize(s, LUMEN_F32) != rows[i].f32 ||
            lumen_gaussian_ksize(s, LUMEN_U16) != rows[i].u16 ||
            lumen_gaussian_ksize(s, LUMEN_U8) != rows[i].u8)
            fail_msg("ksize(%g): f32 %d u16 %d u8 %d, want %d %d %d", s,
                     lumen_gaussian_ksize(s, LUMEN_F32), lumen_gaussian_ksize(s, LUMEN_U16),
                     lumen_gaussian_ksize(s, LUMEN_U8), rows[i].f32, rows[i].u16, rows[i].u8);
    }
    /* Absurd sigmas give a size the blur refuses (> 65536). */
    assert_true(lumen_gaussian_ksize(1e9, LUMEN_F32) > 65536);
    assert_true(lumen_gaussian_ksize(NAN, LUMEN_U8) > 65536);
}

/* ---- lumen_gaussian_blur: derivation rules ------------------------------- */

/* blur(ksize_x, ksize_y, sx, sy) must equal sep_filter2d(g(kx, gx), g(ky, gy)) exactly. */
static void check_blur_is_sep(int ksx, int ksy, double sx, double sy, int kx, double gx, int ky,
                              double gy, lumen_dtype t)
{
    float fx[64], fy[64];
    assert_int_equal(lumen_gaussian_kernel(kx, gx, fx), LUMEN_OK);
    assert_int_equal(lumen_gaussian_kernel(ky, gy, fy), LUMEN_OK);
    ts_op blur = ts_with_border(ts_op_gaussian(ksx, ksy, sx, sy), LUMEN_BORDER_REFLECT101, 0.0f);
    ts_op sep = ts_with_border(ts_op_sep(fx, kx, fy, ky), LUMEN_BORDER_REFLECT101, 0.0f);
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 2);
        if (!ctx) continue;
        ts_image src, a, b;
        ts_image_alloc(&src, TS_PLANAR, t, 1, 1, 23, 37);
        ts_image_alloc(&a, TS_PLANAR, t, 1, 1, 23, 37);
        ts_image_alloc(&b, TS_PLANAR, t, 1, 1, 23, 37);
        ts_image_fill_random(&src, 90);
        lumen_run_info info;
        assert_int_equal(ts_op_run(ctx, &blur, &src.v, &a.v, &info), LUMEN_OK);
        assert_int_equal(info.method, LUMEN_METHOD_SEPARABLE);
        assert_int_equal(ts_op_run(ctx, &sep, &src.v, &b.v, NULL), LUMEN_OK);
        char label[160];
        snprintf(label, sizeof label, "blur(%d, %d, %g, %g) %s vs sep(g(%d, %g), g(%d, %g)) [%s]",
                 ksx, ksy, sx, sy, lumen_dtype_name(t), kx, gx, ky, gy,
                 ts_engine_name((ts_engine)e));
        ts_assert_equal_images(&a.v, &b.v, label);
        ts_image_free(&src), ts_image_free(&a), ts_image_free(&b);
        lumen_context_destroy(ctx);
    }
}

static void test_blur_derived_sizes(void **state)
{
    (void)state;
    /* ksize 0: from sigma, *4 for f32/u16, *3 for u8. */
    check_blur_is_sep(0, 0, 1.0, 0.0, 9, 1.0, 9, 1.0, LUMEN_F32);
    check_blur_is_sep(0, 0, 1.0, 0.0, 9, 1.0, 9, 1.0, LUMEN_U16);
    check_blur_is_sep(0, 0, 1.0, 0.0, 7, 1.0, 7, 1.0, LUMEN_U8);
    check_blur_is_sep(0, 0, 1.5, 0.0, 11, 1.5, 11, 1.5, LUMEN_U8);
    check_blur_is_sep(0, 0, 1.5, -1.0, 13, 1.5, 13, 1.5, LUMEN_F32);
    /* Explicit sizes give the same as derived ones. */
    check_blur_is_sep(13, 13, 1.5, 1.5, 13, 1.5, 13, 1.5, LUMEN_F32);
}

static void test_blur_sigma_rules(void **state)
{
    (void)state;
    /* Separate sigma_y. */
    check_blur_is_sep(5, 9, 1.0, 2.0, 5, 1.0, 9, 2.0, LUMEN_F32);
    check_blur_is_sep(0, 0, 1.0, 2.0, 7, 1.0, 13, 2.0, LUMEN_U8);
    /* sigma_y <= 0 means sigma_x (also for the size derived for y). */
    check_blur_is_sep(0, 5, 1.2, 0.0, 11, 1.2, 5, 1.2, LUMEN_F32);
    check_blur_is_sep(3, 0, 0.9, -3.0, 3, 0.9, 9, 0.9, LUMEN_F32);
    /* sigma <= 0 with a size: OpenCV's tables / derived sigma. */
    check_blur_is_sep(5, 3, 0.0, 0.0, 5, 0.0, 3, 0.0, LUMEN_U8);
    check_blur_is_sep(9, 1, 0.0, 0.0, 9, 0.0, 1, 0.0, LUMEN_U16);
    /* sigma_x 0 with a size; sigma_y given derives its own size. */
    check_blur_is_sep(5, 0, 0.0, 1.5, 5, 0.0, 13, 1.5, LUMEN_F32);
}

static void expect_blur_error(int kx, int ky, double sx, double sy, const char *name)
{
    lumen_context *ctx = ts_context(TS_AVX2, 1);
    if (!ctx) ctx = ts_context(TS_GENERIC, 1);
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, 4, 5);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, 4, 5);
    ts_image_fill_random(&src, 1);
    ts_image_fill_bytes(&dst, 0x42);
    const lumen_status s =
        lumen_gaussian_blur(ctx, &src.v, &dst.v, kx, ky, sx, sy, LUMEN_BORDER_REFLECT, 0.0f, NULL);
    if (s != LUMEN_ERR_INVALID_ARGUMENT || !strstr(lumen_last_error(), name))
        fail_msg("blur(%d, %d, %g, %g): status %d, message '%s'; want invalid argument naming %s",
                 kx, ky, sx, sy, (int)s, lumen_last_error(), name);
    for (size_t i = 0; i < 20 * sizeof(float); i++)
        assert_int_equal(((unsigned char *)dst.v.data)[i], 0x42);
    ts_image_free(&src), ts_image_free(&dst);
    lumen_context_destroy(ctx);
}

static void test_blur_errors(void **state)
{
    (void)state;
    expect_blur_error(4, 3, 1.0, 1.0, "ksize_x");
    expect_blur_error(3, 6, 1.0, 1.0, "ksize_y");
    expect_blur_error(0, 0, 0.0, 0.0, "ksize_x");
    expect_blur_error(-3, 3, -1.0, 1.0, "ksize_x");
    expect_blur_error(3, -1, 0.0, 0.0, "ksize_y");
    expect_blur_error(0, 0, 1e6, 0.0, "ksize_x"); /* derived size > 65536 */
    expect_blur_error(3, 3, NAN, 1.0, "sigma_x");
    expect_blur_error(3, 3, INFINITY, 1.0, "sigma_x");
    expect_blur_error(3, 3, 1.0, NAN, "sigma_y");
    expect_blur_error(3, 3, 1.0, INFINITY, "sigma_y");
    expect_blur_error(65537, 3, 1.0, 1.0, "ksize_x");
}

/* ---- fast vs reference --------------------------------------------------- */

static const lumen_dtype dtype_pairs[][2] = {
    {LUMEN_U8, LUMEN_U8},  {LUMEN_U16, LUMEN_U16}, {LUMEN_F32, LUMEN_F32},
    {LUMEN_U8, LUMEN_F32}, {LUMEN_U16, LUMEN_U8},  {LUMEN_F32, LUMEN_U8},
};

static const struct {
    int kx, ky;
    double sx, sy;
} params[] = {{0, 0, 1.0, 0.0}, {3, 3, 0.0, 0.0},  {5, 9, 1.0, 2.0}, {0, 0, 2.5, 0.7},
              {7, 1, 0.0, 0.0}, {1, 15, 0.0, 3.0}, {0, 0, 4.0, 0.0}};

static void test_matrix(void **state)
{
    const lumen_border b = *(const lumen_border *)*state;
    int idx = 0;
    for (int d = 0; d < TS_COUNT(dtype_pairs); d++)
        for (int l = 0; l < TS_LAYOUT_COUNT; l++, idx++) {
            const int p = (l + 2 * d + b) % TS_COUNT(params);
            ts_op op = ts_op_gaussian(params[p].kx, params[p].ky, params[p].sx, params[p].sy);
            op = ts_with_border(op, b, dtype_pairs[d][0] == LUMEN_F32 ? -20.0f : 77.0f);
            ts_case cs =
                ts_case_make((ts_layout)l, dtype_pairs[d][0], dtype_pairs[d][1], idx % 2 ? 17 : 33,
                             idx % 2 ? 31 : 40, 1 + idx % 3, 19 * idx + b);
            ts_check(&op, &cs);
        }
}

/* 700 x 9 with a 301-row Gaussian (256-column strips) and a small one; threads 1..3. */
static void test_wide_image(void **state)
{
    (void)state;
    for (int bi = 0; bi < TS_COUNT(borders); bi++)
        for (int threads = 1; threads <= 3; threads++) {
            const int big = (bi + threads) % 2;
            ts_op op = big ? ts_op_gaussian(5, 301, 1.0, 50.0) : ts_op_gaussian(0, 0, 1.3, 0.0);
            op = ts_with_border(op, borders[bi], 100.0f);
            const lumen_dtype t = threads == 2 ? LUMEN_F32 : LUMEN_U8;
            ts_case cs = ts_case_make(threads == 3 ? TS_FLIPPED : TS_PLANAR, t, t, 9, 700, threads,
                                      23 * bi + threads);
            cs.c = 1;
            cs.no_oracle = big && threads != 1;
            ts_check(&op, &cs);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_tables),
        cmocka_unit_test(test_kernel_formula),
        cmocka_unit_test(test_kernel_by_hand),
        cmocka_unit_test(test_ksize_rule),
        cmocka_unit_test(test_blur_derived_sizes),
        cmocka_unit_test(test_blur_sigma_rules),
        cmocka_unit_test(test_blur_errors),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[0]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[1]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[2]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[3]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[4]),
        cmocka_unit_test(test_wide_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
