/* sep_filter2d: a row kernel then a column kernel (cv2.sepFilter2D). */
#include "op_common.h"

#include <stdlib.h>

#define SEP_METHODS ((1u << LUMEN_METHOD_SEPARABLE) | (1u << LUMEN_METHOD_FFT))

/* Checks the arguments, fills *job and chooses *method (auto: separable, or the FFT where
 * the cost model finds it cheaper for kernels big enough); for convolution the taps are
 * flipped into *fx and *fy (freed by the caller, NULL otherwise). */
static lumen_status prepare(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            const float *kx, int kw, const float *ky, int kh,
                            const lumen_filter_options *o, lumen_filter_job *job, float **fx,
                            float **fy, lumen_method *method)
{
    *fx = *fy = NULL;
    lumen_status s = lumen_op_check_halo(ctx, src, dst, o->border, o->border_value, &o->halo);
    if (s || (s = lumen_op_check_ksize(kw, "kw")) || (s = lumen_op_check_ksize(kh, "kh")) ||
        (s = lumen_op_check_kernel_values(kx, kw, "kx")) ||
        (s = lumen_op_check_kernel_values(ky, kh, "ky")))
        return s;
    if (o->method != LUMEN_METHOD_AUTO && o->method != LUMEN_METHOD_SEPARABLE &&
        o->method != LUMEN_METHOD_FFT)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "method: sep_filter2d runs auto, separable or fft, not %s",
                               lumen_method_name(o->method));
    *job = (lumen_filter_job){.src = src,
                              .dst = dst,
                              .taps = LUMEN_TAPS_SEPARABLE,
                              .border = o->border,
                              .border_value = o->border_value,
                              .kw = kw,
                              .kh = kh,
                              .kx = kx,
                              .ky = ky,
                              .scale = 1.0f};
    if ((s = lumen_op_resolve_anchor(o->anchor_x, kw, "anchor_x", &job->ax)) ||
        (s = lumen_op_resolve_anchor(o->anchor_y, kh, "anchor_y", &job->ay)))
        return s;
    if (o->convolve) {
        *fx = lumen_op_reversed(kx, kw), *fy = lumen_op_reversed(ky, kh);
        if (!*fx || !*fy) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
        job->kx = *fx, job->ky = *fy, job->ax = kw - 1 - job->ax, job->ay = kh - 1 - job->ay;
    }
    lumen_op_apply_halo(job, &o->halo);
    *method = o->method;
    if (*method == LUMEN_METHOD_AUTO) /* the FFT only weighed for kernels where it can pay */
        *method = (int64_t)kw * kh >= LUMEN_FFT_MIN_TAPS
                      ? lumen_choose_method(ctx, job, SEP_METHODS)
                      : LUMEN_METHOD_SEPARABLE;
    return LUMEN_OK;
}

lumen_status lumen_sep_filter2d(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                                const float *kx, int kw, const float *ky, int kh,
                                const lumen_filter_options *opt, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_filter_options o = opt ? *opt : lumen_filter_options_default();
    lumen_filter_job job;
    lumen_method m = LUMEN_METHOD_AUTO;
    float *fx, *fy;
    lumen_status s = prepare(ctx, src, dst, kx, kw, ky, kh, &o, &job, &fx, &fy, &m);
    lumen_image copy_view;
    void *copy;
    if (!s && !(s = lumen_op_unalias(&job.src, job.dst, &copy_view, &copy))) {
        s = lumen_run_filter(ctx, &job, m, info);
        lumen_op_release_src(copy);
    }
    free(fx), free(fy);
    return s;
}

lumen_status lumen_sep_filter2d_method(lumen_context *ctx, const lumen_image *src,
                                       const lumen_image *dst, const float *kx, int kw,
                                       const float *ky, int kh, const lumen_filter_options *opt,
                                       lumen_method *method)
{
    lumen_clear_error();
    if (!method) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "method: out pointer is NULL");
    lumen_filter_options o = opt ? *opt : lumen_filter_options_default();
    lumen_filter_job job;
    lumen_image sv, dv;
    float *fx, *fy;
    lumen_status s = prepare(ctx, lumen_op_shape_view(src, &sv), lumen_op_shape_view(dst, &dv), kx,
                             kw, ky, kh, &o, &job, &fx, &fy, method);
    free(fx), free(fy);
    return s;
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum {
    SF_SRC,
    SF_KX,
    SF_KY,
    SF_BORDER,
    SF_VALUE,
    SF_ANCHOR,
    SF_CONVOLVE,
    SF_METHOD,
    SF_HALO_Y,
    SF_HALO_X,
    SF_N
};

static const lumen_arg_desc sep_filter2d_args[SF_N] = {
    [SF_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image to filter"},
    [SF_KX] = {.name = "kx",
               .type = LUMEN_ARG_VECTOR,
               .flags = LUMEN_ARG_REQUIRED,
               .help = "row kernel (kw taps), applied along x first"},
    [SF_KY] = {.name = "ky",
               .type = LUMEN_ARG_VECTOR,
               .flags = LUMEN_ARG_REQUIRED,
               .help = "column kernel (kh taps), applied along y"},
    LUMEN_DESC_BORDER_ARGS,
    LUMEN_DESC_ANCHOR_ARGS,
    [SF_METHOD] = {.name = "method",
                   .type = LUMEN_ARG_ENUM,
                   .def = {LUMEN_METHOD_AUTO, 0},
                   .choices = lumen_sep_method_choices,
                   .help =
                       "auto (the cheaper by the cost model), separable (two 1-D passes) or fft"},
    LUMEN_DESC_HALO_ARGS,
};

static lumen_status sep_filter2d_shape(const lumen_value *v, lumen_out_shape *out)
{
    return lumen_desc_shape_less_halo(v, SF_HALO_Y, SF_HALO_X, out);
}

static lumen_status sep_filter2d_invoke(lumen_context *ctx, const lumen_value *v,
                                        const lumen_image *out, lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_sep_filter2d_desc;
    lumen_filter_options o = lumen_filter_options_default();
    o.border = (lumen_border)lumen_value_int(d, v, SF_BORDER);
    o.border_value = (float)lumen_value_real(d, v, SF_VALUE);
    if (v[SF_ANCHOR].given) lumen_value_pair(d, v, SF_ANCHOR, &o.anchor_x, &o.anchor_y);
    o.convolve = (int)lumen_value_int(d, v, SF_CONVOLVE);
    o.method = (lumen_method)lumen_value_int(d, v, SF_METHOD);
    o.halo = lumen_desc_halo(v, SF_HALO_Y, SF_HALO_X);
    const lumen_value *kx = &v[SF_KX], *ky = &v[SF_KY];
    return lumen_sep_filter2d(ctx, v[SF_SRC].u.image, out, kx->u.array.data, (int)kx->u.array.w,
                              ky->u.array.data, (int)ky->u.array.w, &o, info);
}

const lumen_op_desc lumen_sep_filter2d_desc = {
    .name = "sep_filter2d",
    .command = "sep-filter2d",
    .summary = "row kernel then column kernel (cv2.sepFilter2D)",
    .help = "Filters every row with kx, then every column with ky; anchors, borders and "
            "convolve as filter2d. Each channel is filtered independently.",
    .args = sep_filter2d_args,
    .n_args = SF_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the filtered image: src's shape, and src's dtype unless asked otherwise",
    .output_shape = sep_filter2d_shape,
    .invoke = sep_filter2d_invoke,
};
