/* Shared front-end steps of conv2d and conv_transpose2d. Rules and shapes are PyTorch's. */
#include "conv_common.h"

#include <stdlib.h>
#include <string.h>

#define ERR_ARG LUMEN_ERR_INVALID_ARGUMENT

static const char *op_name(lumen_op_kind kind)
{
    return kind == LUMEN_OP_CONV2D ? "conv2d" : "conv_transpose2d";
}

static lumen_status check_positive(int v, const char *what)
{
    if (v >= 1) return LUMEN_OK;
    return lumen_set_error(ERR_ARG, "%s: must be >= 1, got %d", what, v);
}

/* PyTorch: output padding must be smaller than either stride or dilation; conv2d has none. */
static lumen_status check_output_pad(lumen_op_kind kind, int op, int stride, int dil,
                                     const char *what)
{
    if (kind == LUMEN_OP_CONV2D && op != 0)
        return lumen_set_error(ERR_ARG, "%s: must be 0 for conv2d (got %d); output padding "
                               "applies to conv_transpose2d only", what, op);
    if (op < 0) return lumen_set_error(ERR_ARG, "%s: must be >= 0, got %d", what, op);
    const int limit = stride > dil ? stride : dil;
    if (op >= limit)
        return lumen_set_error(ERR_ARG, "%s: %d must be smaller than either stride (%d) or "
                               "dilation (%d)", what, op, stride, dil);
    return LUMEN_OK;
}

static lumen_status check_params(lumen_op_kind kind, const lumen_conv2d_params *p)
{
    if (!p) return lumen_set_error(ERR_ARG, "p: params is NULL (use lumen_conv2d_params_default)");
    lumen_status s;
    if ((s = check_positive(p->stride_h, "stride_h")) || (s = check_positive(p->stride_w, "stride_w")) ||
        (s = check_positive(p->dilation_h, "dilation_h")) ||
        (s = check_positive(p->dilation_w, "dilation_w")) || (s = check_positive(p->groups, "groups")))
        return s;
    if (p->pad_h < 0) return lumen_set_error(ERR_ARG, "pad_h: must be >= 0, got %d", p->pad_h);
    if (p->pad_w < 0) return lumen_set_error(ERR_ARG, "pad_w: must be >= 0, got %d", p->pad_w);
    if ((s = check_output_pad(kind, p->output_pad_h, p->stride_h, p->dilation_h, "output_pad_h")))
        return s;
    return check_output_pad(kind, p->output_pad_w, p->stride_w, p->dilation_w, "output_pad_w");
}

/* A view checked as lumen_image_check does, of a float dtype: conv computes in f32, and f16 /
 * bf16 tensors are widened exactly and rounded once on store (docs/conv2d.md). */
static lumen_status check_tensor(const lumen_image *t, const char *what)
{
    lumen_status s = lumen_image_check(t, what);
    if (s) return s;
    if (!lumen_dtype_is_float(t->dtype))
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: dtype %s is not supported (f32, f16 or bf16)", what,
                               lumen_dtype_name(t->dtype));
    return LUMEN_OK;
}

/* Groups divide C; w is (K, C/g, R, S) with g | K, or (C, K/g, R, S) when transposed. */
static lumen_status check_channels(lumen_op_kind kind, const lumen_image *x,
                                   const lumen_image *w, int g, int64_t *k)
{
    if (x->c % g)
        return lumen_set_error(ERR_ARG, "groups: %d does not divide x's %lld channels", g,
                               (long long)x->c);
    if (kind == LUMEN_OP_CONV_TRANSPOSE2D) {
        if (w->n != x->c)
            return lumen_set_error(ERR_ARG, "w: has n = %lld but conv_transpose2d weights are "
                                   "(C, K/groups, R, S) with C = x's %lld channels",
                                   (long long)w->n, (long long)x->c);
        *k = w->c * g;
        return LUMEN_OK;
    }
    if (w->n % g)
        return lumen_set_error(ERR_ARG, "groups: %d does not divide w's %lld output channels (K)",
                               g, (long long)w->n);
    if (w->c != x->c / g)
        return lumen_set_error(ERR_ARG, "w: has c = %lld but conv2d weights are (K, C/groups, R, S) "
                               "with C/groups = %lld", (long long)w->c, (long long)(x->c / g));
    *k = w->n;
    return LUMEN_OK;
}

/* PyTorch's formulas; floor division (a negative numerator means no output at all). */
static int64_t axis_size(lumen_op_kind kind, int64_t in, int64_t kern, int stride, int pad,
                         int dil, int out_pad)
{
    const int64_t span = (int64_t)dil * (kern - 1);
    if (kind == LUMEN_OP_CONV_TRANSPOSE2D) return (in - 1) * stride - 2 * (int64_t)pad + span + out_pad + 1;
    const int64_t num = in + 2 * (int64_t)pad - span - 1;
    return num < 0 ? 0 : num / stride + 1;
}

static lumen_status check_axis(lumen_op_kind kind, int64_t out, const char *axis, int64_t in,
                               int64_t kern, int pad, int dil)
{
    if (out >= 1) return LUMEN_OK;
    return lumen_set_error(ERR_ARG, "x: %s output %s would be %lld (< 1): input %s %lld, kernel "
                           "%s %lld, pad %d, dilation %d", op_name(kind), axis, (long long)out,
                           axis, (long long)in, axis, (long long)kern, pad, dil);
}

lumen_status lumen_conv_shape(lumen_op_kind kind, const lumen_image *x, const lumen_image *w,
                              const lumen_conv2d_params *p, int64_t *k, int64_t *out_h,
                              int64_t *out_w)
{
    lumen_status s;
    if ((s = check_tensor(x, "x")) || (s = check_tensor(w, "w")) || (s = check_params(kind, p)) ||
        (s = check_channels(kind, x, w, p->groups, k)))
        return s;
    *out_h = axis_size(kind, x->h, w->h, p->stride_h, p->pad_h, p->dilation_h, p->output_pad_h);
    *out_w = axis_size(kind, x->w, w->w, p->stride_w, p->pad_w, p->dilation_w, p->output_pad_w);
    if ((s = check_axis(kind, *out_h, "height", x->h, w->h, p->pad_h, p->dilation_h))) return s;
    return check_axis(kind, *out_w, "width", x->w, w->w, p->pad_w, p->dilation_w);
}

static bool ranges_overlap(uintptr_t alo, uintptr_t ahi, uintptr_t blo, uintptr_t bhi)
{
    return alo < bhi && blo < ahi;
}

/* y must not share memory with an input: the gather loops read inputs while writing y, and
 * an in-place conv has no meaning when shapes differ. Refused rather than copied. bias is
 * host memory. */
static lumen_status check_disjoint(const lumen_image *y, const lumen_image *x, const lumen_image *w,
                                   const float *bias, int64_t k)
{
    if (lumen_views_overlap(y, x)) return lumen_set_error(ERR_ARG, "y: overlaps x; conv cannot run in place");
    if (lumen_views_overlap(y, w)) return lumen_set_error(ERR_ARG, "y: overlaps w; conv cannot run in place");
    uintptr_t ylo, yhi;
    lumen_image_extent(y, &ylo, &yhi);
    if (bias && !y->device && ranges_overlap(ylo, yhi, (uintptr_t)bias, (uintptr_t)(bias + k)))
        return lumen_set_error(ERR_ARG, "y: overlaps bias; conv cannot run in place");
    return LUMEN_OK;
}

static lumen_status check_y(const lumen_image *y, int64_t n, int64_t k, int64_t oh, int64_t ow)
{
    lumen_status s = check_tensor(y, "y");
    if (s) return s;
    if (y->n != n || y->c != k || y->h != oh || y->w != ow)
        return lumen_set_error(ERR_ARG, "y: shape (%lld, %lld, %lld, %lld) differs from the "
                               "expected (N, K, P, Q) = (%lld, %lld, %lld, %lld)",
                               (long long)y->n, (long long)y->c, (long long)y->h, (long long)y->w,
                               (long long)n, (long long)k, (long long)oh, (long long)ow);
    return LUMEN_OK;
}

static lumen_status check_call(lumen_op_kind kind, const lumen_context *ctx,
                               const lumen_image *x, const lumen_image *w, const float *bias,
                               const lumen_conv2d_params *p, const lumen_image *y)
{
    if (!ctx) return lumen_set_error(ERR_ARG, "ctx: context is NULL");
    int64_t k, oh, ow;
    lumen_status s = lumen_conv_shape(kind, x, w, p, &k, &oh, &ow);
    if (s || (s = check_y(y, x->n, k, oh, ow))) return s;
    if ((s = lumen_view_check_residence(ctx, x, "x")) ||
        (s = lumen_view_check_residence(ctx, w, "w")) ||
        (s = lumen_view_check_residence(ctx, y, "y")))
        return s;
    return check_disjoint(y, x, w, bias, k);
}

lumen_status lumen_conv_run(lumen_op_kind kind, lumen_context *ctx, const lumen_image *x,
                            const lumen_image *w, const float *bias,
                            const lumen_conv2d_params *p, const lumen_image *y,
                            lumen_run_info *info)
{
    lumen_status s = check_call(kind, ctx, x, w, bias, p, y);
    if (s) return s;
    const lumen_conv_job job = {.x = x, .w = w, .y = y, .bias = bias, .p = *p};
    const lumen_op op = lumen_op_conv(kind, &job);
    return lumen_run(ctx, &op, info);
}

lumen_status lumen_conv_run_packed(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                                   const float *bias, const lumen_conv2d_params *p,
                                   const lumen_image *y, const lumen_conv_pack *pack,
                                   lumen_run_info *info)
{
    lumen_status s = check_call(LUMEN_OP_CONV2D, ctx, x, w, bias, p, y);
    if (s) return s;
    const lumen_conv_job job = {.x = x, .w = w, .y = y, .bias = bias, .p = *p, .pack = pack};
    const lumen_op op = lumen_op_conv(LUMEN_OP_CONV2D, &job);
    return lumen_run(ctx, &op, info);
}

lumen_status lumen_conv_output_size(lumen_op_kind kind, const lumen_image *x,
                                    const lumen_image *w, const lumen_conv2d_params *p,
                                    int64_t *out_h, int64_t *out_w)
{
    lumen_clear_error();
    if (!out_h || !out_w)
        return lumen_set_error(ERR_ARG, "%s: pointer is NULL", out_h ? "out_w" : "out_h");
    int64_t k;
    return lumen_conv_shape(kind, x, w, p, &k, out_h, out_w);
}

/* n*k*oh*ow floats, or 0 when that many bytes cannot be addressed. */
static size_t tensor_bytes(int64_t n, int64_t k, int64_t oh, int64_t ow, size_t es)
{
    const int64_t dims[4] = {n, k, oh, ow};
    uint64_t elems = 1;
    for (int i = 0; i < 4; i++) {
        if ((uint64_t)dims[i] > (uint64_t)PTRDIFF_MAX / es / elems) return 0;
        elems *= (uint64_t)dims[i];
    }
    return (size_t)elems * es;
}

lumen_status lumen_conv_run_alloc(lumen_op_kind kind, lumen_context *ctx, const lumen_image *x,
                                  const lumen_image *w, const float *bias,
                                  const lumen_conv2d_params *p, lumen_image *y,
                                  lumen_run_info *info)
{
    if (!y) return lumen_set_error(ERR_ARG, "y: output pointer is NULL");
    memset(y, 0, sizeof *y);
    if (!ctx) return lumen_set_error(ERR_ARG, "ctx: context is NULL");
    int64_t k, oh, ow;
    lumen_status s = lumen_conv_shape(kind, x, w, p, &k, &oh, &ow);
    if (s) return s;
    /* y has x's dtype, as torch's conv2d gives */
    const size_t bytes = tensor_bytes(x->n, k, oh, ow, lumen_dtype_size(x->dtype));
    void *buf = bytes ? malloc(bytes) : NULL;
    if (!buf)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "y: cannot allocate (%lld, %lld, %lld, "
                               "%lld) %s", (long long)x->n, (long long)k, (long long)oh,
                               (long long)ow, lumen_dtype_name(x->dtype));
    lumen_image out = lumen_image_nchw(buf, x->dtype, x->n, k, oh, ow);
    if ((s = lumen_conv_run(kind, ctx, x, w, bias, p, &out, info))) {
        free(buf);
        return s;
    }
    *y = out;
    return LUMEN_OK;
}
