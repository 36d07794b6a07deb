/*
 * Per-context CUDA state: one stream, a caching device memory pool, pinned staging.
 *
 * Everything a context queues runs on its one stream, in order. That is what makes the pool
 * simple: a block released while kernels that use it are still queued can be handed out again
 * at once, because its next user is queued behind them on the same stream.
 *
 * The state is reference counted: the context holds one reference (state_create /
 * state_destroy) and every plan-cache entry holding pool memory or cuFFT plans holds another,
 * so the context may destroy its plan cache and its state in either order.
 */
#ifndef LUMEN_CUDA_STATE_H
#define LUMEN_CUDA_STATE_H

#include "cuda_internal.h"

#include <unordered_map>
#include <vector>

/* Device-to-host copies run in at most this many chunks (one event each), so copying chunk k
 * out of pinned memory overlaps the transfer of chunk k + 1. */
#define CU_COPY_CHUNKS 16

struct cu_state {
    int device = 0; /* backend-local device index */
    cudaStream_t stream = nullptr;
    int refs = 0;

    /* ---- memory pool: free lists by size class; every block came from cudaMalloc ---- */
    std::unordered_map<size_t, std::vector<void *>> free_blocks; /* class bytes -> blocks */
    std::unordered_map<void *, size_t> live;                     /* block -> class bytes */
    uint64_t reserved = 0; /* bytes held from cudaMalloc: live + cached */
    uint64_t cached = 0;   /* bytes in the free lists */

    /* ---- pinned host staging, grown on demand and kept ---- */
    char *staging = nullptr;
    size_t staging_cap = 0;
    size_t staging_used = 0;            /* bump offset within the current op */
    cudaEvent_t staging_done = nullptr; /* recorded after the last copy that reads staging */
    bool staging_pending = false;       /* staging_done recorded and not yet waited for */
    cudaEvent_t chunk_done[CU_COPY_CHUNKS] = {};

    /* ---- cuDNN handle bound to the stream (conv.cu), created on first use ---- */
    void *dnn = nullptr;
    void (*dnn_destroy)(void *dnn) = nullptr; /* called before the stream is destroyed */
};

/* The backend table's state_create / state_destroy. */
lumen_status cu_state_create(int device, void **out);
void cu_state_destroy(void *state);
void cu_state_ref(cu_state *st);
void cu_state_unref(cu_state *st);

/* The context's state, with its device made current. */
lumen_status cu_begin(lumen_context *ctx, cu_state **out);

/* ---- pool ---- */

/*
 * A block of at least `bytes` from the pool. Counts against the context's memory limit
 * (host->memory_limit): exceeding it, or a failed cudaMalloc after the cache was emptied,
 * returns LUMEN_ERR_OUT_OF_MEMORY with a message naming `what`.
 */
lumen_status cu_pool_alloc(cu_state *st, uint64_t limit, size_t bytes, void **out, const char *what);
lumen_status cu_alloc(lumen_context *ctx, cu_state *st, size_t bytes, void **out, const char *what);
/* Returns a block to its free list (stream-ordered: see the header comment). */
void cu_pool_release(cu_state *st, void *p);
/* Frees every cached block (synchronises the stream first). */
void cu_pool_trim(cu_state *st);
/* Frees one block of the pool at once instead of caching it (synchronises the stream first):
 * for a big one-off block such as cuDNN's algorithm-search workspace. */
void cu_pool_discard(cu_state *st, void *p);

/* Temporaries of one op, released to the pool when it goes out of scope. */
struct cu_temps {
    cu_state *st;
    std::vector<void *> blocks;
    explicit cu_temps(cu_state *s) : st(s) {}
    ~cu_temps()
    {
        for (void *p : blocks) cu_pool_release(st, p);
    }
    cu_temps(const cu_temps &) = delete;
    cu_temps &operator=(const cu_temps &) = delete;
    /* A pool block owned by this scope. */
    lumen_status alloc(lumen_context *ctx, size_t bytes, void **out, const char *what);
};

/* ---- pinned staging ----
 * An op takes regions of the staging buffer (a bump allocator), fills them on the host and
 * queues copies from them at once; the next op waits (cu_stage_begin) until those copies have
 * read it. Device-to-host copies reuse the buffer from its start without waiting, because the
 * stream runs them after every copy queued before. */

/* Starts an op's use of staging: waits until the copies of the previous op have read it. */
lumen_status cu_stage_begin(cu_state *st);
/* `bytes` of pinned memory to fill and send with cu_stage_send. Growing the buffer
 * synchronises the stream (regions taken earlier have then been sent and are free). */
lumen_status cu_stage_take(cu_state *st, size_t bytes, char **out);
/* Queues staging region [p, p + bytes) -> device memory dev. */
lumen_status cu_stage_send(cu_state *st, void *dev, const char *p, size_t bytes);
/* Host -> device through staging, chunked so that filling chunk k+1 overlaps sending chunk k. */
lumen_status cu_upload_staged(cu_state *st, void *dev, const void *host, size_t bytes);
/* Device -> pinned staging; returns (in *out) when the bytes are there. */
lumen_status cu_stage_fetch(cu_state *st, const void *dev, size_t bytes, const char **out);
/* Device -> host through staging, chunked; returns when the bytes are in host memory. */
lumen_status cu_download_staged(cu_state *st, void *host, const void *dev, size_t bytes);

/* ---- the backend table's memory entries ---- */
lumen_status cu_mem_alloc(lumen_context *ctx, size_t bytes, void **out);
void cu_mem_release(lumen_context *ctx, void *p);
lumen_status cu_mem_upload(lumen_context *ctx, void *dst, const void *src, size_t bytes);
lumen_status cu_mem_download(lumen_context *ctx, void *dst, const void *src, size_t bytes);
lumen_status cu_synchronize(lumen_context *ctx);

#endif
