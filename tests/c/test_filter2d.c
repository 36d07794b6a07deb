/*
 * lumen_filter2d: fast engines vs the scalar reference vs the independent oracle over
 * borders x dtypes x layouts x kernel sizes x anchors x threads; hand-computed border
 * patterns; convolution; methods (direct / separable / auto).
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
    {LUMEN_U8, LUMEN_F32}, {LUMEN_U16, LUMEN_U8},  {LUMEN_F32, LUMEN_U16},
};

static const int ksizes[][2] = {{1, 1}, {2, 2}, {3, 3}, {4, 3}, {5, 1}, {1, 7}, {15, 15}};

/* Border value per dtype: non-zero and inside the dtype's range. */
static float border_value(lumen_dtype t)
{
    return t == LUMEN_F32 ? -37.5f : t == LUMEN_U8 ? 201.0f : 40000.0f;
}

/* Anchor variant a of a kw x kh kernel: 0 default, 1 top-left, 2 bottom-right. */
static void set_anchor(ts_op *op, int a)
{
    op->opt.anchor_x = a == 0 ? -1 : a == 1 ? 0 : op->kw - 1;
    op->opt.anchor_y = a == 0 ? -1 : a == 1 ? 0 : op->kh - 1;
}

/* ---- fast vs reference matrix ------------------------------------------- */

/* Every dtype pair x layout for one border; sizes, anchors, threads, convolve rotate. */
static void test_matrix(void **state)
{
    const lumen_border b = *(const lumen_border *)*state;
    float k[15 * 15];
    int idx = 0;
    for (int d = 0; d < TS_COUNT(dtype_pairs); d++)
        for (int l = 0; l < TS_LAYOUT_COUNT; l++, idx++) {
            const int ks = (l + 2 * d) % TS_COUNT(ksizes), kw = ksizes[ks][0], kh = ksizes[ks][1];
            ts_random_kernel(k, kw * kh, 100 + idx);
            ts_op op =
                ts_with_border(ts_op_filter2d(k, kw, kh), b, border_value(dtype_pairs[d][0]));
            set_anchor(&op, (l + d + b) % 3);
            op.opt.convolve = idx % 4 == 3;
            const int64_t h = idx % 2 ? 17 : 33, w = idx % 2 ? 31 : 40;
            ts_case cs = ts_case_make((ts_layout)l, dtype_pairs[d][0], dtype_pairs[d][1], h, w,
                                      1 + idx % 3, 7 * idx + b);
            ts_check(&op, &cs);
        }
}

/* Every kernel size x anchor x border, f32 planar and u8 interleaved in turn. */
static void test_kernel_sizes_anchors(void **state)
{
    (void)state;
    float k[15 * 15];
    int idx = 0;
    for (int s = 0; s < TS_COUNT(ksizes); s++)
        for (int a = 0; a < 3; a++)
            for (int bi = 0; bi < TS_COUNT(borders); bi++, idx++) {
                const int kw = ksizes[s][0], kh = ksizes[s][1];
                const lumen_dtype t = idx % 2 ? LUMEN_U8 : LUMEN_F32;
                ts_random_kernel(k, kw * kh, 300 + idx);
                ts_op op = ts_with_border(ts_op_filter2d(k, kw, kh), borders[bi], border_value(t));
                set_anchor(&op, a);
                op.opt.convolve = (idx / 2) % 2;
                ts_case cs = ts_case_make(idx % 2 ? TS_INTERLEAVED : TS_PLANAR, t, t, 17, 31,
                                          1 + idx % 3, idx);
                ts_check(&op, &cs);
            }
}

/* src and dst in different layouts (same n, c): every pair of layouts. */
static void test_mixed_layouts(void **state)
{
    (void)state;
    float k[5 * 4];
    ts_random_kernel(k, 20, 77);
    int idx = 0;
    for (int ls = 0; ls < TS_LAYOUT_COUNT; ls++)
        for (int ld = 0; ld < TS_LAYOUT_COUNT; ld++, idx++) {
            if (ls == ld) continue;
            ts_op op = ts_with_border(ts_op_filter2d(k, 5, 4), borders[idx % 5], 9.0f);
            ts_case cs = ts_case_make((ts_layout)ls, LUMEN_U8, idx % 2 ? LUMEN_F32 : LUMEN_U8, 19,
                                      35, 1 + idx % 3, idx);
            cs.dst_layout = (ts_layout)ld;
            cs.n = 2, cs.c = 3;
            ts_check(&op, &cs);
        }
}

/*
 * 700 x 9: a 3x3 kernel runs the 32-wide main loop and the 8-wide and partial tails in one
 * strip; a 3x301 kernel (kh > 256 taps, larger than the image) makes the engine cut
 * 256-column strips. Every border, threads 1..3.
 */
static void test_wide_image(void **state)
{
    (void)state;
    static float k3[9], k301[3 * 301];
    ts_random_kernel(k3, 9, 5);
    ts_random_kernel(k301, 3 * 301, 6);
    for (int bi = 0; bi < TS_COUNT(borders); bi++)
        for (int threads = 1; threads <= 3; threads++) {
            const int big = (bi + threads) % 3 == 0;
            const lumen_dtype t = threads == 2 ? LUMEN_U8 : LUMEN_F32;
            ts_op op = big ? ts_op_filter2d(k301, 3, 301) : ts_op_filter2d(k3, 3, 3);
            op = ts_with_border(op, borders[bi], border_value(t));
            const ts_layout l = threads == 3 ? TS_INTERLEAVED : TS_PLANAR;
            ts_case cs = ts_case_make(l, t, t, 9, 700, threads, 11 * bi + threads);
            cs.c = l == TS_INTERLEAVED && !big ? 3 : 1;
            cs.no_oracle = big && threads != 1;
            ts_check(&op, &cs);
        }
}

/* ---- hand-computed results (test the reference itself) ----------------- */

/*
 * The row a..h = 1..8 seen through offsets -3..10 for each border: DESIGN.md's table
 * `cba|abcdefgh|hgf`, `dcb|abcdefgh|gfe` ... written out. 0 stands for the constant v.
 */
static const int row_patterns[5][14] = {
    /* reflect    */ {3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6},
    /* constant   */ {0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0},
    /* replicate  */ {1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8},
    /* reflect101 */ {4, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8, 7, 6, 5},
    /* wrap       */ {6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3},
};

/* 1x8 row (or 8x1 column) with a 7-tap delta at tap j: dst[x] = src[x + j - 3]. */
static void check_delta_7(lumen_border b, int j, int vertical, lumen_dtype t)
{
    const double v = t == LUMEN_F32 ? -5.5 : 99.0;
    double src[8], want[8];
    float k[7] = {0};
    k[j] = 1.0f;
    for (int x = 0; x < 8; x++)
        src[x] = x + 1;
    for (int x = 0; x < 8; x++) {
        const int p = row_patterns[b][x + j];
        want[x] = p ? p : v;
    }
    ts_op op =
        ts_with_border(vertical ? ts_op_filter2d(k, 1, 7) : ts_op_filter2d(k, 7, 1), b, (float)v);
    char what[128];
    snprintf(what, sizeof what, "7-tap delta at %d, %s, border %s", j, vertical ? "column" : "row",
             lumen_border_name(b));
    ts_expect(&op, t, vertical ? 8 : 1, vertical ? 1 : 8, src, want, 0.0, what);
}

static void test_border_patterns_7(void **state)
{
    (void)state;
    for (int b = 0; b < 5; b++)
        for (int j = 0; j < 7; j++)
            for (int vertical = 0; vertical < 2; vertical++) {
                check_delta_7((lumen_border)b, j, vertical, LUMEN_F32);
                check_delta_7((lumen_border)b, j, vertical, LUMEN_U8);
            }
}

/* Row a..h = 1..8 extended forever, as strings (0 = the constant): kernels larger than the image.
 */
static int extended(lumen_border b, int p)
{
    static const char *periodic[] = {"abcdefghhgfedcba", NULL, NULL, "abcdefghgfedcb", "abcdefgh"};
    if (p >= 0 && p < 8) return p + 1;
    if (b == LUMEN_BORDER_CONSTANT) return 0;
    if (b == LUMEN_BORDER_REPLICATE) return p < 0 ? 1 : 8;
    const int period = (int)strlen(periodic[b]);
    return periodic[b][((p % period) + period) % period] - 'a' + 1;
}

/* 1x8 row and a 31-tap delta (taps -15..15 around the anchor). */
static void test_border_patterns_31(void **state)
{
    (void)state;
    double src[8], want[8];
    float k[31];
    for (int x = 0; x < 8; x++)
        src[x] = x + 1;
    for (int b = 0; b < 5; b++)
        for (int j = 0; j < 31; j += 2) {
            memset(k, 0, sizeof k);
            k[j] = 1.0f;
            for (int x = 0; x < 8; x++) {
                const int p = extended((lumen_border)b, x + j - 15);
                want[x] = p ? p : 250.0;
            }
            ts_op op = ts_with_border(ts_op_filter2d(k, 31, 1), (lumen_border)b, 250.0f);
            char what[96];
            snprintf(what, sizeof what, "31-tap delta at %d, border %s", j,
                     lumen_border_name((lumen_border)b));
            ts_expect(&op, LUMEN_U8, 1, 8, src, want, 0.0, what);
        }
}

/* 3x3 image 1..9, 3x3 delta at (0,0) (dst = src(x-1, y-1)) and at (2,2) (dst = src(x+1, y+1)). */
static void test_delta_3x3(void **state)
{
    (void)state;
    static const double src[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const double v = -7;
    const double top_left[5][9] = {
        {1, 1, 2, 1, 1, 2, 4, 4, 5}, /* reflect */
        {v, v, v, v, 1, 2, v, 4, 5}, /* constant */
        {1, 1, 2, 1, 1, 2, 4, 4, 5}, /* replicate */
        {5, 4, 5, 2, 1, 2, 5, 4, 5}, /* reflect101 */
        {9, 7, 8, 3, 1, 2, 6, 4, 5}, /* wrap */
    };
    const double bottom_right[5][9] = {
        {5, 6, 6, 8, 9, 9, 8, 9, 9}, {5, 6, v, 8, 9, v, v, v, v}, {5, 6, 6, 8, 9, 9, 8, 9, 9},
        {5, 6, 5, 8, 9, 8, 5, 6, 5}, {5, 6, 4, 8, 9, 7, 2, 3, 1},
    };
    for (int b = 0; b < 5; b++) {
        float k[9] = {0};
        k[0] = 1.0f;
        ts_op op = ts_with_border(ts_op_filter2d(k, 3, 3), (lumen_border)b, (float)v);
        ts_expect(&op, LUMEN_F32, 3, 3, src, top_left[b], 0.0, "3x3 delta at (0,0)");
        op.kernel = (const float[9]){0, 0, 0, 0, 0, 0, 0, 0, 1};
        ts_expect(&op, LUMEN_F32, 3, 3, src, bottom_right[b], 0.0, "3x3 delta at (2,2)");
        /* Convolution with the (2,2) delta is correlation with the (0,0) delta. */
        op.opt.convolve = 1;
        ts_expect(&op, LUMEN_U8, 3, 3, src, top_left[b], 0.0, "3x3 convolution, delta at (2,2)");
    }
}

/* 3x3 of ones on 1..9 with the constant border 0 and 10: window sums by hand. */
static void test_ones_constant(void **state)
{
    (void)state;
    static const double src[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const double zero[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
    static const double ten[9] = {62, 51, 66, 57, 45, 63, 74, 69, 78};
    static const float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ts_op op = ts_with_border(ts_op_filter2d(ones, 3, 3), LUMEN_BORDER_CONSTANT, 0.0f);
    ts_expect(&op, LUMEN_U8, 3, 3, src, zero, 0.0, "ones, constant 0");
    op.opt.border_value = 10.0f;
    ts_expect(&op, LUMEN_U16, 3, 3, src, ten, 0.0, "ones, constant 10");
    op.opt.method = LUMEN_METHOD_DIRECT;
    ts_expect(&op, LUMEN_F32, 3, 3, src, ten, 0.0, "ones, constant 10, direct");
}

/* The library fills the whole run info, so a caller's uninitialised struct is safe to read:
 * algo (named by conv only) once came back as stack garbage. */
static void test_run_info_filled(void **state)
{
    (void)state;
    float px[16] = {0}, out[16];
    static const float k[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    const lumen_image src = lumen_image_nchw(px, LUMEN_F32, 1, 1, 4, 4);
    const lumen_image dst = lumen_image_nchw(out, LUMEN_F32, 1, 1, 4, 4);
    lumen_run_info info;
    memset(&info, 0xA5, sizeof info);
    assert_int_equal(lumen_filter2d(ctx, &src, &dst, k, 3, 3, NULL, &info), LUMEN_OK);
    assert_null(info.algo);
    assert_string_equal(info.device, "cpu");
    assert_true(info.threads >= 1);
    lumen_context_destroy(ctx);
}

/* Row 1..5, kernel [1 2 0]: correlation 1*s(x-1) + 2*s(x); convolution 2*s(x) + 1*s(x+1). */
static void test_convolve_by_hand(void **state)
{
    (void)state;
    static const double src[5] = {1, 2, 3, 4, 5};
    static const double corr[5] = {3, 5, 8, 11, 14};  /* reflect: s(-1) = s(0) */
    static const double conv[5] = {4, 7, 10, 13, 15}; /* reflect: s(5) = s(4) */
    static const float k[3] = {1, 2, 0};
    ts_op op = ts_op_filter2d(k, 3, 1);
    ts_expect(&op, LUMEN_F32, 1, 5, src, corr, 0.0, "correlation [1 2 0]");
    op.opt.convolve = 1;
    ts_expect(&op, LUMEN_F32, 1, 5, src, conv, 0.0, "convolution [1 2 0]");
}

/* ---- convolution through the public API --------------------------------- */

static void run_ok(lumen_context *ctx, const ts_op *op, const ts_image *src, ts_image *dst,
                   lumen_run_info *info)
{
    const lumen_status s = ts_op_run(ctx, op, &src->v, &dst->v, info);
    if (s != LUMEN_OK) fail_msg("status %d: %s", (int)s, lumen_last_error());
}

/* convolve=1 with anchor (ax, ay) == correlation with the reversed kernel, anchor mirrored. */
static void check_convolve_flip(ts_engine e, const float *k, int kw, int kh, int ax, int ay)
{
    lumen_context *ctx = ts_context(e, 2);
    if (!ctx) return;
    float rev[5 * 5];
    for (int i = 0; i < kw * kh; i++)
        rev[i] = k[kw * kh - 1 - i];
    ts_op conv = ts_op_filter2d(k, kw, kh), corr = ts_op_filter2d(rev, kw, kh);
    conv.opt.convolve = 1, conv.opt.anchor_x = ax, conv.opt.anchor_y = ay;
    corr.opt.anchor_x = kw - 1 - (ax < 0 ? kw / 2 : ax);
    corr.opt.anchor_y = kh - 1 - (ay < 0 ? kh / 2 : ay);
    ts_image src, a, b;
    ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_F32, 1, 3, 13, 37);
    ts_image_alloc(&a, TS_PLANAR, LUMEN_F32, 1, 3, 13, 37);
    ts_image_alloc(&b, TS_PLANAR, LUMEN_F32, 1, 3, 13, 37);
    ts_image_fill_random(&src, 5);
    run_ok(ctx, &conv, &src, &a, NULL);
    run_ok(ctx, &corr, &src, &b, NULL);
    char label[128];
    snprintf(label, sizeof label, "convolve %dx%d anchor (%d,%d) [%s]", kw, kh, ax, ay,
             ts_engine_name(e));
    ts_assert_equal_images(&a.v, &b.v, label);
    ts_image_free(&src), ts_image_free(&a), ts_image_free(&b);
    lumen_context_destroy(ctx);
}

static void test_convolve_is_flipped_correlation(void **state)
{
    (void)state;
    static const int anchors[][2] = {{-1, -1}, {0, 0}, {3, 2}, {1, 2}, {2, 0}};
    float k43[12], k55[25];
    ts_random_kernel(k43, 12, 41);
    ts_random_kernel(k55, 25, 42);
    for (int e = 0; e < TS_ENGINE_COUNT; e++)
        for (int a = 0; a < TS_COUNT(anchors); a++) {
            check_convolve_flip((ts_engine)e, k43, 4, 3, anchors[a][0], anchors[a][1]);
            check_convolve_flip((ts_engine)e, k55, 5, 5, anchors[a][0] + 1, anchors[a][1] + 1);
        }
}

/* ---- methods ------------------------------------------------------------ */

/* Runs op with method m on engine e; result within tolerance of want; returns info.method. */
static lumen_method run_method(ts_engine e, ts_op op, lumen_method m, const ts_image *src,
                               const ts_image *want, double tol)
{
    lumen_context *ctx = ts_context(e, 3);
    if (!ctx) return m == LUMEN_METHOD_DIRECT ? LUMEN_METHOD_DIRECT : LUMEN_METHOD_SEPARABLE;
    ts_image dst;
    ts_image_alloc(&dst, TS_PLANAR, want->v.dtype, want->v.n, want->v.c, want->v.h, want->v.w);
    lumen_run_info info;
    op.opt.method = m;
    run_ok(ctx, &op, src, &dst, &info);
    char msg[1024];
    const int64_t bad = tol > 0 ? ts_compare(&dst.v, &want->v, NULL, tol, msg, sizeof msg)
                                : ts_compare_exact(&dst.v, &want->v, msg, sizeof msg);
    if (bad)
        fail_msg("method %s [%s] vs reference direct: %s", lumen_method_name(m), ts_engine_name(e),
                 msg);
    ts_image_free(&dst);
    lumen_context_destroy(ctx);
    return info.method;
}

/* A rank-1 kernel (outer product) under auto and separable equals direct. Which method auto
 * picks is the cost model's business; it must report one that ran. */
static void test_rank1_methods(void **state)
{
    (void)state;
    float kx[5], ky[4], k[20];
    ts_random_kernel(kx, 5, 1);
    ts_random_kernel(ky, 4, 2);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            k[i * 5 + j] = ky[i] * kx[j];
    for (int variant = 0; variant < 3; variant++) {
        ts_op op = ts_with_border(ts_op_filter2d(k, 5, 4), (lumen_border)(variant + 1), 3.0f);
        set_anchor(&op, variant);
        op.opt.convolve = variant == 2;
        ts_image src, want;
        ts_image_alloc(&src, TS_BATCH, LUMEN_F32, 2, 2, 21, 45);
        ts_image_alloc(&want, TS_PLANAR, LUMEN_F32, 2, 2, 21, 45);
        ts_image_fill_random(&src, 8);
        lumen_context *ref = ts_context(TS_REF, 1);
        op.opt.method = LUMEN_METHOD_DIRECT;
        run_ok(ref, &op, &src, &want, NULL);
        lumen_context_destroy(ref);
        const double tol = ts_f32_tol(ts_op_ksum(&op, LUMEN_F32), fmax(ts_absmax(&src.v), 3.0));
        for (int e = 0; e < TS_ENGINE_COUNT; e++) {
            const lumen_method m = run_method(e, op, LUMEN_METHOD_AUTO, &src, &want, tol);
            assert_true(m == LUMEN_METHOD_DIRECT || m == LUMEN_METHOD_SEPARABLE ||
                        m == LUMEN_METHOD_FFT);
            assert_int_equal(run_method(e, op, LUMEN_METHOD_SEPARABLE, &src, &want, tol),
                             LUMEN_METHOD_SEPARABLE);
            assert_int_equal(run_method(e, op, LUMEN_METHOD_DIRECT, &src, &want, tol),
                             LUMEN_METHOD_DIRECT);
        }
        ts_image_free(&src), ts_image_free(&want);
    }
}

/* A rank-2 kernel: auto never runs it separably; separable is refused, dst untouched. */
static void test_not_rank1(void **state)
{
    (void)state;
    static const float k[9] = {1, 2, 1, 2, 1, 2, 1, 2, 1};
    static const float one[1] = {2.0f};
    ts_image src, dst;
    ts_image_alloc(&src, TS_PLANAR, LUMEN_U8, 1, 1, 9, 10);
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_U8, 1, 1, 9, 10);
    ts_image_fill_random(&src, 3);
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 1);
        if (!ctx) continue;
        ts_image_fill_bytes(&dst, 0x77);
        lumen_filter_options o = lumen_filter_options_default();
        o.method = LUMEN_METHOD_SEPARABLE;
        assert_int_equal(lumen_filter2d(ctx, &src.v, &dst.v, k, 3, 3, &o, NULL),
                         LUMEN_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(lumen_last_error(), "method"));
        for (int i = 0; i < 90; i++)
            assert_int_equal(((unsigned char *)dst.v.data)[i], 0x77);
        lumen_run_info info;
        o.method = LUMEN_METHOD_AUTO;
        assert_int_equal(lumen_filter2d(ctx, &src.v, &dst.v, k, 3, 3, &o, &info), LUMEN_OK);
        assert_int_not_equal(info.method, LUMEN_METHOD_SEPARABLE);
        o.method = LUMEN_METHOD_DIRECT;
        assert_int_equal(lumen_filter2d(ctx, &src.v, &dst.v, one, 1, 1, &o, &info), LUMEN_OK);
        assert_int_equal(info.method, LUMEN_METHOD_DIRECT);
        assert_string_equal(info.isa, ts_engine_isa((ts_engine)e));
        lumen_context_destroy(ctx);
    }
    ts_image_free(&src), ts_image_free(&dst);
}

/* Dyadic rank-1 kernels (binomials) and 1-D kernels factor exactly: separable == direct bit
 * for bit on integer images, so exact .5 ties round the same way; so does auto when it runs
 * either of them. */
static void test_dyadic_and_1d(void **state)
{
    (void)state;
    static const float b3[3] = {1, 2, 1}, b5[5] = {1, 4, 6, 4, 1};
    float k3[9], k5[25];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            k3[i * 3 + j] = b3[i] * b3[j] / 16.0f;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            k5[i * 5 + j] = b5[i] * b5[j] / 256.0f;
    static const float row[7] = {0.5f, -1, 2, 0.25f, 1, -0.75f, 3};
    for (int e = 0; e < TS_ENGINE_COUNT; e++)
        for (int t = 0; t < 3; t++) {
            const float *k = t == 0 ? k3 : t == 1 ? k5 : row;
            const int kw = t == 0 ? 3 : t == 1 ? 5 : 7, kh = t == 0 ? 3 : t == 1 ? 5 : 1;
            lumen_context *ctx = ts_context((ts_engine)e, 2);
            if (!ctx) continue;
            ts_op op = ts_with_border(ts_op_filter2d(k, kw, kh), (lumen_border)((e + t) % 5), 8.0f);
            ts_image src, want;
            ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_U8, 1, 3, 19, 70);
            ts_image_alloc(&want, TS_PLANAR, LUMEN_U8, 1, 3, 19, 70);
            ts_image_fill_random(&src, 12 + t);
            op.opt.method = LUMEN_METHOD_DIRECT;
            run_ok(ctx, &op, &src, &want, NULL);
            lumen_context_destroy(ctx);
            assert_int_equal(run_method((ts_engine)e, op, LUMEN_METHOD_SEPARABLE, &src, &want, 0.0),
                             LUMEN_METHOD_SEPARABLE);
            const lumen_method m =
                run_method((ts_engine)e, op, LUMEN_METHOD_AUTO, &src, &want, 0.0);
            assert_true(m == LUMEN_METHOD_DIRECT || m == LUMEN_METHOD_SEPARABLE);
            ts_image_free(&src), ts_image_free(&want);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[0]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[1]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[2]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[3]),
        cmocka_unit_test_prestate(test_matrix, (void *)&borders[4]),
        cmocka_unit_test(test_kernel_sizes_anchors),
        cmocka_unit_test(test_mixed_layouts),
        cmocka_unit_test(test_wide_image),
        cmocka_unit_test(test_border_patterns_7),
        cmocka_unit_test(test_border_patterns_31),
        cmocka_unit_test(test_delta_3x3),
        cmocka_unit_test(test_ones_constant),
        cmocka_unit_test(test_convolve_by_hand),
        cmocka_unit_test(test_convolve_is_flipped_correlation),
        cmocka_unit_test(test_rank1_methods),
        cmocka_unit_test(test_not_rank1),
        cmocka_unit_test(test_dyadic_and_1d),
        cmocka_unit_test(test_run_info_filled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
