/*
 * Faults (docs/faults.md): running out of memory inside FFTW and when starting threads must
 * be an error, never the end of the process; an interrupt hook stops every CPU path between
 * tiles with LUMEN_ERR_INTERRUPTED.
 *
 * The fork tests come first and the parent runs no op before them: a child of a process that
 * has run OpenMP teams inherits a thread pool whose threads do not exist in it.
 */
#define _DEFAULT_SOURCE /* setenv */
#include "test_support.h"

#include "internal.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Address space the process maps now (bytes), from /proc/self/statm. */
static size_t mapped_bytes(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Runs fn(arg) in a child under an address-space limit of `extra` bytes beyond what the
 * process maps now; returns its wait status. */
static int run_limited(size_t extra, int (*fn)(void *), void *arg)
{
    /* Backend modules (and the drivers they load, e.g. the Vulkan loader) load before the
     * limit, in the parent: the limit is for the op, not for finding devices. */
    (void)lumen_device_count();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        const rlim_t lim = (rlim_t)(mapped_bytes() + extra);
        struct rlimit rl = {lim, lim};
        if (setrlimit(RLIMIT_AS, &rl)) _exit(90);
        _exit(fn(arg));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

enum { CHILD_OK = 0, CHILD_OOM = 10, CHILD_OTHER = 11 };

typedef struct blur_case {
    lumen_image src, dst;
    lumen_method method;
    double sigma;
} blur_case;

/* A Gaussian blur in a new context with one thread: 0, 10 (out of memory, with a message) or
 * 11 (any other status). */
static int child_blur(void *arg)
{
    const blur_case *c = arg;
    lumen_context *ctx = NULL;
    if (lumen_context_create(&ctx)) return CHILD_OOM;
    lumen_context_set_threads(ctx, 1);
    lumen_gaussian_options o = lumen_gaussian_options_default();
    o.sigma_x = o.sigma_y = c->sigma;
    o.method = c->method;
    lumen_status s = lumen_gaussian_blur_ex(ctx, &c->src, &c->dst, &o, NULL);
    if (s == LUMEN_ERR_OUT_OF_MEMORY && !lumen_last_error()[0]) return CHILD_OTHER;
    return s == LUMEN_OK ? CHILD_OK : s == LUMEN_ERR_OUT_OF_MEMORY ? CHILD_OOM : CHILD_OTHER;
}

/*
 * FFTW asserts and aborts when its own allocations fail ("fftw: alloc.c:29: assertion
 * failed"). Under every address-space limit from "nothing to spare" to "enough", in 64 KB
 * steps (without the headroom checks it aborted in windows under 1 MB wide, 10 MB above the
 * start here), the FFT blur must end in success or LUMEN_ERR_OUT_OF_MEMORY: never SIGABRT.
 */
static void test_fft_out_of_memory_is_an_error(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    /* ASan reserves terabytes of shadow address space at start-up and dies when a mapping
     * fails, so an address-space limit tests ASan, not lumen: the plain build runs this. */
    skip();
#endif
    enum { W = 1500, H = 1000 };
    float *s = calloc((size_t)W * H, sizeof(float)), *d = calloc((size_t)W * H, sizeof(float));
    assert_non_null(s);
    assert_non_null(d);
    for (size_t i = 0; i < (size_t)W * H; i++)
        s[i] = (float)(i % 251) / 251.0f;
    blur_case c = {lumen_image_nchw(s, LUMEN_F32, 1, 1, H, W),
                   lumen_image_nchw(d, LUMEN_F32, 1, 1, H, W), LUMEN_METHOD_FFT, 30.0};
    int ok = 0, oom = 0;
    for (size_t kb = 0; kb <= 256 << 10; kb += 64) {
        int st = run_limited(kb << 10, child_blur, &c);
        if (WIFSIGNALED(st))
            fail_msg("limit +%zu KB: the child died of signal %d (%s)", kb, WTERMSIG(st),
                     strsignal(WTERMSIG(st)));
        assert_true(WIFEXITED(st));
        int code = WEXITSTATUS(st);
        if (code != CHILD_OK && code != CHILD_OOM)
            fail_msg("limit +%zu KB: child exit %d (want 0 or out of memory)", kb, code);
        ok += code == CHILD_OK, oom += code == CHILD_OOM;
        if (ok >= 3) break; /* well past the point where it fits */
    }
    /* The scan must have covered both sides, or it proved nothing. */
    assert_true(oom > 0);
    assert_true(ok > 0);
    free(s), free(d);
}

/* A small blur with 4 threads whose stacks cannot fit: libgomp would exit(1) ("Thread
 * creation failed"); lumen must run it with the threads that can start. */
static int child_threads(void *arg)
{
    const blur_case *c = arg;
    lumen_context *ctx = NULL;
    if (lumen_context_create(&ctx)) return CHILD_OOM;
    lumen_context_set_threads(ctx, 4);
    lumen_status s = lumen_gaussian_blur(ctx, &c->src, &c->dst, 5, 5, 1.0, 1.0,
                                         LUMEN_BORDER_REFLECT, 0.0f, NULL);
    if (s) return CHILD_OTHER;
    return lumen_context_threads(ctx) < 4 ? CHILD_OK : 12;
}

static void test_thread_start_failure_is_not_fatal(void **state)
{
    (void)state;
    enum { W = 256, H = 256 };
    static float s[W * H], d[W * H];
    blur_case c = {lumen_image_nchw(s, LUMEN_F32, 1, 1, H, W),
                   lumen_image_nchw(d, LUMEN_F32, 1, 1, H, W), LUMEN_METHOD_AUTO, 1.0};
    /* The default thread stack is RLIMIT_STACK (8 MB here): 4 MB to spare fits none. */
    struct rlimit st;
    getrlimit(RLIMIT_STACK, &st);
    if (st.rlim_cur == RLIM_INFINITY || st.rlim_cur < (rlim_t)(8 << 20))
        skip(); /* glibc would use a smaller default stack */
    int status = run_limited((size_t)4 << 20, child_threads, &c);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != CHILD_OK)
        fail_msg("child exit %d: want 0 (ran with fewer threads)", WEXITSTATUS(status));
}

/* ---- interruption ---------------------------------------------------------------------- */

typedef struct countdown {
    atomic_int calls; /* polls so far */
    int fire_at;      /* the poll that first returns 1 (0: never) */
} countdown;

static int poll_countdown(void *arg)
{
    countdown *c = arg;
    int n = atomic_fetch_add(&c->calls, 1) + 1;
    return c->fire_at && n >= c->fire_at;
}

enum { IW = 1024, IH = 768 };
static float isrc[IW * IH * 4], idst[IW * IH * 4];

typedef enum {
    OP_DIRECT,
    OP_SEPARABLE,
    OP_FFT,
    OP_FAST,
    OP_REF_DIRECT,
    OP_CONV_GEMM,
    OP_CONV_WINOGRAD,
    OP_CONV_DEPTHWISE,
    OP_CONV_REF,
    OP_CONV_DIRECT,
    OP_COUNT
} op_id;
static const char *const op_names[OP_COUNT] = {"direct",        "separable",      "fft",
                                               "fast gaussian", "reference",      "conv im2col",
                                               "conv winograd", "conv depthwise", "conv reference",
                                               "conv direct"};

static lumen_status run_op(lumen_context *ctx, op_id id)
{
    static float k[15 * 15];
    for (int i = 0; i < 15 * 15; i++)
        k[i] = 1.0f / (15 * 15);
    const lumen_image src = lumen_image_nchw(isrc, LUMEN_F32, 1, 1, IH, IW);
    const lumen_image dst = lumen_image_nchw(idst, LUMEN_F32, 1, 1, IH, IW);
    lumen_filter_options o = lumen_filter_options_default();
    lumen_gaussian_options g = lumen_gaussian_options_default();
    g.sigma_x = g.sigma_y = 20.0;
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = 1;
    switch (id) {
    case OP_DIRECT:
    case OP_REF_DIRECT:
        o.method = LUMEN_METHOD_DIRECT;
        return lumen_filter2d(ctx, &src, &dst, k, 15, 15, &o, NULL);
    case OP_SEPARABLE:
        g.method = LUMEN_METHOD_SEPARABLE;
        return lumen_gaussian_blur_ex(ctx, &src, &dst, &g, NULL);
    case OP_FFT:
        g.method = LUMEN_METHOD_FFT;
        return lumen_gaussian_blur_ex(ctx, &src, &dst, &g, NULL);
    case OP_FAST:
        g.precision = LUMEN_PRECISION_FAST;
        return lumen_gaussian_blur_ex(ctx, &src, &dst, &g, NULL);
    case OP_CONV_DIRECT: {
        /* a 3-channel 7x7 stem (the direct path on AVX2 and AVX-512, else im2col) */
        const lumen_image x = lumen_image_nchw(isrc, LUMEN_F32, 1, 3, 96, 128);
        const lumen_image w = lumen_image_nchw(isrc + 3 * 96 * 128, LUMEN_F32, 16, 3, 7, 7);
        const lumen_image y = lumen_image_nchw(idst, LUMEN_F32, 1, 16, 96, 128);
        p.pad_h = p.pad_w = 3;
        return lumen_conv2d(ctx, &x, &w, NULL, &p, &y, NULL);
    }
    case OP_CONV_GEMM:
    case OP_CONV_WINOGRAD:
    case OP_CONV_DEPTHWISE:
    case OP_CONV_REF: {
        /* x 1x16x96x128 (and w) fit in isrc; y in idst. */
        const int64_t c = 16;
        const int r = id == OP_CONV_GEMM ? 5 : 3;
        if (id == OP_CONV_GEMM) p.pad_h = p.pad_w = 2;
        if (id == OP_CONV_DEPTHWISE) p.groups = (int)c;
        const lumen_image x = lumen_image_nchw(isrc, LUMEN_F32, 1, c, 96, 128);
        const lumen_image w = lumen_image_nchw(isrc + c * 96 * 128, LUMEN_F32, c,
                                               id == OP_CONV_DEPTHWISE ? 1 : c, r, r);
        const lumen_image y = lumen_image_nchw(idst, LUMEN_F32, 1, c, 96, 128);
        return lumen_conv2d(ctx, &x, &w, NULL, &p, &y, NULL);
    }
    case OP_COUNT: break;
    }
    return LUMEN_ERR_INTERNAL;
}

static lumen_context *op_context(op_id id)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    lumen_context_set_threads(ctx, 2);
    if (id == OP_REF_DIRECT || id == OP_CONV_REF) lumen_context_set_simd(ctx, 0);
    return ctx;
}

/* Every CPU path polls the hook as it runs and stops with LUMEN_ERR_INTERRUPTED when it
 * fires: on its 3rd poll (mid-run: the dispatch's check is the 1st), and before any work when
 * it fires at once. */
static void test_interrupt_stops_every_path(void **state)
{
    (void)state;
    for (int i = 0; i < IW * IH * 4; i++)
        isrc[i] = (float)(i % 97) / 97.0f;
    for (int id = 0; id < OP_COUNT; id++) {
        for (int fire_at = 1; fire_at <= 3; fire_at += 2) {
            lumen_context *ctx = op_context((op_id)id);
            countdown cd = {0, fire_at};
            assert_int_equal(lumen_context_set_interrupt(ctx, poll_countdown, &cd), LUMEN_OK);
            lumen_status s = run_op(ctx, (op_id)id);
            if (s != LUMEN_ERR_INTERRUPTED)
                fail_msg("%s, hook firing at poll %d: status %d (%s), want interrupted",
                         op_names[id], fire_at, (int)s, lumen_last_error());
            assert_non_null(strstr(lumen_last_error(), "interrupted"));
            if (fire_at == 1) assert_int_equal(atomic_load(&cd.calls), 1); /* no work done */
            lumen_context_destroy(ctx);
        }
    }
}

/* A hook that never fires changes nothing: same status and the same output bits as without
 * one, and it is polled (the run really checks). Removing it (NULL) works too. */
static void test_quiet_hook_changes_nothing(void **state)
{
    (void)state;
    float *want = malloc(sizeof idst);
    assert_non_null(want);
    for (int id = 0; id < OP_COUNT; id++) {
        lumen_context *ctx = op_context((op_id)id);
        memset(idst, 0, sizeof idst);
        assert_int_equal(run_op(ctx, (op_id)id), LUMEN_OK);
        memcpy(want, idst, sizeof idst);
        countdown cd = {0, 0};
        lumen_context_set_interrupt(ctx, poll_countdown, &cd);
        memset(idst, 0, sizeof idst);
        assert_int_equal(run_op(ctx, (op_id)id), LUMEN_OK);
        if (memcmp(want, idst, sizeof idst))
            fail_msg("%s: output differs with a hook", op_names[id]);
        if (atomic_load(&cd.calls) < 2)
            fail_msg("%s: polled %d times", op_names[id], atomic_load(&cd.calls));
        lumen_context_set_interrupt(ctx, NULL, &cd);
        cd.fire_at = 1;
        assert_int_equal(run_op(ctx, (op_id)id), LUMEN_OK);
        lumen_context_destroy(ctx);
    }
    free(want);
}

static void test_status_and_arguments(void **state)
{
    (void)state;
    assert_string_equal(lumen_status_string(LUMEN_ERR_INTERRUPTED), "interrupted");
    assert_int_equal(lumen_context_set_interrupt(NULL, poll_countdown, NULL),
                     LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "ctx"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* fork tests first: no OpenMP team may have run in this process before them */
        cmocka_unit_test(test_fft_out_of_memory_is_an_error),
        cmocka_unit_test(test_thread_start_failure_is_not_fatal),
        cmocka_unit_test(test_status_and_arguments),
        cmocka_unit_test(test_interrupt_stops_every_path),
        cmocka_unit_test(test_quiet_hook_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
