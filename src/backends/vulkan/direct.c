/*
 * LUMEN_OP_FILTER_DIRECT (shaders/filter_direct.comp): u8/u16/f32 in and out, every border
 * mode and anchor, every channel and image of a batch in one dispatch; 16x16 shared-memory
 * tiles for kernels up to 33x33, direct reads beyond.
 */
#include "vk_internal.h"

#include <string.h>

static const uint32_t filter_direct_spv[] = {
#include <filter_direct.spv.inc>
};

#define GROUP 16      /* local_size_x and _y of the shader */
#define MAX_TILE_K 33 /* the shader's shared tile holds (16 + 32)^2 pixels */

/* The shader's push constants, in its order (std430: 4-byte scalars, no padding). */
typedef struct vk_direct_push {
    int32_t c, h, hs, w;
    vk_pview s, d;
    int32_t kw, kh, ax, ay;
    int32_t border;
    float border_value;
} vk_direct_push;
_Static_assert(sizeof(vk_direct_push) == 80, "vk_direct_push: the shader's push constants");

/* Whether j runs as one submission: its views in one binding each, its grid in the limits. */
static bool direct_fits(lumen_context *ctx, const lumen_filter_job *j)
{
    const lumen_image *d = j->dst;
    return vk_view_fits_range(ctx, j->src) && vk_view_fits_range(ctx, d) &&
           vk_grid_fits(vk_host->state(ctx), vk_groups(d->w, GROUP), vk_groups(d->h, GROUP),
                        (uint64_t)d->n * (uint64_t)d->c);
}

static bool direct_supports(lumen_context *ctx, const lumen_op *op)
{
    const lumen_filter_job *j = op->job;
    return j->taps == LUMEN_TAPS_2D && j->kernel && vk_filter_fits_in_pieces(ctx, j, direct_fits);
}

static lumen_status direct_piece(lumen_context *ctx, const lumen_filter_job *j,
                                 lumen_run_info *info)
{
    vk_state *st = vk_host->state(ctx);
    const lumen_image *s = j->src, *d = j->dst;
    vk_view src, dst;
    VkBuffer taps;
    lumen_status status;
    if ((status = vk_view_bind(ctx, st, s, false, &src)) ||
        (status = vk_view_bind(ctx, st, d, true, &dst)) ||
        (status = vk_upload_floats(ctx, st, j->kernel, (size_t)j->kw * (size_t)j->kh, &taps)))
        return status;
    const vk_direct_push pc = {.c = (int32_t)s->c,
                               .h = (int32_t)d->h,
                               .hs = (int32_t)s->h,
                               .w = (int32_t)s->w,
                               .s = src.pv,
                               .d = dst.pv,
                               .kw = j->kw,
                               .kh = j->kh,
                               .ax = j->ax,
                               .ay = j->ay,
                               .border = (int32_t)j->border,
                               .border_value = j->border_value};
    const bool tiled = j->kw <= MAX_TILE_K && j->kh <= MAX_TILE_K;
    const vk_kernel k = VK_KERNEL(filter_direct_spv, s->dtype, d->dtype, tiled);
    const VkBuffer bufs[] = {src.buf, dst.buf, taps};
    status = vk_rec_one(st, &k, bufs, 3, &pc, sizeof pc, vk_groups(d->w, GROUP),
                        vk_groups(d->h, GROUP), (uint32_t)(d->n * d->c));
    if (status) return status;
    vk_view_finish(&dst);
    vk_ran(info, LUMEN_METHOD_DIRECT, tiled ? "vulkan:direct" : "vulkan:direct-untiled");
    return LUMEN_OK;
}

static lumen_status direct_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    return vk_filter_in_pieces(ctx, op->job, direct_fits, direct_piece, info);
}

const vk_op_impl vk_op_direct = {direct_supports, direct_run, .pieces = true};
