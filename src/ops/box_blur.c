/* box_blur: cv2.blur (normalised) and cv2.boxFilter(normalize=False). */
#include "op_common.h"

#include <stdlib.h>

/* Checks the arguments and chooses *method: large boxes weigh the FFT too, for float results
 * only (integer ones keep the exact sums of ones that OpenCV's rounding is defined on); runs
 * the box when `run`. The query and the call share it, so they cannot disagree. */
static lumen_status box_do(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                           int kw, int kh, int normalize, lumen_border border, float border_value,
                           lumen_method *method, lumen_run_info *info, bool run)
{
    lumen_status s = lumen_op_check_common(ctx, src, dst, border, border_value);
    if (s || (s = lumen_op_check_ksize(kw, "kw")) || (s = lumen_op_check_ksize(kh, "kh"))) return s;
    float *ones = malloc(sizeof(float) * (size_t)(kw > kh ? kw : kh));
    if (!ones) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    for (int i = 0; i < (kw > kh ? kw : kh); i++)
        ones[i] = 1.0f;
    /* Sums of ones stay exact for integer data; the 1/(kw*kh) comes last, as in OpenCV. */
    float scale = normalize ? (float)(1.0 / ((double)kw * kh)) : 1.0f;
    lumen_filter_job job = {.src = src,
                            .dst = dst,
                            .taps = LUMEN_TAPS_SEPARABLE,
                            .border = border,
                            .border_value = border_value,
                            .kw = kw,
                            .kh = kh,
                            .ax = kw / 2,
                            .ay = kh / 2,
                            .kx = ones,
                            .ky = ones,
                            .scale = scale};
    *method = LUMEN_METHOD_SEPARABLE;
    if (lumen_dtype_is_float(dst->dtype) && (int64_t)kw * kh >= LUMEN_FFT_MIN_TAPS)
        *method =
            lumen_choose_method(ctx, &job, 1u << LUMEN_METHOD_SEPARABLE | 1u << LUMEN_METHOD_FFT);
    lumen_image copy_view;
    void *copy;
    if (run && !(s = lumen_op_unalias(&job.src, job.dst, &copy_view, &copy))) {
        s = lumen_run_filter(ctx, &job, *method, info);
        lumen_op_release_src(copy);
    }
    free(ones);
    return s;
}

lumen_status lumen_box_blur(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            int kw, int kh, int normalize, lumen_border border, float border_value,
                            lumen_run_info *info)
{
    lumen_clear_error();
    lumen_method m;
    return box_do(ctx, src, dst, kw, kh, normalize, border, border_value, &m, info, true);
}

lumen_status lumen_box_blur_method(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, int kw, int kh, lumen_border border,
                                   float border_value, lumen_method *method)
{
    lumen_clear_error();
    if (!method) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "method: out pointer is NULL");
    lumen_image sv, dv;
    /* normalize does not change the choice: the cost model weighs the taps, not the scale */
    return box_do(ctx, lumen_op_shape_view(src, &sv), lumen_op_shape_view(dst, &dv), kw, kh, 1,
                  border, border_value, method, NULL, false);
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum { BX_SRC, BX_KSIZE, BX_NORMALIZE, BX_BORDER, BX_VALUE, BX_N };

static const lumen_arg_desc box_blur_args[BX_N] = {
    [BX_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image to blur"},
    [BX_KSIZE] = {.name = "ksize",
                  .type = LUMEN_ARG_INT_PAIR,
                  .flags = LUMEN_ARG_REQUIRED | LUMEN_ARG_PAIR_XY,
                  .min = 1,
                  .max = LUMEN_MAX_KSIZE,
                  .help = "box width and height (kw, kh)"},
    [BX_NORMALIZE] = {.name = "normalize",
                      .type = LUMEN_ARG_BOOL,
                      .def = {1, 0},
                      .max = 1,
                      .help = "divide by kw*kh (cv2.blur); false gives plain sums (cv2.boxFilter)"},
    LUMEN_DESC_BORDER_ARGS,
};

static lumen_status box_blur_invoke(lumen_context *ctx, const lumen_value *v,
                                    const lumen_image *out, lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_box_blur_desc;
    int kw, kh;
    lumen_value_pair(d, v, BX_KSIZE, &kw, &kh);
    return lumen_box_blur(ctx, v[BX_SRC].u.image, out, kw, kh,
                          (int)lumen_value_int(d, v, BX_NORMALIZE),
                          (lumen_border)lumen_value_int(d, v, BX_BORDER),
                          (float)lumen_value_real(d, v, BX_VALUE), info);
}

const lumen_op_desc lumen_box_blur_desc = {
    .name = "box_blur",
    .command = "box-blur",
    .summary = "mean (cv2.blur) or sum (cv2.boxFilter) over a box",
    .help = "The mean of a kw x kh window around each pixel, or its plain sum without "
            "normalize. Each channel is filtered independently.",
    .args = box_blur_args,
    .n_args = BX_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the blurred image: src's shape, and src's dtype unless asked otherwise",
    .output_shape = lumen_desc_shape_like_src,
    .invoke = box_blur_invoke,
};
