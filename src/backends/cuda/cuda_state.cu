/* Per-context CUDA state: stream, caching memory pool, pinned staging (see cuda_state.h). */
#include "cuda_state.h"

#include <algorithm>
#include <cstring>
#include <new>

/* ---- state ------------------------------------------------------------------------- */

static void state_free(cu_state *st)
{
    cudaSetDevice(st->device);
    if (st->stream) cudaStreamSynchronize(st->stream);
    if (st->dnn && st->dnn_destroy) st->dnn_destroy(st->dnn);
    for (auto &fl : st->free_blocks)
        for (void *p : fl.second) cudaFree(p);
    for (auto &b : st->live) cudaFree(b.first); /* device memory the user never released */
    for (cudaEvent_t &e : st->chunk_done)
        if (e) cudaEventDestroy(e);
    if (st->staging_done) cudaEventDestroy(st->staging_done);
    if (st->staging) cudaFreeHost(st->staging);
    if (st->stream) cudaStreamDestroy(st->stream);
    cudaGetLastError(); /* nothing to report to anyone here */
    delete st;
}

lumen_status cu_state_create(int device, void **out)
{
    *out = nullptr;
    CU_TRY(cudaSetDevice(device), "cudaSetDevice");
    cu_state *st = new (std::nothrow) cu_state();
    if (!st) return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: context state: out of memory");
    st->device = device;
    st->refs = 1;
    /* A blocking stream: its work waits for the legacy default stream's, which is where a
     * DLPack producer is asked (stream=1) to order its pending writes before lumen reads. */
    cudaError_t e = cudaStreamCreateWithFlags(&st->stream, cudaStreamDefault);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&st->staging_done, cudaEventDisableTiming);
    for (int k = 0; k < CU_COPY_CHUNKS && e == cudaSuccess; k++)
        e = cudaEventCreateWithFlags(&st->chunk_done[k], cudaEventDisableTiming);
    if (e != cudaSuccess) {
        lumen_status s = cu_fail(e, "creating the context's stream and events");
        state_free(st);
        return s;
    }
    *out = st;
    return LUMEN_OK;
}

void cu_state_ref(cu_state *st) { st->refs++; }

void cu_state_unref(cu_state *st)
{
    if (st && --st->refs == 0) state_free(st);
}

void cu_state_destroy(void *state) { cu_state_unref(static_cast<cu_state *>(state)); }

lumen_status cu_begin(lumen_context *ctx, cu_state **out)
{
    *out = static_cast<cu_state *>(cu_host->state(ctx));
    if (!*out) return cu_host->set_error(LUMEN_ERR_INTERNAL, "cuda: the context has no CUDA state");
    CU_TRY(cudaSetDevice((*out)->device), "cudaSetDevice");
    return LUMEN_OK;
}

/* ---- pool -------------------------------------------------------------------------- */

/* Size classes: 512 bytes and up, four per octave (at most 25% unused). */
static size_t size_class(size_t b)
{
    if (b <= 512) return 512;
    int e = 63 - __builtin_clzll((unsigned long long)(b - 1)); /* 2^e < b <= 2^(e+1) */
    size_t base = (size_t)1 << e, step = base / 4;
    return base + (b - base + step - 1) / step * step;
}

void cu_pool_trim(cu_state *st)
{
    if (st->cached == 0) return;
    cudaStreamSynchronize(st->stream); /* queued work may still use cached blocks */
    for (auto &fl : st->free_blocks) {
        for (void *p : fl.second) {
            cudaFree(p);
            st->reserved -= fl.first;
        }
        fl.second.clear();
    }
    st->cached = 0;
    cudaGetLastError();
}

void cu_pool_discard(cu_state *st, void *p)
{
    auto it = p ? st->live.find(p) : st->live.end();
    if (it == st->live.end()) return cu_pool_release(st, p);
    cudaStreamSynchronize(st->stream); /* queued work may still use it */
    cudaFree(p);
    st->reserved -= it->second;
    st->live.erase(it);
    cudaGetLastError();
}

lumen_status cu_pool_alloc(cu_state *st, uint64_t limit, size_t bytes, void **out, const char *what)
{
    *out = nullptr;
    if (bytes > ((size_t)1 << 62))
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: %s: %zu bytes is too large", what,
                                  bytes);
    const size_t cls = size_class(bytes ? bytes : 1);
    try {
        auto it = st->free_blocks.find(cls);
        if (it != st->free_blocks.end() && !it->second.empty()) {
            void *p = it->second.back();
            st->live.emplace(p, cls);
            it->second.pop_back();
            st->cached -= cls;
            *out = p;
            return LUMEN_OK;
        }
        if (limit && st->reserved + cls > limit) {
            cu_pool_trim(st);
            if (st->reserved + cls > limit)
                return cu_host->set_error(
                    LUMEN_ERR_OUT_OF_MEMORY,
                    "cuda: %s: %zu more bytes would exceed the context's device memory limit of "
                    "%llu bytes (%llu in use)",
                    what, cls, (unsigned long long)limit, (unsigned long long)st->reserved);
        }
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, cls);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            cu_pool_trim(st);
            e = cudaMalloc(&p, cls);
        }
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                      "cuda: %s: cudaMalloc of %zu bytes failed (out of device memory)",
                                      what, cls);
        }
        if (e != cudaSuccess) return cu_fail(e, what);
        try {
            st->live.emplace(p, cls);
        } catch (...) {
            cudaFree(p);
            throw;
        }
        st->reserved += cls;
        *out = p;
        return LUMEN_OK;
    } catch (const std::bad_alloc &) {
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: %s: out of host memory", what);
    }
}

lumen_status cu_alloc(lumen_context *ctx, cu_state *st, size_t bytes, void **out, const char *what)
{
    return cu_pool_alloc(st, cu_host->memory_limit(ctx), bytes, out, what);
}

void cu_pool_release(cu_state *st, void *p)
{
    if (!p) return;
    auto it = st->live.find(p);
    if (it == st->live.end()) {
        cu_host->log(LUMEN_LOG_WARN, "cuda: %p is not device memory of this context; not released", p);
        return;
    }
    const size_t cls = it->second;
    st->live.erase(it);
    try {
        st->free_blocks[cls].push_back(p);
        st->cached += cls;
    } catch (const std::bad_alloc &) {
        cudaStreamSynchronize(st->stream);
        cudaFree(p);
        st->reserved -= cls;
    }
}

lumen_status cu_temps::alloc(lumen_context *ctx, size_t bytes, void **out, const char *what)
{
    lumen_status s = cu_alloc(ctx, st, bytes, out, what);
    if (s) return s;
    try {
        blocks.push_back(*out);
    } catch (const std::bad_alloc &) {
        cu_pool_release(st, *out);
        *out = nullptr;
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: %s: out of host memory", what);
    }
    return LUMEN_OK;
}

/* ---- pinned staging ---------------------------------------------------------------- */

#define STAGE_ALIGN 256
#define CHUNK_MIN ((size_t)4 << 20)

lumen_status cu_stage_begin(cu_state *st)
{
    if (st->staging_pending) {
        st->staging_pending = false;
        CU_TRY(cudaEventSynchronize(st->staging_done), "waiting for staging copies");
    }
    st->staging_used = 0;
    return LUMEN_OK;
}

/* Makes the buffer hold at least `need` bytes; waits for every queued copy first. */
static lumen_status stage_grow(cu_state *st, size_t need)
{
    CU_TRY(cudaStreamSynchronize(st->stream), "waiting for the stream");
    st->staging_pending = false;
    st->staging_used = 0;
    if (need <= st->staging_cap) return LUMEN_OK;
    size_t cap = std::max(need, st->staging_cap * 2);
    cap = (cap + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
    if (st->staging) cudaFreeHost(st->staging);
    st->staging = nullptr;
    st->staging_cap = 0;
    void *p = nullptr;
    cudaError_t e = cudaMallocHost(&p, cap);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                  "cuda: %zu bytes of pinned staging memory: %s", cap,
                                  cudaGetErrorString(e));
    }
    st->staging = static_cast<char *>(p);
    st->staging_cap = cap;
    return LUMEN_OK;
}

lumen_status cu_stage_take(cu_state *st, size_t bytes, char **out)
{
    const size_t need = (bytes + STAGE_ALIGN - 1) & ~(size_t)(STAGE_ALIGN - 1);
    if (st->staging_used + need > st->staging_cap) {
        lumen_status s = stage_grow(st, need);
        if (s) return s;
    }
    *out = st->staging + st->staging_used;
    st->staging_used += need;
    return LUMEN_OK;
}

lumen_status cu_stage_send(cu_state *st, void *dev, const char *p, size_t bytes)
{
    CU_TRY(cudaMemcpyAsync(dev, p, bytes, cudaMemcpyHostToDevice, st->stream), "host-to-device copy");
    CU_TRY(cudaEventRecord(st->staging_done, st->stream), "cudaEventRecord");
    st->staging_pending = true;
    return LUMEN_OK;
}

/* Chunks of a copy: at most CU_COPY_CHUNKS, each at least CHUNK_MIN (the last one shorter). */
static size_t chunk_size(size_t bytes)
{
    size_t c = (bytes + CU_COPY_CHUNKS - 1) / CU_COPY_CHUNKS;
    return std::max(c, CHUNK_MIN);
}

lumen_status cu_upload_staged(cu_state *st, void *dev, const void *host, size_t bytes)
{
    if (bytes == 0) return LUMEN_OK;
    char *buf;
    lumen_status s = cu_stage_take(st, bytes, &buf);
    if (s) return s;
    const size_t chunk = chunk_size(bytes);
    for (size_t off = 0; off < bytes; off += chunk) {
        const size_t n = std::min(chunk, bytes - off);
        std::memcpy(buf + off, static_cast<const char *>(host) + off, n);
        CU_TRY(cudaMemcpyAsync(static_cast<char *>(dev) + off, buf + off, n, cudaMemcpyHostToDevice,
                               st->stream),
               "host-to-device copy");
    }
    CU_TRY(cudaEventRecord(st->staging_done, st->stream), "cudaEventRecord");
    st->staging_pending = true;
    return LUMEN_OK;
}

/* Staging from offset 0 for device-to-host copies (see the header comment). */
static lumen_status stage_for_download(cu_state *st, size_t bytes, char **out)
{
    if (bytes > st->staging_cap) {
        lumen_status s = stage_grow(st, bytes);
        if (s) return s;
    }
    *out = st->staging;
    return LUMEN_OK;
}

/* After a completed device-to-host copy every earlier copy has run: staging is free. */
static void stage_drained(cu_state *st)
{
    st->staging_pending = false;
    st->staging_used = 0;
}

lumen_status cu_stage_fetch(cu_state *st, const void *dev, size_t bytes, const char **out)
{
    char *buf;
    lumen_status s = stage_for_download(st, bytes, &buf);
    if (s) return s;
    CU_TRY(cudaMemcpyAsync(buf, dev, bytes, cudaMemcpyDeviceToHost, st->stream),
           "device-to-host copy");
    CU_TRY(cudaStreamSynchronize(st->stream), "device-to-host copy");
    stage_drained(st);
    *out = buf;
    return LUMEN_OK;
}

lumen_status cu_download_staged(cu_state *st, void *host, const void *dev, size_t bytes)
{
    if (bytes == 0) return LUMEN_OK;
    char *buf;
    lumen_status s = stage_for_download(st, bytes, &buf);
    if (s) return s;
    const size_t chunk = chunk_size(bytes);
    int k = 0;
    for (size_t off = 0; off < bytes; off += chunk, k++) {
        const size_t n = std::min(chunk, bytes - off);
        cudaError_t e = cudaMemcpyAsync(buf + off, static_cast<const char *>(dev) + off, n,
                                        cudaMemcpyDeviceToHost, st->stream);
        if (e == cudaSuccess) e = cudaEventRecord(st->chunk_done[k], st->stream);
        if (e != cudaSuccess) {
            lumen_status f = cu_fail(e, "device-to-host copy");
            cudaStreamSynchronize(st->stream); /* the chunks queued so far write staging */
            cudaGetLastError();
            stage_drained(st);
            return f;
        }
    }
    k = 0;
    for (size_t off = 0; off < bytes; off += chunk, k++) {
        const size_t n = std::min(chunk, bytes - off);
        cudaError_t e = cudaEventSynchronize(st->chunk_done[k]);
        if (e != cudaSuccess) {
            lumen_status f = cu_fail(e, "device-to-host copy");
            cudaStreamSynchronize(st->stream);
            cudaGetLastError();
            stage_drained(st);
            return f;
        }
        std::memcpy(static_cast<char *>(host) + off, buf + off, n);
    }
    stage_drained(st);
    return LUMEN_OK;
}

/* ---- the backend table's memory entries ---------------------------------------------- */

lumen_status cu_mem_alloc(lumen_context *ctx, size_t bytes, void **out)
{
    cu_state *st;
    lumen_status s0 = cu_begin(ctx, &st);
    if (s0) return s0;
    if ((s0 = cu_alloc(ctx, st, bytes, out, "device_alloc"))) return s0;
    /* A cached block may still be read by queued work; the caller may hand this one to other
     * streams or libraries, so it is returned idle. */
    CU_TRY(cudaStreamSynchronize(st->stream), "cudaStreamSynchronize");
    return LUMEN_OK;
}

void cu_mem_release(lumen_context *ctx, void *p)
{
    cu_state *st;
    if (cu_begin(ctx, &st) == LUMEN_OK) cu_pool_release(st, p);
}

/* The host copy is taken before this returns (into staging), so src may be reused at once;
 * the transfer itself completes in stream order, before any op queued after it. */
lumen_status cu_mem_upload(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    cu_state *st;
    lumen_status s0 = cu_begin(ctx, &st);
    if (s0) return s0;
    if ((s0 = cu_stage_begin(st))) return s0;
    return cu_upload_staged(st, dst, src, bytes);
}

lumen_status cu_mem_download(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    cu_state *st;
    lumen_status s0 = cu_begin(ctx, &st);
    if (s0) return s0;
    return cu_download_staged(st, dst, src, bytes);
}

lumen_status cu_synchronize(lumen_context *ctx)
{
    cu_state *st;
    lumen_status s0 = cu_begin(ctx, &st);
    if (s0) return s0;
    CU_TRY(cudaStreamSynchronize(st->stream), "cudaStreamSynchronize");
    return LUMEN_OK;
}
