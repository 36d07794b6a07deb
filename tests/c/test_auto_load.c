/*
 * Auto's choice does not depend on the machine's load when the cost model is calibrated
 * (src/backends/cpu/cost_model.c): calibrated in a fresh cache while busy threads of this
 * process keep every core taken four times over, auto still chooses the FFT for a 61 x 61
 * kernel on 600 x 900 f32 (test_fft's test_medium_61_auto_fft), on every engine and thread
 * count. Timed by the wall clock, the calibration's long FFT runs took 3-4x longer under such
 * load while its short direct runs did not, and auto chose direct. A program of its own: the
 * rates are measured once per process.
 */
#define _GNU_SOURCE /* mkdtemp, setenv */
#include "test_support.h"

#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_cache[] = "/tmp/lumen-test-auto-load-XXXXXX";
static atomic_int g_stop;

static void *busy(void *arg)
{
    (void)arg;
    volatile unsigned x = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed))
        x++;
    return NULL;
}

static lumen_method choose_61(ts_engine e, int threads, const float *k)
{
    enum { H = 600, W = 900, K = 61 };
    lumen_context *ctx = ts_context(e, threads);
    if (!ctx) return LUMEN_METHOD_FFT;                               /* an engine this CPU lacks */
    lumen_image src = lumen_image_nchw(NULL, LUMEN_F32, 1, 1, H, W); /* shapes only */
    lumen_image dst = src;
    lumen_filter_options opt = lumen_filter_options_default();
    lumen_method m = LUMEN_METHOD_AUTO;
    assert_int_equal(lumen_filter2d_method(ctx, &src, &dst, k, K, K, &opt, &m), LUMEN_OK);
    lumen_context_destroy(ctx);
    return m;
}

static void test_auto_61_fft_under_load(void **state)
{
    (void)state;
    enum { K = 61, MAX_BUSY = 64 };
    static float k[K * K];
    ts_random_kernel(k, K * K, 61);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int n_busy = cpus < 1 ? 4 : cpus * 4 > MAX_BUSY ? MAX_BUSY : (int)cpus * 4;
    pthread_t t[MAX_BUSY];
    for (int i = 0; i < n_busy; i++)
        assert_int_equal(pthread_create(&t[i], NULL, busy, NULL), 0);
    lumen_method got[TS_ENGINE_COUNT][3];
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++) /* each engine calibrates its own rates */
        for (int threads = 1; threads <= 3; threads++)
            got[e][threads - 1] = choose_61((ts_engine)e, threads, k);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < n_busy; i++)
        pthread_join(t[i], NULL);
    for (int e = TS_GENERIC; e < TS_ENGINE_COUNT; e++)
        for (int threads = 1; threads <= 3; threads++)
            if (got[e][threads - 1] != LUMEN_METHOD_FFT)
                fail_msg("61x61 on 600x900, %s, %d threads, calibrated beside %d busy threads: "
                         "auto chose %s, not fft",
                         ts_engine_name((ts_engine)e), threads, n_busy,
                         lumen_method_name(got[e][threads - 1]));
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int main(void)
{
    if (!mkdtemp(g_cache)) return 1;
    setenv("XDG_CACHE_HOME", g_cache, 1); /* a fresh cache: this program calibrates */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_61_fft_under_load),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(g_cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed;
}
