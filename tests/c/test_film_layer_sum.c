/*
 * film_layer_sums (src/ops/film_layer_sum.c): the sum of a film layer E (*) K computed
 * without the convolution, against the convolution summed term by term in double, for every
 * border mode, images smaller than the kernel, 1 and 3 channels, u8 and f32, batches.
 */
#include "test_support.h"
#include "tolerances.h"

#include "ops/film_common.h"
#include "semantics.h"

#include <math.h>
#include <stdlib.h>

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

/* Highlight of pixel (y, x) of plane (b, c) in double, the border rule applied. */
static double e_at(const lumen_image *src, const film_conv *k, int64_t b, int64_t c, int64_t y,
                   int64_t x, float t, float g)
{
    const float in = 1.0f / film_dtype_scale(src->dtype);
    const int64_t yy = lumen_border_index(y, src->h, k->border);
    const int64_t xx = lumen_border_index(x, src->w, k->border);
    const float v = yy < 0 || xx < 0
                        ? k->border_value * in
                        : lumen_load_px(lumen_px_addr(src, b, c, yy, xx), src->dtype) * in;
    return lumen_film_highlight(v, t, g);
}

/* The layer's sum, every output and tap in turn. */
static double oracle(const lumen_image *src, const film_conv *k, int64_t b, int64_t c, float t,
                     float g, double *e_sum)
{
    const int a = k->size / 2;
    double sum = 0;
    *e_sum = 0;
    for (int64_t y = 0; y < src->h; y++)
        for (int64_t x = 0; x < src->w; x++) {
            *e_sum += e_at(src, k, b, c, y, x, t, g);
            for (int i = 0; i < k->size; i++)
                for (int j = 0; j < k->size; j++)
                    sum += (double)k->kernel[i * k->size + j] *
                           e_at(src, k, b, c, y + i - a, x + j - a, t, g);
        }
    return sum;
}

static void check_case(lumen_dtype dt, int64_t n, int64_t ch, int64_t h, int64_t w, int size,
                       lumen_border border, unsigned seed)
{
    ts_image im;
    ts_image_alloc(&im, TS_INTERLEAVED, dt, n, ch, h, w);
    const lumen_image src = im.v;
    ts_rng rng = ts_rng_make(seed);
    const double top = dt == LUMEN_U8 ? 255.0 : 1.2; /* linear light, some above 1 */
    for (int64_t b = 0; b < n; b++)
        for (int64_t c = 0; c < ch; c++)
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++)
                    ts_set(&src, b, c, y, x,
                           dt == LUMEN_U8 ? floor(ts_rng_uniform(&rng, 0, 256))
                                          : ts_rng_uniform(&rng, 0, top));
    float *kernel = malloc((size_t)size * size * sizeof *kernel);
    for (int i = 0; i < size * size; i++)
        kernel[i] = (float)ts_rng_uniform(&rng, -0.25, 1.0); /* negative taps too */
    const film_conv k = {.kernel = kernel,
                         .size = size,
                         .border = border,
                         .border_value = dt == LUMEN_U8 ? 240.0f : 0.9f};
    const double gain[3] = {0.5, 0.7, 0.9}, threshold = 0.3;
    double e_sums[6], layer_sums[6];
    assert_int_equal(film_layer_sums(&src, &k, threshold, gain, e_sums, layer_sums, 2), LUMEN_OK);
    for (int64_t b = 0; b < n; b++)
        for (int64_t c = 0; c < ch; c++) {
            double e_want;
            const float g = (float)gain[film_channel_param(ch, c)];
            const double want = oracle(&src, &k, b, c, (float)threshold, g, &e_want);
            const double tol = TS_FILM_SUM_REL * (1.0 + fabs(e_want) * size * size);
            if (fabs(layer_sums[b * ch + c] - want) > tol ||
                fabs(e_sums[b * ch + c] - e_want) > tol)
                fail_msg("%s %lldx%lld k %d border %d plane (%lld, %lld): layer %.17g want %.17g, "
                         "E %.17g want %.17g",
                         lumen_dtype_name(dt), (long long)h, (long long)w, size, (int)border,
                         (long long)b, (long long)c, layer_sums[b * ch + c], want,
                         e_sums[b * ch + c], e_want);
        }
    free(kernel);
    ts_image_free(&im);
}

static void test_borders(void **state)
{
    (void)state;
    for (int bi = 0; bi < TS_COUNT(borders); bi++) {
        check_case(LUMEN_F32, 1, 3, 23, 31, 7, borders[bi], 11 + bi);
        check_case(LUMEN_U8, 2, 1, 17, 12, 5, borders[bi], 23 + bi);
        check_case(LUMEN_F32, 1, 1, 40, 1, 3, borders[bi], 31 + bi);
    }
}

/* Kernels wider than the image: shifts reach past the far edge, reflected again. */
static void test_kernel_larger_than_image(void **state)
{
    (void)state;
    for (int bi = 0; bi < TS_COUNT(borders); bi++) {
        check_case(LUMEN_F32, 1, 3, 5, 4, 11, borders[bi], 41 + bi);
        check_case(LUMEN_F32, 1, 1, 1, 1, 9, borders[bi], 51 + bi);
        check_case(LUMEN_U8, 1, 3, 2, 9, 13, borders[bi], 61 + bi);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_borders),
        cmocka_unit_test(test_kernel_larger_than_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
