/*
 * Prepacked conv2d weights (lumen_conv2d_weights_pack / lumen_conv2d_packed): a packed call
 * gives the unpacked call's y bit for bit on every CPU algorithm (Winograd F(2x2) and F(4x4),
 * im2col+SGEMM with
 * 1x1, stride 2 and groups, depthwise, direct) and ISA, with odd layouts, bias and f16 tensors; the
 * pack really is used (weights changed after packing do not change y); a context of another
 * ISA ignores the pack; and mismatching shapes or parameters are refused naming the argument.
 */
#define _POSIX_C_SOURCE 200809L /* setenv for LUMEN_CPU_ISA */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pcase {
    const char *name, *algo; /* the algorithm the SIMD CPU paths pick */
    int n, c, h, w, k, r, s, st, pad, groups;
} pcase;

static const pcase cases[] = {
    {"3x3 winograd", "winograd-f2x2", 2, 32, 14, 13, 32, 3, 3, 1, 1, 1},
    {"3x3 winograd f4", "winograd-f4x4", 4, 16, 16, 15, 24, 3, 3, 1, 1, 1},
    {"3x3 winograd K%mr", "winograd-f2x2", 1, 16, 9, 11, 20, 3, 3, 1, 0, 1},
    {"3x3 winograd groups", "winograd-f2x2", 1, 64, 8, 8, 64, 3, 3, 1, 1, 2},
    {"1x1", "im2col+sgemm", 2, 16, 7, 9, 24, 1, 1, 1, 0, 1},
    {"depthwise", "depthwise", 2, 8, 11, 10, 16, 3, 3, 1, 1, 8},
    {"3x3 stride 2", "im2col+sgemm", 1, 8, 15, 14, 12, 3, 3, 2, 1, 1},
    {"3x3 groups 2", "im2col+sgemm", 2, 8, 9, 9, 12, 3, 3, 1, 1, 2},
    {"7x7 stem", "direct", 1, 3, 20, 18, 16, 7, 7, 2, 3, 1},
    {"7x7 stem C=5", "im2col+sgemm", 1, 5, 20, 18, 16, 7, 7, 2, 3, 1},
};

/* The algorithm a context runs for case c: the direct path has AVX2 and AVX-512 kernels only,
 * so the generic cap (or a CPU without AVX2) runs im2col+SGEMM there. */
static const char *want_algo(lumen_context *ctx, const pcase *c)
{
    if (!strcmp(c->algo, "direct") && !strstr(lumen_cpu_features(ctx), "avx2"))
        return "im2col+sgemm";
    return c->algo;
}

static lumen_context *make_ctx(void)
{
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, 2), LUMEN_OK);
    return ctx;
}

static lumen_conv2d_params params(const pcase *c)
{
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.stride_h = p.stride_w = c->st;
    p.pad_h = p.pad_w = c->pad;
    p.groups = c->groups;
    return p;
}

static void fill(const lumen_image *im, uint64_t seed)
{
    ts_rng rng = ts_rng_make(seed);
    for (int64_t b = 0; b < im->n; b++)
        for (int64_t c = 0; c < im->c; c++)
            for (int64_t y = 0; y < im->h; y++)
                for (int64_t x = 0; x < im->w; x++)
                    ts_set(im, b, c, y, x, ts_rng_uniform(&rng, -1, 1));
}

/* y of both calls equal as bits (ts_get widens exactly; -0 and NaN do not occur here). */
static void expect_same(const lumen_image *a, const lumen_image *b, const char *what)
{
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t c = 0; c < a->c; c++)
            for (int64_t y = 0; y < a->h; y++)
                for (int64_t x = 0; x < a->w; x++) {
                    const float u = (float)ts_get(a, n, c, y, x), v = (float)ts_get(b, n, c, y, x);
                    if (memcmp(&u, &v, sizeof u))
                        fail_msg("%s: y[%lld,%lld,%lld,%lld] packed %.9g, unpacked %.9g", what,
                                 (long long)n, (long long)c, (long long)y, (long long)x, v, u);
                }
}

typedef struct tensors {
    ts_image x, w, y0, y1;
    float bias[64];
} tensors;

static void make_tensors(tensors *t, const pcase *c, lumen_dtype dt, int variant)
{
    const lumen_conv2d_params p = params(c);
    int64_t oh, ow;
    ts_image_alloc(&t->x, variant ? TS_FLIPPED : TS_PLANAR, dt, c->n, c->c, c->h, c->w);
    ts_image_alloc(&t->w, variant ? TS_STRIDED : TS_PLANAR, dt, c->k, c->c / c->groups, c->r, c->s);
    fill(&t->x.v, 11), fill(&t->w.v, 12);
    assert_int_equal(lumen_conv2d_output_size(&t->x.v, &t->w.v, &p, &oh, &ow), LUMEN_OK);
    ts_image_alloc(&t->y0, TS_PLANAR, dt, c->n, c->k, oh, ow);
    ts_image_alloc(&t->y1, variant ? TS_STRIDED : TS_PLANAR, dt, c->n, c->k, oh, ow);
    for (int i = 0; i < 64; i++)
        t->bias[i] = 0.01f * (float)(i - 20);
}

static void free_tensors(tensors *t)
{
    ts_image_free(&t->x), ts_image_free(&t->w), ts_image_free(&t->y0), ts_image_free(&t->y1);
}

/* One case on one context: packed == unpacked, twice (the pack is not consumed), and the pack
 * is what runs: w changed after packing leaves the packed y as it was. */
static void run_case(lumen_context *ctx, const pcase *c, lumen_dtype dt, int variant,
                     const char *isa)
{
    char what[160];
    snprintf(what, sizeof what, "%s, %s, %s, variant %d", c->name, isa, lumen_dtype_name(dt),
             variant);
    tensors t;
    make_tensors(&t, c, dt, variant);
    const lumen_conv2d_params p = params(c);
    const int64_t xs[4] = {c->n, c->c, c->h, c->w};
    const float *bias = variant ? t.bias : NULL;
    lumen_conv2d_weights *wp = NULL;
    assert_int_equal(lumen_conv2d_weights_pack(ctx, xs, &t.w.v, &p, &wp), LUMEN_OK);
    size_t bytes = 0;
    const char *algo = lumen_conv2d_weights_algo(wp, &bytes), *want = want_algo(ctx, c);
    if (strcmp(algo, want)) fail_msg("%s: packed for %s, want %s", what, algo, want);
    /* depthwise and direct transform the weights per call (a small copy): nothing packed */
    const bool transforms = strcmp(algo, "depthwise") != 0 && strcmp(algo, "direct") != 0;
    if (transforms != (bytes > 0)) fail_msg("%s: %zu bytes of packed weights", what, bytes);

    lumen_run_info i0 = {0}, i1 = {0};
    assert_int_equal(lumen_conv2d(ctx, &t.x.v, &t.w.v, bias, &p, &t.y0.v, &i0), LUMEN_OK);
    for (int rep = 0; rep < 2; rep++) {
        ts_image_fill_bytes(&t.y1, 0x5a);
        const lumen_conv2d_params *pp = rep ? &p : NULL;
        assert_int_equal(lumen_conv2d_packed(ctx, &t.x.v, wp, bias, pp, &t.y1.v, &i1), LUMEN_OK);
        expect_same(&t.y0.v, &t.y1.v, what);
        if (strcmp(i0.algo, i1.algo) || strcmp(i0.algo, want))
            fail_msg("%s: ran %s packed, %s unpacked", what, i1.algo, i0.algo);
    }
    char msg[200];
    if (!ts_guards_intact(&t.y1, msg, sizeof msg)) fail_msg("%s: %s", what, msg);
    if (transforms) { /* against the contract, to see the pack at work */
        fill(&t.w.v, 99);
        assert_int_equal(lumen_conv2d_packed(ctx, &t.x.v, wp, bias, NULL, &t.y1.v, NULL), LUMEN_OK);
        expect_same(&t.y0.v, &t.y1.v, "pack used");
    }
    lumen_conv2d_weights_free(wp);
    free_tensors(&t);
}

static const char *const isas[] = {"generic", "avx2", "avx512"};

static void test_packed_equals_unpacked(void **state)
{
    (void)state;
    for (int i = 0; i < TS_COUNT(isas); i++) {
        setenv("LUMEN_CPU_ISA", isas[i], 1); /* a cap: a CPU without it runs what it has */
        lumen_context *ctx = make_ctx();
        for (int k = 0; k < TS_COUNT(cases); k++)
            for (int variant = 0; variant < 2; variant++)
                run_case(ctx, &cases[k], LUMEN_F32, variant, isas[i]);
        run_case(ctx, &cases[0], LUMEN_F16, 1, isas[i]);
        run_case(ctx, &cases[3], LUMEN_BF16, 0, isas[i]);
        lumen_context_destroy(ctx);
        unsetenv("LUMEN_CPU_ISA");
    }
}

/* Packed on one ISA, called on a context of another (and on one with SIMD off): the pack does
 * not fit that kernel, so the call transforms w itself and matches its own unpacked result. */
static void test_other_context(void **state)
{
    (void)state;
    lumen_context *a = make_ctx();
    setenv("LUMEN_CPU_ISA", "generic", 1);
    lumen_context *b = make_ctx();
    unsetenv("LUMEN_CPU_ISA");
    lumen_context *c = make_ctx();
    assert_int_equal(lumen_context_set_simd(c, false), LUMEN_OK);
    for (int k = 0; k < 4; k++) {
        tensors t;
        make_tensors(&t, &cases[k], LUMEN_F32, 0);
        const lumen_conv2d_params p = params(&cases[k]);
        const int64_t xs[4] = {cases[k].n, cases[k].c, cases[k].h, cases[k].w};
        lumen_conv2d_weights *wp = NULL;
        assert_int_equal(lumen_conv2d_weights_pack(a, xs, &t.w.v, &p, &wp), LUMEN_OK);
        lumen_context *others[] = {b, c};
        for (int o = 0; o < 2; o++) {
            assert_int_equal(lumen_conv2d(others[o], &t.x.v, &t.w.v, NULL, &p, &t.y0.v, NULL),
                             LUMEN_OK);
            assert_int_equal(lumen_conv2d_packed(others[o], &t.x.v, wp, NULL, NULL, &t.y1.v, NULL),
                             LUMEN_OK);
            expect_same(&t.y0.v, &t.y1.v, o ? "simd off" : "generic context");
        }
        lumen_conv2d_weights_free(wp);
        free_tensors(&t);
    }
    lumen_context_destroy(a), lumen_context_destroy(b), lumen_context_destroy(c);
}

static void expect_err_(lumen_status got, const char *arg, const char *what, int line)
{
    const char *msg = lumen_last_error();
    if (got != LUMEN_ERR_INVALID_ARGUMENT || !ts_names(msg, arg))
        fail_msg("line %d, %s: status %d, message '%s' (want one naming '%s')", line, what,
                 (int)got, msg, arg);
}
#define expect_err(got, arg, what) expect_err_(got, arg, what, __LINE__)

static void test_errors(void **state)
{
    (void)state;
    lumen_context *ctx = make_ctx();
    const pcase *c = &cases[0];
    tensors t;
    make_tensors(&t, c, LUMEN_F32, 0);
    lumen_conv2d_params p = params(c);
    int64_t xs[4] = {c->n, c->c, c->h, c->w};
    lumen_conv2d_weights *wp = (lumen_conv2d_weights *)&t; /* must be cleared on failure */

    xs[1] = 33;
    expect_err(lumen_conv2d_weights_pack(ctx, xs, &t.w.v, &p, &wp), "w", "pack: C mismatch");
    assert_null(wp);
    xs[1] = c->c;
    p.groups = 3;
    expect_err(lumen_conv2d_weights_pack(ctx, xs, &t.w.v, &p, &wp), "groups", "pack: groups");
    p = params(c);
    expect_err(lumen_conv2d_weights_pack(ctx, NULL, &t.w.v, &p, &wp), "x_shape", "NULL shape");
    expect_err(lumen_conv2d_weights_pack(ctx, xs, &t.w.v, &p, NULL), "out", "NULL out");
    assert_int_equal(lumen_conv2d_weights_pack(ctx, xs, &t.w.v, &p, &wp), LUMEN_OK);

    expect_err(lumen_conv2d_packed(ctx, &t.x.v, NULL, NULL, NULL, &t.y1.v, NULL), "wp", "NULL");
    /* x of another shape (each axis), with y of the matching output shape */
    for (int axis = 0; axis < 4; axis++) {
        int64_t d[4] = {c->n, c->c, c->h, c->w};
        d[axis] += axis == 1 ? c->c : 1;
        ts_image x2;
        ts_image_alloc(&x2, TS_PLANAR, LUMEN_F32, d[0], d[1], d[2], d[3]);
        fill(&x2.v, 5);
        expect_err(lumen_conv2d_packed(ctx, &x2.v, wp, NULL, NULL, &t.y1.v, NULL), "x", "x shape");
        ts_image_free(&x2);
    }
    /* parameters that differ from the packed ones, each named */
    static const char *const fields[] = {"stride_h",   "stride_w",   "pad_h", "pad_w",
                                         "dilation_h", "dilation_w", "groups"};
    for (int f = 0; f < 7; f++) {
        lumen_conv2d_params q = p;
        int *v[] = {&q.stride_h,   &q.stride_w,   &q.pad_h, &q.pad_w,
                    &q.dilation_h, &q.dilation_w, &q.groups};
        *v[f] += 1;
        expect_err(lumen_conv2d_packed(ctx, &t.x.v, wp, NULL, &q, &t.y1.v, NULL), fields[f],
                   fields[f]);
    }
    /* y of a wrong shape: the ordinary checks still apply */
    ts_image y2;
    ts_image_alloc(&y2, TS_PLANAR, LUMEN_F32, c->n, c->k, 3, 3);
    expect_err(lumen_conv2d_packed(ctx, &t.x.v, wp, NULL, NULL, &y2.v, NULL), "y", "y shape");
    ts_image_free(&y2);
    assert_int_equal(lumen_conv2d_packed(ctx, &t.x.v, wp, NULL, NULL, &t.y1.v, NULL), LUMEN_OK);
    lumen_conv2d_weights_free(wp);
    lumen_conv2d_weights_free(NULL);
    free_tensors(&t);
    lumen_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_equals_unpacked),
        cmocka_unit_test(test_other_context),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
