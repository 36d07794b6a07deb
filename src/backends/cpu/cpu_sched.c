/*
 * Work sharing for the CPU's parallel loops: each thread owns a contiguous share of the items
 * and takes them in order; a thread that has finished its share takes the next items of the
 * others' (docs/benchmarks.md, "Zen 5: shares and stealing"). Used by conv2d's SGEMM, Winograd
 * and direct items and by the filter engine's row bands; the FFT's tiles and the depthwise
 * planes measured no better than dynamic and keep it.
 *
 * Why not OpenMP's schedules: schedule(static) gives every call the same items per thread, so
 * a thread finds in its own L2 the inputs and outputs it touched in the last call of a loop
 * of identical calls (4-12 % faster than dynamic for conv layers of 1-6 MB per call, Zen 5),
 * but a thread whose core another process takes holds up the whole call (issue 17 item 4).
 * schedule(dynamic) rebalances but scatters the items over the threads anew on every call.
 * Shares with stealing keep the static assignment while every thread is running, and
 * rebalance when one is not.
 */
#include "cpu.h"

#include <stdlib.h>

lumen_status lumen_cpu_sched_init(lumen_cpu_sched *s, int64_t items, int threads)
{
    if (threads < 1) threads = 1;
    s->threads = threads;
    s->share = s->inline_share;
    if (threads > LUMEN_CPU_SHARES_INLINE) {
        s->share = aligned_alloc(64, sizeof *s->share * (size_t)threads);
        if (!s->share)
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                   "cannot allocate the work shares of %d threads", threads);
    }
    for (int t = 0; t < threads; t++)
        s->share[t] =
            (lumen_cpu_share){.next = items * t / threads, .end = items * (t + 1) / threads};
    return LUMEN_OK;
}

void lumen_cpu_sched_free(lumen_cpu_sched *s)
{
    if (s->share != s->inline_share) free(s->share);
    s->share = NULL;
}

int64_t lumen_cpu_sched_next(lumen_cpu_sched *s, int tid, int *turn)
{
    /* A share only ever runs out, so one pass over the shares, own first, finds every item. */
    for (; *turn < s->threads; ++*turn) {
        lumen_cpu_share *sh = &s->share[(tid + *turn) % s->threads];
        const int64_t i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
        if (i < sh->end) return i;
    }
    return -1;
}

/* Shares items among team threads in *sched and runs body on them with run. */
static lumen_status share_on(void (*run)(int, void (*)(void *, int), void *), int team,
                             int64_t items, lumen_cpu_sched *sched, void (*body)(void *, int),
                             void *arg)
{
    const lumen_status st = lumen_cpu_sched_init(sched, items, team);
    if (st) return st;
    run(team, body, arg);
    lumen_cpu_sched_free(sched);
    return LUMEN_OK;
}

lumen_status lumen_cpu_team_share(int team, int64_t items, lumen_cpu_sched *sched,
                                  void (*body)(void *arg, int tid), void *arg)
{
    return share_on(lumen_cpu_team_run, team, items, sched, body, arg);
}

lumen_status lumen_cpu_pool_share(int team, int64_t items, lumen_cpu_sched *sched,
                                  void (*body)(void *arg, int tid), void *arg)
{
    return share_on(lumen_cpu_pool_run, team, items, sched, body, arg);
}
