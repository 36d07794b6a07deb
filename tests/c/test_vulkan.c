/*
 * The Vulkan module's own paths (src/backends/vulkan, docs/vulkan.md); test_backend_ops runs
 * every op on vulkan:0 against the reference. Here: the device listing (lavapipe is a software
 * device: named by its spec, never chosen by "auto"), the direct filter on device-resident
 * views (a batch of planar images in one buffer, every border mode, an off-centre anchor),
 * strict mode refusing an op the module lacks, and run_info; the fast Gaussian against the
 * CPU's (every border, sigmas on both sides of 2 and periods on both sides of 5 sigma, u8/u16/f32,
 * a batch of interleaved images, in place, NaN).
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
static void test_strict_refuses(void **state)
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
    assert_int_equal(lumen_sep_filter2d(strict, &s, &d, kx, 3, kx, 3, &o, NULL),
                     LUMEN_ERR_UNSUPPORTED);
    for (int i = 0; i < H * W; i++)
        assert_true(dst[i] == -1.0f);
    lumen_context *lenient = context("vulkan:0", 0, 1);
    lumen_run_info info;
    assert_int_equal(lumen_sep_filter2d(lenient, &s, &d, kx, 3, kx, 3, &o, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    assert_int_equal(info.method, LUMEN_METHOD_SEPARABLE);
    lumen_context_destroy(strict);
    lumen_context_destroy(lenient);
}

/* ---- the fast Gaussian (LUMEN_OP_GAUSSIAN_FAST, src/backends/vulkan/gauss_fast.c) ---- */

static const lumen_border all_borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                           LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                           LUMEN_BORDER_WRAP};

static lumen_gaussian_options fast_options(double sx, double sy, lumen_border b, float value)
{
    lumen_gaussian_options g = lumen_gaussian_options_default();
    g.sigma_x = sx, g.sigma_y = sy, g.border = b, g.border_value = value;
    g.precision = LUMEN_PRECISION_FAST;
    return g;
}

/* The fast Gaussian on the device (strict), checking run_info. */
static void gauss_fast_device(lumen_context *vk, const lumen_image *s, const lumen_image *d,
                              const lumen_gaussian_options *g)
{
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    if (lumen_gaussian_blur_ex(vk, s, d, g, &info) != LUMEN_OK)
        fail_msg("sigma (%g, %g), border %d: %s", g->sigma_x, g->sigma_y, (int)g->border,
                 lumen_last_error());
    assert_int_equal(info.method, LUMEN_METHOD_RECURSIVE);
    assert_string_equal(info.device, "vulkan:0");
    assert_string_equal(info.isa, "vulkan");
    assert_string_equal(info.algo, "vulkan:gauss-deriche");
}

/* The CPU's fast Gaussian with SIMD off (its portable kernels): the same design. */
static void gauss_fast_cpu(const lumen_image *s, const lumen_image *d,
                           const lumen_gaussian_options *g)
{
    lumen_context *cpu = context("cpu", 0, 0);
    assert_int_equal(lumen_gaussian_blur_ex(cpu, s, d, g, NULL), LUMEN_OK);
    lumen_context_destroy(cpu);
}

/* Largest |got - want| over every element of two views of one shape. */
static double max_diff(const lumen_image *got, const lumen_image *want)
{
    double worst = 0;
    for (int64_t b = 0; b < got->n; b++)
        for (int64_t c = 0; c < got->c; c++)
            for (int64_t y = 0; y < got->h; y++)
                for (int64_t x = 0; x < got->w; x++) {
                    const double e = fabs(ts_get(got, b, c, y, x) - ts_get(want, b, c, y, x));
                    worst = e > worst || isnan(e) ? e : worst;
                }
    return worst;
}

/* The device against the CPU's fast Gaussian: the same f32 recursion (bit for bit on lavapipe),
 * so far inside the contract's 1e-3 x range; a GPU's other rounding (FMA) stays near 1e-6.
 * A wrong coefficient or start errs by 1e-3 or more. */
#define DEV_REL 1e-4

#define GH 30
#define GW 40

/*
 * sigma 0.8 (exact kernel), 2.5, 7 and 40 (recursive), equal and mixed per axis, on 40 x 30:
 * with 7 the column's wrap period (30) is below 5 sigma and the row's (40) above, with 40
 * every periodic rule takes the closed-form start. Every border, u8 and f32, against the CPU's
 * fast Gaussian (DEV_REL x range, and a rounding step for u8); f32 also against the
 * exact blur (ksize round(8 sigma + 1) | 1), the contract itself.
 */
static void test_gauss_fast_matches_cpu(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    static const double sigmas[][2] = {{0.8, 0.8}, {2.5, 2.5}, {7, 7},
                                       {40, 40},   {0.8, 7},   {40, 2.5}};
    static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_F32};
    enum { COUNT = GH * GW };
    float fsrc[COUNT], fgot[COUNT], fwant[COUNT], fexact[COUNT];
    uint8_t usrc[COUNT], ugot[COUNT], uwant[COUNT];
    ts_rng r = ts_rng_make(13);
    for (int i = 0; i < COUNT; i++) {
        usrc[i] = (uint8_t)(ts_rng_u32(&r) % 256);
        /* a step edge plus noise: large errors at the borders would show */
        fsrc[i] = (float)((i % GW < GW / 2 ? 0.0 : 1.0) + 0.5 * ts_rng_uniform(&r, 0, 1));
    }
    lumen_context *vk = context("vulkan:0", 1, 1);
    double worst_cpu[2] = {0, 0}, worst_exact = 0;
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        const bool f32 = dtypes[t] == LUMEN_F32;
        lumen_image s =
            lumen_image_nchw(f32 ? (void *)fsrc : (void *)usrc, dtypes[t], 1, 1, GH, GW);
        lumen_image d =
            lumen_image_nchw(f32 ? (void *)fgot : (void *)ugot, dtypes[t], 1, 1, GH, GW);
        lumen_image w =
            lumen_image_nchw(f32 ? (void *)fwant : (void *)uwant, dtypes[t], 1, 1, GH, GW);
        const float value = f32 ? 0.75f : 200.0f;
        const double range = f32 ? 1.5 : 255.0; /* the data's, and the border value's */
        for (size_t k = 0; k < sizeof sigmas / sizeof sigmas[0]; k++)
            for (size_t b = 0; b < sizeof all_borders / sizeof all_borders[0]; b++) {
                const lumen_gaussian_options g =
                    fast_options(sigmas[k][0], sigmas[k][1], all_borders[b], value);
                gauss_fast_device(vk, &s, &d, &g);
                gauss_fast_cpu(&s, &w, &g);
                const double e = max_diff(&d, &w), bound = DEV_REL * range + (f32 ? 1e-6 : 1.0);
                if (!(e <= bound))
                    fail_msg("%s sigma (%g, %g) border %d: |device - cpu| = %g > %g",
                             f32 ? "f32" : "u8", sigmas[k][0], sigmas[k][1], (int)all_borders[b], e,
                             bound);
                worst_cpu[t] = e > worst_cpu[t] ? e : worst_cpu[t];
                if (!f32) continue;
                lumen_image x = lumen_image_nchw(fexact, LUMEN_F32, 1, 1, GH, GW);
                lumen_context *cpu = context("cpu", 0, 1);
                assert_int_equal(
                    lumen_gaussian_blur(cpu, &s, &x, (int)lrint(sigmas[k][0] * 8 + 1) | 1,
                                        (int)lrint(sigmas[k][1] * 8 + 1) | 1, sigmas[k][0],
                                        sigmas[k][1], all_borders[b], value, NULL),
                    LUMEN_OK);
                lumen_context_destroy(cpu);
                const double ex = max_diff(&d, &x) / range;
                if (!(ex <= 1e-3))
                    fail_msg("sigma (%g, %g) border %d: |device - exact| = %g x range",
                             sigmas[k][0], sigmas[k][1], (int)all_borders[b], ex);
                worst_exact = ex > worst_exact ? ex : worst_exact;
            }
    }
    print_message("gauss fast: max |device - cpu| u8 %g, f32 %g (x range %g); "
                  "max |device - exact| %g x range\n",
                  worst_cpu[0], worst_cpu[1], worst_cpu[1] / 1.5, worst_exact);
    lumen_context_destroy(vk);
}

#define GN 2
#define GC 3
#define BH 13
#define BW 17

/*
 * A batch of interleaved images (n = 2, c = 3, NHWC strides), u16 host views and f32
 * device-resident views and host views filtered in place, with one exact and one recursive axis and
 * both recursive: every plane in one submission, each its own. Against the CPU.
 */
static void test_gauss_fast_batch(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = GN * GC * BH * BW };
    static uint16_t usrc[COUNT], ugot[COUNT], uwant[COUNT];
    static float fsrc[COUNT], fgot[COUNT], fwant[COUNT];
    ts_rng r = ts_rng_make(5);
    for (int i = 0; i < COUNT; i++)
        usrc[i] = (uint16_t)(ts_rng_u32(&r) % 65536), fsrc[i] = (float)ts_rng_uniform(&r, -2, 2);
    lumen_image views[6];
    void *data[6] = {usrc, ugot, uwant, fsrc, fgot, fwant};
    for (int i = 0; i < 6; i++) {
        views[i] = lumen_image_nchw(data[i], i < 3 ? LUMEN_U16 : LUMEN_F32, GN, GC, BH, BW);
        views[i].stride_w = GC, views[i].stride_c = 1, views[i].stride_h = BW * GC;
        views[i].stride_n = BH * BW * GC;
    }
    lumen_context *vk = context("vulkan:0", 1, 1);
    static const double sigmas[][2] = {{1.5, 3}, {3, 1.5}, {4, 6}};
    for (size_t k = 0; k < sizeof sigmas / sizeof sigmas[0]; k++) {
        const lumen_gaussian_options g =
            fast_options(sigmas[k][0], sigmas[k][1], all_borders[k % 5], 1000.0f);
        gauss_fast_device(vk, &views[0], &views[1], &g);
        gauss_fast_cpu(&views[0], &views[2], &g);
        if (max_diff(&views[1], &views[2]) > 1.0 + DEV_REL * 65535)
            fail_msg("u16 sigma (%g, %g): %g", sigmas[k][0], sigmas[k][1],
                     max_diff(&views[1], &views[2]));
        /* f32 on device-resident views: out of place, then in place (dst = src) */
        const size_t bytes = sizeof fsrc;
        void *dsrc = NULL, *ddst = NULL;
        assert_int_equal(lumen_device_alloc(vk, bytes, &dsrc), LUMEN_OK);
        assert_int_equal(lumen_device_alloc(vk, bytes, &ddst), LUMEN_OK);
        assert_int_equal(lumen_device_upload(vk, dsrc, fsrc, bytes), LUMEN_OK);
        lumen_image ds = views[3], dd = views[4];
        ds.data = dsrc, dd.data = ddst;
        ds.device = dd.device = vk_index;
        const lumen_gaussian_options gf =
            fast_options(sigmas[k][0], sigmas[k][1], all_borders[(k + 1) % 5], -0.5f);
        gauss_fast_device(vk, &ds, &dd, &gf);
        gauss_fast_cpu(&views[3], &views[5], &gf);
        assert_int_equal(lumen_device_download(vk, fgot, ddst, bytes), LUMEN_OK);
        if (!(max_diff(&views[4], &views[5]) <= DEV_REL * 4.0 + 1e-6))
            fail_msg("f32 sigma (%g, %g): %g", sigmas[k][0], sigmas[k][1],
                     max_diff(&views[4], &views[5]));
        /* host views in place (dst = src) */
        memcpy(fgot, fsrc, bytes);
        gauss_fast_device(vk, &views[4], &views[4], &gf);
        if (!(max_diff(&views[4], &views[5]) <= DEV_REL * 4.0 + 1e-6))
            fail_msg("f32 in place sigma (%g, %g): %g", sigmas[k][0], sigmas[k][1],
                     max_diff(&views[4], &views[5]));
        lumen_device_free(vk, dsrc);
        lumen_device_free(vk, ddst);
    }
    lumen_context_destroy(vk);
}

/* docs/gaussian-fast.md: with both axes recursive a NaN turns its whole channel plane into NaN
 * (as on the CPU); the other planes are untouched by it. */
static void test_gauss_fast_nan(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = 2 * BH * BW };
    float src[COUNT], got[COUNT], want[COUNT];
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)(i % 7);
    src[5 * BW + 3] = NAN;
    lumen_image s = lumen_image_nchw(src, LUMEN_F32, 1, 2, BH, BW);
    lumen_image d = lumen_image_nchw(got, LUMEN_F32, 1, 2, BH, BW);
    lumen_image w = lumen_image_nchw(want, LUMEN_F32, 1, 2, BH, BW);
    lumen_context *vk = context("vulkan:0", 1, 1);
    const lumen_gaussian_options g = fast_options(3, 2.5, LUMEN_BORDER_REFLECT101, 0);
    gauss_fast_device(vk, &s, &d, &g);
    gauss_fast_cpu(&s, &w, &g);
    for (int i = 0; i < BH * BW; i++)
        if (!isnan(got[i]) || !isnan(want[i]))
            fail_msg("plane 0, element %d: %g, want NaN", i, (double)got[i]);
    for (int i = BH * BW; i < COUNT; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-5f))
            fail_msg("plane 1, element %d: %g, want %g", i, (double)got[i], (double)want[i]);
    lumen_context_destroy(vk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_direct_device_views),
        cmocka_unit_test(test_direct_host_window),
        cmocka_unit_test(test_strict_refuses),
        cmocka_unit_test(test_gauss_fast_matches_cpu),
        cmocka_unit_test(test_gauss_fast_batch),
        cmocka_unit_test(test_gauss_fast_nan),
    };
    return cmocka_run_group_tests(tests, find_device, NULL);
}
