/*
 * Edge cases of every op: 1x1, 1xN, Nx1 images; kernels larger than the image in every border
 * mode; reflect101 on width/height 1; NaN and Inf propagation; in place and overlapping
 * views; u8/u16 saturation and rounding; more threads than rows.
 */
#include "test_support.h"

#include "semantics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

static float k3x3[9], k31[31 * 31], kx5[5], ky3[3], kx31[31], ky31[31];

static int setup_kernels(void **state)
{
    (void)state;
    ts_random_kernel(k3x3, 9, 1);
    ts_random_kernel(k31, 31 * 31, 2);
    ts_random_kernel(kx5, 5, 3);
    ts_random_kernel(ky3, 3, 4);
    ts_random_kernel(kx31, 31, 5);
    ts_random_kernel(ky31, 31, 6);
    return 0;
}

/* Op number i of the four, small kernels. */
static ts_op small_op(int i)
{
    switch (i % 4) {
    case 0: return ts_op_filter2d(k3x3, 3, 3);
    case 1: return ts_op_sep(kx5, 5, ky3, 3);
    case 2: return ts_op_gaussian(0, 0, 1.0, 0.0);
    default: return ts_op_box(4, 3, 1);
    }
}

/* ---- tiny and thin images ------------------------------------------------ */

/* lumen_border_index against the border rules' periodic definitions (docs/semantics.md), for
 * every index from far left to far right of images 1 to 40 wide: its shortcut for indices one
 * reflection away must give the same pixels. */
static int64_t border_by_definition(int64_t i, int64_t n, lumen_border b)
{
    if (i >= 0 && i < n) return i;
    const int64_t p2 = ((i % (2 * n)) + 2 * n) % (2 * n);
    switch (b) {
    case LUMEN_BORDER_CONSTANT: return -1;
    case LUMEN_BORDER_REPLICATE: return i < 0 ? 0 : n - 1;
    case LUMEN_BORDER_REFLECT: return p2 < n ? p2 : 2 * n - 1 - p2;
    case LUMEN_BORDER_REFLECT101: {
        if (n == 1) return 0;
        const int64_t p = ((i % (2 * n - 2)) + 2 * n - 2) % (2 * n - 2);
        return p < n ? p : 2 * n - 2 - p;
    }
    case LUMEN_BORDER_WRAP: return ((i % n) + n) % n;
    }
    return -2;
}

static void test_border_index_by_definition(void **state)
{
    (void)state;
    for (int b = LUMEN_BORDER_REFLECT; b <= LUMEN_BORDER_WRAP; b++)
        for (int64_t n = 1; n <= 40; n++)
            for (int64_t i = -5 * n - 3; i < 6 * n + 3; i++)
                if (lumen_border_index(i, n, (lumen_border)b) !=
                    border_by_definition(i, n, (lumen_border)b))
                    fail_msg("border %d, n %lld, index %lld: %lld, want %lld", b, (long long)n,
                             (long long)i, (long long)lumen_border_index(i, n, (lumen_border)b),
                             (long long)border_by_definition(i, n, (lumen_border)b));
}

static void test_tiny_images(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{1, 1}, {1, 37}, {37, 1}, {2, 2}, {1, 700}, {3, 1}};
    static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};
    int idx = 0;
    for (int s = 0; s < TS_COUNT(shapes); s++)
        for (int o = 0; o < 4; o++)
            for (int b = 0; b < 5; b++, idx++) {
                const lumen_dtype t = dtypes[idx % 3];
                ts_op op = ts_with_border(small_op(o), borders[b], t == LUMEN_F32 ? 2.5f : 100.0f);
                ts_case cs =
                    ts_case_make((ts_layout)(idx % TS_LAYOUT_COUNT), t, dtypes[(idx / 3) % 3],
                                 shapes[s][0], shapes[s][1], 1 + idx % 3, idx);
                ts_check(&op, &cs);
            }
}

/* 1x1 image p: every tap sees p, except the constant border's v; so sum(k) p or k_a p + (sum(k) -
 * k_a) v. */
static void test_1x1_by_hand(void **state)
{
    (void)state;
    static const float k[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const double p = 10, v = -1;
    for (int b = 0; b < 5; b++) {
        ts_op op = ts_with_border(ts_op_filter2d(k, 3, 3), borders[b], (float)v);
        const double want = borders[b] == LUMEN_BORDER_CONSTANT ? 5 * p + 40 * v : 45 * p;
        ts_expect(&op, LUMEN_F32, 1, 1, &p, &want, 0.0, "1x1 image, 3x3 kernel 1..9");
        op.opt.anchor_x = 0, op.opt.anchor_y = 2; /* the tap over the pixel is k[2][0] = 7 */
        const double want2 = borders[b] == LUMEN_BORDER_CONSTANT ? 7 * p + 38 * v : 45 * p;
        ts_expect(&op, LUMEN_F32, 1, 1, &p, &want2, 0.0, "1x1 image, anchor (0,2)");
    }
}

/* 9x9 image, 31x31 kernels (and 31-tap separable ones): every border, every op. */
static void test_kernel_larger_than_image(void **state)
{
    (void)state;
    int idx = 0;
    for (int b = 0; b < 5; b++)
        for (int o = 0; o < 4; o++, idx++) {
            ts_op op = o == 0   ? ts_op_filter2d(k31, 31, 31)
                       : o == 1 ? ts_op_sep(kx31, 31, ky31, 31)
                       : o == 2 ? ts_op_gaussian(31, 31, 6.0, 0.0)
                                : ts_op_box(31, 31, idx % 2);
            op = ts_with_border(op, borders[b], 42.0f);
            const lumen_dtype t = idx % 3 == 0 ? LUMEN_U8 : idx % 3 == 1 ? LUMEN_F32 : LUMEN_U16;
            ts_case cs = ts_case_make(idx % 2 ? TS_PLANAR : TS_INTERLEAVED, t,
                                      op.kind == TS_OP_BOX && !op.normalize ? LUMEN_F32 : t, 9, 9,
                                      1 + idx % 3, 50 + idx);
            ts_check(&op, &cs);
            cs.h = 2, cs.w = 3; /* and far larger: 15x the image */
            ts_check(&op, &cs);
        }
}

/* reflect101 on a width-1 (height-1) image reflects onto the pixel: out = sum(k) * p. */
static void test_reflect101_single_pixel(void **state)
{
    (void)state;
    static const float k[5] = {1, 2, 3, 4, 5};
    static const double col[5] = {1, 2, 3, 4, 5}, want[5] = {15, 30, 45, 60, 75};
    ts_op op = ts_with_border(ts_op_filter2d(k, 5, 1), LUMEN_BORDER_REFLECT101, 0.0f);
    ts_expect(&op, LUMEN_U8, 5, 1, col, want, 0.0, "reflect101, width 1, 5x1 kernel");
    op = ts_with_border(ts_op_filter2d(k, 1, 5), LUMEN_BORDER_REFLECT101, 0.0f);
    ts_expect(&op, LUMEN_F32, 1, 5, col, want, 0.0, "reflect101, height 1, 1x5 kernel");
    op = ts_with_border(ts_op_sep(k, 5, k, 5), LUMEN_BORDER_REFLECT101, 0.0f);
    const double one = 3, one_want = 675;
    ts_expect(&op, LUMEN_U16, 1, 1, &one, &one_want, 0.0, "reflect101, 1x1, sep 5x5");
    /* width 2: period 2 (abab|ab|abab); kernel [1 10 100 1000 10000] centred. */
    static const float p[5] = {1, 10, 100, 1000, 10000};
    static const double two[2] = {1, 2}, two_want[2] = {12121, 21212};
    op = ts_with_border(ts_op_filter2d(p, 5, 1), LUMEN_BORDER_REFLECT101, 0.0f);
    ts_expect(&op, LUMEN_F32, 1, 2, two, two_want, 0.0, "reflect101, width 2");
}

/* Interleaved rows of 2..16 channels are filtered packed, 17 are not: every op, both. */
static void test_channel_counts(void **state)
{
    (void)state;
    static const int64_t channels[] = {2, 4, 5, 16, 17};
    int idx = 0;
    for (int c = 0; c < TS_COUNT(channels); c++)
        for (int o = 0; o < 4; o++, idx++) {
            ts_op op = ts_with_border(small_op(o), borders[idx % 5], 60.0f);
            const ts_layout l = idx % 2 ? TS_STRIDED_HWC : TS_INTERLEAVED;
            const lumen_dtype t = idx % 3 == 0 ? LUMEN_F32 : idx % 3 == 1 ? LUMEN_U8 : LUMEN_U16;
            ts_case cs = ts_case_make(l, t, idx % 4 == 1 ? LUMEN_F32 : t, 11, 45, 1 + idx % 3, idx);
            cs.n = 1 + o % 2, cs.c = channels[c];
            ts_check(&op, &cs);
        }
    /* Packed rows cut into 256-pixel strips (a 3x301 kernel), threads 1..3. */
    static float k301[3 * 301];
    ts_random_kernel(k301, 3 * 301, 77);
    for (int threads = 1; threads <= 3; threads++) {
        ts_op op = ts_with_border(ts_op_filter2d(k301, 3, 301), borders[threads], 5.0f);
        ts_case cs = ts_case_make(TS_INTERLEAVED, LUMEN_U8, LUMEN_U8, 9, 700, threads, 3);
        cs.c = 4;
        cs.no_oracle = threads > 1;
        ts_check(&op, &cs);
    }
}

/* ---- NaN and Inf ----------------------------------------------------------- */

#define SPECIAL_H 17
#define SPECIAL_W 31
static const struct {
    int y, x;
    double v;
} specials[] = {{8, 10, NAN}, {3, 22, INFINITY}, {13, 24, -INFINITY}, {4, 5, NAN}};

static void fill_specials(ts_image *src, uint64_t seed)
{
    ts_image_fill_random(src, seed);
    for (int64_t b = 0; b < src->v.n; b++)
        for (int64_t c = 0; c < src->v.c; c++)
            for (int i = 0; i < TS_COUNT(specials); i++)
                ts_set(&src->v, b, c, specials[i].y, specials[i].x, specials[i].v);
}

/* Fast and reference agree on NaN/Inf everywhere (positive kernels; all dst dtypes). */
static void test_nan_inf_agree(void **state)
{
    (void)state;
    static const lumen_dtype dsts[] = {LUMEN_F32, LUMEN_U8, LUMEN_U16};
    static const float pos[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1.5f},
                       rank1[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    for (int o = 0; o < 5; o++)
        for (int d = 0; d < 3; d++) {
            /* direct, rank 1 (separable under auto), sep, Gaussian, box: all taps positive */
            ts_op op = o == 0   ? ts_op_filter2d(pos, 3, 3)
                       : o == 1 ? ts_op_filter2d(rank1, 3, 3)
                       : o == 2 ? ts_op_sep(pos, 3, pos + 3, 3)
                                : small_op(o - 1);
            op = ts_with_border(op, borders[(o + d) % 5], 1.0f);
            ts_case cs = ts_case_make((ts_layout)((o + d) % TS_LAYOUT_COUNT), LUMEN_F32, dsts[d],
                                      SPECIAL_H, SPECIAL_W, 1 + d, 90 + o);
            cs.fill = fill_specials;
            ts_check(&op, &cs);
        }
}

/* Class of the correlation at (y, x) with kernel K (kh x kw, anchor ax, ay) near the specials. */
static double special_class(const float *k, int kw, int kh, int ax, int ay, int y, int x)
{
    double acc = 0.0; /* finite data contribute 0 here: only the class matters */
    for (int i = 0; i < TS_COUNT(specials); i++) {
        const int ti = specials[i].y - y + ay, tj = specials[i].x - x + ax;
        if (ti >= 0 && ti < kh && tj >= 0 && tj < kw)
            acc += (double)k[ti * kw + tj] * specials[i].v;
    }
    return acc;
}

/* Direct filter2d with zero and negative taps: exactly the windows over a NaN are NaN, over an
 * Inf are +-Inf, or NaN where the tap over it is 0 (0 * Inf); everything else is finite. */
static void test_nan_inf_direct_exact(void **state)
{
    (void)state;
    static const float k[12] = {1, 0, -2, 0.5f, 3, 1, 0, 2, -1, 1, 1, 0};
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 2);
        if (!ctx) continue;
        ts_image src, dst;
        ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, SPECIAL_H, SPECIAL_W);
        ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, SPECIAL_H, SPECIAL_W);
        fill_specials(&src, 3);
        lumen_filter_options o = lumen_filter_options_default();
        o.method = LUMEN_METHOD_DIRECT;
        assert_int_equal(lumen_filter2d(ctx, &src.v, &dst.v, k, 4, 3, &o, NULL), LUMEN_OK);
        for (int y = 0; y < SPECIAL_H; y++)
            for (int x = 0; x < SPECIAL_W; x++) {
                const double want = special_class(k, 4, 3, 2, 1, y, x),
                             got = ts_get(&dst.v, 0, 0, y, x);
                const bool ok = isnan(want)   ? isnan(got)
                                : isinf(want) ? got == want
                                              : isfinite(got);
                if (!ok)
                    fail_msg("[%s] at (y=%d, x=%d): got %g, want class of %g",
                             ts_engine_name((ts_engine)e), y, x, got, want);
            }
        ts_image_free(&src), ts_image_free(&dst);
        lumen_context_destroy(ctx);
    }
}

/* ---- in place ------------------------------------------------------------- */

/* op on engine e: dst == src (same view) equals the out-of-place result exactly. */
static void check_in_place(ts_engine e, const ts_op *op, ts_layout l, lumen_dtype t, int threads)
{
    lumen_context *ctx = ts_context(e, threads);
    if (!ctx) return;
    int64_t n, c;
    ts_layout_shape(l, &n, &c);
    ts_image src, out, inplace;
    ts_image_alloc(&src, l, t, n, c, 15, 34);
    ts_image_alloc(&out, l, t, n, c, 15, 34);
    ts_image_alloc(&inplace, l, t, n, c, 15, 34);
    ts_image_fill_random(&src, 5);
    ts_image_fill_random(&inplace, 5);
    assert_int_equal(ts_op_run(ctx, op, &src.v, &out.v, NULL), LUMEN_OK);
    assert_int_equal(ts_op_run(ctx, op, &inplace.v, &inplace.v, NULL), LUMEN_OK);
    char label[320], o[200];
    snprintf(label, sizeof label, "in place: %s %s %s [%s]", ts_op_describe(op, o, sizeof o),
             ts_layout_name(l), lumen_dtype_name(t), ts_engine_name(e));
    ts_assert_equal_images(&inplace.v, &out.v, label);
    char msg[256];
    if (!ts_guards_intact(&inplace, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
    ts_image_free(&src), ts_image_free(&out), ts_image_free(&inplace);
    lumen_context_destroy(ctx);
}

static void test_in_place(void **state)
{
    (void)state;
    static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};
    int idx = 0;
    for (int o = 0; o < 4; o++)
        for (int l = 0; l < TS_LAYOUT_COUNT; l++, idx++) {
            ts_op op = ts_with_border(small_op(o), borders[idx % 5], 7.0f);
            for (int e = 0; e < TS_ENGINE_COUNT; e++)
                check_in_place((ts_engine)e, &op, (ts_layout)l, dtypes[idx % 3], 1 + idx % 3);
        }
}

/* dst overlaps src without being it (dst is src moved down one row in one buffer). */
static void test_overlapping_views(void **state)
{
    (void)state;
    const int64_t h = 12, w = 40;
    for (int o = 0; o < 4; o++)
        for (int e = 0; e < TS_ENGINE_COUNT; e++) {
            lumen_context *ctx = ts_context((ts_engine)e, 2);
            if (!ctx) continue;
            ts_op op = ts_with_border(small_op(o), borders[o], 3.0f);
            float *buf = malloc(sizeof(float) * (size_t)((h + 1) * w));
            ts_image ref;
            ts_image_alloc(&ref, TS_PLANAR, LUMEN_F32, 1, 1, h, w);
            lumen_image src = lumen_image_nchw(buf, LUMEN_F32, 1, 1, h, w);
            lumen_image dst = lumen_image_nchw(buf + w, LUMEN_F32, 1, 1, h, w);
            ts_rng r = ts_rng_make(9);
            for (int64_t i = 0; i < (h + 1) * w; i++)
                buf[i] = (float)ts_rng_uniform(&r, 0, 100);
            assert_int_equal(ts_op_run(ctx, &op, &src, &ref.v, NULL), LUMEN_OK);
            assert_int_equal(ts_op_run(ctx, &op, &src, &dst, NULL), LUMEN_OK);
            char label[64];
            snprintf(label, sizeof label, "overlapping views, op %d [%s]", o,
                     ts_engine_name((ts_engine)e));
            ts_assert_equal_images(&dst, &ref.v, label);
            free(buf);
            ts_image_free(&ref);
            lumen_context_destroy(ctx);
        }
}

/* ---- saturation and rounding --------------------------------------------- */

/* Every engine: op over a 9x40 plane of `fill` values in dtype t gives `want` everywhere. */
static void expect_everywhere(lumen_dtype t, lumen_dtype dt, const float *k, int kw, int kh,
                              double fill, double want)
{
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 1);
        if (!ctx) continue;
        ts_image src, dst;
        ts_image_alloc(&src, TS_PLANAR, t, 1, 1, 9, 40);
        ts_image_alloc(&dst, TS_PLANAR, dt, 1, 1, 9, 40);
        for (int y = 0; y < 9; y++)
            for (int x = 0; x < 40; x++)
                ts_set(&src.v, 0, 0, y, x, fill);
        assert_int_equal(lumen_filter2d(ctx, &src.v, &dst.v, k, kw, kh, NULL, NULL), LUMEN_OK);
        for (int y = 0; y < 9; y++)
            for (int x = 0; x < 40; x++)
                if (ts_get(&dst.v, 0, 0, y, x) != want)
                    fail_msg("%s -> %s, fill %g [%s] at (%d, %d): got %g, want %g",
                             lumen_dtype_name(t), lumen_dtype_name(dt), fill,
                             ts_engine_name((ts_engine)e), y, x, ts_get(&dst.v, 0, 0, y, x), want);
        ts_image_free(&src), ts_image_free(&dst);
        lumen_context_destroy(ctx);
    }
}

static void test_saturation(void **state)
{
    (void)state;
    static const float three[9] = {1.0f / 3, 1.0f / 3, 1.0f / 3, 1.0f / 3, 1.0f / 3,
                                   1.0f / 3, 1.0f / 3, 1.0f / 3, 1.0f / 3};
    static const float neg[9] = {0, 0, 0, 0, -1, 0, 0, 0, 0}, big[1] = {1e10f},
                       minus_big[1] = {-1e10f};
    expect_everywhere(LUMEN_U8, LUMEN_U8, three, 3, 3, 200, 255);
    expect_everywhere(LUMEN_U8, LUMEN_U8, neg, 3, 3, 200, 0);
    expect_everywhere(LUMEN_U16, LUMEN_U16, three, 3, 3, 30000, 65535);
    expect_everywhere(LUMEN_U16, LUMEN_U16, neg, 3, 3, 30000, 0);
    expect_everywhere(LUMEN_U8, LUMEN_U16, three, 3, 3, 255, 765);
    expect_everywhere(LUMEN_U16, LUMEN_U8, three, 3, 3, 300, 255);
    /* Beyond the int32 range: saturates (docs/semantics.md), no wrap. */
    expect_everywhere(LUMEN_U8, LUMEN_U8, big, 1, 1, 1, 255);
    expect_everywhere(LUMEN_U16, LUMEN_U16, big, 1, 1, 1, 65535);
    expect_everywhere(LUMEN_U8, LUMEN_U8, minus_big, 1, 1, 1, 0);
    expect_everywhere(LUMEN_F32, LUMEN_U8, big, 1, 1, 1e30, 255);
    expect_everywhere(LUMEN_F32, LUMEN_U16, big, 1, 1, -1e30, 0);
}

/* f32 -> u8/u16 rounding, ties to even, on 64-wide rows (the AVX2 stores run on 32/16 lanes). */
static void test_rounding_ties_even(void **state)
{
    (void)state;
    static const double in[8] = {0.5, 1.5, 2.5, 254.5, 255.5, -0.5, -0.6, 253.49};
    static const double u8[8] = {0, 2, 2, 254, 255, 0, 0, 253};
    static const double in16[8] = {3.5, 65534.5, 65535.5, 70000, 4.5, 0.49, 1e9, 100.5};
    static const double u16[8] = {4, 65534, 65535, 65535, 4, 0, 65535, 100};
    static const float one[1] = {1.0f};
    for (int e = 0; e < TS_ENGINE_COUNT; e++) {
        lumen_context *ctx = ts_context((ts_engine)e, 1);
        if (!ctx) continue;
        float s8[64], s16[64];
        uint8_t d8[64];
        uint16_t d16[64];
        for (int i = 0; i < 64; i++)
            s8[i] = (float)in[i % 8], s16[i] = (float)in16[i % 8];
        lumen_image a = lumen_image_nchw(s8, LUMEN_F32, 1, 1, 1, 64),
                    b = lumen_image_nchw(d8, LUMEN_U8, 1, 1, 1, 64);
        lumen_image c = lumen_image_nchw(s16, LUMEN_F32, 1, 1, 1, 64),
                    d = lumen_image_nchw(d16, LUMEN_U16, 1, 1, 1, 64);
        assert_int_equal(lumen_filter2d(ctx, &a, &b, one, 1, 1, NULL, NULL), LUMEN_OK);
        assert_int_equal(lumen_filter2d(ctx, &c, &d, one, 1, 1, NULL, NULL), LUMEN_OK);
        for (int i = 0; i < 64; i++)
            if (d8[i] != u8[i % 8] || d16[i] != u16[i % 8])
                fail_msg("[%s] element %d: u8 %d (want %g from %g), u16 %d (want %g from %g)",
                         ts_engine_name((ts_engine)e), i, d8[i], u8[i % 8], in[i % 8], d16[i],
                         u16[i % 8], in16[i % 8]);
        lumen_context_destroy(ctx);
    }
}

/* ---- threads --------------------------------------------------------------- */

/* More threads than rows or planes; threads 0 restores the default. */
static void test_threads(void **state)
{
    (void)state;
    for (int h = 1; h <= 4; h++) {
        ts_op op = ts_op_filter2d(k3x3, 3, 3);
        ts_case cs = ts_case_make(TS_PLANAR, LUMEN_U8, LUMEN_U8, h, 50, 3, h);
        ts_check(&op, &cs);
        op = ts_op_sep(kx5, 5, ky3, 3);
        cs.threads = 2;
        ts_check(&op, &cs);
    }
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_true(lumen_context_threads(ctx) >= 1);
    assert_int_equal(lumen_context_set_threads(ctx, 3), LUMEN_OK);
    assert_int_equal(lumen_context_threads(ctx), 3);
    assert_int_equal(lumen_context_set_threads(ctx, 0), LUMEN_OK);
    assert_true(lumen_context_threads(ctx) >= 1);
    lumen_context_destroy(ctx);
}

/*
 * Direct and separable results do not depend on the thread count (docs/semantics.md): band
 * edges move with it, so every row of a band must sum in the same order. Symmetric column
 * kernels of 9+ taps once differed by an ulp at band edges (four-row pass vs single rows).
 */
static void test_same_bits_any_thread_count(void **state)
{
    (void)state;
    const ts_op ops[] = {ts_op_gaussian(0, 0, 1.7, 1.7), ts_op_gaussian(0, 0, 5.0, 2.0),
                         ts_op_filter2d(k3x3, 3, 3)};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        ts_image src, one, many;
        ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_F32, 1, 3, 203, 301);
        ts_image_alloc(&one, TS_INTERLEAVED, LUMEN_F32, 1, 3, 203, 301);
        ts_image_alloc(&many, TS_INTERLEAVED, LUMEN_F32, 1, 3, 203, 301);
        ts_image_fill_random(&src, 7 + i);
        for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++)
            for (int threads = 2; threads <= 5; threads++) {
                lumen_context *c1 = ts_context((ts_engine)e, 1);
                lumen_context *cn = ts_context((ts_engine)e, threads);
                if (c1 && cn) {
                    assert_int_equal(ts_op_run(c1, &ops[i], &src.v, &one.v, NULL), LUMEN_OK);
                    assert_int_equal(ts_op_run(cn, &ops[i], &src.v, &many.v, NULL), LUMEN_OK);
                    ts_assert_equal_images(&many.v, &one.v, "threads n vs 1");
                }
                lumen_context_destroy(c1);
                lumen_context_destroy(cn);
            }
        ts_image_free(&src);
        ts_image_free(&one);
        ts_image_free(&many);
    }
}

/*
 * The AVX-512 row kernels sum every lane's taps in the AVX2 kernels' order, so both give the
 * same bits (docs/semantics.md): direct (one and two rows), separable with the one- and
 * four-row column passes, box and the FFT, on widths that end in every kind of tail, planar
 * and interleaved, f32 and u8 (stores). Skipped where the CPU lacks AVX-512.
 */
static void test_same_bits_avx2_avx512(void **state)
{
    (void)state;
    float k7[49];
    ts_random_kernel(k7, 49, 17);
    const float kx[5] = {0.1f, -0.7f, 1.3f, 0.4f, 0.2f}, ky[3] = {0.5f, 1.5f, -0.25f};
    ts_op ops[] = {ts_op_filter2d(k3x3, 3, 3), ts_op_filter2d(k7, 7, 7), ts_op_sep(kx, 5, ky, 3),
                   ts_op_gaussian(0, 0, 3.0, 2.0), ts_op_box(5, 3, 1), ts_op_filter2d(k7, 7, 7)};
    ops[5].opt.method = LUMEN_METHOD_FFT;
    const int64_t widths[] = {1, 15, 16, 17, 63, 64, 65, 130};
    const ts_layout layouts[] = {TS_PLANAR, TS_INTERLEAVED};
    /* f16/bf16: the kernels that widen and round halves in registers (direct_rows_half,
     * hfilter_half, vfilter*_half) take the runs of 64 pixels and more (w 65, 130). */
    const lumen_dtype dtypes[] = {LUMEN_F32, LUMEN_U8, LUMEN_F16, LUMEN_BF16};
    lumen_context *c2 = ts_context(TS_AVX2, 2), *c5 = ts_context(TS_AVX512, 2);
    for (int i = 0; c2 && c5 && i < TS_COUNT(ops); i++)
        for (int wi = 0; wi < TS_COUNT(widths); wi++)
            for (int li = 0; li < TS_COUNT(layouts); li++)
                for (int di = 0; di < TS_COUNT(dtypes); di++) {
                    ts_image src, a, b;
                    const lumen_dtype t = dtypes[di];
                    ts_image_alloc(&src, layouts[li], t, 1, 3, 37, widths[wi]);
                    ts_image_alloc(&a, layouts[li], t, 1, 3, 37, widths[wi]);
                    ts_image_alloc(&b, layouts[li], t, 1, 3, 37, widths[wi]);
                    ts_image_fill_random(&src, 11 + wi);
                    assert_int_equal(ts_op_run(c2, &ops[i], &src.v, &a.v, NULL), LUMEN_OK);
                    assert_int_equal(ts_op_run(c5, &ops[i], &src.v, &b.v, NULL), LUMEN_OK);
                    char label[160], d[96];
                    snprintf(label, sizeof label, "avx512 vs avx2: %s, w %lld, %s, %s",
                             ts_op_describe(&ops[i], d, sizeof d), (long long)widths[wi],
                             ts_layout_name(layouts[li]), lumen_dtype_name(t));
                    ts_assert_equal_images(&b.v, &a.v, label);
                    ts_image_free(&src), ts_image_free(&a), ts_image_free(&b);
                }
    lumen_context_destroy(c2);
    lumen_context_destroy(c5);
}

/* ts_set's image of src with every value of dtype t (exact for halves, which f32 holds). */
static void copy_values(const ts_image *from, ts_image *to)
{
    const lumen_image *v = &from->v;
    for (int64_t b = 0; b < v->n; b++)
        for (int64_t c = 0; c < v->c; c++)
            for (int64_t y = 0; y < v->h; y++)
                for (int64_t x = 0; x < v->w; x++)
                    ts_set(&to->v, b, c, y, x, ts_get(v, b, c, y, x));
}

/*
 * The f16/bf16 promise: a half image filters to the bits of its f32 widening filtered in f32
 * and rounded to nearest even (what the engine did through conversion passes before its
 * kernels read and wrote halves themselves), on every ISA, for the fused runs (w >= 65) and the
 * copied edges alike, with half-to-f32 and f32-to-half outputs too. The comparison is exact;
 * mutation check: rounding a fused f16 store toward zero, or widening one row's taps with a
 * wrong shift, fails it.
 */
static void test_half_same_bits_as_f32_path(void **state)
{
    (void)state;
    float k7[49];
    ts_random_kernel(k7, 49, 23);
    const float kx[5] = {0.1f, -0.7f, 1.3f, 0.4f, 0.2f}, ky[3] = {0.5f, 1.5f, -0.25f};
    const ts_op ops[] = {ts_op_filter2d(k3x3, 3, 3),
                         ts_op_filter2d(k7, 7, 7),
                         ts_with_border(ts_op_filter2d(k3x3, 3, 3), LUMEN_BORDER_CONSTANT, 0.1f),
                         ts_op_sep(kx, 5, ky, 3),
                         ts_op_gaussian(7, 7, 1.2, 1.2),
                         ts_op_box(5, 5, 1)};
    const ts_engine engines[] = {TS_GENERIC, TS_AVX2, TS_AVX512};
    const ts_layout layouts[] = {TS_PLANAR, TS_INTERLEAVED};
    const lumen_dtype halves[] = {LUMEN_F16, LUMEN_BF16};
    const int64_t widths[] = {17, 65, 130};
    for (int ei = 0; ei < TS_COUNT(engines); ei++) {
        lumen_context *ctx = ts_context(engines[ei], 2);
        for (int i = 0; ctx && i < TS_COUNT(ops); i++)
            for (int li = 0; li < TS_COUNT(layouts); li++)
                for (int hi = 0; hi < TS_COUNT(halves); hi++)
                    for (int wi = 0; wi < TS_COUNT(widths); wi++) {
                        const lumen_dtype t = halves[hi];
                        const ts_layout l = layouts[li];
                        const int64_t w = widths[wi];
                        ts_image h, f, hh, hf, fh, ff, want;
                        ts_image_alloc(&h, l, t, 1, 3, 29, w);
                        ts_image_alloc(&f, l, LUMEN_F32, 1, 3, 29, w);
                        ts_image_alloc(&hh, l, t, 1, 3, 29, w);
                        ts_image_alloc(&hf, l, LUMEN_F32, 1, 3, 29, w);
                        ts_image_alloc(&fh, l, t, 1, 3, 29, w);
                        ts_image_alloc(&ff, l, LUMEN_F32, 1, 3, 29, w);
                        ts_image_alloc(&want, l, t, 1, 3, 29, w);
                        ts_image_fill_random(&h, 31 + wi);
                        copy_values(&h, &f);
                        assert_int_equal(ts_op_run(ctx, &ops[i], &f.v, &ff.v, NULL), LUMEN_OK);
                        assert_int_equal(ts_op_run(ctx, &ops[i], &h.v, &hh.v, NULL), LUMEN_OK);
                        assert_int_equal(ts_op_run(ctx, &ops[i], &h.v, &hf.v, NULL), LUMEN_OK);
                        assert_int_equal(ts_op_run(ctx, &ops[i], &f.v, &fh.v, NULL), LUMEN_OK);
                        copy_values(&ff, &want); /* rounds to nearest even */
                        char label[200], d[96];
                        snprintf(label, sizeof label, "%s: %s, w %lld, %s, %s",
                                 ts_engine_name(engines[ei]), ts_op_describe(&ops[i], d, sizeof d),
                                 (long long)w, ts_layout_name(l), lumen_dtype_name(t));
                        ts_assert_equal_images(&hh.v, &want.v, label);
                        ts_assert_equal_images(&hf.v, &ff.v, label);
                        ts_assert_equal_images(&fh.v, &want.v, label);
                        ts_image_free(&h), ts_image_free(&f), ts_image_free(&hh);
                        ts_image_free(&hf), ts_image_free(&fh), ts_image_free(&ff);
                        ts_image_free(&want);
                    }
        lumen_context_destroy(ctx);
    }
}

/*
 * The AVX-512 direct kernel's square 3x3/5x5/7x7 instances (planar rows, blocks of four rows
 * and 64 columns, each tap's vector shifted in registers), and the separable passes' 3-, 5- and
 * 7-tap ones (row pass shifted the same way, column pass unrolled), give the bits of the AVX2 set
 * (the generic one does not fuse its multiply-adds: docs/semantics.md): every border, widths with
 * whole blocks and odd tails (130, 203), heights that end bands in one-, two- and three-row steps,
 * f32 and the fused f16/bf16 rows. Mutation check: shifting a tap by one lane too few, or dropping
 * the fifth vector's last lane, fails.
 */
static void test_direct_square_blocks(void **state)
{
    (void)state;
    float k[49];
    ts_random_kernel(k, 49, 29);
    const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                    LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                    LUMEN_BORDER_WRAP};
    const lumen_dtype dtypes[] = {LUMEN_F32, LUMEN_F16, LUMEN_BF16};
    const int64_t widths[] = {130, 203}, heights[] = {21, 23};
    const ts_engine others[] = {TS_AVX2};
    lumen_context *c5 = ts_context(TS_AVX512, 2);
    for (int ks = 3; c5 && ks <= 7; ks += 2)
        for (int bi = 0; bi < TS_COUNT(borders); bi++)
            for (int di = 0; di < TS_COUNT(dtypes); di++)
                for (int wi = 0; wi < 2 * TS_COUNT(widths); wi++) {
                    const bool sep = wi >= TS_COUNT(widths); /* the separable passes' instances */
                    ts_op op = ts_with_border(sep ? ts_op_sep(k, ks, k + 7, ks)
                                                  : ts_op_filter2d(k, ks, ks),
                                              borders[bi], 0.3f);
                    if (!sep) op.opt.method = LUMEN_METHOD_DIRECT;
                    const int64_t w = widths[wi % TS_COUNT(widths)],
                                  h = heights[wi % TS_COUNT(widths)];
                    ts_image src, want, got;
                    ts_image_alloc(&src, TS_PLANAR, dtypes[di], 1, 2, h, w);
                    ts_image_alloc(&want, TS_PLANAR, dtypes[di], 1, 2, h, w);
                    ts_image_alloc(&got, TS_PLANAR, dtypes[di], 1, 2, h, w);
                    ts_image_fill_random(&src, 41 + (uint64_t)wi);
                    assert_int_equal(ts_op_run(c5, &op, &src.v, &want.v, NULL), LUMEN_OK);
                    for (int ei = 0; ei < TS_COUNT(others); ei++) {
                        lumen_context *c = ts_context(others[ei], 2);
                        if (!c) continue;
                        assert_int_equal(ts_op_run(c, &op, &src.v, &got.v, NULL), LUMEN_OK);
                        char label[200], d[96];
                        snprintf(label, sizeof label, "avx512 vs %s: %s, w %lld, %s",
                                 ts_engine_name(others[ei]), ts_op_describe(&op, d, sizeof d),
                                 (long long)w, lumen_dtype_name(dtypes[di]));
                        ts_assert_equal_images(&want.v, &got.v, label);
                        lumen_context_destroy(c);
                    }
                    ts_image_free(&src), ts_image_free(&want), ts_image_free(&got);
                }
    lumen_context_destroy(c5);
}

/* A kernel of zeros gives zeros (auto cannot factor it). */
static void test_zero_kernel(void **state)
{
    (void)state;
    static const float zero[6] = {0};
    expect_everywhere(LUMEN_U8, LUMEN_U8, zero, 3, 2, 77, 0);
    expect_everywhere(LUMEN_F32, LUMEN_F32, zero, 2, 3, -5, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_border_index_by_definition),
        cmocka_unit_test(test_tiny_images),
        cmocka_unit_test(test_1x1_by_hand),
        cmocka_unit_test(test_kernel_larger_than_image),
        cmocka_unit_test(test_reflect101_single_pixel),
        cmocka_unit_test(test_channel_counts),
        cmocka_unit_test(test_nan_inf_agree),
        cmocka_unit_test(test_nan_inf_direct_exact),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_overlapping_views),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_rounding_ties_even),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_same_bits_any_thread_count),
        cmocka_unit_test(test_same_bits_avx2_avx512),
        cmocka_unit_test(test_half_same_bits_as_f32_path),
        cmocka_unit_test(test_direct_square_blocks),
        cmocka_unit_test(test_zero_kernel),
    };
    return cmocka_run_group_tests(tests, setup_kernels, NULL);
}
