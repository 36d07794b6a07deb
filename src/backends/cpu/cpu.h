/* Entry points of the CPU backend's fast path (the table is in cpu_backend.c). */
#ifndef LUMEN_CPU_H
#define LUMEN_CPU_H

#include "internal.h"

/* True when the fast AVX2+FMA kernels may run in this context. */
static inline bool lumen_ctx_use_avx2(const lumen_context *ctx) { return ctx->simd && ctx->cpu_avx2; }
/* True when the AVX-512 kernels may run (they assume AVX2 + FMA too, so clearing cpu_avx2
 * turns them off as well). */
static inline bool lumen_ctx_use_avx512(const lumen_context *ctx)
{
    return lumen_ctx_use_avx2(ctx) && ctx->cpu_avx512;
}

/* k[i] == k[n-1-i] for all i: the row kernels then add mirrored taps before multiplying. */
static inline bool lumen_kernel_is_symmetric(const float *k, int n)
{
    for (int i = 0; i < n / 2; i++)
        if (k[i] != k[n - 1 - i]) return false;
    return true;
}

/* The scalar reference of every filter method (reference.c): the oracle, in double. */
lumen_status lumen_cpu_reference_filter(lumen_context *ctx, const lumen_filter_job *job);

/* Row-pipeline engine (engine.c): direct and separable filters. */
lumen_status lumen_cpu_direct(lumen_context *ctx, const lumen_filter_job *job);
lumen_status lumen_cpu_separable(lumen_context *ctx, const lumen_filter_job *job);

/* Tiled overlap-save FFT filter (fft_filter.c). */
lumen_status lumen_cpu_fft(lumen_context *ctx, const lumen_filter_job *job);
/* FFT tile size for job and the work it costs (arbitrary units of N log N). */
typedef struct lumen_fft_tiling {
    int nh, nw;     /* FFT size */
    int64_t tiles;  /* tiles over all planes */
    double work;    /* per thread, in fft_work units */
} lumen_fft_tiling;
lumen_fft_tiling lumen_cpu_fft_tiling(const lumen_filter_job *job, int threads);
/* True when the kernel spectrum for an nh x nw FFT is in the context's plan cache. */
bool lumen_cpu_fft_spectrum_cached(lumen_context *ctx, const lumen_filter_job *job, int nh, int nw);
/* Work of one tile of nh x nw in the units of lumen_fft_tiling.work. */
double lumen_cpu_fft_tile_work(int nh, int nw);

/* Estimated seconds for job by method on this machine (cost_model.c). */
double lumen_cpu_cost(lumen_context *ctx, const lumen_op *op);

/* The CPU as a device (cpu_device.c): one, named by /proc/cpuinfo, with the system's memory. */
int lumen_cpu_device_count(void);
lumen_status lumen_cpu_device_info(int i, lumen_device_info *info);

#endif
