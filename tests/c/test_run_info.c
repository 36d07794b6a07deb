/*
 * lumen_run_info tells what really ran, on every path of the one dispatch path
 * (src/core/dispatch.c): the method, the kernels (isa) and the algorithm of the CPU's fast
 * paths, of the scalar reference (SIMD off) and of the portable fast Gaussian, and the device
 * after a fallback. Device paths are in test_devices.c (mock) and test_backend_ops.c.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 19, H = 11 };

typedef struct run_case {
    const char *what;
    int simd;            /* 0: the reference */
    const char *cpu_isa; /* $LUMEN_CPU_ISA for the context, NULL: what the CPU has */
} run_case;

static lumen_context *context_for(const run_case *rc)
{
    if (rc->cpu_isa)
        setenv("LUMEN_CPU_ISA", rc->cpu_isa, 1);
    else
        unsetenv("LUMEN_CPU_ISA");
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    unsetenv("LUMEN_CPU_ISA");
    assert_int_equal(lumen_context_set_threads(ctx, 2), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ctx, rc->simd), LUMEN_OK);
    return ctx;
}

/* The row kernels the filter paths of ctx use: "scalar" for the reference. */
static const char *filter_isa(const run_case *rc)
{
    if (!rc->simd) return "scalar";
    if (rc->cpu_isa && !strcmp(rc->cpu_isa, "generic")) return "generic";
    lumen_context *probe;
    assert_int_equal(lumen_context_create(&probe), LUMEN_OK);
    const char *features = lumen_cpu_features(probe), *isa = "generic";
    if (strstr(features, "avx512") && !(rc->cpu_isa && !strcmp(rc->cpu_isa, "avx2")))
        isa = "avx512";
    else if (strcmp(features, "scalar"))
        isa = "avx2+fma";
    lumen_context_destroy(probe);
    return isa;
}

static void expect(const lumen_run_info *info, lumen_method method, const char *isa,
                   const char *algo, const char *what)
{
    if (info->method != method || strcmp(info->isa, isa) || strcmp(info->device, "cpu") ||
        info->threads != 2 || (algo ? !info->algo || strcmp(info->algo, algo) : info->algo != NULL))
        fail_msg("%s: ran method %s, isa %s, algo %s, device %s, threads %d; want %s, %s, %s, "
                 "cpu, 2",
                 what, lumen_method_name(info->method), info->isa,
                 info->algo ? info->algo : "(none)", info->device, info->threads,
                 lumen_method_name(method), isa, algo ? algo : "(none)");
}

static void check_filters(const run_case *rc)
{
    static float src_px[W * H], dst_px[W * H];
    for (int i = 0; i < W * H; i++)
        src_px[i] = (float)(i % 7);
    const lumen_image src = lumen_image_nchw(src_px, LUMEN_F32, 1, 1, H, W);
    const lumen_image dst = lumen_image_nchw(dst_px, LUMEN_F32, 1, 1, H, W);
    lumen_context *ctx = context_for(rc);
    const char *isa = filter_isa(rc), *algo = rc->simd ? NULL : "reference";
    float k[25];
    ts_random_kernel(k, 25, 7); /* rank > 1 */
    char what[96];
    for (int m = LUMEN_METHOD_DIRECT; m <= LUMEN_METHOD_FFT; m += 2) { /* direct, fft */
        lumen_filter_options o = lumen_filter_options_default();
        o.method = (lumen_method)m;
        lumen_run_info info;
        memset(&info, 0xA5, sizeof info);
        assert_int_equal(lumen_filter2d(ctx, &src, &dst, k, 5, 5, &o, &info), LUMEN_OK);
        snprintf(what, sizeof what, "%s: filter2d %s", rc->what, lumen_method_name(o.method));
        expect(&info, o.method, isa, algo, what);
    }
    lumen_run_info info;
    memset(&info, 0xA5, sizeof info);
    assert_int_equal(lumen_box_blur(ctx, &src, &dst, 3, 3, 1, LUMEN_BORDER_REFLECT, 0, &info),
                     LUMEN_OK);
    snprintf(what, sizeof what, "%s: box_blur", rc->what);
    expect(&info, LUMEN_METHOD_SEPARABLE, isa, algo, what);
    /* The fast Gaussian's portable C is its own definition: with SIMD off it runs that, and
     * says "generic", never "scalar". */
    lumen_gaussian_options g = lumen_gaussian_options_default();
    g.sigma_x = 3.0, g.precision = LUMEN_PRECISION_FAST;
    memset(&info, 0xA5, sizeof info);
    assert_int_equal(lumen_gaussian_blur_ex(ctx, &src, &dst, &g, &info), LUMEN_OK);
    snprintf(what, sizeof what, "%s: gaussian_blur fast", rc->what);
    expect(&info, LUMEN_METHOD_RECURSIVE, rc->simd ? isa : "generic", NULL, what);
    lumen_context_destroy(ctx);
}

static void check_conv(const run_case *rc)
{
    static float x_px[2 * 3 * 6 * 5], w_px[4 * 3 * 3 * 3], y_px[2 * 4 * 6 * 5];
    for (int i = 0; i < TS_COUNT(x_px); i++)
        x_px[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < TS_COUNT(w_px); i++)
        w_px[i] = (float)(i % 3) - 1.0f;
    const lumen_image x = lumen_image_nchw(x_px, LUMEN_F32, 2, 3, 6, 5);
    const lumen_image w = lumen_image_nchw(w_px, LUMEN_F32, 4, 3, 3, 3);
    const lumen_image y = lumen_image_nchw(y_px, LUMEN_F32, 2, 4, 6, 5);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.pad_h = p.pad_w = 1;
    lumen_context *ctx = context_for(rc);
    lumen_run_info info;
    memset(&info, 0xA5, sizeof info);
    assert_int_equal(lumen_conv2d(ctx, &x, &w, NULL, &p, &y, &info), LUMEN_OK);
    char what[96];
    snprintf(what, sizeof what, "%s: conv2d", rc->what);
    if (!rc->simd)
        expect(&info, LUMEN_METHOD_DIRECT, "scalar", "reference", what);
    else if (!info.algo || !strcmp(info.algo, "reference") || !strcmp(info.isa, "scalar"))
        fail_msg("%s: the fast path reports algo %s, isa %s", what, info.algo ? info.algo : "-",
                 info.isa);
    lumen_context_destroy(ctx);
}

static const run_case cases[] = {
    {"reference", 0, NULL},
    {"fast", 1, NULL},
    {"fast, portable kernels", 1, "generic"},
    {"fast, AVX2 kernels", 1, "avx2"},
};

static void test_run_info_cpu_paths(void **state)
{
    (void)state;
    for (int i = 0; i < TS_COUNT(cases); i++) {
        check_filters(&cases[i]);
        check_conv(&cases[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_info_cpu_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
