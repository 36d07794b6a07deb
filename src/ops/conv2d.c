/* conv2d: NCHW cross-correlation with strides, padding, dilation and groups (PyTorch's). */
#include "conv_common.h"

lumen_conv2d_params lumen_conv2d_params_default(void)
{
    lumen_conv2d_params p = {.stride_h = 1,
                             .stride_w = 1,
                             .pad_h = 0,
                             .pad_w = 0,
                             .dilation_h = 1,
                             .dilation_w = 1,
                             .groups = 1,
                             .output_pad_h = 0,
                             .output_pad_w = 0};
    return p;
}

lumen_status lumen_conv2d_output_size(const lumen_image *x, const lumen_image *w,
                                      const lumen_conv2d_params *p, int64_t *out_h, int64_t *out_w)
{
    return lumen_conv_output_size(LUMEN_OP_CONV2D, x, w, p, out_h, out_w);
}

lumen_status lumen_conv2d(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                          const float *bias, const lumen_conv2d_params *p, const lumen_image *y,
                          lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run(LUMEN_OP_CONV2D, ctx, x, w, bias, p, y, info);
}

lumen_status lumen_conv2d_alloc(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                                const float *bias, const lumen_conv2d_params *p, lumen_image *y,
                                lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run_alloc(LUMEN_OP_CONV2D, ctx, x, w, bias, p, y, info);
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum { CV_X, CV_WEIGHT, CV_BIAS, CV_STRIDE, CV_PADDING, CV_DILATION, CV_GROUPS, CV_N };

static const lumen_arg_desc conv2d_args[CV_N] = {
    LUMEN_DESC_CONV_TENSOR_ARGS("weights, f32/f16/bf16 K x C/groups x R x S"),
    [CV_STRIDE] = LUMEN_DESC_CONV_PAIR("stride", 1, 1, "step (h, w) between output samples"),
    [CV_PADDING] =
        LUMEN_DESC_CONV_PAIR("padding", 0, 0, "zero rows and columns (h, w) added on both sides"),
    [CV_DILATION] = LUMEN_DESC_CONV_PAIR("dilation", 1, 1, "spacing (h, w) between kernel taps"),
    [CV_GROUPS] = {.name = "groups",
                   .type = LUMEN_ARG_INT,
                   .def = {1, 0},
                   .min = 1,
                   .max = INT32_MAX,
                   .help = "channel groups; divides C and K (C for a depthwise convolution)"},
};

static lumen_conv2d_params conv2d_params(const lumen_value *v)
{
    const lumen_op_desc *d = &lumen_conv2d_desc;
    lumen_conv2d_params p = lumen_conv2d_params_default();
    lumen_value_pair(d, v, CV_STRIDE, &p.stride_h, &p.stride_w);
    lumen_value_pair(d, v, CV_PADDING, &p.pad_h, &p.pad_w);
    lumen_value_pair(d, v, CV_DILATION, &p.dilation_h, &p.dilation_w);
    p.groups = (int)lumen_value_int(d, v, CV_GROUPS);
    return p;
}

static lumen_status conv2d_shape(const lumen_value *v, lumen_out_shape *out)
{
    const lumen_conv2d_params p = conv2d_params(v);
    const lumen_image *x = v[CV_X].u.image, *w = v[CV_WEIGHT].u.image;
    int64_t oh, ow;
    lumen_status s = lumen_conv2d_output_size(x, w, &p, &oh, &ow);
    if (s || (s = lumen_desc_conv_bias(&v[CV_BIAS], w->n))) return s;
    *out = (lumen_out_shape){LUMEN_ARG_TENSOR, x->dtype, x->n, w->n, oh, ow}; /* torch: x's dtype */
    return LUMEN_OK;
}

static lumen_status conv2d_invoke(lumen_context *ctx, const lumen_value *v, const lumen_image *out,
                                  lumen_run_info *info)
{
    const lumen_conv2d_params p = conv2d_params(v);
    lumen_status s = lumen_desc_conv_bias(&v[CV_BIAS], v[CV_WEIGHT].u.image->n);
    if (s) return s;
    const float *bias = v[CV_BIAS].given ? v[CV_BIAS].u.array.data : NULL;
    return lumen_conv2d(ctx, v[CV_X].u.image, v[CV_WEIGHT].u.image, bias, &p, out, info);
}

const lumen_op_desc lumen_conv2d_desc = {
    .name = "conv2d",
    .command = "conv",
    .summary = "NCHW convolution of neural networks (torch.nn.functional.conv2d)",
    .help = "Cross-correlation of x with weight, plus bias, with PyTorch's shapes and rules: "
            "zero padding on both sides, strides, dilation and groups. f32, f16 or bf16 (f32 sums).",
    .args = conv2d_args,
    .n_args = CV_N,
    .output = LUMEN_ARG_TENSOR,
    .output_help = "x's dtype, N x K x P x Q, P = (H + 2*padding - dilation*(R-1) - 1) / stride + 1 "
                   "(Q likewise)",
    .output_shape = conv2d_shape,
    .invoke = conv2d_invoke,
};
