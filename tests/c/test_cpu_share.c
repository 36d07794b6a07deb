/*
 * Sharing the CPU with the program (src/core/cpu_share.c): a program that places
 * LUMEN_SHARE_CPU_AT_START, as the CLI does, gets a bounded OpenMP spin, so its idle workers
 * charge ~no CPU after a multi-threaded call; the environment is the one the program started
 * with again once OpenMP has read it (the slot lent to GOMP_SPINCOUNT given back); the default
 * thread count honours the cgroup's CPU quota (fake cgroup trees for v1 and v2).
 *
 * CTest runs this program without OMP_WAIT_POLICY (tests/CMakeLists.txt), unlike the other
 * suites: the default is what it tests.
 */
#define _GNU_SOURCE /* mkdtemp, setenv */
#include "test_support.h"

#include "internal.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h> /* environ */

LUMEN_SHARE_CPU_AT_START;

static double process_cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool user_chose_wait(void)
{
    const char *w = getenv("OMP_WAIT_POLICY");
    return (w && *w) || strstr(lumen_cpu_wait_policy(), "environment");
}

static void test_preinit_set_the_spin(void **state)
{
    (void)state;
    if (user_chose_wait()) skip(); /* the user's choice stands; nothing of lumen's to test */
    assert_non_null(strstr(lumen_cpu_wait_policy(), "GOMP_SPINCOUNT=" LUMEN_OMP_SPINCOUNT));
    assert_null(getenv("GOMP_SPINCOUNT"));                  /* the slot lent to it given back */
    assert_int_equal(lumen_share_cpu_preinit(environ), -1); /* OpenMP has started: too late now */
}

/* Every variable the program started with is there again, with its value (the kernel's copy,
 * /proc/self/environ, against getenv). */
static void test_environment_given_back(void **state)
{
    (void)state;
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) skip();
    static char buf[1 << 16];
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    int count = 0;
    for (char *e = buf; e < buf + n; e += strlen(e) + 1) {
        char *eq = strchr(e, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *v = getenv(e);
        assert_non_null(v);
        assert_string_equal(v, eq + 1);
        *eq = '=';
        count++;
    }
    int now = 0;
    for (char **e = environ; *e; e++)
        now++;
    assert_int_equal(now, count);
}

/* libgomp's default spin charged 4-8 ms of CPU over the 50 ms after each such call on the
 * 2-core development machine; the bounded spin, about 0.05 ms. */
static void test_idle_workers_charge_no_cpu(void **state)
{
    (void)state;
    if (user_chose_wait()) skip();
    enum { H = 600, W = 512, C = 3, CALLS = 5 };
    uint8_t *src = malloc(H * W * C), *dst = malloc(H * W * C);
    assert_non_null(src), assert_non_null(dst);
    for (int i = 0; i < H * W * C; i++)
        src[i] = (uint8_t)((unsigned)i * 7919u >> 3);
    lumen_image s = lumen_image_nhwc(src, LUMEN_U8, 1, H, W, C);
    lumen_image d = lumen_image_nhwc(dst, LUMEN_U8, 1, H, W, C);
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, 2), LUMEN_OK);
    double after[CALLS];
    for (int i = 0; i < CALLS; i++) {
        lumen_run_info info;
        assert_int_equal(
            lumen_gaussian_blur(ctx, &s, &d, 0, 0, 2.0, 0.0, LUMEN_BORDER_REFLECT101, 0.0f, &info),
            LUMEN_OK);
        const double t0 = process_cpu_ms();
        sleep_ms(50);
        after[i] = process_cpu_ms() - t0;
    }
    qsort(after, CALLS, sizeof after[0], cmp_double);
    printf("CPU charged over 50 ms after a 2-thread call: median %.3f ms, max %.3f ms (%s)\n",
           after[CALLS / 2], after[CALLS - 1], lumen_cpu_wait_policy());
    assert_true(after[CALLS / 2] < 1.0);
    lumen_context_destroy(ctx);
    free(src), free(dst);
}

/* ---- cgroup quotas, on fake trees -------------------------------------------------------- */

static char g_root[] = "/tmp/lumen-test-cgroup-XXXXXX";

/* Writes text to g_root/rel, making its folders. */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    for (char *p = path + strlen(g_root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int fresh_root(void **state)
{
    (void)state;
    strcpy(g_root, "/tmp/lumen-test-cgroup-XXXXXX");
    return mkdtemp(g_root) ? 0 : -1;
}

static int drop_root(void **state)
{
    (void)state;
    return nftw(g_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_cgroup_v2(void **state)
{
    (void)state;
    assert_int_equal(lumen_cgroup_cpus(g_root), 0); /* no /proc/self/cgroup: no quota */
    put("proc/self/cgroup", "0::/app/worker\n");
    assert_int_equal(lumen_cgroup_cpus(g_root), 0); /* no cpu.max anywhere */
    put("sys/fs/cgroup/app/worker/cpu.max", "max 100000\n");
    assert_int_equal(lumen_cgroup_cpus(g_root), 0);
    put("sys/fs/cgroup/app/worker/cpu.max", "150000 100000\n"); /* 1.5 CPUs: 2 threads */
    assert_int_equal(lumen_cgroup_cpus(g_root), 2);
    put("sys/fs/cgroup/app/cpu.max", "100000 100000\n"); /* the parent's binds the child */
    assert_int_equal(lumen_cgroup_cpus(g_root), 1);
}

static void test_cgroup_v1(void **state)
{
    (void)state;
    /* a container: the path named is the host's, absent inside; its cgroup is the mount's root */
    put("proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    assert_int_equal(lumen_cgroup_cpus(g_root), 0);
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
    assert_int_equal(lumen_cgroup_cpus(g_root), 3);
    put("sys/fs/cgroup/memory/cpu.cfs_quota_us", "50000\n"); /* not the cpu controller's */
    put("sys/fs/cgroup/memory/cpu.cfs_period_us", "100000\n");
    assert_int_equal(lumen_cgroup_cpus(g_root), 3);
}

static void test_default_threads_within_quota(void **state)
{
    (void)state;
    /* this machine's own quota, if any, bounds the default (no LUMEN_/OMP_NUM_THREADS) */
    unsetenv("LUMEN_NUM_THREADS"), unsetenv("OMP_NUM_THREADS");
    const int quota = lumen_cgroup_cpus("");
    if (quota > 0) assert_true(lumen_default_threads() <= quota);
    assert_true(lumen_default_threads() >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preinit_set_the_spin),
        cmocka_unit_test(test_environment_given_back),
        cmocka_unit_test(test_idle_workers_charge_no_cpu),
        cmocka_unit_test_setup_teardown(test_cgroup_v2, fresh_root, drop_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v1, fresh_root, drop_root),
        cmocka_unit_test(test_default_threads_within_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
