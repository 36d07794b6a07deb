/* Device memory for device-resident views: the context's backend, or malloc where the device's
 * memory is the host's (the CPU backend leaves its memory entries NULL). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

lumen_status lumen_device_alloc(lumen_context *ctx, size_t bytes, void **out)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: pointer is NULL");
    if (bytes == 0) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "bytes: must be > 0");
    *out = NULL;
    if (ctx->be->alloc) return ctx->be->alloc(ctx, bytes, out);
    *out = malloc(bytes);
    if (!*out)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "device_alloc: %zu bytes: out of memory",
                               bytes);
    return LUMEN_OK;
}

void lumen_device_free(lumen_context *ctx, void *p)
{
    if (!ctx || !p) return;
    if (ctx->be->release) ctx->be->release(ctx, p);
    else free(p);
}

static lumen_status check_copy(const lumen_context *ctx, const void *dst, const void *src)
{
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    if (!dst || !src)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: pointer is NULL",
                               dst ? "src" : "dst");
    return LUMEN_OK;
}

lumen_status lumen_device_upload(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    lumen_clear_error();
    lumen_status s = check_copy(ctx, dst, src);
    if (s || bytes == 0) return s;
    if (ctx->be->upload) return ctx->be->upload(ctx, dst, src, bytes);
    memcpy(dst, src, bytes);
    return LUMEN_OK;
}

lumen_status lumen_device_download(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    lumen_clear_error();
    lumen_status s = check_copy(ctx, dst, src);
    if (s || bytes == 0) return s;
    if (ctx->be->download) return ctx->be->download(ctx, dst, src, bytes);
    memcpy(dst, src, bytes);
    return LUMEN_OK;
}

lumen_status lumen_context_synchronize(lumen_context *ctx)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    return ctx->be->synchronize ? ctx->be->synchronize(ctx) : LUMEN_OK;
}
