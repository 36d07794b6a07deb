/*
 * What docs/large-kernels.md ("Thread count and reproducibility") promises: the same thread
 * count gives bit-identical results run after run; direct and separable results do not depend
 * on the thread count; the FFT path's f32 results may (its tiling follows the thread count) but
 * stay within the FFT bound; its u8 results are at most one level apart near .5 boundaries, and
 * identical for dyadic kernels, whose exact ties it re-sums directly.
 */
#include "test_support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 701, H = 333, K = 41 };

static lumen_context *context_with(int threads)
{
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, threads), LUMEN_OK);
    return ctx;
}

/* Runs filter2d by method with `threads` threads into out (f32 or u8 as dst says). */
static void run(int threads, lumen_method method, const lumen_image *src, const lumen_image *dst,
                const float *k)
{
    lumen_context *ctx = context_with(threads);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = method;
    lumen_run_info info;
    assert_int_equal(lumen_filter2d(ctx, src, dst, k, K, K, &o, &info), LUMEN_OK);
    assert_int_equal(info.method, method);
    lumen_context_destroy(ctx);
}

typedef struct fixture {
    float *src_px, *k, *a, *b;
    uint8_t *src8, *a8, *b8;
} fixture;

static void fixture_make(fixture *f)
{
    f->src_px = malloc(sizeof(float) * W * H);
    f->a = malloc(sizeof(float) * W * H), f->b = malloc(sizeof(float) * W * H);
    f->src8 = malloc(W * H), f->a8 = malloc(W * H), f->b8 = malloc(W * H);
    f->k = malloc(sizeof(float) * K * K);
    assert_true(f->src_px && f->a && f->b && f->src8 && f->a8 && f->b8 && f->k);
    ts_rng r = ts_rng_make(11);
    for (int i = 0; i < W * H; i++) {
        f->src_px[i] = (float)ts_rng_uniform(&r, -1.0, 1.0);
        f->src8[i] = (uint8_t)(ts_rng_u32(&r) & 0xFF);
    }
    ts_random_kernel(f->k, K * K, 5); /* rank > 1: direct or FFT */
}

static void fixture_free(fixture *f)
{
    free(f->src_px), free(f->a), free(f->b), free(f->src8), free(f->a8), free(f->b8), free(f->k);
}

static double max_abs_diff(const float *a, const float *b, int n)
{
    double m = 0.0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void test_same_threads_bit_identical(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f);
    const lumen_image src = lumen_image_nchw(f.src_px, LUMEN_F32, 1, 1, H, W);
    const lumen_image a = lumen_image_nchw(f.a, LUMEN_F32, 1, 1, H, W);
    const lumen_image b = lumen_image_nchw(f.b, LUMEN_F32, 1, 1, H, W);
    for (int m = LUMEN_METHOD_DIRECT; m <= LUMEN_METHOD_FFT; m += 2) {
        run(2, (lumen_method)m, &src, &a, f.k);
        run(2, (lumen_method)m, &src, &b, f.k);
        if (memcmp(f.a, f.b, sizeof(float) * W * H))
            fail_msg("%s: two runs with 2 threads differ", lumen_method_name((lumen_method)m));
    }
    fixture_free(&f);
}

static void test_direct_independent_of_threads(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f);
    const lumen_image src = lumen_image_nchw(f.src_px, LUMEN_F32, 1, 1, H, W);
    const lumen_image a = lumen_image_nchw(f.a, LUMEN_F32, 1, 1, H, W);
    const lumen_image b = lumen_image_nchw(f.b, LUMEN_F32, 1, 1, H, W);
    run(1, LUMEN_METHOD_DIRECT, &src, &a, f.k);
    run(3, LUMEN_METHOD_DIRECT, &src, &b, f.k);
    if (memcmp(f.a, f.b, sizeof(float) * W * H))
        fail_msg("direct: 1 and 3 threads differ by %g", max_abs_diff(f.a, f.b, W * H));
    fixture_free(&f);
}

static void test_fft_across_threads_within_bound(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f);
    const lumen_image src = lumen_image_nchw(f.src_px, LUMEN_F32, 1, 1, H, W);
    const lumen_image a = lumen_image_nchw(f.a, LUMEN_F32, 1, 1, H, W);
    const lumen_image b = lumen_image_nchw(f.b, LUMEN_F32, 1, 1, H, W);
    run(1, LUMEN_METHOD_FFT, &src, &a, f.k);
    run(3, LUMEN_METHOD_FFT, &src, &b, f.k);
    double sum_k = 0.0;
    for (int i = 0; i < K * K; i++) sum_k += fabs(f.k[i]);
    /* Both lie within the FFT bound of the exact sum, so within twice it of each other. */
    const double bound = 2.0 * (TS_F32_REL * sum_k * 1.0 + TS_F32_ABS);
    const double d = max_abs_diff(f.a, f.b, W * H);
    if (d > bound) fail_msg("fft: 1 and 3 threads differ by %g > %g", d, bound);
    /* u8 with a random kernel: like any f32 path against the exact sum, a result within the
     * FFT's error of a .5 boundary may round either way, so at most one level apart. */
    const lumen_image s8 = lumen_image_nchw(f.src8, LUMEN_U8, 1, 1, H, W);
    const lumen_image a8 = lumen_image_nchw(f.a8, LUMEN_U8, 1, 1, H, W);
    const lumen_image b8 = lumen_image_nchw(f.b8, LUMEN_U8, 1, 1, H, W);
    run(1, LUMEN_METHOD_FFT, &s8, &a8, f.k);
    run(3, LUMEN_METHOD_FFT, &s8, &b8, f.k);
    for (int i = 0; i < W * H; i++)
        if (abs(f.a8[i] - f.b8[i]) > 1)
            fail_msg("fft u8: pixel %d is %d with 1 thread, %d with 3", i, f.a8[i], f.b8[i]);
    /* u8 with a dyadic kernel (an 8x8 box of 1/64): ties are exact and re-summed directly, so
     * the results are the correctly rounded ones whatever the tiling. */
    float box[K * K];
    for (int i = 0; i < 64; i++) box[i] = 1.0f / 64.0f;
    lumen_context *ctx;
    int diff = 0;
    for (int t = 1; t <= 3; t += 2) {
        ctx = context_with(t);
        lumen_filter_options o = lumen_filter_options_default();
        o.method = LUMEN_METHOD_FFT;
        assert_int_equal(lumen_filter2d(ctx, &s8, t == 1 ? &a8 : &b8, box, 8, 8, &o, NULL),
                         LUMEN_OK);
        lumen_context_destroy(ctx);
    }
    for (int i = 0; i < W * H; i++) diff += f.a8[i] != f.b8[i];
    if (diff) fail_msg("fft u8, dyadic kernel: %d pixels differ between 1 and 3 threads", diff);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_threads_bit_identical),
        cmocka_unit_test(test_direct_independent_of_threads),
        cmocka_unit_test(test_fft_across_threads_within_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
