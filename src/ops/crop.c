/* lumen_crop: cut each image to the foreground of its mask, MONAI's CropForeground for the
 * parts it has (margin, allow_smaller, k_divisible) plus a minimum size, an aspect ratio and
 * clip-or-pad outside the image (docs/crop.md). A copy over host views, done in the op layer
 * (docs/architecture.md, "Adding an op"): the border rule is semantics.h's, so a pad is the
 * very pixels lumen's filters read outside an image. */
#include "crop_common.h"
#include "semantics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_ARG LUMEN_ERR_INVALID_ARGUMENT
/* The largest window side: the largest image side lumen takes (image.c's LUMEN_MAX_DIM). */
#define MAX_SIDE ((int64_t)1 << 31)
/* Below this many output elements one thread copies (threads cost more than they save). */
#define PARALLEL_MIN_ELEMENTS ((int64_t)1 << 16)

lumen_crop_options lumen_crop_options_default(void)
{
    return (lumen_crop_options){.threshold = 0.0,
                                .k_h = 1,
                                .k_w = 1,
                                .outside = LUMEN_CROP_PAD,
                                .border = LUMEN_BORDER_CONSTANT,
                                .border_value = 0.0f,
                                .empty = LUMEN_CROP_EMPTY_ERROR};
}

/* ---- the window ---- */

static lumen_status check_options(const lumen_crop_options *o)
{
    if (!o) return lumen_set_error(ERR_ARG, "opt: NULL options");
    if (isnan(o->threshold)) return lumen_set_error(ERR_ARG, "threshold: is NaN");
    if (o->margin_y < 0 || o->margin_x < 0)
        return lumen_set_error(ERR_ARG, "margin: must be >= 0, got (%d, %d)", o->margin_y,
                               o->margin_x);
    if (!(o->aspect >= 0.0 && o->aspect < INFINITY))
        return lumen_set_error(ERR_ARG,
                               "aspect: must be a finite width / height > 0 (0: any), "
                               "got %g",
                               o->aspect);
    if (o->min_h < 0 || o->min_w < 0 || o->min_h > MAX_SIDE || o->min_w > MAX_SIDE)
        return lumen_set_error(ERR_ARG, "min_size: must be 0 to 2^31, got (%lld, %lld)",
                               (long long)o->min_h, (long long)o->min_w);
    if (o->k_h < 1 || o->k_w < 1)
        return lumen_set_error(ERR_ARG, "k_divisible: must be >= 1, got (%d, %d)", o->k_h, o->k_w);
    if (o->outside != LUMEN_CROP_PAD && o->outside != LUMEN_CROP_CLIP)
        return lumen_set_error(ERR_ARG, "outside: %d is not pad or clip", (int)o->outside);
    if ((unsigned)o->border > LUMEN_BORDER_WRAP)
        return lumen_set_error(ERR_ARG, "border: unknown border mode %d", (int)o->border);
    if (!isfinite(o->border_value)) return lumen_set_error(ERR_ARG, "border_value: must be finite");
    if (o->empty != LUMEN_CROP_EMPTY_ERROR && o->empty != LUMEN_CROP_EMPTY_WHOLE)
        return lumen_set_error(ERR_ARG, "empty: %d is not error or whole", (int)o->empty);
    return LUMEN_OK;
}

/* Grows [*a, *b) to `size` around its centre: the start moves back by floor(growth / 2), as
 * MONAI's k_divisible moves it; a side already that long stays. */
static void grow(int64_t *a, int64_t *b, int64_t size)
{
    const int64_t d = size - (*b - *a);
    if (d <= 0) return;
    *a -= d / 2;
    *b = *a + size;
}

/* The smallest integer >= v, forgiving v's rounding (h * 16/9 for h = 9 is 16, not 17). */
static int64_t ceil_side(double v)
{
    return (int64_t)ceil(v - 1e-6 * (v > 1.0 ? v : 1.0));
}

static int64_t round_up(int64_t v, int64_t k)
{
    return (v + k - 1) / k * k;
}

/* A window longer than 2^31 on a side is an error naming the step that made it so. */
static lumen_status check_sides(const lumen_box *r, const char *what)
{
    if (r->x1 - r->x0 <= MAX_SIDE && r->y1 - r->y0 <= MAX_SIDE) return LUMEN_OK;
    return lumen_set_error(ERR_ARG,
                           "%s: the window would be %lld x %lld pixels (w x h), more than 2^31 "
                           "on a side",
                           what, (long long)(r->x1 - r->x0), (long long)(r->y1 - r->y0));
}

/* Grows the shorter side of r to the aspect ratio w / h. */
static lumen_status apply_aspect(lumen_box *r, double aspect)
{
    const int64_t w = r->x1 - r->x0, h = r->y1 - r->y0;
    const double want_w = (double)h * aspect, want_h = (double)w / aspect;
    if (!(want_w <= (double)MAX_SIDE && want_h <= (double)MAX_SIDE)) {
        const lumen_box big = {0, 0, (int64_t)fmin(want_w, 4.0 * MAX_SIDE),
                               (int64_t)fmin(want_h, 4.0 * MAX_SIDE)};
        return check_sides(&big, "aspect");
    }
    if ((double)w < want_w)
        grow(&r->x0, &r->x1, ceil_side(want_w));
    else if ((double)h < want_h)
        grow(&r->y0, &r->y1, ceil_side(want_h));
    return LUMEN_OK;
}

lumen_status lumen_crop_window(const lumen_box *box, int64_t h, int64_t w,
                               const lumen_crop_options *opt, lumen_box *window)
{
    lumen_status s = check_options(opt);
    if (s) return s;
    if (!box || !window) return lumen_set_error(ERR_ARG, "box: NULL box or window");
    if (h < 1 || w < 1 || h > MAX_SIDE || w > MAX_SIDE)
        return lumen_set_error(ERR_ARG,
                               "h, w: the image must be 1 to 2^31 on a side, got %lld x "
                               "%lld",
                               (long long)h, (long long)w);
    lumen_box r = *box;
    if (lumen_box_empty(&r)) {
        if (opt->empty != LUMEN_CROP_EMPTY_WHOLE)
            return lumen_set_error(ERR_ARG,
                                   "box: is empty, as a mask with no pixel above the "
                                   "threshold gives it (empty = whole takes the whole image)");
        r = (lumen_box){0, 0, w, h};
    }
    if (r.x0 < -MAX_SIDE || r.y0 < -MAX_SIDE || r.x1 > 2 * MAX_SIDE || r.y1 > 2 * MAX_SIDE)
        return lumen_set_error(ERR_ARG, "box: (%lld, %lld, %lld, %lld) is beyond 2^31 of the image",
                               (long long)r.x0, (long long)r.y0, (long long)r.x1, (long long)r.y1);
    r.x0 -= opt->margin_x, r.x1 += opt->margin_x;
    r.y0 -= opt->margin_y, r.y1 += opt->margin_y;
    if ((s = check_sides(&r, "margin"))) return s;
    if (opt->allow_smaller) {
        r.x0 = r.x0 < 0 ? 0 : r.x0, r.y0 = r.y0 < 0 ? 0 : r.y0;
        r.x1 = r.x1 > w ? w : r.x1, r.y1 = r.y1 > h ? h : r.y1;
    }
    if (opt->aspect > 0 && (s = apply_aspect(&r, opt->aspect))) return s;
    grow(&r.x0, &r.x1, opt->min_w);
    grow(&r.y0, &r.y1, opt->min_h);
    grow(&r.x0, &r.x1, round_up(r.x1 - r.x0, opt->k_w));
    grow(&r.y0, &r.y1, round_up(r.y1 - r.y0, opt->k_h));
    if ((s = check_sides(&r, "k_divisible"))) return s;
    if (opt->outside == LUMEN_CROP_CLIP) {
        r.x0 = r.x0 < 0 ? 0 : r.x0, r.y0 = r.y0 < 0 ? 0 : r.y0;
        r.x1 = r.x1 > w ? w : r.x1, r.y1 = r.y1 > h ? h : r.y1;
    }
    if (lumen_box_empty(&r)) /* a box wholly outside the image, clipped */
        return lumen_set_error(ERR_ARG,
                               "box: (%lld, %lld, %lld, %lld) lies outside the %lld x "
                               "%lld image, and outside='clip' leaves nothing",
                               (long long)box->x0, (long long)box->y0, (long long)box->x1,
                               (long long)box->y1, (long long)w, (long long)h);
    *window = r;
    return LUMEN_OK;
}

/* ---- the copy ---- */

typedef struct crop_job {
    const lumen_image *src, *dst;
    const lumen_box *windows;
    int64_t n_windows;
    lumen_border border;
    size_t ses, des;     /* element sizes */
    unsigned char *fill; /* dst->w * dst->c elements of the constant value in dst's dtype */
    int same;            /* same dtype: elements are copied as bytes */
    int interleaved;     /* both views hold a row's pixels as one run of w * c elements */
    int planar;          /* both views hold each channel's row as a run of w elements */
} crop_job;

/* One element: copied, or converted as the filters store (rounded, saturated). */
static void put(const crop_job *j, char *d, const char *s)
{
    if (!j->same)
        lumen_store_px(d, j->dst->dtype, lumen_load_px(s, j->src->dtype));
    else if (j->des == 1)
        *d = *s;
    else if (j->des == 2)
        memcpy(d, s, 2);
    else if (j->des == 4)
        memcpy(d, s, 4);
    else
        memcpy(d, s, j->des);
}

/* Output pixel x of a row: every channel from source pixel sx of srow (srow NULL: the
 * constant). */
static void put_pixel(const crop_job *j, char *drow, const char *srow, int64_t x, int64_t sx)
{
    const lumen_image *s = j->src, *d = j->dst;
    char *dp = drow + x * d->stride_w * (int64_t)j->des;
    for (int64_t c = 0; c < d->c; c++) {
        char *de = dp + c * d->stride_c * (int64_t)j->des;
        if (!srow)
            memcpy(de, j->fill, j->des);
        else
            put(j, de, srow + (sx * s->stride_w + c * s->stride_c) * (int64_t)j->ses);
    }
}

/* Output columns [x, x + len) from source columns [sx, sx + len) of srow (NULL: the constant),
 * as one memcpy per row (interleaved) or per channel row (planar) where the views allow. */
static void copy_run(const crop_job *j, char *drow, const char *srow, int64_t x, int64_t sx,
                     int64_t len)
{
    const lumen_image *s = j->src, *d = j->dst;
    const int64_t c = d->c, des = (int64_t)j->des, ses = (int64_t)j->ses;
    if (j->interleaved && (j->same || !srow)) {
        memcpy(drow + x * c * des, srow ? srow + sx * c * ses : (const char *)j->fill,
               (size_t)(len * c * des));
        return;
    }
    if (j->planar && (j->same || !srow)) {
        for (int64_t ch = 0; ch < c; ch++)
            memcpy(drow + (ch * d->stride_c + x) * des,
                   srow ? srow + (ch * s->stride_c + sx) * ses : (const char *)j->fill,
                   (size_t)(len * des));
        return;
    }
    for (int64_t k = 0; k < len; k++)
        put_pixel(j, drow, srow, x + k, sx + k);
}

/* Output columns [xa, xb) outside the image, by the border rule: runs of the constant and runs
 * of consecutive source columns (wrap's, and reflect's mirrored pixel by pixel) as copy_run's. */
static void pad_columns(const crop_job *j, char *drow, const char *srow, int64_t x0, int64_t xa,
                        int64_t xb)
{
    const int64_t w = j->src->w;
    for (int64_t x = xa, len; x < xb; x += len) {
        const int64_t sx = lumen_border_index(x0 + x, w, j->border);
        len = 1;
        if (sx < 0)
            while (x + len < xb && lumen_border_index(x0 + x + len, w, j->border) < 0)
                len++;
        else
            while (x + len < xb && lumen_border_index(x0 + x + len, w, j->border) == sx + len)
                len++;
        copy_run(j, drow, sx < 0 ? NULL : srow, x, sx, len);
    }
}

/* Output row y of image b: the source row by the border rule (or the constant), the columns
 * inside the image copied, the columns outside by the border rule too. */
static void crop_row(const crop_job *j, int64_t b, int64_t y)
{
    const lumen_image *s = j->src, *d = j->dst;
    const lumen_box *win = &j->windows[j->n_windows == 1 ? 0 : b];
    const int64_t sy = lumen_border_index(win->y0 + y, s->h, j->border);
    char *drow = (char *)d->data + (b * d->stride_n + y * d->stride_h) * (int64_t)j->des;
    const int64_t ow = d->w, x0 = win->x0;
    if (sy < 0) {
        copy_run(j, drow, NULL, 0, 0, ow);
        return;
    }
    const char *srow =
        (const char *)s->data + (b * s->stride_n + sy * s->stride_h) * (int64_t)j->ses;
    int64_t a = -x0, e = s->w - x0; /* output columns [a, e) lie inside the image */
    a = a < 0 ? 0 : a > ow ? ow : a;
    e = e < a ? a : e > ow ? ow : e;
    if (e > a) copy_run(j, drow, srow, a, x0 + a, e - a);
    pad_columns(j, drow, srow, x0, 0, a);
    pad_columns(j, drow, srow, x0, e, ow);
}

/* Copies every row, on the context's threads for a large output; polls the interrupt hook. */
static lumen_status crop_rows(lumen_context *ctx, const crop_job *j, int *threads_used)
{
    const lumen_image *d = j->dst;
    const int64_t rows = d->n * d->h;
    const int t = rows * d->w * d->c >= PARALLEL_MIN_ELEMENTS ? ctx->threads : 1;
    int stop = 0;
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int halt;
#pragma omp atomic read
        halt = stop;
        if (halt) continue;
        if ((r & 63) == 0 && lumen_interrupt_requested(ctx)) {
#pragma omp atomic write
            stop = 1;
            continue;
        }
        crop_row(j, r / d->h, r % d->h);
    }
    *threads_used = t;
    return stop ? lumen_interrupted_error() : LUMEN_OK;
}

static lumen_status check_windows(const lumen_image *src, const lumen_box *windows, int64_t nw,
                                  const lumen_image *dst)
{
    if (!windows) return lumen_set_error(ERR_ARG, "windows: NULL");
    if (nw != 1 && nw != src->n)
        return lumen_set_error(ERR_ARG, "n_windows: %lld, expected 1 or src's n = %lld",
                               (long long)nw, (long long)src->n);
    for (int64_t b = 0; b < nw; b++) {
        const lumen_box *r = &windows[b];
        if (r->x1 - r->x0 != dst->w || r->y1 - r->y0 != dst->h)
            return lumen_set_error(ERR_ARG,
                                   "windows: window %lld is %lld x %lld (w x h), dst is %lld x "
                                   "%lld",
                                   (long long)b, (long long)(r->x1 - r->x0),
                                   (long long)(r->y1 - r->y0), (long long)dst->w,
                                   (long long)dst->h);
        if (r->x0 < -MAX_SIDE || r->y0 < -MAX_SIDE || r->x0 > MAX_SIDE || r->y0 > MAX_SIDE)
            return lumen_set_error(ERR_ARG, "windows: window %lld starts beyond 2^31 of the image",
                                   (long long)b);
    }
    return LUMEN_OK;
}

static lumen_status check_pair(lumen_context *ctx, const lumen_image *src, const lumen_image *dst)
{
    if (!ctx) return lumen_set_error(ERR_ARG, "ctx: NULL context");
    lumen_status s;
    if ((s = lumen_crop_check_host(src, "src", "crop")) ||
        (s = lumen_crop_check_host(dst, "dst", "crop")))
        return s;
    if (dst->n != src->n || dst->c != src->c)
        return lumen_set_error(ERR_ARG, "dst: n = %lld, c = %lld, expected src's %lld and %lld",
                               (long long)dst->n, (long long)dst->c, (long long)src->n,
                               (long long)src->c);
    if (lumen_views_overlap(src, dst))
        return lumen_set_error(ERR_ARG, "dst: overlaps src; a crop writes into separate memory");
    return LUMEN_OK;
}

/* The copy, once everything is checked. */
static lumen_status crop_copy(lumen_context *ctx, const lumen_image *src, const lumen_box *windows,
                              int64_t nw, const lumen_image *dst, lumen_border border,
                              float border_value, lumen_run_info *info)
{
    const int64_t c = dst->c;
    crop_job j = {.src = src,
                  .dst = dst,
                  .windows = windows,
                  .n_windows = nw,
                  .border = border,
                  .ses = lumen_dtype_size(src->dtype),
                  .des = lumen_dtype_size(dst->dtype),
                  .same = src->dtype == dst->dtype};
    j.interleaved = src->stride_w == c && dst->stride_w == c &&
                    (c == 1 || (src->stride_c == 1 && dst->stride_c == 1));
    j.planar = src->stride_w == 1 && dst->stride_w == 1;
    j.fill = malloc((size_t)(dst->w * c) * j.des);
    if (!j.fill)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "dst: no memory for a row of %lld pixels",
                               (long long)dst->w);
    lumen_store_px(j.fill, dst->dtype, border_value);
    for (int64_t i = 1; i < dst->w * c; i++)
        memcpy(j.fill + i * (int64_t)j.des, j.fill, j.des);
    int threads = 1;
    lumen_status s = crop_rows(ctx, &j, &threads);
    free(j.fill);
    if (!s) lumen_crop_info(ctx, "crop", threads, info);
    return s;
}

lumen_status lumen_crop_box(lumen_context *ctx, const lumen_image *src, const lumen_box *windows,
                            int64_t n_windows, const lumen_image *dst, lumen_border border,
                            float border_value, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s = check_pair(ctx, src, dst);
    if (s || (s = check_windows(src, windows, n_windows, dst))) return s;
    if ((unsigned)border > LUMEN_BORDER_WRAP)
        return lumen_set_error(ERR_ARG, "border: unknown border mode %d", (int)border);
    if (!isfinite(border_value)) return lumen_set_error(ERR_ARG, "border_value: must be finite");
    return crop_copy(ctx, src, windows, n_windows, dst, border, border_value, info);
}

/* ---- crop to a mask ---- */

static lumen_status check_mask(const lumen_image *src, const lumen_image *mask)
{
    lumen_status s = lumen_crop_check_host(mask, "mask", "crop");
    if (s) return s;
    if (mask->h != src->h || mask->w != src->w || (mask->n != 1 && mask->n != src->n))
        return lumen_set_error(ERR_ARG,
                               "mask: %lld image(s) of %lld x %lld (h x w), expected 1 or %lld "
                               "of src's %lld x %lld",
                               (long long)mask->n, (long long)mask->h, (long long)mask->w,
                               (long long)src->n, (long long)src->h, (long long)src->w);
    return LUMEN_OK;
}

/* The windows of every image (windows[mask->n]) and their one size; images whose windows
 * differ in size are an error naming two. */
static lumen_status mask_windows(const lumen_image *src, const lumen_image *mask,
                                 const lumen_crop_options *opt, int threads, lumen_box *windows)
{
    lumen_status s = check_options(opt);
    if (s || (s = lumen_crop_check_host(src, "src", "crop"))) return s;
    if (!mask) mask = src;
    if ((s = check_mask(src, mask))) return s;
    lumen_mask_boxes(mask, opt->threshold, windows, threads);
    for (int64_t b = 0; b < mask->n; b++) {
        if (lumen_box_empty(&windows[b]) && opt->empty != LUMEN_CROP_EMPTY_WHOLE) {
            char which[48] = "";
            if (mask->n > 1) snprintf(which, sizeof which, "image %lld ", (long long)b);
            return lumen_set_error(ERR_ARG,
                                   "mask: %shas no pixel above the threshold %g: the box is "
                                   "empty (empty = whole crops the whole image instead)",
                                   which, opt->threshold);
        }
        if ((s = lumen_crop_window(&windows[b], src->h, src->w, opt, &windows[b]))) return s;
        const lumen_box *a = &windows[0], *r = &windows[b];
        if (r->x1 - r->x0 != a->x1 - a->x0 || r->y1 - r->y0 != a->y1 - a->y0)
            return lumen_set_error(ERR_ARG,
                                   "mask: the crop windows of the batch differ in size (image 0: "
                                   "%lld x %lld, image %lld: %lld x %lld, w x h); crop the "
                                   "images one at a time, or fix the size with min_size",
                                   (long long)(a->x1 - a->x0), (long long)(a->y1 - a->y0),
                                   (long long)b, (long long)(r->x1 - r->x0),
                                   (long long)(r->y1 - r->y0));
    }
    return LUMEN_OK;
}

static lumen_box *new_windows(const lumen_image *src, const lumen_image *mask)
{
    const int64_t n = mask && mask->n > 0 ? mask->n : src && src->n > 0 ? src->n : 1;
    lumen_box *w = n <= MAX_SIDE ? calloc((size_t)n, sizeof *w) : NULL;
    if (!w)
        lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "mask: no memory for %lld boxes", (long long)n);
    return w;
}

lumen_status lumen_crop_size(const lumen_image *src, const lumen_image *mask,
                             const lumen_crop_options *opt, int64_t *h, int64_t *w)
{
    lumen_clear_error();
    lumen_status s = lumen_image_check(src, "src");
    if (s) return s;
    if (!h || !w) return lumen_set_error(ERR_ARG, "h, w: NULL");
    lumen_box *win = new_windows(src, mask);
    if (!win) return LUMEN_ERR_OUT_OF_MEMORY;
    s = mask_windows(src, mask, opt, 1, win);
    if (!s) *h = win[0].y1 - win[0].y0, *w = win[0].x1 - win[0].x0;
    free(win);
    return s;
}

lumen_status lumen_crop(lumen_context *ctx, const lumen_image *src, const lumen_image *mask,
                        const lumen_image *dst, const lumen_crop_options *opt, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s = check_pair(ctx, src, dst);
    if (s) return s;
    lumen_box *win = new_windows(src, mask);
    if (!win) return LUMEN_ERR_OUT_OF_MEMORY;
    s = mask_windows(src, mask, opt, ctx->threads, win);
    const int64_t nw = mask ? mask->n : src->n;
    if (!s && (win[0].x1 - win[0].x0 != dst->w || win[0].y1 - win[0].y0 != dst->h))
        s = lumen_set_error(ERR_ARG,
                            "dst: %lld x %lld (h x w), the crop is %lld x %lld (lumen_crop_size)",
                            (long long)dst->h, (long long)dst->w,
                            (long long)(win[0].y1 - win[0].y0), (long long)(win[0].x1 - win[0].x0));
    if (!s) s = crop_copy(ctx, src, win, nw, dst, opt->border, opt->border_value, info);
    free(win);
    return s;
}

/* ---- descriptor (docs/descriptors.md) ---- */
#include "op_desc.h"

enum {
    CR_SRC,
    CR_MASK,
    CR_THRESHOLD,
    CR_MARGIN,
    CR_ALLOW_SMALLER,
    CR_ASPECT,
    CR_MIN_SIZE,
    CR_K_DIVISIBLE,
    CR_OUTSIDE,
    CR_BORDER,
    CR_BORDER_VALUE,
    CR_EMPTY,
    CR_N
};

static const lumen_choice outside_choices[] = {
    {"pad", LUMEN_CROP_PAD}, {"clip", LUMEN_CROP_CLIP}, {NULL, 0}};
static const lumen_choice empty_choices[] = {
    {"error", LUMEN_CROP_EMPTY_ERROR}, {"whole", LUMEN_CROP_EMPTY_WHOLE}, {NULL, 0}};

static const lumen_arg_desc crop_args[CR_N] = {
    [CR_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image (a batch: one window per image, all of one size)"},
    [CR_MASK] = {.name = "mask",
                 .type = LUMEN_ARG_IMAGE,
                 .flags = LUMEN_ARG_POSITIONAL | LUMEN_ARG_NULLABLE,
                 .def_text = "src is its own mask, as MONAI's default",
                 .help = "foreground where any channel is > threshold; src's h x w, one image "
                         "for the batch or one per image"},
    [CR_THRESHOLD] = {.name = "threshold",
                      .type = LUMEN_ARG_REAL,
                      .min = -DBL_MAX,
                      .max = DBL_MAX,
                      .help = "foreground is mask > threshold (f32 masks compare in float32)"},
    [CR_MARGIN] = {.name = "margin",
                   .type = LUMEN_ARG_INT_PAIR,
                   .max = INT32_MAX,
                   .help = "pixels added to each side of the box, (h, w) (MONAI's margin)"},
    [CR_ALLOW_SMALLER] = {.name = "allow_smaller",
                          .type = LUMEN_ARG_BOOL,
                          .max = 1,
                          .help = "clip the box with its margin to the image (MONAI's "
                                  "allow_smaller)"},
    [CR_ASPECT] = {.name = "aspect",
                   .type = LUMEN_ARG_REAL,
                   .max = 1e9,
                   .def_text = "0: any",
                   .help = "width / height of the window: the shorter side grows around the "
                           "centre"},
    [CR_MIN_SIZE] = {.name = "min_size",
                     .type = LUMEN_ARG_INT_PAIR,
                     .max = INT32_MAX,
                     .help = "smallest window, (h, w): a shorter side grows around the centre"},
    [CR_K_DIVISIBLE] = {.name = "k_divisible",
                        .type = LUMEN_ARG_INT_PAIR,
                        .def = {1, 1},
                        .min = 1,
                        .max = INT32_MAX,
                        .help = "window sides grow around the centre to multiples of k, (h, w) "
                                "(MONAI's k_divisible)"},
    [CR_OUTSIDE] = {.name = "outside",
                    .type = LUMEN_ARG_ENUM,
                    .def = {LUMEN_CROP_PAD, 0},
                    .choices = outside_choices,
                    .help = "a window reaching outside the image: pad (by border) or clip (cut "
                            "to the image: the output may be smaller)"},
    [CR_BORDER] = {.name = "border",
                   .type = LUMEN_ARG_ENUM,
                   .def = {LUMEN_BORDER_CONSTANT, 0},
                   .choices = lumen_border_choices,
                   .help = "the pad: constant (border_value, MONAI's default), replicate, "
                           "reflect, reflect101 or wrap, as lumen's filters read outside"},
    [CR_BORDER_VALUE] = {.name = "border_value",
                         .type = LUMEN_ARG_REAL,
                         .min = -FLT_MAX,
                         .max = FLT_MAX,
                         .help = "the pad's value for border constant, in pixel units"},
    [CR_EMPTY] = {.name = "empty",
                  .type = LUMEN_ARG_ENUM,
                  .def = {LUMEN_CROP_EMPTY_ERROR, 0},
                  .choices = empty_choices,
                  .help = "an image whose mask has no foreground: error, or whole (its box is "
                          "the whole image)"},
};

static lumen_crop_options desc_options(const lumen_value *v)
{
    const lumen_op_desc *d = &lumen_crop_desc;
    lumen_crop_options o = lumen_crop_options_default();
    int a, b;
    o.threshold = lumen_value_real(d, v, CR_THRESHOLD);
    lumen_value_pair(d, v, CR_MARGIN, &o.margin_y, &o.margin_x);
    o.allow_smaller = (int)lumen_value_int(d, v, CR_ALLOW_SMALLER);
    o.aspect = lumen_value_real(d, v, CR_ASPECT);
    lumen_value_pair(d, v, CR_MIN_SIZE, &a, &b);
    o.min_h = a, o.min_w = b;
    lumen_value_pair(d, v, CR_K_DIVISIBLE, &o.k_h, &o.k_w);
    o.outside = (lumen_crop_outside)lumen_value_int(d, v, CR_OUTSIDE);
    o.border = (lumen_border)lumen_value_int(d, v, CR_BORDER);
    o.border_value = (float)lumen_value_real(d, v, CR_BORDER_VALUE);
    o.empty = (lumen_crop_empty)lumen_value_int(d, v, CR_EMPTY);
    return o;
}

static const lumen_image *desc_mask(const lumen_value *v)
{
    return v[CR_MASK].given ? v[CR_MASK].u.image : NULL;
}

static lumen_status crop_shape(const lumen_value *v, lumen_out_shape *out)
{
    const lumen_image *src = v[CR_SRC].u.image;
    const lumen_crop_options o = desc_options(v);
    int64_t h, w;
    lumen_status s = lumen_crop_size(src, desc_mask(v), &o, &h, &w);
    if (s) return s;
    *out = (lumen_out_shape){LUMEN_ARG_IMAGE, src->dtype, src->n, src->c, h, w};
    return LUMEN_OK;
}

static lumen_status crop_invoke(lumen_context *ctx, const lumen_value *v, const lumen_image *out,
                                lumen_run_info *info)
{
    const lumen_crop_options o = desc_options(v);
    return lumen_crop(ctx, v[CR_SRC].u.image, desc_mask(v), out, &o, info);
}

const lumen_op_desc lumen_crop_desc = {
    .name = "crop",
    .command = "crop",
    .summary = "crop to the bounding box of a mask's foreground (MONAI's CropForeground)",
    .help = "The box of mask > threshold (half-open), grown by margin on each side, clipped to "
            "the image if allow_smaller, its shorter side grown to the aspect ratio, then each "
            "side to min_size, then to a multiple of k_divisible (each growth around the "
            "centre); outside the image the window is padded by border, or clipped. "
            "docs/crop.md.",
    .args = crop_args,
    .n_args = CR_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the window of each image: src's n, c and dtype, the window's h x w",
    .output_shape = crop_shape,
    .invoke = crop_invoke,
};
