/*
 * lumen_sep_filter2d: fast engines vs reference vs oracle over borders x dtypes x layouts x
 * kernel sizes x anchors x threads; symmetric kernels (the AVX2 paired-tap path); equality
 * with filter2d of the outer product; convolution; run_info.
 */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

static const lumen_dtype dtype_pairs[][2] = {
    {LUMEN_U8, LUMEN_U8},  {LUMEN_U16, LUMEN_U16}, {LUMEN_F32, LUMEN_F32},
    {LUMEN_U8, LUMEN_F32}, {LUMEN_U16, LUMEN_U8},  {LUMEN_F32, LUMEN_U16},
};

/* (kw, kh) pairs: 1, even, odd, unequal, larger than a 17-row image. */
static const int ksizes[][2] = {{1, 1}, {2, 2}, {3, 3}, {4, 3}, {5, 1}, {1, 7}, {15, 15}, {7, 21}};

static float border_value(lumen_dtype t)
{
    return t == LUMEN_F32 ? 12.25f : t == LUMEN_U8 ? 3.0f : 65000.0f;
}

/* A symmetric kernel of n taps (k[i] == k[n-1-i] exactly) summing to 1. */
static void symmetric_kernel(float *k, int n, uint64_t seed)
{
    ts_random_kernel(k, n, seed);
    for (int i = 0; i < n / 2; i++)
        k[i] = k[n - 1 - i] = (k[i] + k[n - 1 - i]) / 2;
}

static void make_kernels(float *kx, int kw, float *ky, int kh, int idx)
{
    if (idx % 3 == 1) {
        symmetric_kernel(kx, kw, 500 + idx);
        symmetric_kernel(ky, kh, 600 + idx);
    } else {
        ts_random_kernel(kx, kw, 500 + idx);
        ts_random_kernel(ky, kh, 600 + idx);
    }
}

static void set_anchor(ts_op *op, int a)
{
    op->opt.anchor_x = a == 0 ? -1 : a == 1 ? 0 : op->kw - 1;
    op->opt.anchor_y = a == 0 ? -1 : a == 1 ? 0 : op->kh - 1;
}

/* Every dtype pair x layout for one border; sizes, symmetry, anchors, threads rotate. */
static void test_matrix(void **state)
{
    const lumen_border b = *(const lumen_border *)*state;
    float kx[32], ky[32];
    int idx = 0;
    for (int d = 0; d < TS_COUNT(dtype_pairs); d++)
        for (int l = 0; l < TS_LAYOUT_COUNT; l++, idx++) {
            const int ks = (l + 3 * d + b) % TS_COUNT(ksizes), kw = ksizes[ks][0],
                      kh = ksizes[ks][1];
            make_kernels(kx, kw, ky, kh, idx);
            ts_op op =
                ts_with_border(ts_op_sep(kx, kw, ky, kh), b, border_value(dtype_pairs[d][0]));
            set_anchor(&op, (l + d) % 3);
            op.opt.convolve = idx % 5 == 4;
            const int64_t h = idx % 2 ? 17 : 33, w = idx % 2 ? 31 : 40;
            ts_case cs = ts_case_make((ts_layout)l, dtype_pairs[d][0], dtype_pairs[d][1], h, w,
                                      1 + idx % 3, 13 * idx + b);
            ts_check(&op, &cs);
        }
}

/* Every size x anchor x border x symmetric/not, f32 and u16 in turn. */
static void test_sizes_anchors(void **state)
{
    (void)state;
    float kx[32], ky[32];
    int idx = 0;
    for (int s = 0; s < TS_COUNT(ksizes); s++)
        for (int a = 0; a < 3; a++)
            for (int bi = 0; bi < TS_COUNT(borders); bi++, idx++) {
                const int kw = ksizes[s][0], kh = ksizes[s][1];
                const lumen_dtype t = idx % 2 ? LUMEN_U16 : LUMEN_F32;
                make_kernels(kx, kw, ky, kh, idx);
                ts_op op = ts_with_border(ts_op_sep(kx, kw, ky, kh), borders[bi], border_value(t));
                set_anchor(&op, a);
                op.opt.convolve = (idx / 3) % 2;
                ts_case cs =
                    ts_case_make(idx % 2 ? TS_STRIDED : TS_FLIPPED, t, t, 17, 33, 1 + idx % 3, idx);
                ts_check(&op, &cs);
            }
}

/*
 * 700 x 9 (one strip: 32-wide loop + tails) and a 301-tap column kernel (256-column strips,
 * kernel far larger than the image); symmetric and not; every border; threads 1..3.
 */
static void test_wide_image(void **state)
{
    (void)state;
    static float kx[5], ky[301], sx[5], sy[301];
    ts_random_kernel(kx, 5, 1), ts_random_kernel(ky, 301, 2);
    symmetric_kernel(sx, 5, 3), symmetric_kernel(sy, 301, 4);
    for (int bi = 0; bi < TS_COUNT(borders); bi++)
        for (int threads = 1; threads <= 3; threads++) {
            const int sym = (bi + threads) % 2;
            const lumen_dtype t = threads == 2 ? LUMEN_U8 : LUMEN_F32;
            ts_op op = sym ? ts_op_sep(sx, 5, sy, 301) : ts_op_sep(kx, 5, ky, 301);
            if ((bi + threads) % 3 == 0) op.kh = 3; /* short column kernel: no strips */
            op = ts_with_border(op, borders[bi], border_value(t));
            ts_case cs = ts_case_make(threads == 3 ? TS_INTERLEAVED : TS_STRIDED, t, t, 9, 700,
                                      threads, 17 * bi + threads);
            cs.c = threads == 3 ? 2 : 1;
            ts_check(&op, &cs);
        }
}

/* Row kernels longer than the AVX2 pass's tap table (4096) take another path. */
static void test_very_long_row_kernel(void **state)
{
    (void)state;
    static float kx[4099], ky[3];
    static const int sizes[] = {4095, 4096, 4097, 4099};
    ts_random_kernel(ky, 3, 8);
    for (int i = 0; i < TS_COUNT(sizes); i++) {
        if (i % 2)
            ts_random_kernel(kx, sizes[i], 9 + i);
        else
            symmetric_kernel(kx, sizes[i], 9 + i);
        ts_op op = ts_with_border(ts_op_sep(kx, sizes[i], ky, 3), borders[i], 1.0f);
        ts_case cs =
            ts_case_make(i % 2 ? TS_INTERLEAVED : TS_PLANAR, LUMEN_F32, LUMEN_F32, 4, 37, 2, i);
        cs.c = 2;
        ts_check(&op, &cs);
    }
}

/* sep(kx, ky) == filter2d(ky outer kx) (direct) within tolerance, on every engine. */
static void test_equals_filter2d_outer(void **state)
{
    (void)state;
    float kx[6], ky[5], k[30];
    ts_random_kernel(kx, 6, 10);
    ts_random_kernel(ky, 5, 11);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 6; j++)
            k[i * 6 + j] = ky[i] * kx[j];
    for (int b = 0; b < 5; b++)
        for (int e = 0; e < TS_ENGINE_COUNT; e++) {
            lumen_context *ctx = ts_context((ts_engine)e, 1 + b % 3);
            if (!ctx) continue;
            ts_image src, a, c;
            ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_F32, 1, 3, 19, 41);
            ts_image_alloc(&a, TS_PLANAR, LUMEN_F32, 1, 3, 19, 41);
            ts_image_alloc(&c, TS_PLANAR, LUMEN_F32, 1, 3, 19, 41);
            ts_image_fill_random(&src, 20 + b);
            ts_op sep = ts_with_border(ts_op_sep(kx, 6, ky, 5), (lumen_border)b, -3.0f);
            ts_op dir = ts_with_border(ts_op_filter2d(k, 6, 5), (lumen_border)b, -3.0f);
            sep.opt.anchor_x = dir.opt.anchor_x = 1;
            dir.opt.method = LUMEN_METHOD_DIRECT;
            assert_int_equal(ts_op_run(ctx, &sep, &src.v, &a.v, NULL), LUMEN_OK);
            assert_int_equal(ts_op_run(ctx, &dir, &src.v, &c.v, NULL), LUMEN_OK);
            char msg[1024];
            const double tol = ts_f32_tol(ts_op_ksum(&sep, LUMEN_F32), ts_absmax(&src.v));
            if (ts_compare(&a.v, &c.v, NULL, tol, msg, sizeof msg))
                fail_msg("sep vs filter2d, border %s [%s]: %s", lumen_border_name((lumen_border)b),
                         ts_engine_name((ts_engine)e), msg);
            ts_image_free(&src), ts_image_free(&a), ts_image_free(&c);
            lumen_context_destroy(ctx);
        }
}

/* convolve=1 == correlation with both kernels reversed and the anchor mirrored (exactly). */
static void test_convolve_is_flipped_correlation(void **state)
{
    (void)state;
    float kx[4], ky[3], rx[4], ry[3];
    ts_random_kernel(kx, 4, 30);
    ts_random_kernel(ky, 3, 31);
    for (int i = 0; i < 4; i++)
        rx[i] = kx[3 - i];
    for (int i = 0; i < 3; i++)
        ry[i] = ky[2 - i];
    static const int anchors[][2] = {{-1, -1}, {0, 0}, {3, 2}, {1, 0}};
    for (int e = 0; e < TS_ENGINE_COUNT; e++)
        for (int a = 0; a < TS_COUNT(anchors); a++) {
            lumen_context *ctx = ts_context((ts_engine)e, 2);
            if (!ctx) continue;
            ts_op conv = ts_op_sep(kx, 4, ky, 3), corr = ts_op_sep(rx, 4, ry, 3);
            conv.opt.convolve = 1;
            conv.opt.anchor_x = anchors[a][0], conv.opt.anchor_y = anchors[a][1];
            corr.opt.anchor_x = 3 - (anchors[a][0] < 0 ? 2 : anchors[a][0]);
            corr.opt.anchor_y = 2 - (anchors[a][1] < 0 ? 1 : anchors[a][1]);
            ts_image src, x, y;
            ts_image_alloc(&src, TS_PLANAR, LUMEN_U16, 1, 1, 15, 36);
            ts_image_alloc(&x, TS_PLANAR, LUMEN_U16, 1, 1, 15, 36);
            ts_image_alloc(&y, TS_PLANAR, LUMEN_U16, 1, 1, 15, 36);
            ts_image_fill_random(&src, 40 + a);
            assert_int_equal(ts_op_run(ctx, &conv, &src.v, &x.v, NULL), LUMEN_OK);
            assert_int_equal(ts_op_run(ctx, &corr, &src.v, &y.v, NULL), LUMEN_OK);
            char label[96];
            snprintf(label, sizeof label, "sep convolve anchor (%d,%d) [%s]", anchors[a][0],
                     anchors[a][1], ts_engine_name((ts_engine)e));
            ts_assert_equal_images(&x.v, &y.v, label);
            ts_image_free(&src), ts_image_free(&x), ts_image_free(&y);
            lumen_context_destroy(ctx);
        }
}

/* Hand-computed: row kernel [1 2 3] then column [1 1] on a 2x3 image, replicate border. */
static void test_by_hand(void **state)
{
    (void)state;
    static const double src[6] = {1, 2, 3, 10, 20, 30};
    static const float kx[3] = {1, 2, 3}, ky[2] = {1, 1};
    /* rows: r(x) = s(x-1) + 2 s(x) + 3 s(x+1), replicate; row 0: 9, 14, 17; row 1: 90, 140, 170.
     * columns, anchor_y = 1: d(y) = r(y-1) + r(y); y=0: 2*row0; y=1: row0 + row1. */
    static const double want[6] = {18, 28, 34, 99, 154, 187};
    ts_op op = ts_with_border(ts_op_sep(kx, 3, ky, 2), LUMEN_BORDER_REPLICATE, 0.0f);
    ts_expect(&op, LUMEN_U8, 2, 3, src, want, 0.0, "sep [1 2 3] x [1 1]");
    ts_expect(&op, LUMEN_F32, 2, 3, src, want, 0.0, "sep [1 2 3] x [1 1]");
}

/* run_info reports the separable method and the engine. */
static void test_run_info(void **state)
{
    (void)state;
    static const float k[3] = {0.25f, 0.5f, 0.25f};
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_U8, 1, 1, 4, 4);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_U8, 1, 1, 4, 4);
    ts_image_fill_random(&src, 1);
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 3);
        if (!ctx) continue;
        lumen_run_info info;
        memset(&info, 0, sizeof info);
        assert_int_equal(lumen_sep_filter2d(ctx, &src.v, &dst.v, k, 3, k, 3, NULL, &info),
                         LUMEN_OK);
        assert_int_equal(info.method, LUMEN_METHOD_SEPARABLE);
        assert_string_equal(info.isa, ts_engine_isa((ts_engine)e));
        assert_string_equal(info.device, "cpu");
        assert_int_equal(info.threads, 3);
        assert_string_equal(lumen_last_error(), "");
        lumen_context_destroy(ctx);
    }
    ts_image_free(&src), ts_image_free(&dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[0]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[1]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[2]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[3]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[4]),
        cmocka_unit_test(test_sizes_anchors),
        cmocka_unit_test(test_wide_image),
        cmocka_unit_test(test_very_long_row_kernel),
        cmocka_unit_test(test_equals_filter2d_outer),
        cmocka_unit_test(test_convolve_is_flipped_correlation),
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_run_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
