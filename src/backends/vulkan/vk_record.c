/*
 * Recording and pipelines (docs/vulkan.md, "Submission"): an op records all its dispatches
 * into the context's one command buffer, each after a barrier on the previous one's writes,
 * and submits once, waiting on the context's fence. Pipelines (a shader of the module plus
 * its specialisation constants) are compiled on a context's first use of them through a
 * VkPipelineCache that is loaded from and saved to lumen's cache folder, so a second process
 * compiles nothing the first one compiled.
 */
#define _GNU_SOURCE
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the on-disk pipeline cache ------------------------------------------------------- */

/* lumen's cache folder / vulkan-<pipelineCacheUUID>-<vendor>-<device>-<driver>.bin: a new
 * driver or device gets a new file (the driver would reject the old data anyway). */
static bool cache_file(const vk_state *st, char *buf, size_t size)
{
    const vk_device *d = vk_device_at(st->dev);
    char name[128];
    int n = snprintf(name, sizeof name, "vulkan-");
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        n += snprintf(name + n, sizeof name - (size_t)n, "%02x", d->cache_uuid[i]);
    snprintf(name + n, sizeof name - (size_t)n, "-%04x-%04x-%08x.bin", d->vendor_id, d->device_id,
             d->driver_version);
    return vk_host->cache_path(name, buf, size);
}

void vk_pipeline_cache_load(vk_state *st)
{
    char path[4096];
    void *data = NULL;
    size_t size = 0;
    if (getenv("LUMEN_VULKAN_NO_DISK_CACHE") == NULL && cache_file(st, path, sizeof path)) {
        FILE *f = fopen(path, "rb");
        if (f) {
            if (fseek(f, 0, SEEK_END) == 0) {
                long len = ftell(f);
                if (len > 0 && len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 &&
                    (data = malloc((size_t)len)) && fread(data, 1, (size_t)len, f) == (size_t)len)
                    size = (size_t)len;
            }
            fclose(f);
        }
    }
    /* The driver checks the header (vendor, device, cache UUID) and ignores data that is not
     * its own, so a corrupt or foreign file costs compilations, never a wrong pipeline. */
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = size ? data : NULL};
    VkResult r = vkf.vkCreatePipelineCache(st->device, &ci, NULL, &st->cache);
    if (r != VK_SUCCESS && size) { /* rejected data: start empty */
        ci.initialDataSize = 0, ci.pInitialData = NULL;
        r = vkf.vkCreatePipelineCache(st->device, &ci, NULL, &st->cache);
    }
    if (r != VK_SUCCESS) st->cache = VK_NULL_HANDLE;
    vk_host->log(LUMEN_LOG_DEBUG, "vulkan: pipeline cache: %zu bytes loaded", size);
    free(data);
}

/* Written to a temporary file in the same folder and renamed over the old one: a reader sees
 * the old file or the new one, never half of one; two processes saving at once both write
 * whole files and the last rename wins. */
void vk_pipeline_cache_save(vk_state *st)
{
    char path[4096], tmp[4200];
    if (!st->cache || !st->cache_dirty || getenv("LUMEN_VULKAN_NO_DISK_CACHE")) return;
    if (!cache_file(st, path, sizeof path)) return;
    size_t size = 0;
    if (vkf.vkGetPipelineCacheData(st->device, st->cache, &size, NULL) != VK_SUCCESS || !size)
        return;
    void *data = malloc(size);
    if (!data) return;
    bool ok = false;
    if (vkf.vkGetPipelineCacheData(st->device, st->cache, &size, data) == VK_SUCCESS) {
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f) {
            ok = fwrite(data, 1, size, f) == size;
            ok = (fclose(f) == 0) && ok;
            ok = ok && rename(tmp, path) == 0;
            if (!ok) remove(tmp);
        }
    }
    vk_host->log(ok ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARN, "vulkan: pipeline cache: %zu bytes %s %s",
                 size, ok ? "saved to" : "could not be saved to", path);
    if (ok) st->cache_dirty = false;
    free(data);
}

/* ---- pipelines ------------------------------------------------------------------------- */

static bool same_kernel(const vk_pipeline *p, const vk_kernel *k)
{
    return p->code == k->code && p->n_spec == k->n_spec &&
           !memcmp(p->spec, k->spec, sizeof(int32_t) * (size_t)k->n_spec);
}

static lumen_status compile(vk_state *st, const vk_kernel *k, VkPipeline *out)
{
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = k->code_bytes,
                                    .pCode = k->code};
    VkShaderModule sm;
    VkResult r = vkf.vkCreateShaderModule(st->device, &smi, NULL, &sm);
    if (r) return vk_fail(r, "vkCreateShaderModule");
    VkSpecializationMapEntry map[VK_MAX_SPEC];
    for (int i = 0; i < k->n_spec; i++)
        map[i] = (VkSpecializationMapEntry){.constantID = (uint32_t)i,
                                            .offset = (uint32_t)(i * sizeof(int32_t)),
                                            .size = sizeof(int32_t)};
    VkSpecializationInfo si = {.mapEntryCount = (uint32_t)k->n_spec,
                               .pMapEntries = map,
                               .dataSize = sizeof(int32_t) * (size_t)k->n_spec,
                               .pData = k->spec};
    VkPipelineCreationFeedbackEXT fb = {0};
    VkPipelineCreationFeedbackCreateInfoEXT fbi = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO_EXT,
        .pPipelineCreationFeedback = &fb};
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .pNext = st->feedback ? &fbi : NULL,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = sm,
                  .pName = "main",
                  .pSpecializationInfo = k->n_spec ? &si : NULL},
        .layout = st->layout};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = vkf.vkCreateComputePipelines(st->device, st->cache, 1, &pci, NULL, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    vkf.vkDestroyShaderModule(st->device, sm, NULL);
    if (r) return vk_fail(r, "vkCreateComputePipelines");
    const bool hit =
        (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT_EXT) &&
        (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT);
    if (hit)
        st->pipes_cached++;
    else
        st->pipes_compiled++;
    /* lavapipe keeps no compiled code in a VkPipelineCache (only its header), so there every
     * pipeline is compiled again; drivers of real GPUs report cache hits here */
    vk_host->log(LUMEN_LOG_DEBUG, "vulkan: pipeline %d of this context %s in %.1f ms",
                 st->pipes_compiled + st->pipes_cached,
                 hit ? "from the pipeline cache" : "compiled",
                 (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    if (!hit) st->cache_dirty = true; /* new code for the on-disk cache */
    return LUMEN_OK;
}

/* The pipeline of k, compiled on this context's first use of it. */
static lumen_status pipeline(vk_state *st, const vk_kernel *k, VkPipeline *out)
{
    for (int i = 0; i < st->n_pipes; i++)
        if (same_kernel(&st->pipes[i], k)) return *out = st->pipes[i].pipe, LUMEN_OK;
    lumen_status s =
        vk_grow(&st->pipes, st->n_pipes, &st->cap_pipes, sizeof *st->pipes, "pipeline table");
    if (s) return s;
    vk_pipeline *p = &st->pipes[st->n_pipes];
    memset(p, 0, sizeof *p);
    p->code = k->code;
    p->n_spec = k->n_spec;
    memcpy(p->spec, k->spec, sizeof(int32_t) * (size_t)k->n_spec);
    if ((s = compile(st, k, &p->pipe))) return s;
    st->n_pipes++;
    *out = p->pipe;
    return LUMEN_OK;
}

void vk_pipelines_destroy(vk_state *st)
{
    for (int i = 0; i < st->n_pipes; i++)
        vkf.vkDestroyPipeline(st->device, st->pipes[i].pipe, NULL);
    free(st->pipes);
    st->pipes = NULL;
    st->n_pipes = st->cap_pipes = 0;
}

/* ---- recording ------------------------------------------------------------------------- */

lumen_status vk_rec_begin(vk_state *st)
{
    VkResult r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    /* the previous submission was waited for: its sets and command buffer are free */
    if ((r = vkf.vkResetDescriptorPool(st->device, st->desc_pool, 0)) ||
        (r = vkf.vkResetCommandBuffer(st->cmd, 0)) || (r = vkf.vkBeginCommandBuffer(st->cmd, &bi)))
        return vk_fail(r, "command buffer");
    st->recording = true;
    st->sets_used = st->dispatches = 0;
    return LUMEN_OK;
}

lumen_status vk_rec_submit(vk_state *st)
{
    VkResult r;
    st->recording = false;
    /* the shaders' writes must be visible to the host's reads after the fence */
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
        return vk_fail(r, "queue submission");
    return LUMEN_OK;
}

static lumen_status descriptor_set(vk_state *st, const VkBuffer *bufs, int n_bufs,
                                   VkDescriptorSet *out)
{
    VkResult r;
    if (st->sets_used == VK_SETS_PER_SUBMIT) { /* the pool is spent: run what is recorded */
        lumen_status s = vk_rec_submit(st);
        if (s || (s = vk_rec_begin(st))) return s;
    }
    VkDescriptorSetAllocateInfo dsa = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = st->desc_pool,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &st->set_layout};
    if ((r = vkf.vkAllocateDescriptorSets(st->device, &dsa, out)))
        return vk_fail(r, "vkAllocateDescriptorSets");
    st->sets_used++;
    /* Every binding gets a buffer: those a shader does not use repeat the first one. */
    VkDescriptorBufferInfo info[VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[VK_MAX_BINDINGS];
    for (int i = 0; i < VK_MAX_BINDINGS; i++) {
        info[i] = (VkDescriptorBufferInfo){i < n_bufs ? bufs[i] : bufs[0], 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = *out,
                                      .dstBinding = (uint32_t)i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &info[i]};
    }
    vkf.vkUpdateDescriptorSets(st->device, VK_MAX_BINDINGS, w, 0, NULL);
    return LUMEN_OK;
}

lumen_status vk_rec_dispatch(vk_state *st, const vk_kernel *k, const VkBuffer *bufs, int n_bufs,
                             const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                             uint32_t gz)
{
    VkPipeline pipe = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
    lumen_status s = pipeline(st, k, &pipe);
    if (s || (s = descriptor_set(st, bufs, n_bufs, &set))) return s;
    if (st->dispatches++ > 0) {
        /* each pass reads what the one before wrote (separable, FFT passes) */
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                              .dstAccessMask =
                                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
        vkf.vkCmdPipelineBarrier(st->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    }
    vkf.vkCmdBindPipeline(st->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkf.vkCmdBindDescriptorSets(st->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, st->layout, 0, 1, &set, 0,
                                NULL);
    if (push_bytes)
        vkf.vkCmdPushConstants(st->cmd, st->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes,
                               push);
    vkf.vkCmdDispatch(st->cmd, gx, gy, gz);
    return LUMEN_OK;
}

lumen_status vk_rec_one(vk_state *st, const vk_kernel *k, const VkBuffer *bufs, int n_bufs,
                        const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                        uint32_t gz)
{
    lumen_status s = vk_rec_begin(st);
    if (!s) s = vk_rec_dispatch(st, k, bufs, n_bufs, push, push_bytes, gx, gy, gz);
    if (!s) s = vk_rec_submit(st);
    return s;
}

bool vk_grid_fits(const vk_state *st, uint64_t gx, uint64_t gy, uint64_t gz)
{
    const vk_device *d = vk_device_at(st->dev);
    return gx >= 1 && gy >= 1 && gz >= 1 && gx <= d->max_groups[0] && gy <= d->max_groups[1] &&
           gz <= d->max_groups[2];
}

void vk_rec_fill(vk_state *st, VkBuffer b, size_t offset, size_t bytes, uint32_t value)
{
    vkf.vkCmdFillBuffer(st->cmd, b, offset, (bytes + 3) / 4 * 4, value);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkf.vkCmdPipelineBarrier(st->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Staging chunks of at most 64 MiB: a download of a large buffer needs no buffer as large. */
#define STAGING_CHUNK ((size_t)64 << 20)

lumen_status vk_copy_through_staging(lumen_context *ctx, vk_state *st, const vk_buf *b,
                                     size_t offset, void *host, size_t bytes, bool to_device)
{
    const size_t chunk = bytes < STAGING_CHUNK ? bytes : STAGING_CHUNK;
    vk_buf *stage;
    lumen_status s = vk_scratch(ctx, st, chunk, VK_MEM_HOST, &stage);
    for (size_t done = 0; !s && done < bytes; done += chunk) {
        const size_t n = bytes - done < chunk ? bytes - done : chunk;
        /* whole words: buffer copies of any size are fine, fills are not; keep it simple */
        VkBufferCopy region = {.srcOffset = to_device ? 0 : offset + done,
                               .dstOffset = to_device ? offset + done : 0,
                               .size = n};
        if (to_device) memcpy(stage->map, (const char *)host + done, n);
        if ((s = vk_rec_begin(st))) break;
        vkf.vkCmdCopyBuffer(st->cmd, to_device ? stage->buf : b->buf,
                            to_device ? b->buf : stage->buf, 1, &region);
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT};
        vkf.vkCmdPipelineBarrier(st->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                 0, 1, &mb, 0, NULL, 0, NULL);
        if ((s = vk_rec_submit(st))) break;
        if (!to_device) memcpy((char *)host + done, stage->map, n);
    }
    return s;
}
