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
/* The halo of arguments hy (top, bottom) and hx (left, right): LUMEN_DESC_HALO_ARGS. */
lumen_halo lumen_desc_halo(const lumen_value *v, int hy, int hx);
/* output_shape of a filter with LUMEN_DESC_HALO_ARGS at hy and hx: src's less the halo. */
lumen_status lumen_desc_shape_less_halo(const lumen_value *v, int hy, int hx, lumen_out_shape *out);

/* The border arguments of every filter, in this order. */
#define LUMEN_DESC_BORDER_ARGS                                                                     \
    {.name = "border",                                                                             \
     .type = LUMEN_ARG_ENUM,                                                                       \
     .def = {LUMEN_BORDER_REFLECT, 0},                                                             \
     .choices = lumen_border_choices,                                                              \
     .help = "how pixels outside the image are made: reflect (cba|abc, cv2.BORDER_REFLECT), "      \
             "reflect101 (cb|abc), replicate (aa|abc), constant (border_value) or wrap (bc|abc)"}, \
    {                                                                                              \
        .name = "border_value", .type = LUMEN_ARG_REAL, .min = -FLT_MAX, .max = FLT_MAX,           \
        .help = "pixel value outside the image for border constant, in pixel units"                \
    }

/* anchor and convolve of filter2d and sep_filter2d. */
#define LUMEN_DESC_ANCHOR_ARGS                                                                     \
    {.name = "anchor",                                                                             \
     .type = LUMEN_ARG_INT_PAIR,                                                                   \
     .flags = LUMEN_ARG_NULLABLE | LUMEN_ARG_PAIR_XY | LUMEN_ARG_PAIR_BOTH,                        \
     .def_text = "the kernel's centre (kw/2, kh/2)",                                               \
     .min = -1,                                                                                    \
     .max = LUMEN_MAX_KSIZE - 1,                                                                   \
     .help = "kernel point (x, y) over the output pixel, 0-based; -1 on an axis: its centre, as "  \
             "OpenCV's (-1, -1)"},                                                                 \
    {                                                                                              \
        .name = "convolve", .type = LUMEN_ARG_BOOL, .max = 1,                                      \
        .help = "true convolution: flip the kernel (default: correlation, as cv2.filter2D)"        \
    }

/* halo_y and halo_x of the filters (lumen_halo): src's margins read as context only. */
#define LUMEN_DESC_HALO_ARGS                                                                       \
    {.name = "halo_y",                                                                             \
     .type = LUMEN_ARG_INT_PAIR,                                                                   \
     .flags = LUMEN_ARG_PAIR_SIDES,                                                                \
     .max = LUMEN_MAX_KSIZE,                                                                       \
     .help = "rows (top, bottom) at src's top and bottom read as the neighbours of the rows "      \
             "between them but not filtered: the output is src less them, as if filtered whole "   \
             "(a block of a larger image with its neighbours' rows: lumen.dask)"},                 \
    {                                                                                              \
        .name = "halo_x", .type = LUMEN_ARG_INT_PAIR, .flags = LUMEN_ARG_PAIR_SIDES,               \
        .max = LUMEN_MAX_KSIZE,                                                                    \
        .help = "columns (left, right) of src read as context only, as halo_y"                     \
    }

/* The tensor arguments of conv2d and conv_transpose2d, in this order. */
#define LUMEN_DESC_CONV_TENSOR_ARGS(weight_help)                                                   \
    {.name = "x",                                                                                  \
     .type = LUMEN_ARG_TENSOR,                                                                     \
     .flags = LUMEN_ARG_REQUIRED,                                                                  \
     .help = "input, f32/f16/bf16 N x C x H x W"},                                                          \
        {.name = "weight",                                                                         \
         .type = LUMEN_ARG_TENSOR,                                                                 \
         .flags = LUMEN_ARG_REQUIRED,                                                              \
         .help = weight_help},                                                                     \
    {                                                                                              \
        .name = "bias", .type = LUMEN_ARG_VECTOR,                                                  \
        .flags = LUMEN_ARG_POSITIONAL | LUMEN_ARG_NULLABLE, .def_text = "no bias",                 \
        .help = "K values added to the output channels"                                            \
    }

/* A (h, w) pair of conv's, >= lo. */
#define LUMEN_DESC_CONV_PAIR(arg_name, lo, dflt, text)                                            \
    {                                                                                              \
        .name = arg_name, .type = LUMEN_ARG_INT_PAIR, .def = {dflt, dflt}, .min = lo,              \
        .max = INT32_MAX, .help = text                                                             \
    }

/* Checks a conv bias has one value per output channel (the C call takes a bare pointer). */
lumen_status lumen_desc_conv_bias(const lumen_value *bias, int64_t k);

/* Every op's descriptor, listed by op_table.c. */
extern const lumen_op_desc lumen_filter2d_desc, lumen_sep_filter2d_desc, lumen_gaussian_blur_desc,
    lumen_box_blur_desc, lumen_conv2d_desc, lumen_conv_transpose2d_desc, lumen_bloom_desc,
    lumen_halation_desc, lumen_grain_desc, lumen_crop_desc, lumen_resize_desc;

#endif
