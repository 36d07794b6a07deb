/*
 * LUMEN_OP_RESIZE (shaders/resize.comp): every rule and interpolation, u8/u16/f32 in and out,
 * every channel and image of a batch in one dispatch. The op built the coefficient tables
 * (docs/resize.md); they go up in one scratch buffer (x starts, x weights, y starts, y
 * weights), and each output pixel sums its window from them.
 */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

static const uint32_t resize_spv[] = {
#include <resize.spv.inc>
};

#define GROUP 16 /* local_size_x and _y of the shader */

/* The shader's push constants, in its order (std430: 4-byte scalars, no padding). */
typedef struct vk_resize_push {
    int32_t c, h, w, kx, ky, wx, fy, wy;
    vk_pview s, d;
} vk_resize_push;
_Static_assert(sizeof(vk_resize_push) == 72, "vk_resize_push: the shader's push constants");

#define I32_SAFE (INT64_C(1) << 30) /* the tables' word offsets stay in a 32-bit int */

static bool resize_supports(lumen_context *ctx, const lumen_op *op)
{
    const lumen_resize_job *j = op->job;
    const lumen_image *d = j->dst;
    const int64_t words = j->x.out * (1 + j->x.taps) + j->y.out * (1 + j->y.taps);
    /* every dtype: the shader loads and stores through common.glsl (module.c checks them) */
    return words < I32_SAFE &&
           vk_grid_fits(vk_host->state(ctx), vk_groups(d->w, GROUP), vk_groups(d->h, GROUP),
                        (uint64_t)d->n * (uint64_t)d->c);
}

/* The tables as the shader reads them: x starts, x weights, y starts, y weights. */
static float *pack_tables(const lumen_resize_job *j, size_t *n, vk_resize_push *pc)
{
    const size_t nx = (size_t)j->x.out, ny = (size_t)j->y.out;
    const size_t kx = (size_t)j->x.taps, ky = (size_t)j->y.taps;
    *n = nx + nx * kx + ny + ny * ky;
    float *t = malloc(*n * sizeof(float));
    if (!t) return NULL;
    memcpy(t, j->x.first, nx * sizeof(int32_t)); /* ints travel as their bits */
    /* Pillow's 8-bit rule: its integer weights, as their bits */
    const void *wxs = j->pillow_rounding ? (const void *)j->x.iweights : j->x.weights;
    const void *wys = j->pillow_rounding ? (const void *)j->y.iweights : j->y.weights;
    memcpy(t + nx, wxs, nx * kx * sizeof(float));
    memcpy(t + nx + nx * kx, j->y.first, ny * sizeof(int32_t));
    memcpy(t + nx + nx * kx + ny, wys, ny * ky * sizeof(float));
    pc->wx = (int32_t)nx, pc->fy = (int32_t)(nx + nx * kx), pc->wy = (int32_t)(nx + nx * kx + ny);
    return t;
}

static lumen_status resize_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const lumen_resize_job *j = op->job;
    vk_state *st = vk_host->state(ctx);
    const lumen_image *s = j->src, *d = j->dst;
    vk_view src, dst;
    VkBuffer tab;
    vk_resize_push pc = {.c = (int32_t)d->c,
                         .h = (int32_t)d->h,
                         .w = (int32_t)d->w,
                         .kx = j->x.taps,
                         .ky = j->y.taps};
    size_t n;
    float *packed = pack_tables(j, &n, &pc);
    if (!packed) return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "vulkan: resize tables");
    lumen_status status;
    if ((status = vk_view_bind(ctx, st, s, false, &src)) ||
        (status = vk_view_bind(ctx, st, d, true, &dst)) ||
        (status = vk_upload_floats(ctx, st, packed, n, &tab))) {
        free(packed);
        return status;
    }
    free(packed);
    pc.s = src.pv, pc.d = dst.pv;
    const vk_kernel k = VK_KERNEL(resize_spv, s->dtype, d->dtype, j->nearest, j->pillow_rounding);
    const VkBuffer bufs[] = {src.buf, dst.buf, tab};
    status = vk_rec_one(st, &k, bufs, 3, &pc, sizeof pc, vk_groups(d->w, GROUP),
                        vk_groups(d->h, GROUP), (uint32_t)(d->n * d->c));
    if (status) return status;
    vk_view_finish(&dst);
    vk_ran(info, LUMEN_METHOD_SEPARABLE, j->nearest ? "vulkan:resize-nearest" : "vulkan:resize");
    return LUMEN_OK;
}

const vk_op_impl vk_op_resize = {.supports = resize_supports, .run = resize_run};
