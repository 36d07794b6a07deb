/* sep_filter2d: a row kernel then a column kernel (cv2.sepFilter2D). */
#include "op_common.h"

#include <stdlib.h>

#define SEP_METHODS ((1u << LUMEN_METHOD_SEPARABLE) | (1u << LUMEN_METHOD_FFT))

lumen_status lumen_sep_filter2d(lumen_context *ctx, const lumen_image *src,
                                const lumen_image *dst, const float *kx, int kw, const float *ky,
                                int kh, const lumen_filter_options *opt, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_filter_options o = opt ? *opt : lumen_filter_options_default();
    lumen_status s = lumen_op_check_common(ctx, src, dst, o.border, o.border_value);
    if (s || (s = lumen_op_check_ksize(kw, "kw")) || (s = lumen_op_check_ksize(kh, "kh")) ||
        (s = lumen_op_check_kernel_values(kx, kw, "kx")) ||
        (s = lumen_op_check_kernel_values(ky, kh, "ky")))
        return s;
    if (o.method != LUMEN_METHOD_AUTO && o.method != LUMEN_METHOD_SEPARABLE &&
        o.method != LUMEN_METHOD_FFT)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "method: sep_filter2d runs auto, separable or fft, not %s",
                               lumen_method_name(o.method));
    lumen_filter_job job = {src, dst, o.border, o.border_value, kw, kh, 0, 0, NULL, kx, ky, 1.0f};
    if ((s = lumen_op_resolve_anchor(o.anchor_x, kw, "anchor_x", &job.ax)) ||
        (s = lumen_op_resolve_anchor(o.anchor_y, kh, "anchor_y", &job.ay)))
        return s;
    float *fx = NULL, *fy = NULL;
    if (o.convolve) {
        fx = lumen_op_reversed(kx, kw), fy = lumen_op_reversed(ky, kh);
        if (!fx || !fy) {
            free(fx), free(fy);
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
        }
        job.kx = fx, job.ky = fy, job.ax = kw - 1 - job.ax, job.ay = kh - 1 - job.ay;
    }
    lumen_image copy_view;
    void *copy;
    if (!(s = lumen_op_unalias(&job.src, job.dst, &copy_view, &copy))) {
        lumen_method m = o.method;
        if (m == LUMEN_METHOD_AUTO) /* the FFT only weighed for kernels where it can pay */
            m = (int64_t)kw * kh >= 16 ? lumen_choose_method(ctx, &job, SEP_METHODS)
                                       : LUMEN_METHOD_SEPARABLE;
        s = lumen_run_filter(ctx, &job, m, info);
        lumen_op_release_src(copy);
    }
    free(fx), free(fy);
    return s;
}
