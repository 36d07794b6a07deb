/*
 * What the fuzzers found (docs/fuzzing.md, "Findings"), one minimal reproducer each. The input
 * that found it is in tests/fuzz/corpus/<harness>/regression-*, so the harness replays it on
 * every run too.
 */
#define _POSIX_C_SOURCE 200809L /* fork, alarm, mkdtemp */
#include "test_support.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Seconds a call that should take microseconds may take before it counts as a hang (generous:
 * ASan builds and a loaded CI machine). */
#define HANG_SECONDS 20

/* Runs fn in a child process with an alarm: a hang fails the test instead of stalling the
 * suite. fn returns 0 when the call's result is right. Forked before this process has used
 * OpenMP (libgomp's threads do not survive fork). */
static void run_bounded(int (*fn)(void), const char *what)
{
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(HANG_SECONDS);
        _exit(fn());
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        fail_msg("%s: still running after %d s (a hang)", what, HANG_SECONDS);
    if (WIFSIGNALED(status)) fail_msg("%s: killed by signal %d", what, WTERMSIG(status));
    if (WEXITSTATUS(status) != 0) fail_msg("%s: wrong result (%d)", what, WEXITSTATUS(status));
}

/*
 * fuzz_conv, 40 bytes (corpus/fuzz_conv/regression-transpose-stride-intmax): conv_transpose2d
 * of a 1x1 input with stride_h = INT_MAX is valid (the output is one row: (H - 1) * s + ... =
 * 1) and cheap, but the CPU's phase decomposition (conv_transpose_gemm.c) loops over every
 * residue of the stride, stride_h x stride_w phases, most of which hold no output: 2^31
 * iterations, a hang. Only min(stride, output size) phases can hold an output.
 */
static int transpose_huge_stride(void)
{
    lumen_context *ctx = NULL;
    if (lumen_context_create(&ctx) || lumen_context_set_threads(ctx, 1)) return 2;
    float x[1] = {2.0f}, w[2] = {0.5f, -3.0f}, y[2] = {0};
    const lumen_image X = lumen_image_nchw(x, LUMEN_F32, 1, 1, 1, 1);
    const lumen_image W = lumen_image_nchw(w, LUMEN_F32, 1, 1, 1, 2); /* (C, K, R, S) */
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.stride_h = INT_MAX, p.stride_w = 3;
    int64_t oh = 0, ow = 0;
    if (lumen_conv_transpose2d_output_size(&X, &W, &p, &oh, &ow) || oh != 1 || ow != 2) return 3;
    const lumen_image Y = lumen_image_nchw(y, LUMEN_F32, 1, 1, 1, 2);
    if (lumen_conv_transpose2d(ctx, &X, &W, NULL, &p, &Y, NULL)) return 4;
    lumen_context_destroy(ctx);
    /* y = x * w: each input pixel spreads the kernel */
    return y[0] == 1.0f && y[1] == -6.0f ? 0 : 5;
}

static void test_conv_transpose2d_huge_stride_returns(void **state)
{
    (void)state;
    run_bounded(transpose_huge_stride, "conv_transpose2d 1x1 input, stride (INT_MAX, 3)");
}

/*
 * fuzz_webp (corpus/fuzz_webp/regression-opaque-alpha): an RGBA image whose alpha is all 255,
 * written as WebP (lossy or lossless) and read back, comes back RGB: libwebp's encoder drops an
 * opaque alpha plane unless told to keep it, so a 4-channel image does not round trip as 4
 * channels (PNG, TIFF and EXR keep them).
 */
static void test_webp_opaque_rgba_keeps_four_channels(void **state)
{
    (void)state;
    char dir[] = "/tmp/lumen-fuzzreg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    unsigned char px[9 * 8 * 4];
    for (int i = 0; i < (int)sizeof px; i++)
        px[i] = i % 4 == 3 ? 255 : (unsigned char)(i * 7);
    const lumen_image img = lumen_image_nhwc(px, LUMEN_U8, 1, 9, 8, 4);
    for (int lossless = 0; lossless <= 1; lossless++) {
        snprintf(path, sizeof path, "%s/a%d.webp", dir, lossless);
        lumen_write_options o = lumen_write_options_default();
        o.lossless = lossless;
        assert_int_equal(lumen_write_image_ex(path, &img, &o, NULL), LUMEN_OK);
        lumen_image back;
        assert_int_equal(lumen_read_image(path, &back), LUMEN_OK);
        const int64_t c = back.c;
        lumen_image_free(&back);
        unlink(path);
        if (c != 4) {
            rmdir(dir);
            fail_msg("WebP %s: RGBA with opaque alpha read back with %lld channels",
                     lossless ? "lossless" : "lossy", (long long)c);
        }
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_transpose2d_huge_stride_returns),
        cmocka_unit_test(test_webp_opaque_rgba_keeps_four_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
