/* What the op files' descriptor entries share: value accessors with defaults, the border and
 * method choices, and the argument entries every filter repeats (declared once here). */
#ifndef LUMEN_OP_DESC_H
#define LUMEN_OP_DESC_H

#include "internal.h"
#include "lumen_ops.h"

#include <float.h>

extern const lumen_choice lumen_border_choices[];
/* filter2d's methods; the separable ops' (no direct) */
extern const lumen_choice lumen_filter_method_choices[];
extern const lumen_choice lumen_sep_method_choices[];

/* Values of argument i: the given one, else the descriptor's default. */
int64_t lumen_value_int(const lumen_op_desc *op, const lumen_value *v, int i);
double lumen_value_real(const lumen_op_desc *op, const lumen_value *v, int i);
void lumen_value_pair(const lumen_op_desc *op, const lumen_value *v, int i, int *a, int *b);

/* output_shape of the filters: the shape and dtype of the image argument 0. */
lumen_status lumen_desc_shape_like_src(const lumen_value *values, lumen_out_shape *out);

/* The border arguments of every filter, in this order. */
#define LUMEN_DESC_BORDER_ARGS                                                                 \
    {"border", LUMEN_ARG_ENUM, 0, {LUMEN_BORDER_REFLECT, 0}, NULL, 0, 0, lumen_border_choices, \
     "how pixels outside the image are made: reflect (cba|abc, cv2.BORDER_REFLECT), "          \
     "reflect101 (cb|abc), replicate (aa|abc), constant (border_value) or wrap (bc|abc)"},     \
    {"border_value", LUMEN_ARG_REAL, 0, {0, 0}, NULL, -FLT_MAX, FLT_MAX, NULL,                 \
     "pixel value outside the image for border constant, in pixel units"}

/* anchor and convolve of filter2d and sep_filter2d. */
#define LUMEN_DESC_ANCHOR_ARGS                                                                 \
    {"anchor", LUMEN_ARG_INT_PAIR, LUMEN_ARG_NULLABLE | LUMEN_ARG_PAIR_XY | LUMEN_ARG_PAIR_BOTH, \
     {0, 0}, "the kernel's centre (kw/2, kh/2)", 0, LUMEN_MAX_KSIZE - 1, NULL,               \
     "kernel point (x, y) over the output pixel, 0-based"},                                    \
    {"convolve", LUMEN_ARG_BOOL, 0, {0, 0}, NULL, 0, 1, NULL,                                   \
     "true convolution: flip the kernel (default: correlation, as cv2.filter2D)"}

/* The tensor arguments of conv2d and conv_transpose2d, in this order. */
#define LUMEN_DESC_CONV_TENSOR_ARGS(weight_help)                                               \
    {"x", LUMEN_ARG_TENSOR, LUMEN_ARG_REQUIRED, {0, 0}, NULL, 0, 0, NULL,                      \
     "input, f32 N x C x H x W"},                                                              \
    {"weight", LUMEN_ARG_TENSOR, LUMEN_ARG_REQUIRED, {0, 0}, NULL, 0, 0, NULL, weight_help},  \
    {"bias", LUMEN_ARG_VECTOR, LUMEN_ARG_POSITIONAL | LUMEN_ARG_NULLABLE, {0, 0}, "no bias", 0, \
     0, NULL, "K values added to the output channels"}

/* A (h, w) pair of conv's, >= lo. */
#define LUMEN_DESC_CONV_PAIR(name, lo, def, help)                                              \
    {name, LUMEN_ARG_INT_PAIR, 0, {def, def}, NULL, lo, INT32_MAX, NULL, help}

/* Checks a conv bias has one value per output channel (the C call takes a bare pointer). */
lumen_status lumen_desc_conv_bias(const lumen_value *bias, int64_t k);

/* Every op's descriptor, listed by op_table.c. */
extern const lumen_op_desc lumen_filter2d_desc, lumen_sep_filter2d_desc,
    lumen_gaussian_blur_desc, lumen_box_blur_desc, lumen_conv2d_desc, lumen_conv_transpose2d_desc;

#endif
