/* filter2d: correlation (or convolution) with an arbitrary kh x kw kernel. */
#include "op_common.h"

#include <math.h>
#include <stdlib.h>

lumen_filter_options lumen_filter_options_default(void)
{
    lumen_filter_options o = {.border = LUMEN_BORDER_REFLECT,
                              .border_value = 0.0f,
                              .anchor_x = -1,
                              .anchor_y = -1,
                              .convolve = 0,
                              .method = LUMEN_METHOD_AUTO};
    return o;
}

/* kx = row pi of k, ky = column pj divided by the pivot k[pi][pj]. */
static void factor_at(const float *k, int kw, int kh, int pi, int pj, float *kx, float *ky)
{
    double p = k[pi * kw + pj];
    for (int j = 0; j < kw; j++)
        kx[j] = k[pi * kw + j];
    for (int i = 0; i < kh; i++)
        ky[i] = (float)(k[i * kw + pj] / p);
}

/* Largest |ky[i]*kx[j] - k[i][j]| of a factorisation. */
static double factor_error(const float *k, int kw, int kh, const float *kx, const float *ky)
{
    double err = 0.0;
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++)
            err = fmax(err, fabs((double)ky[i] * kx[j] - k[i * kw + j]));
    return err;
}

static bool is_power_of_two(float v)
{
    int e;
    return v != 0.0f && fabs(frexp(v, &e)) == 0.5;
}

/*
 * Rank-1 test: k == ky (x) kx within 1e-6 of max|k|. Pivot on the largest |k|;
 * when that division is inexact, a power-of-two pivot in the same row gives an
 * exact factorisation of dyadic kernels such as binomials, so integer images
 * round exact .5 ties as the direct sum does.
 */
static bool factor_rank1(const float *k, int kw, int kh, float *kx, float *ky)
{
    int pi = 0, pj = 0;
    double amax = 0.0;
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++)
            if (fabs(k[i * kw + j]) > amax) amax = fabs(k[i * kw + j]), pi = i, pj = j;
    if (amax == 0.0) return false;
    factor_at(k, kw, kh, pi, pj, kx, ky);
    double err = factor_error(k, kw, kh, kx, ky);
    if (err > 1e-6 * amax) return false;
    for (int j = 0; j < kw && err > 0.0; j++) {
        if (!is_power_of_two(k[pi * kw + j])) continue;
        factor_at(k, kw, kh, pi, j, kx, ky);
        err = factor_error(k, kw, kh, kx, ky);
    }
    if (err > 1e-6 * amax) factor_at(k, kw, kh, pi, pj, kx, ky);
    return true;
}

static lumen_status check_filter2d(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const float *kernel, int kw, int kh,
                                   const lumen_filter_options *o)
{
    lumen_status s = lumen_op_check_common(ctx, src, dst, o->border, o->border_value);
    if (s || (s = lumen_op_check_ksize(kw, "kw")) || (s = lumen_op_check_ksize(kh, "kh"))) return s;
    if ((s = lumen_op_check_kernel_values(kernel, (int64_t)kw * kh, "kernel"))) return s;
    if ((unsigned)o->method > LUMEN_METHOD_FFT)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "method: unknown method %d",
                               (int)o->method);
    return LUMEN_OK;
}

/*
 * The methods auto may use: direct always, separable for rank-1 2-D kernels
 * (1-D ones gain nothing from a second pass and run direct, exactly), FFT
 * for kernels big enough.
 */
static unsigned auto_methods(const lumen_filter_job *job, bool rank1)
{
    unsigned m = 1u << LUMEN_METHOD_DIRECT;
    if (rank1 && job->kw > 1 && job->kh > 1) m |= 1u << LUMEN_METHOD_SEPARABLE;
    if ((int64_t)job->kw * job->kh >= LUMEN_FFT_MIN_TAPS) m |= 1u << LUMEN_METHOD_FFT;
    return m;
}

/* Runs the job by the wanted method; auto weighs direct, separable (rank 1) and FFT. */
static lumen_status run_with_method(lumen_context *ctx, lumen_filter_job *job, lumen_method want,
                                    lumen_run_info *info)
{
    if (want == LUMEN_METHOD_DIRECT || want == LUMEN_METHOD_FFT)
        return lumen_run_filter(ctx, job, want, info);
    float *kx = malloc(sizeof(float) * (size_t)(job->kw + job->kh));
    if (!kx) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    float *ky = kx + job->kw;
    bool rank1 = factor_rank1(job->kernel, job->kw, job->kh, kx, ky);
    lumen_status s;
    if (rank1) job->kx = kx, job->ky = ky, job->scale = 1.0f;
    if (want == LUMEN_METHOD_SEPARABLE && !rank1)
        s = lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                            "method: the %dx%d kernel is not separable (rank > 1); use direct, fft "
                            "or auto",
                            job->kw, job->kh);
    else if (want == LUMEN_METHOD_SEPARABLE)
        s = lumen_run_filter(ctx, job, LUMEN_METHOD_SEPARABLE, info);
    else
        s = lumen_run_filter(ctx, job, lumen_choose_method(ctx, job, auto_methods(job, rank1)),
                             info);
    free(kx);
    return s;
}

lumen_status lumen_filter2d(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            const float *kernel, int kw, int kh, const lumen_filter_options *opt,
                            lumen_run_info *info)
{
    lumen_clear_error();
    lumen_filter_options o = opt ? *opt : lumen_filter_options_default();
    lumen_status s = check_filter2d(ctx, src, dst, kernel, kw, kh, &o);
    lumen_filter_job job = {.src = src,
                            .dst = dst,
                            .taps = LUMEN_TAPS_2D,
                            .border = o.border,
                            .border_value = o.border_value,
                            .kw = kw,
                            .kh = kh,
                            .kernel = kernel,
                            .scale = 1.0f};
    if (s || (s = lumen_op_resolve_anchor(o.anchor_x, kw, "anchor_x", &job.ax)) ||
        (s = lumen_op_resolve_anchor(o.anchor_y, kh, "anchor_y", &job.ay)))
        return s;
    float *flipped = NULL;
    if (o.convolve) {
        /* Convolution = correlation with the flipped kernel and mirrored anchor. */
        if (!(flipped = lumen_op_reversed(kernel, (int64_t)kw * kh)))
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
        job.kernel = flipped, job.ax = kw - 1 - job.ax, job.ay = kh - 1 - job.ay;
    }
    lumen_image copy_view;
    void *copy;
    if (!(s = lumen_op_unalias(&job.src, job.dst, &copy_view, &copy))) {
        s = run_with_method(ctx, &job, o.method, info);
        lumen_op_release_src(copy);
    }
    free(flipped);
    return s;
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum { F2_SRC, F2_KERNEL, F2_BORDER, F2_VALUE, F2_ANCHOR, F2_CONVOLVE, F2_METHOD, F2_N };

static const lumen_arg_desc filter2d_args[F2_N] = {
    [F2_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image to filter"},
    [F2_KERNEL] = {.name = "kernel",
                   .type = LUMEN_ARG_KERNEL,
                   .flags = LUMEN_ARG_REQUIRED,
                   .help = "2-D kernel, kh x kw, at most 65536 on a side and 2^24 taps"},
    LUMEN_DESC_BORDER_ARGS,
    LUMEN_DESC_ANCHOR_ARGS,
    [F2_METHOD] =
        {.name = "method",
         .type = LUMEN_ARG_ENUM,
         .def = {LUMEN_METHOD_AUTO, 0},
         .choices = lumen_filter_method_choices,
         .help = "auto (the cheapest by the machine's cost model), direct (every tap), "
                 "separable (rank-1 kernels: a row then a column pass) or fft (tiled FFT, for "
                 "big kernels)"},
};

static lumen_status filter2d_invoke(lumen_context *ctx, const lumen_value *v,
                                    const lumen_image *out, lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_filter2d_desc;
    lumen_filter_options o = lumen_filter_options_default();
    o.border = (lumen_border)lumen_value_int(d, v, F2_BORDER);
    o.border_value = (float)lumen_value_real(d, v, F2_VALUE);
    if (v[F2_ANCHOR].given) lumen_value_pair(d, v, F2_ANCHOR, &o.anchor_x, &o.anchor_y);
    o.convolve = (int)lumen_value_int(d, v, F2_CONVOLVE);
    o.method = (lumen_method)lumen_value_int(d, v, F2_METHOD);
    const lumen_value *k = &v[F2_KERNEL];
    return lumen_filter2d(ctx, v[F2_SRC].u.image, out, k->u.array.data, (int)k->u.array.w,
                          (int)k->u.array.h, &o, info);
}

const lumen_op_desc lumen_filter2d_desc = {
    .name = "filter2d",
    .command = "filter2d",
    .summary = "2-D correlation (or convolution) with an arbitrary kernel (cv2.filter2D)",
    .help = "dst(x,y) = sum k(i,j) * src(x+j-ax, y+i-ay): correlation, as cv2.filter2D; "
            "convolve flips the kernel. Each channel is filtered independently.",
    .args = filter2d_args,
    .n_args = F2_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the filtered image: src's shape, and src's dtype unless asked otherwise",
    .output_shape = lumen_desc_shape_like_src,
    .invoke = filter2d_invoke,
};
