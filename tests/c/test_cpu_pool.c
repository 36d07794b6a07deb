/*
 * lumen's worker pool (cpu_pool.c): every item of every job is done exactly once and before the
 * call returns, job after job (thousands of short jobs, where a worker waking late or a job
 * ending early would show); callers on several threads at once each get their items done (one
 * with the pool, the others alone); the pool works again in a forked child; tids are distinct
 * among the threads of a job; and idle workers sleep: the process uses almost no CPU in the
 * 50 ms after a job (a pool that kept spinning would use all of it).
 */
#define _GNU_SOURCE /* usleep */
#include "test_support.h"

#include "backends/cpu/cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct count_run {
    _Atomic int *count;
} count_run;

static void count_one(void *arg, int64_t i, int tid)
{
    count_run *r = arg;
    (void)tid;
    atomic_fetch_add(&r->count[i], 1);
}

/* One parallel_for of n items on `threads`; false when an item was missed or doubled. */
static bool one_job(int threads, int64_t n)
{
    count_run r;
    memset(&r, 0, sizeof r);
    r.count = calloc((size_t)n, sizeof *r.count);
    assert_non_null(r.count);
    lumen_cpu_parallel_for(threads, n, count_one, &r);
    bool ok = true;
    for (int64_t i = 0; i < n; i++)
        ok = ok && atomic_load(&r.count[i]) == 1;
    free(r.count);
    return ok;
}

static void test_every_item_once_job_after_job(void **state)
{
    (void)state;
    for (int rep = 0; rep < 3000; rep++) {
        const int threads = 2 + rep % 3;
        const int64_t n = 1 + rep % 37;
        if (!one_job(threads, n))
            fail_msg("job %d: %d threads, %lld items", rep, threads, (long long)n);
    }
}

/* A body that records which tids ran (each at most once per job) and takes items by counter. */
typedef struct tid_run {
    _Atomic int seen[LUMEN_MAX_THREADS];
    _Atomic int twice;
    _Atomic int64_t next, done;
    int64_t n;
    int spin; /* busy loops per item */
} tid_run;

static void tid_body(void *arg, int tid)
{
    tid_run *r = arg;
    if (atomic_fetch_add(&r->seen[tid], 1) != 0) atomic_store(&r->twice, 1);
    for (int64_t i; (i = atomic_fetch_add(&r->next, 1)) < r->n;) {
        for (volatile int k = 0; k < r->spin; k++) {
        }
        atomic_fetch_add(&r->done, 1);
    }
}

static void test_distinct_tids_and_all_done_on_return(void **state)
{
    (void)state;
    for (int rep = 0; rep < 2000; rep++) {
        tid_run r;
        memset(&r, 0, sizeof r);
        r.n = 64, r.spin = 200;
        const int team = 2 + rep % 4;
        lumen_cpu_pool_run(team, tid_body, &r);
        /* read at once: a worker still inside the body would be caught here */
        assert_int_equal(atomic_load(&r.done), 64);
        assert_int_equal(atomic_load(&r.twice), 0);
        assert_int_equal(atomic_load(&r.seen[0]), 1); /* the caller always runs tid 0 */
        for (int t = team; t < LUMEN_MAX_THREADS; t++)
            assert_int_equal(atomic_load(&r.seen[t]), 0);
    }
}

static void *caller(void *arg)
{
    _Atomic int *bad = arg;
    for (int rep = 0; rep < 500; rep++)
        if (!one_job(2 + rep % 2, 50)) atomic_store(bad, 1);
    return NULL;
}

static void test_callers_on_several_threads(void **state)
{
    (void)state;
    _Atomic int bad = 0;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, caller, &bad), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
}

static void test_forked_child(void **state)
{
    (void)state;
    assert_true(one_job(3, 100)); /* the parent's workers exist */
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        bool ok = true, helped = false;
        for (int rep = 0; rep < 200; rep++)
            ok = ok && one_job(3, 40);
        /* and the child's own workers take part (jobs of ~1 ms: one of them is joined) */
        for (int rep = 0; rep < 100 && !helped; rep++) {
            tid_run r;
            memset(&r, 0, sizeof r);
            r.n = 64, r.spin = 20000;
            lumen_cpu_pool_run(2, tid_body, &r);
            ok = ok && atomic_load(&r.done) == 64;
            helped = atomic_load(&r.seen[1]) > 0;
        }
        _exit(!ok ? 1 : !helped ? 2 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status))
        fail_msg("child: %s", WEXITSTATUS(status) == 1 ? "items missed" : "no worker ran");
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void test_idle_workers_sleep(void **state)
{
    (void)state;
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        assert_true(one_job(3, 1000));
        const double c0 = cpu_ms();
        usleep(50000);
        const double used = cpu_ms() - c0;
        best = used < best ? used : best;
    }
    /* spinning workers would charge about 100 ms (two of them) in 50 ms; sleeping ones ~0 */
    if (best > 5.0) fail_msg("idle pool used %.2f ms of CPU in 50 ms", best);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_once_job_after_job),
        cmocka_unit_test(test_distinct_tids_and_all_done_on_return),
        cmocka_unit_test(test_callers_on_several_threads),
        cmocka_unit_test(test_forked_child),
        cmocka_unit_test(test_idle_workers_sleep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
