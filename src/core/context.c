/* Contexts: thread count, SIMD policy, device, and the CPU kernels they may use. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "internal.h"

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Plans and kernel spectra kept per context; spectra of big kernels are a few MB each. */
#define PLAN_CACHE_BYTES ((size_t)256 << 20)

/* A thread count in 1..LUMEN_MAX_THREADS at the start of v (OMP_NUM_THREADS may be a list of
 * counts per nesting level, "4,2": its first is ours), or 0. */
static int leading_count(const char *v, bool whole)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || (whole ? *end != '\0' : *end != '\0' && *end != ',')) return 0;
    return n >= 1 && n <= LUMEN_MAX_THREADS ? (int)n : 0;
}

/* The CPUs this process may run on (its affinity mask: taskset, a cgroup's cpuset, a Dask
 * worker pinned to cores), else the online ones; fewer where its cgroup's CPU quota allows
 * fewer (a container's --cpus): more threads than that only wait for their turn. */
static int usable_cpus(void)
{
    cpu_set_t set;
    long n;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1)
        n = CPU_COUNT(&set);
    else
        n = sysconf(_SC_NPROCESSORS_ONLN);
    const int quota = lumen_cgroup_cpus("");
    if (quota > 0 && quota < n) n = quota;
    return n < 1 ? 1 : n < LUMEN_MAX_THREADS ? (int)n : LUMEN_MAX_THREADS;
}

/* $LUMEN_NUM_THREADS, else $OMP_NUM_THREADS (what launchers such as Dask, MPI and batch
 * systems set per worker so that libraries do not oversubscribe its cores), else the CPUs this
 * process may use (affinity and cgroup quota). */
int lumen_default_threads(void)
{
    const char *v = getenv("LUMEN_NUM_THREADS");
    int n;
    if (v && *v) {
        if ((n = leading_count(v, true))) return n;
        lumen_log(LUMEN_LOG_WARN, "LUMEN_NUM_THREADS='%s' is not a thread count in 1..%d; ignored", v,
                  LUMEN_MAX_THREADS);
    }
    v = getenv("OMP_NUM_THREADS");
    if (v && *v) {
        if ((n = leading_count(v, false))) return n;
        lumen_log(LUMEN_LOG_WARN, "OMP_NUM_THREADS='%s' is not a thread count in 1..%d; ignored", v,
                  LUMEN_MAX_THREADS);
    }
    return usable_cpus();
}

/* $LUMEN_DEVICE (default "auto"), $LUMEN_STRICT=1 and $LUMEN_TF32=1. A device asked for by name that is not
 * there is an error, never a silent substitute. */
static lumen_status apply_environment(lumen_context *ctx)
{
    const char *strict = getenv("LUMEN_STRICT");
    ctx->strict = strict && *strict && strcmp(strict, "0") != 0;
    const char *tf32 = getenv("LUMEN_TF32"); /* conv may use TF32 tensor cores (opt-in) */
    ctx->tf32 = tf32 && *tf32 && strcmp(tf32, "0") != 0;
    const char *dev = getenv("LUMEN_DEVICE");
    lumen_status s = lumen_context_set_device(ctx, dev && *dev ? dev : "auto");
    if (s && dev && *dev) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", lumen_last_error());
        return lumen_set_error(s, "LUMEN_DEVICE='%s': %s", dev, msg);
    }
    return s;
}

lumen_status lumen_context_create(lumen_context **out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: pointer is NULL");
    lumen_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "context: out of memory");
    ctx->threads = lumen_default_threads();
    ctx->simd = true;
    ctx->be = &lumen_cpu_backend; /* device 0 until apply_environment chooses */
    lumen_cpu_detect_isa(&ctx->cpu_avx2, &ctx->cpu_avx512);
    ctx->fft_planning = LUMEN_FFT_ESTIMATE;
    ctx->plans = lumen_plan_cache_create(PLAN_CACHE_BYTES);
    if (!ctx->plans) {
        free(ctx);
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "context: out of memory");
    }
    lumen_status s = apply_environment(ctx);
    if (s) {
        lumen_context_destroy(ctx);
        return s;
    }
    *out = ctx;
    return LUMEN_OK;
}

void lumen_context_destroy(lumen_context *ctx)
{
    if (!ctx) return;
    lumen_context_release_device(ctx);
    lumen_plan_cache_destroy(ctx->plans);
    free(ctx);
}

lumen_status lumen_context_set_fft_planning(lumen_context *ctx, lumen_fft_planning p)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    if (p != LUMEN_FFT_ESTIMATE && p != LUMEN_FFT_MEASURE)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "fft_planning: unknown policy %d", (int)p);
    if (p != ctx->fft_planning) lumen_plan_cache_clear(ctx->plans); /* plans differ by policy */
    ctx->fft_planning = p;
    return LUMEN_OK;
}

void lumen_context_clear_plans(lumen_context *ctx)
{
    if (ctx) lumen_plan_cache_clear(ctx->plans);
}

lumen_status lumen_context_set_threads(lumen_context *ctx, int n)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    if (n < 0 || n > LUMEN_MAX_THREADS)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "threads: expected 0..%d, got %d",
                               LUMEN_MAX_THREADS, n);
    ctx->threads = n == 0 ? lumen_default_threads() : n;
    return LUMEN_OK;
}

int lumen_context_threads(const lumen_context *ctx) { return ctx ? ctx->threads : 0; }

lumen_status lumen_context_set_simd(lumen_context *ctx, int enabled)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    ctx->simd = enabled != 0;
    return LUMEN_OK;
}

const char *lumen_cpu_features(const lumen_context *ctx)
{
    if (!ctx || !ctx->simd || !ctx->cpu_avx2) return "scalar";
    return ctx->cpu_avx512 ? "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma" : "avx2,fma";
}

lumen_status lumen_context_set_tf32(lumen_context *ctx, int enabled)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    ctx->tf32 = enabled != 0; /* device plans are keyed by it: no need to drop them */
    return LUMEN_OK;
}

int lumen_context_tf32(const lumen_context *ctx) { return ctx ? ctx->tf32 : 0; }

lumen_status lumen_context_set_interrupt(lumen_context *ctx, int (*poll)(void *arg), void *arg)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    ctx->interrupt_poll = poll;
    ctx->interrupt_arg = poll ? arg : NULL;
    return LUMEN_OK;
}

lumen_status lumen_interrupted_error(void)
{
    return lumen_set_error(LUMEN_ERR_INTERRUPTED, "interrupted (the context's interrupt hook asked "
                                                  "the call to stop; its output is incomplete)");
}
