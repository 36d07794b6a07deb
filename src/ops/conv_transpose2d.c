/* conv_transpose2d: the adjoint of conv2d (PyTorch's ConvTranspose2d), with output padding. */
#include "conv_common.h"

lumen_status lumen_conv_transpose2d_output_size(const lumen_image *x, const lumen_image *w,
                                                const lumen_conv2d_params *p, int64_t *out_h,
                                                int64_t *out_w)
{
    return lumen_conv_output_size(LUMEN_OP_CONV_TRANSPOSE2D, x, w, p, out_h, out_w);
}

lumen_status lumen_conv_transpose2d(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                                    const float *bias, const lumen_conv2d_params *p,
                                    const lumen_image *y, lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run(LUMEN_OP_CONV_TRANSPOSE2D, ctx, x, w, bias, p, y, info);
}

lumen_status lumen_conv_transpose2d_alloc(lumen_context *ctx, const lumen_image *x,
                                          const lumen_image *w, const float *bias,
                                          const lumen_conv2d_params *p, lumen_image *y,
                                          lumen_run_info *info)
{
    lumen_clear_error();
    return lumen_conv_run_alloc(LUMEN_OP_CONV_TRANSPOSE2D, ctx, x, w, bias, p, y, info);
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

/* torch's order: stride, padding, output_padding, groups, dilation. */
enum {
    CT_X,
    CT_WEIGHT,
    CT_BIAS,
    CT_STRIDE,
    CT_PADDING,
    CT_OUTPUT_PADDING,
    CT_GROUPS,
    CT_DILATION,
    CT_N
};

static const lumen_arg_desc conv_transpose2d_args[CT_N] = {
    LUMEN_DESC_CONV_TENSOR_ARGS("weights, f32/f16/bf16 C x K/groups x R x S"),
    [CT_STRIDE] = LUMEN_DESC_CONV_PAIR("stride", 1, 1, "step (h, w) between input samples"),
    [CT_PADDING] = LUMEN_DESC_CONV_PAIR("padding", 0, 0,
                                        "rows and columns (h, w) cut from both sides of the "
                                        "full output"),
    [CT_OUTPUT_PADDING] = LUMEN_DESC_CONV_PAIR("output_padding", 0, 0,
                                               "rows and columns (h, w) added at the end; "
                                               "smaller than stride or dilation"),
    [CT_GROUPS] = {.name = "groups",
                   .type = LUMEN_ARG_INT,
                   .def = {1, 0},
                   .min = 1,
                   .max = INT32_MAX,
                   .help = "channel groups; divides C and K"},
    [CT_DILATION] = LUMEN_DESC_CONV_PAIR("dilation", 1, 1, "spacing (h, w) between kernel taps"),
};

static lumen_conv2d_params conv_transpose2d_params(const lumen_value *v)
{
    const lumen_op_desc *d = &lumen_conv_transpose2d_desc;
    lumen_conv2d_params p = lumen_conv2d_params_default();
    lumen_value_pair(d, v, CT_STRIDE, &p.stride_h, &p.stride_w);
    lumen_value_pair(d, v, CT_PADDING, &p.pad_h, &p.pad_w);
    lumen_value_pair(d, v, CT_OUTPUT_PADDING, &p.output_pad_h, &p.output_pad_w);
    lumen_value_pair(d, v, CT_DILATION, &p.dilation_h, &p.dilation_w);
    p.groups = (int)lumen_value_int(d, v, CT_GROUPS);
    return p;
}

static lumen_status conv_transpose2d_shape(const lumen_value *v, lumen_out_shape *out)
{
    const lumen_conv2d_params p = conv_transpose2d_params(v);
    const lumen_image *x = v[CT_X].u.image, *w = v[CT_WEIGHT].u.image;
    int64_t oh, ow;
    lumen_status s = lumen_conv_transpose2d_output_size(x, w, &p, &oh, &ow);
    const int64_t k = w->c * p.groups;
    if (s || (s = lumen_desc_conv_bias(&v[CT_BIAS], k))) return s;
    *out = (lumen_out_shape){LUMEN_ARG_TENSOR, x->dtype, x->n, k, oh, ow}; /* torch: x's dtype */
    return LUMEN_OK;
}

static lumen_status conv_transpose2d_invoke(lumen_context *ctx, const lumen_value *v,
                                            const lumen_image *out, lumen_run_info *info)
{
    const lumen_conv2d_params p = conv_transpose2d_params(v);
    lumen_status s = lumen_desc_conv_bias(&v[CT_BIAS], v[CT_WEIGHT].u.image->c * p.groups);
    if (s) return s;
    const float *bias = v[CT_BIAS].given ? v[CT_BIAS].u.array.data : NULL;
    return lumen_conv_transpose2d(ctx, v[CT_X].u.image, v[CT_WEIGHT].u.image, bias, &p, out, info);
}

const lumen_op_desc lumen_conv_transpose2d_desc = {
    .name = "conv_transpose2d",
    .command = "conv-transpose",
    .summary = "NCHW transposed convolution (torch.nn.functional.conv_transpose2d)",
    .help = "The adjoint of conv2d (the gradient of conv2d with respect to its input), with "
            "PyTorch's shapes and rules, including output_padding. f32, f16 or bf16 (f32 sums).",
    .args = conv_transpose2d_args,
    .n_args = CT_N,
    .output = LUMEN_ARG_TENSOR,
    .output_help = "x's dtype, N x K x P x Q, P = (H-1)*stride - 2*padding + dilation*(R-1) + "
                   "output_padding + 1 (Q likewise)",
    .output_shape = conv_transpose2d_shape,
    .invoke = conv_transpose2d_invoke,
};
