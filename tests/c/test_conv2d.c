/*
 * NCHW conv2d and conv_transpose2d: against an independent float64 oracle written here, over a
 * grid of kernels, strides, paddings, dilations, groups, batches and layouts; the adjoint
 * identity; output sizes against hand-computed PyTorch values; and every bad argument.
 *
 * TOLERANCE. For each output element, |got - want| <= CONV_REL * A + CONV_ABS, where want is
 * the oracle's double sum and A = sum of |x * w| over its taps + |bias| (the condition-aware
 * form of "relative error <= 1e-6": it is the relative error when all terms share a sign, and
 * stays meaningful when they cancel). The reference accumulates in double and rounds once, so
 * it meets this by a wide margin (2^-24 A); fast paths and devices are held to the same bound.
 */
#define _POSIX_C_SOURCE 200809L /* setenv for LUMEN_CPU_ISA */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONV_REL TS_CONV_REL /* 1e-6: the one table, support/tolerances.h */
#define CONV_ABS TS_CONV_ABS

typedef enum { FWD = 0, TRANSPOSED = 1 } kind;

typedef struct shape {
    int n, c, h, w, k, r, s;
    int sh, sw, ph, pw, dh, dw, groups, oph, opw;
} shape;

/* ---- the independent oracle ----------------------------------------------
 * Scatter order (inputs outermost), unlike the library's gather-per-output loops; output
 * sizes by the PyTorch formulas written out again here. */

static int64_t out_len(kind kd, int in, int kern, int st, int pad, int dil, int op)
{
    if (kd == TRANSPOSED) return (int64_t)(in - 1) * st - 2 * pad + dil * (kern - 1) + op + 1;
    const int64_t num = in + 2 * pad - dil * (kern - 1) - 1;
    return num < 0 ? 0 : num / st + 1;
}

static void out_hw(kind kd, const shape *sp, int64_t *oh, int64_t *ow)
{
    *oh = out_len(kd, sp->h, sp->r, sp->sh, sp->ph, sp->dh, sp->oph);
    *ow = out_len(kd, sp->w, sp->s, sp->sw, sp->pw, sp->dw, sp->opw);
}

typedef struct oracle {
    double *y, *a; /* values and sums of |terms|, NCHW over (n, k, oh, ow) */
    int64_t oh, ow;
} oracle;

/* Adds x(b, c, iy, ix) * wv into output (b, k, oy, ox) when that lies inside. */
static void scatter(oracle *o, const shape *sp, int b, int k, int64_t oy, int64_t ox, double v)
{
    if (oy < 0 || oy >= o->oh || ox < 0 || ox >= o->ow) return;
    const int64_t i = (((int64_t)b * sp->k + k) * o->oh + oy) * o->ow + ox;
    o->y[i] += v;
    o->a[i] += fabs(v);
}

/* conv2d, scattered: input (iy, ix) feeds output (oy, ox) when iy = oy*s - p + r*d. */
static void oracle_fwd_tap(oracle *o, const shape *sp, int b, int c, int iy, int ix, double xv,
                           const lumen_image *w)
{
    const int cg = sp->c / sp->groups, kg = sp->k / sp->groups, g = c / cg;
    for (int kk = g * kg; kk < (g + 1) * kg; kk++)
        for (int r = 0; r < sp->r; r++)
            for (int s = 0; s < sp->s; s++) {
                const int ty = iy + sp->ph - r * sp->dh, tx = ix + sp->pw - s * sp->dw;
                if (ty % sp->sh || tx % sp->sw || ty < 0 || tx < 0) continue;
                scatter(o, sp, b, kk, ty / sp->sh, tx / sp->sw, xv * ts_get(w, kk, c - g * cg, r, s));
            }
}

/* conv_transpose2d, scattered: input (iy, ix) adds to output (iy*s - p + r*d, ...). */
static void oracle_tr_tap(oracle *o, const shape *sp, int b, int c, int iy, int ix, double xv,
                          const lumen_image *w)
{
    const int cg = sp->c / sp->groups, kg = sp->k / sp->groups, g = c / cg;
    for (int kk = 0; kk < kg; kk++)
        for (int r = 0; r < sp->r; r++)
            for (int s = 0; s < sp->s; s++)
                scatter(o, sp, b, g * kg + kk, (int64_t)iy * sp->sh - sp->ph + r * sp->dh,
                        (int64_t)ix * sp->sw - sp->pw + s * sp->dw, xv * ts_get(w, c, kk, r, s));
}

static oracle oracle_run(kind kd, const shape *sp, const lumen_image *x, const lumen_image *w,
                         const float *bias)
{
    oracle o;
    out_hw(kd, sp, &o.oh, &o.ow);
    const size_t plane = (size_t)(o.oh * o.ow), total = (size_t)sp->n * sp->k * plane;
    o.y = calloc(total, sizeof(double));
    o.a = calloc(total, sizeof(double));
    assert_true(o.y && o.a);
    for (int b = 0; b < sp->n; b++)
        for (int c = 0; c < sp->c; c++)
            for (int iy = 0; iy < sp->h; iy++)
                for (int ix = 0; ix < sp->w; ix++) {
                    const double xv = ts_get(x, b, c, iy, ix);
                    if (kd == FWD) oracle_fwd_tap(&o, sp, b, c, iy, ix, xv, w);
                    else oracle_tr_tap(&o, sp, b, c, iy, ix, xv, w);
                }
    for (size_t i = 0; bias && i < total; i++) {
        const double bv = bias[(i / plane) % (size_t)sp->k];
        o.y[i] += bv;
        o.a[i] += fabs(bv);
    }
    return o;
}

/* ---- running one case ---------------------------------------------------- */

static void fill_uniform(const lumen_image *im, uint64_t seed)
{
    ts_rng rng = ts_rng_make(seed);
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++) ts_set(im, b, c, y, x, ts_rng_uniform(&rng, -1, 1));
}

static lumen_conv2d_params params_of(const shape *sp)
{
    lumen_conv2d_params p = {sp->sh, sp->sw, sp->ph, sp->pw, sp->dh, sp->dw, sp->groups, sp->oph,
                             sp->opw};
    return p;
}

static const char *describe(kind kd, const shape *sp, ts_layout lx, ts_layout ly, bool bias)
{
    static char buf[320];
    snprintf(buf, sizeof buf,
             "%s x(%d,%d,%d,%d) K=%d kernel %dx%d stride (%d,%d) pad (%d,%d) dil (%d,%d) "
             "groups %d outpad (%d,%d) x %s y %s bias %s",
             kd == FWD ? "conv2d" : "conv_transpose2d", sp->n, sp->c, sp->h, sp->w, sp->k, sp->r,
             sp->s, sp->sh, sp->sw, sp->ph, sp->pw, sp->dh, sp->dw, sp->groups, sp->oph, sp->opw,
             ts_layout_name(lx), ts_layout_name(ly), bias ? "yes" : "no");
    return buf;
}

static void compare(const lumen_image *y, const oracle *o, const char *what)
{
    for (int64_t b = 0; b < y->n; b++)
        for (int64_t k = 0; k < y->c; k++)
            for (int64_t i = 0; i < y->h; i++)
                for (int64_t j = 0; j < y->w; j++) {
                    const int64_t at = ((b * y->c + k) * y->h + i) * y->w + j;
                    const double got = ts_get(y, b, k, i, j), want = o->y[at];
                    if (!(fabs(got - want) <= CONV_REL * o->a[at] + CONV_ABS))
                        fail_msg("%s: y(%lld,%lld,%lld,%lld) = %.9g, want %.9g (tol %.3g)", what,
                                 (long long)b, (long long)k, (long long)i, (long long)j, got,
                                 want, CONV_REL * o->a[at] + CONV_ABS);
                }
}

static void weights_shape(kind kd, const shape *sp, int64_t d[4])
{
    d[0] = kd == FWD ? sp->k : sp->c;
    d[1] = kd == FWD ? sp->c / sp->groups : sp->k / sp->groups;
    d[2] = sp->r, d[3] = sp->s;
}

/* want_algo: the path that must run (lumen_run_info.algo), or NULL for any. */
static void run_case_algo(lumen_context *ctx, kind kd, const shape *sp, ts_layout lx, ts_layout ly,
                          bool with_bias, uint64_t seed, const char *want_algo)
{
    const char *what = describe(kd, sp, lx, ly, with_bias);
    int64_t wd[4], oh, ow, gh = -1, gw = -1;
    weights_shape(kd, sp, wd);
    out_hw(kd, sp, &oh, &ow);
    ts_image x, w, y;
    ts_image_alloc(&x, lx, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, wd[0], wd[1], wd[2], wd[3]);
    ts_image_alloc(&y, ly, LUMEN_F32, sp->n, sp->k, oh, ow);
    fill_uniform(&x.v, seed);
    fill_uniform(&w.v, seed + 1);
    ts_image_fill_bytes(&y, 0x5A);
    float bias[64];
    for (int i = 0; i < sp->k; i++) bias[i] = (float)(0.25 * (i % 7) - 0.5);
    const lumen_conv2d_params p = params_of(sp);
    const float *bp = with_bias ? bias : NULL;
    lumen_run_info info = {0};
    lumen_status s = kd == FWD ? lumen_conv2d_output_size(&x.v, &w.v, &p, &gh, &gw)
                               : lumen_conv_transpose2d_output_size(&x.v, &w.v, &p, &gh, &gw);
    if (s || gh != oh || gw != ow)
        fail_msg("%s: output size %lldx%lld (status %d: %s), want %lldx%lld", what, (long long)gh,
                 (long long)gw, (int)s, lumen_last_error(), (long long)oh, (long long)ow);
    s = kd == FWD ? lumen_conv2d(ctx, &x.v, &w.v, bp, &p, &y.v, &info)
                  : lumen_conv_transpose2d(ctx, &x.v, &w.v, bp, &p, &y.v, &info);
    if (s) fail_msg("%s: status %d: %s", what, (int)s, lumen_last_error());
    assert_int_equal(info.method, LUMEN_METHOD_DIRECT);
    assert_string_equal(info.device, "cpu");
    if (want_algo && strcmp(info.algo, want_algo))
        fail_msg("%s: ran %s on %s, want %s", what, info.algo, info.isa, want_algo);
    char msg[256];
    if (!ts_guards_intact(&y, msg, sizeof msg)) fail_msg("%s: wrote outside y: %s", what, msg);
    oracle o = oracle_run(kd, sp, &x.v, &w.v, bp);
    compare(&y.v, &o, what);
    free(o.y), free(o.a);
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
}

static void run_case(lumen_context *ctx, kind kd, const shape *sp, ts_layout lx, ts_layout ly,
                     bool with_bias, uint64_t seed)
{
    run_case_algo(ctx, kd, sp, lx, ly, with_bias, seed, NULL);
}

static lumen_context *make_ctx(int threads)
{
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, threads), LUMEN_OK);
    return ctx;
}

/* ---- the grid ------------------------------------------------------------ */

static const ts_layout layouts[] = {TS_PLANAR, TS_STRIDED, TS_FLIPPED, TS_BATCH};

/* Kernels 1/3/5/7 and 3x5, stride 1/2, padding 0/1/3, dilation 1/2, groups 1/2/C, batch 1/3;
 * x is 4 x 11 x 9 (odd, non-square), K = 6; layouts and bias rotate with the case index. */
static void grid(kind kd)
{
    static const int ks[][2] = {{1, 1}, {3, 3}, {5, 5}, {7, 7}, {3, 5}};
    static const int strides[] = {1, 2}, pads[] = {0, 1, 3}, dils[] = {1, 2}, batches[] = {1, 3};
    const int C = 4, groups[] = {1, 2, C};
    lumen_context *ctx = make_ctx(2);
    int idx = 0, ran = 0;
    for (int ki = 0; ki < 5; ki++)
        for (int si = 0; si < 2; si++)
            for (int pi = 0; pi < 3; pi++)
                for (int di = 0; di < 2; di++)
                    for (int gi = 0; gi < 3; gi++)
                        for (int bi = 0; bi < 2; bi++, idx++) {
                            const int st = strides[si], dl = dils[di];
                            /* transposed: the largest legal output padding on h, none on w */
                            const int oph = kd == TRANSPOSED ? (st > dl ? st : dl) - 1 : 0;
                            shape sp = {batches[bi], C, 11, 9, gi == 2 ? 8 : 6, ks[ki][0],
                                        ks[ki][1], st, st, pads[pi], pads[pi], dl, dl,
                                        groups[gi], oph, 0};
                            if (gi == 2) sp.k = 8; /* depthwise with multiplier 2 */
                            int64_t oh, ow;
                            out_hw(kd, &sp, &oh, &ow);
                            if (oh < 1 || ow < 1) continue; /* kernel larger than padded input */
                            run_case(ctx, kd, &sp, layouts[idx % 4], layouts[(idx / 4) % 4],
                                     idx % 3 != 0, 1000u + (uint64_t)idx);
                            ran++;
                        }
    assert_true(ran > 300);
    lumen_context_destroy(ctx);
}

static void test_conv2d_grid(void **state) { (void)state; grid(FWD); }
static void test_conv_transpose2d_grid(void **state) { (void)state; grid(TRANSPOSED); }

/* Different parameters per axis, in both ops. */
static void test_asymmetric(void **state)
{
    (void)state;
    const shape cases[] = {
        {2, 6, 13, 8, 4, 3, 5, 2, 1, 1, 2, 1, 2, 2, 1, 0},
        {1, 3, 11, 12, 5, 5, 3, 1, 3, 0, 1, 2, 1, 1, 1, 2},
        {3, 4, 9, 10, 4, 2, 4, 3, 2, 2, 0, 1, 3, 4, 2, 2},
        {1, 2, 5, 17, 2, 1, 7, 1, 2, 0, 3, 1, 1, 2, 0, 1},
    };
    lumen_context *ctx = make_ctx(2);
    for (int i = 0; i < TS_COUNT(cases); i++) {
        shape fwd = cases[i];
        fwd.oph = fwd.opw = 0;
        run_case(ctx, FWD, &fwd, TS_STRIDED, TS_FLIPPED, i % 2, 50u + i);
        run_case(ctx, TRANSPOSED, &cases[i], TS_FLIPPED, TS_STRIDED, i % 2 == 0, 60u + i);
    }
    lumen_context_destroy(ctx);
}

/* The standard layer shapes, with and without bias, 1 and 3 threads. */
static void test_standard_cases(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int k, s, p;
    } std[] = {{"k3_s1_p0", 3, 1, 0}, {"k3_s1_p1", 3, 1, 1}, {"k3_s2_p1", 3, 2, 1},
               {"k1_s1_p0", 1, 1, 0}, {"k1_s2_p0", 1, 2, 0}, {"k7_s2_p3", 7, 2, 3}};
    for (int t = 1; t <= 3; t += 2) {
        lumen_context *ctx = make_ctx(t);
        for (int i = 0; i < TS_COUNT(std); i++) {
            const int k = std[i].k, s = std[i].s, p = std[i].p;
            shape sp = {2, 3, 15, 14, 8, k, k, s, s, p, p, 1, 1, 1, s > 1, 0};
            shape fwd = sp;
            fwd.oph = 0;
            for (int b = 0; b < 2; b++) {
                run_case(ctx, FWD, &fwd, TS_PLANAR, TS_PLANAR, b, 70u + i);
                run_case(ctx, TRANSPOSED, &sp, TS_PLANAR, TS_STRIDED, b, 80u + i);
            }
        }
        lumen_context_destroy(ctx);
    }
}

/* 1x1 stride-1 convs pack x's planes as runs of whole slivers that cross output rows and images
 * (conv_gemm.c's flat case): two reduction blocks (C = 300), items of many slivers, planes
 * whose size is no multiple of the tile (41 x 40), images with a gap between them (batch) and
 * y in a padded window (its rows are not contiguous: runs split again when storing). */
static void test_flat_pointwise(void **state)
{
    (void)state;
    const shape sp = {2, 300, 41, 40, 20, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0};
    for (int t = 1; t <= 2; t++) {
        lumen_context *ctx = make_ctx(t);
        run_case(ctx, FWD, &sp, TS_PLANAR, TS_PLANAR, t == 1, 90u + t);
        run_case(ctx, FWD, &sp, TS_BATCH, TS_STRIDED, t == 2, 92u + t);
        lumen_context_destroy(ctx);
    }
}

/* ---- the adjoint identity -------------------------------------------------
 * <conv(x), y> == <x, conv_transpose(y)> with the same w and params, no bias: checks the
 * transposed op against the forward one, independently of the oracle. The transposed call
 * maps y (N, K, P, Q) back to (N, C, H', W'), where output padding recovers H' = H when
 * (H + 2p - d(R-1) - 1) is not a multiple of s. */

static double dot(const lumen_image *a, const lumen_image *b, double *abs_sum)
{
    double acc = 0.0;
    *abs_sum = 0.0;
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t c = 0; c < a->c; c++)
            for (int64_t i = 0; i < a->h; i++)
                for (int64_t j = 0; j < a->w; j++) {
                    const double v = ts_get(a, n, c, i, j) * ts_get(b, n, c, i, j);
                    acc += v, *abs_sum += fabs(v);
                }
    return acc;
}

static void adjoint_case(lumen_context *ctx, const shape *sp, uint64_t seed)
{
    lumen_conv2d_params p = params_of(sp);
    p.output_pad_h = p.output_pad_w = 0;
    const lumen_conv2d_params pf = p;
    int64_t wd[4], oh, ow;
    weights_shape(FWD, sp, wd);
    ts_image x, w, y;
    ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, wd[0], wd[1], wd[2], wd[3]);
    fill_uniform(&x.v, seed), fill_uniform(&w.v, seed + 1);
    assert_int_equal(lumen_conv2d_output_size(&x.v, &w.v, &pf, &oh, &ow), LUMEN_OK);
    ts_image_alloc(&y, TS_PLANAR, LUMEN_F32, sp->n, sp->k, oh, ow);
    fill_uniform(&y.v, seed + 2);
    /* conv_transpose2d's weights are (C_in, C_out/g, R, S) with C_in = K here: the same
     * memory as w read as (K, C/g, R, S) is exactly the transpose it expects. */
    p.output_pad_h = (int)((sp->h + 2 * sp->ph - sp->dh * (sp->r - 1) - 1) % sp->sh);
    p.output_pad_w = (int)((sp->w + 2 * sp->pw - sp->dw * (sp->s - 1) - 1) % sp->sw);
    lumen_image cx, ty;
    assert_int_equal(lumen_conv2d_alloc(ctx, &x.v, &w.v, NULL, &pf, &cx, NULL), LUMEN_OK);
    lumen_status s = lumen_conv_transpose2d_alloc(ctx, &y.v, &w.v, NULL, &p, &ty, NULL);
    if (s) fail_msg("adjoint: %s", lumen_last_error());
    assert_true(ty.h == sp->h && ty.w == sp->w && ty.c == sp->c);
    double a1, a2;
    const double lhs = dot(&cx, &y.v, &a1), rhs = dot(&x.v, &ty, &a2);
    if (!(fabs(lhs - rhs) <= 1e-5 * (a1 + a2)))
        fail_msg("adjoint: <conv(x), y> = %.12g but <x, conv_transpose(y)> = %.12g", lhs, rhs);
    lumen_image_free(&cx), lumen_image_free(&ty);
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
}

static void test_adjoint(void **state)
{
    (void)state;
    const shape cases[] = {
        {2, 4, 11, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 4, 12, 10, 6, 3, 5, 2, 3, 1, 2, 1, 2, 2, 0, 0},
        {3, 6, 13, 8, 6, 5, 2, 2, 2, 3, 0, 2, 1, 3, 0, 0},
        {1, 4, 16, 15, 8, 7, 7, 2, 2, 3, 3, 1, 1, 4, 0, 0},
        {2, 3, 9, 9, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0, 0},
    };
    lumen_context *ctx = make_ctx(2);
    for (int i = 0; i < TS_COUNT(cases); i++) adjoint_case(ctx, &cases[i], 300u + i);
    lumen_context_destroy(ctx);
}

/* ---- output sizes against PyTorch's, computed by hand ---------------------- */

typedef struct size_case {
    int h, w, r, s;
    lumen_conv2d_params p;
    int64_t want_h, want_w; /* 0: an error naming the axis */
} size_case;

#define P(sh, sw, ph, pw, dh, dw, g, oh, ow) {sh, sw, ph, pw, dh, dw, g, oh, ow}

static void expect_size(kind kd, const size_case *c)
{
    float xb[1] = {0}, wb[1] = {0};
    lumen_image x = lumen_image_nchw(xb, LUMEN_F32, 1, 2, c->h, c->w);
    lumen_image w = lumen_image_nchw(wb, LUMEN_F32, 2, 2 / c->p.groups, c->r, c->s);
    int64_t oh = -7, ow = -7;
    lumen_status s = kd == FWD ? lumen_conv2d_output_size(&x, &w, &c->p, &oh, &ow)
                               : lumen_conv_transpose2d_output_size(&x, &w, &c->p, &oh, &ow);
    if (c->want_h == 0) {
        assert_int_equal(s, LUMEN_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(lumen_last_error(), "height"));
        return;
    }
    if (s || oh != c->want_h || ow != c->want_w)
        fail_msg("%s %dx%d kernel %dx%d: got %lldx%lld (status %d: %s), want %lldx%lld",
                 kd == FWD ? "conv2d" : "conv_transpose2d", c->h, c->w, c->r, c->s, (long long)oh,
                 (long long)ow, (int)s, lumen_last_error(), (long long)c->want_h,
                 (long long)c->want_w);
}

static void test_output_sizes(void **state)
{
    (void)state;
    /* torch.nn.Conv2d: floor((H + 2p - d(R-1) - 1)/s) + 1 */
    const size_case fwd[] = {
        {224, 224, 7, 7, P(2, 2, 3, 3, 1, 1, 1, 0, 0), 112, 112},
        {7, 7, 3, 3, P(1, 1, 1, 1, 1, 1, 1, 0, 0), 7, 7},
        {56, 56, 3, 3, P(2, 2, 1, 1, 1, 1, 1, 0, 0), 28, 28},
        {10, 10, 3, 3, P(1, 1, 0, 0, 2, 2, 1, 0, 0), 6, 6},
        {5, 5, 3, 3, P(2, 2, 0, 0, 1, 1, 2, 0, 0), 2, 2},
        {13, 9, 3, 5, P(2, 1, 1, 2, 1, 2, 1, 0, 0), 7, 5},
        {6, 6, 3, 3, P(4, 4, 0, 0, 1, 1, 1, 0, 0), 1, 1},
        {4, 4, 5, 1, P(2, 1, 0, 0, 1, 1, 1, 0, 0), 0, 0}, /* num = -1: floor gives 0, not 1 */
        {2, 8, 5, 3, P(1, 1, 1, 0, 1, 1, 1, 0, 0), 0, 0},
    };
    /* torch.nn.ConvTranspose2d: (H-1)s - 2p + d(R-1) + op + 1 */
    const size_case tr[] = {
        {7, 7, 3, 3, P(2, 2, 1, 1, 1, 1, 1, 1, 1), 14, 14},
        {28, 28, 4, 4, P(2, 2, 1, 1, 1, 1, 1, 0, 0), 56, 56},
        {5, 6, 3, 3, P(1, 1, 0, 0, 2, 2, 1, 1, 0), 10, 10},
        {3, 4, 3, 2, P(3, 2, 0, 1, 1, 3, 2, 2, 2), 11, 10},
        {1, 5, 1, 1, P(1, 1, 1, 0, 1, 1, 1, 0, 0), 0, 0},
    };
    for (int i = 0; i < TS_COUNT(fwd); i++) expect_size(FWD, &fwd[i]);
    for (int i = 0; i < TS_COUNT(tr); i++) expect_size(TRANSPOSED, &tr[i]);
}

/* ---- bad arguments ---------------------------------------------------------
 * Each gets its status, a message naming the argument, and leaves y untouched. */

enum { EC = 4, EH = 6, EW = 5, EK = 6 };

typedef struct fixture {
    lumen_context *ctx;
    float xb[2 * EC * EH * EW], wb[EK * EC * 3 * 3], yb[2 * EK * EH * EW];
    lumen_image x, w, y, wt, yt; /* conv: x, w, y; transposed: x, wt, yt */
    lumen_conv2d_params p;
} fixture;

static fixture fx;

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    if (lumen_context_create(&fx.ctx)) return -1;
    for (size_t i = 0; i < sizeof fx.xb / sizeof *fx.xb; i++) fx.xb[i] = (float)(i % 7);
    for (size_t i = 0; i < sizeof fx.wb / sizeof *fx.wb; i++) fx.wb[i] = (float)(i % 3) - 1;
    memset(fx.yb, 0x77, sizeof fx.yb);
    fx.p = lumen_conv2d_params_default();
    fx.p.pad_h = fx.p.pad_w = 1;
    fx.x = lumen_image_nchw(fx.xb, LUMEN_F32, 1, EC, EH, EW);
    fx.w = lumen_image_nchw(fx.wb, LUMEN_F32, EK, EC, 3, 3);
    fx.y = lumen_image_nchw(fx.yb, LUMEN_F32, 1, EK, EH, EW);
    fx.wt = lumen_image_nchw(fx.wb, LUMEN_F32, EC, EK, 3, 3); /* (C, K/g, R, S) */
    fx.yt = fx.y;                                                 /* pad 1 keeps 6x5 */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    lumen_context_destroy(fx.ctx);
    return 0;
}

static bool y_untouched(void)
{
    const unsigned char *b = (const unsigned char *)fx.yb;
    for (size_t i = 0; i < sizeof fx.yb; i++)
        if (b[i] != 0x77) return false;
    return true;
}

static void expect_err_(lumen_status got, lumen_status want, const char *arg, const char *arg2,
                        const char *what, int line)
{
    const char *msg = lumen_last_error();
    if (got != want || !ts_names(msg, arg) || (arg2 && !ts_names(msg, arg2)) || !y_untouched())
        fail_msg("line %d, %s: status %d (want %d), message '%s' (want one naming '%s'%s%s), y %s",
                 line, what, (int)got, (int)want, msg, arg, arg2 ? " and " : "", arg2 ? arg2 : "",
                 y_untouched() ? "untouched" : "WRITTEN");
}
#define expect_err(got, want, arg, arg2, what) expect_err_(got, want, arg, arg2, what, __LINE__)

/* Calls conv2d, or conv_transpose2d with the transposed fixture, on the given pieces. */
static lumen_status call(kind kd, lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                         const lumen_conv2d_params *p, const lumen_image *y)
{
    return kd == FWD ? lumen_conv2d(ctx, x, w, NULL, p, y, NULL)
                     : lumen_conv_transpose2d(ctx, x, w, NULL, p, y, NULL);
}

#define INVALID LUMEN_ERR_INVALID_ARGUMENT

static void errors_common(kind kd)
{
    const lumen_image *W = kd == FWD ? &fx.w : &fx.wt, *Y = kd == FWD ? &fx.y : &fx.yt;
    assert_int_equal(call(kd, fx.ctx, &fx.x, W, &fx.p, Y), LUMEN_OK); /* the fixture is valid */
    memset(fx.yb, 0x77, sizeof fx.yb);
    expect_err(call(kd, NULL, &fx.x, W, &fx.p, Y), INVALID, "ctx", NULL, "NULL ctx");
    expect_err(call(kd, fx.ctx, NULL, W, &fx.p, Y), INVALID, "x", NULL, "NULL x");
    expect_err(call(kd, fx.ctx, &fx.x, NULL, &fx.p, Y), INVALID, "w", NULL, "NULL w");
    expect_err(call(kd, fx.ctx, &fx.x, W, NULL, Y), INVALID, "p", NULL, "NULL p");
    expect_err(call(kd, fx.ctx, &fx.x, W, &fx.p, NULL), INVALID, "y", NULL, "NULL y");
    lumen_image t = fx.x;
    t.dtype = LUMEN_U8;
    expect_err(call(kd, fx.ctx, &t, W, &fx.p, Y), LUMEN_ERR_UNSUPPORTED, "x", "u8", "u8 x");
    t = *W, t.dtype = LUMEN_U16;
    expect_err(call(kd, fx.ctx, &fx.x, &t, &fx.p, Y), LUMEN_ERR_UNSUPPORTED, "w", "u16", "u16 w");
    t = *Y, t.dtype = LUMEN_U8;
    expect_err(call(kd, fx.ctx, &fx.x, W, &fx.p, &t), LUMEN_ERR_UNSUPPORTED, "y", "u8", "u8 y");
    t = fx.x, t.data = NULL;
    expect_err(call(kd, fx.ctx, &t, W, &fx.p, Y), INVALID, "x", NULL, "x data NULL");
    t = fx.x, t.h = 0;
    expect_err(call(kd, fx.ctx, &t, W, &fx.p, Y), INVALID, "x", NULL, "x h = 0");
    t = *W, t.w = -1;
    expect_err(call(kd, fx.ctx, &fx.x, &t, &fx.p, Y), INVALID, "w", NULL, "w w = -1");
}

/* Each field of p set to a bad value, named by that field. */
static void errors_params(kind kd)
{
    const lumen_image *W = kd == FWD ? &fx.w : &fx.wt, *Y = kd == FWD ? &fx.y : &fx.yt;
    static const struct {
        size_t off;
        int v;
        const char *name;
    } bad[] = {
        {offsetof(lumen_conv2d_params, stride_h), 0, "stride_h"},
        {offsetof(lumen_conv2d_params, stride_w), -1, "stride_w"},
        {offsetof(lumen_conv2d_params, dilation_h), 0, "dilation_h"},
        {offsetof(lumen_conv2d_params, dilation_w), -2, "dilation_w"},
        {offsetof(lumen_conv2d_params, pad_h), -1, "pad_h"},
        {offsetof(lumen_conv2d_params, pad_w), -3, "pad_w"},
        {offsetof(lumen_conv2d_params, groups), 0, "groups"},
        {offsetof(lumen_conv2d_params, groups), 3, "groups"},     /* 3 does not divide C = 4 */
        {offsetof(lumen_conv2d_params, output_pad_h), 1, "output_pad_h"}, /* s = d = 1 */
        {offsetof(lumen_conv2d_params, output_pad_w), -1, "output_pad_w"},
    };
    for (int i = 0; i < TS_COUNT(bad); i++) {
        lumen_conv2d_params p = fx.p;
        memcpy((char *)&p + bad[i].off, &bad[i].v, sizeof(int));
        expect_err(call(kd, fx.ctx, &fx.x, W, &p, Y), INVALID, bad[i].name, NULL, bad[i].name);
    }
}

static void test_errors_conv2d(void **state)
{
    (void)state;
    errors_common(FWD);
    errors_params(FWD);
    lumen_conv2d_params p = fx.p;
    /* groups 2 divides C = 4 but not K = 5: w is (5, 2, 3, 3) */
    lumen_image w = lumen_image_nchw(fx.wb, LUMEN_F32, 5, 2, 3, 3);
    p.groups = 2;
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &w, NULL, &p, &fx.y, NULL), INVALID, "groups", NULL, "g | K");
    w = lumen_image_nchw(fx.wb, LUMEN_F32, EK, 3, 3, 3); /* c must be C/groups = 4 */
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &w, NULL, &fx.p, &fx.y, NULL), INVALID, "w", NULL, "w c");
    p = fx.p, p.pad_h = 0, p.pad_w = 0;
    w = lumen_image_nchw(fx.wb, LUMEN_F32, 1, EC, 7, 1); /* 7 rows on 6 */
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &w, NULL, &p, &fx.y, NULL), INVALID, "height", NULL, "empty h");
    w = lumen_image_nchw(fx.wb, LUMEN_F32, 1, EC, 1, 6); /* 6 columns on 5 */
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &w, NULL, &p, &fx.y, NULL), INVALID, "width", NULL, "empty w");
    p = fx.p, p.output_pad_h = 1, p.stride_h = 2; /* legal for transposed, never for conv2d */
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &fx.w, NULL, &p, &fx.y, NULL), INVALID, "output_pad_h",
               NULL, "output padding on conv2d");
    lumen_image y = lumen_image_nchw(fx.yb, LUMEN_F32, 1, EK, EH, EW - 1);
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &fx.w, NULL, &fx.p, &y, NULL), INVALID, "y", "expected",
               "y shape");
    y = lumen_image_nchw(fx.yb, LUMEN_F32, 1, EK - 1, EH, EW);
    expect_err(lumen_conv2d(fx.ctx, &fx.x, &fx.w, NULL, &fx.p, &y, NULL), INVALID, "y", NULL, "y K");
}

static void test_errors_conv_transpose2d(void **state)
{
    (void)state;
    errors_common(TRANSPOSED);
    errors_params(TRANSPOSED);
    lumen_conv2d_params p = fx.p;
    lumen_image w = lumen_image_nchw(fx.wb, LUMEN_F32, EC - 1, EK, 3, 3); /* n must be C */
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &w, NULL, &p, &fx.yt, NULL), INVALID, "w",
               NULL, "wt n");
    /* output padding must be smaller than stride or dilation */
    p.stride_h = 2, p.output_pad_h = 2;
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &p, &fx.yt, NULL), INVALID,
               "output_pad_h", NULL, "op = stride");
    p = fx.p, p.stride_w = 2, p.dilation_w = 3, p.output_pad_w = 3;
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &p, &fx.yt, NULL), INVALID,
               "output_pad_w", NULL, "op = dilation");
    p = fx.p, p.pad_h = 3; /* (6-1) - 6 + 2 + 1 = 2 rows: y shape is wrong, named */
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &p, &fx.yt, NULL), INVALID,
               "y", "expected", "y shape");
    p = fx.p, p.pad_w = 4; /* (5-1) - 8 + 2 + 1 = -1 columns */
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &p, &fx.yt, NULL), INVALID,
               "width", NULL, "empty w");
    p = fx.p, p.groups = 4; /* legal: K = 6 * 4 = 24 channels, so y (K = 6) is the wrong shape */
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &p, &fx.yt, NULL), INVALID,
               "y", NULL, "y K with groups");
}

/* y sharing memory with x or w is refused; views on another device are refused. */
static void test_errors_overlap_device(void **state)
{
    (void)state;
    float buf[EC * EH * EW + EK * EH * EW];
    memset(buf, 0, sizeof buf);
    lumen_image x = lumen_image_nchw(buf, LUMEN_F32, 1, EC, EH, EW);
    lumen_image y = lumen_image_nchw(buf + EC * EH * EW - 1, LUMEN_F32, 1, EK, EH, EW);
    lumen_status s = lumen_conv2d(fx.ctx, &x, &fx.w, NULL, &fx.p, &y, NULL);
    assert_int_equal(s, INVALID);
    assert_true(ts_names(lumen_last_error(), "y") && ts_names(lumen_last_error(), "x"));
    lumen_image wy = lumen_image_nchw(fx.wb, LUMEN_F32, 1, EK, EH, EW); /* y on w's memory */
    s = lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &fx.p, &wy, NULL);
    assert_int_equal(s, INVALID);
    assert_true(ts_names(lumen_last_error(), "w"));
    lumen_image by = lumen_image_nchw(fx.yb, LUMEN_F32, 1, EK, EH, EW);
    s = lumen_conv2d(fx.ctx, &fx.x, &fx.w, (const float *)fx.yb + 3, &fx.p, &by, NULL);
    assert_int_equal(s, INVALID);
    assert_true(ts_names(lumen_last_error(), "bias"));
    lumen_image d = fx.x;
    d.device = 1000; /* not the context's device (the CPU, 0) */
    memset(fx.yb, 0x77, sizeof fx.yb);
    expect_err(lumen_conv2d(fx.ctx, &d, &fx.w, NULL, &fx.p, &fx.y, NULL), INVALID, "x", NULL,
               "x on another device");
    d = fx.y, d.device = 1000;
    expect_err(lumen_conv_transpose2d(fx.ctx, &fx.x, &fx.wt, NULL, &fx.p, &d, NULL), INVALID, "y",
               NULL, "y on another device");
}

/* _alloc: a contiguous NCHW f32 y of the output shape; on failure *y is zeroed. */
static void test_alloc(void **state)
{
    (void)state;
    lumen_image y;
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d_alloc(fx.ctx, &fx.x, &fx.w, NULL, &fx.p, &y, &info), LUMEN_OK);
    assert_true(y.n == 1 && y.c == EK && y.h == EH && y.w == EW && y.dtype == LUMEN_F32);
    assert_true(y.stride_w == 1 && y.stride_h == EW && y.stride_c == EH * EW);
    /* The fast path runs with SIMD on (avx512, avx2+fma or generic); the reference ("scalar")
     * only with SIMD off. */
    assert_true(!strcmp(info.isa, "avx512") || !strcmp(info.isa, "avx2+fma") ||
                !strcmp(info.isa, "generic"));
    assert_int_equal(info.threads, lumen_context_threads(fx.ctx));
    lumen_image_free(&y);
    assert_int_equal(lumen_context_set_simd(fx.ctx, 0), LUMEN_OK);
    assert_int_equal(lumen_conv2d_alloc(fx.ctx, &fx.x, &fx.w, NULL, &fx.p, &y, &info), LUMEN_OK);
    assert_string_equal(info.isa, "scalar");
    assert_int_equal(lumen_context_set_simd(fx.ctx, 1), LUMEN_OK);
    lumen_image_free(&y);
    lumen_conv2d_params p = fx.p;
    p.stride_w = 2, p.output_pad_w = 1;
    assert_int_equal(lumen_conv_transpose2d_alloc(fx.ctx, &fx.x, &fx.wt, NULL, &p, &y, NULL), LUMEN_OK);
    assert_true(y.c == EK && y.h == EH && y.w == (EW - 1) * 2 - 2 + 2 + 1 + 1);
    lumen_image_free(&y);
    const lumen_image zero = {0};
    memset(&y, 0xAB, sizeof y);
    p.stride_h = 0;
    assert_int_equal(lumen_conv_transpose2d_alloc(fx.ctx, &fx.x, &fx.wt, NULL, &p, &y, NULL), INVALID);
    assert_true(ts_names(lumen_last_error(), "stride_h"));
    assert_memory_equal(&y, &zero, sizeof y);
    memset(&y, 0xAB, sizeof y);
    assert_int_equal(lumen_conv2d_alloc(NULL, &fx.x, &fx.w, NULL, &fx.p, &y, NULL), INVALID);
    assert_true(ts_names(lumen_last_error(), "ctx"));
    assert_memory_equal(&y, &zero, sizeof y);
    assert_int_equal(lumen_conv2d_alloc(fx.ctx, &fx.x, &fx.w, NULL, &fx.p, NULL, NULL), INVALID);
    assert_true(ts_names(lumen_last_error(), "y"));
    int64_t oh;
    assert_int_equal(lumen_conv2d_output_size(&fx.x, &fx.w, &fx.p, &oh, NULL), INVALID);
    assert_true(ts_names(lumen_last_error(), "out_w"));
    assert_int_equal(lumen_conv_transpose2d_output_size(&fx.x, &fx.wt, NULL, &oh, &oh), INVALID);
    assert_true(ts_names(lumen_last_error(), "p"));
}

/* A hand-checkable case: x = 1..9 (3x3), w = 1..4 (2x2), bias 0.5, pad 1, stride 2. */
static void test_by_hand(void **state)
{
    (void)state;
    float xb[9], wb[4] = {1, 2, 3, 4}, yb[4], tb[9];
    for (int i = 0; i < 9; i++) xb[i] = (float)(i + 1);
    const float bias = 0.5f;
    lumen_image x = lumen_image_nchw(xb, LUMEN_F32, 1, 1, 3, 3),
                w = lumen_image_nchw(wb, LUMEN_F32, 1, 1, 2, 2),
                y = lumen_image_nchw(yb, LUMEN_F32, 1, 1, 2, 2);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 1;
    assert_int_equal(lumen_conv2d(fx.ctx, &x, &w, &bias, &p, &y, NULL), LUMEN_OK);
    /* windows start at rows/columns -1 and 1; taps outside x are zero padding */
    const float want[4] = {0.5f + 4 * 1, 0.5f + 3 * 2 + 4 * 3, 0.5f + 2 * 4 + 4 * 7,
                           0.5f + 1 * 5 + 2 * 6 + 3 * 8 + 4 * 9};
    for (int i = 0; i < 4; i++) assert_float_equal(yb[i], want[i], 0.0);
    /* transposed back, output padding 1: (2-1)*2 - 2 + 1 + 1 + 1 = 3 per axis */
    p.output_pad_h = p.output_pad_w = 1;
    lumen_image t = lumen_image_nchw(tb, LUMEN_F32, 1, 1, 3, 3);
    assert_int_equal(lumen_conv_transpose2d(fx.ctx, &y, &w, NULL, &p, &t, NULL), LUMEN_OK);
    /* out (oy, ox) = sum of y(iy, ix) w(r, s) with oy = 2 iy - 1 + r */
    const float t_want[9] = {yb[0] * 4, yb[1] * 3, yb[1] * 4, yb[2] * 2, yb[3] * 1,
                             yb[3] * 2, yb[2] * 4, yb[3] * 3, yb[3] * 4};
    for (int i = 0; i < 9; i++) assert_float_equal(tb[i], t_want[i], 0.0);
}

/* ---- every SGEMM microkernel ----------------------------------------------
 * $LUMEN_CPU_ISA caps the kernels a context picks (read when it is created), so the forward
 * grid runs once per ISA this CPU has, and run_info.isa must name the kernel that ran. */

typedef struct isa_case {
    const char *env, *isa, *feature; /* feature: in lumen_cpu_features when the CPU has it */
} isa_case;

static const isa_case isa_cases[] = {
    {"generic", "generic", NULL}, {"avx2", "avx2+fma", "avx2"}, {"avx512", "avx512", "avx512f"}};

static bool cpu_has(const char *feature)
{
    if (!feature) return true;
    lumen_context *ctx = make_ctx(1);
    const bool has = strstr(lumen_cpu_features(ctx), feature) != NULL;
    lumen_context_destroy(ctx);
    return has;
}

/* A 5x5 stride-2 conv (im2col on every ISA: no Winograd) must report the capped kernel. */
static void expect_isa(const isa_case *ic)
{
    lumen_context *ctx = make_ctx(2);
    const shape sp = {2, 5, 13, 12, 20, 5, 5, 2, 2, 2, 2, 1, 1, 1, 0, 0};
    int64_t oh, ow;
    out_hw(FWD, &sp, &oh, &ow);
    ts_image x, w, y;
    ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp.n, sp.c, sp.h, sp.w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp.k, sp.c, sp.r, sp.s);
    ts_image_alloc(&y, TS_PLANAR, LUMEN_F32, sp.n, sp.k, oh, ow);
    fill_uniform(&x.v, 7), fill_uniform(&w.v, 8);
    const lumen_conv2d_params p = params_of(&sp);
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d(ctx, &x.v, &w.v, NULL, &p, &y.v, &info), LUMEN_OK);
    if (strcmp(info.isa, ic->isa) || strcmp(info.algo, "im2col+sgemm"))
        fail_msg("LUMEN_CPU_ISA=%s: ran %s on %s, want im2col+sgemm on %s", ic->env, info.algo,
                 info.isa, ic->isa);
    oracle o = oracle_run(FWD, &sp, &x.v, &w.v, NULL);
    compare(&y.v, &o, ic->env);
    free(o.y), free(o.a);
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
    lumen_context_destroy(ctx);
}

static void test_conv2d_grid_every_isa(void **state)
{
    (void)state;
    int ran = 0;
    for (int i = 0; i < TS_COUNT(isa_cases); i++) {
        const isa_case *ic = &isa_cases[i];
        if (!cpu_has(ic->feature)) {
            print_message("note: no %s on this CPU; its SGEMM kernel is not tested\n", ic->env);
            continue;
        }
        setenv("LUMEN_CPU_ISA", ic->env, 1);
        expect_isa(ic);
        grid(FWD);
        unsetenv("LUMEN_CPU_ISA");
        ran++;
    }
    assert_true(ran >= 1);
}

/* Depthwise planes wide enough for the 16-output blocks read straight from x's rows (stride 1,
 * dense rows) beside the edge outputs, with padding and dilation, on every ISA; flipped and
 * strided x take the padded-copy path. K = 2C: multiplier 2. */
static const shape dw_cases[] = {
    {2, 3, 7, 37, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, 0, 0}, /* interior 35: blocks + edges */
    {1, 4, 6, 40, 8, 3, 5, 1, 1, 1, 2, 1, 2, 4, 0, 0}, /* dilation 2: interior 32 */
    {1, 2, 5, 21, 4, 1, 5, 1, 1, 0, 3, 1, 1, 2, 0, 0}, /* interior 17: one block, overlap */
    {1, 2, 5, 50, 4, 3, 3, 2, 2, 1, 1, 1, 1, 2, 0, 0}, /* stride 2: padded copy */
    /* the whole-vector rows (AVX2, AVX-512): groups of 4 rows and the rows left over, masked
     * edges, a row narrower than a vector, outputs with no tap inside x (pad 4 > reach 2),
     * rows one at a time (stride_h 2, dilation_h 2), R x S other than 3x3 */
    {1, 3, 9, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, 0, 0},
    {2, 2, 11, 29, 2, 5, 3, 1, 1, 2, 4, 1, 1, 2, 0, 0},
    {1, 2, 10, 33, 4, 3, 3, 2, 1, 1, 1, 2, 1, 2, 0, 0},
    {1, 2, 7, 40, 2, 7, 1, 1, 1, 3, 0, 1, 1, 2, 0, 0},
    {1, 2, 13, 58, 2, 3, 3, 1, 1, 1, 1, 1, 1, 2, 0, 0},
};

static void test_depthwise_wide(void **state)
{
    (void)state;
    const shape *cases = dw_cases;
    const int ncases = TS_COUNT(dw_cases);
    static const ts_layout lx[] = {TS_PLANAR, TS_STRIDED, TS_FLIPPED};
    int ran = 0;
    for (int i = 0; i < TS_COUNT(isa_cases); i++) {
        if (!cpu_has(isa_cases[i].feature)) continue;
        setenv("LUMEN_CPU_ISA", isa_cases[i].env, 1);
        lumen_context *ctx = make_ctx(2);
        for (int c = 0; c < ncases; c++)
            for (int l = 0; l < 3; l++, ran++)
                run_case(ctx, FWD, &cases[c], lx[l], TS_PLANAR, (c + l) % 2, 300u + (uint64_t)ran);
        lumen_context_destroy(ctx);
        unsetenv("LUMEN_CPU_ISA");
    }
    assert_true(ran >= 12);
}

/* y of the depthwise cases under the AVX2 and the AVX-512 caps, bit for bit: both sum each
 * output in tap order with one FMA per tap, masked edges skipping the taps outside x. */
static void dw_run_isa(const char *env, const shape *sp, const ts_image *x, const ts_image *w,
                       const float *bias, ts_image *y)
{
    setenv("LUMEN_CPU_ISA", env, 1);
    lumen_context *ctx = make_ctx(2);
    const lumen_conv2d_params p = params_of(sp);
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d(ctx, &x->v, &w->v, bias, &p, &y->v, &info), LUMEN_OK);
    assert_string_equal(info.algo, "depthwise");
    lumen_context_destroy(ctx);
    unsetenv("LUMEN_CPU_ISA");
}

static void test_depthwise_same_bits_avx2_avx512(void **state)
{
    (void)state;
    if (!cpu_has("avx2") || !cpu_has("avx512f")) skip();
    for (int c = 0; c < TS_COUNT(dw_cases); c++) {
        const shape *sp = &dw_cases[c];
        int64_t oh, ow;
        out_hw(FWD, sp, &oh, &ow);
        ts_image x, w, y2, y5;
        ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
        ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp->k, 1, sp->r, sp->s);
        ts_image_alloc(&y2, TS_PLANAR, LUMEN_F32, sp->n, sp->k, oh, ow);
        ts_image_alloc(&y5, TS_PLANAR, LUMEN_F32, sp->n, sp->k, oh, ow);
        fill_uniform(&x.v, 500u + (uint64_t)c), fill_uniform(&w.v, 600u + (uint64_t)c);
        float bias[64];
        for (int i = 0; i < sp->k; i++)
            bias[i] = (float)(0.125 * (i % 5) - 0.25);
        dw_run_isa("avx2", sp, &x, &w, bias, &y2);
        dw_run_isa("avx512", sp, &x, &w, bias, &y5);
        for (int64_t n = 0; n < sp->n; n++)
            for (int64_t k = 0; k < sp->k; k++)
                for (int64_t i = 0; i < oh; i++)
                    for (int64_t j = 0; j < ow; j++) {
                        const float u = (float)ts_get(&y2.v, n, k, i, j),
                                    v = (float)ts_get(&y5.v, n, k, i, j);
                        if (memcmp(&u, &v, sizeof u))
                            fail_msg("depthwise case %d: y[%lld,%lld,%lld,%lld] avx2 %.9g, "
                                     "avx512 %.9g",
                                     c, (long long)n, (long long)k, (long long)i, (long long)j, u,
                                     v);
                    }
        ts_image_free(&x), ts_image_free(&w), ts_image_free(&y2), ts_image_free(&y5);
    }
}

/* ---- the direct path for short reductions (conv_direct.c) -------------------
 * C <= 4, groups 1, under the AVX2 and AVX-512 caps (the generic cap runs im2col+sgemm):
 * strides 1, 2, 4 and asymmetric, paddings (one past the kernel's reach: outputs with no tap
 * inside x), dilation, Q not a multiple of 16 or 8 (partial vectors go through the tile
 * buffer), Q below one vector, K not a multiple of a tile's 8 or 4 channels, batches, P > 16
 * (several bands per image), 484 taps (8 folds), and x and y strided, flipped (y's lanes then
 * not contiguous) or with gaps between images. */
static const shape direct_cases[] = {
    {2, 3, 40, 38, 10, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0, 0},   /* the l4 stem, small: Q = 19 */
    {1, 1, 9, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0},      /* C = 1, Q = 5 */
    {3, 4, 37, 70, 9, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0, 0},    /* Q = 70, P = 37: 3 bands */
    {1, 2, 35, 67, 5, 3, 4, 4, 4, 1, 2, 1, 1, 1, 0, 0},    /* stride 4, Q = 17 */
    {2, 3, 20, 33, 17, 3, 3, 2, 1, 0, 1, 2, 3, 1, 0, 0},   /* strides (2, 1), dilation (2, 3) */
    {1, 4, 18, 48, 16, 11, 11, 1, 1, 5, 5, 1, 1, 1, 0, 0}, /* 484 taps, Q = 48 */
    {1, 3, 24, 64, 8, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0},    /* 1x1, whole vectors only */
    {2, 2, 3, 4, 3, 3, 3, 1, 1, 4, 4, 1, 1, 1, 0, 0},      /* pad 4 > reach 2 */
    {1, 3, 9, 150, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0, 0},   /* K = 64, Q = 75 */
};

static void test_direct_short_reductions(void **state)
{
    (void)state;
    static const ts_layout lx[] = {TS_PLANAR, TS_STRIDED, TS_FLIPPED, TS_BATCH};
    int ran = 0;
    for (int i = 0; i < TS_COUNT(isa_cases); i++) {
        if (!cpu_has(isa_cases[i].feature)) continue;
        const char *want = isa_cases[i].feature ? "direct" : "im2col+sgemm";
        setenv("LUMEN_CPU_ISA", isa_cases[i].env, 1);
        for (int t = 1; t <= 3; t++) {
            lumen_context *ctx = make_ctx(t);
            for (int c = 0; c < TS_COUNT(direct_cases); c++) {
                const int l = (c + t) % 4, ly = (c + 2 * t) % 4;
                run_case_algo(ctx, FWD, &direct_cases[c], lx[l], lx[ly], (c + t) % 2,
                              700u + (uint64_t)ran, want);
                ran++;
            }
            lumen_context_destroy(ctx);
        }
        unsetenv("LUMEN_CPU_ISA");
    }
    assert_true(ran >= 27);
}

/* y of the direct cases under the AVX2 and the AVX-512 caps, bit for bit: both sum each output
 * over the taps in order with one FMA each, folded into y at the same taps. */
static void test_direct_same_bits_avx2_avx512(void **state)
{
    (void)state;
    if (!cpu_has("avx2") || !cpu_has("avx512f")) skip();
    for (int c = 0; c < TS_COUNT(direct_cases); c++) {
        const shape *sp = &direct_cases[c];
        int64_t oh, ow;
        out_hw(FWD, sp, &oh, &ow);
        ts_image x, w, y[2];
        ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
        ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp->k, sp->c, sp->r, sp->s);
        fill_uniform(&x.v, 800u + (uint64_t)c), fill_uniform(&w.v, 900u + (uint64_t)c);
        float bias[64];
        for (int i = 0; i < sp->k; i++)
            bias[i] = (float)(0.125 * (i % 5) - 0.25);
        const lumen_conv2d_params p = params_of(sp);
        static const char *const envs[2] = {"avx2", "avx512"};
        for (int e = 0; e < 2; e++) {
            ts_image_alloc(&y[e], TS_PLANAR, LUMEN_F32, sp->n, sp->k, oh, ow);
            setenv("LUMEN_CPU_ISA", envs[e], 1);
            lumen_context *ctx = make_ctx(2);
            lumen_run_info info = {0};
            assert_int_equal(lumen_conv2d(ctx, &x.v, &w.v, bias, &p, &y[e].v, &info), LUMEN_OK);
            assert_string_equal(info.algo, "direct");
            lumen_context_destroy(ctx);
            unsetenv("LUMEN_CPU_ISA");
        }
        for (int64_t n = 0; n < sp->n; n++)
            for (int64_t k = 0; k < sp->k; k++)
                for (int64_t i = 0; i < oh; i++)
                    for (int64_t j = 0; j < ow; j++) {
                        const float u = (float)ts_get(&y[0].v, n, k, i, j),
                                    v = (float)ts_get(&y[1].v, n, k, i, j);
                        if (memcmp(&u, &v, sizeof u))
                            fail_msg("direct case %d: y[%lld,%lld,%lld,%lld] avx2 %.9g, "
                                     "avx512 %.9g",
                                     c, (long long)n, (long long)k, (long long)i, (long long)j, u,
                                     v);
                    }
        ts_image_free(&x), ts_image_free(&w), ts_image_free(&y[0]), ts_image_free(&y[1]);
    }
}

/* All-positive data and long reductions (1x1 over C = 512, 3x3 over C = 128: 512 and 1152
 * terms per output) on every ISA: the worst case for f32 accumulation, where the error is a
 * fraction of the sum itself rather than cancelling. */
static void fill_positive(const lumen_image *im, uint64_t seed)
{
    ts_rng rng = ts_rng_make(seed);
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++) ts_set(im, b, c, y, x, ts_rng_uniform(&rng, 0, 1));
}

static void positive_case(const shape *sp)
{
    lumen_context *ctx = make_ctx(2);
    int64_t oh, ow;
    out_hw(FWD, sp, &oh, &ow);
    ts_image x, w, y;
    ts_image_alloc(&x, TS_PLANAR, LUMEN_F32, sp->n, sp->c, sp->h, sp->w);
    ts_image_alloc(&w, TS_PLANAR, LUMEN_F32, sp->k, sp->c, sp->r, sp->s);
    ts_image_alloc(&y, TS_PLANAR, LUMEN_F32, sp->n, sp->k, oh, ow);
    fill_positive(&x.v, 11), fill_positive(&w.v, 12);
    const lumen_conv2d_params p = params_of(sp);
    lumen_run_info info = {0};
    assert_int_equal(lumen_conv2d(ctx, &x.v, &w.v, NULL, &p, &y.v, &info), LUMEN_OK);
    oracle o = oracle_run(FWD, sp, &x.v, &w.v, NULL);
    char what[96];
    snprintf(what, sizeof what, "all-positive %dx%d C=%d on %s", sp->r, sp->s, sp->c, info.isa);
    compare(&y.v, &o, what);
    free(o.y), free(o.a);
    ts_image_free(&x), ts_image_free(&w), ts_image_free(&y);
    lumen_context_destroy(ctx);
}

static void test_conv2d_positive_long_sums(void **state)
{
    (void)state;
    /* the last two take the direct path on AVX2 and AVX-512: 147 and 484 taps */
    const shape cases[] = {{2, 512, 9, 10, 40, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0},
                           {1, 128, 9, 8, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0},
                           {2, 3, 30, 34, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0, 0},
                           {1, 4, 20, 24, 12, 11, 11, 1, 1, 5, 5, 1, 1, 1, 0, 0}};
    for (int i = 0; i < TS_COUNT(isa_cases); i++) {
        if (!cpu_has(isa_cases[i].feature)) continue;
        setenv("LUMEN_CPU_ISA", isa_cases[i].env, 1);
        for (int j = 0; j < TS_COUNT(cases); j++) positive_case(&cases[j]);
        unsetenv("LUMEN_CPU_ISA");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_sizes),
        cmocka_unit_test(test_conv2d_grid),
        cmocka_unit_test(test_conv_transpose2d_grid),
        cmocka_unit_test(test_asymmetric),
        cmocka_unit_test(test_standard_cases),
        cmocka_unit_test(test_flat_pointwise),
        cmocka_unit_test(test_adjoint),
        cmocka_unit_test_setup_teardown(test_errors_conv2d, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_conv_transpose2d, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_overlap_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_hand, setup, teardown),
        cmocka_unit_test(test_conv2d_grid_every_isa),
        cmocka_unit_test(test_conv2d_positive_long_sums),
        cmocka_unit_test(test_depthwise_wide),
        cmocka_unit_test(test_depthwise_same_bits_avx2_avx512),
        cmocka_unit_test(test_direct_short_reductions),
        cmocka_unit_test(test_direct_same_bits_avx2_avx512),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
