/*
 * f16 and bf16 storage (docs/semantics.md, "Half precision"): the one conversion of
 * core/semantics.h against an independent definition (every f16, sweeps of f32 with every
 * rounding case); the CPU row kernels (portable and F16C/AVX2) bit for bit against it; every
 * filter op with half sources and destinations (mixed with u8/u16/f32) through ts_check; NaN,
 * Inf and overflow; conv2d on half tensors; NPY and EXR files.
 */
#include "backends/cpu/row_kernels.h"
#include "semantics.h"
#include "test_support.h"
#include "test_tmpdir.h"

#include <lumen_ops.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- an independent definition of the conversions ---------------------------------------- */

/* The value of f16 bits h in double, from the format's definition (ldexp, no bit tricks). */
static double f16_value(uint16_t h)
{
    const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp(1024.0 + m, e - 25);
    return s ? -v : v;
}

/* The f16 nearest to v (|v| finite), ties to the even mantissa, beyond 65520 infinity, as
 * IEEE 754 roundTiesToEven defines it: a search over the positive finite f16 values. */
static uint16_t f16_nearest(double v)
{
    const uint16_t sign = signbit(v) ? 0x8000 : 0;
    const double a = fabs(v);
    if (a >= 65520.0) return sign | 0x7c00;
    uint16_t lo = 0, hi = 0x7bff; /* largest value <= a, by bisection on the ordered bits */
    while (lo < hi) {
        const uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if (f16_value(mid) <= a)
            lo = mid;
        else
            hi = (uint16_t)(mid - 1);
    }
    if (lo == 0x7bff) return sign | lo; /* 65504 <= a < 65520 */
    const double d0 = a - f16_value(lo), d1 = f16_value((uint16_t)(lo + 1)) - a;
    const uint16_t r = d0 < d1 ? lo : d1 < d0 ? (uint16_t)(lo + 1) : (lo & 1) ? lo + 1 : lo;
    return sign | r;
}

/* bf16 nearest to an f32 (finite): the same rule over 7 mantissa bits, from the f32's value. */
static uint16_t bf16_nearest(float f)
{
    const uint32_t u = lumen_f32_bits(f);
    const uint16_t down = (uint16_t)(u >> 16), up = (uint16_t)(down + 1); /* same sign */
    const double v = fabs((double)f), lo = fabs((double)lumen_bits_f32((uint32_t)down << 16));
    double hi = fabs((double)lumen_bits_f32((uint32_t)up << 16));
    if (isinf(hi)) hi = ldexp(1.0, 128); /* IEEE overflow: rounds as if the exponent went on */
    const double d0 = v - lo, d1 = hi - v;
    return d0 < d1 ? down : d1 < d0 ? up : (down & 1) ? up : down;
}

/* f32 values to try: a stride through all 2^32 patterns, and around every f16 value the
 * exact midpoints to its neighbour and one f32 ulp either side (every tie and near-tie). */
static float *sweep(size_t *n)
{
    const size_t cap = (1u << 20) + 6 * 65536;
    float *v = malloc(cap * sizeof *v);
    assert_non_null(v);
    size_t k = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 4099)
        v[k++] = lumen_bits_f32((uint32_t)u);
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const float mid = (float)((f16_value((uint16_t)h) + f16_value((uint16_t)(h + 1))) / 2);
        const uint32_t m = lumen_f32_bits(mid);
        for (int s = 0; s < 2; s++) {
            const uint32_t sign = s ? 0x80000000u : 0;
            v[k++] = lumen_bits_f32(sign | m);
            v[k++] = lumen_bits_f32(sign | (m + 1));
            v[k++] = lumen_bits_f32(sign | (m - 1));
        }
    }
    assert_true(k <= cap);
    *n = k;
    return v;
}

static void test_f16_every_value_round_trips(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = lumen_f16_to_f32((uint16_t)h);
        const double want = f16_value((uint16_t)h);
        if (isnan(want)) {
            /* NaN stays NaN, quieted; its payload's top bits kept */
            assert_true(isnan(f));
            assert_int_equal(lumen_f32_to_f16(f), h | 0x200);
            continue;
        }
        if ((double)f != want) fail_msg("f16 %#06x: %.9g, want %.9g", h, (double)f, want);
        assert_int_equal(lumen_f32_to_f16(f), h);
    }
}

static void test_f16_rounding(void **state)
{
    (void)state;
    size_t n;
    float *v = sweep(&n);
    for (size_t i = 0; i < n; i++) {
        const uint16_t got = lumen_f32_to_f16(v[i]);
        if (isnan(v[i])) {
            assert_true(isnan(lumen_f16_to_f32(got)));
            continue;
        }
        const uint16_t want = isinf(v[i]) ? (signbit(v[i]) ? 0xfc00 : 0x7c00) : f16_nearest(v[i]);
        if (got != want)
            fail_msg("f32 %a (%#010x): f16 %#06x, want %#06x", (double)v[i], lumen_f32_bits(v[i]),
                     got, want);
    }
    free(v);
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    size_t n;
    float *v = sweep(&n);
    for (size_t i = 0; i < n; i++) {
        const uint16_t got = lumen_f32_to_bf16(v[i]);
        if (isnan(
                v[i])) { /* NaN stays NaN (a NaN with only low payload bits must not become inf) */
            assert_true(isnan(lumen_bf16_to_f32(got)));
            continue;
        }
        const uint16_t want =
            isinf(v[i]) ? (uint16_t)(lumen_f32_bits(v[i]) >> 16) : bf16_nearest(v[i]);
        if (got != want) fail_msg("f32 %a: bf16 %#06x, want %#06x", (double)v[i], got, want);
        assert_true(lumen_bf16_to_f32(got) == (float)lumen_bits_f32((uint32_t)got << 16));
    }
    /* the NaN that plain rounding would turn into infinity */
    assert_true(isnan(lumen_bf16_to_f32(lumen_f32_to_bf16(lumen_bits_f32(0x7f800001u)))));
    assert_true(isnan(lumen_bf16_to_f32(lumen_f32_to_bf16(lumen_bits_f32(0xff800001u)))));
    /* the largest finite f32 rounds to infinity in bf16, as IEEE overflow does */
    assert_true(isinf(lumen_bf16_to_f32(lumen_f32_to_bf16(3.4028235e38f))));
    free(v);
}

/* ---- the row kernels: every ISA the CPU has gives the same bits ------------------------- */

static void check_kernels(const lumen_row_kernels *rk, const float *v, size_t n)
{
    uint16_t *h = malloc(n * 2), *b = malloc(n * 2);
    float *back = malloc(n * 4);
    assert_true(h && b && back);
    /* odd offsets and lengths: every vector path and its scalar tail */
    for (size_t off = 0; off < 3; off++) {
        const size_t m = n - off;
        rk->store_f16(v + off, h, (int64_t)m);
        rk->store_bf16(v + off, b, (int64_t)m);
        for (size_t i = 0; i < m; i++) {
            if (h[i] != lumen_f32_to_f16(v[off + i]))
                fail_msg("%s store_f16(%a) = %#06x, semantics.h says %#06x", rk->isa,
                         (double)v[off + i], h[i], lumen_f32_to_f16(v[off + i]));
            if (b[i] != lumen_f32_to_bf16(v[off + i]))
                fail_msg("%s store_bf16(%a) = %#06x, semantics.h says %#06x", rk->isa,
                         (double)v[off + i], b[i], lumen_f32_to_bf16(v[off + i]));
        }
        rk->load_f16(h, back, (int64_t)m);
        for (size_t i = 0; i < m; i++)
            if (lumen_f32_bits(back[i]) != lumen_f32_bits(lumen_f16_to_f32(h[i])))
                fail_msg("%s load_f16(%#06x) = %#010x", rk->isa, h[i], lumen_f32_bits(back[i]));
        rk->load_bf16(b, back, (int64_t)m);
        for (size_t i = 0; i < m; i++)
            if (lumen_f32_bits(back[i]) != lumen_f32_bits(lumen_bf16_to_f32(b[i])))
                fail_msg("%s load_bf16(%#06x) = %#010x", rk->isa, b[i], lumen_f32_bits(back[i]));
    }
    free(h), free(b), free(back);
}

static void test_row_kernels_bit_identical(void **state)
{
    (void)state;
    size_t n;
    float *v = sweep(&n);
    /* and every f16 pattern, NaNs with payloads included, through the loads */
    float *all = malloc(65536 * sizeof *all);
    assert_non_null(all);
    for (uint32_t h = 0; h < 65536; h++)
        all[h] = lumen_f16_to_f32((uint16_t)h);
    check_kernels(&lumen_row_kernels_generic, v, n);
    check_kernels(&lumen_row_kernels_generic, all, 65536);
    const struct {
        ts_engine e;
        const lumen_row_kernels *rk;
    } sets[] = {{TS_AVX2, &lumen_row_kernels_avx2}, {TS_AVX512, &lumen_row_kernels_avx512}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        lumen_context *ctx = ts_context(sets[i].e, 1); /* NULL: this CPU lacks the ISA */
        if (!ctx) continue;
        check_kernels(sets[i].rk, v, n);
        check_kernels(sets[i].rk, all, 65536);
        lumen_context_destroy(ctx);
    }
    free(v), free(all);
}

/* ---- filters with half images: reference, portable and AVX2 engines, oracle -------------- */

static const lumen_dtype pairs[][2] = {
    {LUMEN_F16, LUMEN_F16}, {LUMEN_BF16, LUMEN_BF16}, {LUMEN_U8, LUMEN_F16},
    {LUMEN_F16, LUMEN_F32}, {LUMEN_BF16, LUMEN_U8},   {LUMEN_F32, LUMEN_BF16},
    {LUMEN_U16, LUMEN_F16}, {LUMEN_F16, LUMEN_BF16},
};

static void test_filters(void **state)
{
    (void)state;
    static float k5x5[25], kx7[7], ky3[3];
    ts_random_kernel(k5x5, 25, 11), ts_random_kernel(kx7, 7, 12), ts_random_kernel(ky3, 3, 13);
    static float k21[21 * 21];
    ts_random_kernel(k21, 21 * 21, 14);
    const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT, LUMEN_BORDER_WRAP};
    int idx = 0;
    for (int p = 0; p < TS_COUNT(pairs); p++)
        for (int b = 0; b < TS_COUNT(borders); b++, idx++) {
            ts_op ops[] = {ts_op_filter2d(k5x5, 5, 5), ts_op_sep(kx7, 7, ky3, 3),
                           ts_op_gaussian(0, 0, 1.7, 2.3), ts_op_box(4, 3, 1),
                           ts_op_filter2d(k21, 21, 21)};
            ops[4].opt.method = LUMEN_METHOD_FFT;
            for (int o = 0; o < TS_COUNT(ops); o++) {
                const ts_op op = ts_with_border(ops[o], borders[b], -37.5f);
                const ts_layout l = (ts_layout)((idx + o) % TS_LAYOUT_COUNT);
                ts_case cs = ts_case_make(l, pairs[p][0], pairs[p][1], 19 + idx % 5, 41 + o,
                                          1 + idx % 2, 97 * idx + o);
                ts_check(&op, &cs);
            }
        }
}

/* ---- the values halves cannot hold ------------------------------------------------------- */

static void test_nan_inf_overflow(void **state)
{
    (void)state;
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    for (int simd = 0; simd < 2; simd++) {
        lumen_context_set_simd(ctx, simd);
        float src[8 * 32];
        for (int i = 0; i < 8 * 32; i++)
            src[i] = 1.0f;
        src[3 * 32 + 4] = NAN;
        src[6 * 32 + 20] = 70000.0f; /* f16 overflows to inf; bf16 holds it */
        uint16_t dst[8 * 32];
        for (int t = 0; t < 2; t++) {
            const lumen_dtype dt = t ? LUMEN_BF16 : LUMEN_F16;
            lumen_image s = lumen_image_nchw(src, LUMEN_F32, 1, 1, 8, 32);
            lumen_image d = lumen_image_nchw(dst, dt, 1, 1, 8, 32);
            const lumen_border rf = LUMEN_BORDER_REFLECT;
            assert_int_equal(lumen_box_blur(ctx, &s, &d, 1, 1, 1, rf, 0.0f, NULL), LUMEN_OK);
            assert_true(isnan(lumen_element_get(&dst[3 * 32 + 4], dt)));
            const float big = lumen_element_get(&dst[6 * 32 + 20], dt);
            if (t)
                assert_true(big == 70144.0f); /* 70000 rounded to 8 bits */
            else
                assert_true(isinf(big) && big > 0);
            assert_true(lumen_element_get(&dst[0], dt) == 1.0f);
            /* a 3x3 box: NaN spreads to its neighbours, as in f32 */
            assert_int_equal(lumen_box_blur(ctx, &s, &d, 3, 3, 1, rf, 0.0f, NULL), LUMEN_OK);
            assert_true(isnan(lumen_element_get(&dst[2 * 32 + 5], dt)));
        }
    }
    lumen_context_destroy(ctx);
}

/* ---- conv2d: half tensors are the f32 conv of the same values, rounded once ------------- */

static void test_conv_half(void **state)
{
    (void)state;
    lumen_context *ctx;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    const int64_t n = 2, c = 3, h = 9, w = 11, k = 4;
    for (int t = 0; t < 2; t++) {
        const lumen_dtype dt = t ? LUMEN_BF16 : LUMEN_F16;
        ts_image x, wt, y, xf, wf, yf;
        ts_image_alloc(&x, TS_PLANAR, dt, n, c, h, w);
        ts_image_alloc(&wt, TS_PLANAR, dt, k, c, 3, 3);
        ts_image_fill_random(&x, 5), ts_image_fill_random(&wt, 6);
        ts_image_alloc(&xf, TS_PLANAR, LUMEN_F32, n, c, h, w);
        ts_image_alloc(&wf, TS_PLANAR, LUMEN_F32, k, c, 3, 3);
        for (int64_t i = 0; i < n * c * h * w; i++)
            ((float *)xf.v.data)[i] = lumen_element_get((uint16_t *)x.v.data + i, dt);
        for (int64_t i = 0; i < k * c * 9; i++)
            ((float *)wf.v.data)[i] = lumen_element_get((uint16_t *)wt.v.data + i, dt);
        lumen_conv2d_params p = lumen_conv2d_params_default();
        p.pad_h = p.pad_w = 1;
        ts_image_alloc(&y, TS_PLANAR, dt, n, k, h, w);
        ts_image_alloc(&yf, TS_PLANAR, LUMEN_F32, n, k, h, w);
        for (int simd = 0; simd < 2; simd++) {
            lumen_context_set_simd(ctx, simd);
            lumen_run_info info;
            assert_int_equal(lumen_conv2d(ctx, &xf.v, &wf.v, NULL, &p, &yf.v, NULL), LUMEN_OK);
            assert_int_equal(lumen_conv2d(ctx, &x.v, &wt.v, NULL, &p, &y.v, &info), LUMEN_OK);
            assert_string_equal(info.device, "cpu");
            /* the very f32 path, then one rounding: bit for bit */
            for (int64_t i = 0; i < n * k * h * w; i++) {
                const uint16_t want = t ? lumen_f32_to_bf16(((float *)yf.v.data)[i])
                                        : lumen_f32_to_f16(((float *)yf.v.data)[i]);
                if (((uint16_t *)y.v.data)[i] != want)
                    fail_msg("conv2d %s simd=%d element %lld: %#06x, want %#06x",
                             lumen_dtype_name(dt), simd, (long long)i, ((uint16_t *)y.v.data)[i],
                             want);
            }
        }
        /* _alloc gives x's dtype, as torch does */
        lumen_image ya;
        assert_int_equal(lumen_conv2d_alloc(ctx, &x.v, &wt.v, NULL, &p, &ya, NULL), LUMEN_OK);
        assert_int_equal(ya.dtype, dt);
        assert_memory_equal(ya.data, y.v.data, (size_t)(n * k * h * w) * 2);
        lumen_image_free(&ya);
        ts_image_free(&x), ts_image_free(&wt), ts_image_free(&y);
        ts_image_free(&xf), ts_image_free(&wf), ts_image_free(&yf);
    }
    /* integer tensors stay refused, naming the argument */
    uint8_t b8[9] = {0};
    float f9[9] = {0};
    lumen_image xu = lumen_image_nchw(b8, LUMEN_U8, 1, 1, 3, 3);
    lumen_image wf9 = lumen_image_nchw(f9, LUMEN_F32, 1, 1, 3, 3);
    lumen_image yo = lumen_image_nchw(f9, LUMEN_F32, 1, 1, 1, 1);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    assert_int_equal(lumen_conv2d(ctx, &xu, &wf9, NULL, &p, &yo, NULL), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("x: dtype u8");
    lumen_context_destroy(ctx);
}

/* ---- files ------------------------------------------------------------------------------- */

static void test_files(void **state)
{
    (void)state;
    assert_int_equal(ts_tmpdir_make("lumen-half"), 0);
    uint16_t h[2 * 3 * 2];
    for (int i = 0; i < 12; i++)
        h[i] = lumen_f32_to_f16((float)i * 0.3f - 1.0f);
    h[5] = 0x7e00; /* NaN */
    h[7] = 0xfc00; /* -inf */
    const lumen_image img = lumen_image_nhwc(h, LUMEN_F16, 1, 2, 3, 2);
    /* NPY <f2: the same bits back, as f16 */
    const char *npy = ts_tpath("h.npy");
    assert_int_equal(lumen_write_image(npy, &img), LUMEN_OK);
    lumen_image back;
    assert_int_equal(lumen_read_image(npy, &back), LUMEN_OK);
    assert_int_equal(back.dtype, LUMEN_F16);
    assert_memory_equal(back.data, h, sizeof h);
    lumen_image_free(&back);
    /* bf16 has no NPY type: written as <f4, exactly */
    uint16_t b[12];
    for (int i = 0; i < 12; i++)
        b[i] = lumen_f32_to_bf16((float)i * 0.3f - 1.0f);
    const lumen_image bimg = lumen_image_nhwc(b, LUMEN_BF16, 1, 2, 3, 2);
    assert_int_equal(lumen_write_image(npy, &bimg), LUMEN_OK);
    assert_int_equal(lumen_read_image(npy, &back), LUMEN_OK);
    assert_int_equal(back.dtype, LUMEN_F32);
    for (int i = 0; i < 12; i++)
        assert_true(((float *)back.data)[i] == lumen_bf16_to_f32(b[i]));
    lumen_image_free(&back);
    /* tensors too */
    const lumen_image t = lumen_image_nchw(h, LUMEN_F16, 1, 2, 3, 2);
    assert_int_equal(lumen_write_tensor(ts_tpath("t.npy"), &t), LUMEN_OK);
    assert_int_equal(lumen_read_tensor(ts_tpath("t.npy"), &back), LUMEN_OK);
    assert_int_equal(back.dtype, LUMEN_F16);
    assert_memory_equal(back.data, h, sizeof h);
    lumen_image_free(&back);
    /* EXR: f16 stored as half (lossless), read back as f32 */
    const char *exr = ts_tpath("h.exr");
    assert_int_equal(lumen_write_image(exr, &img), LUMEN_OK);
    assert_int_equal(lumen_read_image(exr, &back), LUMEN_OK);
    assert_int_equal(back.dtype, LUMEN_F32);
    for (int i = 0; i < 12; i++) {
        const float want = lumen_f16_to_f32(h[i]), got = ((float *)back.data)[i];
        assert_true(got == want || (isnan(got) && isnan(want)));
    }
    lumen_image_free(&back);
    /* formats that cannot hold halves say so, naming the dtype and where to go */
    assert_int_equal(lumen_write_image(ts_tpath("h.png"), &img), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("f16");
    assert_int_equal(lumen_write_image(ts_tpath("h.tif"), &bimg), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("bf16");
    assert_int_equal(lumen_write_image(ts_tpath("h.jpg"), &img), LUMEN_ERR_UNSUPPORTED);
    assert_int_equal(ts_tmpdir_remove(), 0);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(lumen_dtype_name(LUMEN_F16), "f16");
    assert_string_equal(lumen_dtype_name(LUMEN_BF16), "bf16");
    assert_int_equal(lumen_dtype_size(LUMEN_F16), 2);
    assert_int_equal(lumen_dtype_size(LUMEN_BF16), 2);
    assert_int_equal(lumen_dtype_size((lumen_dtype)5), 0);
    uint16_t v;
    lumen_element_set(&v, LUMEN_F16, 1.0f / 3.0f);
    assert_int_equal(v, 0x3555);
    lumen_element_set(&v, LUMEN_BF16, 1.0f / 3.0f);
    assert_int_equal(v, 0x3eab);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_f16_every_value_round_trips),
        cmocka_unit_test(test_f16_rounding),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_row_kernels_bit_identical),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_nan_inf_overflow),
        cmocka_unit_test(test_conv_half),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
