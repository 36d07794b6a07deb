/*
 * LUMEN_OP_CONV2D and LUMEN_OP_CONV_TRANSPOSE2D (shaders/conv2d.comp, docs/vulkan-conv.md):
 * NCHW f32 views of any strides, one dispatch per op covering the batch, every group and
 * output channel (and, transposed, every output phase). An implicit GEMM with shared-memory
 * tiles whose shape follows the channels per group, from 64 pixels x 64 channels down to 128
 * pixels x 1 channel for depthwise; the transposed op gathers per output (no atomics).
 */
#include "vk_internal.h"

static const uint32_t conv2d_spv[] = {
#include <conv2d.spv.inc>
};

#define BK 16 /* reduction depth of a shared-memory slice; also the fma block of the sums */

/* The shader's push constants, in its order (std430: 4-byte scalars, no padding). */
typedef struct vk_conv_push {
    vk_pview x, w, y;
    int32_t n, h, wd, p, q, r, s, cg, kg;
    int32_t sh, sw, ph, pw, dh, dw;
    int32_t has_bias;
} vk_conv_push;
_Static_assert(sizeof(vk_conv_push) == 124, "vk_conv_push: the shader's push constants");

/* A tile shape: wm x wn invocations, each tm x tn outputs (pixels x output channels). */
typedef struct conv_tile {
    int wm, wn, tm, tn;
} conv_tile;

/* Wide tiles along the channels when a group has many, tall ones along the pixels when it has
 * few, so that depthwise convolutions do not idle most of a workgroup. */
static conv_tile tile_for(int64_t kg)
{
    if (kg >= 48) return (conv_tile){16, 16, 4, 4}; /* 64 x 64 */
    if (kg >= 20) return (conv_tile){32, 8, 2, 4};  /* 64 x 32 */
    if (kg >= 10) return (conv_tile){32, 8, 4, 2};  /* 128 x 16 */
    if (kg >= 2) return (conv_tile){64, 4, 2, 1};   /* 128 x 4 */
    return (conv_tile){128, 1, 1, 1};               /* 128 x 1 */
}

/* Bytes of the shader's shared arrays for a tile (conv2d.comp's declarations). */
static uint64_t tile_shared(conv_tile t)
{
    const uint64_t bm = (uint64_t)(t.wm * t.tm), bn = (uint64_t)(t.wn * t.tn);
    return 4 * (BK * bm + BK * (bn + 1) + 4 * bm + 2 * bn + 4 * BK);
}

/* The GEMM's dimensions: per group, input channels (cg), output channels (kg), and the output
 * grid's extent per phase (the transposed op's phases are oh mod stride_h, ow mod stride_w). */
typedef struct conv_dims {
    int64_t cg, kg, phases, pm, qm;
} conv_dims;

static conv_dims dims_of(const lumen_conv_job *j, bool transpose)
{
    const lumen_conv2d_params *p = &j->p;
    conv_dims d = {.cg = transpose ? j->x->c / p->groups : j->w->c,
                   .kg = transpose ? j->w->c : j->w->n / p->groups,
                   .phases = 1,
                   .pm = j->y->h,
                   .qm = j->y->w};
    if (transpose) {
        d.phases = (int64_t)p->stride_h * p->stride_w;
        d.pm = (j->y->h + p->stride_h - 1) / p->stride_h;
        d.qm = (j->y->w + p->stride_w - 1) / p->stride_w;
    }
    return d;
}

#define I32_SAFE (INT64_C(1) << 30) /* room for the shader's sums of two such values */

static bool conv_supports(lumen_context *ctx, const lumen_op *op, bool transpose)
{
    const lumen_conv_job *j = op->job;
    const lumen_image *x = j->x, *w = j->w, *y = j->y;
    const lumen_conv2d_params *p = &j->p;
    if (!lumen_dtype_is_float(x->dtype) || !lumen_dtype_is_float(w->dtype) ||
        !lumen_dtype_is_float(y->dtype))
        return false;
    const vk_state *st = vk_host->state(ctx);
    const vk_device *dev = vk_device_at(st->dev);
    const conv_dims d = dims_of(j, transpose);
    const conv_tile t = tile_for(d.kg);
    const int64_t bm = t.wm * t.tm, bn = t.wn * t.tn;
    const int64_t m = x->n * d.pm * d.qm, gx = (m + bm - 1) / bm, gy = (d.kg + bn - 1) / bn;
    if ((uint64_t)(t.wm * t.wn) > dev->max_group_invocations || tile_shared(t) > dev->max_shared ||
        !vk_grid_fits(st, (uint64_t)gx, (uint64_t)gy, (uint64_t)(p->groups * d.phases)))
        return false;
    /* every index the shader forms stays in a 32-bit int: pixel and reduction counts, input
     * rows and columns before their bounds check, the transposed op's biased dividends */
    const int64_t reach_h = y->h * p->stride_h + p->pad_h + w->h * p->dilation_h,
                  reach_w = y->w * p->stride_w + p->pad_w + w->w * p->dilation_w;
    const int64_t bias_h = (int64_t)p->stride_h * w->h * p->dilation_h + p->pad_h + p->stride_h,
                  bias_w = (int64_t)p->stride_w * w->w * p->dilation_w + p->pad_w + p->stride_w;
    return gx * bm < I32_SAFE && gy * bn < I32_SAFE && d.cg * w->h * w->w + BK < I32_SAFE &&
           y->c < I32_SAFE && x->c < I32_SAFE && reach_h < I32_SAFE && reach_w < I32_SAFE &&
           bias_h < I32_SAFE && bias_w < I32_SAFE;
}

static bool conv2d_supports(lumen_context *ctx, const lumen_op *op)
{
    return conv_supports(ctx, op, false);
}

static bool conv_transpose2d_supports(lumen_context *ctx, const lumen_op *op)
{
    return conv_supports(ctx, op, true);
}

static lumen_status conv_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info,
                             bool transpose)
{
    const lumen_conv_job *j = op->job;
    const lumen_conv2d_params *p = &j->p;
    vk_state *st = vk_host->state(ctx);
    vk_view x, w, y;
    VkBuffer bias;
    lumen_status status;
    if ((status = vk_view_bind(ctx, st, j->x, false, &x)) ||
        (status = vk_view_bind(ctx, st, j->w, false, &w)) ||
        (status = vk_view_bind(ctx, st, j->y, true, &y)))
        return status;
    bias = x.buf; /* bound but unread without a bias */
    if (j->bias && (status = vk_upload_floats(ctx, st, j->bias, (size_t)j->y->c, &bias)))
        return status;
    const conv_dims d = dims_of(j, transpose);
    const conv_tile t = tile_for(d.kg);
    const vk_conv_push pc = {.x = x.pv,
                             .w = w.pv,
                             .y = y.pv,
                             .n = (int32_t)j->x->n,
                             .h = (int32_t)j->x->h,
                             .wd = (int32_t)j->x->w,
                             .p = (int32_t)j->y->h,
                             .q = (int32_t)j->y->w,
                             .r = (int32_t)j->w->h,
                             .s = (int32_t)j->w->w,
                             .cg = (int32_t)d.cg,
                             .kg = (int32_t)d.kg,
                             .sh = p->stride_h,
                             .sw = p->stride_w,
                             .ph = p->pad_h,
                             .pw = p->pad_w,
                             .dh = p->dilation_h,
                             .dw = p->dilation_w,
                             .has_bias = j->bias != NULL};
    const vk_kernel k =
        VK_KERNEL(conv2d_spv, t.wm, t.wn, t.tm, t.tn, BK, t.wm * t.wn, transpose ? 1 : 0,
                  (int32_t)j->x->dtype, (int32_t)j->w->dtype, (int32_t)j->y->dtype);
    const VkBuffer bufs[] = {x.buf, w.buf, y.buf, bias};
    const int64_t m = j->x->n * d.pm * d.qm;
    status = vk_rec_one(st, &k, bufs, 4, &pc, sizeof pc, vk_groups(m, t.wm * t.tm),
                        vk_groups(d.kg, t.wn * t.tn), (uint32_t)(p->groups * d.phases));
    if (status) return status;
    vk_view_finish(&y);
    vk_ran(info, LUMEN_METHOD_DIRECT, transpose ? "vulkan:conv-transpose" : "vulkan:conv-gemm");
    return LUMEN_OK;
}

static lumen_status conv2d_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    return conv_run(ctx, op, info, false);
}

static lumen_status conv_transpose2d_run(lumen_context *ctx, const lumen_op *op,
                                         lumen_run_info *info)
{
    return conv_run(ctx, op, info, true);
}

const vk_op_impl vk_op_conv2d = {.supports = conv2d_supports, .run = conv2d_run},
                 vk_op_conv_transpose2d = {.supports = conv_transpose2d_supports,
                                           .run = conv_transpose2d_run};
