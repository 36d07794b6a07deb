/* gaussian_blur: OpenCV's GaussianBlur, kernel and size rules included. */
#include "op_common.h"

#include <math.h>
#include <stdlib.h>

lumen_status lumen_gaussian_kernel(int n, double sigma, float *out)
{
    lumen_clear_error();
    if (n < 1 || n > LUMEN_MAX_KSIZE)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ksize: expected 1..%d, got %d",
                               LUMEN_MAX_KSIZE, n);
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: kernel buffer is NULL");
    if (isnan(sigma))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "sigma: NaN is not a sigma");
    lumen_gaussian_taps(n, sigma, out);
    return LUMEN_OK;
}

int lumen_gaussian_ksize(double sigma, lumen_dtype dtype)
{
    return lumen_gaussian_ksize_of(sigma, dtype == LUMEN_U8); /* > max: "too large" */
}

/* Derives and checks one axis' size and sigma as OpenCV's createGaussianKernels. */
static lumen_status resolve_axis(int *ksize, double *sigma, lumen_dtype dtype, const char *kname,
                                 const char *sname)
{
    if (!isfinite(*sigma))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: must be finite, got %g", sname,
                               *sigma);
    if (*ksize <= 0 && *sigma > 0) *ksize = lumen_gaussian_ksize(*sigma, dtype);
    if (*ksize <= 0)
        return lumen_set_error(
            LUMEN_ERR_INVALID_ARGUMENT,
            "%s: is %d and %s is %g; give a positive odd size or a positive sigma", kname, *ksize,
            sname, *sigma);
    if (*ksize % 2 == 0 || *ksize > LUMEN_MAX_KSIZE)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: must be odd and at most %d, got %d",
                               kname, LUMEN_MAX_KSIZE, *ksize);
    if (*sigma < 0) *sigma = 0;
    return LUMEN_OK;
}

lumen_gaussian_options lumen_gaussian_options_default(void)
{
    lumen_gaussian_options o = {.ksize_x = 0, /* 0: derived from sigma */
                                .ksize_y = 0,
                                .sigma_x = 0.0,
                                .sigma_y = 0.0,
                                .border = LUMEN_BORDER_REFLECT,
                                .border_value = 0.0f,
                                .precision = LUMEN_PRECISION_EXACT,
                                .method = LUMEN_METHOD_AUTO};
    return o;
}

/* Exact: OpenCV's kernels through sep_filter2d, which weighs separable against FFT; with
 * `method` set, only the method sep_filter2d would run is asked for (nothing runs). */
static lumen_status blur_exact(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                               const lumen_gaussian_options *o, lumen_run_info *info,
                               lumen_method *method)
{
    float *kx = malloc(sizeof(float) * (size_t)(o->ksize_x + o->ksize_y));
    if (!kx) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    float *ky = kx + o->ksize_x;
    lumen_filter_options fo = lumen_filter_options_default();
    fo.border = o->border, fo.border_value = o->border_value, fo.method = o->method;
    fo.halo = o->halo;
    lumen_status s;
    if (!(s = lumen_gaussian_kernel(o->ksize_x, o->sigma_x, kx)) &&
        !(s = lumen_gaussian_kernel(o->ksize_y, o->sigma_y, ky)))
        s = method ? lumen_sep_filter2d_method(ctx, src, dst, kx, o->ksize_x, ky, o->ksize_y, &fo,
                                               method)
                   : lumen_sep_filter2d(ctx, src, dst, kx, o->ksize_x, ky, o->ksize_y, &fo, info);
    free(kx);
    return s;
}

/* Fast: the backend's recursive filter; cost independent of sigma. */
static lumen_status blur_fast(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                              const lumen_gaussian_options *o, lumen_run_info *info)
{
    lumen_gauss_job job = {.src = src,
                           .dst = dst,
                           .sigma_x = lumen_gaussian_sigma_of(o->sigma_x, o->ksize_x),
                           .sigma_y = lumen_gaussian_sigma_of(o->sigma_y, o->ksize_y),
                           .border = o->border,
                           .border_value = o->border_value};
    lumen_image copy_view;
    void *copy;
    lumen_status s = lumen_op_unalias(&job.src, dst, &copy_view, &copy);
    if (s) return s;
    const lumen_op op = lumen_op_gauss(&job);
    s = lumen_run(ctx, &op, info);
    lumen_op_release_src(copy);
    return s;
}

/* Checks the arguments and resolves the sizes and sigmas into *o. */
static lumen_status prepare(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            const lumen_gaussian_options *opt, lumen_gaussian_options *o)
{
    *o = opt ? *opt : lumen_gaussian_options_default();
    lumen_status s = lumen_op_check_halo(ctx, src, dst, o->border, o->border_value, &o->halo);
    if (s) return s;
    if (o->precision != LUMEN_PRECISION_EXACT && o->precision != LUMEN_PRECISION_FAST)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "precision: unknown value %d",
                               (int)o->precision);
    if (o->precision == LUMEN_PRECISION_FAST && lumen_op_has_halo(&o->halo))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "halo: precision fast has no halo (its recursive filter makes "
                               "every output depend on the whole row); use precision exact");
    if (o->sigma_y <= 0) o->sigma_y = o->sigma_x; /* NaN stays NaN and is refused below */
    if ((s = resolve_axis(&o->ksize_x, &o->sigma_x, src->dtype, "ksize_x", "sigma_x")) ||
        (s = resolve_axis(&o->ksize_y, &o->sigma_y, src->dtype, "ksize_y", "sigma_y")))
        return s;
    return LUMEN_OK;
}

lumen_status lumen_gaussian_blur_ex(lumen_context *ctx, const lumen_image *src,
                                    const lumen_image *dst, const lumen_gaussian_options *opt,
                                    lumen_run_info *info)
{
    lumen_clear_error();
    lumen_gaussian_options o;
    lumen_status s = prepare(ctx, src, dst, opt, &o);
    if (s) return s;
    if (o.precision == LUMEN_PRECISION_FAST) return blur_fast(ctx, src, dst, &o, info);
    return blur_exact(ctx, src, dst, &o, info, NULL);
}

lumen_status lumen_gaussian_blur_method(lumen_context *ctx, const lumen_image *src,
                                        const lumen_image *dst, const lumen_gaussian_options *opt,
                                        lumen_method *method)
{
    lumen_clear_error();
    if (!method) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "method: out pointer is NULL");
    lumen_image sv, dv;
    src = lumen_op_shape_view(src, &sv), dst = lumen_op_shape_view(dst, &dv);
    lumen_gaussian_options o;
    lumen_status s = prepare(ctx, src, dst, opt, &o);
    if (s) return s;
    if (o.precision == LUMEN_PRECISION_FAST) {
        *method = lumen_op_kind_method(LUMEN_OP_GAUSSIAN_FAST); /* as lumen_run reports it */
        return LUMEN_OK;
    }
    return blur_exact(ctx, src, dst, &o, NULL, method);
}

lumen_status lumen_gaussian_blur(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                                 int ksize_x, int ksize_y, double sigma_x, double sigma_y,
                                 lumen_border border, float border_value, lumen_run_info *info)
{
    lumen_gaussian_options o = lumen_gaussian_options_default();
    o.ksize_x = ksize_x, o.ksize_y = ksize_y, o.sigma_x = sigma_x, o.sigma_y = sigma_y;
    o.border = border, o.border_value = border_value;
    return lumen_gaussian_blur_ex(ctx, src, dst, &o, info);
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum {
    GB_SRC,
    GB_SIGMA,
    GB_SIGMA_Y,
    GB_KSIZE,
    GB_BORDER,
    GB_VALUE,
    GB_PRECISION,
    GB_METHOD,
    GB_HALO_Y,
    GB_HALO_X,
    GB_N
};

static const lumen_choice precision_choices[] = {
    {"exact", LUMEN_PRECISION_EXACT}, {"fast", LUMEN_PRECISION_FAST}, {NULL, 0}};

static const lumen_arg_desc gaussian_blur_args[GB_N] = {
    [GB_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image to blur"},
    [GB_SIGMA] = {.name = "sigma",
                  .type = LUMEN_ARG_REAL,
                  .flags = LUMEN_ARG_REQUIRED,
                  .max = 1e6,
                  .help = "horizontal sigma in pixels; 0 derives it from ksize "
                          "(0.3*((k-1)/2-1)+0.8)"},
    [GB_SIGMA_Y] = {.name = "sigma_y",
                    .type = LUMEN_ARG_REAL,
                    .flags = LUMEN_ARG_NULLABLE,
                    .def_text = "sigma",
                    .max = 1e6,
                    .help = "vertical sigma in pixels"},
    [GB_KSIZE] = {.name = "ksize",
                  .type = LUMEN_ARG_INT_PAIR,
                  .flags = LUMEN_ARG_NULLABLE | LUMEN_ARG_PAIR_XY,
                  .def_text = "derived from sigma (round(sigma*8+1)|1, *6 for u8)",
                  .max = LUMEN_MAX_KSIZE,
                  .help = "odd kernel width and height (kw, kh); 0 derives a size from its sigma"},
    LUMEN_DESC_BORDER_ARGS,
    [GB_PRECISION] = {.name = "precision",
                      .type = LUMEN_ARG_ENUM,
                      .def = {LUMEN_PRECISION_EXACT, 0},
                      .choices = precision_choices,
                      .help =
                          "exact (OpenCV's kernel) or fast (a recursive approximation whose cost "
                          "does not grow with sigma; error bound in docs/gaussian-fast.md)"},
    [GB_METHOD] =
        {.name = "method",
         .type = LUMEN_ARG_ENUM,
         .def = {LUMEN_METHOD_AUTO, 0},
         .choices = lumen_sep_method_choices,
         .help = "exact precision only: auto (the cheaper by the cost model), separable or fft"},
    LUMEN_DESC_HALO_ARGS,
};

static lumen_status gaussian_blur_shape(const lumen_value *v, lumen_out_shape *out)
{
    return lumen_desc_shape_less_halo(v, GB_HALO_Y, GB_HALO_X, out);
}

static lumen_status gaussian_blur_invoke(lumen_context *ctx, const lumen_value *v,
                                         const lumen_image *out, lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_gaussian_blur_desc;
    lumen_gaussian_options o = lumen_gaussian_options_default();
    o.sigma_x = lumen_value_real(d, v, GB_SIGMA);
    o.sigma_y = v[GB_SIGMA_Y].given ? v[GB_SIGMA_Y].u.real : o.sigma_x;
    if (v[GB_KSIZE].given) lumen_value_pair(d, v, GB_KSIZE, &o.ksize_x, &o.ksize_y);
    o.border = (lumen_border)lumen_value_int(d, v, GB_BORDER);
    o.border_value = (float)lumen_value_real(d, v, GB_VALUE);
    o.precision = (lumen_precision)lumen_value_int(d, v, GB_PRECISION);
    o.method = (lumen_method)lumen_value_int(d, v, GB_METHOD);
    o.halo = lumen_desc_halo(v, GB_HALO_Y, GB_HALO_X);
    return lumen_gaussian_blur_ex(ctx, v[GB_SRC].u.image, out, &o, info);
}

const lumen_op_desc lumen_gaussian_blur_desc = {
    .name = "gaussian_blur",
    .command = "gaussian-blur",
    .summary = "Gaussian blur with OpenCV's kernel (cv2.GaussianBlur)",
    .help = "Blurs with getGaussianKernel's separable kernel. Give sigma, ksize or both: a "
            "missing size is derived from sigma, a zero sigma from the size. Each channel is "
            "blurred independently.",
    .args = gaussian_blur_args,
    .n_args = GB_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the blurred image: src's shape, and src's dtype unless asked otherwise",
    .output_shape = gaussian_blur_shape,
    .invoke = gaussian_blur_invoke,
};
