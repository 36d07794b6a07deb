/* conv2d: NCHW cross-correlation with strides, padding, dilation and groups (PyTorch's). */
#include "conv_common.h"

lumen_conv2d_params lumen_conv2d_params_default(void)
{
    lumen_conv2d_params p = {1, 1, 0, 0, 1, 1, 1, 0, 0};
    return p;
}

lumen_status lumen_conv2d_output_size(const lumen_image *x, const lumen_image *w,
                                      const lumen_conv2d_params *p, int64_t *out_h,
                                      int64_t *out_w)
{
    return lumen_conv_output_size(LUMEN_CONV_FORWARD, x, w, p, out_h, out_w);
}

lumen_status lumen_conv2d(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                          const float *bias, const lumen_conv2d_params *p, const lumen_image *y,
                          lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run(LUMEN_CONV_FORWARD, ctx, x, w, bias, p, y, info);
}

lumen_status lumen_conv2d_alloc(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                                const float *bias, const lumen_conv2d_params *p, lumen_image *y,
                                lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run_alloc(LUMEN_CONV_FORWARD, ctx, x, w, bias, p, y, info);
}
