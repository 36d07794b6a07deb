/*
 * The Vulkan module's own paths (src/backends/vulkan, docs/vulkan.md); test_backend_ops runs
 * every op on vulkan:0 against the reference. Here: the device listing (lavapipe is a software
 * device: named by its spec, never chosen by "auto"), the direct filter on device-resident
 * views (a batch of planar images in one buffer, every border mode, an off-centre anchor),
 * the memory cap (strict error, fallback), images larger than one binding (pieces), run_info,
 * conv2d / conv_transpose2d against a float64 oracle within 1e-6 of TERMS (strides, padding,
 * dilation, groups, depthwise, bias, batches, channel-last views, sums of thousands of terms),
 * and the fast Gaussian against the CPU's (every border, sigmas on both sides of 2 and periods
 * on both sides of 5 sigma, u8/u16/f32, a batch of interleaved images, in place, NaN), and the
 * FFT filter against a float64 direct sum (every radix, every border, NaN/Inf tiles, u8/u16 with
 * exact ties, separable NHWC, tiles in groups under a memory limit).
 *
 * Without a Vulkan device every test prints "no Vulkan device: skipped" and skips.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
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

/* Planar f32 views src (holding `data`) and dst of n x c x h x w in fresh device memory of
 * ctx's device; free them with lumen_device_free(ctx, s->data) and (ctx, d->data). */
static void device_pair(lumen_context *ctx, const float *data, int64_t n, int64_t c, int64_t h,
                        int64_t w, lumen_image *s, lumen_image *d)
{
    const size_t bytes = (size_t)(n * c * h * w) * sizeof(float);
    void *dsrc = NULL, *ddst = NULL;
    assert_int_equal(lumen_device_alloc(ctx, bytes, &dsrc), LUMEN_OK);
    assert_int_equal(lumen_device_alloc(ctx, bytes, &ddst), LUMEN_OK);
    assert_int_equal(lumen_device_upload(ctx, dsrc, data, bytes), LUMEN_OK);
    *s = lumen_image_nchw(dsrc, LUMEN_F32, n, c, h, w);
    *d = lumen_image_nchw(ddst, LUMEN_F32, n, c, h, w);
    s->device = d->device = vk_index;
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
    /* the memory model: unified (mapped device memory), or staged as on a discrete GPU
     * without ReBAR, which LUMEN_VULKAN_MEMORY=staged forces (the _staged CTest runs) */
    char driver[256];
    assert_int_equal(lumen_device_get_driver(vk_index, driver, sizeof driver), LUMEN_OK);
    print_message("driver: %s\n", driver);
    assert_non_null(strstr(driver, "Vulkan 1."));
    const char *mode = getenv("LUMEN_VULKAN_MEMORY");
    if (mode && !strcmp(mode, "staged")) assert_non_null(strstr(driver, "staged memory"));
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
    lumen_image s, d;
    device_pair(ctx, src, N, C, H, W, &s, &d);
    void *ddst = d.data;
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
    lumen_device_free(ctx, s.data);
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

/* ---- conv2d and conv_transpose2d ----------------------------------------------------------- */

/* One conv case: shapes, parameters, layout of x and y (channel-last via strides), data. */
typedef struct vk_conv_case {
    const char *name;
    int transpose;
    int64_t n, c, h, w, k, r, s;
    int sh, sw, ph, pw, dh, dw, groups, oph, opw;
    int bias, nhwc;
    double x_lo, w_lo; /* data uniform in [lo, 1): lo = 0 makes every term of a sum positive */
} vk_conv_case;

/* A case row: name, then transpose, n, c, h, w, k, r, s, stride h/w, pad h/w, dilation h/w,
 * groups, output_pad h/w, bias, nhwc, x_lo, w_lo. */
#define CC(name_, ...)                                                                             \
    {                                                                                              \
        name_, __VA_ARGS__                                                                         \
    }

static void fill(float *p, int64_t n, double lo, uint64_t seed)
{
    ts_rng r = ts_rng_make(seed);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)ts_rng_uniform(&r, lo, 1.0);
}

/* The float64 oracle of one output (PyTorch's semantics, conv_reference.c's loops written
 * again) and its TERMS: the sum of |x*w| + |bias|, what the 1e-6 bound is relative to. */
static void conv_oracle(const vk_conv_case *cc, const lumen_image *x, const lumen_image *w,
                        const float *bias, int64_t b, int64_t k, int64_t oy, int64_t ox,
                        double *val, double *terms)
{
    const int64_t cg = cc->c / cc->groups, kg = cc->k / cc->groups, g = k / kg;
    double acc = bias ? bias[k] : 0.0, t = bias ? fabs(bias[k]) : 0.0;
    for (int64_t c = g * cg; c < (g + 1) * cg; c++)
        for (int64_t r = 0; r < cc->r; r++)
            for (int64_t s = 0; s < cc->s; s++) {
                int64_t iy, ix;
                double wv;
                if (cc->transpose) {
                    const int64_t ty = oy + cc->ph - r * cc->dh, tx = ox + cc->pw - s * cc->dw;
                    if (ty < 0 || tx < 0 || ty % cc->sh || tx % cc->sw) continue;
                    iy = ty / cc->sh, ix = tx / cc->sw;
                    wv = ts_get(w, c, k - g * kg, r, s);
                } else {
                    iy = oy * cc->sh - cc->ph + r * cc->dh, ix = ox * cc->sw - cc->pw + s * cc->dw;
                    wv = ts_get(w, k, c - g * cg, r, s);
                }
                if (iy < 0 || iy >= cc->h || ix < 0 || ix >= cc->w) continue;
                const double term = ts_get(x, b, c, iy, ix) * wv;
                acc += term;
                t += fabs(term);
            }
    *val = acc;
    *terms = t;
}

static lumen_image tensor(float *p, const vk_conv_case *cc, int64_t n, int64_t c, int64_t h,
                          int64_t w)
{
    return cc->nhwc ? lumen_image_nhwc(p, LUMEN_F32, n, h, w, c)
                    : lumen_image_nchw(p, LUMEN_F32, n, c, h, w);
}

/* Runs one case on vulkan:0 (strict: it must run there) and holds every output to
 * TS_CONV_REL of its TERMS; returns the worst error / TERMS. */
static double run_conv_case(lumen_context *ctx, const vk_conv_case *cc)
{
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.stride_h = cc->sh, p.stride_w = cc->sw, p.pad_h = cc->ph, p.pad_w = cc->pw;
    p.dilation_h = cc->dh, p.dilation_w = cc->dw, p.groups = cc->groups;
    p.output_pad_h = cc->oph, p.output_pad_w = cc->opw;
    const int64_t wn = cc->transpose ? cc->c : cc->k,
                  wc = cc->transpose ? cc->k / cc->groups : cc->c / cc->groups;
    const int64_t xs = cc->n * cc->c * cc->h * cc->w, ws = wn * wc * cc->r * cc->s;
    float *xd = malloc((size_t)xs * sizeof *xd), *wd = malloc((size_t)ws * sizeof *wd);
    float *bias = malloc((size_t)cc->k * sizeof *bias);
    assert_non_null(xd);
    assert_non_null(wd);
    assert_non_null(bias);
    fill(xd, xs, cc->x_lo, 11), fill(wd, ws, cc->w_lo, 12), fill(bias, cc->k, -1.0, 13);
    lumen_image x = tensor(xd, cc, cc->n, cc->c, cc->h, cc->w);
    lumen_image w = lumen_image_nchw(wd, LUMEN_F32, wn, wc, cc->r, cc->s);
    int64_t oh = 0, ow = 0;
    assert_int_equal(cc->transpose ? lumen_conv_transpose2d_output_size(&x, &w, &p, &oh, &ow)
                                   : lumen_conv2d_output_size(&x, &w, &p, &oh, &ow),
                     LUMEN_OK);
    const int64_t ys = cc->n * cc->k * oh * ow;
    float *yd = malloc((size_t)ys * sizeof *yd);
    assert_non_null(yd);
    for (int64_t i = 0; i < ys; i++)
        yd[i] = NAN;
    lumen_image y = tensor(yd, cc, cc->n, cc->k, oh, ow);
    const float *b = cc->bias ? bias : NULL;
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    const lumen_status st = cc->transpose ? lumen_conv_transpose2d(ctx, &x, &w, b, &p, &y, &info)
                                          : lumen_conv2d(ctx, &x, &w, b, &p, &y, &info);
    if (st != LUMEN_OK) fail_msg("%s: %s", cc->name, lumen_last_error());
    assert_string_equal(info.device, "vulkan:0");
    assert_int_equal(info.method, LUMEN_METHOD_DIRECT);
    assert_string_equal(info.isa, "vulkan");
    assert_string_equal(info.algo, cc->transpose ? "vulkan:conv-transpose" : "vulkan:conv-gemm");
    double worst = 0;
    for (int64_t bi = 0; bi < cc->n; bi++)
        for (int64_t k = 0; k < cc->k; k++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double want, terms;
                    conv_oracle(cc, &x, &w, b, bi, k, oy, ox, &want, &terms);
                    const double got = ts_get(&y, bi, k, oy, ox), err = fabs(got - want);
                    if (!(err <= TS_CONV_REL * terms + TS_CONV_ABS))
                        fail_msg("%s: y[%lld, %lld, %lld, %lld] = %.9g, want %.9g (terms %g)",
                                 cc->name, (long long)bi, (long long)k, (long long)oy,
                                 (long long)ox, got, want, terms);
                    if (terms > 0 && err / terms > worst) worst = err / terms;
                }
    print_message("%-48s %lldx%lld -> %lldx%lld, C*R*S/g %lld: max error %.2e of TERMS\n", cc->name,
                  (long long)cc->h, (long long)cc->w, (long long)oh, (long long)ow,
                  (long long)(cc->c / cc->groups * cc->r * cc->s), worst);
    free(xd), free(wd), free(bias), free(yd);
    return worst;
}

static void run_conv_cases(const vk_conv_case *cases, size_t count)
{
    lumen_context *ctx = context("vulkan:0", 1, 1);
    for (size_t i = 0; i < count; i++)
        run_conv_case(ctx, &cases[i]);
    lumen_context_destroy(ctx);
}

/* conv2d against a float64 oracle: strides, padding, dilation, groups, depthwise, bias,
 * batches, channel-last views, and sums long enough (C*R*S in the thousands, every term
 * positive) that plain f32 accumulation would not stay within 1e-6 of TERMS. */
static void test_conv2d(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    static const vk_conv_case cases[] = {
        CC("conv2d stride 2 pad 1 bias", 0, 2, 4, 11, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0, 1, 0,
           -1, -1),
        CC("conv2d dilation 2 pad 2 groups 2 bias nhwc", 0, 2, 4, 10, 12, 6, 3, 3, 1, 1, 2, 2, 2, 2,
           2, 0, 0, 1, 1, -1, -1),
        CC("conv2d stride(1,3) pad(0,2) dil(3,1) 2x4", 0, 1, 3, 13, 14, 5, 2, 4, 1, 3, 0, 2, 3, 1,
           1, 0, 0, 0, 0, -1, -1),
        CC("conv2d depthwise 3x3 pad 1 bias", 0, 2, 5, 9, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 5, 0, 0, 1,
           0, -1, -1),
        CC("conv2d depthwise x3 5x5 stride 2 nhwc", 0, 2, 4, 12, 11, 12, 5, 5, 2, 2, 2, 2, 1, 1, 4,
           0, 0, 0, 1, -1, -1),
        CC("conv2d groups 4 (kg 12) 1x1", 0, 1, 8, 6, 5, 48, 1, 1, 1, 1, 0, 0, 1, 1, 4, 0, 0, 1, 0,
           -1, -1),
        CC("conv2d 1x1 k 70 (partial 64-tiles)", 0, 2, 9, 7, 10, 70, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0,
           0, 1, 0, -1, -1),
        CC("conv2d C64 K32 3x3 20x20 bias", 0, 1, 64, 20, 20, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0,
           1, 0, -1, -1),
        CC("conv2d C64 K32 3x3 20x20 positive", 0, 1, 64, 20, 20, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0,
           0, 1, 0, 0, 0),
        CC("conv2d C256 K64 3x3 10x10 positive nhwc", 0, 1, 256, 10, 10, 64, 3, 3, 1, 1, 1, 1, 1, 1,
           1, 0, 0, 1, 1, 0, 0),
        CC("conv2d C128 K20 5x5 8x8 positive", 0, 1, 128, 8, 8, 20, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0, 0,
           0, 0, 0, 0),
    };
    run_conv_cases(cases, sizeof cases / sizeof cases[0]);
}

/* conv_transpose2d: strides with output padding, dilation, groups, a stride larger than the
 * kernel (output phases no tap reaches: bias only), channel-last views, long sums. */
static void test_conv_transpose2d(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    static const vk_conv_case cases[] = {
        CC("conv_transpose2d stride 2 pad 1 outpad 1 bias", 1, 2, 4, 5, 6, 3, 3, 3, 2, 2, 1, 1, 1,
           1, 1, 1, 1, 1, 0, -1, -1),
        CC("conv_transpose2d stride 2 dil 2 outpad 1 groups 2 nhwc", 1, 2, 4, 6, 5, 6, 3, 3, 2, 2,
           1, 0, 2, 2, 2, 1, 1, 1, 1, -1, -1),
        CC("conv_transpose2d stride(3,2) 2x1 kernel bias", 1, 1, 3, 4, 5, 2, 2, 1, 3, 2, 0, 0, 1, 1,
           1, 2, 1, 1, 0, -1, -1),
        CC("conv_transpose2d dil(1,3) pad(2,1) 3x3 groups 3", 1, 2, 6, 7, 6, 3, 3, 3, 1, 1, 2, 1, 1,
           3, 3, 0, 0, 0, 0, -1, -1),
        CC("conv_transpose2d depthwise 4x4 stride 2 pad 1", 1, 1, 5, 6, 6, 5, 4, 4, 2, 2, 1, 1, 1,
           1, 5, 0, 0, 1, 0, -1, -1),
        CC("conv_transpose2d C64 K32 4x4 stride 2 positive", 1, 1, 64, 10, 10, 32, 4, 4, 2, 2, 1, 1,
           1, 1, 1, 0, 0, 1, 0, 0, 0),
        CC("conv_transpose2d C256 K16 3x3 positive nhwc", 1, 1, 256, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1,
           1, 1, 0, 0, 1, 1, 0, 0),
    };
    run_conv_cases(cases, sizeof cases / sizeof cases[0]);
}

/* ---- images larger than one binding: pieces (vk_pieces.c) ------------------------------ */

/* A context whose bindings are capped at `cap` bytes ($LUMEN_VULKAN_MAX_BINDING is read when
 * the context is made), so that small images are split into images, planes and row bands. */
static lumen_context *capped_context(const char *cap)
{
    setenv("LUMEN_VULKAN_MAX_BINDING", cap, 1);
    lumen_context *ctx = context("vulkan:0", 0, 1);
    unsetenv("LUMEN_VULKAN_MAX_BINDING");
    return ctx;
}

enum { PN = 2, PC = 3, PH = 41, PW = 37 };

/* A 41x37 image of three channels, interleaved (one image) or planar (two), random data. */
static lumen_image pieces_image(lumen_dtype dt, bool planar, unsigned char **buf, uint64_t seed)
{
    const int64_t n = planar ? PN : 1, count = n * PC * PH * PW;
    *buf = malloc((size_t)count * lumen_dtype_size(dt));
    assert_non_null(*buf);
    uint64_t x = seed;
    for (int64_t i = 0; i < count; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const double v = (double)(x >> 40) / (double)(1ull << 24);
        if (dt == LUMEN_F32)
            ((float *)*buf)[i] = (float)(v * 2 - 0.5);
        else
            (*buf)[i] = (unsigned char)(v * 255);
    }
    return planar ? lumen_image_nchw(*buf, dt, n, PC, PH, PW)
                  : lumen_image_nhwc(*buf, dt, n, PH, PW, PC);
}

static void expect_close(const lumen_image *got, const lumen_image *want, double tol,
                         const char *what)
{
    const int64_t count = got->n * got->c * got->h * got->w;
    for (int64_t i = 0; i < count; i++) {
        const double g =
            got->dtype == LUMEN_F32 ? ((float *)got->data)[i] : ((unsigned char *)got->data)[i];
        const double w =
            want->dtype == LUMEN_F32 ? ((float *)want->data)[i] : ((unsigned char *)want->data)[i];
        if (!(fabs(g - w) <= tol))
            fail_msg("%s: element %lld is %g, the reference %g", what, (long long)i, g, w);
    }
}

/* The device's answer on a view too large for one binding against the CPU's scalar reference:
 * direct 5x5 with an off-centre anchor, separable 7x3, the FFT of the 5x5 kernel. `expect`: the
 * device run_info must name ("cpu" where no piece fits). */
static void run_pieces_case(lumen_context *ctx, lumen_context *ref, lumen_dtype dt, bool planar,
                            lumen_method method, lumen_border border, const char *expect)
{
    unsigned char *src, *got, *want;
    const lumen_image s = pieces_image(dt, planar, &src, 12345 + (uint64_t)border * 7 + method);
    const size_t bytes = (size_t)(s.n * PC * PH * PW) * lumen_dtype_size(dt);
    got = malloc(bytes), want = malloc(bytes);
    assert_true(got && want);
    lumen_image dg = s, dw = s;
    dg.data = got, dw.data = want;
    float k2[5 * 5], kx[7] = {0.1f, -0.2f, 0.3f, 0.4f, 0.3f, -0.2f, 0.1f},
                     ky[3] = {0.25f, 0.5f, 0.3f};
    for (int i = 0; i < 25; i++)
        k2[i] = (float)((i * 7) % 11) / 11.0f - 0.3f;
    lumen_filter_options o = lumen_filter_options_default();
    o.method = method, o.border = border, o.border_value = 0.75f, o.anchor_x = 1, o.anchor_y = 3;
    lumen_run_info info;
    if (method != LUMEN_METHOD_SEPARABLE) {
        assert_int_equal(lumen_filter2d(ctx, &s, &dg, k2, 5, 5, &o, &info), LUMEN_OK);
        o.method = LUMEN_METHOD_DIRECT; /* the reference of every method */
        assert_int_equal(lumen_filter2d(ref, &s, &dw, k2, 5, 5, &o, NULL), LUMEN_OK);
    } else {
        o.anchor_x = 5, o.anchor_y = 0;
        assert_int_equal(lumen_sep_filter2d(ctx, &s, &dg, kx, 7, ky, 3, &o, &info), LUMEN_OK);
        assert_int_equal(lumen_sep_filter2d(ref, &s, &dw, kx, 7, ky, 3, &o, NULL), LUMEN_OK);
    }
    char what[96];
    snprintf(what, sizeof what, "%s %s %s border %d", planar ? "planar" : "interleaved",
             lumen_dtype_name(dt), lumen_method_name(method), (int)border);
    if (strcmp(info.device, expect)) fail_msg("%s ran on %s, not %s", what, info.device, expect);
    expect_close(&dg, &dw, dt == LUMEN_F32 ? 1e-4 : 1.0, what);
    free(src), free(got), free(want);
}

/* 8 KiB bindings: an interleaved f32 image (18 KiB) runs in bands of all channels, or plane by
 * plane (staged compactly) with wrap, whose rows cannot be banded; planar u8 runs plane by
 * plane. 4 KiB: one f32 plane (6 KiB) no longer fits, so bands of single planes, and wrap
 * falls back to the CPU. Every border, direct, separable and FFT. */
static void test_pieces(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    lumen_context *ctx8 = capped_context("8192"), *ctx4 = capped_context("4096");
    lumen_context *ref = context("cpu", 0, 0);
    static const lumen_method methods[] = {LUMEN_METHOD_DIRECT, LUMEN_METHOD_SEPARABLE,
                                           LUMEN_METHOD_FFT};
    for (int b = 0; b <= LUMEN_BORDER_WRAP; b++)
        for (int m = 0; m < 3; m++) {
            const lumen_border border = (lumen_border)b;
            run_pieces_case(ctx8, ref, LUMEN_F32, false, methods[m], border, "vulkan:0");
            run_pieces_case(ctx8, ref, LUMEN_U8, true, methods[m], border, "vulkan:0");
            run_pieces_case(ctx4, ref, LUMEN_F32, false, methods[m], border,
                            border == LUMEN_BORDER_WRAP ? "cpu" : "vulkan:0");
        }
    lumen_context_destroy(ctx8);
    lumen_context_destroy(ctx4);
    lumen_context_destroy(ref);
}

/* The fast Gaussian on an image larger than a binding runs plane by plane (each line of the
 * recursion whole), with the answer of the CPU's portable path. */
static void test_pieces_gauss_fast(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    lumen_context *ctx = capped_context("8192"), *ref = context("cpu", 0, 0);
    for (int b = 0; b <= LUMEN_BORDER_WRAP; b++) {
        unsigned char *src, *got, *want;
        const lumen_image s = pieces_image(LUMEN_F32, false, &src, 777 + (uint64_t)b);
        const size_t bytes = (size_t)(PC * PH * PW) * sizeof(float);
        got = malloc(bytes), want = malloc(bytes);
        assert_true(got && want);
        lumen_image dg = s, dw = s;
        dg.data = got, dw.data = want;
        lumen_gaussian_options g = lumen_gaussian_options_default();
        g.sigma_x = 3.0, g.sigma_y = 2.5, g.border = (lumen_border)b, g.border_value = 0.5f;
        g.precision = LUMEN_PRECISION_FAST;
        lumen_run_info info;
        assert_int_equal(lumen_gaussian_blur_ex(ctx, &s, &dg, &g, &info), LUMEN_OK);
        assert_int_equal(lumen_gaussian_blur_ex(ref, &s, &dw, &g, NULL), LUMEN_OK);
        assert_string_equal(info.device, "vulkan:0");
        assert_string_equal(info.algo, "vulkan:gauss-deriche");
        expect_close(&dg, &dw, 1e-4 * 2.0, "gauss fast pieces"); /* range of the data: 2 */
        free(src), free(got), free(want);
    }
    lumen_context_destroy(ctx);
    lumen_context_destroy(ref);
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

/* ---- the FFT filter (src/backends/vulkan/fft.c, docs/vulkan-fft.md) ---------------------- */

#define FN 2
#define FC 3
#define FH 48
#define FW 64

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
    lumen_image s, d;
    device_pair(ctx, src, FN, FC, FH, FW, &s, &d);
    void *ddst = d.data;
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
    lumen_device_free(ctx, s.data);
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

/* The device's FFT against FFTW's (the CPU's FFT method) on the same call: two independent
 * transforms of the same overlap-save sums, 2 x 3 planes of 64x48 f32, kernels up to 31x31
 * (lengths 36 to 96), every border. Their difference is the two transforms' rounding: within
 * 1e-5 x sum|k| x max|x|, as each is of the direct sum. */
static void test_fft_against_fftw(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = FN * FC * FH * FW };
    float *src = malloc(COUNT * sizeof(float)), *vk = malloc(COUNT * sizeof(float)),
          *fftw = malloc(COUNT * sizeof(float)), k[31 * 31];
    assert_true(src && vk && fftw);
    ts_rng rng = ts_rng_make(23);
    for (int i = 0; i < COUNT; i++)
        src[i] = (float)ts_rng_uniform(&rng, -1.0, 1.0);
    lumen_context *dev = context("vulkan:0", 1, 1), *cpu = context("cpu", 1, 1);
    const lumen_image s = lumen_image_nchw(src, LUMEN_F32, FN, FC, FH, FW);
    lumen_image a = s, b = s;
    a.data = vk, b.data = fftw;
    static const int sizes[][2] = {{31, 31}, {21, 9}, {17, 25}};
    double worst = 0.0;
    for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++) {
        const int kw = sizes[q][0], kh = sizes[q][1];
        ts_random_kernel(k, kw * kh, 300 + q);
        const double scale = abs_sum(k, kw * kh) * 1.0;
        for (size_t bi = 0; bi < sizeof all_borders / sizeof all_borders[0]; bi++) {
            lumen_filter_options o = lumen_filter_options_default();
            o.border = all_borders[bi], o.border_value = 0.25f, o.method = LUMEN_METHOD_FFT;
            lumen_run_info iv, ic;
            assert_int_equal(lumen_filter2d(dev, &s, &a, k, kw, kh, &o, &iv), LUMEN_OK);
            assert_int_equal(lumen_filter2d(cpu, &s, &b, k, kw, kh, &o, &ic), LUMEN_OK);
            expect_fft_info(&iv);
            assert_string_equal(ic.device, "cpu");
            assert_int_equal(ic.method, LUMEN_METHOD_FFT);
            for (int i = 0; i < COUNT; i++) {
                const double e = fabs((double)vk[i] - (double)fftw[i]) / scale;
                if (!(e <= 1e-5))
                    fail_msg("%dx%d border %d: element %d: vulkan %.9g, FFTW %.9g", kw, kh,
                             (int)all_borders[bi], i, vk[i], fftw[i]);
                if (e > worst) worst = e;
            }
        }
    }
    print_message("fft vs FFTW: largest difference %.3g x sum|k| x max|x|\n", worst);
    lumen_context_destroy(dev);
    lumen_context_destroy(cpu);
    free(src), free(vk), free(fftw);
}

/* Tiles whose whole input window is zero (a film effect's highlights) skip their transforms
 * on the device and come out exactly zero; the others still agree with FFTW. */
static void test_fft_zero_windows(void **state)
{
    (void)state;
    REQUIRE_VULKAN();
    enum { COUNT = FN * FC * FH * FW };
    float *src = calloc(COUNT, sizeof(float)), *vk = malloc(COUNT * sizeof(float)),
          *fftw = malloc(COUNT * sizeof(float)), k[17 * 17];
    assert_true(src && vk && fftw);
    for (int y = 2; y < 7; y++) /* one bright patch in the corner of plane 0 */
        for (int x = 3; x < 8; x++)
            src[y * FW + x] = 1.0f;
    ts_random_kernel(k, 17 * 17, 77);
    lumen_context *dev = context("vulkan:0", 1, 1), *cpu = context("cpu", 1, 1);
    const lumen_image s = lumen_image_nchw(src, LUMEN_F32, FN, FC, FH, FW);
    lumen_image a = s, b = s;
    a.data = vk, b.data = fftw;
    lumen_filter_options o = lumen_filter_options_default();
    o.method = LUMEN_METHOD_FFT, o.border = LUMEN_BORDER_REFLECT101;
    lumen_run_info info;
    assert_int_equal(lumen_filter2d(dev, &s, &a, k, 17, 17, &o, &info), LUMEN_OK);
    expect_fft_info(&info);
    assert_int_equal(lumen_filter2d(cpu, &s, &b, k, 17, 17, &o, NULL), LUMEN_OK);
    const double scale = abs_sum(k, 17 * 17);
    for (int i = 0; i < COUNT; i++) {
        if (!(fabs((double)vk[i] - fftw[i]) <= 1e-5 * scale))
            fail_msg("element %d: vulkan %.9g, FFTW %.9g", i, vk[i], fftw[i]);
        if (i >= FH * FW) assert_true(vk[i] == 0.0f); /* planes without the patch */
    }
    lumen_context_destroy(dev);
    lumen_context_destroy(cpu);
    free(src), free(vk), free(fftw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_direct_device_views),
        cmocka_unit_test(test_direct_host_window),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_pieces_gauss_fast),
        cmocka_unit_test(test_conv2d),
        cmocka_unit_test(test_conv_transpose2d),
        cmocka_unit_test(test_gauss_fast_matches_cpu),
        cmocka_unit_test(test_gauss_fast_batch),
        cmocka_unit_test(test_gauss_fast_nan),
        cmocka_unit_test(test_fft_accuracy),
        cmocka_unit_test(test_fft_nonfinite_tiles),
        cmocka_unit_test(test_fft_integer),
        cmocka_unit_test(test_fft_separable_nhwc),
        cmocka_unit_test(test_fft_groups),
        cmocka_unit_test(test_fft_against_fftw),
        cmocka_unit_test(test_fft_zero_windows),
    };
    return cmocka_run_group_tests(tests, find_device, NULL);
}
