/* The table of op descriptors (include/lumen_ops.h) and the checks every front end shares.
 * Each entry lives at the end of its op's file; this file only lists them. */
#include "op_common.h"
#include "op_desc.h"

#include <math.h>
#include <string.h>

static const lumen_op_desc *const ops[] = {
    &lumen_filter2d_desc, &lumen_sep_filter2d_desc, &lumen_gaussian_blur_desc,
    &lumen_box_blur_desc, &lumen_conv2d_desc,       &lumen_conv_transpose2d_desc,
    &lumen_bloom_desc,    &lumen_halation_desc,     &lumen_grain_desc,
    &lumen_crop_desc,     &lumen_resize_desc,
};
#define N_OPS ((int)(sizeof ops / sizeof ops[0]))

const lumen_choice lumen_border_choices[] = {
    {"reflect", LUMEN_BORDER_REFLECT},     {"constant", LUMEN_BORDER_CONSTANT},
    {"replicate", LUMEN_BORDER_REPLICATE}, {"reflect101", LUMEN_BORDER_REFLECT101},
    {"wrap", LUMEN_BORDER_WRAP},           {NULL, 0}};
const lumen_choice lumen_filter_method_choices[] = {{"auto", LUMEN_METHOD_AUTO},
                                                    {"direct", LUMEN_METHOD_DIRECT},
                                                    {"separable", LUMEN_METHOD_SEPARABLE},
                                                    {"fft", LUMEN_METHOD_FFT},
                                                    {NULL, 0}};
const lumen_choice lumen_sep_method_choices[] = {{"auto", LUMEN_METHOD_AUTO},
                                                 {"separable", LUMEN_METHOD_SEPARABLE},
                                                 {"fft", LUMEN_METHOD_FFT},
                                                 {NULL, 0}};

int lumen_op_count(void)
{
    return N_OPS;
}

const lumen_op_desc *lumen_op_at(int i)
{
    return i >= 0 && i < N_OPS ? ops[i] : NULL;
}

const lumen_op_desc *lumen_op_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < N_OPS; i++)
        if (!strcmp(ops[i]->name, name) || !strcmp(ops[i]->command, name)) return ops[i];
    return NULL;
}

int lumen_op_arg_index(const lumen_op_desc *op, const char *name)
{
    for (int i = 0; op && name && i < op->n_args; i++)
        if (!strcmp(op->args[i].name, name)) return i;
    return -1;
}

void lumen_op_values_init(const lumen_op_desc *op, lumen_value *values)
{
    for (int i = 0; i < op->n_args; i++) {
        memset(&values[i], 0, sizeof values[i]);
        values[i].type = op->args[i].type;
    }
}

const char *lumen_arg_type_name(lumen_arg_type type)
{
    static const char *const names[] = {"image",    "tensor", "kernel", "vector", "int",
                                        "int pair", "real",   "bool",   "enum"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "?";
}

/* ---- values with defaults ---- */

int64_t lumen_value_int(const lumen_op_desc *op, const lumen_value *v, int i)
{
    return v[i].given ? v[i].u.i : (int64_t)op->args[i].def[0];
}

double lumen_value_real(const lumen_op_desc *op, const lumen_value *v, int i)
{
    return v[i].given ? v[i].u.real : op->args[i].def[0];
}

void lumen_value_pair(const lumen_op_desc *op, const lumen_value *v, int i, int *a, int *b)
{
    *a = (int)(v[i].given ? v[i].u.pair[0] : (int64_t)op->args[i].def[0]);
    *b = (int)(v[i].given ? v[i].u.pair[1] : (int64_t)op->args[i].def[1]);
}

lumen_status lumen_desc_shape_like_src(const lumen_value *values, lumen_out_shape *out)
{
    const lumen_image *src = values[0].u.image;
    lumen_status s = lumen_image_check(src, "src");
    if (s) return s;
    *out = (lumen_out_shape){LUMEN_ARG_IMAGE, src->dtype, src->n, src->c, src->h, src->w};
    return LUMEN_OK;
}

lumen_halo lumen_desc_halo(const lumen_value *v, int hy, int hx)
{
    lumen_halo h = {0, 0, 0, 0};
    if (v[hy].given) h.top = (int)v[hy].u.pair[0], h.bottom = (int)v[hy].u.pair[1];
    if (v[hx].given) h.left = (int)v[hx].u.pair[0], h.right = (int)v[hx].u.pair[1];
    return h;
}

lumen_status lumen_desc_shape_less_halo(const lumen_value *v, int hy, int hx, lumen_out_shape *out)
{
    lumen_status s = lumen_desc_shape_like_src(v, out);
    const lumen_halo h = lumen_desc_halo(v, hy, hx);
    return s ? s : lumen_op_halo_shape(v[0].u.image, &h, &out->h, &out->w);
}

lumen_status lumen_desc_conv_bias(const lumen_value *bias, int64_t k)
{
    if (!bias->given || bias->u.array.w == k) return LUMEN_OK;
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                           "bias: has %lld values, expected %lld (one per output channel)",
                           (long long)bias->u.array.w, (long long)k);
}

/* ---- checks ---- */

static lumen_status out_of_range(const lumen_arg_desc *a, double v)
{
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: expected %g..%g, got %g", a->name,
                           a->min, a->max, v);
}

static lumen_status check_choice(const lumen_arg_desc *a, int64_t v)
{
    for (const lumen_choice *c = a->choices; c && c->name; c++)
        if (c->value == v) return LUMEN_OK;
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: %lld is not one of its choices",
                           a->name, (long long)v);
}

static lumen_status check_array(const lumen_arg_desc *a, const lumen_value *v)
{
    const int64_t w = v->u.array.w, h = v->u.array.h;
    if (!v->u.array.data || w < 1 || h < 1 || (a->type == LUMEN_ARG_VECTOR && h != 1))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: expected a non-empty %s", a->name,
                               lumen_arg_type_name(a->type));
    return LUMEN_OK;
}

/* One given value against its argument's type and range. */
static lumen_status check_value(const lumen_arg_desc *a, const lumen_value *v)
{
    if (v->type != a->type)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: expected a value of type %s, got %s", a->name,
                               lumen_arg_type_name(a->type), lumen_arg_type_name(v->type));
    switch (a->type) {
    case LUMEN_ARG_IMAGE:
    case LUMEN_ARG_TENSOR: return lumen_image_check(v->u.image, a->name);
    case LUMEN_ARG_KERNEL:
    case LUMEN_ARG_VECTOR: return check_array(a, v);
    case LUMEN_ARG_INT:
        return v->u.i < a->min || v->u.i > a->max ? out_of_range(a, (double)v->u.i) : LUMEN_OK;
    case LUMEN_ARG_INT_PAIR:
        for (int k = 0; k < 2; k++)
            if (v->u.pair[k] < a->min || v->u.pair[k] > a->max)
                return out_of_range(a, (double)v->u.pair[k]);
        return LUMEN_OK;
    case LUMEN_ARG_REAL:
        return !(v->u.real >= a->min && v->u.real <= a->max) ? out_of_range(a, v->u.real)
                                                             : LUMEN_OK;
    case LUMEN_ARG_BOOL:
        return v->u.i == 0 || v->u.i == 1 ? LUMEN_OK : out_of_range(a, (double)v->u.i);
    case LUMEN_ARG_ENUM: return check_choice(a, v->u.i);
    }
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: unknown argument type", a->name);
}

lumen_status lumen_op_check_args(const lumen_op_desc *op, const lumen_value *values)
{
    lumen_clear_error();
    if (!op || !values)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "op: NULL descriptor or values");
    for (int i = 0; i < op->n_args; i++) {
        const lumen_arg_desc *a = &op->args[i];
        if (!values[i].given) {
            if (a->flags & LUMEN_ARG_REQUIRED)
                return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: required by %s", a->name,
                                       op->name);
            continue;
        }
        lumen_status s = check_value(a, &values[i]);
        if (s) return s;
    }
    return LUMEN_OK;
}

lumen_status lumen_op_output_shape(const lumen_op_desc *op, const lumen_value *values,
                                   lumen_out_shape *out)
{
    lumen_status s = lumen_op_check_args(op, values);
    if (s) return s;
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: shape pointer is NULL");
    return op->output_shape(values, out);
}

lumen_status lumen_op_invoke(const lumen_op_desc *op, lumen_context *ctx, const lumen_value *values,
                             const lumen_image *out, lumen_run_info *info)
{
    lumen_status s = lumen_op_check_args(op, values);
    return s ? s : op->invoke(ctx, values, out, info);
}
