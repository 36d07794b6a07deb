/* conv_transpose2d: the adjoint of conv2d (PyTorch's ConvTranspose2d), with output padding. */
#include "conv_common.h"

lumen_status lumen_conv_transpose2d_output_size(const lumen_image *x, const lumen_image *w,
                                                const lumen_conv2d_params *p, int64_t *out_h,
                                                int64_t *out_w)
{
    return lumen_conv_output_size(LUMEN_CONV_TRANSPOSED, x, w, p, out_h, out_w);
}

lumen_status lumen_conv_transpose2d(lumen_context *ctx, const lumen_image *x,
                                    const lumen_image *w, const float *bias,
                                    const lumen_conv2d_params *p, const lumen_image *y,
                                    lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run(LUMEN_CONV_TRANSPOSED, ctx, x, w, bias, p, y, info);
}

lumen_status lumen_conv_transpose2d_alloc(lumen_context *ctx, const lumen_image *x,
                                          const lumen_image *w, const float *bias,
                                          const lumen_conv2d_params *p, lumen_image *y,
                                          lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run_alloc(LUMEN_CONV_TRANSPOSED, ctx, x, w, bias, p, y, info);
}
