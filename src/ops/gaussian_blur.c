/* gaussian_blur: OpenCV's GaussianBlur, kernel and size rules included. */
#include "op_common.h"

#include <math.h>
#include <stdlib.h>

/*
 * OpenCV's fixed kernels for odd n <= 9 when sigma <= 0 (getGaussianKernel in
 * OpenCV 4.x: 1, 3, 5 and 7 taps from the old small table, 9 taps as x/256).
 */
static const float small_gaussian[5][9] = {
    {1.0f},
    {0.25f, 0.5f, 0.25f},
    {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f},
    {0.03125f, 0.109375f, 0.21875f, 0.28125f, 0.21875f, 0.109375f, 0.03125f},
    {4 / 256.0f, 13 / 256.0f, 30 / 256.0f, 51 / 256.0f, 60 / 256.0f, 51 / 256.0f, 30 / 256.0f,
     13 / 256.0f, 4 / 256.0f},
};

lumen_status lumen_gaussian_kernel(int n, double sigma, float *out)
{
    lumen_clear_error();
    if (n < 1 || n > LUMEN_MAX_KSIZE)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ksize: expected 1..%d, got %d",
                               LUMEN_MAX_KSIZE, n);
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: kernel buffer is NULL");
    if (isnan(sigma)) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "sigma: NaN is not a sigma");
    if (n % 2 == 1 && n <= 9 && sigma <= 0) {
        for (int i = 0; i < n; i++) out[i] = small_gaussian[n / 2][i];
        return LUMEN_OK;
    }
    double s = sigma > 0 ? sigma : ((n - 1) * 0.5 - 1) * 0.3 + 0.8;
    double scale2 = -0.5 / (s * s), sum = 0.0;
    double *t = malloc(sizeof(double) * (size_t)n);
    if (!t) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    for (int i = 0; i < n; i++) {
        double x = i - (n - 1) * 0.5;
        t[i] = exp(scale2 * x * x);
        sum += t[i];
    }
    for (int i = 0; i < n; i++) out[i] = (float)(t[i] / sum);
    free(t);
    return LUMEN_OK;
}

int lumen_gaussian_ksize(double sigma, lumen_dtype dtype)
{
    double k = sigma * (dtype == LUMEN_U8 ? 3 : 4) * 2 + 1;
    if (!(k < LUMEN_MAX_KSIZE)) return LUMEN_MAX_KSIZE + 1; /* caller reports "too large" */
    return (int)lrint(k) | 1;
}

/* Derives and checks one axis' size and sigma as OpenCV's createGaussianKernels. */
static lumen_status resolve_axis(int *ksize, double *sigma, lumen_dtype dtype, const char *kname,
                                 const char *sname)
{
    if (!isfinite(*sigma))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: must be finite, got %g", sname, *sigma);
    if (*ksize <= 0 && *sigma > 0) *ksize = lumen_gaussian_ksize(*sigma, dtype);
    if (*ksize <= 0)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: is %d and %s is %g; give a positive odd size or a positive sigma",
                               kname, *ksize, sname, *sigma);
    if (*ksize % 2 == 0 || *ksize > LUMEN_MAX_KSIZE)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: must be odd and at most %d, got %d",
                               kname, LUMEN_MAX_KSIZE, *ksize);
    if (*sigma < 0) *sigma = 0;
    return LUMEN_OK;
}

lumen_status lumen_gaussian_blur(lumen_context *ctx, const lumen_image *src,
                                 const lumen_image *dst, int ksize_x, int ksize_y, double sigma_x,
                                 double sigma_y, lumen_border border, float border_value,
                                 lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s = lumen_op_check_common(ctx, src, dst, border, border_value);
    if (s) return s;
    if (sigma_y <= 0) sigma_y = sigma_x; /* NaN stays NaN and is refused below */
    if ((s = resolve_axis(&ksize_x, &sigma_x, src->dtype, "ksize_x", "sigma_x")) ||
        (s = resolve_axis(&ksize_y, &sigma_y, src->dtype, "ksize_y", "sigma_y")))
        return s;
    float *kx = malloc(sizeof(float) * (size_t)(ksize_x + ksize_y));
    if (!kx) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    float *ky = kx + ksize_x;
    lumen_filter_options o = lumen_filter_options_default();
    o.border = border, o.border_value = border_value;
    if (!(s = lumen_gaussian_kernel(ksize_x, sigma_x, kx)) &&
        !(s = lumen_gaussian_kernel(ksize_y, sigma_y, ky)))
        s = lumen_sep_filter2d(ctx, src, dst, kx, ksize_x, ky, ksize_y, &o, info);
    free(kx);
    return s;
}
