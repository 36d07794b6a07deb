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

/* The steps of a window of n samples shifted by d = j - a for j in [0, k), outward from d = 0:
 * the index entering and the one leaving at each j, border-mapped (-1: the constant). The
 * same for every row (or column), so made once per call. */
typedef struct shift_steps {
    int k, a;
    int64_t *enter, *leave;
} shift_steps;

static bool steps_make(int64_t n, lumen_border border, int k, shift_steps *st)
{
    st->k = k, st->a = k / 2;
    st->enter = malloc(2 * (size_t)k * sizeof *st->enter);
    st->leave = st->enter ? st->enter + k : NULL;
    for (int j = 0; j < k && st->enter; j++) {
        const int64_t d = j - st->a; /* d > 0: [d, n - 1 + d]; d < 0: [d, n - 1 + d] too */
        st->enter[j] = lumen_border_index(d > 0 ? n - 1 + d : d, n, border);
        st->leave[j] = lumen_border_index(d > 0 ? d - 1 : n + d, n, border);
    }
    return st->enter != NULL;
}

/* out[j] for j in [0, k): the sum over i in [0, n) of v[B(i + j - a) * stride], where
 * indices the border maps nowhere (constant) give `outside`. `total` is the unshifted sum. */
static void shifted_sums(const double *v, int64_t stride, double outside, const shift_steps *st,
                         double total, double *out)
{
#define AT(m) ((m) < 0 ? outside : v[(m)*stride])
    double s = total;
    out[st->a] = s;
    for (int j = st->a + 1; j < st->k; j++)
        out[j] = s += AT(st->enter[j]) - AT(st->leave[j]);
    s = total;
    for (int j = st->a - 1; j >= 0; j--)
        out[j] = s += AT(st->enter[j]) - AT(st->leave[j]);
#undef AT
}

/* One row of plane (b, c): its highlights (as film_highlights makes them) into e, their
 * sum, and the row's shifted sums into r[0, kw). */
static double row_step(const lumen_image *src, int64_t b, int64_t c, int64_t y, float t, float g,
                       double outside, const shift_steps *st, float *row, double *e, double *r)
{
    film_row_load(src, b, c, y, row);
    double sum = 0;
    for (int64_t x = 0; x < src->w; x++) {
        const float v = lumen_film_highlight(row[x], t, g);
        e[x] = v;
        sum += v;
    }
    shifted_sums(e, 1, outside, st, sum, r);
    return sum;
}

/* The sums of one plane: its rows' shifted sums (in parallel), then their columns'. */
typedef struct plane_ctx {
    const lumen_image *src;
    const film_conv *k;
    const shift_steps *rows, *cols; /* steps along x (n = w) and along y (n = h) */
    double *row_sums, *r, *col;     /* scratch: h, h x kw, kw + kh */
    int threads;
} plane_ctx;

/* E's sum and the layer's sum of plane (b, c). False: out of memory. */
static bool plane_sums(const plane_ctx *pc, int64_t b, int64_t c, float t, float g, double *e_sum,
                       double *layer_sum)
{
    const lumen_image *src = pc->src;
    const int kw = pc->k->size;
    /* outside the image (border constant): the highlight of the constant, a whole row of it
     * for the column pass */
    const float in_scale = 1.0f / film_dtype_scale(src->dtype);
    const double out_px = pc->k->border == LUMEN_BORDER_CONSTANT
                              ? lumen_film_highlight(pc->k->border_value * in_scale, t, g)
                              : 0.0;
    bool failed = false;
#pragma omp parallel num_threads(pc->threads) reduction(|| : failed)
    {
        float *row = malloc((size_t)src->w * sizeof *row);
        double *e = malloc((size_t)src->w * sizeof *e);
        failed = !row || !e;
#pragma omp for schedule(static)
        for (int64_t y = 0; y < src->h; y++)
            if (!failed)
                pc->row_sums[y] =
                    row_step(src, b, c, y, t, g, out_px, pc->rows, row, e, pc->r + y * kw);
        free(row), free(e);
    }
    if (failed) return false;
    double total = 0, *colsum = pc->col, *s = pc->col + kw;
    for (int j = 0; j < kw; j++)
        colsum[j] = 0;
    for (int64_t y = 0; y < src->h; y++) { /* rows in order, each row contiguous */
        total += pc->row_sums[y];
        for (int j = 0; j < kw; j++)
            colsum[j] += pc->r[y * kw + j];
    }
    *e_sum = total;
    double layer = 0;
    for (int j = 0; j < kw; j++) {
        shifted_sums(pc->r + j, kw, out_px * (double)src->w, pc->cols, colsum[j], s);
        for (int i = 0; i < kw; i++)
            layer += (double)pc->k->kernel[(int64_t)i * kw + j] * s[i];
    }
    *layer_sum = layer;
    return true;
}

lumen_status film_layer_sums(const lumen_image *src, const film_conv *k, double threshold,
                             const double gain[3], double *e_sums, double *layer_sums, int threads)
{
    shift_steps rows = {0}, cols = {0};
    plane_ctx pc = {.src = src, .k = k, .rows = &rows, .cols = &cols, .threads = threads};
    pc.row_sums = malloc((size_t)src->h * sizeof *pc.row_sums);
    pc.r = malloc((size_t)src->h * (size_t)k->size * sizeof *pc.r);
    pc.col = malloc(2 * (size_t)k->size * sizeof *pc.col);
    bool ok = pc.row_sums && pc.r && pc.col && steps_make(src->w, k->border, k->size, &rows) &&
              steps_make(src->h, k->border, k->size, &cols);
    for (int64_t b = 0; b < src->n && ok; b++)
        for (int64_t c = 0; c < src->c && ok; c++) {
            const int64_t q = b * src->c + c;
            ok = plane_sums(&pc, b, c, (float)threshold, (float)gain[film_channel_param(src->c, c)],
                            &e_sums[q], &layer_sums[q]);
        }
    free(pc.row_sums), free(pc.r), free(pc.col), free(rows.enter), free(cols.enter);
    return ok ? LUMEN_OK
              : lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                "film: out of memory for the layer's sums");
}
