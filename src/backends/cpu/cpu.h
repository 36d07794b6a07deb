/* Entry points of the CPU backend's fast path (the table is in cpu_backend.c). */
#ifndef LUMEN_CPU_H
#define LUMEN_CPU_H

#include "internal.h"
#include "row_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* True when the fast AVX2+FMA kernels may run in this context. */
static inline bool lumen_ctx_use_avx2(const lumen_context *ctx) { return ctx->simd && ctx->cpu_avx2; }
/* True when the AVX-512 kernels may run (they assume AVX2 + FMA too, so clearing cpu_avx2
 * turns them off as well). */
static inline bool lumen_ctx_use_avx512(const lumen_context *ctx)
{
    return lumen_ctx_use_avx2(ctx) && ctx->cpu_avx512;
}

/* The widest row kernels this context may run: one choice for every filter path (engine, FFT,
 * fast Gaussian), so that $LUMEN_CPU_ISA and lumen_context_set_simd reach them all. */
static inline const lumen_row_kernels *lumen_cpu_row_kernels(const lumen_context *ctx)
{
    if (lumen_ctx_use_avx512(ctx)) return &lumen_row_kernels_avx512;
    return lumen_ctx_use_avx2(ctx) ? &lumen_row_kernels_avx2 : &lumen_row_kernels_generic;
}

/*
 * Interruption of one run, shared by its threads (docs/faults.md). Threads poll between tiles,
 * bands or blocks of rows; the first that sees the context's hook fire sets `stopped`, and the
 * others then skip their remaining items without calling the hook again. Worksharing loops
 * keep running (skipping), so every thread meets the same barriers. After the parallel region
 * the calling thread turns `stopped` into LUMEN_ERR_INTERRUPTED (messages are per thread).
 */
typedef struct lumen_cpu_stop {
    const lumen_context *ctx;
    int stopped;
} lumen_cpu_stop;

static inline lumen_cpu_stop lumen_cpu_stop_init(const lumen_context *ctx)
{
    return (lumen_cpu_stop){ctx, 0};
}

/* True when the run should stop: one load when the context has no hook. */
static inline bool lumen_cpu_should_stop(lumen_cpu_stop *st)
{
    if (!st->ctx->interrupt_poll) return false;
    if (__atomic_load_n(&st->stopped, __ATOMIC_RELAXED)) return true;
    if (!lumen_interrupt_requested(st->ctx)) return false;
    __atomic_store_n(&st->stopped, 1, __ATOMIC_RELAXED);
    return true;
}

/* s, or LUMEN_ERR_INTERRUPTED with its message when the run was stopped. */
static inline lumen_status lumen_cpu_stop_status(const lumen_cpu_stop *st, lumen_status s)
{
    return s == LUMEN_OK && st->stopped ? lumen_interrupted_error() : s;
}

/* The calling thread's number in its OpenMP team (0 outside a team or without OpenMP). */
static inline int lumen_cpu_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/*
 * Runs body(arg, tid) for tid = 0 .. threads - 1 on one OpenMP team; one thread called from
 * outside any parallel region runs it on the calling thread with no region at all: libgomp ends
 * every region, even a team of one, with a futex wake (a system call, about 1 us in a VM
 * guest), which on a 16 x 16 image cost a third of the whole call. Bodies may use worksharing
 * and barriers: with no region they bind to the implicit team of one, and from inside a
 * caller's region a team of one is still opened, so they never bind to the caller's team.
 */
void lumen_cpu_team_run(int threads, void (*body)(void *arg, int tid), void *arg);

/* body(arg, i, tid) for every i in [0, n): items handed out one at a time, as threads come
 * free, to the caller and up to threads - 1 workers of lumen's pool (lumen_cpu_pool_run), or
 * run in order on the calling thread when threads <= 1. tids are distinct among the threads
 * running at once, but not every tid below `threads` need run. */
void lumen_cpu_parallel_for(int threads, int64_t n, void (*body)(void *arg, int64_t i, int tid),
                            void *arg);

/*
 * lumen's own worker pool (cpu_pool.c): body(arg, 0) on the caller and body(arg, tid), tid in
 * 1 .. team - 1, on the workers that come in time; the call returns when the caller's body has
 * returned and no worker is inside one. So a body must share its work as items any thread may
 * take (lumen_cpu_sched's shares with stealing, a counter) and use no OpenMP construct; a
 * worker another process keeps off its core then holds nothing up, and idle workers spin only
 * tens of microseconds before they sleep, whatever libgomp was told.
 */
void lumen_cpu_pool_run(int team, void (*body)(void *arg, int tid), void *arg);

/*
 * How many of ctx->threads to wake for `work` units of work (about a nanosecond each on one
 * thread) split into `items` independent items: no more than the items, and each thread gets
 * at least LUMEN_CPU_MIN_SHARE units (docs/architecture.md, "CPU teams"), since waking a thread and
 * joining it costs 2-4 us. $LUMEN_CPU_MIN_SHARE, read once, replaces it; 0 wakes every thread
 * whatever the size (the test suites set it, so that their small images still run on whole teams).
 */
#define LUMEN_CPU_MIN_SHARE 3000.0
int lumen_cpu_team_size(const lumen_context *ctx, double work, int64_t items);

/* The items of a parallel loop in one contiguous share per thread, taken in order, and taken
 * from the other shares once a thread's own has run out (cpu_sched.c): the same items per thread
 * call after call, like schedule(static), yet a thread that gets no core does not hold up the
 * call. Init before the parallel region (the struct must not be copied), then in the region:
 *     int turn = 0;
 *     for (int64_t i; (i = lumen_cpu_sched_next(&s, lumen_cpu_thread_num(), &turn)) >= 0;) ...
 * A team smaller than `threads` is fine: the absent threads' shares are taken by the others. */
typedef struct lumen_cpu_share {
    _Alignas(64) int64_t next; /* the share's next item (atomic); its own cache line */
    int64_t end;
} lumen_cpu_share;

#define LUMEN_CPU_SHARES_INLINE 8
typedef struct lumen_cpu_sched {
    lumen_cpu_share *share; /* inline_share, or allocated for more threads */
    int threads;
    lumen_cpu_share inline_share[LUMEN_CPU_SHARES_INLINE];
} lumen_cpu_sched;

lumen_status lumen_cpu_sched_init(lumen_cpu_sched *s, int64_t items, int threads);
void lumen_cpu_sched_free(lumen_cpu_sched *s);
/* The next item for thread tid, or -1 when none is left; *turn starts at 0 per thread. */
int64_t lumen_cpu_sched_next(lumen_cpu_sched *s, int tid, int *turn);
/* Shares `items` among `team` threads in *sched and runs body(arg, tid) on them
 * (lumen_cpu_team_run): the body takes its items from *sched, which arg points to. */
lumen_status lumen_cpu_team_share(int team, int64_t items, lumen_cpu_sched *sched,
                                  void (*body)(void *arg, int tid), void *arg);
/* lumen_cpu_team_share on lumen's pool (lumen_cpu_pool_run's rules for the body). */
lumen_status lumen_cpu_pool_share(int team, int64_t items, lumen_cpu_sched *sched,
                                  void (*body)(void *arg, int tid), void *arg);

/* Lowers ctx->threads, with one warning, to the team size that can start now, so that no
 * parallel region makes libgomp end the process (cpu_threads.c). Before every CPU run. */
void lumen_cpu_fit_threads(lumen_context *ctx);

/* k[i] == k[n-1-i] for all i: the row kernels then add mirrored taps before multiplying. */
static inline bool lumen_kernel_is_symmetric(const float *k, int n)
{
    for (int i = 0; i < n / 2; i++)
        if (k[i] != k[n - 1 - i]) return false;
    return true;
}

/* The scalar reference of every filter method (reference.c): the oracle, in double. */
lumen_status lumen_cpu_reference_filter(lumen_context *ctx, const lumen_filter_job *job);

/* Resize (resize.c): the reference with SIMD off, else the copy or the separable path. */
lumen_status lumen_cpu_resize(lumen_context *ctx, const lumen_resize_job *job, lumen_run_info *info);

/* Row-pipeline engine (engine.c): direct and separable filters. */
lumen_status lumen_cpu_direct(lumen_context *ctx, const lumen_filter_job *job);
lumen_status lumen_cpu_separable(lumen_context *ctx, const lumen_filter_job *job);

/* Tiled overlap-save FFT filter (fft_filter.c). */
lumen_status lumen_cpu_fft(lumen_context *ctx, const lumen_filter_job *job);
/* FFT tile size for job and the work it costs (arbitrary units of N log N). */
typedef struct lumen_fft_tiling {
    int nh, nw;       /* FFT size */
    int64_t tiles;    /* tiles over all planes */
    double work;      /* per thread, in fft_work units */
    int tile_threads; /* threads on one tile: 1, tiles spread over the threads; > 1, one tile
                         at a time on all of them (FFTW's threads, rows in parallel) */
} lumen_fft_tiling;
lumen_fft_tiling lumen_cpu_fft_tiling(const lumen_filter_job *job, int threads);
/* lumen_cpu_fft with a given tiling (nh, nw, tile_threads; the tests force one with it). */
lumen_status lumen_cpu_fft_tiled(lumen_context *ctx, const lumen_filter_job *job,
                                 lumen_fft_tiling t);
/* Whether FFTW's OpenMP threads are linked (else tilings keep tile_threads 1). */
bool lumen_cpu_fft_threads_linked(void);
/* A kernel that ran another way (direct, separable) in this context: noted, so that auto's
 * FFT estimate for it leaves the kernel's transform out from then on (fft_filter.c). */
void lumen_cpu_fft_note_kernel(lumen_context *ctx, const lumen_filter_job *job);
bool lumen_cpu_fft_kernel_noted(lumen_context *ctx, const lumen_filter_job *job);
/* True when the kernel spectrum for tiling t is in the context's plan cache. */
bool lumen_cpu_fft_spectrum_cached(lumen_context *ctx, const lumen_filter_job *job,
                                   lumen_fft_tiling t);
/* Work of one tile of nh x nw in the units of lumen_fft_tiling.work. */
double lumen_cpu_fft_tile_work(int nh, int nw);

/* Estimated seconds for job by method on this machine (cost_model.c). */
double lumen_cpu_cost(lumen_context *ctx, const lumen_op *op);

/* The CPU as a device (cpu_device.c): one, named by /proc/cpuinfo, with the system's memory. */
int lumen_cpu_device_count(void);
lumen_status lumen_cpu_device_info(int i, lumen_device_info *info);
/* Whether a buffer of `bytes` could ever be resident: at most RAM + swap. Where the kernel
 * overcommits (vm.overcommit_memory = 1), malloc grants any size and the first touches of a
 * buffer beyond that end in the OOM killer, so the caller reports out-of-memory instead. */
bool lumen_cpu_fits_in_memory(uint64_t bytes);

#endif
