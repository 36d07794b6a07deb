/* The film effects' shared steps (film_common.h). */
#include "film_common.h"
#include "op_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ERR_ARG LUMEN_ERR_INVALID_ARGUMENT

lumen_status film_check(const lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const char *op)
{
    if (!ctx) return lumen_set_error(ERR_ARG, "ctx: NULL context");
    lumen_status s;
    if ((s = lumen_image_check(src, "src")) || (s = lumen_image_check(dst, "dst")) ||
        (s = lumen_image_check_pair(src, dst)))
        return s;
    if (src->c != 1 && src->c != 3)
        return lumen_set_error(ERR_ARG, "src: %s takes 1 or 3 channels, got %lld", op,
                               (long long)src->c);
    /* in place is fine (each pixel is read before it is written, by the same step); any other
     * overlap would read pixels already written */
    const bool same = src->data == dst->data && src->stride_n == dst->stride_n &&
                      src->stride_c == dst->stride_c && src->stride_h == dst->stride_h &&
                      src->stride_w == dst->stride_w && src->dtype == dst->dtype;
    if (!same && lumen_views_overlap(src, dst))
        return lumen_set_error(ERR_ARG,
                               "dst: overlaps src without being it; %s runs in place "
                               "or into separate memory",
                               op);
    if (src->device || dst->device)
        return lumen_set_error(ERR_ARG,
                               "%s: %s is in device memory; the film effects take host images "
                               "(their convolutions run on the context's device)",
                               src->device ? "src" : "dst", op);
    return LUMEN_OK;
}

float film_dtype_scale(lumen_dtype t)
{
    return t == LUMEN_U8 ? 255.0f : t == LUMEN_U16 ? 65535.0f : 1.0f;
}

/* Uninitialised: every user writes every element before reading it (no zeroing pass). */
lumen_status film_planes_new(const lumen_image *img, film_planes *out)
{
    const film_planes shape = {.n = img->n, .c = img->c, .h = img->h, .w = img->w};
    return film_planes_like(&shape, out);
}

lumen_status film_planes_load(const lumen_image *img, film_planes *out, int threads)
{
    lumen_status s = film_planes_new(img, out);
    if (s) return s;
    const int64_t rows = img->n * img->c * img->h;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        film_row_load(img, r / (img->h * img->c), (r / img->h) % img->c, r % img->h,
                      out->data + r * img->w);
    return LUMEN_OK;
}

lumen_status film_planes_like(const film_planes *p, film_planes *out)
{
    *out = (film_planes){.n = p->n, .c = p->c, .h = p->h, .w = p->w};
    const size_t bytes = (size_t)(p->n * p->c * p->h * p->w) * sizeof(float);
    if (!(out->data = malloc(bytes)))
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "film: %zu-byte working image failed",
                               bytes);
    return LUMEN_OK;
}

void film_planes_free(film_planes *p)
{
    free(p->data);
    p->data = NULL;
}

lumen_image film_planes_view(const film_planes *p)
{
    return lumen_image_nchw(p->data, LUMEN_F32, p->n, p->c, p->h, p->w);
}

void film_planes_store(const film_planes *p, const lumen_image *dst, int threads)
{
    const float scale = film_dtype_scale(dst->dtype);
    const int64_t rows = p->n * p->c * p->h;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t y = r % p->h, c = (r / p->h) % p->c, b = r / (p->h * p->c);
        const float *row = film_plane(p, b, c) + y * p->w;
        for (int64_t x = 0; x < p->w; x++) {
            float v = row[x];
            v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; /* NaN stays NaN: f32 keeps it */
            lumen_store_px(lumen_px_addr(dst, b, c, y, x), dst->dtype, v * scale);
        }
    }
}

void film_row_load(const lumen_image *img, int64_t b, int64_t c, int64_t y, float *row)
{
    const char *p = lumen_px_addr(img, b, c, y, 0);
    const int64_t sw = img->stride_w;
    switch (img->dtype) {
    case LUMEN_U8:
        for (int64_t x = 0; x < img->w; x++)
            row[x] = (float)((const uint8_t *)p)[x * sw] * (1.0f / 255.0f);
        break;
    case LUMEN_U16:
        for (int64_t x = 0; x < img->w; x++)
            row[x] = (float)((const uint16_t *)p)[x * sw] * (1.0f / 65535.0f);
        break;
    case LUMEN_F32:
        for (int64_t x = 0; x < img->w; x++)
            row[x] = ((const float *)p)[x * sw];
        break;
    case LUMEN_F16:
    case LUMEN_BF16: /* linear floats, as f32 */
        for (int64_t x = 0; x < img->w; x++)
            row[x] = lumen_load_px((const uint16_t *)p + x * sw, img->dtype);
        break;
    }
}

/* out[p] = the sum of rows[p * h .. p * h + h), added in row order: plane sums that are the
 * same whatever the thread count that made the row sums. */
static void add_rows_in_order(const double *rows, int64_t planes, int64_t h, double *out)
{
    for (int64_t p = 0; p < planes; p++) {
        out[p] = 0;
        for (int64_t y = 0; y < h; y++)
            out[p] += rows[p * h + y];
    }
}

lumen_status film_highlights(const lumen_image *src, film_planes *e, double threshold,
                             const double k[3], int threads)
{
    lumen_status s = film_planes_new(src, e);
    if (s) return s;
    const int64_t rows = src->n * src->c * src->h, w = src->w;
    const float t = (float)threshold;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t y = r % src->h, c = (r / src->h) % src->c, b = r / (src->h * src->c);
        float *row = film_plane(e, b, c) + y * w;
        const float kc = (float)k[film_channel_param(src->c, c)];
        film_row_load(src, b, c, y, row);
        for (int64_t x = 0; x < w; x++)
            row[x] = lumen_film_highlight(row[x], t, kc);
    }
    return LUMEN_OK;
}

/* Sum, and sum of squares, of row r of p. */
static void row_moments(const film_planes *p, int64_t r, double *sum, double *square)
{
    const float *row = p->data + r * p->w;
    double s = 0, q = 0;
    for (int64_t x = 0; x < p->w; x++)
        s += row[x], q += (double)row[x] * row[x];
    *sum = s, *square = q;
}

void film_plane_sums(const film_planes *p, double *sums, double *squares, int threads)
{
    const int64_t rows = p->n * p->c * p->h, planes = p->n * p->c;
    double *row_s = malloc((size_t)rows * 2 * sizeof *row_s);
    if (!row_s) { /* a few KiB short: the same sums, serially */
        for (int64_t q = 0; q < planes; q++) {
            sums[q] = 0;
            if (squares) squares[q] = 0;
            for (int64_t y = 0; y < p->h; y++) {
                double s, sq;
                row_moments(p, q * p->h + y, &s, &sq);
                sums[q] += s;
                if (squares) squares[q] += sq;
            }
        }
        return;
    }
    double *row_q = row_s + rows;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        row_moments(p, r, &row_s[r], &row_q[r]);
    add_rows_in_order(row_s, planes, p->h, sums);
    if (squares) add_rows_in_order(row_q, planes, p->h, squares);
    free(row_s);
}

void film_scatter_back(const lumen_image *src, const lumen_image *dst, double threshold,
                       const double k[3], const film_planes *s, const float *scale, int threads)
{
    const int64_t rows = src->n * src->c * src->h, w = src->w;
    const float t = (float)threshold, in = 1.0f / film_dtype_scale(src->dtype);
    const float out = film_dtype_scale(dst->dtype);
    const int64_t ses = (int64_t)lumen_dtype_bytes(src->dtype) * src->stride_w;
    const int64_t des = (int64_t)lumen_dtype_bytes(dst->dtype) * dst->stride_w;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t y = r % src->h, c = (r / src->h) % src->c, b = r / (src->h * src->c);
        const float kc = (float)k[film_channel_param(src->c, c)];
        const float sc = scale ? scale[b * src->c + c] : 1.0f;
        const float *sr = film_plane(s, b, c) + y * w;
        const char *ps = lumen_px_addr(src, b, c, y, 0);
        char *pd = lumen_px_addr(dst, b, c, y, 0);
        for (int64_t x = 0; x < w; x++) {
            const float v = lumen_load_px(ps + x * ses, src->dtype) * in;
            const float o = lumen_film_blend(v, lumen_film_highlight(v, t, kc), sr[x] * sc);
            lumen_store_px(pd + x * des, dst->dtype, o * out);
        }
    }
}

lumen_status film_fused_scatter(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                                const film_conv *k, const lumen_film_map *m, lumen_run_info *info)
{
    lumen_filter_job job = {.src = src,
                            .dst = dst,
                            .taps = LUMEN_TAPS_2D,
                            .border = k->border,
                            .border_value = k->border_value,
                            .kw = k->size,
                            .kh = k->size,
                            .ax = k->size / 2,
                            .ay = k->size / 2,
                            .kernel = k->kernel,
                            .scale = 1.0f,
                            .map = m};
    const unsigned methods = 1u << LUMEN_METHOD_DIRECT | 1u << LUMEN_METHOD_FFT;
    if (!lumen_context_on_cpu(ctx) || (int64_t)k->size * k->size < LUMEN_FFT_MIN_TAPS ||
        lumen_choose_method(ctx, &job, methods) != LUMEN_METHOD_FFT)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "film: no fused path for this call");
    lumen_image copy_view;
    void *copy;
    lumen_status s = lumen_op_unalias(&job.src, dst, &copy_view, &copy);
    if (!s) {
        s = lumen_run_filter(ctx, &job, LUMEN_METHOD_FFT, info);
        lumen_op_release_src(copy);
    }
    return s;
}

lumen_status film_check_triplet(const double v[3], double lo, double hi, const char *what)
{
    for (int i = 0; i < 3; i++)
        if (!(v[i] >= lo && v[i] <= hi))
            return lumen_set_error(ERR_ARG, "%s[%d]: %g is not in [%g, %g]", what, i, v[i], lo, hi);
    return LUMEN_OK;
}

lumen_status film_desc_triplet(const lumen_value *v, const char *what, double out[3])
{
    if (!v->given) return LUMEN_OK;
    const int64_t n = v->u.array.w;
    if (n != 1 && n != 3)
        return lumen_set_error(ERR_ARG, "%s: 1 value (every channel) or 3 (R, G, B), got %lld",
                               what, (long long)n);
    for (int i = 0; i < 3; i++)
        out[i] = v->u.array.data[n == 1 ? 0 : i];
    return LUMEN_OK;
}
