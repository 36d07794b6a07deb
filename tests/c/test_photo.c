/*
 * The paths photos take: u8 and u16 images, interleaved RGB and RGBA and planar, wide enough
 * (300 pixels) that the fast engines' in-place runs and fixed-size blocks are used, with the
 * kernels photographers use (sharpen and emboss, whose zero taps the integer paths skip; 5x5
 * and 7x7; Gaussians sigma 1-5 with OpenCV's 8-bit sizes; box 5 and 15), every border, 1 and 2
 * threads: every engine against the reference and the oracle (ts_check), and the AVX2 and
 * AVX-512 sets against each other bit for bit (their sums are the same, lane by lane).
 */
#include "test_support.h"

#include <stdio.h>
#include <string.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT101, LUMEN_BORDER_REFLECT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_WRAP};

typedef struct shape {
    ts_layout layout;
    int64_t c;
} shape;

static const shape shapes[] = {{TS_INTERLEAVED, 3}, {TS_INTERLEAVED, 4}, {TS_PLANAR, 3}};

static const float sharpen[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
static const float emboss[9] = {-2, -1, 0, -1, 1, 1, 0, 1, 2};

/* A 5x5 or 7x7 kernel summing to 1, with a zero every third tap. */
static void sparse_kernel(float *k, int n, uint64_t seed)
{
    ts_random_kernel(k, n * n, seed);
    for (int i = 0; i < n * n; i += 3)
        k[i] = 0.0f;
}

static ts_case photo_case(int s, lumen_dtype t, int threads, uint64_t seed)
{
    ts_case cs = ts_case_make(shapes[s].layout, t, t, 37, 300, threads, seed);
    cs.n = 1;
    cs.c = shapes[s].c;
    return cs;
}

/* op on every shape, u8 and u16, the five borders in turn, 1 and 2 threads. */
static void check_photo(const ts_op *op, uint64_t seed)
{
    for (int s = 0; s < TS_COUNT(shapes); s++)
        for (int d = 0; d < 2; d++) {
            const lumen_dtype t = d ? LUMEN_U16 : LUMEN_U8;
            const lumen_border b = borders[(s + 2 * d + (int)seed) % TS_COUNT(borders)];
            ts_op o = ts_with_border(*op, b, t == LUMEN_U8 ? 77.0f : 30000.0f);
            ts_case cs = photo_case(s, t, 1 + (s + d) % 2, seed + 10 * s + d);
            ts_check(&o, &cs);
        }
}

static void test_direct_kernels(void **state)
{
    (void)state;
    static float k5[25], k7[49];
    sparse_kernel(k5, 5, 5);
    sparse_kernel(k7, 7, 7);
    ts_op ops[] = {ts_op_filter2d(sharpen, 3, 3), ts_op_filter2d(emboss, 3, 3),
                   ts_op_filter2d(k5, 5, 5), ts_op_filter2d(k7, 7, 7)};
    for (int i = 0; i < TS_COUNT(ops); i++)
        check_photo(&ops[i], 100 + i);
}

static void test_gaussians_and_boxes(void **state)
{
    (void)state;
    const double sigmas[] = {1.0, 2.0, 3.0, 5.0};
    for (int i = 0; i < TS_COUNT(sigmas); i++) {
        ts_op op = ts_op_gaussian(0, 0, sigmas[i], sigmas[i]);
        check_photo(&op, 200 + i);
    }
    ts_op b5 = ts_op_box(5, 5, 1), b15 = ts_op_box(15, 15, 1);
    check_photo(&b5, 300);
    check_photo(&b15, 301);
}

/* The AVX2 and AVX-512 sets give the same bits on the integer paths (skipped zero taps and
 * fixed-size blocks included). */
static void test_isas_agree(void **state)
{
    (void)state;
    lumen_context *c2 = ts_context(TS_AVX2, 2), *c5 = ts_context(TS_AVX512, 2);
    if (!c2 || !c5) {
        if (c2) lumen_context_destroy(c2);
        if (c5) lumen_context_destroy(c5);
        skip();
    }
    static float k7[49];
    sparse_kernel(k7, 7, 17);
    const ts_op ops[] = {ts_op_filter2d(sharpen, 3, 3), ts_op_filter2d(k7, 7, 7),
                         ts_op_gaussian(0, 0, 1.0, 1.0), ts_op_box(5, 5, 1)};
    for (int i = 0; i < TS_COUNT(ops); i++)
        for (int s = 0; s < TS_COUNT(shapes); s++)
            for (int d = 0; d < 2; d++) {
                const lumen_dtype t = d ? LUMEN_U16 : LUMEN_U8;
                ts_image src, a, b;
                ts_image_alloc(&src, shapes[s].layout, t, 1, shapes[s].c, 41, 333);
                ts_image_fill_random(&src, 400 + 10 * i + s);
                ts_image_alloc(&a, shapes[s].layout, t, 1, shapes[s].c, 41, 333);
                ts_image_alloc(&b, shapes[s].layout, t, 1, shapes[s].c, 41, 333);
                assert_int_equal(ts_op_run(c2, &ops[i], &src.v, &a.v, NULL), LUMEN_OK);
                assert_int_equal(ts_op_run(c5, &ops[i], &src.v, &b.v, NULL), LUMEN_OK);
                char label[160], buf[96];
                snprintf(label, sizeof label, "avx2 vs avx512: %s, %s c=%lld",
                         ts_op_describe(&ops[i], buf, sizeof buf), lumen_dtype_name(t),
                         (long long)shapes[s].c);
                ts_assert_equal_images(&b.v, &a.v, label);
                ts_image_free(&src);
                ts_image_free(&a);
                ts_image_free(&b);
            }
    lumen_context_destroy(c2);
    lumen_context_destroy(c5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_kernels),
        cmocka_unit_test(test_gaussians_and_boxes),
        cmocka_unit_test(test_isas_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
