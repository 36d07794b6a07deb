/*
 * The device runtime, on machines without a GPU: a test double of a backend module (a
 * "software" device running only the direct filter on f32, tests/c/mock) is loaded through
 * $LUMEN_MODULE_PATH. Device list and specs, running on the device, fallback to the CPU for
 * what the device lacks (dtype, op, memory), strict mode, the memory cap, device-resident
 * views, and the environment variables.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lumen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define H 19
#define W 23

static const float k5[25] = {1, 2, 0, -1, 3, 0.5f, 1, 1, 2, 0, 1, -2, 4, 1, 1,
                             0, 1, 1, 0.25f, 2, 3, 1, -1, 0, 1};

static lumen_context *context_on(const char *device, int strict)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_device(ctx, device), LUMEN_OK);
    assert_int_equal(lumen_context_set_strict(ctx, strict), LUMEN_OK);
    return ctx;
}

static void fill(float *p, int n)
{
    for (int i = 0; i < n; i++) p[i] = (float)((i * 37 % 101) - 50) / 16.0f;
}

/* filter2d (direct, reflect101) of a W x H f32 or u8 image on ctx; returns the status. */
static lumen_status run(lumen_context *ctx, lumen_dtype t, void *src, void *dst, int device,
                        lumen_run_info *info)
{
    lumen_image s = lumen_image_nhwc(src, t, 1, H, W, 1), d = lumen_image_nhwc(dst, t, 1, H, W, 1);
    s.device = d.device = device;
    lumen_filter_options o = lumen_filter_options_default();
    o.border = LUMEN_BORDER_REFLECT101;
    o.method = LUMEN_METHOD_DIRECT;
    return lumen_filter2d(ctx, &s, &d, k5, 5, 5, &o, info);
}

/* The same filter on the CPU, as the expected result. */
static void expected(lumen_dtype t, void *src, void *dst)
{
    lumen_context *cpu = context_on("cpu", 0);
    assert_int_equal(run(cpu, t, src, dst, 0, NULL), LUMEN_OK);
    lumen_context_destroy(cpu);
}

static void assert_close_f32(const float *got, const float *want)
{
    for (int i = 0; i < H * W; i++)
        if (fabsf(got[i] - want[i]) > 1e-5f * (1.0f + fabsf(want[i])))
            fail_msg("pixel %d: %g, want %g", i, (double)got[i], (double)want[i]);
}

static void test_device_list(void **state)
{
    (void)state;
    /* The mock comes first after the CPU ($LUMEN_MODULE_PATH is searched first); a GPU
     * machine lists its CUDA devices after it. */
    assert_true(lumen_device_count() >= 2);
    lumen_device_info info;
    assert_int_equal(lumen_device_get_info(0, &info), LUMEN_OK);
    assert_string_equal(info.backend, "cpu");
    assert_int_equal(lumen_device_get_info(1, &info), LUMEN_OK);
    assert_string_equal(info.backend, "mock");
    assert_int_equal(info.kind, LUMEN_DEVICE_SOFTWARE);
    assert_int_equal(info.index, 1);
    int i = -1;
    assert_int_equal(lumen_device_find("auto", &i), LUMEN_OK);
    assert_int_equal(lumen_device_get_info(i, &info), LUMEN_OK);
    assert_int_not_equal(info.kind, LUMEN_DEVICE_SOFTWARE); /* never chosen unless asked for */
    assert_int_equal(lumen_device_find("mock", &i), LUMEN_OK);
    assert_int_equal(i, 1);
    assert_int_equal(lumen_device_find("mock:0", &i), LUMEN_OK);
    assert_int_equal(i, 1);
    assert_int_equal(lumen_device_find("mock:1", &i), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "cpu, mock:0"));
    assert_int_equal(lumen_device_find("vulkan", &i), LUMEN_ERR_INVALID_ARGUMENT);
    char spec[32];
    assert_int_equal(lumen_device_spec(0, spec, sizeof spec), LUMEN_OK);
    assert_string_equal(spec, "cpu");
    assert_int_equal(lumen_device_spec(1, spec, sizeof spec), LUMEN_OK);
    assert_string_equal(spec, "mock:0");
    assert_int_equal(lumen_device_spec(lumen_device_count(), spec, sizeof spec),
                     LUMEN_ERR_INVALID_ARGUMENT);
    assert_int_equal(lumen_device_find("cuda:x", &i), LUMEN_ERR_INVALID_ARGUMENT);
}

static void test_runs_on_the_device(void **state)
{
    (void)state;
    float src[H * W], got[H * W], want[H * W];
    fill(src, H * W);
    expected(LUMEN_F32, src, want);
    lumen_context *ctx = context_on("mock", 1);
    assert_int_equal(lumen_context_device(ctx), 1);
    lumen_run_info info;
    assert_int_equal(run(ctx, LUMEN_F32, src, got, 0, &info), LUMEN_OK);
    assert_string_equal(info.device, "mock:0");
    assert_close_f32(got, want);
    lumen_context_destroy(ctx);
}

/* u8 is not the mock's dtype, a Gaussian not its op: the CPU runs them, strict mode refuses. */
static void test_fallback_and_strict(void **state)
{
    (void)state;
    uint8_t src[H * W], got[H * W], want[H * W];
    for (int i = 0; i < H * W; i++) src[i] = (uint8_t)(i * 29 % 251);
    expected(LUMEN_U8, src, want);
    lumen_context *ctx = context_on("mock", 0);
    lumen_run_info info;
    assert_int_equal(run(ctx, LUMEN_U8, src, got, 0, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    assert_memory_equal(got, want, sizeof got);
    assert_int_equal(lumen_context_set_strict(ctx, 1), LUMEN_OK);
    memset(got, 7, sizeof got);
    assert_int_equal(run(ctx, LUMEN_U8, src, got, 0, &info), LUMEN_ERR_UNSUPPORTED);
    assert_non_null(strstr(lumen_last_error(), "mock:0"));
    assert_non_null(strstr(lumen_last_error(), "strict"));
    lumen_image s = lumen_image_nhwc(src, LUMEN_U8, 1, H, W, 1);
    lumen_image d = lumen_image_nhwc(got, LUMEN_U8, 1, H, W, 1);
    assert_int_equal(lumen_gaussian_blur(ctx, &s, &d, 0, 0, 2.0, 0, LUMEN_BORDER_REFLECT, 0, NULL),
                     LUMEN_ERR_UNSUPPORTED);
    assert_int_equal(lumen_context_set_strict(ctx, 0), LUMEN_OK);
    assert_int_equal(lumen_gaussian_blur(ctx, &s, &d, 0, 0, 2.0, 0, LUMEN_BORDER_REFLECT, 0, &info),
                     LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    lumen_context_destroy(ctx);
}

/* A memory cap below the op's needs: out of memory, so the CPU runs it (strict: an error). */
static void test_memory_cap(void **state)
{
    (void)state;
    float src[H * W], got[H * W], want[H * W];
    fill(src, H * W);
    expected(LUMEN_F32, src, want);
    lumen_context *ctx = context_on("mock", 0);
    assert_int_equal(lumen_context_set_memory_limit(ctx, 1024), LUMEN_OK);
    lumen_run_info info;
    assert_int_equal(run(ctx, LUMEN_F32, src, got, 0, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    assert_close_f32(got, want);
    assert_int_equal(lumen_context_set_strict(ctx, 1), LUMEN_OK);
    assert_int_equal(run(ctx, LUMEN_F32, src, got, 0, &info), LUMEN_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(lumen_last_error(), "memory limit"));
    assert_int_equal(lumen_context_set_memory_limit(ctx, 0), LUMEN_OK);
    assert_int_equal(run(ctx, LUMEN_F32, src, got, 0, &info), LUMEN_OK);
    assert_string_equal(info.device, "mock:0");
    lumen_context_destroy(ctx);
}

/* Views in device memory run in place, and are staged through the host for a fallback. */
static void test_device_resident_views(void **state)
{
    (void)state;
    float src[H * W], got[H * W], want[H * W];
    fill(src, H * W);
    expected(LUMEN_F32, src, want);
    lumen_context *ctx = context_on("mock", 0);
    void *ds, *dd;
    assert_int_equal(lumen_device_alloc(ctx, sizeof src, &ds), LUMEN_OK);
    assert_int_equal(lumen_device_alloc(ctx, sizeof src, &dd), LUMEN_OK);
    assert_int_equal(lumen_device_upload(ctx, ds, src, sizeof src), LUMEN_OK);
    lumen_run_info info;
    assert_int_equal(run(ctx, LUMEN_F32, ds, dd, 1, &info), LUMEN_OK);
    assert_string_equal(info.device, "mock:0");
    assert_int_equal(lumen_context_synchronize(ctx), LUMEN_OK);
    assert_int_equal(lumen_device_download(ctx, got, dd, sizeof got), LUMEN_OK);
    assert_close_f32(got, want);

    uint8_t s8[H * W], g8[H * W], w8[H * W];
    for (int i = 0; i < H * W; i++) s8[i] = (uint8_t)(i * 13 % 256);
    expected(LUMEN_U8, s8, w8);
    assert_int_equal(lumen_device_upload(ctx, ds, s8, sizeof s8), LUMEN_OK);
    assert_int_equal(run(ctx, LUMEN_U8, ds, dd, 1, &info), LUMEN_OK); /* staged fallback */
    assert_string_equal(info.device, "cpu");
    assert_int_equal(lumen_device_download(ctx, g8, dd, sizeof g8), LUMEN_OK);
    assert_memory_equal(g8, w8, sizeof g8);

    /* The fast Gaussian is not the mock's either: staged through the host as well. */
    lumen_gaussian_options g = lumen_gaussian_options_default();
    g.sigma_x = g.sigma_y = 3.0;
    g.precision = LUMEN_PRECISION_FAST;
    lumen_image hs = lumen_image_nhwc(src, LUMEN_F32, 1, H, W, 1);
    lumen_image hw = lumen_image_nhwc(want, LUMEN_F32, 1, H, W, 1);
    lumen_context *cpu = context_on("cpu", 0);
    assert_int_equal(lumen_gaussian_blur_ex(cpu, &hs, &hw, &g, NULL), LUMEN_OK);
    lumen_context_destroy(cpu);
    assert_int_equal(lumen_device_upload(ctx, ds, src, sizeof src), LUMEN_OK);
    lumen_image vs = lumen_image_nhwc(ds, LUMEN_F32, 1, H, W, 1);
    lumen_image vd = lumen_image_nhwc(dd, LUMEN_F32, 1, H, W, 1);
    vs.device = vd.device = 1;
    assert_int_equal(lumen_gaussian_blur_ex(ctx, &vs, &vd, &g, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    assert_int_equal(lumen_device_download(ctx, got, dd, sizeof got), LUMEN_OK);
    assert_memory_equal(got, want, sizeof got);

    lumen_device_free(ctx, ds);
    lumen_device_free(ctx, dd);
    lumen_context_destroy(ctx);
}

static void test_view_on_another_device(void **state)
{
    (void)state;
    float src[H * W], got[H * W];
    fill(src, H * W);
    lumen_context *cpu = context_on("cpu", 0);
    assert_int_equal(run(cpu, LUMEN_F32, src, got, 1, NULL), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "src: lives on device 1 (mock:0)"));
    lumen_context_destroy(cpu);
}

static void test_environment(void **state)
{
    (void)state;
    lumen_context *ctx = NULL;
    setenv("LUMEN_DEVICE", "mock", 1);
    setenv("LUMEN_STRICT", "1", 1);
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_device(ctx), 1);
    assert_int_equal(lumen_context_strict(ctx), 1);
    lumen_context_destroy(ctx);
    setenv("LUMEN_DEVICE", "cuda:3", 1);
    ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_ERR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_non_null(strstr(lumen_last_error(), "LUMEN_DEVICE='cuda:3'"));
    unsetenv("LUMEN_DEVICE");
    unsetenv("LUMEN_STRICT");
}

int main(void)
{
    setenv("LUMEN_MODULE_PATH", LUMEN_MOCK_MODULE, 1); /* before the first device query */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_list),
        cmocka_unit_test(test_runs_on_the_device),
        cmocka_unit_test(test_fallback_and_strict),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_device_resident_views),
        cmocka_unit_test(test_view_on_another_device),
        cmocka_unit_test(test_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
