/*
 * The CPU's work shares (cpu_sched.c): every item is handed out exactly once, whatever the team
 * (as large as the shares, smaller, or one thread alone); a thread takes its own contiguous
 * share first and in order, then the others' next items; more threads than the inline shares
 * take the allocated path. The team helpers (cpu_threads.c): a run wakes no more threads than its
 * work pays for; a team of one runs its body on the calling thread with no region, except inside
 * a parallel region of the caller's, where it opens its own.
 */
#define _POSIX_C_SOURCE 200809L /* unsetenv */
#include "test_support.h"

#include "backends/cpu/cpu.h"

#include <stdlib.h>
#include <string.h>

/* Runs the shares of `threads` with a team of `team` threads; counts how often each item came. */
static void count_items(int64_t items, int threads, int team, int *count)
{
    lumen_cpu_sched s;
    assert_int_equal(lumen_cpu_sched_init(&s, items, threads), LUMEN_OK);
    memset(count, 0, sizeof *count * (size_t)(items ? items : 1));
#pragma omp parallel num_threads(team)
    {
        const int tid = lumen_cpu_thread_num();
        int turn = 0;
        for (int64_t i; (i = lumen_cpu_sched_next(&s, tid, &turn)) >= 0;) {
            assert_true(i < items);
#pragma omp atomic
            count[i]++;
        }
    }
    lumen_cpu_sched_free(&s);
}

static void test_every_item_once(void **state)
{
    (void)state;
    static const int64_t items[] = {0, 1, 2, 5, 8, 97, 1000};
    static const int threads[] = {1, 2, 3, 8, 9, 33};
    int *count = malloc(sizeof *count * 1000);
    assert_non_null(count);
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
            for (int k = 0; k < 3; k++) { /* teams of 1, 2 (capped) and all threads */
                const int team = k == 2 ? threads[t] : k + 1 < threads[t] ? k + 1 : threads[t];
                count_items(items[i], threads[t], team, count);
                for (int64_t j = 0; j < items[i]; j++)
                    assert_int_equal(count[j], 1);
            }
    free(count);
}

/* One thread at a time, so the order is known: thread 1 of 3 over 10 items owns [3, 6). */
static void test_own_share_then_the_others(void **state)
{
    (void)state;
    lumen_cpu_sched s;
    assert_int_equal(lumen_cpu_sched_init(&s, 10, 3), LUMEN_OK);
    int turn = 0;
    static const int64_t want[] = {3, 4, 5, 6, 7, 8, 9, 0, 1, 2, -1, -1};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        assert_int_equal(lumen_cpu_sched_next(&s, 1, &turn), want[k]);
    lumen_cpu_sched_free(&s);

    /* Thread 0 takes items 0 and 1 of its share [0, 3); thread 2 runs out of [6, 10) and takes
     * share 0's next item (2) before share 1's [3, 6); thread 0 then finds its share empty. */
    assert_int_equal(lumen_cpu_sched_init(&s, 10, 3), LUMEN_OK);
    int turn0 = 0, turn2 = 0;
    assert_int_equal(lumen_cpu_sched_next(&s, 0, &turn0), 0);
    assert_int_equal(lumen_cpu_sched_next(&s, 0, &turn0), 1);
    for (int64_t i = 6; i < 10; i++)
        assert_int_equal(lumen_cpu_sched_next(&s, 2, &turn2), i);
    assert_int_equal(lumen_cpu_sched_next(&s, 2, &turn2), 2);
    assert_int_equal(lumen_cpu_sched_next(&s, 0, &turn0), 3);
    lumen_cpu_sched_free(&s);
}

/* A share per thread in order: with 40 threads over 80 items thread t owns {2t, 2t + 1}. */
static void test_many_threads_shares(void **state)
{
    (void)state;
    lumen_cpu_sched s;
    assert_int_equal(lumen_cpu_sched_init(&s, 80, 40), LUMEN_OK);
    assert_ptr_not_equal(s.share, s.inline_share);
    for (int t = 39; t >= 0; t--) {
        int turn = 0;
        assert_int_equal(lumen_cpu_sched_next(&s, t, &turn), 2 * t);
        assert_int_equal(lumen_cpu_sched_next(&s, t, &turn), 2 * t + 1);
    }
    int turn = 0;
    assert_int_equal(lumen_cpu_sched_next(&s, 5, &turn), -1);
    lumen_cpu_sched_free(&s);
    assert_null(s.share);
}

static void test_team_size_by_work(void **state)
{
    (void)state;
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, 3), LUMEN_OK);
    const double share = LUMEN_CPU_MIN_SHARE;
    assert_int_equal(lumen_cpu_team_size(ctx, 0, 100), 1);
    assert_int_equal(lumen_cpu_team_size(ctx, 2 * share - 1, 100), 1);
    assert_int_equal(lumen_cpu_team_size(ctx, 2 * share, 100), 2);
    assert_int_equal(lumen_cpu_team_size(ctx, 3 * share, 100), 3);
    assert_int_equal(lumen_cpu_team_size(ctx, 1e12, 100), 3); /* never more than the context's */
    assert_int_equal(lumen_cpu_team_size(ctx, 1e12, 2), 2);   /* nor than the items */
    assert_int_equal(lumen_cpu_team_size(ctx, 1e12, 0), 1);
    lumen_context_destroy(ctx);
}

static void note_tid(void *arg, int tid)
{
    int *seen = arg;
#pragma omp atomic
    seen[tid]++;
    if (tid == 0) seen[8] = omp_get_level(), seen[9] = lumen_cpu_thread_num();
}

static void test_team_run(void **state)
{
    (void)state;
    int seen[10] = {0};
    lumen_cpu_team_run(3, note_tid, seen);
    assert_int_equal(seen[0], 1);
    assert_int_equal(seen[1], 1);
    assert_int_equal(seen[2], 1);
    assert_int_equal(seen[8], 1); /* a region of ours */
    /* one thread: the caller runs the body, no region */
    memset(seen, 0, sizeof seen);
    lumen_cpu_team_run(1, note_tid, seen);
    assert_int_equal(seen[0], 1);
    assert_int_equal(seen[8], 0);
    /* one thread from thread 1 of the caller's region: a team of our own, so that the body's
     * worksharing and barriers bind to it, not to the caller's team */
    memset(seen, 0, sizeof seen);
#pragma omp parallel num_threads(2)
    if (lumen_cpu_thread_num() == 1) lumen_cpu_team_run(1, note_tid, seen);
    assert_int_equal(seen[0], 1);
    assert_int_equal(seen[1], 0);
    assert_int_equal(seen[8], 2);
    assert_int_equal(seen[9], 0);
}

int main(void)
{
    /* the default share, not the suites' LUMEN_CPU_MIN_SHARE=0 (read at the first use) */
    unsetenv("LUMEN_CPU_MIN_SHARE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_once),
        cmocka_unit_test(test_own_share_then_the_others),
        cmocka_unit_test(test_many_threads_shares),
        cmocka_unit_test(test_team_size_by_work),
        cmocka_unit_test(test_team_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
