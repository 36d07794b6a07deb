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
    lumen_status s = lumen_op_check_halo(ctx, src, dst, o->border, o->border_value, &o->halo);
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

/* The method `want` comes to for this job: direct and FFT as asked, separable when the kernel
 * is rank 1, auto the cheapest by the cost model among direct, separable (rank 1) and FFT. A
 * rank-1 kernel's factors are stored in kx (kw + kh floats) and set as the job's kx and ky,
 * which the separable method runs and the cost model weighs. */
static lumen_status resolve_method(lumen_context *ctx, lumen_filter_job *job, lumen_method want,
                                   float *kx, lumen_method *method)
{
    *method = want;
    if (want == LUMEN_METHOD_DIRECT || want == LUMEN_METHOD_FFT) return LUMEN_OK;
    float *ky = kx + job->kw;
    bool rank1 = factor_rank1(job->kernel, job->kw, job->kh, kx, ky);
    if (rank1) job->kx = kx, job->ky = ky, job->scale = 1.0f;
    if (want == LUMEN_METHOD_SEPARABLE && !rank1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "method: the %dx%d kernel is not separable (rank > 1); use direct, "
                               "fft or auto",
                               job->kw, job->kh);
    if (want == LUMEN_METHOD_AUTO)
        *method = lumen_choose_method(ctx, job, auto_methods(job, rank1));
    return LUMEN_OK;
}

/* Checks the arguments and fills *job; for convolution the kernel is flipped into *flipped
 * (freed by the caller, NULL otherwise) and the anchor mirrored. */
static lumen_status prepare(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            const float *kernel, int kw, int kh, const lumen_filter_options *o,
                            lumen_filter_job *job, float **flipped)
{
    *flipped = NULL;
    lumen_status s = check_filter2d(ctx, src, dst, kernel, kw, kh, o);
    *job = (lumen_filter_job){.src = src,
                              .dst = dst,
                              .taps = LUMEN_TAPS_2D,
                              .border = o->border,
                              .border_value = o->border_value,
                              .kw = kw,
                              .kh = kh,
                              .kernel = kernel,
                              .scale = 1.0f};
    if (s || (s = lumen_op_resolve_anchor(o->anchor_x, kw, "anchor_x", &job->ax)) ||
        (s = lumen_op_resolve_anchor(o->anchor_y, kh, "anchor_y", &job->ay)))
        return s;
    if (o->convolve) {
        /* Convolution = correlation with the flipped kernel and mirrored anchor. */
        if (!(*flipped = lumen_op_reversed(kernel, (int64_t)kw * kh)))
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
        job->kernel = *flipped, job->ax = kw - 1 - job->ax, job->ay = kh - 1 - job->ay;
    }
    lumen_op_apply_halo(job, &o->halo);
    return LUMEN_OK;
}

/* prepare, then resolve_method; run (when not NULL) runs the job by that method. */
static lumen_status filter2d_do(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                                const float *kernel, int kw, int kh,
                                const lumen_filter_options *opt, lumen_method *method,
                                lumen_run_info *info, bool run)
{
    lumen_filter_options o = opt ? *opt : lumen_filter_options_default();
    lumen_filter_job job;
    float *flipped, *kx = NULL;
    lumen_status s = prepare(ctx, src, dst, kernel, kw, kh, &o, &job, &flipped);
    if (!s && o.method != LUMEN_METHOD_DIRECT && o.method != LUMEN_METHOD_FFT &&
        !(kx = malloc(sizeof(float) * (size_t)(kw + kh))))
        s = lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    if (!s) s = resolve_method(ctx, &job, o.method, kx, method);
    lumen_image copy_view;
    void *copy;
    if (!s && run && !(s = lumen_op_unalias(&job.src, job.dst, &copy_view, &copy))) {
        s = lumen_run_filter(ctx, &job, *method, info);
        lumen_op_release_src(copy);
    }
    free(kx);
    free(flipped);
    return s;
}

lumen_status lumen_filter2d(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            const float *kernel, int kw, int kh, const lumen_filter_options *opt,
                            lumen_run_info *info)
{
    lumen_clear_error();
    lumen_method m;
    return filter2d_do(ctx, src, dst, kernel, kw, kh, opt, &m, info, true);
}

lumen_status lumen_filter2d_method(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const float *kernel, int kw, int kh,
                                   const lumen_filter_options *opt, lumen_method *method)
{
    lumen_clear_error();
    if (!method) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "method: out pointer is NULL");
    lumen_image s, d;
    return filter2d_do(ctx, lumen_op_shape_view(src, &s), lumen_op_shape_view(dst, &d), kernel, kw,
                       kh, opt, method, NULL, false);
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum {
    F2_SRC,
    F2_KERNEL,
    F2_BORDER,
    F2_VALUE,
    F2_ANCHOR,
    F2_CONVOLVE,
    F2_METHOD,
    F2_HALO_Y,
    F2_HALO_X,
    F2_N
};

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
    LUMEN_DESC_HALO_ARGS,
};

static lumen_status filter2d_shape(const lumen_value *v, lumen_out_shape *out)
{
    return lumen_desc_shape_less_halo(v, F2_HALO_Y, F2_HALO_X, out);
}

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
    o.halo = lumen_desc_halo(v, F2_HALO_Y, F2_HALO_X);
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
    .output_shape = filter2d_shape,
    .invoke = filter2d_invoke,
};
