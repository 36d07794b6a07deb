/* sep_filter2d: a row kernel then a column kernel (cv2.sepFilter2D). */
#include "op_common.h"

#include <stdlib.h>

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
    if (!(s = lumen_op_unalias(&job, &copy_view, &copy))) {
        s = lumen_run_filter(ctx, &job, LUMEN_METHOD_SEPARABLE, info);
        lumen_op_release_src(copy);
    }
    free(fx), free(fy);
    return s;
}
