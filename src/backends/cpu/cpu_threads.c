/*
 * Thread teams that can start (docs/faults.md, "Threads").
 *
 * libgomp cannot report a failed thread start: when pthread_create fails as a parallel region
 * opens (EAGAIN under RLIMIT_NPROC, or ENOMEM when an address-space limit leaves no room for
 * the stacks), it prints "libgomp: Thread creation failed: ..." and exits the process with
 * status 1. omp_set_dynamic(1) does not change that: dynamic adjustment sizes teams by the
 * load average, and a failed start stays fatal. So before a run needs a larger team than this
 * OS thread has started, we start that many threads ourselves, with the stack size libgomp
 * gives its threads, and hold them until all are up. If only k can start, the context runs
 * with k threads from then on (one warning line) and no region asks libgomp for more.
 *
 * libgomp keeps a pool of threads per thread that opens regions, so what succeeded once is
 * remembered per OS thread (team_started); a smaller team later lets surplus threads exit,
 * and restarting them later is not probed again (what remains: docs/faults.md).
 */
#include "cpu.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest team this OS thread has been able to start (its libgomp pool). */
static _Thread_local int team_started = 1;

/* The stack size libgomp gives its threads: $OMP_STACKSIZE, else $GOMP_STACKSIZE, as libgomp
 * reads them (a number, then B, K, M or G; K when no suffix); 0: the pthread default. */
static size_t omp_stack_size(void)
{
    static const char *const names[] = {"OMP_STACKSIZE", "GOMP_STACKSIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (end == v) continue;
        while (isspace((unsigned char)*end))
            end++;
        const int unit = toupper((unsigned char)*end);
        const unsigned long long mult = unit == 'B'                ? 1
                                        : unit == 'K' || unit == 0 ? 1ull << 10
                                        : unit == 'M'              ? 1ull << 20
                                        : unit == 'G'              ? 1ull << 30
                                                                   : 0;
        if (mult && n <= SIZE_MAX / mult) return (size_t)(n * mult);
    }
    return 0;
}

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
} gate;

static void *wait_at_gate(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* How many threads of a team of `want` (the caller included) can run at once now. */
static int startable(int want, char *why, size_t why_size)
{
    pthread_t *t = malloc(sizeof *t * (size_t)(want - 1));
    if (!t) {
        snprintf(why, why_size, "out of memory");
        return 1;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    const size_t stack = omp_stack_size();
    if (stack) pthread_attr_setstacksize(&attr, stack);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int n = 0, err = 0;
    while (n < want - 1 && !(err = pthread_create(&t[n], &attr, wait_at_gate, &g)))
        n++;
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_attr_destroy(&attr);
    free(t);
    if (err) snprintf(why, why_size, "%s", strerror(err));
    return n + 1;
}

void lumen_cpu_fit_threads(lumen_context *ctx)
{
    if (ctx->threads <= team_started) return;
    char why[128] = "";
    const int n = startable(ctx->threads, why, sizeof why);
    if (n < ctx->threads) {
        lumen_log(LUMEN_LOG_WARN, "cannot start %d threads (%s); running with %d", ctx->threads,
                  why, n);
        ctx->threads = n;
    }
    if (n > team_started) team_started = n;
}

/* Whether the calling thread runs inside no parallel region (a team of one of its own). */
static bool outside_regions(void)
{
#ifdef _OPENMP
    return omp_get_level() == 0;
#else
    return true;
#endif
}

void lumen_cpu_team_run(int threads, void (*body)(void *arg, int tid), void *arg)
{
    if (threads <= 1 && outside_regions()) {
        body(arg, 0);
        return;
    }
#pragma omp parallel num_threads(threads > 1 ? threads : 1)
    body(arg, lumen_cpu_thread_num());
}

static double min_share(void)
{
    static _Atomic double cached = -1.0; /* racing first reads compute the same value */
    double v = cached;
    if (v >= 0) return v;
    const char *e = getenv("LUMEN_CPU_MIN_SHARE");
    char *end = NULL;
    v = e && *e ? strtod(e, &end) : LUMEN_CPU_MIN_SHARE;
    if (end && (*end || !(v >= 0))) v = LUMEN_CPU_MIN_SHARE; /* not a number >= 0 */
    cached = v;
    return v;
}

int lumen_cpu_team_size(const lumen_context *ctx, double work, int64_t items)
{
    const double share = min_share();
    double n = share > 0 ? work / share : (double)ctx->threads;
    if (n > (double)items) n = (double)items;
    if (n > ctx->threads) n = ctx->threads;
    return n < 1 ? 1 : (int)n;
}
