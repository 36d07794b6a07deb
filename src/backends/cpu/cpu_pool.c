/*
 * lumen's own worker pool for the CPU's item loops: the filter engine, resize and
 * lumen_cpu_parallel_for (docs/architecture.md, "CPU teams").
 *
 * Why not an OpenMP team: a region ends in a barrier that every thread of the team must reach,
 * so a call waits for a worker that another process has kept off its core, even when the
 * caller has long since done every item itself: beside two busy processes on 2 cores, a
 * 512 x 600 u8 Gaussian took a median 2.5 ms against 0.6 alone. And libgomp's idle threads
 * wait as its environment said when it was loaded (GOMP_SPINCOUNT), which a host program that
 * loaded libgomp first (cv2, torch) decides for lumen. Here a call ends when its items are
 * done: the caller runs tid 0 and takes every item no worker has taken (the bodies share items
 * through lumen_cpu_sched's stealing or a counter), a worker that wakes after that finds the
 * job closed and touches nothing of it, and idle workers spin POOL_SPIN pause loops (tens of
 * microseconds: calls in a loop find them awake), then sleep on a condition variable.
 *
 * One job runs at a time; a second caller meanwhile (another context's thread) runs its body
 * alone, as a team of one. Workers start when a job first needs them and live until the
 * process ends; a worker that cannot start leaves the items to the others. They block every
 * signal (the program's handlers run on its own threads), and a forked child starts afresh.
 */
#include "cpu.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

/* Pause loops an idle worker checks for the next job before it sleeps (a pause is 10-40 ns). */
#define POOL_SPIN 2000
#define POOL_MAX (LUMEN_MAX_THREADS - 1)

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct pool_job {
    void (*body)(void *arg, int tid);
    void *arg;
    int team;
} pool_job;

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cv = PTHREAD_COND_INITIALIZER;
/* The job's generation times 2, plus 1 while it takes workers: one word, stored with release
 * after `job` is written, so that a worker that reads "open" also reads the job it opens. */
static _Atomic uint64_t state;
static _Atomic int active;   /* workers inside the current job (or deciding whether to be) */
static _Atomic int next_tid; /* the next tid a worker takes */
static pool_job job;         /* the current job: read only by workers counted in active */
static int started;          /* workers running (under run_lock) */
static int sleeping;         /* workers waiting on sleep_cv (under sleep_lock) */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static uint64_t gen_of(uint64_t st)
{
    return st >> 1;
}

/* Waits for a generation other than seen: a bounded spin, then sleep. */
static uint64_t await_job(uint64_t seen)
{
    for (int i = 0; i < POOL_SPIN; i++) {
        const uint64_t g = gen_of(atomic_load_explicit(&state, memory_order_acquire));
        if (g != seen) return g;
        relax();
    }
    pthread_mutex_lock(&sleep_lock);
    sleeping++;
    while (gen_of(atomic_load(&state)) == seen)
        pthread_cond_wait(&sleep_cv, &sleep_lock);
    sleeping--;
    pthread_mutex_unlock(&sleep_lock);
    return gen_of(atomic_load(&state));
}

static void *worker(void *start_gen)
{
    uint64_t seen = (uint64_t)(uintptr_t)start_gen;
    for (;;) {
        const uint64_t g = await_job(seen);
        seen = g;
        /* Counted first, checked second (both sequentially consistent): either the caller,
         * which closes first and counts second, waits for this worker, or this worker sees the
         * job closed (or another one) and leaves it alone. */
        atomic_fetch_add(&active, 1);
        if (atomic_load(&state) == 2 * g + 1) {
            const int tid = atomic_fetch_add(&next_tid, 1);
            if (tid < job.team) job.body(job.arg, tid);
        }
        atomic_fetch_sub(&active, 1);
    }
    return NULL;
}

/* In a forked child only the forking thread exists: no workers, no job, fresh locks. */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&run_lock, NULL);
    pthread_mutex_init(&sleep_lock, NULL);
    pthread_cond_init(&sleep_cv, NULL);
    atomic_store(&state, atomic_load(&state) & ~(uint64_t)1);
    atomic_store(&active, 0);
    started = 0, sleeping = 0;
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* Starts workers up to n (under run_lock), with every signal blocked; stops at a failure. */
static void grow(int n)
{
    if (n > POOL_MAX) n = POOL_MAX;
    if (started >= n) return;
    pthread_once(&fork_once, register_fork_handler);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const uintptr_t now = (uintptr_t)gen_of(atomic_load(&state));
    for (pthread_t t; started < n && !pthread_create(&t, &attr, worker, (void *)now);)
        started++;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void lumen_cpu_pool_run(int team, void (*body)(void *arg, int tid), void *arg)
{
    if (team <= 1 || pthread_mutex_trylock(&run_lock) != 0) {
        body(arg, 0);
        return;
    }
    grow(team - 1);
    job = (pool_job){body, arg, team};
    atomic_store(&next_tid, 1);
    const uint64_t g = gen_of(atomic_load(&state)) + 1;
    pthread_mutex_lock(&sleep_lock);
    atomic_store(&state, 2 * g + 1); /* open: after the job is written */
    const int wake = sleeping;
    pthread_mutex_unlock(&sleep_lock);
    if (wake) pthread_cond_broadcast(&sleep_cv);
    body(arg, 0);                     /* takes every item no worker has */
    atomic_store(&state, 2 * g);      /* closed */
    while (atomic_load(&active) != 0) /* workers finishing the items they hold */
        relax();
    pthread_mutex_unlock(&run_lock);
}

typedef struct for_run {
    void (*body)(void *arg, int64_t i, int tid);
    void *arg;
    int64_t n;
    _Atomic int64_t next;
} for_run;

static void for_body(void *arg, int tid)
{
    for_run *r = arg;
    for (int64_t i; (i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed)) < r->n;)
        r->body(r->arg, i, tid);
}

void lumen_cpu_parallel_for(int threads, int64_t n, void (*body)(void *arg, int64_t i, int tid),
                            void *arg)
{
    if (threads <= 1 || n <= 1) {
        for (int64_t i = 0; i < n; i++)
            body(arg, i, 0);
        return;
    }
    for_run r = {body, arg, n, 0};
    lumen_cpu_pool_run(threads < n ? threads : (int)n, for_body, &r);
}
