/*
 * One cross-backend test, in the spirit of ggml's test-backend-ops: every op row x dtype x
 * border x layout x size runs on every device present -- the CPU fast path, the mock module
 * (tests/c/mock, loaded through $LUMEN_MODULE_PATH), CUDA and later Vulkan where they exist --
 * and each result is compared with the oracle, the CPU context with SIMD off (the scalar
 * reference), by the one tolerance table (support/tolerances.h).
 *
 * Non-CPU devices run every case twice more: with device-resident views (lumen_device_alloc,
 * upload, download) and on a strict twin context. The contexts are not strict, so an op the
 * device lacks runs through the runtime's CPU fallback and must give the same answer; the
 * strict twin checks that run_info told the truth: where info.device named the device, strict
 * mode must run it there too; where it said "cpu", strict mode must refuse and leave dst alone.
 *
 * Per-op test files keep what is specific to an op's semantics (hand-computed borders, anchor
 * rules, NaN, bad arguments, the fast paths' own engines); this file asks one question of every
 * backend: the same answer as the reference, within the table, for every combination.
 * Adding an op = one row of `rows` below. Today: 17 image rows x 5 dtypes x 5 borders x 7
 * layouts x 3 sizes, 14 resize rows (3 of them a window of a larger resize) x 5 dtypes x 7
 * layouts x 3 sizes, and 8 conv rows x 3 dtypes x 7 layouts: 10563 cases per device; small
 * images (13x17, 4x5, 1x1), so the whole runs in seconds, also under ASan. Prints one line per
 * device (cases, fallbacks) and each op's largest error per device.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "semantics.h"
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG 1024
#define MAX_DEVICES 16

/* ---- op rows ----------------------------------------------------------------------------- */

typedef enum xb_family {
    XB_IMAGE,  /* src -> dst of the same shape; every dtype, border, layout, size */
    XB_RESIZE, /* src -> dst of the row's size (a fraction of src's); every dtype, layout, size */
    XB_TENSOR, /* NCHW conv: x, w -> y; f32, every layout, the row's own shape */
} xb_family;

/* x (n, c, h, w); w (k, c/g, r, s), or (c, k/g, r, s) when transposed; y (n, k, P, Q). */
typedef struct xb_conv {
    int transposed;
    int n, c, h, w, k, r, s;
    lumen_conv2d_params p;
    const float *bias; /* k values or NULL */
} xb_conv;

/* What one run sees: in[0] = src (image ops) or x, in[1] = w (tensor ops); out = dst or y. */
typedef struct xb_views {
    const lumen_image *in[2];
    const lumen_image *out;
    lumen_border border;
    float value;
    const float *bias;
} xb_views;

typedef struct xb_row xb_row;
typedef lumen_status (*xb_run)(lumen_context *ctx, const xb_row *row, const xb_views *v,
                               lumen_run_info *info);

/* A resize: the options, and the whole result's size as num/den of src's (at least 1). With
 * `window`, dst is the middle of that result (a third less on each axis, where it has 3 pixels
 * or more), computed as lumen.dask computes a block: a lumen_resize_window over the whole. */
typedef struct xb_resize {
    lumen_resize_options o;
    int num_h, den_h, num_w, den_w;
    int window;
} xb_resize;

/* The whole result's size on an axis of n, and the block's size and offset in it. */
static int64_t resize_whole(int64_t n, int num, int den)
{
    const int64_t o = n * num / den;
    return o < 1 ? 1 : o;
}

static int64_t resize_block(int64_t whole, int window, int64_t *offset)
{
    const int64_t b = window ? whole - whole / 3 : whole;
    *offset = (whole - b) / 2;
    return b;
}

struct xb_row {
    const char *name;
    xb_family family;
    xb_run run;
    xb_run oracle; /* what the reference runs for it; NULL: run itself */
    ts_tol_kind tol;
    lumen_method want_method; /* info.method every device must report; AUTO: not checked */
    ts_op op;                 /* image ops (border and value come from the case) */
    xb_conv conv;             /* tensor ops */
    const xb_resize *rs;      /* resize */
};

/* filter2d, sep_filter2d, the exact Gaussian (ts_op_run: blur_ex when a method is forced), box */
static lumen_status run_image(lumen_context *ctx, const xb_row *row, const xb_views *v,
                              lumen_run_info *info)
{
    const ts_op op = ts_with_border(row->op, v->border, v->value);
    return ts_op_run(ctx, &op, v->in[0], v->out, info);
}

static lumen_status run_gauss_fast(lumen_context *ctx, const xb_row *row, const xb_views *v,
                                   lumen_run_info *info)
{
    lumen_gaussian_options g = lumen_gaussian_options_default();
    g.sigma_x = row->op.sigma_x, g.sigma_y = row->op.sigma_y;
    g.border = v->border, g.border_value = v->value;
    g.precision = LUMEN_PRECISION_FAST;
    return lumen_gaussian_blur_ex(ctx, v->in[0], v->out, &g, info);
}

/* The fast Gaussian's contract is against the exact blur with ksize round(8 sigma + 1) | 1
 * (docs/gaussian-fast.md), not against the recursive filter's own portable code. */
static lumen_status oracle_gauss_fast(lumen_context *ctx, const xb_row *row, const xb_views *v,
                                      lumen_run_info *info)
{
    const double sx = row->op.sigma_x, sy = row->op.sigma_y;
    return lumen_gaussian_blur(ctx, v->in[0], v->out, (int)lrint(sx * 8 + 1) | 1,
                               (int)lrint(sy * 8 + 1) | 1, sx, sy, v->border, v->value, info);
}

static lumen_status run_resize(lumen_context *ctx, const xb_row *row, const xb_views *v,
                               lumen_run_info *info)
{
    const xb_resize *rs = row->rs;
    lumen_resize_options o = rs->o;
    if (rs->window) { /* src is the whole image; dst the block of the whole result */
        const lumen_image *src = v->in[0];
        lumen_resize_window *w = &o.window;
        w->whole_h = src->h, w->whole_w = src->w;
        w->out_h = resize_whole(src->h, rs->num_h, rs->den_h);
        w->out_w = resize_whole(src->w, rs->num_w, rs->den_w);
        resize_block(w->out_h, 1, &w->dst_y);
        resize_block(w->out_w, 1, &w->dst_x);
    }
    return lumen_resize(ctx, v->in[0], v->out, &o, info);
}

static lumen_status run_conv(lumen_context *ctx, const xb_row *row, const xb_views *v,
                             lumen_run_info *info)
{
    const xb_conv *c = &row->conv;
    return c->transposed
               ? lumen_conv_transpose2d(ctx, v->in[0], v->in[1], v->bias, &c->p, v->out, info)
               : lumen_conv2d(ctx, v->in[0], v->in[1], v->bias, &c->p, v->out, info);
}

/* Kernels (filled in main): random, sum 1, positive-leaning, so integer results mostly stay in
 * range and some saturate. The "r" ones are rank-1 (outer products) for the separable method. */
static float k3x3[9], k4x3[12], k7x7[49], k6x5[30], k5x5[25], k5x3r[15], k4x4r[16];
static float kx5[5], ky3[3], kx4[4], ky4[4], kx9[9], ky6[6];
static float bias6[6], bias4[4], bias3[3];

#define AUTO LUMEN_METHOD_AUTO
#define DIRECT LUMEN_METHOD_DIRECT
#define SEPARABLE LUMEN_METHOD_SEPARABLE
#define FFT LUMEN_METHOD_FFT

/* The table is laid out by hand (clang-format would give every field its own line). */
/* clang-format off */

/* filter2d with kernel k (kw x kh), anchor (ax, ay) (-1: centre), convolve flag, method m */
#define FILTER2D(k, kw_, kh_, ax, ay, conv, m)                                                     \
    {.kind = TS_OP_FILTER2D, .kw = kw_, .kh = kh_, .kernel = k,                                    \
     .opt = {.anchor_x = ax, .anchor_y = ay, .convolve = conv, .method = m}}
#define SEP(kx_, kw_, ky_, kh_, ax, ay, conv, m)                                                   \
    {.kind = TS_OP_SEP, .kw = kw_, .kh = kh_, .kx = kx_, .ky = ky_,                                \
     .opt = {.anchor_x = ax, .anchor_y = ay, .convolve = conv, .method = m}}
/* ksize 0: derived from sigma (per dtype, as OpenCV does) */
#define GAUSS(kx_, ky_, sx, sy, m)                                                                 \
    {.kind = TS_OP_GAUSSIAN, .kw = kx_, .kh = ky_, .sigma_x = sx, .sigma_y = sy,                   \
     .opt = {.anchor_x = -1, .anchor_y = -1, .method = m}}
#define BOX(kw_, kh_, norm)                                                                        \
    {.kind = TS_OP_BOX, .kw = kw_, .kh = kh_, .normalize = norm,                                   \
     .opt = {.anchor_x = -1, .anchor_y = -1}}
/* x (n, c, h, w), K outputs, an r x s kernel, stride, pad, dilation, groups, output pad, bias */
#define CONV(tr, n_, c_, h_, w_, k_, r_, s_, sh, sw, ph, pw, dh, dw, g, oph, opw, b)               \
    {.transposed = tr, .n = n_, .c = c_, .h = h_, .w = w_, .k = k_, .r = r_, .s = s_,              \
     .p = {sh, sw, ph, pw, dh, dw, g, oph, opw}, .bias = b}

/* name, tolerance, the method info must report (AUTO: any), op */
#define IMAGE(name, tol, m, op) {name, XB_IMAGE, run_image, NULL, tol, m, op, {0}, NULL}
#define GAUSS_FAST(name, sx, sy)                                                                   \
    {name, XB_IMAGE, run_gauss_fast, oracle_gauss_fast, TS_TOL_GAUSS_FAST,                         \
     LUMEN_METHOD_RECURSIVE, GAUSS(0, 0, sx, sy, AUTO), {0}, NULL}
/* resize: rule, interpolation, antialias, align_corners, dst = src * (nh/dh, nw/dw) */
#define RESIZE_W(name_, tol_, rule_, ip, aa, ac, nh, dh, nw, dw, win)                            \
    {.name = name_, .family = XB_RESIZE, .run = run_resize, .tol = tol_,                           \
     .want_method = SEPARABLE,                                                                     \
     .rs = &(const xb_resize){.o = {.rule = rule_, .interpolation = ip, .antialias = aa,           \
                                    .align_corners = ac},                                          \
                              .num_h = nh, .den_h = dh, .num_w = nw, .den_w = dw, .window = win}}
#define RESIZE(name_, tol_, rule_, ip, aa, ac, nh, dh, nw, dw)                                   \
    RESIZE_W(name_, tol_, rule_, ip, aa, ac, nh, dh, nw, dw, 0)
#define CV LUMEN_RESIZE_OPENCV
#define PIL LUMEN_RESIZE_PILLOW
#define TORCH LUMEN_RESIZE_TORCH
/* every conv reports DIRECT, as test_conv2d.c asserts */
#define TENSOR(name, conv) {name, XB_TENSOR, run_conv, NULL, TS_TOL_CONV, DIRECT, {0}, conv, NULL}

static const xb_row rows[] = {
    /* filter2d: odd and even kernels, off-centre anchors, convolve, each method */
    IMAGE("filter2d direct 3x3", TS_TOL_FILTER, DIRECT, FILTER2D(k3x3, 3, 3, -1, -1, 0, DIRECT)),
    IMAGE("filter2d direct 4x3 anchor(0,2) convolve", TS_TOL_FILTER, DIRECT,
          FILTER2D(k4x3, 4, 3, 0, 2, 1, DIRECT)),
    IMAGE("filter2d direct 7x7 anchor(6,1)", TS_TOL_FILTER, DIRECT,
          FILTER2D(k7x7, 7, 7, 6, 1, 0, DIRECT)),
    IMAGE("filter2d separable 5x3 rank-1 anchor(4,0)", TS_TOL_FILTER, SEPARABLE,
          FILTER2D(k5x3r, 5, 3, 4, 0, 0, SEPARABLE)),
    IMAGE("filter2d separable 4x4 rank-1 convolve", TS_TOL_FILTER, SEPARABLE,
          FILTER2D(k4x4r, 4, 4, -1, -1, 1, SEPARABLE)),
    IMAGE("filter2d fft 7x7 convolve", TS_TOL_FFT, FFT, FILTER2D(k7x7, 7, 7, -1, -1, 1, FFT)),
    IMAGE("filter2d fft 6x5 anchor(1,4)", TS_TOL_FFT, FFT, FILTER2D(k6x5, 6, 5, 1, 4, 0, FFT)),
    /* auto may pick any method (the table's FFT and filter bounds are equal) */
    IMAGE("filter2d auto 5x5", TS_TOL_FILTER, AUTO, FILTER2D(k5x5, 5, 5, -1, -1, 0, AUTO)),
    /* sep_filter2d */
    IMAGE("sep_filter2d separable 5x3 anchor(1,2)", TS_TOL_FILTER, SEPARABLE,
          SEP(kx5, 5, ky3, 3, 1, 2, 0, SEPARABLE)),
    IMAGE("sep_filter2d separable 4x4 anchor(3,3)", TS_TOL_FILTER, SEPARABLE,
          SEP(kx4, 4, ky4, 4, 3, 3, 0, SEPARABLE)),
    IMAGE("sep_filter2d fft 9x6 convolve", TS_TOL_FFT, FFT, SEP(kx9, 9, ky6, 6, -1, -1, 1, FFT)),
    /* gaussian_blur: exact (auto; FFT with the ksize derived from sigma) and fast (one axis
     * under sigma 2 runs the exact FIR, over it Deriche's recursion: docs/gaussian-fast.md) */
    IMAGE("gaussian_blur exact 5x3 sigma(1.1,0.8)", TS_TOL_FILTER, AUTO,
          GAUSS(5, 3, 1.1, 0.8, AUTO)),
    IMAGE("gaussian_blur exact fft sigma 1.5", TS_TOL_FFT, FFT, GAUSS(0, 0, 1.5, 0.0, FFT)),
    GAUSS_FAST("gaussian_blur fast sigma(2.5,1.3)", 2.5, 1.3),
    GAUSS_FAST("gaussian_blur fast sigma 4", 4.0, 4.0),
    /* box_blur */
    IMAGE("box_blur 3x5 normalize", TS_TOL_FILTER, AUTO, BOX(3, 5, 1)),
    IMAGE("box_blur 4x2 sums", TS_TOL_FILTER, AUTO, BOX(4, 2, 0)),
    /* resize: each rule's kernels, up, down and mixed (the 1x1 size grows on both axes) */
    RESIZE("resize opencv linear up 5/3, down 2/3", TS_TOL_RESIZE, CV, LUMEN_INTER_LINEAR, 0, 0,
           5, 3, 2, 3),
    RESIZE("resize opencv cubic up 2", TS_TOL_RESIZE, CV, LUMEN_INTER_CUBIC, 0, 0, 2, 1, 2, 1),
    RESIZE("resize opencv area down 1/2, 3/5", TS_TOL_RESIZE, CV, LUMEN_INTER_AREA, 0, 0, 1, 2,
           3, 5),
    RESIZE("resize opencv area up 7/4 (linear form)", TS_TOL_RESIZE, CV, LUMEN_INTER_AREA, 0, 0,
           7, 4, 7, 4),
    RESIZE("resize opencv lanczos 3/2, 1/3", TS_TOL_RESIZE, CV, LUMEN_INTER_LANCZOS, 0, 0, 3, 2,
           1, 3),
    RESIZE("resize opencv nearest 4/3, 2/5", TS_TOL_RESIZE, CV, LUMEN_INTER_NEAREST, 0, 0, 4, 3,
           2, 5),
    RESIZE("resize pillow cubic down 1/3, 3/4", TS_TOL_RESIZE_PILLOW_U8, PIL, LUMEN_INTER_CUBIC,
           0, 0, 1, 3, 3, 4),
    RESIZE("resize pillow lanczos up 3/2", TS_TOL_RESIZE_PILLOW_U8, PIL, LUMEN_INTER_LANCZOS, 0,
           0, 3, 2, 3, 2),
    RESIZE("resize torch linear antialias 2/5", TS_TOL_RESIZE, TORCH, LUMEN_INTER_LINEAR, 1, 0,
           2, 5, 2, 5),
    RESIZE("resize torch cubic align_corners 9/4", TS_TOL_RESIZE, TORCH, LUMEN_INTER_CUBIC, 0, 1,
           9, 4, 9, 4),
    RESIZE("resize torch area 2/3, 1/4", TS_TOL_RESIZE, TORCH, LUMEN_INTER_AREA, 0, 0, 2, 3, 1,
           4),
    /* a window of a larger resize (lumen.dask's blocks): the middle of the result */
    RESIZE_W("resize window opencv cubic up 7/3, down 3/5", TS_TOL_RESIZE, CV, LUMEN_INTER_CUBIC,
             0, 0, 7, 3, 3, 5, 1),
    RESIZE_W("resize window pillow lanczos down 1/2", TS_TOL_RESIZE_PILLOW_U8, PIL,
             LUMEN_INTER_LANCZOS, 0, 0, 1, 2, 1, 2, 1),
    RESIZE_W("resize window torch linear antialias 3/4, area 2", TS_TOL_RESIZE, TORCH,
             LUMEN_INTER_LINEAR, 1, 0, 3, 4, 2, 1, 1),
    /* conv2d                    tr  n  c  h   w  k  r  s  sh sw ph pw dh dw g  oph opw bias */
    TENSOR("conv2d 3x3 pad 1 bias",
           CONV(0, 2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, bias4)),
    TENSOR("conv2d groups 2 stride(2,1) pad(1,2) dil(1,2) bias",
           CONV(0, 1, 4, 9, 11, 6, 3, 3, 2, 1, 1, 2, 1, 2, 2, 0, 0, bias6)),
    TENSOR("conv2d depthwise x2 5x5 pad 2",
           CONV(0, 2, 3, 7, 6, 6, 5, 5, 1, 1, 2, 2, 1, 1, 3, 0, 0, NULL)),
    TENSOR("conv2d 1x1 stride 2 bias",
           CONV(0, 1, 5, 6, 7, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0, 0, bias3)),
    TENSOR("conv2d 5x5 kernel on a 3x2 input pad 2",
           CONV(0, 1, 2, 3, 2, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0, 0, bias3)),
    /* conv_transpose2d */
    TENSOR("conv_transpose2d stride 2 pad 1 outpad 1 bias",
           CONV(1, 2, 4, 5, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, bias3)),
    TENSOR("conv_transpose2d groups 2 dilation(2,1)",
           CONV(1, 1, 4, 4, 5, 4, 3, 3, 1, 1, 0, 0, 2, 1, 2, 0, 0, NULL)),
    TENSOR("conv_transpose2d 5x5 kernel on a 1x1 input bias",
           CONV(1, 2, 3, 1, 1, 2, 5, 5, 1, 1, 0, 0, 1, 1, 1, 0, 0, bias3)),
};
/* clang-format on */

#define ROWS TS_COUNT(rows)

static void fill_kernels(void)
{
    ts_random_kernel(k3x3, 9, 1);
    ts_random_kernel(k4x3, 12, 2);
    ts_random_kernel(k7x7, 49, 3);
    ts_random_kernel(k6x5, 30, 4);
    ts_random_kernel(k5x5, 25, 5);
    ts_random_kernel(kx5, 5, 6);
    ts_random_kernel(ky3, 3, 7);
    ts_random_kernel(kx4, 4, 8);
    ts_random_kernel(ky4, 4, 9);
    ts_random_kernel(kx9, 9, 10);
    ts_random_kernel(ky6, 6, 11);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            k5x3r[i * 5 + j] = ky3[i] * kx5[j];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            k4x4r[i * 4 + j] = ky4[i] * kx4[j];
    for (int i = 0; i < 6; i++)
        bias6[i] = 0.25f * (float)i - 0.625f;
    for (int i = 0; i < 4; i++)
        bias4[i] = 0.5f - 0.375f * (float)i;
    for (int i = 0; i < 3; i++)
        bias3[i] = 0.125f * (float)i - 0.25f;
}

/* ---- cases ------------------------------------------------------------------------------- */

static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32, LUMEN_F16, LUMEN_BF16};
/* conv rows: every tensor of a case in one float dtype */
static const lumen_dtype tensor_dtypes[] = {LUMEN_F32, LUMEN_F16, LUMEN_BF16};
static const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                       LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                       LUMEN_BORDER_WRAP};
/* Every layout of test_support (image ops with its (n, c); conv with the row's): interleaved
 * HWC, planar CHW, padded windows (planar and interleaved), negative strides (c, h and w; rows
 * bottom-up), a batch with a gap between the images. */
static const ts_layout layouts[] = {TS_INTERLEAVED, TS_PLANAR,      TS_STRIDED, TS_STRIDED_HWC,
                                    TS_FLIPPED,     TS_FLIPPED_HWC, TS_BATCH};
/* h x w: an odd, non-square image; one smaller than most kernels; a single pixel */
static const int sizes[][2] = {{13, 17}, {4, 5}, {1, 1}};

typedef struct xb_case {
    ts_layout layout;
    lumen_dtype dtype;
    lumen_border border;
    float value;
    int64_t h, w;
    uint64_t seed;
} xb_case;

/* Non-zero and inside the dtype's range, so the constant border is visible in every dtype. */
static float border_value(lumen_dtype t)
{
    return lumen_dtype_is_float(t) ? -37.5f
           : t == LUMEN_U8         ? 201.0f
                                   : 40000.0f; /* exact in halves */
}

/* ---- devices ------------------------------------------------------------------------------ */

typedef struct xb_stat {
    int64_t cases;
    double f32_ratio;  /* largest |err| / tolerance over f32 results */
    double f32_err;    /* largest |err| over f32 results */
    double int_levels; /* largest |got - reference| over rounded (integer, half) results */
} xb_stat;

typedef struct xb_device {
    int index;
    char spec[32];
    lumen_device_info info;
    bool cpu;
    lumen_context *ctx, *strict;
    int64_t cases, fallbacks, device_views;
    xb_stat stat[ROWS];
} xb_device;

static xb_device devices[MAX_DEVICES];
static int n_devices;
static lumen_context *oracle_ctx;

static lumen_context *make_context(const char *spec, int strict, int simd)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_device(ctx, spec), LUMEN_OK);
    assert_int_equal(lumen_context_set_strict(ctx, strict), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ctx, simd), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, 2), LUMEN_OK);
    /* FP32 whatever $LUMEN_TF32 says: the table's conv bound is for f32 math (TF32's own error,
     * ~1e-3, is documented apart and opt-in) */
    assert_int_equal(lumen_context_set_tf32(ctx, 0), LUMEN_OK);
    return ctx;
}

static int setup_devices(void **state)
{
    (void)state;
    oracle_ctx = make_context("cpu", 0, 0);
    n_devices = lumen_device_count();
    assert_in_range(n_devices, 1, MAX_DEVICES);
    for (int i = 0; i < n_devices; i++) {
        xb_device *d = &devices[i];
        memset(d, 0, sizeof *d);
        d->index = i;
        assert_int_equal(lumen_device_spec(i, d->spec, sizeof d->spec), LUMEN_OK);
        assert_int_equal(lumen_device_get_info(i, &d->info), LUMEN_OK);
        d->cpu = d->info.kind == LUMEN_DEVICE_CPU;
        d->ctx = make_context(d->spec, 0, 1);
        assert_int_equal(lumen_context_device(d->ctx), i);
        if (!d->cpu) d->strict = make_context(d->spec, 1, 1);
    }
    return 0;
}

/* One summary line per device, then each op's largest error on each device: f32 as |err| and
 * as a fraction of its tolerance, integers in levels away from the reference's result. */
static int teardown_devices(void **state)
{
    (void)state;
    for (int i = 0; i < n_devices; i++) {
        const xb_device *d = &devices[i];
        print_message("backend-ops: device %s (%s, %s): %lld cases, %lld fell back to the CPU, "
                      "%lld also with device-resident views\n",
                      d->spec, d->info.backend, lumen_device_kind_name(d->info.kind),
                      (long long)d->cases, (long long)d->fallbacks, (long long)d->device_views);
    }
    for (int r = 0; r < ROWS; r++) {
        char line[1024];
        int n = snprintf(line, sizeof line, "backend-ops: max error %-52s", rows[r].name);
        for (int i = 0; i < n_devices && n < (int)sizeof line; i++) {
            const xb_stat *s = &devices[i].stat[r];
            n += snprintf(line + n, sizeof line - (size_t)n, " | %s f32 %.2g (%.2g tol)",
                          devices[i].spec, s->f32_err, s->f32_ratio);
            if (rows[r].family != XB_TENSOR && n < (int)sizeof line)
                n += snprintf(line + n, sizeof line - (size_t)n, " int %g", s->int_levels);
        }
        print_message("%s\n", line);
    }
    for (int i = 0; i < n_devices; i++) {
        lumen_context_destroy(devices[i].ctx);
        if (devices[i].strict) lumen_context_destroy(devices[i].strict);
    }
    lumen_context_destroy(oracle_ctx);
    return 0;
}

/* The CPU is device 0; the mock must be there (else this test would quietly cover the CPU
 * only); CUDA and other modules are tested where they load, and said so where they do not. */
static void test_devices_present(void **state)
{
    (void)state;
    assert_true(devices[0].cpu);
    assert_string_equal(devices[0].spec, "cpu");
    int mock = 0, cuda = 0;
    for (int i = 0; i < n_devices; i++) {
        mock += !strcmp(devices[i].info.backend, "mock");
        cuda += !strcmp(devices[i].info.backend, "cuda");
        print_message("backend-ops: device %d: %s (%s, %s)\n", i, devices[i].spec,
                      devices[i].info.name, lumen_device_kind_name(devices[i].info.kind));
    }
    assert_int_equal(mock, 1);
    if (!cuda) print_message("backend-ops: no CUDA device here: CUDA not tested\n");
}

/* Runs last: the Vulkan module runs every op of the table on its devices (issue 13), so a case
 * that fell back to the CPU there is a regression, not a missing feature. (The mock runs a few
 * ops on purpose; CUDA's coverage is checked on GPU machines.) */
static void test_vulkan_ran_everything(void **state)
{
    (void)state;
    for (int i = 0; i < n_devices; i++) {
        const xb_device *d = &devices[i];
        if (strcmp(d->info.backend, "vulkan")) continue;
        if (d->fallbacks)
            fail_msg("%s: %lld of %lld cases fell back to the CPU (run with XB_LOG=1 "
                     "LUMEN_LOG=warn to see which)",
                     d->spec, (long long)d->fallbacks, (long long)d->cases);
    }
}

/* ---- one case: inputs, the oracle, the tolerance ------------------------------------------- */

typedef struct xb_data {
    const xb_row *row;
    const xb_case *cs;
    ts_image in[2];
    int n_in;
    unsigned char *in_copy[2];
    int64_t on, oc, oh, ow; /* shape of the output */
    lumen_dtype out_dtype;
    ts_image want;  /* the reference, in the output's layout and dtype */
    ts_image exact; /* integer outputs: the reference into f32 (unrounded) */
    ts_image terms; /* conv: the reference on |x|, |w|, |bias| = sum of |terms| per output */
    const ts_tolerance *tol;
    double bound; /* KSUM_MAX and RANGE: one bound for every element */
    float abs_bias[8];
} xb_data;

static const char *describe(const xb_data *d, const char *where, char *buf, size_t len)
{
    const xb_case *cs = d->cs;
    if (d->row->family == XB_TENSOR)
        snprintf(buf, len, "[%s | %s %s | %s]", d->row->name, lumen_dtype_name(cs->dtype),
                 ts_layout_name(cs->layout), where);
    else
        snprintf(buf, len, "[%s | %s %s n=%lld c=%lld %lldx%lld border=%s value=%g seed=%llu | %s]",
                 d->row->name, lumen_dtype_name(cs->dtype), ts_layout_name(cs->layout),
                 (long long)d->on, (long long)d->oc, (long long)cs->h, (long long)cs->w,
                 lumen_border_name(cs->border), (double)cs->value, (unsigned long long)cs->seed,
                 where);
    return buf;
}

static void fill_uniform(const lumen_image *im, uint64_t seed, bool absolute)
{
    ts_rng rng = ts_rng_make(seed);
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++) {
                    const double v = ts_rng_uniform(&rng, -1.0, 1.0);
                    ts_set(im, b, c, y, x, absolute ? fabs(v) : v);
                }
}

static xb_views views_of(const xb_data *d, const lumen_image *in0, const lumen_image *in1,
                         const lumen_image *out)
{
    xb_views v = {{in0, in1}, out, d->cs->border, d->cs->value, d->row->conv.bias};
    return v;
}

/* max - min of src, with the constant border's value */
static double data_range(const lumen_image *im, lumen_border b, double value)
{
    double lo = INFINITY, hi = -INFINITY;
    if (b == LUMEN_BORDER_CONSTANT) lo = hi = value;
    for (int64_t n = 0; n < im->n; n++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++) {
                    const double v = ts_get(im, n, c, y, x);
                    lo = v < lo ? v : lo, hi = v > hi ? v : hi;
                }
    return hi > lo ? hi - lo : 1.0;
}

/* Runs the oracle (the reference) into dst; its run_info must say it was the scalar CPU. */
static void run_oracle(xb_data *d, const xb_views *v, const char *what)
{
    char label[MSG];
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    const xb_run fn = d->row->oracle ? d->row->oracle : d->row->run;
    const lumen_status s = fn(oracle_ctx, d->row, v, &info);
    describe(d, what, label, sizeof label);
    if (s) fail_msg("%s: status %d (%s)", label, (int)s, lumen_last_error());
    if (strcmp(info.device, "cpu") || strcmp(info.isa, "scalar"))
        fail_msg("%s: the oracle ran on %s (%s), not the scalar CPU", label, info.device, info.isa);
}

static void prepare(xb_data *d, const xb_row *row, const xb_case *cs)
{
    memset(d, 0, sizeof *d);
    d->row = row, d->cs = cs;
    if (row->family == XB_IMAGE) {
        d->n_in = 1;
        ts_layout_shape(cs->layout, &d->on, &d->oc);
        d->oh = cs->h, d->ow = cs->w, d->out_dtype = cs->dtype;
        ts_image_alloc(&d->in[0], cs->layout, cs->dtype, d->on, d->oc, cs->h, cs->w);
        ts_image_fill_random(&d->in[0], cs->seed);
    } else if (row->family == XB_RESIZE) {
        const xb_resize *rs = row->rs;
        d->n_in = 1;
        ts_layout_shape(cs->layout, &d->on, &d->oc);
        int64_t off;
        d->oh = resize_block(resize_whole(cs->h, rs->num_h, rs->den_h), rs->window, &off);
        d->ow = resize_block(resize_whole(cs->w, rs->num_w, rs->den_w), rs->window, &off);
        d->out_dtype = cs->dtype;
        ts_image_alloc(&d->in[0], cs->layout, cs->dtype, d->on, d->oc, cs->h, cs->w);
        ts_image_fill_random(&d->in[0], cs->seed);
    } else {
        const xb_conv *c = &row->conv;
        d->n_in = 2;
        ts_image_alloc(&d->in[0], cs->layout, cs->dtype, c->n, c->c, c->h, c->w);
        if (c->transposed)
            ts_image_alloc(&d->in[1], TS_PLANAR, cs->dtype, c->c, c->k / c->p.groups, c->r, c->s);
        else
            ts_image_alloc(&d->in[1], TS_PLANAR, cs->dtype, c->k, c->c / c->p.groups, c->r, c->s);
        fill_uniform(&d->in[0].v, cs->seed, false);
        fill_uniform(&d->in[1].v, cs->seed + 1, false);
        const lumen_status s =
            c->transposed
                ? lumen_conv_transpose2d_output_size(&d->in[0].v, &d->in[1].v, &c->p, &d->oh,
                                                     &d->ow)
                : lumen_conv2d_output_size(&d->in[0].v, &d->in[1].v, &c->p, &d->oh, &d->ow);
        if (s) fail_msg("%s: output size: %s", row->name, lumen_last_error());
        d->on = c->n, d->oc = c->k, d->out_dtype = cs->dtype;
    }
    for (int i = 0; i < d->n_in; i++) {
        const size_t bytes = d->in[i].elems * d->in[i].es;
        d->in_copy[i] = malloc(bytes);
        assert_non_null(d->in_copy[i]);
        memcpy(d->in_copy[i], d->in[i].buf, bytes);
    }
    d->tol = ts_tolerance_of(row->tol, d->out_dtype);

    /* the reference, and the integer outputs' unrounded values */
    ts_image_alloc(&d->want, cs->layout, d->out_dtype, d->on, d->oc, d->oh, d->ow);
    xb_views v = views_of(d, &d->in[0].v, &d->in[1].v, &d->want.v);
    run_oracle(d, &v, "oracle");
    if (d->tol->rounding) {
        ts_image_alloc(&d->exact, TS_PLANAR, LUMEN_F32, d->on, d->oc, d->oh, d->ow);
        v.out = &d->exact.v;
        run_oracle(d, &v, "oracle into f32");
    }

    const lumen_image *src = &d->in[0].v;
    switch (d->tol->scale) {
    case TS_SCALE_KSUM_MAX: {
        double r = ts_absmax(src);
        if (cs->border == LUMEN_BORDER_CONSTANT && fabs(cs->value) > r) r = fabs(cs->value);
        d->bound = ts_tolerance_bound(d->tol, ts_op_ksum(&row->op, cs->dtype) * r);
        break;
    }
    case TS_SCALE_RANGE:
        d->bound = ts_tolerance_bound(d->tol, data_range(src, cs->border, cs->value));
        break;
    case TS_SCALE_TERMS: {
        /* Every term of the reference on |x|, |w|, |bias| is non-negative: its output is the
         * sum of |x * w| + |bias| per element, up to one rounding. */
        const xb_conv *c = &row->conv;
        ts_image ax, aw;
        /* in the inputs' dtype: |x| and |w| rounded as x and w were */
        ts_image_alloc(&ax, TS_PLANAR, cs->dtype, c->n, c->c, c->h, c->w);
        ts_image_alloc(&aw, TS_PLANAR, cs->dtype, d->in[1].v.n, d->in[1].v.c, c->r, c->s);
        fill_uniform(&ax.v, cs->seed, true);
        fill_uniform(&aw.v, cs->seed + 1, true);
        ts_image_alloc(&d->terms, TS_PLANAR, LUMEN_F32, d->on, d->oc, d->oh, d->ow);
        xb_views t = views_of(d, &ax.v, &aw.v, &d->terms.v);
        if (c->bias) {
            assert_true(c->k <= TS_COUNT(d->abs_bias));
            for (int i = 0; i < c->k; i++)
                d->abs_bias[i] = fabsf(c->bias[i]);
            t.bias = d->abs_bias;
        }
        run_oracle(d, &t, "oracle on |x|, |w|");
        ts_image_free(&ax), ts_image_free(&aw);
        break;
    }
    }
}

static void release(xb_data *d)
{
    for (int i = 0; i < d->n_in; i++) {
        ts_image_free(&d->in[i]);
        free(d->in_copy[i]);
    }
    ts_image_free(&d->want);
    if (d->exact.buf) ts_image_free(&d->exact);
    if (d->terms.buf) ts_image_free(&d->terms);
}

/* ---- comparing -------------------------------------------------------------------------- */

static bool f32_ok(double got, double want, double tol)
{
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= tol;
}

/* got against the reference by the table's rule; updates the row's statistics; fails the test
 * with the first bad element. */
static void compare(const xb_data *d, const lumen_image *got, xb_stat *st, const char *label)
{
    const lumen_image *want = &d->want.v;
    const bool integer = d->tol->rounding;
    int64_t bad = 0;
    char first[MSG] = "";
    for (int64_t b = 0; b < got->n; b++)
        for (int64_t c = 0; c < got->c; c++)
            for (int64_t y = 0; y < got->h; y++)
                for (int64_t x = 0; x < got->w; x++) {
                    const double g = ts_get(got, b, c, y, x), w = ts_get(want, b, c, y, x);
                    const double tol =
                        d->tol->scale == TS_SCALE_TERMS
                            ? ts_tolerance_bound(d->tol, ts_get(&d->terms.v, b, c, y, x))
                            : d->bound;
                    /* Pillow's 8-bit rule is integer arithmetic that rounds and clips between
                     * its passes: the unrounded result is not its answer, the reference's
                     * bytes are. */
                    const bool own = d->row->tol == TS_TOL_RESIZE_PILLOW_U8 &&
                                     got->dtype == LUMEN_U8;
                    const double r = integer && !own ? ts_get(&d->exact.v, b, c, y, x) : w;
                    bool ok;
                    if (integer) {
                        ok = g >= ts_quantize(r - tol, got->dtype) &&
                             g <= ts_quantize(r + tol, got->dtype);
                        if (fabs(g - w) > st->int_levels) st->int_levels = fabs(g - w);
                    } else {
                        ok = f32_ok(g, w, tol);
                        const double err = fabs(g - w);
                        if (ok && isfinite(err)) {
                            if (err > st->f32_err) st->f32_err = err;
                            if (err / tol > st->f32_ratio) st->f32_ratio = err / tol;
                        }
                    }
                    if (ok) continue;
                    if (bad++ == 0)
                        snprintf(first, sizeof first,
                                 "first bad element (b=%lld, c=%lld, y=%lld, x=%lld): got %.9g, "
                                 "reference %.9g (unrounded %.9g), tolerance %.3g (%s)",
                                 (long long)b, (long long)c, (long long)y, (long long)x, g, w, r,
                                 tol, d->tol->why);
                }
    if (bad)
        fail_msg("%s: %s; %lld of %lld elements bad", label, first, (long long)bad,
                 (long long)(got->n * got->c * got->h * got->w));
}

/* ---- running on a device ----------------------------------------------------------------- */

static void check_inputs_untouched(const xb_data *d, const char *label)
{
    for (int i = 0; i < d->n_in; i++)
        if (memcmp(d->in_copy[i], d->in[i].buf, d->in[i].elems * d->in[i].es))
            fail_msg("%s: the op wrote into input %d's buffer", label, i);
}

/* info after a successful run: where it ran (device or, after a fallback, "cpu") and the
 * method. Returns true when it fell back. */
static bool check_info(const xb_data *d, const xb_device *dev, const lumen_run_info *info,
                       const char *label)
{
    if (!info->device) fail_msg("%s: run_info.device not filled", label);
    const bool on_cpu = !strcmp(info->device, "cpu");
    if (!on_cpu && (dev->cpu || strcmp(info->device, dev->spec)))
        fail_msg("%s: run_info.device is '%s', expected '%s' or 'cpu'", label, info->device,
                 dev->spec);
    if (dev->cpu && strcmp(info->isa, "scalar") == 0)
        fail_msg("%s: the CPU fast path reported the scalar reference", label);
    lumen_method want = d->row->want_method;
    /* A device may run the fast Gaussian as its reference, the exact taps, and say so with algo
     * "exact-taps" (CUDA: docs/architecture.md's run_info table); that run is separable. */
    if (want == LUMEN_METHOD_RECURSIVE && info->algo && !strcmp(info->algo, "exact-taps"))
        want = LUMEN_METHOD_SEPARABLE;
    if (want != LUMEN_METHOD_AUTO && info->method != want)
        fail_msg("%s: run_info.method is %s (algo %s), expected %s", label,
                 lumen_method_name(info->method), info->algo ? info->algo : "none",
                 lumen_method_name(want));
    return on_cpu && !dev->cpu;
}

/* Host views on dev's context (and on its strict twin); returns true when it fell back. */
static bool run_host_views(const xb_data *d, xb_device *dev, xb_stat *st)
{
    char label[MSG], msg[MSG];
    describe(d, dev->spec, label, sizeof label);
    ts_image out;
    ts_image_alloc(&out, d->cs->layout, d->out_dtype, d->on, d->oc, d->oh, d->ow);
    ts_image_fill_bytes(&out, 0x3C);
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    xb_views v = views_of(d, &d->in[0].v, &d->in[1].v, &out.v);
    lumen_status s = d->row->run(dev->ctx, d->row, &v, &info);
    if (s) fail_msg("%s: status %d (%s)", label, (int)s, lumen_last_error());
    const bool fell_back = check_info(d, dev, &info, label);
    if (!ts_guards_intact(&out, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
    check_inputs_untouched(d, label);
    compare(d, &out.v, st, label);

    if (dev->strict) {
        /* The strict twin: where the op ran on the device it runs there again; where it fell
         * back, strict mode refuses and dst keeps every byte. */
        describe(d, "strict", label, sizeof label);
        ts_image_fill_bytes(&out, 0x3C);
        unsigned char *before = malloc(out.elems * out.es);
        assert_non_null(before);
        memcpy(before, out.buf, out.elems * out.es);
        memset(&info, 0, sizeof info);
        s = d->row->run(dev->strict, d->row, &v, &info);
        if (fell_back) {
            if (s != LUMEN_ERR_UNSUPPORTED && s != LUMEN_ERR_OUT_OF_MEMORY)
                fail_msg("%s: run_info said cpu (a fallback), but strict mode gave status %d (%s)",
                         label, (int)s, lumen_last_error());
            if (memcmp(before, out.buf, out.elems * out.es))
                fail_msg("%s: refused in strict mode but wrote dst", label);
        } else {
            if (s)
                fail_msg("%s: run_info said %s, but strict mode failed: status %d (%s)", label,
                         dev->spec, (int)s, lumen_last_error());
            if (check_info(d, dev, &info, label))
                fail_msg("%s: strict mode reported a fallback", label);
            compare(d, &out.v, st, label);
        }
        free(before);
    }
    ts_image_free(&out);
    return fell_back;
}

/* A copy of im's whole buffer (view and guards) in dev's memory; returns the view into it. */
static lumen_image to_device(xb_device *dev, const ts_image *im, void **mem)
{
    const size_t bytes = im->elems * im->es;
    assert_int_equal(lumen_device_alloc(dev->ctx, bytes, mem), LUMEN_OK);
    assert_int_equal(lumen_device_upload(dev->ctx, *mem, im->buf, bytes), LUMEN_OK);
    lumen_image v = im->v;
    v.data = (char *)*mem + ((char *)im->v.data - (char *)im->buf);
    v.device = dev->index;
    return v;
}

/* Device-resident views (inputs and output in dev's memory), downloaded and compared. */
static void run_device_views(const xb_data *d, xb_device *dev, xb_stat *st)
{
    char label[MSG], msg[MSG], where[64];
    snprintf(where, sizeof where, "%s, device-resident views", dev->spec);
    describe(d, where, label, sizeof label);
    void *mem[3] = {NULL, NULL, NULL};
    lumen_image in[2];
    for (int i = 0; i < d->n_in; i++)
        in[i] = to_device(dev, &d->in[i], &mem[i]);
    ts_image out;
    ts_image_alloc(&out, d->cs->layout, d->out_dtype, d->on, d->oc, d->oh, d->ow);
    ts_image_fill_bytes(&out, 0x3C);
    const lumen_image dout = to_device(dev, &out, &mem[2]);
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    xb_views v = views_of(d, &in[0], d->n_in > 1 ? &in[1] : NULL, &dout);
    const lumen_status s = d->row->run(dev->ctx, d->row, &v, &info);
    if (s) fail_msg("%s: status %d (%s)", label, (int)s, lumen_last_error());
    check_info(d, dev, &info, label);
    assert_int_equal(lumen_context_synchronize(dev->ctx), LUMEN_OK);
    assert_int_equal(lumen_device_download(dev->ctx, out.buf, mem[2], out.elems * out.es),
                     LUMEN_OK);
    if (!ts_guards_intact(&out, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
    compare(d, &out.v, st, label);
    for (int i = 0; i < d->n_in; i++) {
        /* the inputs' device copies are left as they were */
        ts_image back = d->in[i];
        back.buf = malloc(back.elems * back.es);
        assert_non_null(back.buf);
        assert_int_equal(lumen_device_download(dev->ctx, back.buf, mem[i], back.elems * back.es),
                         LUMEN_OK);
        if (memcmp(back.buf, d->in_copy[i], back.elems * back.es))
            fail_msg("%s: the op wrote into input %d's device buffer", label, i);
        free(back.buf);
    }
    for (int i = 0; i < 3; i++)
        if (mem[i]) lumen_device_free(dev->ctx, mem[i]);
    ts_image_free(&out);
}

static void run_case(const xb_row *row, int r, const xb_case *cs)
{
    xb_data d;
    prepare(&d, row, cs);
    for (int i = 0; i < n_devices; i++) {
        xb_device *dev = &devices[i];
        xb_stat *st = &dev->stat[r];
        st->cases++, dev->cases++;
        dev->fallbacks += run_host_views(&d, dev, st);
        if (!dev->cpu) {
            run_device_views(&d, dev, st);
            dev->device_views++;
        }
    }
    check_inputs_untouched(&d, row->name);
    release(&d);
}

/* One cmocka test per row: every case of the row on every device. */
static void test_row(void **state)
{
    const xb_row *row = *state;
    const int r = (int)(row - rows);
    uint64_t seed = 1000u * (uint64_t)r;
    if (row->family == XB_TENSOR) {
        for (int t = 0; t < TS_COUNT(tensor_dtypes); t++)
            for (int l = 0; l < TS_COUNT(layouts); l++) {
                const xb_case cs = {layouts[l], tensor_dtypes[t], LUMEN_BORDER_CONSTANT, 0.0f, 0, 0,
                                    seed++};
                run_case(row, r, &cs);
            }
        return;
    }
    /* resize has no border: one (ignored) border per case */
    const int n_borders = row->family == XB_RESIZE ? 1 : TS_COUNT(borders);
    for (int s = 0; s < TS_COUNT(sizes); s++)
        for (int l = 0; l < TS_COUNT(layouts); l++)
            for (int t = 0; t < TS_COUNT(dtypes); t++)
                for (int b = 0; b < n_borders; b++) {
                    const xb_case cs = {
                        layouts[l],  dtypes[t],   borders[b], border_value(dtypes[t]),
                        sizes[s][0], sizes[s][1], seed++};
                    run_case(row, r, &cs);
                }
}

int main(void)
{
    /* Before the first lumen call: the device list is built once. Fallbacks are counted here,
     * so the runtime's one warning line per fallback would only drown the output. */
    setenv("LUMEN_MODULE_PATH", LUMEN_MOCK_MODULE, 1);
    if (!getenv("XB_LOG")) setenv("LUMEN_LOG", "error", 1); /* XB_LOG=1: keep $LUMEN_LOG */
    fill_kernels();
    struct CMUnitTest tests[ROWS + 2];
    tests[0] = (struct CMUnitTest){"devices present", test_devices_present, NULL, NULL, NULL};
    for (int r = 0; r < ROWS; r++)
        tests[r + 1] = (struct CMUnitTest){rows[r].name, test_row, NULL, NULL, (void *)&rows[r]};
    tests[ROWS + 1] =
        (struct CMUnitTest){"vulkan ran everything", test_vulkan_ran_everything, NULL, NULL, NULL};
    return cmocka_run_group_tests(tests, setup_devices, teardown_devices);
}
