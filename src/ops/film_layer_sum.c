/*
 * The sum of a correlation's output, without the correlation (film_common.h,
 * film_layer_sums). Halation rescales its layer E (*) K so that it keeps E's energy (Phos:
 * layer * E.sum() / layer.sum()), which needs the layer's sum before the layer is blended
 * back. With the border rule B,
 *
 *     sum_{y,x} sum_{i,j} K(i,j) E(B(y + i - ay), B(x + j - ax)) = sum_{i,j} K(i,j) S(i,j),
 *     S(i,j) = sum_{y,x} E(B(y + i - ay), B(x + j - ax)),
 *
 * and S is E's sum over a window shifted by (i - ay, j - ax): one pass over the rows gives
 * R(y, j), each row's sum shifted by j - ax, and one pass over R's columns gives S. A shift
 * by d + 1 differs from a shift by d in one element entering and one leaving, so each row
 * costs its length plus kw steps, whatever the border mode. Sums are in double, rows added in
 * order: the same for any thread count, and the exact sum of the convolution up to double
 * rounding, where summing a computed layer would carry the FFT's f32 errors.
 */
#include "film_common.h"
#include "film_map.h"
#include "semantics.h"

#include <stdlib.h>

/* out[j] for j in [0, k): the sum over i in [0, n) of v[B(i + j - a) * stride], where
 * indices outside [0, n) that the border maps nowhere (constant) give `outside`. `total` is
 * the unshifted sum. */
static void shifted_sums(const double *v, int64_t stride, int64_t n, double outside,
                         lumen_border border, int k, int a, double total, double *out)
{
#define AT(i)                                                                                      \
    (lumen_border_index((i), n, border) < 0 ? outside                                              \
                                            : v[lumen_border_index((i), n, border) * stride])
    double s = total;
    out[a] = s;
    for (int j = a + 1; j < k; j++) { /* window [d, n - 1 + d], d = j - a > 0 */
        const int64_t d = j - a;
        s += AT(n - 1 + d) - AT(d - 1);
        out[j] = s;
    }
    s = total;
    for (int j = a - 1; j >= 0; j--) { /* d < 0 */
        const int64_t d = j - a;
        s += AT(d) - AT(n + d);
        out[j] = s;
    }
#undef AT
}

/* One row of plane (b, c): its highlights (as film_highlights makes them) into e, their
 * sum, and the row's shifted sums into r[0, kw). */
static double row_step(const lumen_image *src, int64_t b, int64_t c, int64_t y, float t, float g,
                       double outside, const film_conv *k, float *row, double *e, double *r)
{
    film_row_load(src, b, c, y, row);
    double sum = 0;
    for (int64_t x = 0; x < src->w; x++) {
        const float v = lumen_film_highlight(row[x], t, g);
        e[x] = v;
        sum += v;
    }
    shifted_sums(e, 1, src->w, outside, k->border, k->size, k->size / 2, sum, r);
    return sum;
}

/* E's sum and the layer's sum of plane (b, c); row_sums and r are scratch. False: out of
 * memory. */
static bool plane_sums(const lumen_image *src, int64_t b, int64_t c, float t, float g,
                       const film_conv *k, double *row_sums, double *r, double *e_sum,
                       double *layer_sum, int threads)
{
    const int kw = k->size;
    /* outside the image (border constant): the highlight of the constant, a whole row of it
     * for the column pass */
    const float in_scale = 1.0f / film_dtype_scale(src->dtype);
    const double out_px = k->border == LUMEN_BORDER_CONSTANT
                              ? lumen_film_highlight(k->border_value * in_scale, t, g)
                              : 0.0;
    bool failed = false;
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        float *row = malloc((size_t)src->w * sizeof *row);
        double *e = malloc((size_t)src->w * sizeof *e);
        failed = !row || !e;
#pragma omp for schedule(static)
        for (int64_t y = 0; y < src->h; y++)
            if (!failed) row_sums[y] = row_step(src, b, c, y, t, g, out_px, k, row, e, r + y * kw);
        free(row), free(e);
    }
    if (failed) return false;
    double total = 0;
    for (int64_t y = 0; y < src->h; y++)
        total += row_sums[y];
    *e_sum = total;
    double layer = 0, *s = malloc((size_t)kw * sizeof *s);
    for (int j = 0; j < kw && s; j++) {
        double col = 0;
        for (int64_t y = 0; y < src->h; y++)
            col += r[y * kw + j];
        shifted_sums(r + j, kw, src->h, out_px * (double)src->w, k->border, kw, kw / 2, col, s);
        for (int i = 0; i < kw; i++)
            layer += (double)k->kernel[(int64_t)i * kw + j] * s[i];
    }
    *layer_sum = layer;
    free(s);
    return s && !failed;
}

lumen_status film_layer_sums(const lumen_image *src, const film_conv *k, double threshold,
                             const double gain[3], double *e_sums, double *layer_sums, int threads)
{
    double *row_sums = malloc((size_t)src->h * sizeof *row_sums);
    double *r = malloc((size_t)src->h * (size_t)k->size * sizeof *r);
    lumen_status s = LUMEN_OK;
    for (int64_t b = 0; b < src->n && row_sums && r; b++)
        for (int64_t c = 0; c < src->c; c++) {
            const int64_t q = b * src->c + c;
            if (!plane_sums(src, b, c, (float)threshold, (float)gain[film_channel_param(src->c, c)],
                            k, row_sums, r, &e_sums[q], &layer_sums[q], threads))
                s = LUMEN_ERR_OUT_OF_MEMORY;
        }
    if (!row_sums || !r) s = LUMEN_ERR_OUT_OF_MEMORY;
    free(row_sums), free(r);
    return s ? lumen_set_error(s, "film: out of memory for the layer's sums") : LUMEN_OK;
}
