/*
 * LUMEN_OP_FILTER_DIRECT on f32 (shaders/filter_direct.comp): every border mode and anchor,
 * every channel and image of a batch in one dispatch. Host views are copied into mapped
 * buffers, dispatched and copied back within run(); device-resident views are the buffers
 * themselves (their data pointers are mapped addresses, vk_find). run() waits for its fence,
 * so nothing is in flight when it returns.
 */
#include "vk_internal.h"

#include <limits.h>
#include <string.h>

/* The SPIR-V words glslc made at build time (-mfmt=num: comma-separated numbers). A build
 * output, not a file of the tree: included with <> from the module's build folder (so that
 * scripts/check-layers.py, which resolves quoted includes in the tree, does not look for it). */
static const uint32_t filter_direct_spv[] = {
#include <filter_direct.spv.inc>
};

/* The shader's push constants, in its order (std430: 4-byte scalars, no padding). */
typedef struct vk_push {
    int32_t n, c, h, w;
    int32_t src_off, src_sn, src_sc, src_sh, src_sw;
    int32_t dst_off, dst_sn, dst_sc, dst_sh, dst_sw;
    int32_t kw, kh, ax, ay;
    int32_t border;
    float border_value;
} vk_push;
_Static_assert(sizeof(vk_push) == 80, "vk_push must match the shader's push constants");
/* The shader restates lumen_border's values. */
_Static_assert(LUMEN_BORDER_REFLECT == 0 && LUMEN_BORDER_CONSTANT == 1 &&
                   LUMEN_BORDER_REPLICATE == 2 && LUMEN_BORDER_REFLECT101 == 3 &&
                   LUMEN_BORDER_WRAP == 4,
               "shaders/filter_direct.comp's BORDER_* constants");

#define GROUP 16 /* local_size_x and _y of the shader */

/* Elements below and above a view's data pointer that it touches (negative strides reach
 * below): the byte range to copy is [data - lo*4, data + (hi+1)*4). */
static void view_span(const lumen_image *v, int64_t *lo, int64_t *hi)
{
    lumen_view_offsets(v, lo, hi); /* core/semantics.h: *lo <= 0 there */
    *lo = -*lo;
}

static bool fits_i32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

/* The shader indexes with 32-bit ints and dispatches x, y, batch x channels at once. */
static bool view_fits(const lumen_image *v)
{
    int64_t lo, hi;
    view_span(v, &lo, &hi);
    return v->dtype == LUMEN_F32 && fits_i32(lo + hi + 1) && fits_i32(v->stride_n) &&
           fits_i32(v->stride_c) && fits_i32(v->stride_h) && fits_i32(v->stride_w);
}

bool vk_direct_supports(lumen_context *ctx, const lumen_op *op)
{
    const lumen_filter_job *j = op->job;
    vk_state *st = vk_host->state(ctx);
    const vk_device *d = st ? vk_device_at(st->dev) : NULL;
    if (!d || j->taps != LUMEN_TAPS_2D || !j->kernel) return false;
    if (!view_fits(j->src) || !view_fits(j->dst)) return false;
    const lumen_image *s = j->src;
    if ((s->w + GROUP - 1) / GROUP > d->max_groups[0] ||
        (s->h + GROUP - 1) / GROUP > d->max_groups[1] || s->n * s->c > d->max_groups[2])
        return false;
    /* device-resident views must lie in one of this context's buffers, word-aligned */
    for (int i = 0; i < 2; i++) {
        const lumen_image *v = j->views[i];
        if (!v->device) continue;
        int64_t lo, hi;
        view_span(v, &lo, &hi);
        const char *first = (const char *)v->data - lo * 4;
        const vk_buf *b = vk_find(st, first, (size_t)(lo + hi + 1) * 4);
        if (!b || (first - b->map) % 4) return false;
    }
    return true;
}

/* The pipeline, compiled on first use per context. */
static lumen_status direct_pipeline(vk_state *st)
{
    if (st->direct) return LUMEN_OK;
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = sizeof filter_direct_spv,
                                    .pCode = filter_direct_spv};
    VkShaderModule sm;
    VkResult r = vkf.vkCreateShaderModule(st->device, &smi, NULL, &sm);
    if (r) return vk_fail(r, "vkCreateShaderModule");
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = sm,
                  .pName = "main"},
        .layout = st->layout};
    r = vkf.vkCreateComputePipelines(st->device, VK_NULL_HANDLE, 1, &pci, NULL, &st->direct);
    vkf.vkDestroyShaderModule(st->device, sm, NULL);
    if (r) {
        st->direct = VK_NULL_HANDLE;
        return vk_fail(r, "vkCreateComputePipelines");
    }
    return LUMEN_OK;
}

void vk_direct_destroy(vk_state *st)
{
    if (st->direct) vkf.vkDestroyPipeline(st->device, st->direct, NULL);
    st->direct = VK_NULL_HANDLE;
}

/* Where a view is for the shader: its buffer and the element offset of its data pointer.
 * A host view gets a temporary buffer holding its whole byte range (a window's gaps too, so
 * copying the range back leaves the bytes between rows as they were). */
typedef struct bound_view {
    VkBuffer buf;
    int32_t off;
    vk_buf tmp; /* host views only */
    char *host_first;
    size_t bytes;
} bound_view;

static lumen_status bind_view(lumen_context *ctx, vk_state *st, const lumen_image *v,
                              bound_view *bv)
{
    int64_t lo, hi;
    view_span(v, &lo, &hi);
    char *first = (char *)v->data - lo * 4;
    bv->bytes = (size_t)(lo + hi + 1) * 4;
    if (v->device) {
        const vk_buf *b = vk_find(st, first, bv->bytes);
        if (!b) return vk_host->set_error(LUMEN_ERR_UNSUPPORTED, "vulkan: view not in a buffer");
        bv->buf = b->buf;
        bv->off = (int32_t)(((char *)v->data - b->map) / 4);
        return LUMEN_OK;
    }
    lumen_status s = vk_buf_create(ctx, st, bv->bytes, &bv->tmp);
    if (s) return s;
    memcpy(bv->tmp.map, first, bv->bytes);
    bv->buf = bv->tmp.buf;
    bv->off = (int32_t)lo;
    bv->host_first = first;
    return LUMEN_OK;
}

static lumen_status submit_and_wait(vk_state *st, const vk_push *pc, uint32_t gx, uint32_t gy,
                                    uint32_t gz)
{
    VkResult r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if ((r = vkf.vkResetCommandBuffer(st->cmd, 0)) || (r = vkf.vkBeginCommandBuffer(st->cmd, &bi)))
        return vk_fail(r, "command buffer");
    vkf.vkCmdBindPipeline(st->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, st->direct);
    vkf.vkCmdBindDescriptorSets(st->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, st->layout, 0, 1, &st->set,
                                0, NULL);
    vkf.vkCmdPushConstants(st->cmd, st->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *pc, pc);
    vkf.vkCmdDispatch(st->cmd, gx, gy, gz);
    /* the shader's writes must be visible to the host's reads after the fence */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkf.vkCmdPipelineBarrier(st->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    if ((r = vkf.vkEndCommandBuffer(st->cmd))) return vk_fail(r, "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &st->cmd};
    if ((r = vkf.vkResetFences(st->device, 1, &st->fence)) ||
        (r = vkf.vkQueueSubmit(st->queue, 1, &si, st->fence)) ||
        (r = vkf.vkWaitForFences(st->device, 1, &st->fence, VK_TRUE, UINT64_MAX)))
        return vk_fail(r, "dispatch");
    return LUMEN_OK;
}

lumen_status vk_direct_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const lumen_filter_job *j = op->job;
    vk_state *st = vk_host->state(ctx);
    const lumen_image *s = j->src, *d = j->dst;
    lumen_status status = direct_pipeline(st);
    if (status) return status;

    bound_view src = {0}, dst = {0};
    vk_buf taps = {0};
    const size_t tap_bytes = (size_t)j->kw * (size_t)j->kh * sizeof(float);
    if ((status = bind_view(ctx, st, s, &src)) || (status = bind_view(ctx, st, d, &dst)) ||
        (status = vk_buf_create(ctx, st, tap_bytes, &taps)))
        goto done;
    memcpy(taps.map, j->kernel, tap_bytes);

    VkDescriptorBufferInfo bufs[3] = {
        {src.buf, 0, VK_WHOLE_SIZE}, {dst.buf, 0, VK_WHOLE_SIZE}, {taps.buf, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w[3];
    for (uint32_t i = 0; i < 3; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = st->set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bufs[i]};
    /* the set is free to update: the previous run waited for its fence */
    vkf.vkUpdateDescriptorSets(st->device, 3, w, 0, NULL);

    const vk_push pc = {.n = (int32_t)s->n,
                        .c = (int32_t)s->c,
                        .h = (int32_t)s->h,
                        .w = (int32_t)s->w,
                        .src_off = src.off,
                        .src_sn = (int32_t)s->stride_n,
                        .src_sc = (int32_t)s->stride_c,
                        .src_sh = (int32_t)s->stride_h,
                        .src_sw = (int32_t)s->stride_w,
                        .dst_off = dst.off,
                        .dst_sn = (int32_t)d->stride_n,
                        .dst_sc = (int32_t)d->stride_c,
                        .dst_sh = (int32_t)d->stride_h,
                        .dst_sw = (int32_t)d->stride_w,
                        .kw = j->kw,
                        .kh = j->kh,
                        .ax = j->ax,
                        .ay = j->ay,
                        .border = (int32_t)j->border,
                        .border_value = j->border_value};
    status = submit_and_wait(st, &pc, (uint32_t)((s->w + GROUP - 1) / GROUP),
                             (uint32_t)((s->h + GROUP - 1) / GROUP), (uint32_t)(s->n * s->c));
    if (status) goto done;
    if (dst.host_first) memcpy(dst.host_first, dst.tmp.map, dst.bytes);
    info->method = LUMEN_METHOD_DIRECT;
    info->isa = "vulkan";
    info->algo = "vulkan:direct";
done:
    vk_buf_destroy(st, &taps);
    vk_buf_destroy(st, &src.tmp);
    vk_buf_destroy(st, &dst.tmp);
    return status;
}
