/* box_blur: cv2.blur (normalised) and cv2.boxFilter(normalize=False). */
#include "op_common.h"

#include <stdlib.h>

lumen_status lumen_box_blur(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            int kw, int kh, int normalize, lumen_border border, float border_value,
                            lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s = lumen_op_check_common(ctx, src, dst, border, border_value);
    if (s || (s = lumen_op_check_ksize(kw, "kw")) || (s = lumen_op_check_ksize(kh, "kh"))) return s;
    float *ones = malloc(sizeof(float) * (size_t)(kw > kh ? kw : kh));
    if (!ones) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "kernel: out of memory");
    for (int i = 0; i < (kw > kh ? kw : kh); i++) ones[i] = 1.0f;
    /* Sums of ones stay exact for integer data; the 1/(kw*kh) comes last, as in OpenCV. */
    float scale = normalize ? (float)(1.0 / ((double)kw * kh)) : 1.0f;
    lumen_filter_job job = {src, dst, border, border_value, kw, kh, kw / 2, kh / 2, NULL, ones, ones, scale};
    lumen_image copy_view;
    void *copy;
    if (!(s = lumen_op_unalias(&job.src, job.dst, &copy_view, &copy))) {
        s = lumen_run_filter(ctx, &job, LUMEN_METHOD_SEPARABLE, info);
        lumen_op_release_src(copy);
    }
    free(ones);
    return s;
}
