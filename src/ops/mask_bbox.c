/* lumen_mask_bbox: the bounding box of a mask's foreground (any channel > threshold), one per
 * image, half-open, empty (all 0) where there is none, as MONAI's generate_spatial_bounding_box
 * gives it (docs/crop.md). A reduction over host views, done here in the op layer: it reads
 * the fewest pixels it can (the first and last rows with foreground, then only the columns left
 * and right of the box found so far), so a large object costs far less than a full pass. */
#include "crop_common.h"
#include "semantics.h"

#include <math.h>
#include <string.h>

/* Below this many elements per image, one thread scans it whole (threads cost more). */
#define BAND_MIN_ELEMENTS ((int64_t)1 << 18)
/* More bands than this would not scan faster (memory bound), and their boxes live on the stack. */
#define MAX_BANDS 64

/* A mask and its threshold in the form each dtype compares fastest. */
typedef struct mask_scan {
    const lumen_image *m;
    const char *base; /* image b's data, bytes */
    size_t es;
    int64_t ithr; /* u8/u16: foreground iff v > ithr (floor of the threshold, exact) */
    float fthr;   /* f32: foreground iff v > fthr, in float32 as NumPy and PyTorch compare */
    double thr;   /* other dtypes: through lumen_load_px */
    int kind;     /* ROW_*: how a row's elements lie */
} mask_scan;

static int fg_u8(const mask_scan *s, const uint8_t *p)
{
    for (int64_t c = 0; c < s->m->c; c++)
        if (p[c * s->m->stride_c] > s->ithr) return 1;
    return 0;
}

static int fg_u16(const mask_scan *s, const uint16_t *p)
{
    for (int64_t c = 0; c < s->m->c; c++)
        if (p[c * s->m->stride_c] > s->ithr) return 1;
    return 0;
}

static int fg_f32(const mask_scan *s, const float *p)
{
    for (int64_t c = 0; c < s->m->c; c++)
        if (p[c * s->m->stride_c] > s->fthr) return 1; /* NaN: never */
    return 0;
}

static int fg_any(const mask_scan *s, const char *p)
{
    for (int64_t c = 0; c < s->m->c; c++)
        if (lumen_load_px(p + c * s->m->stride_c * (int64_t)s->es, s->m->dtype) > s->thr) return 1;
    return 0;
}

/* Whether pixel (y, x) of the current image is foreground. */
static int fg(const mask_scan *s, int64_t y, int64_t x)
{
    const int64_t off = y * s->m->stride_h + x * s->m->stride_w;
    switch (s->m->dtype) {
    case LUMEN_U8: return fg_u8(s, (const uint8_t *)s->base + off);
    case LUMEN_U16: return fg_u16(s, (const uint16_t *)s->base + off);
    case LUMEN_F32: return fg_f32(s, (const float *)s->base + off);
    default: return fg_any(s, s->base + off * (int64_t)s->es);
    }
}

/* ---- runs of contiguous elements: the maximum of each block without an early exit (the
 * compiler vectorises it to pmaxub/maxps; NaN never wins `v > m`), then the exact element
 * inside the first block whose maximum passes ---- */

#define BLOCK 64

#define DEFINE_RUN_SCANS(name, type, thr_expr, lowest)                                             \
    static int64_t first_##name(const mask_scan *s, const type *p, int64_t n)                      \
    {                                                                                              \
        const type t = thr_expr;                                                                   \
        int64_t i = 0;                                                                             \
        for (; i + BLOCK <= n; i += BLOCK) {                                                       \
            type m = lowest;                                                                       \
            for (int k = 0; k < BLOCK; k++)                                                        \
                m = p[i + k] > m ? p[i + k] : m;                                                   \
            if (m > t) break;                                                                      \
        }                                                                                          \
        for (; i < n; i++)                                                                         \
            if (p[i] > t) return i;                                                                \
        return -1;                                                                                 \
    }                                                                                              \
    static int64_t last_##name(const mask_scan *s, const type *p, int64_t n)                       \
    {                                                                                              \
        const type t = thr_expr;                                                                   \
        int64_t i = n;                                                                             \
        for (; i - BLOCK >= 0; i -= BLOCK) {                                                       \
            type m = lowest;                                                                       \
            for (int k = 0; k < BLOCK; k++)                                                        \
                m = p[i - BLOCK + k] > m ? p[i - BLOCK + k] : m;                                   \
            if (m > t) break;                                                                      \
        }                                                                                          \
        for (i = i - 1; i >= 0; i--)                                                               \
            if (p[i] > t) return i;                                                                \
        return -1;                                                                                 \
    }

/* u8/u16 thresholds are in range here (run_scan handles "every value" and "none" first). */
DEFINE_RUN_SCANS(u8, uint8_t, (uint8_t)s->ithr, 0)
DEFINE_RUN_SCANS(u16, uint16_t, (uint16_t)s->ithr, 0)
DEFINE_RUN_SCANS(f32, float, s->fthr, -INFINITY)

/* The first (last = 0) or last (last = 1) element > threshold of n contiguous elements at p
 * (element offset from the image's data), or -1. */
static int64_t run_scan(const mask_scan *s, int64_t off, int64_t n, int last)
{
    if (n <= 0) return -1;
    const lumen_dtype t = s->m->dtype;
    if ((t == LUMEN_U8 || t == LUMEN_U16) && s->ithr < 0) return last ? n - 1 : 0;
    if ((t == LUMEN_U8 && s->ithr >= 255) || (t == LUMEN_U16 && s->ithr >= 65535)) return -1;
    switch (t) {
    case LUMEN_U8: {
        const uint8_t *p = (const uint8_t *)s->base + off;
        return last ? last_u8(s, p, n) : first_u8(s, p, n);
    }
    case LUMEN_U16: {
        const uint16_t *p = (const uint16_t *)s->base + off;
        return last ? last_u16(s, p, n) : first_u16(s, p, n);
    }
    default: {
        const float *p = (const float *)s->base + off;
        return last ? last_f32(s, p, n) : first_f32(s, p, n);
    }
    }
}

/* How row y's pixels lie: interleaved (a run of w * c elements), planar (c runs of w), or
 * neither (pixel by pixel). */
enum { ROW_PIXELS, ROW_INTERLEAVED, ROW_PLANAR };

static int row_kind(const lumen_image *m)
{
    if (m->dtype != LUMEN_U8 && m->dtype != LUMEN_U16 && m->dtype != LUMEN_F32) return ROW_PIXELS;
    if (m->stride_w == m->c && (m->c == 1 || m->stride_c == 1)) return ROW_INTERLEAVED;
    if (m->stride_w == 1) return ROW_PLANAR;
    return ROW_PIXELS;
}

/* The first (last = 1: last) foreground x of row y in [xa, xb), or -1. */
static int64_t row_scan(const mask_scan *s, int64_t y, int64_t xa, int64_t xb, int last)
{
    if (xb <= xa) return -1;
    const lumen_image *m = s->m;
    const int64_t row = y * m->stride_h;
    if (s->kind == ROW_INTERLEAVED) {
        const int64_t i = run_scan(s, row + xa * m->c, (xb - xa) * m->c, last);
        return i < 0 ? -1 : xa + i / m->c;
    }
    if (s->kind == ROW_PLANAR) {
        int64_t best = -1;
        for (int64_t c = 0; c < m->c; c++) {
            const int64_t i = run_scan(s, row + c * m->stride_c + xa, xb - xa, last);
            if (i >= 0 && (best < 0 || (last ? xa + i > best : xa + i < best))) best = xa + i;
        }
        return best;
    }
    if (last) {
        for (int64_t x = xb - 1; x >= xa; x--)
            if (fg(s, y, x)) return x;
    } else {
        for (int64_t x = xa; x < xb; x++)
            if (fg(s, y, x)) return x;
    }
    return -1;
}

/* The first foreground x of row y in [xa, xb) going right, or -1. */
static int64_t first_fg(const mask_scan *s, int64_t y, int64_t xa, int64_t xb)
{
    return row_scan(s, y, xa, xb, 0);
}

/* The last foreground x of row y in [xa, xb) going left, or -1. */
static int64_t last_fg(const mask_scan *s, int64_t y, int64_t xa, int64_t xb)
{
    return row_scan(s, y, xa, xb, 1);
}

/* The box of rows [ya, yb): the first row with foreground from the top, the last from the
 * bottom, and between them only the pixels outside the columns found so far. */
static lumen_box band_box(const mask_scan *s, int64_t ya, int64_t yb)
{
    const int64_t w = s->m->w;
    lumen_box b = {0, 0, 0, 0};
    int64_t top = ya, x0 = -1;
    for (; top < yb && (x0 = first_fg(s, top, 0, w)) < 0; top++)
        ;
    if (x0 < 0) return b;
    int64_t x1 = last_fg(s, top, x0, w), bottom = yb - 1;
    for (; bottom > top; bottom--) {
        const int64_t l = first_fg(s, bottom, 0, w);
        if (l < 0) continue;
        x0 = l < x0 ? l : x0;
        const int64_t r = last_fg(s, bottom, l, w);
        x1 = r > x1 ? r : x1;
        break;
    }
    for (int64_t y = top + 1; y < bottom; y++) {
        const int64_t l = first_fg(s, y, 0, x0);
        if (l >= 0) x0 = l;
        const int64_t r = last_fg(s, y, x1 + 1, w);
        if (r >= 0) x1 = r;
    }
    b = (lumen_box){x0, top, x1 + 1, bottom + 1};
    return b;
}

static void box_union(lumen_box *a, const lumen_box *b)
{
    if (lumen_box_empty(b)) return;
    if (lumen_box_empty(a)) {
        *a = *b;
        return;
    }
    a->x0 = b->x0 < a->x0 ? b->x0 : a->x0;
    a->y0 = b->y0 < a->y0 ? b->y0 : a->y0;
    a->x1 = b->x1 > a->x1 ? b->x1 : a->x1;
    a->y1 = b->y1 > a->y1 ? b->y1 : a->y1;
}

static mask_scan scan_of(const lumen_image *mask, double threshold, int64_t image)
{
    mask_scan s = {.m = mask, .es = lumen_dtype_size(mask->dtype), .thr = threshold};
    s.base = (const char *)mask->data + image * mask->stride_n * (int64_t)s.es;
    /* v > t for an integer v is v > floor(t); below -1 every value passes, above 65535 none */
    const double f = floor(threshold);
    s.ithr = f < -1.0 ? -1 : f > 65535.0 ? 65535 : (int64_t)f;
    s.fthr = (float)threshold;
    s.kind = row_kind(mask);
    return s;
}

void lumen_mask_boxes(const lumen_image *mask, double threshold, lumen_box *boxes, int threads)
{
    const int64_t n = mask->n, per_image = mask->c * mask->h * mask->w;
    /* a single large image is cut into bands of rows, one per thread; a batch by images */
    int64_t bands = n < threads && per_image >= BAND_MIN_ELEMENTS ? threads / n : 1;
    if (bands > mask->h) bands = mask->h;
    if (bands > MAX_BANDS) bands = MAX_BANDS;
    lumen_box part[MAX_BANDS];
    if (bands > 1) {
        for (int64_t b = 0; b < n; b++) {
            const mask_scan s = scan_of(mask, threshold, b);
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t k = 0; k < bands; k++)
                part[k] = band_box(&s, mask->h * k / bands, mask->h * (k + 1) / bands);
            boxes[b] = (lumen_box){0, 0, 0, 0};
            for (int64_t k = 0; k < bands; k++)
                box_union(&boxes[b], &part[k]);
        }
        return;
    }
    const int t = n * per_image >= BAND_MIN_ELEMENTS ? threads : 1;
#pragma omp parallel for num_threads(t) schedule(dynamic)
    for (int64_t b = 0; b < n; b++) {
        const mask_scan s = scan_of(mask, threshold, b);
        boxes[b] = band_box(&s, 0, mask->h);
    }
}

int lumen_box_empty(const lumen_box *box)
{
    return !box || box->x1 <= box->x0 || box->y1 <= box->y0;
}

lumen_status lumen_crop_check_host(const lumen_image *img, const char *what, const char *op)
{
    lumen_status s = lumen_image_check(img, what);
    if (s) return s;
    if (img->device)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: is in device memory; %s takes host images (a scan and a copy "
                               "run on the CPU)",
                               what, op);
    return LUMEN_OK;
}

void lumen_crop_info(const lumen_context *ctx, const char *algo, int threads, lumen_run_info *info)
{
    (void)ctx;
    if (!info) return;
    *info = (lumen_run_info){.method = LUMEN_METHOD_DIRECT,
                             .device = "cpu",
                             .isa = "generic",
                             .threads = threads,
                             .algo = algo};
}

lumen_status lumen_mask_bbox(lumen_context *ctx, const lumen_image *mask, double threshold,
                             lumen_box *boxes, lumen_run_info *info)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: NULL context");
    lumen_status s = lumen_crop_check_host(mask, "mask", "mask_bbox");
    if (s) return s;
    if (!boxes) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "boxes: NULL (wants mask->n)");
    if (isnan(threshold)) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "threshold: is NaN");
    lumen_mask_boxes(mask, threshold, boxes, ctx->threads);
    lumen_crop_info(ctx, "mask-bbox", ctx->threads, info);
    return LUMEN_OK;
}
