/*
 * The Vulkan module's own paths (src/backends/vulkan, docs/vulkan.md); test_backend_ops runs
 * every op on vulkan:0 against the reference. Here: the device listing (lavapipe is a software
 * device: named by its spec, never chosen by "auto"), the direct filter on device-resident
 * views (a batch of planar images in one buffer, every border mode, an off-centre anchor),
 * strict mode refusing an op the module lacks, and run_info.
 *
 * Without a Vulkan device every test prints "no Vulkan device: skipped" and skips.
 */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vk_index = -1; /* global index of vulkan:0 */

static int find_device(void **state)
{
    (void)state;
    for (int i = 0; i < lumen_device_count(); i++) {
        lumen_device_info info;
        if (lumen_device_get_info(i, &info) == LUMEN_OK && !strcmp(info.backend, "vulkan")) {
            print_message("vulkan:0 = device %d: %s (%s, %.1f GiB)\n", i, info.name,
                          lumen_device_kind_name(info.kind),
                          (double)info.memory_total / (1u << 30));
            vk_index = i;
            break;
        }
    }
    return 0;
}

#define REQUIRE_VULKAN()                                                                           \
    do {                                                                                           \
        if (vk_index < 0) {                                                                        \
            print_message("no Vulkan device: skipped\n");                                          \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static lumen_context *context(const char *spec, int strict, int simd)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    if (lumen_context_set_device(ctx, spec) != LUMEN_OK)
        fail_msg("set_device(%s): %s", spec, lumen_last_error());
    assert_int_equal(lumen_context_set_strict(ctx, strict), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ctx, simd), LUMEN_OK);
    return ctx;
}

static void test_listing(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    lumen_device_info info;
    assert_int_equal(lumen_device_get_info(vk_index, &info), LUMEN_OK);
    assert_string_equal(info.backend, "vulkan");
    assert_true(info.name[0] != '\0');
    assert_true(info.memory_total > 0);
    char spec[32];
    assert_int_equal(lumen_device_spec(vk_index, spec, sizeof spec), LUMEN_OK);
    assert_string_equal(spec, "vulkan:0");
    int i = -1;
    assert_int_equal(lumen_device_find("vulkan", &i), LUMEN_OK);
    assert_int_equal(i, vk_index);
    assert_int_equal(lumen_device_find("vulkan:0", &i), LUMEN_OK);
    assert_int_equal(i, vk_index);
    /* lavapipe (llvmpipe) runs on the CPU: a software device, which "auto" never picks */
    if (strstr(info.name, "llvmpipe")) assert_int_equal(info.kind, LUMEN_DEVICE_SOFTWARE);
    if (info.kind == LUMEN_DEVICE_SOFTWARE) {
        assert_int_equal(lumen_device_find("auto", &i), LUMEN_OK);
        assert_int_not_equal(i, vk_index);
    }
}

#define N 2
#define C 3
#define H 11
#define W 9
#define KW 4
#define KH 3

/* The reference: the CPU's scalar oracle on host views of the same planar batch. */
static void reference(const float *src, float *dst, const float *k, lumen_border b, float value)
{
    lumen_context *ctx = context("cpu", 0, 0);
    lumen_image s = lumen_image_nchw((void *)src, LUMEN_F32, N, C, H, W);
    lumen_image d = lumen_image_nchw(dst, LUMEN_F32, N, C, H, W);
    lumen_filter_options o = lumen_filter_options_default();
    o.border = b, o.border_value = value, o.anchor_x = 3, o.anchor_y = 0;
    o.method = LUMEN_METHOD_DIRECT;
    assert_int_equal(lumen_filter2d(ctx, &s, &d, k, KW, KH, &o, NULL), LUMEN_OK);
    lumen_context_destroy(ctx);
}

/* Device-resident src and dst (lumen_device_alloc + upload), strict: every border mode with
 * an off-centre anchor, on a batch of planar images in one dispatch. */
static void test_direct_device_views(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                           LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                           LUMEN_BORDER_WRAP};
    enum { COUNT = N * C * H * W };
    const size_t bytes = COUNT * sizeof(float);
    float src[COUNT], got[COUNT], want[COUNT], k[KW * KH];
    ts_random_kernel(k, KW * KH, 7);
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)((i * 37) % 101) - 50.0f;
    lumen_context *ctx = context("vulkan:0", 1, 1);
    void *dsrc = NULL, *ddst = NULL;
    assert_int_equal(lumen_device_alloc(ctx, bytes, &dsrc), LUMEN_OK);
    assert_int_equal(lumen_device_alloc(ctx, bytes, &ddst), LUMEN_OK);
    assert_int_equal(lumen_device_upload(ctx, dsrc, src, bytes), LUMEN_OK);
    lumen_image s = lumen_image_nchw(dsrc, LUMEN_F32, N, C, H, W);
    lumen_image d = lumen_image_nchw(ddst, LUMEN_F32, N, C, H, W);
    s.device = d.device = vk_index;
    for (size_t b = 0; b < sizeof borders / sizeof borders[0]; b++) {
        lumen_filter_options o = lumen_filter_options_default();
        o.border = borders[b], o.border_value = -3.25f, o.anchor_x = 3, o.anchor_y = 0;
        o.method = LUMEN_METHOD_DIRECT;
        lumen_run_info info;
        memset(&info, 0, sizeof info);
        if (lumen_filter2d(ctx, &s, &d, k, KW, KH, &o, &info) != LUMEN_OK)
            fail_msg("border %d: %s", (int)borders[b], lumen_last_error());
        assert_int_equal(lumen_context_synchronize(ctx), LUMEN_OK);
        assert_int_equal(lumen_device_download(ctx, got, ddst, bytes), LUMEN_OK);
        reference(src, want, k, borders[b], -3.25f);
        double ksum = 0;
        for (int i = 0; i < KW * KH; i++)
            ksum += fabs(k[i]);
        const double tol = ts_f32_tol(ksum, 100.0);
        for (int i = 0; i < COUNT; i++)
            if (fabs(got[i] - want[i]) > tol)
                fail_msg("border %d, element %d: %g, want %g", (int)borders[b], i, (double)got[i],
                         (double)want[i]);
        /* run_info: the device and the shader that ran */
        assert_int_equal(info.method, LUMEN_METHOD_DIRECT);
        assert_string_equal(info.device, "vulkan:0");
        assert_string_equal(info.isa, "vulkan");
        assert_string_equal(info.algo, "vulkan:direct");
    }
    lumen_device_free(ctx, dsrc);
    lumen_device_free(ctx, ddst);
    lumen_context_destroy(ctx);
}

/* Host views: uploaded, dispatched and downloaded within the call; the padding between the
 * rows of a window is left as it was. */
static void test_direct_host_window(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { PITCH = W + 3 };
    float src[H * PITCH], dst[H * PITCH], want[H * W], k[9];
    ts_random_kernel(k, 9, 3);
    for (int i = 0; i < H * PITCH; i++)
        src[i] = (float)(i % 17), dst[i] = 1234.5f;
    lumen_image s = lumen_image_nchw(src, LUMEN_F32, 1, 1, H, W);
    lumen_image d = lumen_image_nchw(dst, LUMEN_F32, 1, 1, H, W);
    s.stride_h = d.stride_h = PITCH;
    s.stride_c = d.stride_n = s.stride_n = d.stride_c = (int64_t)H * PITCH;
    lumen_image r = lumen_image_nchw(want, LUMEN_F32, 1, 1, H, W);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_DIRECT;
    lumen_context *cpu = context("cpu", 0, 0), *vk = context("vulkan:0", 1, 1);
    assert_int_equal(lumen_filter2d(cpu, &s, &r, k, 3, 3, &o, NULL), LUMEN_OK);
    lumen_run_info info;
    if (lumen_filter2d(vk, &s, &d, k, 3, 3, &o, &info) != LUMEN_OK)
        fail_msg("%s", lumen_last_error());
    assert_string_equal(info.algo, "vulkan:direct");
    for (int y = 0; y < H; y++)
        for (int x = 0; x < PITCH; x++) {
            const float g = dst[y * PITCH + x];
            if (x >= W)
                assert_true(g == 1234.5f);
            else
                assert_true(fabsf(g - want[y * W + x]) <= 1e-4f);
        }
    lumen_context_destroy(cpu);
    lumen_context_destroy(vk);
}

/* An op the module lacks (the separable filter): strict mode fails and leaves dst alone;
 * without strict mode the CPU runs it and run_info says so. */
/* The memory cap: an op whose buffers pass the context's limit runs out of device memory,
 * which is an error in strict mode (dst untouched) and a CPU fallback otherwise; without the
 * cap the same op runs on the device. */
static void test_memory_cap(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    float src[H * W], dst[H * W], kx[3] = {0.25f, 0.5f, 0.25f};
    for (int i = 0; i < H * W; i++)
        src[i] = (float)i, dst[i] = -1.0f;
    lumen_image s = lumen_image_nchw(src, LUMEN_F32, 1, 1, H, W);
    lumen_image d = lumen_image_nchw(dst, LUMEN_F32, 1, 1, H, W);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_SEPARABLE;
    lumen_context *strict = context("vulkan:0", 1, 1);
    assert_int_equal(lumen_context_set_memory_limit(strict, 64), LUMEN_OK);
    assert_int_equal(lumen_sep_filter2d(strict, &s, &d, kx, 3, kx, 3, &o, NULL),
                     LUMEN_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(lumen_last_error(), "memory limit"));
    for (int i = 0; i < H * W; i++)
        assert_true(dst[i] == -1.0f);
    lumen_context *lenient = context("vulkan:0", 0, 1);
    assert_int_equal(lumen_context_set_memory_limit(lenient, 64), LUMEN_OK);
    lumen_run_info info;
    assert_int_equal(lumen_sep_filter2d(lenient, &s, &d, kx, 3, kx, 3, &o, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    assert_int_equal(info.method, LUMEN_METHOD_SEPARABLE);
    assert_int_equal(lumen_context_set_memory_limit(strict, 0), LUMEN_OK);
    assert_int_equal(lumen_sep_filter2d(strict, &s, &d, kx, 3, kx, 3, &o, &info), LUMEN_OK);
    assert_string_equal(info.device, "vulkan:0");
    assert_string_equal(info.algo, "vulkan:separable");
    lumen_context_destroy(strict);
    lumen_context_destroy(lenient);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_direct_device_views),
        cmocka_unit_test(test_direct_host_window),
        cmocka_unit_test(test_memory_cap),
    };
    return cmocka_run_group_tests(tests, find_device, NULL);
}
