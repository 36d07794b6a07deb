/*
 * Bad arguments: every one gets its exact status, a message that names the argument, and
 * leaves dst untouched. Covers the four ops, the Gaussian helpers, border parsing and
 * contexts.
 */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { H = 5, W = 6, N_OPS = 4 };

typedef struct fixture {
    lumen_context *ctx;
    float sbuf[H * W], dbuf[H * W];
    lumen_image src, dst;
} fixture;

static const float k3[9] = {0, 1, 0, 1, 2, 1, 0, 1, 0};
static const float k1d[3] = {0.25f, 0.5f, 0.25f};
static fixture fx;

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    if (lumen_context_create(&fx.ctx) != LUMEN_OK) return -1;
    for (int i = 0; i < H * W; i++)
        fx.sbuf[i] = (float)i;
    memset(fx.dbuf, 0x77, sizeof fx.dbuf);
    fx.src = lumen_image_nchw(fx.sbuf, LUMEN_F32, 1, 1, H, W);
    fx.dst = lumen_image_nchw(fx.dbuf, LUMEN_F32, 1, 1, H, W);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    lumen_context_destroy(fx.ctx);
    return 0;
}

static bool dst_untouched(void)
{
    const unsigned char *p = (const unsigned char *)fx.dbuf;
    for (size_t i = 0; i < sizeof fx.dbuf; i++)
        if (p[i] != 0x77) return false;
    return true;
}

/* Checks status, that the message names arg (and arg2 if given), and dst untouched. */
static void expect_err_(lumen_status got, lumen_status want, const char *arg, const char *arg2,
                        const char *what, int line)
{
    const char *msg = lumen_last_error();
    if (got != want || !msg[0] || !ts_names(msg, arg) || (arg2 && !ts_names(msg, arg2)) ||
        !dst_untouched())
        fail_msg(
            "line %d, %s: status %d (want %d), message '%s' (want one naming '%s'%s%s), dst %s",
            line, what, (int)got, (int)want, msg, arg, arg2 ? " and " : "", arg2 ? arg2 : "",
            dst_untouched() ? "untouched" : "WRITTEN");
}
#define expect_err(got, want, arg, arg2, what) expect_err_(got, want, arg, arg2, what, __LINE__)

static const char *op_names[N_OPS] = {"filter2d", "sep_filter2d", "gaussian_blur", "box_blur"};

/* Op i with valid kernel arguments. */
static lumen_status run_op(int i, lumen_context *ctx, const lumen_image *src,
                           const lumen_image *dst, lumen_border b, float v)
{
    lumen_filter_options o = lumen_filter_options_default();
    o.border = b, o.border_value = v;
    switch (i) {
    case 0: return lumen_filter2d(ctx, src, dst, k3, 3, 3, &o, NULL);
    case 1: return lumen_sep_filter2d(ctx, src, dst, k1d, 3, k1d, 3, &o, NULL);
    case 2: return lumen_gaussian_blur(ctx, src, dst, 3, 3, 0.0, 0.0, b, v, NULL);
    default: return lumen_box_blur(ctx, src, dst, 3, 3, 1, b, v, NULL);
    }
}

static lumen_status run_default(int i, const lumen_image *src, const lumen_image *dst)
{
    return run_op(i, fx.ctx, src, dst, LUMEN_BORDER_REFLECT, 0.0f);
}

/* ---- arguments common to every op ---------------------------------------- */

static void test_null_ctx_and_images(void **state)
{
    (void)state;
    for (int i = 0; i < N_OPS; i++) {
        expect_err(run_op(i, NULL, &fx.src, &fx.dst, LUMEN_BORDER_REFLECT, 0),
                   LUMEN_ERR_INVALID_ARGUMENT, "ctx", NULL, op_names[i]);
        expect_err(run_default(i, NULL, &fx.dst), LUMEN_ERR_INVALID_ARGUMENT, "src", NULL,
                   op_names[i]);
        expect_err(run_default(i, &fx.src, NULL), LUMEN_ERR_INVALID_ARGUMENT, "dst", NULL,
                   op_names[i]);
        lumen_image s = fx.src, d = fx.dst;
        s.data = NULL;
        expect_err(run_default(i, &s, &fx.dst), LUMEN_ERR_INVALID_ARGUMENT, "src", "data",
                   op_names[i]);
        d.data = NULL;
        expect_err(run_default(i, &fx.src, &d), LUMEN_ERR_INVALID_ARGUMENT, "dst", "data",
                   op_names[i]);
    }
}

/* Data not aligned to its elements (f32 one byte into a buffer): reading it is UB in C. */
static void test_misaligned_data(void **state)
{
    (void)state;
    for (int i = 0; i < N_OPS; i++) {
        lumen_image s = fx.src;
        s.data = (char *)fx.sbuf + 1;
        s.w = W - 1;
        lumen_image d = fx.dst;
        d.w = W - 1;
        expect_err(run_default(i, &s, &d), LUMEN_ERR_INVALID_ARGUMENT, "src", "aligned",
                   op_names[i]);
    }
}

/* Sets dimension k (n, c, h, w) of img to v. */
static void set_dim(lumen_image *img, int k, int64_t v)
{
    int64_t *dims[4] = {&img->n, &img->c, &img->h, &img->w};
    *dims[k] = v;
}

static void test_bad_dimensions(void **state)
{
    (void)state;
    static const char *dim_names[4] = {"n", "c", "h", "w"};
    const int64_t bad[] = {0, -1, -1000, ((int64_t)1 << 31) + 1};
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < TS_COUNT(bad); j++) {
                /* Same shapes, so only the size check can refuse them (not the shape match). */
                lumen_image s = fx.src, d = fx.dst;
                set_dim(&s, k, bad[j]);
                set_dim(&d, k, bad[j]);
                expect_err(run_default(i, &s, &d), LUMEN_ERR_INVALID_ARGUMENT, "src", dim_names[k],
                           op_names[i]);
                assert_null(strstr(lumen_last_error(), "shape"));
                expect_err(run_default(i, &fx.src, &d), LUMEN_ERR_INVALID_ARGUMENT, "dst",
                           dim_names[k], op_names[i]);
                assert_null(strstr(lumen_last_error(), "shape"));
            }
}

static void test_shape_mismatch(void **state)
{
    (void)state;
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; k < 4; k++) {
            lumen_image d = fx.dst;
            set_dim(&d, k, k < 2 ? 2 : k == 2 ? H - 1 : W - 2); /* smaller or, for n/c, larger */
            expect_err(run_default(i, &fx.src, &d), LUMEN_ERR_INVALID_ARGUMENT, "dst", "shape",
                       op_names[i]);
        }
}

static void test_bad_dtype(void **state)
{
    (void)state;
    for (int i = 0; i < N_OPS; i++) {
        lumen_image s = fx.src, d = fx.dst;
        s.dtype = (lumen_dtype)7;
        d.dtype = (lumen_dtype)-1;
        expect_err(run_default(i, &s, &fx.dst), LUMEN_ERR_INVALID_ARGUMENT, "src", "dtype", op_names[i]);
        expect_err(run_default(i, &fx.src, &d), LUMEN_ERR_INVALID_ARGUMENT, "dst", "dtype", op_names[i]);
    }
    assert_int_equal(lumen_dtype_size((lumen_dtype)7), 0);
    assert_string_equal(lumen_dtype_name((lumen_dtype)7), "?");
}

static void test_bad_border(void **state)
{
    (void)state;
    const int bad[] = {5, -1, 100};
    for (int i = 0; i < N_OPS; i++) {
        for (int j = 0; j < TS_COUNT(bad); j++)
            expect_err(run_op(i, fx.ctx, &fx.src, &fx.dst, (lumen_border)bad[j], 0),
                       LUMEN_ERR_INVALID_ARGUMENT, "border", NULL, op_names[i]);
        expect_err(run_op(i, fx.ctx, &fx.src, &fx.dst, LUMEN_BORDER_CONSTANT, NAN),
                   LUMEN_ERR_INVALID_ARGUMENT, "border_value", NULL, op_names[i]);
        /* The value is ignored by other borders. */
        float out[H * W];
        lumen_image d = lumen_image_nchw(out, LUMEN_F32, 1, 1, H, W);
        assert_int_equal(run_op(i, fx.ctx, &fx.src, &d, LUMEN_BORDER_WRAP, NAN), LUMEN_OK);
        assert_string_equal(lumen_last_error(), "");
    }
    assert_string_equal(lumen_border_name((lumen_border)9), "?");
}

/* ---- kernels, anchors, methods --------------------------------------------- */

static void test_kernel_sizes(void **state)
{
    (void)state;
    const int bad[] = {0, -1, 65537, 1 << 30};
    const lumen_image *s = &fx.src, *d = &fx.dst;
    for (int j = 0; j < TS_COUNT(bad); j++) {
        const int b = bad[j];
        expect_err(lumen_filter2d(fx.ctx, s, d, k3, b, 3, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT,
                   "kw", NULL, "filter2d");
        expect_err(lumen_filter2d(fx.ctx, s, d, k3, 3, b, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT,
                   "kh", NULL, "filter2d");
        expect_err(lumen_sep_filter2d(fx.ctx, s, d, k1d, b, k1d, 3, NULL, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT, "kw", NULL, "sep");
        expect_err(lumen_sep_filter2d(fx.ctx, s, d, k1d, 3, k1d, b, NULL, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT, "kh", NULL, "sep");
        expect_err(lumen_box_blur(fx.ctx, s, d, b, 3, 1, LUMEN_BORDER_REFLECT, 0, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT, "kw", NULL, "box");
        expect_err(lumen_box_blur(fx.ctx, s, d, 3, b, 0, LUMEN_BORDER_REFLECT, 0, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT, "kh", NULL, "box");
    }
    /* 4097 x 4097 taps (each side valid) is refused before any tap is read. */
    expect_err(lumen_filter2d(fx.ctx, s, d, k3, 4097, 4097, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT,
               "kernel", NULL, "filter2d 4097x4097");
}

static void test_kernel_values(void **state)
{
    (void)state;
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const lumen_image *s = &fx.src, *d = &fx.dst;
    expect_err(lumen_filter2d(fx.ctx, s, d, NULL, 3, 3, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT,
               "kernel", NULL, "NULL kernel");
    expect_err(lumen_sep_filter2d(fx.ctx, s, d, NULL, 3, k1d, 3, NULL, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "kx", NULL, "NULL kx");
    expect_err(lumen_sep_filter2d(fx.ctx, s, d, k1d, 3, NULL, 3, NULL, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "ky", NULL, "NULL ky");
    for (int j = 0; j < TS_COUNT(bad); j++)
        for (int at = 0; at < 3; at++) {
            float k[9], k1[3];
            memcpy(k, k3, sizeof k), memcpy(k1, k1d, sizeof k1);
            k[at * 4] = bad[j], k1[at] = bad[j];
            expect_err(lumen_filter2d(fx.ctx, s, d, k, 3, 3, NULL, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "kernel", NULL, "bad tap");
            expect_err(lumen_sep_filter2d(fx.ctx, s, d, k1, 3, k1d, 3, NULL, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "kx", NULL, "bad kx");
            expect_err(lumen_sep_filter2d(fx.ctx, s, d, k1d, 3, k1, 3, NULL, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "ky", NULL, "bad ky");
        }
}

static void test_anchors(void **state)
{
    (void)state;
    const int bad[] = {3, -2, 4, 1000, -1000};
    for (int j = 0; j < TS_COUNT(bad); j++)
        for (int conv = 0; conv < 2; conv++) {
            lumen_filter_options ox = lumen_filter_options_default(), oy = ox;
            ox.anchor_x = bad[j], oy.anchor_y = bad[j], ox.convolve = oy.convolve = conv;
            expect_err(lumen_filter2d(fx.ctx, &fx.src, &fx.dst, k3, 3, 3, &ox, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "anchor_x", NULL, "filter2d");
            expect_err(lumen_filter2d(fx.ctx, &fx.src, &fx.dst, k3, 3, 3, &oy, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "anchor_y", NULL, "filter2d");
            expect_err(lumen_sep_filter2d(fx.ctx, &fx.src, &fx.dst, k1d, 3, k1d, 3, &ox, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "anchor_x", NULL, "sep");
            expect_err(lumen_sep_filter2d(fx.ctx, &fx.src, &fx.dst, k1d, 3, k1d, 3, &oy, NULL),
                       LUMEN_ERR_INVALID_ARGUMENT, "anchor_y", NULL, "sep");
        }
}

static void test_methods(void **state)
{
    (void)state;
    const int bad[] = {-1, 42, 1000};
    for (int j = 0; j < TS_COUNT(bad); j++) {
        lumen_filter_options o = lumen_filter_options_default();
        o.method = (lumen_method)bad[j];
        expect_err(lumen_filter2d(fx.ctx, &fx.src, &fx.dst, k3, 3, 3, &o, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT, "method", NULL, "filter2d");
    }
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_SEPARABLE; /* k3 has rank 2 */
    expect_err(lumen_filter2d(fx.ctx, &fx.src, &fx.dst, k3, 3, 3, &o, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "method", NULL, "separable");
    assert_string_equal(lumen_method_name((lumen_method)9), "?");
}

/* ---- Gaussian and box specifics --------------------------------------------- */

static void test_gaussian_args(void **state)
{
    (void)state;
    const lumen_image *s = &fx.src, *d = &fx.dst;
    const lumen_border r = LUMEN_BORDER_REFLECT;
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 3, 3, NAN, 1.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "sigma_x", NULL, "sigma_x NaN");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 0, 0, NAN, 0.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "sigma_x", NULL, "sigma_x NaN");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 3, 3, 1.0, NAN, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "sigma_y", NULL, "sigma_y NaN");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 3, 3, -INFINITY, 1.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "sigma_x", NULL, "sigma_x -Inf");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 4, 3, 1.0, 1.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "ksize_x", NULL, "even ksize_x");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 3, 2, 1.0, 1.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "ksize_y", NULL, "even ksize_y");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, 0, 3, 0.0, 1.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "ksize_x", NULL, "ksize and sigma 0");
    expect_err(lumen_gaussian_blur(fx.ctx, s, d, -5, -5, -1.0, -1.0, r, 0, NULL),
               LUMEN_ERR_INVALID_ARGUMENT, "ksize_x", NULL, "both negative");

    float out[8];
    expect_err(lumen_gaussian_kernel(3, NAN, out), LUMEN_ERR_INVALID_ARGUMENT, "sigma", NULL,
               "kernel sigma NaN");
    expect_err(lumen_gaussian_kernel(0, 1.0, out), LUMEN_ERR_INVALID_ARGUMENT, "ksize", NULL,
               "kernel n 0");
    expect_err(lumen_gaussian_kernel(-3, 1.0, out), LUMEN_ERR_INVALID_ARGUMENT, "ksize", NULL,
               "kernel n -3");
    expect_err(lumen_gaussian_kernel(65537, 1.0, out), LUMEN_ERR_INVALID_ARGUMENT, "ksize", NULL,
               "kernel n 65537");
    expect_err(lumen_gaussian_kernel(3, 1.0, NULL), LUMEN_ERR_INVALID_ARGUMENT, "out", NULL,
               "kernel out NULL");
}

/* ---- border names, contexts, messages ---------------------------------------- */

static void test_border_parse(void **state)
{
    (void)state;
    const char *bad[] = {"reflect_101", "", "REFLECT", "border_reflect", "wrap "};
    lumen_border b = LUMEN_BORDER_WRAP;
    for (int j = 0; j < TS_COUNT(bad); j++) {
        expect_err(lumen_border_parse(bad[j], &b), LUMEN_ERR_INVALID_ARGUMENT, "border", NULL,
                   bad[j]);
        assert_int_equal(b, LUMEN_BORDER_WRAP);
    }
    expect_err(lumen_border_parse(NULL, &b), LUMEN_ERR_INVALID_ARGUMENT, "border", NULL,
               "NULL name");
    expect_err(lumen_border_parse("wrap", NULL), LUMEN_ERR_INVALID_ARGUMENT, "out", NULL,
               "NULL out");
    static const char *good[] = {"reflect", "constant", "replicate", "reflect101", "wrap"};
    for (int j = 0; j < 5; j++) {
        assert_int_equal(lumen_border_parse(good[j], &b), LUMEN_OK);
        assert_int_equal(b, (lumen_border)j);
        assert_string_equal(lumen_border_name(b), good[j]);
    }
}

static void test_context_args(void **state)
{
    (void)state;
    expect_err(lumen_context_set_threads(fx.ctx, -1), LUMEN_ERR_INVALID_ARGUMENT, "threads", NULL,
               "threads -1");
    expect_err(lumen_context_set_threads(fx.ctx, 4097), LUMEN_ERR_INVALID_ARGUMENT, "threads", NULL,
               "threads 4097");
    expect_err(lumen_context_set_threads(NULL, 1), LUMEN_ERR_INVALID_ARGUMENT, "ctx", NULL,
               "threads NULL ctx");
    expect_err(lumen_context_set_simd(NULL, 1), LUMEN_ERR_INVALID_ARGUMENT, "ctx", NULL,
               "simd NULL ctx");
    expect_err(lumen_context_create(NULL), LUMEN_ERR_INVALID_ARGUMENT, "out", NULL, "create NULL");
    assert_int_equal(lumen_context_threads(NULL), 0);
    assert_string_equal(lumen_cpu_features(NULL), "scalar");
}

/* A successful call clears the previous message; statuses have distinct names. */
static void test_messages(void **state)
{
    (void)state;
    float out[H * W];
    lumen_image d = lumen_image_nchw(out, LUMEN_F32, 1, 1, H, W);
    for (int i = 0; i < N_OPS; i++) {
        expect_err(run_default(i, NULL, &fx.dst), LUMEN_ERR_INVALID_ARGUMENT, "src", NULL,
                   op_names[i]);
        assert_int_equal(run_default(i, &fx.src, &d), LUMEN_OK);
        assert_string_equal(lumen_last_error(), "");
    }
    for (int a = 0; a <= LUMEN_ERR_INTERNAL; a++) {
        assert_true(strlen(lumen_status_string((lumen_status)a)) > 0);
        for (int b = 0; b < a; b++)
            assert_string_not_equal(lumen_status_string((lumen_status)a),
                                    lumen_status_string((lumen_status)b));
    }
    assert_string_equal(lumen_version(), "0.1.0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_null_ctx_and_images, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misaligned_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_dimensions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_border, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gaussian_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_border_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_messages, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
