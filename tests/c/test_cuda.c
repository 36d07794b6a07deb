/*
 * The CUDA backend against the CPU scalar reference, on every CUDA device: op x border x
 * dtype x layout, with host views (staged through pinned memory) and device-resident views
 * (lumen_device_alloc + lumen_device_upload). Contexts are strict, so a silent fallback to
 * the CPU fails the test instead of passing it.
 *
 * Tolerances are the suite's one table (test_support.h, ts_compare): f32 within
 * 1e-5 * sum|k| * range, u8/u16 equal to the rounded reference except one unit at .5 ties.
 * The fast Gaussian is held to its own contract (docs/gaussian-fast.md, test_gaussian_fast.c):
 * within 1e-3 of the range of the exact blur with OpenCV's round(8 sigma + 1) | 1 taps (plus
 * one unit for integer dsts).
 *
 * NCHW conv2d and conv_transpose2d (conv.cu) are checked against the CPU scalar reference
 * over a grid of shapes, on both CUDA paths: cuDNN ($LUMEN_CUDA_CONV=cudnn) and lumen's own
 * kernel ($LUMEN_CUDA_CONV=own), with host, device-resident and channels-last views.
 *
 * Without a CUDA device every test prints "no CUDA device: skipped" and skips.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 16
#define MSG_LEN 1024
#define GF_TOL 1e-3

/* Global device indices of the CUDA devices. */
static int cuda_devices[MAX_DEVICES];
static int n_cuda;

static int find_devices(void **state)
{
    (void)state;
    n_cuda = 0;
    for (int i = 0; i < lumen_device_count() && n_cuda < MAX_DEVICES; i++) {
        lumen_device_info info;
        if (lumen_device_get_info(i, &info) == LUMEN_OK && !strcmp(info.backend, "cuda")) {
            print_message("cuda:%d = device %d: %s (compute capability %s, %.1f GiB)\n", n_cuda, i,
                          info.name, info.compute_capability,
                          (double)info.memory_total / (1u << 30));
            cuda_devices[n_cuda++] = i;
        }
    }
    return 0;
}

#define REQUIRE_CUDA()                                                                             \
    do {                                                                                           \
        if (n_cuda == 0) {                                                                         \
            print_message("no CUDA device: skipped\n");                                            \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A strict context on cuda:k. */
static lumen_context *cuda_context(int k)
{
    lumen_context *ctx = NULL;
    char spec[32];
    snprintf(spec, sizeof spec, "cuda:%d", k);
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    if (lumen_context_set_device(ctx, spec) != LUMEN_OK)
        fail_msg("set_device(%s): %s", spec, lumen_last_error());
    assert_int_equal(lumen_context_device(ctx), cuda_devices[k]);
    assert_int_equal(lumen_context_set_strict(ctx, 1), LUMEN_OK);
    return ctx;
}

/* The scalar reference on the CPU (whatever $LUMEN_DEVICE says). */
static lumen_context *reference_context(void)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_device(ctx, "cpu"), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ctx, 0), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, 2), LUMEN_OK);
    return ctx;
}

/* ---- one case ------------------------------------------------------------ */

typedef struct cu_case {
    ts_op op;
    bool fast;  /* Gaussian with precision FAST (op.sigma_*) */
    ts_layout src_layout, dst_layout;
    lumen_dtype src_dtype, dst_dtype;
    int64_t n, c, h, w;
    uint64_t seed;
    bool device_views; /* src and dst in device memory */
    lumen_method want_method; /* AUTO: not checked */
    double nan_at;     /* > 0: f32 src element (0, 0, h/2, w/2) is set to NaN */
} cu_case;

static const char *describe(const cu_case *cs, int k, char *buf, size_t len)
{
    char o[256];
    snprintf(buf, len, "[cuda:%d %s%s | %s->%s %s->%s n=%lld c=%lld h=%lld w=%lld seed=%llu | %s views]",
             k, ts_op_describe(&cs->op, o, sizeof o), cs->fast ? " precision=fast" : "",
             lumen_dtype_name(cs->src_dtype), lumen_dtype_name(cs->dst_dtype),
             ts_layout_name(cs->src_layout), ts_layout_name(cs->dst_layout), (long long)cs->n,
             (long long)cs->c, (long long)cs->h, (long long)cs->w, (unsigned long long)cs->seed,
             cs->device_views ? "device" : "host");
    return buf;
}

static lumen_status run_op(lumen_context *ctx, const cu_case *cs, const lumen_image *src,
                           const lumen_image *dst, lumen_run_info *info, bool exact_gaussian)
{
    if (!cs->fast) return ts_op_run(ctx, &cs->op, src, dst, info);
    lumen_gaussian_options g = lumen_gaussian_options_default();
    g.sigma_x = cs->op.sigma_x, g.sigma_y = cs->op.sigma_y;
    g.border = cs->op.opt.border, g.border_value = cs->op.opt.border_value;
    if (exact_gaussian) { /* the fast Gaussian's yardstick: round(8 sigma + 1) | 1 taps */
        const double sy = g.sigma_y > 0 ? g.sigma_y : g.sigma_x;
        g.ksize_x = lumen_gaussian_ksize(g.sigma_x, LUMEN_F32);
        g.ksize_y = lumen_gaussian_ksize(sy, LUMEN_F32);
    } else {
        g.precision = LUMEN_PRECISION_FAST;
    }
    return lumen_gaussian_blur_ex(ctx, src, dst, &g, info);
}

/* A copy of im's whole buffer (guards included) in device memory; *view points into it. */
static void *to_device(lumen_context *ctx, const ts_image *im, lumen_image *view, int device)
{
    const size_t bytes = im->elems * im->es;
    void *d = NULL;
    if (lumen_device_alloc(ctx, bytes, &d) != LUMEN_OK)
        fail_msg("device_alloc(%zu): %s", bytes, lumen_last_error());
    if (lumen_device_upload(ctx, d, im->buf, bytes) != LUMEN_OK)
        fail_msg("device_upload: %s", lumen_last_error());
    *view = im->v;
    view->data = (char *)d + ((char *)im->v.data - (char *)im->buf);
    view->device = device;
    return d;
}

/* |got - want| <= bound (+1 for integer dsts) element by element; the fast Gaussian's rule. */
static int64_t compare_bound(const lumen_image *got, const lumen_image *exact, double bound,
                             char *msg, size_t len)
{
    int64_t bad = 0;
    const double slack = got->dtype == LUMEN_F32 ? 0.0 : 1.0;
    for (int64_t b = 0; b < got->n; b++)
        for (int64_t c = 0; c < got->c; c++)
            for (int64_t y = 0; y < got->h; y++)
                for (int64_t x = 0; x < got->w; x++) {
                    const double g = ts_get(got, b, c, y, x), e = ts_get(exact, b, c, y, x);
                    const double hi = got->dtype == LUMEN_U8 ? 255.0 : 65535.0;
                    const double want = got->dtype == LUMEN_F32 ? e : fmin(fmax(e, 0.0), hi);
                    if (fabs(g - want) <= bound + slack) continue;
                    if (bad++ == 0)
                        snprintf(msg, len, "(b=%lld c=%lld y=%lld x=%lld) got %.9g, exact %.9g, bound %.3g",
                                 (long long)b, (long long)c, (long long)y, (long long)x, g, e,
                                 bound + slack);
                }
    return bad;
}

/* max - min of the source values (and the constant border's value). */
static double value_span(const lumen_image *im, const ts_op *op)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++) {
                    const double v = ts_get(im, b, c, y, x);
                    if (isfinite(v)) lo = fmin(lo, v), hi = fmax(hi, v);
                }
    if (op->opt.border == LUMEN_BORDER_CONSTANT)
        lo = fmin(lo, op->opt.border_value), hi = fmax(hi, op->opt.border_value);
    return hi - lo;
}

static void check_case(int k, const cu_case *cs)
{
    char label[768], msg[MSG_LEN];
    describe(cs, k, label, sizeof label);
    ts_image src, want, exact, got;
    memset(&exact, 0, sizeof exact);
    ts_image_alloc(&src, cs->src_layout, cs->src_dtype, cs->n, cs->c, cs->h, cs->w);
    ts_image_fill_random(&src, cs->seed);
    if (cs->nan_at > 0 && cs->src_dtype == LUMEN_F32) ts_set(&src.v, 0, 0, cs->h / 2, cs->w / 2, NAN);
    const size_t src_bytes = src.elems * src.es;
    unsigned char *src_copy = malloc(src_bytes);
    assert_non_null(src_copy);
    memcpy(src_copy, src.buf, src_bytes);

    /* the reference: into dst's layout, and unrounded into f32 for integer dsts (and for the
     * fast Gaussian, the exact blur it is measured against) */
    lumen_context *ref = reference_context();
    ts_image_alloc(&want, cs->dst_layout, cs->dst_dtype, cs->n, cs->c, cs->h, cs->w);
    ts_image_fill_bytes(&want, 0x5A);
    lumen_status s = run_op(ref, cs, &src.v, &want.v, NULL, true);
    if (s != LUMEN_OK) fail_msg("%s: reference: status %d (%s)", label, (int)s, lumen_last_error());
    if (cs->dst_dtype != LUMEN_F32 || cs->fast) {
        ts_image_alloc(&exact, TS_PLANAR, LUMEN_F32, cs->n, cs->c, cs->h, cs->w);
        s = run_op(ref, cs, &src.v, &exact.v, NULL, true);
        if (s != LUMEN_OK) fail_msg("%s: reference (f32): status %d (%s)", label, (int)s, lumen_last_error());
    }
    lumen_context_destroy(ref);

    /* the device */
    lumen_context *ctx = cuda_context(k);
    ts_image_alloc(&got, cs->dst_layout, cs->dst_dtype, cs->n, cs->c, cs->h, cs->w);
    ts_image_fill_bytes(&got, 0x3C);
    lumen_image sv = src.v, dv = got.v;
    void *dsrc = NULL, *ddst = NULL;
    if (cs->device_views) {
        dsrc = to_device(ctx, &src, &sv, cuda_devices[k]);
        ddst = to_device(ctx, &got, &dv, cuda_devices[k]);
    }
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    s = run_op(ctx, cs, &sv, &dv, &info, false);
    if (s != LUMEN_OK) fail_msg("%s: status %d (%s)", label, (int)s, lumen_last_error());
    if (cs->device_views) {
        if (lumen_device_download(ctx, got.buf, ddst, got.elems * got.es) != LUMEN_OK)
            fail_msg("%s: device_download: %s", label, lumen_last_error());
        lumen_device_free(ctx, dsrc);
        lumen_device_free(ctx, ddst);
    }
    assert_int_equal(lumen_context_synchronize(ctx), LUMEN_OK);
    lumen_context_destroy(ctx);

    if (!info.device || strncmp(info.device, "cuda", 4))
        fail_msg("%s: run_info.device = %s, want cuda", label, info.device ? info.device : "(null)");
    if (cs->want_method != LUMEN_METHOD_AUTO && info.method != cs->want_method)
        fail_msg("%s: ran %s, asked for %s", label, lumen_method_name(info.method),
                 lumen_method_name(cs->want_method));
    if (!ts_guards_intact(&got, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
    int64_t bad;
    if (cs->fast) {
        bad = compare_bound(&got.v, &exact.v, GF_TOL * value_span(&src.v, &cs->op), msg, sizeof msg);
    } else {
        double range = ts_absmax(&src.v);
        if (cs->op.opt.border == LUMEN_BORDER_CONSTANT && fabs(cs->op.opt.border_value) > range)
            range = fabs(cs->op.opt.border_value);
        const double tol = ts_f32_tol(ts_op_ksum(&cs->op, cs->src_dtype), range);
        bad = ts_compare(&got.v, &want.v, cs->dst_dtype == LUMEN_F32 ? NULL : &exact.v, tol, msg,
                         sizeof msg);
    }
    if (bad) fail_msg("%s: cuda vs reference: %s", label, msg);
    if (memcmp(src_copy, src.buf, src_bytes)) fail_msg("%s: the source was written", label);

    free(src_copy);
    ts_image_free(&src), ts_image_free(&want), ts_image_free(&got);
    if (exact.buf) ts_image_free(&exact);
}

/* ---- the op table -------------------------------------------------------- */

static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};

static const lumen_dtype dtype_pairs[][2] = {
    {LUMEN_U8, LUMEN_U8},  {LUMEN_U16, LUMEN_U16}, {LUMEN_F32, LUMEN_F32},
    {LUMEN_U8, LUMEN_F32}, {LUMEN_F32, LUMEN_U8},  {LUMEN_U16, LUMEN_F32},
};

/* Image sizes, rotated: odd sizes (partial tiles), several tiles, a wide short one. */
static const int64_t sizes[][2] = {{37, 53}, {70, 97}, {9, 140}, {130, 33}};

static float border_value(lumen_dtype t)
{
    return t == LUMEN_F32 ? -37.5f : t == LUMEN_U8 ? 201.0f : 40000.0f;
}

/* Kernels of the table (filled once). */
static float k3[3 * 3], k54[5 * 4], k15[15 * 15], k41x37[41 * 37], k1x9[9], k11x1[11], k31[31 * 31],
    k21x9[21 * 9], k7[7 * 7], kx7[7], ky5[5], kx25[25], ky19[19];

static void fill_kernels(void)
{
    ts_random_kernel(k3, 9, 1);
    ts_random_kernel(k54, 20, 2);
    ts_random_kernel(k15, 225, 3);
    ts_random_kernel(k41x37, 41 * 37, 4);
    ts_random_kernel(k1x9, 9, 5);
    ts_random_kernel(k11x1, 11, 6);
    ts_random_kernel(k31, 31 * 31, 7);
    ts_random_kernel(k21x9, 21 * 9, 8);
    ts_random_kernel(k7, 49, 9);
    ts_random_kernel(kx7, 7, 10);
    ts_random_kernel(ky5, 5, 11);
    ts_random_kernel(kx25, 25, 12);
    ts_random_kernel(ky19, 19, 13);
}

typedef struct table_op {
    const char *name;
    ts_op op;
    bool fast;
    lumen_method want; /* the method info must report (AUTO: any) */
} table_op;

#define N_TABLE_OPS 18

static void table(table_op *t)
{
    fill_kernels();
    int i = 0;
#define ADD(nm, o, f, m) t[i].name = nm, t[i].op = o, t[i].fast = f, t[i].want = m, i++
    ts_op o;
    o = ts_op_filter2d(k3, 3, 3), o.opt.method = LUMEN_METHOD_DIRECT;
    ADD("filter2d 3x3 direct", o, false, LUMEN_METHOD_DIRECT);
    o = ts_op_filter2d(k54, 5, 4), o.opt.method = LUMEN_METHOD_DIRECT, o.opt.anchor_x = 0,
    o.opt.anchor_y = 3, o.opt.convolve = 1;
    ADD("filter2d 5x4 direct, anchor (0,3), convolve", o, false, LUMEN_METHOD_DIRECT);
    o = ts_op_filter2d(k15, 15, 15), o.opt.method = LUMEN_METHOD_DIRECT;
    ADD("filter2d 15x15 direct", o, false, LUMEN_METHOD_DIRECT);
    o = ts_op_filter2d(k41x37, 41, 37), o.opt.method = LUMEN_METHOD_DIRECT, o.opt.anchor_x = 40;
    ADD("filter2d 41x37 direct (chunked), anchor (40,-1)", o, false, LUMEN_METHOD_DIRECT);
    o = ts_op_filter2d(k1x9, 1, 9), o.opt.method = LUMEN_METHOD_DIRECT;
    ADD("filter2d 1x9 direct", o, false, LUMEN_METHOD_DIRECT);
    o = ts_op_filter2d(k11x1, 11, 1), o.opt.method = LUMEN_METHOD_DIRECT, o.opt.anchor_x = 2;
    ADD("filter2d 11x1 direct", o, false, LUMEN_METHOD_DIRECT);
    o = ts_op_filter2d(k31, 31, 31), o.opt.method = LUMEN_METHOD_FFT;
    ADD("filter2d 31x31 fft", o, false, LUMEN_METHOD_FFT);
    o = ts_op_filter2d(k21x9, 21, 9), o.opt.method = LUMEN_METHOD_FFT, o.opt.anchor_x = 2,
    o.opt.anchor_y = 7, o.opt.convolve = 1;
    ADD("filter2d 21x9 fft, anchor (2,7), convolve", o, false, LUMEN_METHOD_FFT);
    o = ts_op_filter2d(k7, 7, 7);
    ADD("filter2d 7x7 auto", o, false, LUMEN_METHOD_AUTO);
    o = ts_op_sep(kx7, 7, ky5, 5), o.opt.method = LUMEN_METHOD_SEPARABLE, o.opt.anchor_y = 0;
    ADD("sep 7x5 separable", o, false, LUMEN_METHOD_SEPARABLE);
    o = ts_op_sep(kx25, 25, ky19, 19), o.opt.method = LUMEN_METHOD_FFT;
    ADD("sep 25x19 fft", o, false, LUMEN_METHOD_FFT);
    o = ts_op_gaussian(0, 0, 1.5, 0.0);
    ADD("gaussian sigma 1.5", o, false, LUMEN_METHOD_AUTO);
    o = ts_op_gaussian(31, 21, 5.0, 3.5), o.opt.method = LUMEN_METHOD_FFT;
    ADD("gaussian 31x21 fft", o, false, LUMEN_METHOD_FFT);
    o = ts_op_gaussian(0, 0, 3.0, 0.0), o.opt.method = LUMEN_METHOD_SEPARABLE;
    ADD("gaussian sigma 3 separable", o, false, LUMEN_METHOD_SEPARABLE);
    o = ts_op_gaussian(0, 0, 3.0, 0.0);
    ADD("gaussian fast sigma 3", o, true, LUMEN_METHOD_AUTO);
    o = ts_op_gaussian(0, 0, 1.2, 4.5);
    ADD("gaussian fast sigma (1.2, 4.5)", o, true, LUMEN_METHOD_AUTO);
    o = ts_op_box(5, 5, 1);
    ADD("box 5x5", o, false, LUMEN_METHOD_SEPARABLE);
    o = ts_op_box(3, 7, 0);
    ADD("box 3x7 unnormalized", o, false, LUMEN_METHOD_SEPARABLE);
#undef ADD
    assert_int_equal(i, N_TABLE_OPS);
}

/* Every border x dtype pair for one op of the table; layouts, sizes and host/device views
 * rotate. */
static void test_op_matrix(void **state)
{
    REQUIRE_CUDA();
    const int which = (int)(intptr_t)*state;
    table_op t[N_TABLE_OPS];
    table(t);
    print_message("%s\n", t[which].name);
    for (int k = 0; k < n_cuda; k++) {
        int idx = 0;
        for (int b = 0; b < TS_COUNT(borders); b++)
            for (int d = 0; d < TS_COUNT(dtype_pairs); d++, idx++) {
                cu_case cs;
                memset(&cs, 0, sizeof cs);
                cs.op = ts_with_border(t[which].op, borders[b], border_value(dtype_pairs[d][0]));
                cs.fast = t[which].fast;
                cs.src_layout = cs.dst_layout = (ts_layout)((idx + which) % TS_LAYOUT_COUNT);
                ts_layout_shape(cs.src_layout, &cs.n, &cs.c);
                cs.src_dtype = dtype_pairs[d][0], cs.dst_dtype = dtype_pairs[d][1];
                cs.h = sizes[(idx + b) % TS_COUNT(sizes)][0];
                cs.w = sizes[(idx + b) % TS_COUNT(sizes)][1];
                cs.seed = 1000 * (uint64_t)which + idx;
                cs.device_views = (idx + which) % 2;
                cs.want_method = t[which].want;
                check_case(k, &cs);
            }
    }
}

/* Every pair of src and dst layouts (n = 2, c = 3), host and device views. */
static void test_layout_pairs(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    float k[5 * 5];
    ts_random_kernel(k, 25, 77);
    for (int kk = 0; kk < n_cuda; kk++) {
        int idx = 0;
        for (int ls = 0; ls < TS_LAYOUT_COUNT; ls++)
            for (int ld = 0; ld < TS_LAYOUT_COUNT; ld++, idx++) {
                cu_case cs;
                memset(&cs, 0, sizeof cs);
                cs.op = ts_with_border(ts_op_filter2d(k, 5, 5), borders[idx % 5], 9.0f);
                cs.op.opt.method = idx % 3 == 2 ? LUMEN_METHOD_FFT : LUMEN_METHOD_DIRECT;
                cs.want_method = cs.op.opt.method;
                cs.src_layout = (ts_layout)ls, cs.dst_layout = (ts_layout)ld;
                cs.src_dtype = LUMEN_U8, cs.dst_dtype = idx % 2 ? LUMEN_F32 : LUMEN_U8;
                cs.n = 2, cs.c = 3, cs.h = 19, cs.w = 35;
                cs.seed = idx;
                cs.device_views = (idx / 2) % 2;
                check_case(kk, &cs);
            }
    }
}

/* Kernels larger than the image (1 x 8 and 8 x 3 images, 31-tap kernels): exact borders. */
static void test_kernel_larger_than_image(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    float k2[31 * 31], kx[31], ky[17];
    ts_random_kernel(k2, 31 * 31, 91);
    ts_random_kernel(kx, 31, 92);
    ts_random_kernel(ky, 17, 93);
    static const int64_t shapes[][2] = {{1, 8}, {8, 3}, {1, 1}};
    for (int kk = 0; kk < n_cuda; kk++) {
        int idx = 0;
        for (int s = 0; s < TS_COUNT(shapes); s++)
            for (int b = 0; b < TS_COUNT(borders); b++)
                for (int m = 0; m < 3; m++, idx++) {
                    cu_case cs;
                    memset(&cs, 0, sizeof cs);
                    if (m == 2) {
                        cs.op = ts_op_sep(kx, 31, ky, 17);
                        cs.op.opt.method = LUMEN_METHOD_SEPARABLE;
                    } else {
                        cs.op = ts_op_filter2d(k2, 31, 31);
                        cs.op.opt.method = m ? LUMEN_METHOD_FFT : LUMEN_METHOD_DIRECT;
                    }
                    cs.op = ts_with_border(cs.op, borders[b], 250.0f);
                    cs.want_method = cs.op.opt.method;
                    cs.src_layout = cs.dst_layout = TS_PLANAR;
                    cs.src_dtype = LUMEN_U8, cs.dst_dtype = idx % 2 ? LUMEN_F32 : LUMEN_U8;
                    cs.n = 1, cs.c = 2, cs.h = shapes[s][0], cs.w = shapes[s][1];
                    cs.seed = 500 + idx;
                    cs.device_views = idx % 2;
                    check_case(kk, &cs);
                }
    }
}

/* Bigger images: many tiles and tile rows, batches of planes in one launch. */
static void test_big_images(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    static float k3b[9], k61[61 * 61];
    ts_random_kernel(k3b, 9, 31);
    ts_random_kernel(k61, 61 * 61, 32);
    for (int kk = 0; kk < n_cuda; kk++) {
        for (int v = 0; v < 4; v++) {
            cu_case cs;
            memset(&cs, 0, sizeof cs);
            if (v == 0) cs.op = ts_op_filter2d(k3b, 3, 3), cs.op.opt.method = LUMEN_METHOD_DIRECT;
            if (v == 1) cs.op = ts_op_gaussian(0, 0, 4.0, 0.0), cs.op.opt.method = LUMEN_METHOD_SEPARABLE;
            if (v == 2) cs.op = ts_op_filter2d(k61, 61, 61), cs.op.opt.method = LUMEN_METHOD_FFT;
            if (v == 3) cs.op = ts_op_gaussian(0, 0, 6.0, 0.0), cs.fast = true;
            cs.op = ts_with_border(cs.op, borders[v + 1], 3.0f);
            cs.want_method = cs.fast ? LUMEN_METHOD_AUTO : cs.op.opt.method;
            cs.src_layout = cs.dst_layout = v % 2 ? TS_INTERLEAVED : TS_BATCH;
            cs.src_dtype = LUMEN_F32, cs.dst_dtype = v == 2 ? LUMEN_U16 : LUMEN_F32;
            cs.n = v % 2 ? 1 : 2, cs.c = v % 2 ? 3 : 2, cs.h = 301, cs.w = 517;
            cs.seed = 40 + v;
            cs.device_views = v >= 2;
            check_case(kk, &cs);
        }
    }
}

/* A NaN in the source: every output whose window covers it is NaN, by every method (the FFT
 * path sums such planes directly, as the CPU does). */
static void test_nan(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    float k[9 * 9], kx[9], ky[9];
    ts_random_kernel(k, 81, 61);
    ts_random_kernel(kx, 9, 62);
    ts_random_kernel(ky, 9, 63);
    for (int kk = 0; kk < n_cuda; kk++)
        for (int m = 0; m < 3; m++) {
            cu_case cs;
            memset(&cs, 0, sizeof cs);
            cs.op = m == 2 ? ts_op_sep(kx, 9, ky, 9) : ts_op_filter2d(k, 9, 9);
            cs.op.opt.method = m == 0 ? LUMEN_METHOD_DIRECT : m == 1 ? LUMEN_METHOD_FFT
                                                                     : LUMEN_METHOD_SEPARABLE;
            cs.want_method = cs.op.opt.method;
            cs.src_layout = cs.dst_layout = TS_PLANAR;
            cs.src_dtype = LUMEN_F32, cs.dst_dtype = m == 1 ? LUMEN_U8 : LUMEN_F32;
            cs.n = 1, cs.c = 2, cs.h = 40, cs.w = 45;
            cs.seed = 70 + m;
            cs.nan_at = 1;
            check_case(kk, &cs);
        }
}

/* One channel of a 4-channel interleaved image with its rows bottom-up: a view whose extent is
 * about four times its pixels, which the module gathers (src) and scatters (dst) element by
 * element instead of copying its extent; the other channels of dst must stay untouched. */
static lumen_image channel_view(unsigned char *buf, lumen_dtype t, int64_t h, int64_t w,
                                int64_t channels, int64_t ch)
{
    const int64_t es = (int64_t)lumen_dtype_size(t);
    lumen_image v = lumen_image_nhwc(buf, t, 1, h, w, channels);
    v.data = buf + ((h - 1) * w * channels + ch) * es;
    v.c = 1, v.stride_h = -w * channels;
    return v;
}

static void test_sparse_views(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    const int64_t h = 23, w = 41, C = 4;
    float k[5 * 5];
    ts_random_kernel(k, 25, 17);
    for (int kk = 0; kk < n_cuda; kk++)
        for (int v = 0; v < 8; v++) {
            const lumen_dtype t = v % 2 ? LUMEN_U8 : LUMEN_F32;
            const bool dev = (v / 2) % 2, fft = v >= 4;
            const size_t es = lumen_dtype_size(t), bytes = (size_t)(h * w * C) * es;
            unsigned char *sbuf = malloc(bytes), *dbuf = malloc(bytes), *rbuf = malloc(bytes);
            assert_true(sbuf && dbuf && rbuf);
            const lumen_image all = lumen_image_nhwc(sbuf, t, 1, h, w, C);
            ts_rng r = ts_rng_make(300 + v);
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++)
                    for (int64_t c = 0; c < C; c++)
                        ts_set(&all, 0, c, y, x, t == LUMEN_U8 ? ts_rng_u32(&r) >> 24 : ts_rng_uniform(&r, -64, 192));
            memset(dbuf, 0x3C, bytes);
            memset(rbuf, 0x3C, bytes);
            const lumen_image sv = channel_view(sbuf, t, h, w, C, 1);
            const lumen_image want = channel_view(rbuf, t, h, w, C, 2);
            const lumen_image got = channel_view(dbuf, t, h, w, C, 2);
            lumen_filter_options o = lumen_filter_options_default();
            o.border = (lumen_border)(v % 5), o.border_value = 7.0f;
            o.method = fft ? LUMEN_METHOD_FFT : LUMEN_METHOD_DIRECT;

            lumen_context *ref = reference_context();
            ts_image exact;
            ts_image_alloc(&exact, TS_PLANAR, LUMEN_F32, 1, 1, h, w);
            assert_int_equal(lumen_filter2d(ref, &sv, &want, k, 5, 5, &o, NULL), LUMEN_OK);
            assert_int_equal(lumen_filter2d(ref, &sv, &exact.v, k, 5, 5, &o, NULL), LUMEN_OK);
            lumen_context_destroy(ref);

            lumen_context *ctx = cuda_context(kk);
            lumen_image csv = sv, cgot = got;
            void *dsrc = NULL, *ddst = NULL;
            if (dev) {
                assert_int_equal(lumen_device_alloc(ctx, bytes, &dsrc), LUMEN_OK);
                assert_int_equal(lumen_device_alloc(ctx, bytes, &ddst), LUMEN_OK);
                assert_int_equal(lumen_device_upload(ctx, dsrc, sbuf, bytes), LUMEN_OK);
                assert_int_equal(lumen_device_upload(ctx, ddst, dbuf, bytes), LUMEN_OK);
                csv.data = (char *)dsrc + ((char *)sv.data - (char *)sbuf);
                cgot.data = (char *)ddst + ((char *)got.data - (char *)dbuf);
                csv.device = cgot.device = cuda_devices[kk];
            }
            lumen_run_info info;
            const lumen_status s = lumen_filter2d(ctx, &csv, &cgot, k, 5, 5, &o, &info);
            if (s != LUMEN_OK) fail_msg("sparse view %d: status %d (%s)", v, (int)s, lumen_last_error());
            if (dev) {
                assert_int_equal(lumen_device_download(ctx, dbuf, ddst, bytes), LUMEN_OK);
                lumen_device_free(ctx, dsrc);
                lumen_device_free(ctx, ddst);
            }
            lumen_context_destroy(ctx);
            assert_int_equal(info.method, o.method);
            char msg[MSG_LEN];
            const ts_op op = ts_op_filter2d(k, 5, 5);
            const double tol = ts_f32_tol(ts_op_ksum(&op, t), fmax(ts_absmax(&sv), 7.0));
            if (ts_compare(&got, &want, t == LUMEN_F32 ? NULL : &exact.v, tol, msg, sizeof msg))
                fail_msg("sparse view %d (%s, %s views, %s): %s", v, lumen_dtype_name(t),
                         dev ? "device" : "host", lumen_method_name(o.method), msg);
            for (size_t i = 0; i < bytes; i++)
                if ((int64_t)(i / es) % C != 2 && dbuf[i] != 0x3C)
                    fail_msg("sparse view %d: byte %zu of another channel was written", v, i);
            ts_image_free(&exact);
            free(sbuf), free(dbuf), free(rbuf);
        }
}

/* A memory cap too small for any op: strict mode fails with OUT_OF_MEMORY and leaves dst
 * untouched; without strict the runtime reruns on the CPU and the result is the CPU's. */
static void test_memory_limit(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    float k[25];
    ts_random_kernel(k, 25, 5);
    for (int kk = 0; kk < n_cuda; kk++) {
        ts_image src, want, got;
        ts_image_alloc(&src, TS_PLANAR, LUMEN_F32, 1, 1, 64, 64);
        ts_image_alloc(&want, TS_PLANAR, LUMEN_F32, 1, 1, 64, 64);
        ts_image_alloc(&got, TS_PLANAR, LUMEN_F32, 1, 1, 64, 64);
        ts_image_fill_random(&src, 9);
        lumen_filter_options o = lumen_filter_options_default();
        o.method = LUMEN_METHOD_DIRECT;
        lumen_context *ref = reference_context();
        assert_int_equal(lumen_filter2d(ref, &src.v, &want.v, k, 5, 5, &o, NULL), LUMEN_OK);
        lumen_context_destroy(ref);

        lumen_context *ctx = cuda_context(kk);
        assert_int_equal(lumen_context_set_memory_limit(ctx, 1024), LUMEN_OK);
        ts_image_fill_bytes(&got, 0x3C);
        assert_int_equal(lumen_filter2d(ctx, &src.v, &got.v, k, 5, 5, &o, NULL),
                         LUMEN_ERR_OUT_OF_MEMORY);
        for (size_t i = 0; i < got.elems * got.es; i++)
            if (got.inside[i / got.es] && got.buf[i] != 0x3C) fail_msg("strict OOM wrote dst");
        assert_int_equal(lumen_context_set_strict(ctx, 0), LUMEN_OK);
        assert_int_equal(lumen_filter2d(ctx, &src.v, &got.v, k, 5, 5, &o, NULL), LUMEN_OK);
        char msg[MSG_LEN];
        const ts_op op = ts_op_filter2d(k, 5, 5);
        const double tol = ts_f32_tol(ts_op_ksum(&op, LUMEN_F32), ts_absmax(&src.v));
        if (ts_compare(&got.v, &want.v, NULL, tol, msg, sizeof msg))
            fail_msg("fallback after OOM: %s", msg);
        lumen_context_destroy(ctx);
        ts_image_free(&src), ts_image_free(&want), ts_image_free(&got);
    }
}


/* ---- NCHW conv ------------------------------------------------------------- */

/* One conv of the grid: x (n, c, h, w); the weights are (k, c/g, r, s), or (c, k/g, r, s)
 * transposed. */
typedef struct conv_shape {
    int transposed;
    int64_t n, c, h, w, k, r, s;
    lumen_conv2d_params p;
} conv_shape;

/* How the views of a run are placed. */
typedef enum {
    CV_HOST,          /* dense NCHW host arrays */
    CV_DEVICE,        /* dense NCHW device memory */
    CV_HOST_NHWC,     /* host x and y channels-last (cuDNN's path packs them) */
    CV_DEVICE_NHWC,   /* the same in device memory */
    CV_COUNT
} conv_views;

static const char *const conv_views_names[] = {"host", "device", "host-nhwc", "device-nhwc"};

static lumen_image nchw_or_nhwc(void *data, int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc)
{
    lumen_image v = lumen_image_nchw(data, LUMEN_F32, n, c, h, w);
    if (nhwc) v.stride_c = 1, v.stride_w = c, v.stride_h = w * c, v.stride_n = h * w * c;
    return v;
}

static lumen_image conv_weight(const conv_shape *cs, void *data)
{
    const int64_t g = cs->p.groups;
    return cs->transposed ? lumen_image_nchw(data, LUMEN_F32, cs->c, cs->k / g, cs->r, cs->s)
                          : lumen_image_nchw(data, LUMEN_F32, cs->k, cs->c / g, cs->r, cs->s);
}

static lumen_status conv_call(lumen_context *ctx, const conv_shape *cs, const lumen_image *x,
                              const lumen_image *w, const float *bias, const lumen_image *y,
                              lumen_run_info *info)
{
    return cs->transposed ? lumen_conv_transpose2d(ctx, x, w, bias, &cs->p, y, info)
                          : lumen_conv2d(ctx, x, w, bias, &cs->p, y, info);
}

/* Output size, or false when the shape has no output. */
static bool conv_out(const conv_shape *cs, int64_t *oh, int64_t *ow)
{
    float dummy = 0;
    lumen_image x = lumen_image_nchw(&dummy, LUMEN_F32, cs->n, cs->c, cs->h, cs->w);
    lumen_image w = conv_weight(cs, &dummy);
    lumen_status s = cs->transposed ? lumen_conv_transpose2d_output_size(&x, &w, &cs->p, oh, ow)
                                    : lumen_conv2d_output_size(&x, &w, &cs->p, oh, ow);
    return s == LUMEN_OK;
}

static void conv_describe(const conv_shape *cs, conv_views v, char *buf, size_t len)
{
    const lumen_conv2d_params *p = &cs->p;
    snprintf(buf, len,
             "%s x(%lld,%lld,%lld,%lld) k=%lld r=%lld s=%lld stride=(%d,%d) pad=(%d,%d) "
             "dil=(%d,%d) groups=%d out_pad=(%d,%d) %s views",
             cs->transposed ? "conv_transpose2d" : "conv2d", (long long)cs->n, (long long)cs->c,
             (long long)cs->h, (long long)cs->w, (long long)cs->k, (long long)cs->r,
             (long long)cs->s, p->stride_h, p->stride_w, p->pad_h, p->pad_w, p->dilation_h,
             p->dilation_w, p->groups, p->output_pad_h, p->output_pad_w, conv_views_names[v]);
}

/* Host data of one case: x, w, bias, the reference y and conv(|x|, |w|) (the error scale). */
typedef struct conv_data {
    int64_t oh, ow, nx, nw, ny;
    float *x, *w, *bias, *want, *scale;
    double scale_max;
} conv_data;

static void conv_data_free(conv_data *d)
{
    free(d->x), free(d->w), free(d->bias), free(d->want), free(d->scale);
}

static void conv_data_make(const conv_shape *cs, uint64_t seed, conv_data *d)
{
    assert_true(conv_out(cs, &d->oh, &d->ow));
    d->nx = cs->n * cs->c * cs->h * cs->w;
    d->nw = cs->k * (cs->c / cs->p.groups) * cs->r * cs->s;
    d->ny = cs->n * cs->k * d->oh * d->ow;
    d->x = malloc((size_t)d->nx * sizeof(float));
    d->w = malloc((size_t)d->nw * sizeof(float));
    d->bias = malloc((size_t)cs->k * sizeof(float));
    d->want = malloc((size_t)d->ny * sizeof(float));
    d->scale = malloc((size_t)d->ny * sizeof(float));
    assert_true(d->x && d->w && d->bias && d->want && d->scale);
    ts_rng rng = ts_rng_make(seed);
    for (int64_t i = 0; i < d->nx; i++) d->x[i] = (float)ts_rng_uniform(&rng, -1, 1);
    for (int64_t i = 0; i < d->nw; i++) d->w[i] = (float)ts_rng_uniform(&rng, -1, 1);
    for (int64_t i = 0; i < cs->k; i++) d->bias[i] = (float)ts_rng_uniform(&rng, -1, 1);
    lumen_context *ref = reference_context();
    lumen_image x = lumen_image_nchw(d->x, LUMEN_F32, cs->n, cs->c, cs->h, cs->w);
    lumen_image w = conv_weight(cs, d->w);
    lumen_image y = lumen_image_nchw(d->want, LUMEN_F32, cs->n, cs->k, d->oh, d->ow);
    assert_int_equal(conv_call(ref, cs, &x, &w, d->bias, &y, NULL), LUMEN_OK);
    /* the error scale: sum |x w| per output, as conv(|x|, |w|) */
    float *ax = malloc((size_t)d->nx * sizeof(float)), *aw = malloc((size_t)d->nw * sizeof(float));
    assert_true(ax && aw);
    for (int64_t i = 0; i < d->nx; i++) ax[i] = fabsf(d->x[i]);
    for (int64_t i = 0; i < d->nw; i++) aw[i] = fabsf(d->w[i]);
    x.data = ax, w.data = aw, y.data = d->scale;
    assert_int_equal(conv_call(ref, cs, &x, &w, NULL, &y, NULL), LUMEN_OK);
    free(ax), free(aw);
    lumen_context_destroy(ref);
    d->scale_max = 0;
    for (int64_t i = 0; i < d->ny; i++) d->scale_max = fmax(d->scale_max, d->scale[i]);
}

/* Tolerances: the own kernel sums in f32 with FMA in the reference's order of taps; cuDNN's
 * algorithms (FFT, Winograd) spread their rounding over the output, so their bound has a term
 * in the largest output scale too. TF32 rounds products to 10 mantissa bits. */
#define CONV_OWN_REL 1e-5
#define CONV_DNN_REL 2e-5
#define CONV_TF32_REL 3e-3

static void conv_compare(const conv_data *d, const float *got, double rel, double rel_max,
                         const char *what)
{
    for (int64_t i = 0; i < d->ny; i++) {
        const double err = fabs((double)got[i] - d->want[i]);
        const double tol = rel * d->scale[i] + rel_max * d->scale_max + 1e-6 * fabs(d->want[i]);
        if (!(err <= tol))
            fail_msg("%s: y[%lld] = %.9g, want %.9g (|err| %.3g > tol %.3g)", what, (long long)i,
                     (double)got[i], (double)d->want[i], err, tol);
    }
}

/* Copies a dense NCHW array into a view's layout (host memory) and back. */
static void to_layout(const float *dense, const lumen_image *v, float *out)
{
    for (int64_t n = 0; n < v->n; n++)
        for (int64_t c = 0; c < v->c; c++)
            for (int64_t h = 0; h < v->h; h++)
                for (int64_t w = 0; w < v->w; w++)
                    out[n * v->stride_n + c * v->stride_c + h * v->stride_h + w * v->stride_w] =
                        dense[((n * v->c + c) * v->h + h) * v->w + w];
}

static void from_layout(const float *in, const lumen_image *v, float *dense)
{
    for (int64_t n = 0; n < v->n; n++)
        for (int64_t c = 0; c < v->c; c++)
            for (int64_t h = 0; h < v->h; h++)
                for (int64_t w = 0; w < v->w; w++)
                    dense[((n * v->c + c) * v->h + h) * v->w + w] =
                        in[n * v->stride_n + c * v->stride_c + h * v->stride_h + w * v->stride_w];
}

/*
 * Runs one case on ctx with views placed as v; the result (dense NCHW) into got. Returns the
 * status; info receives run info.
 */
static lumen_status conv_on_device(lumen_context *ctx, int dev, const conv_shape *cs,
                                   const conv_data *d, conv_views v, float *got,
                                   lumen_run_info *info)
{
    const bool nhwc = v == CV_HOST_NHWC || v == CV_DEVICE_NHWC;
    const bool on_dev = v == CV_DEVICE || v == CV_DEVICE_NHWC;
    const size_t bx = (size_t)d->nx * 4, bw = (size_t)d->nw * 4, by = (size_t)d->ny * 4;
    float *hx = malloc(bx), *hy = malloc(by);
    assert_true(hx && hy);
    lumen_image x = nchw_or_nhwc(hx, cs->n, cs->c, cs->h, cs->w, nhwc);
    lumen_image y = nchw_or_nhwc(hy, cs->n, cs->k, d->oh, d->ow, nhwc);
    lumen_image w = conv_weight(cs, d->w);
    to_layout(d->x, &x, hx);
    for (int64_t i = 0; i < d->ny; i++) hy[i] = NAN; /* poison: every output must be written */
    void *dx = NULL, *dw = NULL, *dy = NULL;
    if (on_dev) {
        assert_int_equal(lumen_device_alloc(ctx, bx, &dx), LUMEN_OK);
        assert_int_equal(lumen_device_alloc(ctx, bw, &dw), LUMEN_OK);
        assert_int_equal(lumen_device_alloc(ctx, by, &dy), LUMEN_OK);
        assert_int_equal(lumen_device_upload(ctx, dx, hx, bx), LUMEN_OK);
        assert_int_equal(lumen_device_upload(ctx, dw, d->w, bw), LUMEN_OK);
        assert_int_equal(lumen_device_upload(ctx, dy, hy, by), LUMEN_OK);
        x.data = dx, w.data = dw, y.data = dy;
        x.device = w.device = y.device = dev;
    }
    lumen_status s = conv_call(ctx, cs, &x, &w, d->bias, &y, info);
    if (on_dev) {
        if (s == LUMEN_OK) s = lumen_context_synchronize(ctx);
        assert_int_equal(lumen_device_download(ctx, hy, dy, by), LUMEN_OK);
        lumen_device_free(ctx, dx), lumen_device_free(ctx, dw), lumen_device_free(ctx, dy);
        y.data = hy;
    }
    from_layout(hy, &y, got);
    free(hx), free(hy);
    return s;
}

/* The grid: kernel 1/3/5/7 (5 is 5 x 3), stride 1/2, pad 0/1/3, dilation 1/2, groups 1/2/C,
 * batch 1/3, on non-square 11 x 13 images; shapes without an output are left out. */
static int conv_grid(int transposed, conv_shape *out, int max)
{
    static const int ks[] = {1, 3, 5, 7}, strides[] = {1, 2}, pads[] = {0, 1, 3}, dils[] = {1, 2};
    static const int groups[] = {1, 2, 4}, batches[] = {1, 3};
    int n = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++)
                for (int e = 0; e < 2; e++)
                    for (int g = 0; g < 3; g++)
                        for (int m = 0; m < 2; m++) {
                            conv_shape cs = {transposed, batches[m], 4, 11, 13, 8, ks[a],
                                             ks[a] == 5 ? 3 : ks[a], lumen_conv2d_params_default()};
                            cs.p.stride_h = cs.p.stride_w = strides[b];
                            cs.p.pad_h = cs.p.pad_w = pads[c];
                            cs.p.dilation_h = cs.p.dilation_w = dils[e];
                            cs.p.groups = groups[g];
                            if (transposed && strides[b] > 1) cs.p.output_pad_h = 1; /* < stride */
                            int64_t oh, ow;
                            if (conv_out(&cs, &oh, &ow) && n < max) out[n++] = cs;
                        }
    return n;
}

/* Sets $LUMEN_CUDA_CONV; "cudnn" is refused (false) when cuDNN cannot be loaded here. */
static bool conv_path(const char *path, int k)
{
    setenv("LUMEN_CUDA_CONV", path, 1);
    if (strcmp(path, "cudnn")) return true;
    conv_shape cs = {0, 1, 4, 11, 13, 8, 3, 3, lumen_conv2d_params_default()};
    conv_data d;
    conv_data_make(&cs, 1, &d);
    float *got = malloc((size_t)d.ny * 4);
    lumen_context *ctx = cuda_context(k);
    lumen_run_info info;
    const lumen_status s = conv_on_device(ctx, cuda_devices[k], &cs, &d, CV_HOST, got, &info);
    lumen_context_destroy(ctx);
    free(got);
    conv_data_free(&d);
    if (s == LUMEN_ERR_UNSUPPORTED && strstr(lumen_last_error(), "cuDNN is not available")) {
        print_message("cuda:%d: %s: the cuDNN pass is skipped\n", k, lumen_last_error());
        return false;
    }
    if (s) fail_msg("cuda:%d: first cuDNN conv: %s", k, lumen_last_error());
    return true;
}

/* Every grid case on every device, on one path (state: "own" or "cudnn"). */
static void test_conv_grid(void **state)
{
    REQUIRE_CUDA();
    const char *path = *state;
    const bool own = !strcmp(path, "own");
    enum { MAX_CASES = 600 };
    static conv_shape cases[MAX_CASES];
    for (int kk = 0; kk < n_cuda; kk++) {
        if (!conv_path(path, kk)) continue;
        int ran = 0, not_dnn = 0;
        for (int t = 0; t < 2; t++) {
            const int n = conv_grid(t, cases, MAX_CASES);
            lumen_context *ctx = cuda_context(kk);
            for (int i = 0; i < n; i++) {
                const conv_views v = (conv_views)(i % CV_COUNT);
                conv_data d;
                conv_data_make(&cases[i], 1000 + (uint64_t)i, &d);
                float *got = malloc((size_t)d.ny * 4);
                assert_non_null(got);
                char what[400];
                conv_describe(&cases[i], v, what, sizeof what);
                lumen_run_info info;
                memset(&info, 0, sizeof info);
                const lumen_status s = conv_on_device(ctx, cuda_devices[kk], &cases[i], &d, v, got, &info);
                if (s == LUMEN_ERR_UNSUPPORTED && !own && strstr(lumen_last_error(), "no algorithm")) {
                    print_message("cuda:%d: cuDNN has no algorithm for %s\n", kk, what);
                    not_dnn++;
                } else if (s) {
                    fail_msg("cuda:%d %s path: %s: %s", kk, path, what, lumen_last_error());
                } else {
                    char label[48];
                    snprintf(label, sizeof label, "cuda:%d", kk);
                    assert_string_equal(info.device, label);
                    if (own) assert_string_equal(info.algo, "cuda:direct");
                    else if (strncmp(info.algo, "cudnn:", 6) || strstr(info.algo, "tf32"))
                        fail_msg("%s: algo %s (want cuDNN with FMA math)", what, info.algo);
                    char msg[600];
                    snprintf(msg, sizeof msg, "cuda:%d %s (%s)", kk, what, info.algo);
                    conv_compare(&d, got, own ? CONV_OWN_REL : CONV_DNN_REL, own ? 0.0 : CONV_DNN_REL,
                                 msg);
                    ran++;
                }
                free(got);
                conv_data_free(&d);
            }
            lumen_context_destroy(ctx);
        }
        print_message("cuda:%d %s path: %d conv cases matched the reference%s\n", kk, path, ran,
                      not_dnn ? " (some without a cuDNN algorithm, listed above)" : "");
        /* cuDNN must take nearly all of the grid; what it lacks is listed above */
        if (not_dnn * 10 > ran + not_dnn) fail_msg("cuDNN took only %d of %d cases", ran, ran + not_dnn);
    }
    unsetenv("LUMEN_CUDA_CONV");
}

/* The layers (smaller batches), auto path and TF32 on request: FMA results meet the
 * FP32 bound and never name TF32; with TF32 allowed, the TF32 bound. */
static void test_conv_layers_tf32(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    const conv_shape layers[] = {
        {0, 2, 64, 56, 56, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1, 0, 0}},
        {0, 2, 3, 224, 224, 64, 7, 7, {2, 2, 3, 3, 1, 1, 1, 0, 0}},
        {1, 2, 64, 28, 28, 32, 4, 4, {2, 2, 1, 1, 1, 1, 1, 0, 0}},
    };
    for (int kk = 0; kk < n_cuda; kk++)
        for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
            conv_data d;
            conv_data_make(&layers[i], 77 + i, &d);
            float *got = malloc((size_t)d.ny * 4);
            char what[400];
            conv_describe(&layers[i], CV_DEVICE, what, sizeof what);
            for (int tf32 = 0; tf32 < 2; tf32++) {
                lumen_context *ctx = cuda_context(kk);
                assert_int_equal(lumen_context_tf32(ctx), 0);
                assert_int_equal(lumen_context_set_tf32(ctx, tf32), LUMEN_OK);
                lumen_run_info info;
                if (conv_on_device(ctx, cuda_devices[kk], &layers[i], &d, CV_DEVICE, got, &info))
                    fail_msg("cuda:%d %s tf32=%d: %s", kk, what, tf32, lumen_last_error());
                print_message("cuda:%d %s tf32=%d: %s\n", kk, what, tf32, info.algo);
                if (!tf32 && strstr(info.algo, "tf32")) fail_msg("%s: TF32 without asking", what);
                const double rel = tf32 ? CONV_TF32_REL : CONV_DNN_REL;
                conv_compare(&d, got, rel, rel, what);
                lumen_context_destroy(ctx);
            }
            free(got);
            conv_data_free(&d);
        }
}

/* Strict mode and the memory cap: out of memory, y untouched; without strict the CPU's result. */
static void test_conv_memory_limit(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    const conv_shape cs = {0, 2, 16, 20, 20, 16, 3, 3, {1, 1, 1, 1, 1, 1, 1, 0, 0}};
    for (int kk = 0; kk < n_cuda; kk++) {
        conv_data d;
        conv_data_make(&cs, 5, &d);
        float *y = malloc((size_t)d.ny * 4);
        lumen_context *ctx = cuda_context(kk);
        assert_int_equal(lumen_context_set_memory_limit(ctx, 1024), LUMEN_OK);
        lumen_image x = lumen_image_nchw(d.x, LUMEN_F32, cs.n, cs.c, cs.h, cs.w);
        lumen_image w = conv_weight(&cs, d.w);
        lumen_image yv = lumen_image_nchw(y, LUMEN_F32, cs.n, cs.k, d.oh, d.ow);
        for (int64_t i = 0; i < d.ny; i++) y[i] = 3.0f;
        assert_int_equal(conv_call(ctx, &cs, &x, &w, d.bias, &yv, NULL), LUMEN_ERR_OUT_OF_MEMORY);
        for (int64_t i = 0; i < d.ny; i++)
            if (y[i] != 3.0f) fail_msg("strict out-of-memory conv wrote y[%lld]", (long long)i);
        assert_int_equal(lumen_context_set_strict(ctx, 0), LUMEN_OK);
        lumen_run_info info;
        assert_int_equal(conv_call(ctx, &cs, &x, &w, d.bias, &yv, &info), LUMEN_OK);
        assert_string_equal(info.device, "cpu");
        conv_compare(&d, y, CONV_OWN_REL, 1e-6, "conv fallback after out of memory");
        lumen_context_destroy(ctx);
        free(y);
        conv_data_free(&d);
    }
}

/* What lumen_device_get_info says about CUDA devices. */
static void test_device_info(void **state)
{
    (void)state;
    REQUIRE_CUDA();
    for (int kk = 0; kk < n_cuda; kk++) {
        lumen_device_info info;
        assert_int_equal(lumen_device_get_info(cuda_devices[kk], &info), LUMEN_OK);
        assert_int_equal(info.index, cuda_devices[kk]);
        assert_string_equal(info.backend, "cuda");
        assert_true(info.kind == LUMEN_DEVICE_DISCRETE_GPU || info.kind == LUMEN_DEVICE_INTEGRATED_GPU);
        assert_true(info.name[0] != '\0');
        assert_true(info.memory_total > 0);
        assert_true(info.memory_free <= info.memory_total);
        int major = -1, minor = -1;
        assert_int_equal(sscanf(info.compute_capability, "%d.%d", &major, &minor), 2);
        assert_true(major >= 1);
        assert_int_equal(info.bf16, major >= 8);
        assert_true(!info.bf16 || info.fp16);
        int found = -1;
        char spec[32];
        snprintf(spec, sizeof spec, "cuda:%d", kk);
        assert_int_equal(lumen_device_find(spec, &found), LUMEN_OK);
        assert_int_equal(found, cuda_devices[kk]);
    }
}

int main(void)
{
#define OP(i) cmocka_unit_test_prestate(test_op_matrix, (void *)(intptr_t)(i))
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_info),
        OP(0), OP(1), OP(2), OP(3), OP(4), OP(5), OP(6), OP(7), OP(8), OP(9), OP(10), OP(11),
        OP(12), OP(13), OP(14), OP(15), OP(16), OP(17),
        cmocka_unit_test(test_layout_pairs),
        cmocka_unit_test(test_kernel_larger_than_image),
        cmocka_unit_test(test_big_images),
        cmocka_unit_test(test_sparse_views),
        cmocka_unit_test(test_nan),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test_prestate(test_conv_grid, (void *)"own"),
        cmocka_unit_test_prestate(test_conv_grid, (void *)"cudnn"),
        cmocka_unit_test(test_conv_layers_tf32),
        cmocka_unit_test(test_conv_memory_limit),
    };
#undef OP
    return cmocka_run_group_tests(tests, find_devices, NULL);
}
