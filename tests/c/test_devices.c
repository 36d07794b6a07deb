/*
 * The device runtime, on machines without a GPU: a test double of a backend module (a
 * "software" device running only the direct filter on f32, tests/c/mock) is loaded through
 * $LUMEN_MODULE_PATH. Device list and specs, running on the device, fallback to the CPU for
 * what the device lacks (dtype, op, memory), strict mode, the memory cap, device-resident
 * views, and the environment variables; the same for NCHW conv (the mock runs conv2d but not
 * conv_transpose2d).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lumen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A halo (lumen_halo): modules are not asked for it (they write dst over src's shape), so the
 * mock's own op falls back to the CPU, and strict mode refuses it; the result is the region of
 * the whole image's. */
static void test_halo_falls_back(void **state)
{
    (void)state;
    float src[H * W], whole[H * W], got[(H - 5) * (W - 3)];
    fill(src, H * W);
    expected(LUMEN_F32, src, whole);
    lumen_context *ctx = context_on("mock", 0);
    lumen_image s = lumen_image_nhwc(src, LUMEN_F32, 1, H, W, 1);
    lumen_image d = lumen_image_nhwc(got, LUMEN_F32, 1, H - 5, W - 3, 1);
    lumen_filter_options o = lumen_filter_options_default();
    o.border = LUMEN_BORDER_REFLECT101, o.method = LUMEN_METHOD_DIRECT;
    o.halo = (lumen_halo){.top = 2, .bottom = 3, .left = 3, .right = 0};
    lumen_run_info info;
    assert_int_equal(lumen_filter2d(ctx, &s, &d, k5, 5, 5, &o, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    for (int y = 0; y < H - 5; y++)
        for (int x = 0; x < W - 3; x++)
            assert_true(got[y * (W - 3) + x] == whole[(y + 2) * W + x + 3]);
    assert_int_equal(lumen_context_set_strict(ctx, 1), LUMEN_OK);
    assert_int_equal(lumen_filter2d(ctx, &s, &d, k5, 5, 5, &o, &info), LUMEN_ERR_UNSUPPORTED);
    assert_non_null(strstr(lumen_last_error(), "halo"));
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


/* ---- NCHW conv ------------------------------------------------------------ */

/* x (2, 4, 9, 11) * w (6, 2, 3, 3), groups 2, stride (2, 1), pad (1, 2), dilation (1, 2), bias;
 * the transposed op takes x (2, 4, 9, 11) and w (4, 3, 3, 3): y (2, 6, 19, 15). */
#define CN 2
#define CC 4
#define CH 9
#define CW 11
#define CK 6
#define CONV_W_ELEMS (6 * 2 * 3 * 3)
#define CONV_Y_MAX (CN * CK * 19 * 15)

typedef struct conv_case {
    float x[CN * CC * CH * CW], w[CONV_W_ELEMS], bias[CK];
    float y[CONV_Y_MAX], want[CONV_Y_MAX];
    lumen_conv2d_params p;
    int transposed;
    int64_t oh, ow, y_elems;
} conv_case;

static void conv_case_init(conv_case *cc, int transposed)
{
    memset(cc, 0, sizeof *cc);
    fill(cc->x, CN * CC * CH * CW);
    fill(cc->w, CONV_W_ELEMS);
    for (int i = 0; i < CK; i++) cc->bias[i] = 0.25f * (float)i - 0.5f;
    cc->transposed = transposed;
    cc->p = lumen_conv2d_params_default();
    cc->p.groups = 2;
    cc->p.stride_h = 2, cc->p.pad_h = 1, cc->p.pad_w = 2, cc->p.dilation_w = 2;
    if (transposed) cc->p.output_pad_h = 1;
    lumen_image x = lumen_image_nchw(cc->x, LUMEN_F32, CN, CC, CH, CW);
    lumen_image w = transposed ? lumen_image_nchw(cc->w, LUMEN_F32, CC, CK / 2, 3, 3)
                               : lumen_image_nchw(cc->w, LUMEN_F32, CK, CC / 2, 3, 3);
    lumen_status s = transposed ? lumen_conv_transpose2d_output_size(&x, &w, &cc->p, &cc->oh, &cc->ow)
                                : lumen_conv2d_output_size(&x, &w, &cc->p, &cc->oh, &cc->ow);
    assert_int_equal(s, LUMEN_OK);
    cc->y_elems = CN * CK * cc->oh * cc->ow;
    assert_true(cc->y_elems <= CONV_Y_MAX);
}

/* Runs the case on ctx with x, w and y at the given addresses, on `device` (0: host). */
static lumen_status conv_run(lumen_context *ctx, const conv_case *cc, void *x, void *w, void *y,
                             int xdev, int wdev, int ydev, lumen_run_info *info)
{
    lumen_image xv = lumen_image_nchw(x, LUMEN_F32, CN, CC, CH, CW);
    lumen_image wv = cc->transposed ? lumen_image_nchw(w, LUMEN_F32, CC, CK / 2, 3, 3)
                                    : lumen_image_nchw(w, LUMEN_F32, CK, CC / 2, 3, 3);
    lumen_image yv = lumen_image_nchw(y, LUMEN_F32, CN, CK, cc->oh, cc->ow);
    xv.device = xdev, wv.device = wdev, yv.device = ydev;
    return cc->transposed ? lumen_conv_transpose2d(ctx, &xv, &wv, cc->bias, &cc->p, &yv, info)
                          : lumen_conv2d(ctx, &xv, &wv, cc->bias, &cc->p, &yv, info);
}

/* want = the CPU's scalar reference. */
static void conv_expected(conv_case *cc)
{
    lumen_context *cpu = context_on("cpu", 0);
    assert_int_equal(lumen_context_set_simd(cpu, 0), LUMEN_OK);
    assert_int_equal(conv_run(cpu, cc, cc->x, cc->w, cc->want, 0, 0, 0, NULL), LUMEN_OK);
    lumen_context_destroy(cpu);
}

static void assert_conv_close(const float *got, const conv_case *cc)
{
    for (int64_t i = 0; i < cc->y_elems; i++)
        if (fabsf(got[i] - cc->want[i]) > 1e-5f * (1.0f + fabsf(cc->want[i])))
            fail_msg("y[%lld]: %g, want %g", (long long)i, (double)got[i], (double)cc->want[i]);
}

/* Runs fn(arg) with stderr in a temporary file; returns its "lumen warn:" lines, the first one
 * copied to line. */
static int warnings_during(lumen_status (*fn)(void *), void *arg, lumen_status *status, char *line,
                           size_t len)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(fileno(stderr));
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), fileno(stderr)) >= 0);
    *status = fn(arg);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    rewind(tmp);
    char buf[512];
    int n = 0;
    line[0] = '\0';
    while (fgets(buf, sizeof buf, tmp))
        if (!strncmp(buf, "lumen warn:", 11) && n++ == 0) snprintf(line, len, "%s", buf);
    fclose(tmp);
    return n;
}

typedef struct conv_call {
    lumen_context *ctx;
    conv_case *cc;
    lumen_run_info info;
} conv_call;

static lumen_status conv_call_host(void *arg)
{
    conv_call *c = arg;
    return conv_run(c->ctx, c->cc, c->cc->x, c->cc->w, c->cc->y, 0, 0, 0, &c->info);
}

static void test_conv_on_the_device(void **state)
{
    (void)state;
    static conv_case cc;
    conv_case_init(&cc, 0);
    conv_expected(&cc);
    conv_call call = {context_on("mock", 1), &cc, {0}};
    lumen_status s;
    char line[512];
    assert_int_equal(warnings_during(conv_call_host, &call, &s, line, sizeof line), 0);
    assert_int_equal(s, LUMEN_OK);
    assert_string_equal(call.info.device, "mock:0");
    assert_string_equal(call.info.algo, "mock:direct");
    assert_string_equal(call.info.isa, "mock");
    assert_conv_close(cc.y, &cc);
    lumen_context_destroy(call.ctx);
}

/* Prepacked weights on a device context: the mock runs conv2d on the handle's original w (the
 * CPU's pack is not its business), strict mode (no fallback) and all; a CPU context runs the
 * same handle with the pack. */
static void test_conv_packed_on_the_device(void **state)
{
    (void)state;
    static conv_case cc;
    conv_case_init(&cc, 0);
    conv_expected(&cc);
    lumen_context *mock = context_on("mock", 1), *cpu = context_on("cpu", 1);
    const int64_t xs[4] = {CN, CC, CH, CW};
    lumen_image x = lumen_image_nchw(cc.x, LUMEN_F32, CN, CC, CH, CW);
    lumen_image w = lumen_image_nchw(cc.w, LUMEN_F32, CK, CC / 2, 3, 3);
    lumen_image y = lumen_image_nchw(cc.y, LUMEN_F32, CN, CK, cc.oh, cc.ow);
    lumen_conv2d_weights *wp = NULL;
    assert_int_equal(lumen_conv2d_weights_pack(mock, xs, &w, &cc.p, &wp), LUMEN_OK);
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d_packed(mock, &x, wp, cc.bias, NULL, &y, &info), LUMEN_OK);
    assert_string_equal(info.device, "mock:0");
    assert_string_equal(info.algo, "mock:direct");
    assert_conv_close(cc.y, &cc);
    memset(cc.y, 0, sizeof cc.y);
    assert_int_equal(lumen_conv2d_packed(cpu, &x, wp, cc.bias, &cc.p, &y, &info), LUMEN_OK);
    assert_string_equal(info.device, "cpu");
    assert_conv_close(cc.y, &cc);
    lumen_conv2d_weights_free(wp);
    lumen_context_destroy(mock), lumen_context_destroy(cpu);
}

/* The mock has no conv_transpose2d: the CPU runs it with one warning; strict mode refuses and
 * leaves y untouched. */
static void test_conv_transposed_falls_back(void **state)
{
    (void)state;
    static conv_case cc;
    conv_case_init(&cc, 1);
    conv_expected(&cc);
    conv_call call = {context_on("mock", 0), &cc, {0}};
    lumen_status s;
    char line[512];
    assert_int_equal(warnings_during(conv_call_host, &call, &s, line, sizeof line), 1);
    assert_int_equal(s, LUMEN_OK);
    assert_non_null(strstr(line, "conv_transpose2d on mock:0"));
    assert_non_null(strstr(line, "running it on the CPU"));
    assert_string_equal(call.info.device, "cpu");
    assert_conv_close(cc.y, &cc);

    assert_int_equal(lumen_context_set_strict(call.ctx, 1), LUMEN_OK);
    for (int64_t i = 0; i < cc.y_elems; i++) cc.y[i] = 7.0f;
    assert_int_equal(warnings_during(conv_call_host, &call, &s, line, sizeof line), 0);
    assert_int_equal(s, LUMEN_ERR_UNSUPPORTED);
    assert_non_null(strstr(lumen_last_error(), "mock:0"));
    assert_non_null(strstr(lumen_last_error(), "strict"));
    for (int64_t i = 0; i < cc.y_elems; i++) assert_true(cc.y[i] == 7.0f);
    lumen_context_destroy(call.ctx);
}

/* A memory cap below the conv's needs: the CPU runs it with one warning; strict: an error. */
static void test_conv_memory_cap(void **state)
{
    (void)state;
    static conv_case cc;
    conv_case_init(&cc, 0);
    conv_expected(&cc);
    conv_call call = {context_on("mock", 0), &cc, {0}};
    assert_int_equal(lumen_context_set_memory_limit(call.ctx, 256), LUMEN_OK);
    lumen_status s;
    char line[512];
    assert_int_equal(warnings_during(conv_call_host, &call, &s, line, sizeof line), 1);
    assert_int_equal(s, LUMEN_OK);
    assert_non_null(strstr(line, "memory limit"));
    assert_string_equal(call.info.device, "cpu");
    assert_conv_close(cc.y, &cc);
    assert_int_equal(lumen_context_set_strict(call.ctx, 1), LUMEN_OK);
    assert_int_equal(conv_call_host(&call), LUMEN_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(lumen_last_error(), "memory limit"));
    assert_int_equal(lumen_context_set_memory_limit(call.ctx, 0), LUMEN_OK);
    assert_int_equal(conv_call_host(&call), LUMEN_OK);
    assert_string_equal(call.info.device, "mock:0");
    lumen_context_destroy(call.ctx);
}

/* x, w and y in device memory: conv2d runs in place on the mock; conv_transpose2d is staged
 * through the host for the CPU (all three views, in any mix with host views). */
static void test_conv_device_resident_views(void **state)
{
    (void)state;
    static conv_case cc;
    for (int transposed = 0; transposed < 2; transposed++)
        for (int mix = 0; mix < 2; mix++) { /* mix: x stays in host memory */
            conv_case_init(&cc, transposed);
            conv_expected(&cc);
            lumen_context *ctx = context_on("mock", 0);
            void *dx, *dw, *dy;
            assert_int_equal(lumen_device_alloc(ctx, sizeof cc.x, &dx), LUMEN_OK);
            assert_int_equal(lumen_device_alloc(ctx, sizeof cc.w, &dw), LUMEN_OK);
            assert_int_equal(lumen_device_alloc(ctx, sizeof cc.y, &dy), LUMEN_OK);
            assert_int_equal(lumen_device_upload(ctx, dx, cc.x, sizeof cc.x), LUMEN_OK);
            assert_int_equal(lumen_device_upload(ctx, dw, cc.w, sizeof cc.w), LUMEN_OK);
            lumen_run_info info;
            assert_int_equal(conv_run(ctx, &cc, mix ? (void *)cc.x : dx, dw, dy, mix ? 0 : 1, 1, 1,
                                      &info),
                             LUMEN_OK);
            assert_string_equal(info.device, transposed ? "cpu" : "mock:0");
            assert_int_equal(lumen_context_synchronize(ctx), LUMEN_OK);
            assert_int_equal(lumen_device_download(ctx, cc.y, dy, sizeof cc.y), LUMEN_OK);
            assert_conv_close(cc.y, &cc);
            lumen_device_free(ctx, dx);
            lumen_device_free(ctx, dw);
            lumen_device_free(ctx, dy);
            lumen_context_destroy(ctx);
        }
    /* a device view on a CPU context is refused, naming the view and the device */
    conv_case_init(&cc, 0);
    lumen_context *cpu = context_on("cpu", 0);
    assert_int_equal(conv_run(cpu, &cc, cc.x, cc.w, cc.y, 0, 1, 0, NULL), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "w: lives on device 1 (mock:0)"));
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
        cmocka_unit_test(test_halo_falls_back),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_device_resident_views),
        cmocka_unit_test(test_view_on_another_device),
        cmocka_unit_test(test_conv_on_the_device),
        cmocka_unit_test(test_conv_packed_on_the_device),
        cmocka_unit_test(test_conv_transposed_falls_back),
        cmocka_unit_test(test_conv_memory_cap),
        cmocka_unit_test(test_conv_device_resident_views),
        cmocka_unit_test(test_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
