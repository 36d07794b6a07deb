/*
 * libFuzzer harness: crop to a mask (docs/crop.md) with parameters decoded from the input --
 * lumen_mask_bbox, lumen_crop_window, lumen_crop_size and lumen_crop on small images and masks
 * of every dtype and layout (interleaved, planar, negative strides), one mask for a batch or one
 * per image or none, every option, border and outside mode, on 1 or 2 threads.
 *
 * A case is a bug when
 *   - it crashes, or ASan/UBSan report anything (the views' buffers are exactly their extent);
 *   - a failure leaves no message, or lumen_crop_size and lumen_crop disagree on the status;
 *   - a box differs from a brute-force scan of the mask;
 *   - a cropped pixel differs from the window's pixel by OpenCV's borderInterpolate (a loop of
 *     this file's own), stored in the output's dtype.
 * About one case in eight is "hostile": margins, sizes, k, aspects, thresholds, borders and
 * masks from a list of invalid and extreme values, which must be refused with a message (or,
 * where valid after all, checked as above).
 *
 * Input layout (bytes in order; a short input reads zeros): hostile mode, dtypes, layouts,
 * shape, mask form, threshold, margins, allow_smaller, aspect, minimum sizes, k, outside,
 * border, border value, empty, threads, foreground pixels, then the data seed.
 */
#include "fuzz_util.h"

#define MAX_HW 12    /* image side */
#define MAX_PIXELS 6 /* foreground pixels set per mask image */

static lumen_context *ctx[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("OMP_WAIT_POLICY", "passive", 0);
    ctx[0] = fz_context(1, FZ_ISA_BEST, 1);
    ctx[1] = fz_context(1, FZ_ISA_BEST, 2);
    return 0;
}

static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};

/* OpenCV's borderInterpolate, by loops (not semantics.h's modulo arithmetic); -1: constant. */
static int64_t interp(int64_t p, int64_t n, lumen_border b)
{
    if (p >= 0 && p < n) return p;
    if (b == LUMEN_BORDER_CONSTANT) return -1;
    if (b == LUMEN_BORDER_REPLICATE) return p < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    while (p < 0 || p >= n) {
        if (b == LUMEN_BORDER_WRAP)
            p = p < 0 ? p + n : p - n;
        else if (b == LUMEN_BORDER_REFLECT)
            p = p < 0 ? -p - 1 : 2 * n - p - 1;
        else
            p = p < 0 ? -p : 2 * n - p - 2;
    }
    return p;
}

typedef struct fz_case {
    lumen_image src, mask;
    void *src_buf, *mask_buf;
    int has_mask;
    lumen_crop_options o;
    int threads;
    fz_layout dst_layout;
    lumen_dtype dst_dtype;
} fz_case;

static int hostile_int(fz_in *in, int valid)
{
    static const int v[] = {-1, 0, 1, 2, INT32_MAX, INT32_MIN, 1 << 30, 4097};
    return fz_pick(in, 4) ? valid : v[fz_pick(in, 8)];
}

static double hostile_real(fz_in *in, double valid)
{
    static const double v[] = {NAN, INFINITY, -INFINITY, -1.0, 1e15, 1e-300, 0.0, 3.0};
    return fz_pick(in, 4) ? valid : v[fz_pick(in, 8)];
}

static void decode_options(fz_in *in, int hostile, lumen_crop_options *o)
{
    static const double thresholds[] = {0.0, 0.5, 1.0, 200.0, -1.0, 254.5, 1e6};
    static const double aspects[] = {0.0, 1.0, 16.0 / 9.0, 0.5, 3.0, 0.1};
    *o = lumen_crop_options_default();
    o->threshold = thresholds[fz_pick(in, 7)];
    o->margin_y = fz_pick(in, 5), o->margin_x = fz_pick(in, 5);
    o->allow_smaller = fz_pick(in, 2);
    o->aspect = aspects[fz_pick(in, 6)];
    o->min_h = fz_pick(in, 3) ? 0 : fz_pick(in, 20),
    o->min_w = fz_pick(in, 3) ? 0 : fz_pick(in, 20);
    o->k_h = 1 + fz_pick(in, 7), o->k_w = 1 + fz_pick(in, 7);
    o->outside = (lumen_crop_outside)fz_pick(in, 2);
    o->border = (lumen_border)fz_pick(in, 5);
    o->border_value = (float)(fz_pick(in, 4) * 100 - 50);
    o->empty = (lumen_crop_empty)fz_pick(in, 2);
    if (!hostile) return;
    o->threshold = hostile_real(in, o->threshold);
    o->margin_y = hostile_int(in, o->margin_y), o->margin_x = hostile_int(in, o->margin_x);
    o->aspect = hostile_real(in, o->aspect);
    o->min_h = hostile_int(in, (int)o->min_h), o->min_w = hostile_int(in, (int)o->min_w);
    o->k_h = hostile_int(in, o->k_h), o->k_w = hostile_int(in, o->k_w);
    if (!fz_pick(in, 8)) o->border = (lumen_border)9;
    if (!fz_pick(in, 8)) o->outside = (lumen_crop_outside)7;
    if (!fz_pick(in, 8)) o->border_value = NAN;
}

/* A zeroed view of exactly its extent. */
static lumen_image new_view(fz_layout l, lumen_dtype t, int64_t n, int64_t c, int64_t h, int64_t w,
                            void **buf)
{
    *buf = calloc((size_t)(n * c * h * w), lumen_dtype_size(t));
    FUZZ_CHECK(*buf != NULL, "out of memory");
    return fz_view(*buf, l, t, n, c, h, w);
}

static void fill_src(fz_in *in, const lumen_image *v)
{
    const double hi = v->dtype == LUMEN_U8 ? 255 : v->dtype == LUMEN_U16 ? 65535 : 1000;
    for (int64_t b = 0; b < v->n; b++)
        for (int64_t c = 0; c < v->c; c++)
            for (int64_t y = 0; y < v->h; y++)
                for (int64_t x = 0; x < v->w; x++)
                    fz_set(v, b, c, y, x, (double)(fz_rand(in) % 1000) / 1000.0 * hi);
}

static void fill_mask(fz_in *in, const lumen_image *v)
{
    for (int64_t b = 0; b < v->n; b++) {
        const int count = fz_pick(in, MAX_PIXELS + 1);
        for (int k = 0; k < count; k++) {
            static const double vals[] = {1.0, 0.5, 200.0, 255.0};
            fz_set(v, b, fz_pick(in, (int)v->c), fz_pick(in, (int)v->h), fz_pick(in, (int)v->w),
                   vals[fz_pick(in, 4)]);
        }
    }
}

static lumen_box brute_box(const lumen_image *m, int64_t b, double t)
{
    lumen_box r = {0, 0, 0, 0};
    int any = 0;
    for (int64_t y = 0; y < m->h; y++)
        for (int64_t x = 0; x < m->w; x++) {
            int fg = 0;
            for (int64_t c = 0; c < m->c; c++) {
                const double v = fz_get(m, b, c, y, x);
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

/* Every output pixel against the window's pixel by interp(), in dst's dtype. */
static void check_pixels(const fz_case *k, const lumen_image *dst, const lumen_box *wins,
                         int64_t nw)
{
    const lumen_image *s = &k->src;
    for (int64_t b = 0; b < dst->n; b++) {
        const lumen_box *r = &wins[nw == 1 ? 0 : b];
        for (int64_t c = 0; c < dst->c; c++)
            for (int64_t y = 0; y < dst->h; y++)
                for (int64_t x = 0; x < dst->w; x++) {
                    const int64_t sy = interp(r->y0 + y, s->h, k->o.border),
                                  sx = interp(r->x0 + x, s->w, k->o.border);
                    const double want = fz_quantize(sy < 0 || sx < 0 ? (double)k->o.border_value
                                                                     : fz_get(s, b, c, sy, sx),
                                                    dst->dtype);
                    const double got = fz_get(dst, b, c, y, x);
                    FUZZ_CHECK(got == want,
                               "pixel (%lld, %lld, %lld, %lld) = %g, expected %g (window %lld "
                               "%lld %lld %lld)",
                               (long long)b, (long long)c, (long long)y, (long long)x, got, want,
                               (long long)r->x0, (long long)r->y0, (long long)r->x1,
                               (long long)r->y1);
                }
    }
}

static void run_case(fz_case *k)
{
    lumen_context *cx = ctx[k->threads - 1];
    const lumen_image *mask = k->has_mask ? &k->mask : NULL;
    int64_t h = 0, w = 0;
    lumen_status s = lumen_crop_size(&k->src, mask, &k->o, &h, &w);
    FUZZ_CHECK(s == LUMEN_OK || lumen_last_error()[0], "lumen_crop_size failed without a message");
    /* the boxes against a brute-force scan, whatever the options */
    const lumen_image *m = mask ? mask : &k->src;
    lumen_box boxes[2];
    if (!isnan(k->o.threshold)) {
        FUZZ_CHECK(lumen_mask_bbox(cx, m, k->o.threshold, boxes, NULL) == LUMEN_OK, "%s",
                   lumen_last_error());
        for (int64_t b = 0; b < m->n; b++) {
            const lumen_box want = brute_box(m, b, k->o.threshold);
            FUZZ_CHECK(!memcmp(&boxes[b], &want, sizeof want), "box of image %lld", (long long)b);
        }
    }
    void *buf;
    if (s) { /* the same refusal from lumen_crop, whatever dst's size */
        lumen_image dst = new_view(k->dst_layout, k->dst_dtype, k->src.n, k->src.c, 1, 1, &buf);
        FUZZ_CHECK(lumen_crop(cx, &k->src, mask, &dst, &k->o, NULL) != LUMEN_OK,
                   "lumen_crop ran where lumen_crop_size failed");
        FUZZ_CHECK(lumen_last_error()[0], "lumen_crop failed without a message");
        free(buf);
        return;
    }
    FUZZ_CHECK(h >= 1 && w >= 1, "window %lld x %lld", (long long)h, (long long)w);
    if (h * w > (1 << 16)) return; /* a hostile size, valid but too large to allocate here */
    lumen_image dst = new_view(k->dst_layout, k->dst_dtype, k->src.n, k->src.c, h, w, &buf);
    s = lumen_crop(cx, &k->src, mask, &dst, &k->o, NULL);
    FUZZ_CHECK(s == LUMEN_OK, "lumen_crop failed where lumen_crop_size passed: %s",
               lumen_last_error());
    lumen_box wins[2];
    for (int64_t b = 0; b < m->n; b++)
        FUZZ_CHECK(lumen_crop_window(&boxes[b], k->src.h, k->src.w, &k->o, &wins[b]) == LUMEN_OK,
                   "%s", lumen_last_error());
    check_pixels(k, &dst, wins, m->n);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size, 0};
    for (size_t i = 0; i < size; i++)
        in.rng = in.rng * 131 + data[i];
    const int hostile = fz_pick(&in, 8) == 0;
    fz_case k = {0};
    const lumen_dtype st = dtypes[fz_pick(&in, 3)], mt = dtypes[fz_pick(&in, 3)];
    k.dst_dtype = dtypes[fz_pick(&in, 3)];
    const fz_layout sl = (fz_layout)fz_pick(&in, FZ_LAYOUTS),
                    ml = (fz_layout)fz_pick(&in, FZ_LAYOUTS);
    k.dst_layout = (fz_layout)fz_pick(&in, FZ_LAYOUTS);
    const int64_t n = 1 + fz_pick(&in, 2), c = 1 + fz_pick(&in, 4), h = 1 + fz_pick(&in, MAX_HW),
                  w = 1 + fz_pick(&in, MAX_HW);
    const int form = fz_pick(&in, 4); /* 0: no mask, 1: one for the batch, 2-3: one per image */
    int64_t mh = h, mw = w;
    if (hostile && !fz_pick(&in, 4)) mh = 1 + fz_pick(&in, MAX_HW), mw = 1 + fz_pick(&in, MAX_HW);
    decode_options(&in, hostile, &k.o);
    k.threads = 1 + fz_pick(&in, 2);
    k.src = new_view(sl, st, n, c, h, w, &k.src_buf);
    fill_src(&in, &k.src);
    k.has_mask = form != 0;
    if (k.has_mask) {
        k.mask = new_view(ml, mt, form == 1 ? 1 : n, 1 + fz_pick(&in, 2), mh, mw, &k.mask_buf);
        fill_mask(&in, &k.mask);
    } else {
        /* the image is its own mask: make its foreground sparse too */
        for (int64_t b = 0; b < n; b++)
            for (int64_t ch = 0; ch < c; ch++)
                for (int64_t y = 0; y < h; y++)
                    for (int64_t x = 0; x < w; x++)
                        if (fz_rand(&in) % 8) fz_set(&k.src, b, ch, y, x, 0);
    }
    run_case(&k);
    free(k.src_buf);
    free(k.mask_buf);
    return 0;
}
