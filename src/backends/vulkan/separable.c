/*
 * LUMEN_OP_FILTER_SEPARABLE (shaders/filter_rows.comp, filter_cols.comp): the row pass into an
 * f32 intermediate kept on the device, then the column pass into dst, in one submission. Box
 * blur (kx, ky of ones and a scale) and the exact Gaussian reach the device this way too.
 */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

static const uint32_t filter_rows_spv[] = {
#include <filter_rows.spv.inc>
};
static const uint32_t filter_cols_spv[] = {
#include <filter_cols.spv.inc>
};

#define GROUP_X 64 /* local size of both shaders: 64 x 4 */
#define GROUP_Y 4
#define MAX_TILE_K 257 /* filter_rows.comp's shared span */

typedef struct vk_rows_push {
    int32_t c, h, w;
    vk_pview s;
    int32_t kw, ax;
    int32_t border;
    float border_value;
} vk_rows_push;
_Static_assert(sizeof(vk_rows_push) == 48, "vk_rows_push: filter_rows.comp's push constants");

typedef struct vk_cols_push {
    int32_t c, h, hs, w;
    vk_pview d;
    int32_t kw, kh, ay;
    int32_t border;
    float outside, scale;
} vk_cols_push;
_Static_assert(sizeof(vk_cols_push) == 60, "vk_cols_push: filter_cols.comp's push constants");

/* The intermediate: one f32 per pixel of every plane, in one binding. */
static uint64_t tmp_bytes(const lumen_image *s)
{
    return (uint64_t)s->n * (uint64_t)s->c * (uint64_t)s->h * (uint64_t)s->w * sizeof(float);
}

/* Whether j runs as one submission: views and the intermediate in one binding each, grids in
 * the limits. */
static bool separable_fits(lumen_context *ctx, const lumen_filter_job *j)
{
    const lumen_image *s = j->src;
    vk_state *st = vk_host->state(ctx);
    const uint64_t planes = (uint64_t)s->n * (uint64_t)s->c;
    return vk_view_fits_range(ctx, s) && vk_view_fits_range(ctx, j->dst) &&
           tmp_bytes(s) <= st->max_range && tmp_bytes(s) < INT32_MAX &&
           vk_grid_fits(st, vk_groups(s->w, GROUP_X), vk_groups(s->h, GROUP_Y), planes);
}

static bool separable_supports(lumen_context *ctx, const lumen_op *op)
{
    const lumen_filter_job *j = op->job;
    return j->taps == LUMEN_TAPS_SEPARABLE && j->kx && j->ky &&
           vk_filter_fits_in_pieces(ctx, j, separable_fits);
}

static lumen_status separable_piece(lumen_context *ctx, const lumen_filter_job *j,
                                    lumen_run_info *info)
{
    vk_state *st = vk_host->state(ctx);
    const lumen_image *s = j->src, *d = j->dst;
    vk_view src, dst;
    vk_buf *tmp;
    VkBuffer taps;
    float *k = malloc(((size_t)j->kw + (size_t)j->kh) * sizeof *k);
    if (!k) return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "vulkan: separable taps");
    memcpy(k, j->kx, (size_t)j->kw * sizeof *k);
    memcpy(k + j->kw, j->ky, (size_t)j->kh * sizeof *k);
    lumen_status status = vk_upload_floats(ctx, st, k, (size_t)j->kw + (size_t)j->kh, &taps);
    free(k);
    if (status || (status = vk_view_bind(ctx, st, s, false, &src)) ||
        (status = vk_view_bind(ctx, st, d, true, &dst)) ||
        (status = vk_scratch(ctx, st, (size_t)tmp_bytes(s), VK_MEM_DEVICE, &tmp)))
        return status;

    /* a row of the constant border, filtered by the row pass */
    double kx_sum = 0;
    for (int t = 0; t < j->kw; t++)
        kx_sum += j->kx[t];
    const bool tiled = j->kw <= MAX_TILE_K;
    const vk_rows_push rp = {.c = (int32_t)s->c,
                             .h = (int32_t)s->h,
                             .w = (int32_t)s->w,
                             .s = src.pv,
                             .kw = j->kw,
                             .ax = j->ax,
                             .border = (int32_t)j->border,
                             .border_value = j->border_value};
    const vk_cols_push cp = {.c = (int32_t)s->c,
                             .h = (int32_t)d->h,
                             .hs = (int32_t)s->h,
                             .w = (int32_t)s->w,
                             .d = dst.pv,
                             .kw = j->kw,
                             .kh = j->kh,
                             .ay = j->ay,
                             .border = (int32_t)j->border,
                             .outside = (float)(j->border_value * kx_sum),
                             .scale = j->scale};
    const vk_kernel rows = VK_KERNEL(filter_rows_spv, s->dtype, tiled);
    const vk_kernel cols = VK_KERNEL(filter_cols_spv, d->dtype);
    const VkBuffer rb[] = {src.buf, tmp->buf, taps}, cb[] = {tmp->buf, dst.buf, taps};
    const uint32_t gx = vk_groups(s->w, GROUP_X), gz = (uint32_t)(s->n * s->c);
    if ((status = vk_rec_begin(st)) ||
        (status =
             vk_rec_dispatch(st, &rows, rb, 3, &rp, sizeof rp, gx, vk_groups(s->h, GROUP_Y), gz)) ||
        (status =
             vk_rec_dispatch(st, &cols, cb, 3, &cp, sizeof cp, gx, vk_groups(d->h, GROUP_Y), gz)) ||
        (status = vk_rec_submit(st)))
        return status;
    vk_view_finish(&dst);
    vk_ran(info, LUMEN_METHOD_SEPARABLE, "vulkan:separable");
    return LUMEN_OK;
}

static lumen_status separable_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    return vk_filter_in_pieces(ctx, op->job, separable_fits, separable_piece, info);
}

const vk_op_impl vk_op_separable = {separable_supports, separable_run, .pieces = true};
