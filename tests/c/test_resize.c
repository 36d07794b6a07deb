/*
 * lumen_resize's own semantics (docs/resize.md), worked by hand on tiny rows: OpenCV's
 * half-pixel linear, its INTER_AREA and INTER_NEAREST floor rule, Pillow's box with ties
 * rounded half up, torch's align_corners; the output size of factors per rule; interruption;
 * and every bad argument named. The peers themselves are compared in tests/python/test_resize.py
 * and every device against the reference in test_backend_ops.c.
 */
#define _POSIX_C_SOURCE 200809L /* setenv for LUMEN_CPU_ISA */
#include "lumen_ops.h"
#include "test_support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static lumen_context *ctx;

/* v in [0, 1) as an element of dtype t (integers spread over their range). */
static void store_unit(unsigned char *p, lumen_dtype t, double v)
{
    if (t == LUMEN_U8)
        *p = (uint8_t)(v * 256);
    else if (t == LUMEN_U16)
        *(uint16_t *)p = (uint16_t)(v * 65536);
    else
        *(float *)p = (float)v;
}

/* Element i of a contiguous buffer of dtype t. */
static double flat_get(const unsigned char *p, lumen_dtype t, size_t i)
{
    if (t == LUMEN_U8) return p[i];
    if (t == LUMEN_U16) return ((const uint16_t *)p)[i];
    return ((const float *)p)[i];
}

/* Sets element i of a contiguous u8 or u16 buffer. */
static void flat_put(void *p, lumen_dtype t, size_t i, double v)
{
    if (t == LUMEN_U8)
        ((uint8_t *)p)[i] = (uint8_t)v;
    else
        ((uint16_t *)p)[i] = (uint16_t)v;
}

static int setup(void **state)
{
    (void)state;
    return lumen_context_create(&ctx) == LUMEN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    lumen_context_destroy(ctx);
    return 0;
}

/* A 1-row f32 resize of in[n] to out[m] with these options; checks within 1e-6. */
static void row_f32(const float *in, int n, const float *want, int m, lumen_resize_options o)
{
    float got[64];
    float src[64];
    memcpy(src, in, sizeof(float) * (size_t)n);
    lumen_image s = lumen_image_nhwc(src, LUMEN_F32, 1, 1, n, 1);
    lumen_image d = lumen_image_nhwc(got, LUMEN_F32, 1, 1, m, 1);
    assert_int_equal(lumen_resize(ctx, &s, &d, &o, NULL), LUMEN_OK);
    for (int i = 0; i < m; i++)
        if (fabsf(got[i] - want[i]) > 1e-6f)
            fail_msg("%s %s: out[%d] = %.9g, expected %.9g", lumen_resize_rule_name(o.rule),
                     lumen_interpolation_name(o.interpolation), i, (double)got[i], (double)want[i]);
}

static lumen_resize_options opts(lumen_resize_rule r, lumen_interpolation ip)
{
    lumen_resize_options o = lumen_resize_options_default();
    o.rule = r, o.interpolation = ip;
    return o;
}

static void test_opencv_by_hand(void **state)
{
    (void)state;
    /* linear 2 -> 4: centres at -0.25 (edge), 0.25, 0.75, 1.25 (edge) */
    const float two[2] = {0, 100};
    row_f32(two, 2, (const float[]){0, 25, 75, 100}, 4,
            opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_LINEAR));
    /* area 4 -> 2: means of pairs; 3 -> 2: thirds (1, 0.5) / 1.5 */
    row_f32((const float[]){10, 20, 30, 40}, 4, (const float[]){15, 35}, 2,
            opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_AREA));
    row_f32((const float[]){30, 60, 90}, 3, (const float[]){40, 80}, 2,
            opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_AREA));
    /* nearest 3 -> 5: floor(x * 3 / 5) = 0 0 1 1 2 (not the centre rule) */
    row_f32((const float[]){1, 2, 3}, 3, (const float[]){1, 1, 2, 2, 3}, 5,
            opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_NEAREST));
    /* nearest-exact 3 -> 5: floor((x + 0.5) * 3 / 5) = 0 0 1 2 2 */
    row_f32((const float[]){1, 2, 3}, 3, (const float[]){1, 1, 2, 3, 3}, 5,
            opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_NEAREST_EXACT));
    /* cubic on a constant row is the constant (weights sum to 1, edges replicated) */
    row_f32((const float[]){7, 7, 7}, 3, (const float[]){7, 7, 7, 7, 7, 7, 7}, 7,
            opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_CUBIC));
}

static void test_torch_align_corners(void **state)
{
    (void)state;
    lumen_resize_options o = opts(LUMEN_RESIZE_TORCH, LUMEN_INTER_LINEAR);
    o.align_corners = 1; /* 2 -> 5: corners meet, steps of a quarter */
    row_f32((const float[]){0, 100}, 2, (const float[]){0, 25, 50, 75, 100}, 5, o);
    /* adaptive average pooling 5 -> 2: [0, 3) and [2, 5) overlap on the middle pixel */
    row_f32((const float[]){1, 2, 3, 4, 5}, 5, (const float[]){2, 4}, 2,
            opts(LUMEN_RESIZE_TORCH, LUMEN_INTER_AREA));
}

/* Pillow's 8-bit rule rounds half up (its fixed point adds one half and shifts). */
static void test_pillow_u8_rounds_half_up(void **state)
{
    (void)state;
    uint8_t src[4] = {2, 3, 4, 5}, dst[2];
    lumen_image s = lumen_image_nhwc(src, LUMEN_U8, 1, 1, 4, 1);
    lumen_image d = lumen_image_nhwc(dst, LUMEN_U8, 1, 1, 2, 1);
    lumen_resize_options o = opts(LUMEN_RESIZE_PILLOW, LUMEN_INTER_BOX);
    assert_int_equal(lumen_resize(ctx, &s, &d, &o, NULL), LUMEN_OK);
    assert_int_equal(dst[0], 3); /* 2.5 */
    assert_int_equal(dst[1], 5); /* 4.5 */
    o.rule = LUMEN_RESIZE_OPENCV, o.interpolation = LUMEN_INTER_AREA;
    assert_int_equal(lumen_resize(ctx, &s, &d, &o, NULL), LUMEN_OK);
    assert_int_equal(dst[0], 2); /* 2.5 to even, as cv2's saturate_cast */
    assert_int_equal(dst[1], 4); /* 4.5 to even */
}

static void test_output_size(void **state)
{
    (void)state;
    int64_t h, w;
    /* OpenCV rounds (ties to even, as saturate_cast), torch floors */
    assert_int_equal(lumen_resize_output_size(5, 7, 0.5, 0.5, LUMEN_RESIZE_OPENCV, &h, &w),
                     LUMEN_OK);
    assert_int_equal(h, 2), assert_int_equal(w, 4);
    assert_int_equal(lumen_resize_output_size(5, 7, 0.5, 0.5, LUMEN_RESIZE_TORCH, &h, &w),
                     LUMEN_OK);
    assert_int_equal(h, 2), assert_int_equal(w, 3);
    assert_int_equal(lumen_resize_output_size(5, 7, 0.01, 1, LUMEN_RESIZE_TORCH, &h, &w),
                     LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "fx"));
}

static void expect_error(const lumen_image *s, const lumen_image *d, lumen_resize_options o,
                         const char *name)
{
    assert_int_equal(lumen_resize(ctx, s, d, &o, NULL), LUMEN_ERR_INVALID_ARGUMENT);
    if (strncmp(lumen_last_error(), name, strlen(name)))
        fail_msg("expected a message about %s, got '%s'", name, lumen_last_error());
}

static void test_bad_arguments(void **state)
{
    (void)state;
    float buf[64] = {0}, out[64];
    lumen_image s = lumen_image_nhwc(buf, LUMEN_F32, 1, 4, 4, 1);
    lumen_image d = lumen_image_nhwc(out, LUMEN_F32, 1, 2, 3, 1);
    lumen_image d2 = lumen_image_nhwc(out, LUMEN_F32, 1, 2, 3, 2);
    lumen_image over = lumen_image_nhwc(buf + 8, LUMEN_F32, 1, 2, 3, 1);
    expect_error(&s, &d2, opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_LINEAR), "dst");
    expect_error(&s, &over, opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_LINEAR), "dst");
    expect_error(&s, &d, opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_BOX), "interpolation");
    expect_error(&s, &d, opts(LUMEN_RESIZE_PILLOW, LUMEN_INTER_AREA), "interpolation");
    expect_error(&s, &d, opts(LUMEN_RESIZE_TORCH, LUMEN_INTER_LANCZOS), "interpolation");
    expect_error(&s, &d, opts((lumen_resize_rule)7, LUMEN_INTER_LINEAR), "rule");
    expect_error(&s, &d, opts(LUMEN_RESIZE_OPENCV, (lumen_interpolation)9), "interpolation");
    lumen_resize_options o = opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_LINEAR);
    o.antialias = 1;
    expect_error(&s, &d, o, "antialias");
    o = opts(LUMEN_RESIZE_TORCH, LUMEN_INTER_NEAREST);
    o.align_corners = 1;
    expect_error(&s, &d, o, "align_corners");
    o = opts(LUMEN_RESIZE_OPENCV, LUMEN_INTER_LINEAR);
    o.fx = NAN;
    expect_error(&s, &d, o, "fx");
    assert_int_equal(lumen_resize(NULL, &s, &d, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
}

/* Every rule and interpolation, 1, 3 and 4 interleaved channels, u8/u16/f32, up, down, one
 * axis and mixed: the fast paths against the scalar reference (SIMD off), on buffers of the
 * views' exact size, so that the sanitizer build catches a read past the source's last pixel
 * (the 4-lane pixels of three channels) or a write past the output. */
static void test_fast_paths_against_reference(void **state)
{
    (void)state;
    static const struct {
        lumen_resize_rule rule;
        lumen_interpolation ip;
        int aa, ac;
    } cases[] = {
        {LUMEN_RESIZE_OPENCV, LUMEN_INTER_LINEAR, 0, 0},
        {LUMEN_RESIZE_OPENCV, LUMEN_INTER_CUBIC, 0, 0},
        {LUMEN_RESIZE_OPENCV, LUMEN_INTER_AREA, 0, 0},
        {LUMEN_RESIZE_OPENCV, LUMEN_INTER_LANCZOS, 0, 0},
        {LUMEN_RESIZE_OPENCV, LUMEN_INTER_NEAREST, 0, 0},
        {LUMEN_RESIZE_PILLOW, LUMEN_INTER_CUBIC, 0, 0},
        {LUMEN_RESIZE_PILLOW, LUMEN_INTER_BOX, 0, 0},
        {LUMEN_RESIZE_TORCH, LUMEN_INTER_LINEAR, 1, 0},
        {LUMEN_RESIZE_TORCH, LUMEN_INTER_CUBIC, 0, 1},
        {LUMEN_RESIZE_TORCH, LUMEN_INTER_AREA, 0, 0},
    };
    static const int sizes[][2] = {{20, 13}, {122, 90}, {61, 20}, {5, 200}, {1, 1}}; /* w, h */
    static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};
    static const int channels[] = {1, 3, 4};
    lumen_context *ref;
    assert_int_equal(lumen_context_create(&ref), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ref, 0), LUMEN_OK);
    const int sh = 47, sw = 61;
    for (int t = 0; t < 3; t++)
        for (int ci = 0; ci < 3; ci++) {
            const lumen_dtype dt = dtypes[t];
            const int C = channels[ci];
            const size_t es = lumen_dtype_size(dt), n_src = (size_t)sh * sw * C;
            unsigned char *sbuf = malloc(n_src * es);
            assert_non_null(sbuf);
            lumen_image src = lumen_image_nhwc(sbuf, dt, 1, sh, sw, C);
            uint32_t r = 12345u + (uint32_t)(t * 7 + ci);
            for (size_t i = 0; i < n_src; i++) {
                r = r * 1664525u + 1013904223u;
                store_unit(sbuf + i * es, dt, (double)(r >> 8) / (double)(1u << 24));
            }
            for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
                for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                    const int w = sizes[z][0], h = sizes[z][1];
                    const size_t n_dst = (size_t)h * w * C;
                    unsigned char *a = malloc(n_dst * es), *b = malloc(n_dst * es);
                    assert_non_null(a), assert_non_null(b);
                    lumen_image da = lumen_image_nhwc(a, dt, 1, h, w, C);
                    lumen_image db = lumen_image_nhwc(b, dt, 1, h, w, C);
                    lumen_resize_options o = opts(cases[k].rule, cases[k].ip);
                    o.antialias = cases[k].aa, o.align_corners = cases[k].ac;
                    assert_int_equal(lumen_resize(ctx, &src, &da, &o, NULL), LUMEN_OK);
                    assert_int_equal(lumen_resize(ref, &src, &db, &o, NULL), LUMEN_OK);
                    for (size_t i = 0; i < n_dst; i++) {
                        const double x = flat_get(a, dt, i), y = flat_get(b, dt, i);
                        /* Pillow's 8-bit rule: the same integers on every path */
                        const double tol = dt == LUMEN_F32                                   ? 1e-5
                                           : dt == LUMEN_U8 && o.rule == LUMEN_RESIZE_PILLOW ? 0
                                                                                             : 1.0;
                        if (fabs(x - y) > tol)
                            fail_msg("%s %s %s c=%d -> %dx%d: element %zu is %.9g, reference %.9g",
                                     lumen_resize_rule_name(o.rule),
                                     lumen_interpolation_name(o.interpolation),
                                     lumen_dtype_name(dt), C, w, h, i, x, y);
                    }
                    free(a), free(b);
                }
            free(sbuf);
        }
    lumen_context_destroy(ref);
}

/* u8 and u16 at exactly half the size (OpenCV's and torch's linear and area: every output the
 * 2x2 mean): the integer paths under each ISA cap, for 1 to 33 interleaved channels (33: past
 * the AVX-512 permutes' 32 bytes, 17: past their 16 u16), one output row or column and a
 * batch, equal to the reference value for value (ties to even), on buffers of the exact size
 * (the masked loads must not read past the source: the sanitizer build runs this). */
static void test_half_size_u8_box(void **state)
{
    (void)state;
    static const char *isas[] = {"avx512", "avx2", "generic"};
    static const int channels[] = {1, 2, 3, 4, 5, 17, 33};
    static const int shapes[][3] = {{46, 62, 1}, {2, 130, 1}, {66, 2, 1}, {10, 22, 3}}; /* h w n */
    lumen_context *ref;
    assert_int_equal(lumen_context_create(&ref), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ref, 0), LUMEN_OK);
    for (int is = 0; is < 3; is++) {
        setenv("LUMEN_CPU_ISA", isas[is], 1);
        lumen_context *fast;
        assert_int_equal(lumen_context_create(&fast), LUMEN_OK);
        for (int wide = 0; wide < 2; wide++)
            for (int ci = 0; ci < 7; ci++)
                for (int z = 0; z < 4; z++) {
                    const lumen_dtype t = wide ? LUMEN_U16 : LUMEN_U8;
                    const size_t es = wide ? 2 : 1;
                    const int C = channels[ci], sh = shapes[z][0], sw = shapes[z][1];
                    const int n = shapes[z][2], h = sh / 2, w = sw / 2;
                    const size_t n_src = (size_t)n * sh * sw * C, n_dst = (size_t)n * h * w * C;
                    void *s = malloc(n_src * es), *a = malloc(n_dst * es), *b = malloc(n_dst * es);
                    assert_non_null(s), assert_non_null(a), assert_non_null(b);
                    uint32_t r = 777u + (uint32_t)(ci * 13 + z);
                    for (size_t i = 0; i < n_src; i++) {
                        r = r * 1664525u + 1013904223u;
                        flat_put(s, t, i, (double)(wide ? r >> 16 : r >> 24));
                    }
                    flat_put(s, t, 0, 1), flat_put(s, t, (size_t)C, 1); /* a mean of 1.5 */
                    flat_put(s, t, (size_t)sw * C, 2), flat_put(s, t, (size_t)(sw + 1) * C, 2);
                    lumen_image src = lumen_image_nhwc(s, t, n, sh, sw, C);
                    lumen_image da = lumen_image_nhwc(a, t, n, h, w, C);
                    lumen_image db = lumen_image_nhwc(b, t, n, h, w, C);
                    for (int rule = 0; rule < 2; rule++)
                        for (int ip = 0; ip < 2; ip++) {
                            lumen_resize_options o =
                                opts(rule ? LUMEN_RESIZE_TORCH : LUMEN_RESIZE_OPENCV,
                                     ip ? LUMEN_INTER_AREA : LUMEN_INTER_LINEAR);
                            lumen_run_info info;
                            assert_int_equal(lumen_resize(fast, &src, &da, &o, &info), LUMEN_OK);
                            assert_int_equal(lumen_resize(ref, &src, &db, &o, NULL), LUMEN_OK);
                            assert_string_equal(info.algo, wide ? "box2-u16" : "box2-u8");
                            assert_true(flat_get(a, t, 0) == 2.0); /* ties to even */
                            for (size_t i = 0; i < n_dst; i++)
                                if (flat_get(a, t, i) != flat_get(b, t, i))
                                    fail_msg("%s %s c=%d %dx%d n=%d rule %d ip %d: value %zu is "
                                             "%g, reference %g",
                                             isas[is], lumen_dtype_name(t), C, sh, sw, n, rule, ip,
                                             i, flat_get(a, t, i), flat_get(b, t, i));
                        }
                    free(s), free(a), free(b);
                }
        lumen_context_destroy(fast);
    }
    unsetenv("LUMEN_CPU_ISA");
    lumen_context_destroy(ref);
}

/* f32 at exactly half the size with 2-tap tables (OpenCV's linear and area, torch's linear):
 * the fused pass (box2-float, AVX-512) gives the separable path's bits, which the AVX2 cap runs
 * (AVX2 and AVX-512 give the same bits), for 1 to 17 interleaved channels (17: past the
 * permutes' 16, the separable path), one output row or column, a batch, -0, Inf and NaN
 * pixels; within 1e-6 of the reference; on buffers of the exact size (masked loads: the
 * sanitizer build runs this). */
static void test_half_size_f32_box(void **state)
{
    (void)state;
    static const int channels[] = {1, 2, 3, 4, 5, 6, 7, 16, 17};
    static const int shapes[][3] = {{46, 62, 1}, {2, 130, 1}, {66, 2, 1}, {10, 22, 3}}; /* h w n */
    lumen_context *ref;
    assert_int_equal(lumen_context_create(&ref), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ref, 0), LUMEN_OK);
    for (int ci = 0; ci < 9; ci++)
        for (int z = 0; z < 4; z++) {
            const int C = channels[ci], sh = shapes[z][0], sw = shapes[z][1];
            const int n = shapes[z][2], h = sh / 2, w = sw / 2;
            const size_t n_src = (size_t)n * sh * sw * C, n_dst = (size_t)n * h * w * C;
            float *s = malloc(n_src * 4), *out[3];
            assert_non_null(s);
            uint32_t r = 999u + (uint32_t)(ci * 13 + z);
            for (size_t i = 0; i < n_src; i++)
                r = r * 1664525u + 1013904223u, s[i] = (float)(r >> 8) / (float)(1u << 24) - .5f;
            s[0] = s[(size_t)C] = -0.f, s[(size_t)sw * C] = s[(size_t)(sw + 1) * C] = -0.f;
            s[n_src - 1] = INFINITY, s[n_src / 2] = NAN;
            lumen_image src = lumen_image_nhwc(s, LUMEN_F32, n, sh, sw, C);
            for (int ip = 0; ip < 2; ip++) {
                lumen_resize_options o =
                    opts(LUMEN_RESIZE_OPENCV, ip ? LUMEN_INTER_AREA : LUMEN_INTER_LINEAR);
                static const char *isas[] = {"avx512", "avx2"};
                for (int is = 0; is < 3; is++) {
                    out[is] = malloc(n_dst * 4);
                    assert_non_null(out[is]);
                    lumen_image d = lumen_image_nhwc(out[is], LUMEN_F32, n, h, w, C);
                    lumen_run_info info;
                    if (is < 2) {
                        setenv("LUMEN_CPU_ISA", isas[is], 1);
                        lumen_context *fast;
                        assert_int_equal(lumen_context_create(&fast), LUMEN_OK);
                        assert_int_equal(lumen_resize(fast, &src, &d, &o, &info), LUMEN_OK);
                        lumen_context_destroy(fast);
                        if (strcmp(info.isa, "avx512") == 0)
                            assert_string_equal(info.algo, C <= 16 ? "box2-float"
                                                                   : "separable:vertical-first");
                    } else {
                        assert_int_equal(lumen_resize(ref, &src, &d, &o, NULL), LUMEN_OK);
                    }
                }
                for (size_t i = 0; i < n_dst; i++) {
                    if (memcmp(&out[0][i], &out[1][i], 4) != 0)
                        fail_msg("c=%d %dx%d n=%d ip %d: element %zu is %a, avx2 cap %a", C, sh, sw,
                                 n, ip, i, (double)out[0][i], (double)out[1][i]);
                    const double x = out[0][i], y = out[2][i];
                    if (!(fabs(x - y) <= 1e-6 || (isnan(x) && isnan(y)) || x == y))
                        fail_msg("c=%d %dx%d n=%d ip %d: element %zu is %g, reference %g", C, sh,
                                 sw, n, ip, i, x, y);
                }
                for (int is = 0; is < 3; is++)
                    free(out[is]);
            }
            free(s);
        }
    unsetenv("LUMEN_CPU_ISA");
    lumen_context_destroy(ref);
}

/* The separable path gives the same bits under the AVX-512 and AVX2 caps (products then sums
 * in tap order on both): shrinking to half (windows of 4 and more taps), enlarging (horizontal
 * first, reading src: with 5 to 8 taps the AVX-512 horizontal pass picks a step's taps from
 * two vectors by permutes where its 4 windows span at most 32 elements) and an odd factor,
 * for 1, 3 and 4 interleaved channels, u8, f16 and f32 sources, f32 and f16 results, widths
 * that leave every remainder of the 4-pixel steps; on buffers of the exact size (the
 * sanitizer build runs this: the two vectors must not be read past the row). */
static void test_separable_isas_same_bits(void **state)
{
    (void)state;
    static const int channels[] = {1, 3, 4};
    static const lumen_dtype sdt[] = {LUMEN_U8, LUMEN_F16, LUMEN_F32},
                             ddt[] = {LUMEN_F32, LUMEN_F16};
    static const int sizes[][2] = {{77, 38}, {77, 154}, {77, 115}, {40, 20}, {21, 53}}; /* sw dw */
    static const int modes[][2] = {{LUMEN_RESIZE_OPENCV, LUMEN_INTER_CUBIC},
                                   {LUMEN_RESIZE_OPENCV, LUMEN_INTER_LANCZOS},
                                   {LUMEN_RESIZE_PILLOW, LUMEN_INTER_LINEAR},
                                   {LUMEN_RESIZE_PILLOW, LUMEN_INTER_LANCZOS}};
    const int sh = 9;
    for (int ci = 0; ci < 3; ci++)
        for (int si = 0; si < 3; si++)
            for (int z = 0; z < 5; z++) {
                const int C = channels[ci], sw = sizes[z][0], dw = sizes[z][1];
                const int dh = dw > sw ? 2 * sh : sh / 2 + 1;
                const size_t es = lumen_dtype_size(sdt[si]), n_src = (size_t)sh * sw * C;
                char *s = malloc(n_src * es);
                assert_non_null(s);
                uint32_t r = 4242u + (uint32_t)(ci * 31 + si * 7 + z);
                for (size_t i = 0; i < n_src; i++) {
                    r = r * 1664525u + 1013904223u;
                    lumen_element_set(s + i * es, sdt[si], (float)(r >> 24));
                }
                lumen_image src = lumen_image_nhwc(s, sdt[si], 1, sh, sw, C);
                for (int di = 0; di < 2; di++)
                    for (int m = 0; m < 4; m++) {
                        const size_t ed = lumen_dtype_size(ddt[di]), n_dst = (size_t)dh * dw * C;
                        char *out[2];
                        lumen_resize_options o = opts(modes[m][0], modes[m][1]);
                        static const char *isas[] = {"avx512", "avx2"};
                        for (int is = 0; is < 2; is++) {
                            out[is] = malloc(n_dst * ed);
                            assert_non_null(out[is]);
                            lumen_image d = lumen_image_nhwc(out[is], ddt[di], 1, dh, dw, C);
                            setenv("LUMEN_CPU_ISA", isas[is], 1);
                            lumen_context *fast;
                            assert_int_equal(lumen_context_create(&fast), LUMEN_OK);
                            assert_int_equal(lumen_resize(fast, &src, &d, &o, NULL), LUMEN_OK);
                            lumen_context_destroy(fast);
                        }
                        if (memcmp(out[0], out[1], n_dst * ed) != 0)
                            fail_msg("%s %s %s -> %s c=%d %d -> %d: avx512 and avx2 differ",
                                     lumen_resize_rule_name(o.rule),
                                     lumen_interpolation_name(o.interpolation),
                                     lumen_dtype_name(sdt[si]), lumen_dtype_name(ddt[di]), C, sw,
                                     dw);
                        free(out[0]), free(out[1]);
                    }
                free(s);
            }
    unsetenv("LUMEN_CPU_ISA");
}

/* The descriptor carries the output's shape: from size, or from the factors by the rule. */
static void test_descriptor_shape(void **state)
{
    (void)state;
    const lumen_op_desc *op = lumen_op_find("resize");
    assert_non_null(op);
    uint8_t buf[5 * 7 * 3] = {0};
    lumen_image src = lumen_image_nhwc(buf, LUMEN_U8, 1, 5, 7, 3);
    lumen_value v[16];
    lumen_op_values_init(op, v);
    v[0].given = 1, v[0].u.image = &src;
    lumen_out_shape sh;
    assert_int_equal(lumen_op_output_shape(op, v, &sh), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_last_error(), "size"));
    const int fx = lumen_op_arg_index(op, "fx"), size = lumen_op_arg_index(op, "size"),
              rule = lumen_op_arg_index(op, "rule");
    v[fx].given = 1, v[fx].u.real = 0.5;
    assert_int_equal(lumen_op_output_shape(op, v, &sh), LUMEN_OK);
    assert_int_equal(sh.h, 2), assert_int_equal(sh.w, 4); /* 2.5 and 3.5 to even */
    v[rule].given = 1, v[rule].u.i = LUMEN_RESIZE_TORCH;
    assert_int_equal(lumen_op_output_shape(op, v, &sh), LUMEN_OK);
    assert_int_equal(sh.h, 2), assert_int_equal(sh.w, 3);              /* floored */
    v[size].given = 1, v[size].u.pair[0] = 11, v[size].u.pair[1] = 13; /* (w, h) */
    assert_int_equal(lumen_op_output_shape(op, v, &sh), LUMEN_OK);
    assert_int_equal(sh.n, 1), assert_int_equal(sh.c, 3);
    assert_int_equal(sh.h, 13), assert_int_equal(sh.w, 11);
    assert_int_equal(sh.dtype, LUMEN_U8);
}

static int stop_now(void *arg)
{
    (void)arg;
    return 1;
}

static void test_interrupt(void **state)
{
    (void)state;
    static float src[256 * 256], dst[100 * 100];
    lumen_image s = lumen_image_nhwc(src, LUMEN_F32, 1, 256, 256, 1);
    lumen_image d = lumen_image_nhwc(dst, LUMEN_F32, 1, 100, 100, 1);
    assert_int_equal(lumen_context_set_interrupt(ctx, stop_now, NULL), LUMEN_OK);
    assert_int_equal(lumen_resize(ctx, &s, &d, NULL, NULL), LUMEN_ERR_INTERRUPTED);
    assert_int_equal(lumen_context_set_interrupt(ctx, NULL, NULL), LUMEN_OK);
    lumen_run_info info;
    assert_int_equal(lumen_resize(ctx, &s, &d, NULL, &info), LUMEN_OK);
    assert_non_null(strstr(info.algo, "separable"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opencv_by_hand),
        cmocka_unit_test(test_torch_align_corners),
        cmocka_unit_test(test_pillow_u8_rounds_half_up),
        cmocka_unit_test(test_output_size),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_interrupt),
        cmocka_unit_test(test_descriptor_shape),
        cmocka_unit_test(test_fast_paths_against_reference),
        cmocka_unit_test(test_half_size_u8_box),
        cmocka_unit_test(test_half_size_f32_box),
        cmocka_unit_test(test_separable_isas_same_bits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
