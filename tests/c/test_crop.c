/*
 * lumen_mask_bbox, lumen_crop_window, lumen_crop_box and lumen_crop (docs/crop.md): boxes
 * against a brute-force scan over every layout, dtype, channel count and batch; the window
 * rules by hand (MONAI's margin, allow_smaller and k_divisible, aspect, min size, clip);
 * the pad against OpenCV's borderInterpolate (ts_border_interp, a loop of its own) and against
 * lumen's own filters (a shifted delta kernel reads the same pixels outside the image); empty
 * masks, 1 x 1 images, boxes at the edges; errors that name their argument.
 */
#include "test_support.h"

#include "lumen_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};
static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};

static lumen_context *new_ctx(int threads)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, threads), LUMEN_OK);
    return ctx;
}

/* The box of image b where any channel > t, pixel by pixel. */
static lumen_box brute_box(const lumen_image *m, int64_t b, double t)
{
    lumen_box r = {0, 0, 0, 0};
    int any = 0;
    for (int64_t y = 0; y < m->h; y++)
        for (int64_t x = 0; x < m->w; x++) {
            int fg = 0;
            for (int64_t c = 0; c < m->c; c++) {
                const double v = ts_get(m, b, c, y, x);
                fg |= m->dtype == LUMEN_F32 ? (float)v > (float)t : v > t;
            }
            if (!fg) continue;
            if (!any) r = (lumen_box){x, y, x + 1, y + 1};
            any = 1;
            r.x0 = x < r.x0 ? x : r.x0, r.x1 = x + 1 > r.x1 ? x + 1 : r.x1;
            r.y0 = y < r.y0 ? y : r.y0, r.y1 = y + 1 > r.y1 ? y + 1 : r.y1;
        }
    return r;
}

static void assert_box(lumen_box got, lumen_box want, const char *what)
{
    if (got.x0 != want.x0 || got.y0 != want.y0 || got.x1 != want.x1 || got.y1 != want.y1)
        fail_msg("%s: box (%lld, %lld, %lld, %lld), expected (%lld, %lld, %lld, %lld)", what,
                 (long long)got.x0, (long long)got.y0, (long long)got.x1, (long long)got.y1,
                 (long long)want.x0, (long long)want.y0, (long long)want.x1, (long long)want.y1);
}

/* Sparse foreground: zero everywhere, then a few random pixels of one random channel set to a
 * value above the threshold 10 (and some at exactly 10, which is background). */
static void fill_sparse(ts_image *im, uint64_t seed, int count)
{
    ts_image_fill_bytes(im, 0);
    ts_rng r = ts_rng_make(seed);
    const lumen_image *v = &im->v;
    for (int64_t b = 0; b < v->n; b++)
        for (int k = 0; k < count; k++) {
            const int64_t c = ts_rng_u32(&r) % v->c, y = ts_rng_u32(&r) % v->h,
                          x = ts_rng_u32(&r) % v->w;
            ts_set(v, b, c, y, x, k % 3 == 2 ? 10.0 : 11.0 + k);
        }
}

/* Every layout (batches, strides, negative strides) x dtype x threads: the brute-force box. */
static void test_bbox_matches_brute_force(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 3; threads += 2) {
        lumen_context *ctx = new_ctx(threads);
        for (int l = 0; l < TS_LAYOUT_COUNT; l++)
            for (int d = 0; d < TS_COUNT(dtypes); d++)
                for (int count = 0; count <= 7; count += 1 + (l + d) % 3) {
                    int64_t n, c;
                    ts_layout_shape((ts_layout)l, &n, &c);
                    ts_image m;
                    ts_image_alloc(&m, (ts_layout)l, dtypes[d], n, c, 13 + l, 17 + 2 * d);
                    fill_sparse(&m, 100 * l + 10 * d + count, count);
                    lumen_box boxes[4];
                    assert_int_equal(lumen_mask_bbox(ctx, &m.v, 10.0, boxes, NULL), LUMEN_OK);
                    char what[96];
                    for (int64_t b = 0; b < n; b++) {
                        snprintf(what, sizeof what, "%s %s count %d image %lld threads %d",
                                 ts_layout_name((ts_layout)l), lumen_dtype_name(dtypes[d]), count,
                                 (long long)b, threads);
                        assert_box(boxes[b], brute_box(&m.v, b, 10.0), what);
                    }
                    char msg[128];
                    assert_true(ts_guards_intact(&m, msg, sizeof msg));
                    ts_image_free(&m);
                }
        lumen_context_destroy(ctx);
    }
}

/* A large single image is scanned in bands, one per thread: the bands' union is the box. */
static void test_bbox_bands(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 4; threads++) {
        lumen_context *ctx = new_ctx(threads);
        for (int k = 0; k < 6; k++) {
            ts_image m;
            ts_image_alloc(&m, TS_INTERLEAVED, LUMEN_U8, 1, 1, 700, 600);
            fill_sparse(&m, 7 * k + threads, k);
            lumen_box b;
            assert_int_equal(lumen_mask_bbox(ctx, &m.v, 10.0, &b, NULL), LUMEN_OK);
            assert_box(b, brute_box(&m.v, 0, 10.0), "700 x 600 bands");
            ts_image_free(&m);
        }
        lumen_context_destroy(ctx);
    }
}

static lumen_box bbox_of(lumen_context *ctx, const lumen_image *m, double t)
{
    lumen_box b = {-1, -1, -1, -1};
    assert_int_equal(lumen_mask_bbox(ctx, m, t, &b, NULL), LUMEN_OK);
    return b;
}

/* Empty masks, 1 x 1, the edges, thresholds at and past the dtype's range, NaN. */
static void test_bbox_edge_cases(void **state)
{
    (void)state;
    lumen_context *ctx = new_ctx(2);
    uint8_t px = 0;
    lumen_image one = lumen_image_nhwc(&px, LUMEN_U8, 1, 1, 1, 1);
    const lumen_box none = {0, 0, 0, 0}, all1 = {0, 0, 1, 1};
    assert_box(bbox_of(ctx, &one, 0), none, "1x1 zero");
    assert_true(lumen_box_empty(&none));
    assert_box(bbox_of(ctx, &one, -0.5), all1, "1x1 zero, threshold -0.5");
    px = 255;
    assert_box(bbox_of(ctx, &one, 254.5), all1, "1x1 255 > 254.5");
    assert_box(bbox_of(ctx, &one, 255), none, "1x1 255 > 255");
    assert_box(bbox_of(ctx, &one, 1e300), none, "1x1 255 > 1e300");

    uint16_t u16[6 * 5] = {0};
    lumen_image m16 = lumen_image_nhwc(u16, LUMEN_U16, 1, 6, 5, 1);
    u16[0] = 65535;
    assert_box(bbox_of(ctx, &m16, 0), (lumen_box){0, 0, 1, 1}, "top-left corner");
    u16[0] = 0, u16[6 * 5 - 1] = 1;
    assert_box(bbox_of(ctx, &m16, 0), (lumen_box){4, 5, 5, 6}, "bottom-right corner");
    for (int i = 0; i < 30; i++)
        u16[i] = 9;
    assert_box(bbox_of(ctx, &m16, 8.99), (lumen_box){0, 0, 5, 6}, "full mask");
    assert_box(bbox_of(ctx, &m16, 65535), none, "u16 > 65535");

    float f[3 * 4] = {0};
    lumen_image mf = lumen_image_nhwc(f, LUMEN_F32, 1, 3, 4, 1);
    f[5] = NAN, f[11] = -INFINITY;
    assert_box(bbox_of(ctx, &mf, -1e30), (lumen_box){0, 0, 4, 3}, "NaN inside, -inf outside");
    assert_box(bbox_of(ctx, &mf, 0), none, "NaN is never foreground");
    f[6] = INFINITY;
    assert_box(bbox_of(ctx, &mf, 0), (lumen_box){2, 1, 3, 2}, "+inf");
    /* float32 comparison: 0.1f is not > 0.1 in float32, as NumPy compares it */
    f[6] = 0.1f;
    assert_box(bbox_of(ctx, &mf, 0.1), none, "0.1f > 0.1 in float32");
    /* a 1-row and a 1-column image */
    uint8_t row[9] = {0, 0, 3, 0, 0, 0, 7, 0, 0};
    lumen_image r = lumen_image_nhwc(row, LUMEN_U8, 1, 1, 9, 1);
    assert_box(bbox_of(ctx, &r, 0), (lumen_box){2, 0, 7, 1}, "1 x 9");
    r = lumen_image_nhwc(row, LUMEN_U8, 1, 9, 1, 1);
    assert_box(bbox_of(ctx, &r, 0), (lumen_box){0, 2, 1, 7}, "9 x 1");
    lumen_context_destroy(ctx);
}

/* ---- the window rules ---- */

static lumen_box window(lumen_box box, int64_t h, int64_t w, const lumen_crop_options *o)
{
    lumen_box r = {0, 0, 0, 0};
    lumen_status s = lumen_crop_window(&box, h, w, o, &r);
    if (s) fail_msg("lumen_crop_window: %s", lumen_last_error());
    return r;
}

static void test_window_rules(void **state)
{
    (void)state;
    lumen_crop_options o = lumen_crop_options_default();
    const lumen_box box = {4, 3, 9, 6}; /* 5 wide, 3 high, in a 10 x 12 image */
    assert_box(window(box, 10, 12, &o), box, "defaults: the box itself");
    o.margin_x = 2, o.margin_y = 4;
    assert_box(window(box, 10, 12, &o), (lumen_box){2, -1, 11, 10}, "margin reaches outside");
    o.allow_smaller = 1;
    assert_box(window(box, 10, 12, &o), (lumen_box){2, 0, 11, 10}, "allow_smaller clips");
    o = lumen_crop_options_default();
    /* MONAI's k_divisible: 5 -> 8 (start back by floor(3 / 2) = 1), 3 -> 4 (back by 0) */
    o.k_w = 4, o.k_h = 4;
    assert_box(window(box, 10, 12, &o), (lumen_box){3, 3, 11, 7}, "k_divisible 4");
    o.k_w = 5, o.k_h = 1;
    assert_box(window(box, 10, 12, &o), box, "k already divides");
    o = lumen_crop_options_default();
    o.min_w = 8, o.min_h = 2;
    assert_box(window(box, 10, 12, &o), (lumen_box){3, 3, 11, 6}, "min size: w grows, h stays");
    o = lumen_crop_options_default();
    o.aspect = 1.0; /* 5 x 3 -> 5 x 5: h grows by 2, start back by 1 */
    assert_box(window(box, 10, 12, &o), (lumen_box){4, 2, 9, 7}, "aspect 1");
    o.aspect = 16.0 / 9.0; /* 5 x 3: 3 * 16/9 = 5.33 -> w 6 */
    assert_box(window(box, 10, 12, &o), (lumen_box){4, 3, 10, 6}, "aspect 16:9");
    const lumen_box b9 = {0, 0, 10, 9}; /* 9 * 16/9 is 16 exactly, not 17 */
    assert_box(window(b9, 9, 10, &o), (lumen_box){-3, 0, 13, 9}, "aspect 16:9 of h 9");
    /* aspect, then min size, then k: 5 x 3 -> 5 x 5 (y back 1) -> 7 x 5 (x back 1) -> 8 x 6
     * (growths of 1 move no start) */
    o.aspect = 1.0, o.min_w = 7, o.k_w = 4, o.k_h = 3;
    assert_box(window(box, 10, 12, &o), (lumen_box){3, 2, 11, 8}, "aspect + min + k");
    o = lumen_crop_options_default();
    o.outside = LUMEN_CROP_CLIP, o.min_h = 30;
    assert_box(window(box, 10, 12, &o), (lumen_box){4, 0, 9, 10}, "clip to the image");
    /* an empty box: an error naming the box, or the whole image (then the rules apply) */
    o = lumen_crop_options_default();
    const lumen_box empty = {0, 0, 0, 0};
    lumen_box r;
    assert_int_equal(lumen_crop_window(&empty, 10, 12, &o, &r), LUMEN_ERR_INVALID_ARGUMENT);
    assert_true(ts_names(lumen_last_error(), "box"));
    assert_true(strstr(lumen_last_error(), "empty") != NULL);
    o.empty = LUMEN_CROP_EMPTY_WHOLE;
    assert_box(window(empty, 10, 12, &o), (lumen_box){0, 0, 12, 10}, "empty: whole");
    o.k_w = 5;
    assert_box(window(empty, 10, 12, &o), (lumen_box){-1, 0, 14, 10}, "empty: whole, k 5");
    /* a 1 x 1 image and box */
    o = lumen_crop_options_default();
    o.min_w = o.min_h = 3;
    assert_box(window((lumen_box){0, 0, 1, 1}, 1, 1, &o), (lumen_box){-1, -1, 2, 2},
               "1x1 grown to 3x3");
}

/* ---- the copy ---- */

/* The value of window pixel (y, x) of image b with border b: by OpenCV's borderInterpolate. */
static double expected_px(const lumen_image *src, int64_t b, int64_t c, lumen_box win, int64_t y,
                          int64_t x, lumen_border br, double value)
{
    const int64_t sy = ts_border_interp(win.y0 + y, src->h, br),
                  sx = ts_border_interp(win.x0 + x, src->w, br);
    return sy < 0 || sx < 0 ? value : ts_get(src, b, c, sy, sx);
}

static void check_crop(const lumen_image *src, const lumen_image *dst, const lumen_box *wins,
                       int64_t nw, lumen_border br, double value, const char *what)
{
    for (int64_t b = 0; b < dst->n; b++)
        for (int64_t c = 0; c < dst->c; c++)
            for (int64_t y = 0; y < dst->h; y++)
                for (int64_t x = 0; x < dst->w; x++) {
                    const double want = ts_quantize(
                        expected_px(src, b, c, wins[nw == 1 ? 0 : b], y, x, br, value), dst->dtype);
                    const double got = ts_get(dst, b, c, y, x);
                    if (!(got == want))
                        fail_msg("%s: (%lld, %lld, %lld, %lld) = %g, expected %g", what,
                                 (long long)b, (long long)c, (long long)y, (long long)x, got, want);
                }
}

/* Windows inside, across every edge, larger than the image and wholly outside it, for every
 * border, layout pair and dtype pair (u16 -> u8 saturates, f32 -> u8 rounds). */
static void test_crop_box_borders(void **state)
{
    (void)state;
    static const lumen_box wins[] = {{2, 1, 7, 5},     {-3, -2, 4, 3},   {5, 6, 14, 12},
                                     {-9, -8, 20, 19}, {-30, 2, -20, 6}, {0, 0, 11, 9}};
    static const lumen_dtype pairs[][2] = {{LUMEN_U8, LUMEN_U8},   {LUMEN_U16, LUMEN_U16},
                                           {LUMEN_F32, LUMEN_F32}, {LUMEN_U16, LUMEN_U8},
                                           {LUMEN_F32, LUMEN_U8},  {LUMEN_U8, LUMEN_F32}};
    lumen_context *ctx = new_ctx(2);
    int idx = 0;
    for (int bi = 0; bi < TS_COUNT(borders); bi++)
        for (int wi = 0; wi < TS_COUNT(wins); wi++, idx++) {
            const ts_layout ls = (ts_layout)(idx % TS_LAYOUT_COUNT),
                            ld = (ts_layout)((idx / 3) % TS_LAYOUT_COUNT);
            const lumen_dtype ts = pairs[idx % TS_COUNT(pairs)][0],
                              td = pairs[idx % TS_COUNT(pairs)][1];
            int64_t n, c, n2, c2;
            ts_layout_shape(ls, &n, &c);
            ts_layout_shape(ld, &n2, &c2);
            ts_image src, dst;
            const lumen_box w = wins[wi];
            ts_image_alloc(&src, ls, ts, n, c, 9, 11);
            ts_image_fill_random(&src, (uint64_t)idx);
            ts_image_alloc(&dst, ld, td, n, c, w.y1 - w.y0, w.x1 - w.x0);
            const float value = td == LUMEN_U8 ? 300.0f : 17.5f; /* u8: saturates to 255 */
            char what[128];
            snprintf(what, sizeof what, "%s window %d %s -> %s %s %s",
                     lumen_border_name(borders[bi]), wi, ts_layout_name(ls), ts_layout_name(ld),
                     lumen_dtype_name(ts), lumen_dtype_name(td));
            if (lumen_crop_box(ctx, &src.v, &w, 1, &dst.v, borders[bi], value, NULL))
                fail_msg("%s: %s", what, lumen_last_error());
            check_crop(&src.v, &dst.v, &w, 1, borders[bi], value, what);
            char msg[128];
            assert_true(ts_guards_intact(&dst, msg, sizeof msg));
            ts_image_free(&src);
            ts_image_free(&dst);
        }
    lumen_context_destroy(ctx);
}

/* The pad is the very pixels lumen's filters read outside the image: a window shifted by (dx,
 * dy) equals filter2d with a delta kernel at that offset, in every border mode. */
static void test_pad_equals_filter_border(void **state)
{
    (void)state;
    enum { R = 6, K = 2 * R + 1 };
    lumen_context *ctx = new_ctx(1);
    for (int bi = 0; bi < TS_COUNT(borders); bi++)
        for (int d = 0; d < TS_COUNT(dtypes); d++)
            for (int shift = 0; shift < 4; shift++) {
                const int dx = shift == 0   ? -R
                               : shift == 1 ? R
                               : shift == 2 ? -2
                                            : 5,
                          dy = shift == 0   ? R - 1
                               : shift == 1 ? -R
                               : shift == 2 ? -5
                                            : 3;
                ts_image src, a, b;
                ts_image_alloc(&src, TS_INTERLEAVED, dtypes[d], 1, 3, 5, 7);
                ts_image_fill_random(&src, (uint64_t)(bi * 40 + d * 4 + shift));
                ts_image_alloc(&a, TS_INTERLEAVED, dtypes[d], 1, 3, 5, 7);
                ts_image_alloc(&b, TS_INTERLEAVED, dtypes[d], 1, 3, 5, 7);
                float k[K * K] = {0};
                k[(R + dy) * K + R + dx] = 1.0f;
                lumen_filter_options fo = lumen_filter_options_default();
                fo.border = borders[bi], fo.border_value = 9.0f, fo.method = LUMEN_METHOD_DIRECT;
                assert_int_equal(lumen_filter2d(ctx, &src.v, &a.v, k, K, K, &fo, NULL), LUMEN_OK);
                const lumen_box w = {dx, dy, dx + 7, dy + 5};
                assert_int_equal(lumen_crop_box(ctx, &src.v, &w, 1, &b.v, borders[bi], 9.0f, NULL),
                                 LUMEN_OK);
                ts_assert_equal_images(&b.v, &a.v, lumen_border_name(borders[bi]));
                ts_image_free(&src);
                ts_image_free(&a);
                ts_image_free(&b);
            }
    lumen_context_destroy(ctx);
}

/* ---- crop to a mask ---- */

static void test_crop_to_mask(void **state)
{
    (void)state;
    lumen_context *ctx = new_ctx(2);
    ts_image src, mask;
    ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_F32, 1, 3, 20, 30);
    ts_image_fill_random(&src, 5);
    ts_image_alloc(&mask, TS_PLANAR, LUMEN_U8, 1, 1, 20, 30);
    ts_image_fill_bytes(&mask, 0);
    ts_set(&mask.v, 0, 0, 2, 25, 1); /* box (25, 2, 26, 3) near the top-right corner */
    ts_set(&mask.v, 0, 0, 6, 28, 1); /* -> (25, 2, 29, 7) */
    lumen_crop_options o = lumen_crop_options_default();
    o.margin_y = 3, o.margin_x = 2, o.k_w = 8, o.border = LUMEN_BORDER_REFLECT101;
    int64_t h, w;
    assert_int_equal(lumen_crop_size(&src.v, &mask.v, &o, &h, &w), LUMEN_OK);
    /* margin: (23, -1, 31, 10) = 8 x 11; k 8 keeps 8 */
    assert_int_equal(h, 11);
    assert_int_equal(w, 8);
    ts_image dst;
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 3, h, w);
    assert_int_equal(lumen_crop(ctx, &src.v, &mask.v, &dst.v, &o, NULL), LUMEN_OK);
    const lumen_box win = {23, -1, 31, 10};
    check_crop(&src.v, &dst.v, &win, 1, LUMEN_BORDER_REFLECT101, 0, "crop to mask");
    /* clip: the window cut to the image */
    o.outside = LUMEN_CROP_CLIP;
    assert_int_equal(lumen_crop_size(&src.v, &mask.v, &o, &h, &w), LUMEN_OK);
    assert_int_equal(h, 10);
    assert_int_equal(w, 7);
    /* the wrong dst size names dst */
    assert_int_equal(lumen_crop(ctx, &src.v, &mask.v, &dst.v, &o, NULL),
                     LUMEN_ERR_INVALID_ARGUMENT);
    assert_true(ts_names(lumen_last_error(), "dst"));
    /* no mask: src is its own mask (random f32 in [-64, 192): nearly all > 0) */
    o = lumen_crop_options_default();
    o.threshold = 1e9;
    assert_int_equal(lumen_crop_size(&src.v, NULL, &o, &h, &w), LUMEN_ERR_INVALID_ARGUMENT);
    assert_true(ts_names(lumen_last_error(), "mask"));
    o.empty = LUMEN_CROP_EMPTY_WHOLE;
    assert_int_equal(lumen_crop_size(&src.v, NULL, &o, &h, &w), LUMEN_OK);
    assert_int_equal(h, 20);
    assert_int_equal(w, 30);
    ts_image_free(&dst);
    ts_image_free(&src);
    ts_image_free(&mask);
    lumen_context_destroy(ctx);
}

/* A batch: one mask for every image, or one per image with windows of one size; windows of
 * different sizes and an empty image are errors naming the mask and the image. */
static void test_crop_batch(void **state)
{
    (void)state;
    lumen_context *ctx = new_ctx(3);
    ts_image src, mask, dst;
    ts_image_alloc(&src, TS_BATCH, LUMEN_U16, 2, 2, 12, 14);
    ts_image_fill_random(&src, 9);
    ts_image_alloc(&mask, TS_INTERLEAVED, LUMEN_F32, 2, 2, 12, 14);
    ts_image_fill_bytes(&mask, 0);
    ts_set(&mask.v, 0, 1, 1, 1, 0.5); /* image 0: (1, 1, 4, 3) */
    ts_set(&mask.v, 0, 0, 2, 3, 0.5);
    ts_set(&mask.v, 1, 0, 9, 10, 2.0); /* image 1: (10, 8, 13, 10) */
    ts_set(&mask.v, 1, 1, 8, 12, 2.0);
    lumen_crop_options o = lumen_crop_options_default();
    o.border = LUMEN_BORDER_WRAP;
    int64_t h, w;
    assert_int_equal(lumen_crop_size(&src.v, &mask.v, &o, &h, &w), LUMEN_OK);
    assert_int_equal(h, 2);
    assert_int_equal(w, 3);
    ts_image_alloc(&dst, TS_FLIPPED, LUMEN_U16, 2, 2, h, w);
    assert_int_equal(lumen_crop(ctx, &src.v, &mask.v, &dst.v, &o, NULL), LUMEN_OK);
    const lumen_box wins[2] = {{1, 1, 4, 3}, {10, 8, 13, 10}};
    check_crop(&src.v, &dst.v, wins, 2, LUMEN_BORDER_WRAP, 0, "batch");
    /* margin 2 on a 3 x 2 box: 7 x 6 windows, image 1's reaching past the right edge */
    o.margin_x = o.margin_y = 2;
    ts_image_free(&dst);
    ts_image_alloc(&dst, TS_STRIDED_HWC, LUMEN_U16, 2, 2, 6, 7);
    assert_int_equal(lumen_crop(ctx, &src.v, &mask.v, &dst.v, &o, NULL), LUMEN_OK);
    const lumen_box wins2[2] = {{-1, -1, 6, 5}, {8, 6, 15, 12}};
    check_crop(&src.v, &dst.v, wins2, 2, LUMEN_BORDER_WRAP, 0, "batch, margin");
    /* windows of different sizes */
    ts_set(&mask.v, 1, 0, 0, 0, 1.0);
    assert_int_equal(lumen_crop_size(&src.v, &mask.v, &o, &h, &w), LUMEN_ERR_INVALID_ARGUMENT);
    assert_true(ts_names(lumen_last_error(), "mask"));
    assert_true(strstr(lumen_last_error(), "image 1") != NULL);
    /* image 1 empty */
    for (int64_t c = 0; c < 2; c++)
        for (int64_t y = 0; y < 12; y++)
            for (int64_t x = 0; x < 14; x++)
                ts_set(&mask.v, 1, c, y, x, 0.0);
    assert_int_equal(lumen_crop_size(&src.v, &mask.v, &o, &h, &w), LUMEN_ERR_INVALID_ARGUMENT);
    assert_true(strstr(lumen_last_error(), "image 1") != NULL);
    assert_true(strstr(lumen_last_error(), "empty") != NULL);
    /* one mask image for the whole batch */
    lumen_image first = mask.v;
    first.n = 1;
    o.margin_x = o.margin_y = 0;
    assert_int_equal(lumen_crop_size(&src.v, &first, &o, &h, &w), LUMEN_OK);
    assert_int_equal(h, 2);
    assert_int_equal(w, 3);
    ts_image_free(&dst);
    ts_image_alloc(&dst, TS_INTERLEAVED, LUMEN_U16, 2, 2, 2, 3);
    assert_int_equal(lumen_crop(ctx, &src.v, &first, &dst.v, &o, NULL), LUMEN_OK);
    check_crop(&src.v, &dst.v, wins, 1, LUMEN_BORDER_WRAP, 0, "one mask for the batch");
    ts_image_free(&dst);
    ts_image_free(&src);
    ts_image_free(&mask);
    lumen_context_destroy(ctx);
}

/* ---- errors ---- */

static void expect_error(lumen_status s, const char *word)
{
    assert_int_equal(s, LUMEN_ERR_INVALID_ARGUMENT);
    if (!ts_names(lumen_last_error(), word))
        fail_msg("message \"%s\" does not name %s", lumen_last_error(), word);
}

static void test_errors(void **state)
{
    (void)state;
    lumen_context *ctx = new_ctx(1);
    uint8_t a[4 * 5 * 3] = {0}, b[64] = {0};
    a[7] = 1;
    lumen_image src = lumen_image_nhwc(a, LUMEN_U8, 1, 4, 5, 3);
    lumen_image dst = lumen_image_nhwc(b, LUMEN_U8, 1, 1, 1, 3);
    lumen_box box, win = {0, 0, 1, 1};
    lumen_crop_options o = lumen_crop_options_default();
    expect_error(lumen_mask_bbox(NULL, &src, 0, &box, NULL), "ctx");
    expect_error(lumen_mask_bbox(ctx, NULL, 0, &box, NULL), "mask");
    expect_error(lumen_mask_bbox(ctx, &src, 0, NULL, NULL), "boxes");
    expect_error(lumen_mask_bbox(ctx, &src, NAN, &box, NULL), "threshold");
    lumen_image dev = src;
    dev.device = 1;
    expect_error(lumen_mask_bbox(ctx, &dev, 0, &box, NULL), "mask");
    expect_error(lumen_crop_box(ctx, &dev, &win, 1, &dst, LUMEN_BORDER_CONSTANT, 0, NULL), "src");
    expect_error(lumen_crop_box(ctx, &src, &win, 2, &dst, LUMEN_BORDER_CONSTANT, 0, NULL),
                 "n_windows");
    const lumen_box wide = {0, 0, 2, 1};
    expect_error(lumen_crop_box(ctx, &src, &wide, 1, &dst, LUMEN_BORDER_CONSTANT, 0, NULL),
                 "windows");
    expect_error(lumen_crop_box(ctx, &src, &win, 1, &dst, (lumen_border)9, 0, NULL), "border");
    expect_error(lumen_crop_box(ctx, &src, &win, 1, &dst, LUMEN_BORDER_CONSTANT, NAN, NULL),
                 "border_value");
    lumen_image over = lumen_image_nhwc(a + 3, LUMEN_U8, 1, 1, 1, 3);
    expect_error(lumen_crop_box(ctx, &src, &win, 1, &over, LUMEN_BORDER_CONSTANT, 0, NULL), "dst");
    lumen_image one_c = lumen_image_nhwc(b, LUMEN_U8, 1, 1, 1, 1);
    expect_error(lumen_crop_box(ctx, &src, &win, 1, &one_c, LUMEN_BORDER_CONSTANT, 0, NULL), "dst");
    lumen_image small_mask = lumen_image_nhwc(b, LUMEN_U8, 1, 4, 4, 1);
    expect_error(lumen_crop(ctx, &src, &small_mask, &dst, &o, NULL), "mask");
    o.margin_x = -1;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "margin");
    o = lumen_crop_options_default();
    o.k_h = 0;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "k_divisible");
    o = lumen_crop_options_default();
    o.aspect = NAN;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "aspect");
    o.aspect = 1e15;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "aspect");
    o = lumen_crop_options_default();
    o.margin_x = INT32_MAX;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "margin");
    o = lumen_crop_options_default();
    o.min_w = (int64_t)1 << 31, o.k_w = 3;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "k_divisible");
    o.k_w = 1; /* exactly 2^31 is allowed */
    assert_int_equal(lumen_crop_window(&win, 4, 5, &o, &box), LUMEN_OK);
    assert_int_equal(box.x1 - box.x0, (int64_t)1 << 31);
    o = lumen_crop_options_default();
    o.min_w = -2;
    expect_error(lumen_crop_window(&win, 4, 5, &o, &box), "min_size");
    o = lumen_crop_options_default();
    o.outside = LUMEN_CROP_CLIP;
    const lumen_box away = {-10, 0, -5, 2};
    expect_error(lumen_crop_window(&away, 4, 5, &o, &box), "box");
    lumen_context_destroy(ctx);
}

/* The interrupt hook stops a large crop. */
static int always(void *arg)
{
    (void)arg;
    return 1;
}

static void test_interrupt(void **state)
{
    (void)state;
    lumen_context *ctx = new_ctx(2);
    ts_image src, dst;
    ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_U8, 1, 3, 300, 400);
    ts_image_alloc(&dst, TS_INTERLEAVED, LUMEN_U8, 1, 3, 300, 400);
    ts_image_fill_random(&src, 3);
    const lumen_box w = {0, 0, 400, 300};
    assert_int_equal(lumen_context_set_interrupt(ctx, always, NULL), LUMEN_OK);
    assert_int_equal(lumen_crop_box(ctx, &src.v, &w, 1, &dst.v, LUMEN_BORDER_CONSTANT, 0, NULL),
                     LUMEN_ERR_INTERRUPTED);
    assert_int_equal(lumen_context_set_interrupt(ctx, NULL, NULL), LUMEN_OK);
    lumen_run_info info;
    assert_int_equal(lumen_crop_box(ctx, &src.v, &w, 1, &dst.v, LUMEN_BORDER_CONSTANT, 0, &info),
                     LUMEN_OK);
    ts_assert_equal_images(&dst.v, &src.v, "whole-image window");
    assert_string_equal(info.device, "cpu");
    assert_string_equal(info.algo, "crop");
    assert_int_equal(info.threads, 2);
    ts_image_free(&src);
    ts_image_free(&dst);
    lumen_context_destroy(ctx);
}

/* The descriptor: output_shape is lumen_crop_size's, invoke equals the typed call. */
static void test_descriptor(void **state)
{
    (void)state;
    const lumen_op_desc *d = lumen_op_find("crop");
    assert_non_null(d);
    lumen_context *ctx = new_ctx(1);
    ts_image src, mask;
    ts_image_alloc(&src, TS_INTERLEAVED, LUMEN_U8, 1, 3, 10, 12);
    ts_image_fill_random(&src, 1);
    ts_image_alloc(&mask, TS_INTERLEAVED, LUMEN_U8, 1, 1, 10, 12);
    ts_image_fill_bytes(&mask, 0);
    ts_set(&mask.v, 0, 0, 4, 5, 200);
    lumen_value v[16];
    lumen_op_values_init(d, v);
    v[0].given = 1, v[0].u.image = &src.v;
    v[1].given = 1, v[1].u.image = &mask.v;
    const int margin = lumen_op_arg_index(d, "margin"), k = lumen_op_arg_index(d, "k_divisible"),
              border = lumen_op_arg_index(d, "border");
    v[margin].given = 1, v[margin].u.pair[0] = 1, v[margin].u.pair[1] = 2;
    v[k].given = 1, v[k].u.pair[0] = 4, v[k].u.pair[1] = 3;
    v[border].given = 1, v[border].u.i = LUMEN_BORDER_REPLICATE;
    lumen_out_shape sh;
    assert_int_equal(lumen_op_output_shape(d, v, &sh), LUMEN_OK);
    assert_int_equal(sh.h, 4); /* 3 -> 4 */
    assert_int_equal(sh.w, 6); /* 5 -> 6 */
    assert_int_equal(sh.c, 3);
    ts_image a, b;
    ts_image_alloc(&a, TS_INTERLEAVED, LUMEN_U8, 1, 3, 4, 6);
    ts_image_alloc(&b, TS_INTERLEAVED, LUMEN_U8, 1, 3, 4, 6);
    assert_int_equal(lumen_op_invoke(d, ctx, v, &a.v, NULL), LUMEN_OK);
    lumen_crop_options o = lumen_crop_options_default();
    o.margin_y = 1, o.margin_x = 2, o.k_h = 4, o.k_w = 3, o.border = LUMEN_BORDER_REPLICATE;
    assert_int_equal(lumen_crop(ctx, &src.v, &mask.v, &b.v, &o, NULL), LUMEN_OK);
    ts_assert_equal_images(&a.v, &b.v, "descriptor vs typed call");
    ts_image_free(&a);
    ts_image_free(&b);
    ts_image_free(&src);
    ts_image_free(&mask);
    lumen_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bbox_matches_brute_force),
        cmocka_unit_test(test_bbox_bands),
        cmocka_unit_test(test_bbox_edge_cases),
        cmocka_unit_test(test_window_rules),
        cmocka_unit_test(test_crop_box_borders),
        cmocka_unit_test(test_pad_equals_filter_border),
        cmocka_unit_test(test_crop_to_mask),
        cmocka_unit_test(test_crop_batch),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_interrupt),
        cmocka_unit_test(test_descriptor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
