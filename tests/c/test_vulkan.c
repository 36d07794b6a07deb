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

/* ---- the FFT filter (src/backends/vulkan/fft.c, docs/vulkan-fft.md) ---------------------- */

#define FN 2
#define FC 3
#define FH 48
#define FW 64

static const lumen_border all_borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                           LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                           LUMEN_BORDER_WRAP};

/* The float64 direct correlation of planar planes (n_planes of h x w) with a kh x kw kernel,
 * anchor (ax, ay): the oracle of the FFT tests. NaN and Inf propagate as IEEE sums do. */
static void direct_f64(const float *src, int planes, int h, int w, const float *k, int kw, int kh,
                       int ax, int ay, lumen_border b, float value, double *out)
{
    for (int p = 0; p < planes; p++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double acc = 0.0;
                for (int i = 0; i < kh; i++) {
                    const int64_t sy = ts_border_interp(y + i - ay, h, b);
                    for (int j = 0; j < kw; j++) {
                        const int64_t sx = ts_border_interp(x + j - ax, w, b);
                        const double v = sy < 0 || sx < 0
                                             ? (double)value
                                             : (double)src[((int64_t)p * h + sy) * w + sx];
                        acc += (double)k[i * kw + j] * v;
                    }
                }
                out[((int64_t)p * h + y) * w + x] = acc;
            }
}

static double abs_sum(const float *k, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += fabs(k[i]);
    return s;
}

static void expect_fft_info(const lumen_run_info *info)
{
    assert_int_equal(info->method, LUMEN_METHOD_FFT);
    assert_string_equal(info->device, "vulkan:0");
    assert_string_equal(info->isa, "vulkan");
    assert_non_null(info->algo);
    assert_true(!strncmp(info->algo, "vulkan:fft", 10));
}

/* Device-resident planar batch (2 images x 3 channels, 64x48, f32), strict: every border mode
 * with kernels whose tile sizes use every radix (17x17: 64 = 4^3 and 80 = 4^2 5; 31x9: 60 =
 * 4 3 5 and 96 = 4^2 2 3; 3x3: 18 = 2 3^2, twelve tiles per plane; 5x7: 36 = 4 3^2 and 54 = 2 3^3),
 * off-centre anchors, against a float64 direct sum: within 1e-5 x sum|k| x max|x| (the issue's
 * target, TS_TOL_FFT). Prints the largest error seen, in those units. */
static void test_fft_accuracy(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    static const struct {
        int kw, kh, ax, ay;
    } kernels[] = {{17, 17, -1, -1}, {31, 9, 3, 7}, {3, 3, 0, 2}, {5, 7, 4, 1}};
    enum { COUNT = FN * FC * FH * FW };
    const size_t bytes = COUNT * sizeof(float);
    float *src = malloc(bytes), *got = malloc(bytes), *k = malloc(31 * 17 * sizeof(float));
    double *want = malloc(COUNT * sizeof(double));
    assert_true(src && got && k && want);
    ts_rng rng = ts_rng_make(11);
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)ts_rng_uniform(&rng, -100.0, 100.0);
    lumen_context *ctx = context("vulkan:0", 1, 1);
    void *dsrc = NULL, *ddst = NULL;
    assert_int_equal(lumen_device_alloc(ctx, bytes, &dsrc), LUMEN_OK);
    assert_int_equal(lumen_device_alloc(ctx, bytes, &ddst), LUMEN_OK);
    assert_int_equal(lumen_device_upload(ctx, dsrc, src, bytes), LUMEN_OK);
    lumen_image s = lumen_image_nchw(dsrc, LUMEN_F32, FN, FC, FH, FW);
    lumen_image d = lumen_image_nchw(ddst, LUMEN_F32, FN, FC, FH, FW);
    s.device = d.device = vk_index;
    double worst = 0.0;
    for (size_t q = 0; q < sizeof kernels / sizeof kernels[0]; q++) {
        const int kw = kernels[q].kw, kh = kernels[q].kh;
        const int ax = kernels[q].ax < 0 ? kw / 2 : kernels[q].ax;
        const int ay = kernels[q].ay < 0 ? kh / 2 : kernels[q].ay;
        ts_random_kernel(k, kw * kh, 100 + q);
        const double scale = abs_sum(k, kw * kh) * 100.0;
        for (size_t b = 0; b < sizeof all_borders / sizeof all_borders[0]; b++) {
            lumen_filter_options o = lumen_filter_options_default();
            o.border = all_borders[b], o.border_value = -37.5f;
            o.anchor_x = ax, o.anchor_y = ay, o.method = LUMEN_METHOD_FFT;
            lumen_run_info info;
            memset(&info, 0, sizeof info);
            if (lumen_filter2d(ctx, &s, &d, k, kw, kh, &o, &info) != LUMEN_OK)
                fail_msg("%dx%d border %d: %s", kw, kh, (int)all_borders[b], lumen_last_error());
            expect_fft_info(&info);
            assert_int_equal(lumen_device_download(ctx, got, ddst, bytes), LUMEN_OK);
            direct_f64(src, FN * FC, FH, FW, k, kw, kh, ax, ay, all_borders[b], -37.5f, want);
            for (int i = 0; i < COUNT; i++) {
                const double e = fabs(got[i] - want[i]) / scale;
                worst = e > worst ? e : worst;
                if (!(e <= 1e-5))
                    fail_msg("%dx%d border %d, element %d: %.9g, want %.9g (%.2g of S x R)", kw, kh,
                             (int)all_borders[b], i, (double)got[i], want[i], e);
            }
        }
    }
    print_message("vulkan fft: largest error %.3g x sum|k| x max|x|\n", worst);
    lumen_device_free(ctx, dsrc);
    lumen_device_free(ctx, ddst);
    lumen_context_destroy(ctx);
    free(src), free(got), free(k), free(want);
}

/* A NaN, an Inf and a huge finite value in the source: their tiles are summed directly, so
 * NaN/Inf reach exactly the outputs whose window holds them (as with the direct filter), and
 * the huge value (its tile's transform would overflow f32) gives finite, exact sums; every
 * other output keeps the FFT's accuracy. Host views, 3x3 kernel: twelve tiles. */
static void test_fft_nonfinite_tiles(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = FH * FW };
    static float src[COUNT], got[COUNT];
    static double want[COUNT];
    float k[9];
    ts_random_kernel(k, 9, 5);
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)((i * 29) % 83) - 41.0f;
    src[10 * FW + 7] = NAN;
    src[30 * FW + 50] = INFINITY;
    src[40 * FW + 20] = 3e35f;
    lumen_image s = lumen_image_nchw(src, LUMEN_F32, 1, 1, FH, FW);
    lumen_image d = lumen_image_nchw(got, LUMEN_F32, 1, 1, FH, FW);
    lumen_context *ctx = context("vulkan:0", 1, 1);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_FFT, o.border = LUMEN_BORDER_REFLECT101;
    lumen_run_info info;
    if (lumen_filter2d(ctx, &s, &d, k, 3, 3, &o, &info) != LUMEN_OK)
        fail_msg("%s", lumen_last_error());
    expect_fft_info(&info);
    direct_f64(src, 1, FH, FW, k, 3, 3, 1, 1, LUMEN_BORDER_REFLECT101, 0.0f, want);
    int nans = 0, infs = 0;
    for (int i = 0; i < COUNT; i++) {
        const int y = i / FW, x = i % FW;
        const bool near_huge = abs(y - 40) <= 1 && abs(x - 20) <= 1;
        const double tol = 1e-5 * abs_sum(k, 9) * (near_huge ? 3e35 : 41.0);
        if (isnan(want[i]) || isnan(got[i])) {
            if (!(isnan(want[i]) && isnan(got[i])))
                fail_msg("(%d, %d): %g, want %g", y, x, (double)got[i], want[i]);
            nans++;
        } else if (isinf(want[i]) || isinf(got[i])) {
            if (got[i] != want[i]) fail_msg("(%d, %d): %g, want %g", y, x, (double)got[i], want[i]);
            infs++;
        } else if (!(fabs(got[i] - want[i]) <= tol)) {
            fail_msg("(%d, %d): %.9g, want %.9g", y, x, (double)got[i], want[i]);
        }
    }
    /* 3x3 windows: NaN reaches 9 outputs; Inf 9, unless taps of both signs (then NaN) */
    assert_int_equal(nans + infs, 18);
    lumen_context_destroy(ctx);
}

/* u8 in and out (and u16), batch of planar images: each output is the rounded, saturated
 * f32 reference, one level off only within the FFT tolerance of a .5 tie; with a dyadic kernel
 * (binomial / 256, exact ties everywhere) outputs near a tie are summed directly, so every
 * output equals the exactly rounded sum. */
static void test_fft_integer(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = FN * FC * FH * FW };
    static const float binomial[5] = {1, 4, 6, 4, 1};
    float kd[25], kr[17 * 17];
    for (int i = 0; i < 25; i++)
        kd[i] = binomial[i / 5] * binomial[i % 5] / 256.0f;
    ts_random_kernel(kr, 17 * 17, 9);
    for (int i = 0; i < 17 * 17; i++)
        kr[i] = fabsf(kr[i]); /* positive taps: outputs within [0, max] and beyond 255 */
    static uint16_t src[COUNT], got[COUNT];
    static double want[COUNT];
    static float srcf[COUNT];
    const lumen_dtype types[] = {LUMEN_U8, LUMEN_U16};
    lumen_context *ctx = context("vulkan:0", 1, 1);
    for (int t = 0; t < 2; t++) {
        const double top = types[t] == LUMEN_U8 ? 255.0 : 65535.0;
        ts_rng rng = ts_rng_make(21 + t);
        for (int i = 0; i < COUNT; i++) {
            const uint32_t v = ts_rng_u32(&rng) % (uint32_t)(top + 1);
            srcf[i] = (float)v;
            if (types[t] == LUMEN_U8)
                ((uint8_t *)src)[i] = (uint8_t)v;
            else
                src[i] = (uint16_t)v;
        }
        lumen_image s = lumen_image_nchw(src, types[t], FN, FC, FH, FW);
        lumen_image d = lumen_image_nchw(got, types[t], FN, FC, FH, FW);
        for (int q = 0; q < 2; q++) {
            const float *k = q ? kr : kd;
            const int n = q ? 17 : 5;
            lumen_filter_options o = lumen_filter_options_default();
            o.method = LUMEN_METHOD_FFT, o.border = all_borders[q * 3 + t];
            lumen_run_info info;
            if (lumen_filter2d(ctx, &s, &d, k, n, n, &o, &info) != LUMEN_OK)
                fail_msg("%s", lumen_last_error());
            expect_fft_info(&info);
            direct_f64(srcf, FN * FC, FH, FW, k, n, n, n / 2, n / 2, o.border, 0.0f, want);
            const double tol = q ? 1e-5 * abs_sum(k, n * n) * top : 0.0;
            for (int i = 0; i < COUNT; i++) {
                const double g = types[t] == LUMEN_U8 ? ((uint8_t *)got)[i] : got[i];
                const double lo = ts_quantize(want[i] - tol, types[t]);
                const double hi = ts_quantize(want[i] + tol, types[t]);
                if (g < lo || g > hi)
                    fail_msg("%s %dx%d element %d: %g, want %.9g", lumen_dtype_name(types[t]), n, n,
                             i, g, want[i]);
            }
        }
    }
    lumen_context_destroy(ctx);
}

/* Host NHWC views (channels interleaved: strides other than planar) through sep_filter2d by
 * FFT (the separable taps' outer product times scale), against the CPU's FFT; run_info says
 * the device ran it. */
static void test_fft_separable_nhwc(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { H2 = 37, W2 = 29, C2 = 3, COUNT = H2 * W2 * C2 };
    static float src[COUNT], got[COUNT], want[COUNT];
    float kx[11], ky[6];
    ts_random_kernel(kx, 11, 31);
    ts_random_kernel(ky, 6, 32);
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)((i * 13) % 61) * 0.5f;
    lumen_image s = lumen_image_nhwc(src, LUMEN_F32, 1, H2, W2, C2);
    lumen_image d = lumen_image_nhwc(got, LUMEN_F32, 1, H2, W2, C2);
    lumen_image r = lumen_image_nhwc(want, LUMEN_F32, 1, H2, W2, C2);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_FFT, o.border = LUMEN_BORDER_WRAP, o.convolve = 1;
    lumen_context *cpu = context("cpu", 0, 0), *vk = context("vulkan:0", 1, 1);
    assert_int_equal(lumen_sep_filter2d(cpu, &s, &r, kx, 11, ky, 6, &o, NULL), LUMEN_OK);
    lumen_run_info info;
    if (lumen_sep_filter2d(vk, &s, &d, kx, 11, ky, 6, &o, &info) != LUMEN_OK)
        fail_msg("%s", lumen_last_error());
    expect_fft_info(&info);
    const double tol = 1e-5 * abs_sum(kx, 11) * abs_sum(ky, 6) * 30.0;
    for (int i = 0; i < COUNT; i++)
        if (!(fabs(got[i] - want[i]) <= tol))
            fail_msg("element %d: %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    lumen_context_destroy(cpu);
    lumen_context_destroy(vk);
}

/* Under a memory limit too small for every tile's slot at once, the tiles run in several
 * groups (dispatch rounds of one submission) and the result is unchanged. Host views, 6
 * planes x 12 tiles of 18x18 (3x3 kernel): all at once need ~190 KB of slots. */
static void test_fft_groups(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = FN * FC * FH * FW };
    static float src[COUNT], got[COUNT];
    static double want[COUNT];
    float k[9];
    ts_random_kernel(k, 9, 41);
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)((i * 7) % 23);
    lumen_image s = lumen_image_nchw(src, LUMEN_F32, FN, FC, FH, FW);
    lumen_image d = lumen_image_nchw(got, LUMEN_F32, FN, FC, FH, FW);
    lumen_context *ctx = context("vulkan:0", 1, 1);
    /* staging of src and dst (2 x 128 KiB pooled), the constants (64 KiB), and less than the
     * 256 KiB pooled or 190 KB exact that one group of every tile needs */
    assert_int_equal(lumen_context_set_memory_limit(ctx, 480 << 10), LUMEN_OK);
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_FFT, o.border = LUMEN_BORDER_CONSTANT, o.border_value = 3.0f;
    lumen_run_info info;
    if (lumen_filter2d(ctx, &s, &d, k, 3, 3, &o, &info) != LUMEN_OK)
        fail_msg("%s", lumen_last_error());
    expect_fft_info(&info);
    direct_f64(src, FN * FC, FH, FW, k, 3, 3, 1, 1, LUMEN_BORDER_CONSTANT, 3.0f, want);
    const double tol = 1e-5 * abs_sum(k, 9) * 22.0;
    for (int i = 0; i < COUNT; i++)
        if (!(fabs(got[i] - want[i]) <= tol))
            fail_msg("element %d: %.9g, want %.9g", i, (double)got[i], want[i]);
    lumen_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_direct_device_views),
        cmocka_unit_test(test_direct_host_window),
        cmocka_unit_test(test_strict_refuses),
        cmocka_unit_test(test_fft_accuracy),
        cmocka_unit_test(test_fft_nonfinite_tiles),
        cmocka_unit_test(test_fft_integer),
        cmocka_unit_test(test_fft_separable_nhwc),
        cmocka_unit_test(test_fft_groups),
    };
    return cmocka_run_group_tests(tests, find_device, NULL);
}
