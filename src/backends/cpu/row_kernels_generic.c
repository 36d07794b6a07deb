/* Portable row kernels (the compiler vectorises them for the baseline ISA). */
#include "row_kernels.h"
#include "semantics.h"

#include <float.h>
#include <math.h>

static void direct_generic(const float *const *rows, const float *k, int kw, int kh, int ts,
                           float *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = 0.0f;
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++) {
            const float kv = k[i * kw + j], *r = rows[i] + (int64_t)j * ts;
            for (int64_t x = 0; x < n; x++)
                out[x] += kv * r[x];
        }
}

static void direct_rows_generic(const float *const *rows, const float *k, int kw, int kh, int ts,
                                float *const *out, int nout, int64_t n)
{
    for (int o = 0; o < nout; o++)
        direct_generic(rows + o, k, kw, kh, ts, out[o], n);
}

static void hfilter_generic(const float *in, const float *k, int kw, int ts, bool symmetric,
                            float *out, int64_t n)
{
    (void)symmetric;
    for (int64_t x = 0; x < n; x++)
        out[x] = 0.0f;
    for (int j = 0; j < kw; j++) {
        const float kv = k[j], *r = in + (int64_t)j * ts;
        for (int64_t x = 0; x < n; x++)
            out[x] += kv * r[x];
    }
}

static void vfilter_generic(const float *const *rows, const float *k, int kh, bool symmetric,
                            float scale, float *out, int64_t n)
{
    (void)symmetric;
    for (int64_t x = 0; x < n; x++)
        out[x] = 0.0f;
    for (int i = 0; i < kh; i++) {
        const float kv = k[i], *r = rows[i];
        for (int64_t x = 0; x < n; x++)
            out[x] += kv * r[x];
    }
    if (scale != 1.0f)
        for (int64_t x = 0; x < n; x++)
            out[x] *= scale;
}

static void vfilter4_generic(const float *const *rows, const float *k, int kh, float scale,
                             float *const *out, int64_t n)
{
    for (int j = 0; j < 4; j++)
        vfilter_generic(rows + j, k, kh, false, scale, out[j], n);
}

static float max_abs_generic(const float *in, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(in[i]);
        if (!(a <= FLT_MAX)) return NAN;
        m = a > m ? a : m;
    }
    return m;
}

static void complex_mul_generic(float *f, const float *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float re = f[2 * i] * s[2 * i] - f[2 * i + 1] * s[2 * i + 1];
        float im = f[2 * i] * s[2 * i + 1] + f[2 * i + 1] * s[2 * i];
        f[2 * i] = re, f[2 * i + 1] = im;
    }
}

static void store_u8_generic(const float *in, uint8_t *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = lumen_sat_u8(in[x]);
}

static void store_u16_generic(const float *in, uint16_t *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = lumen_sat_u16(in[x]);
}

static void load_f16_generic(const uint16_t *in, float *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = lumen_f16_to_f32(in[x]);
}

/* A shift: the compiler vectorises it. */
static void load_u8_generic(const uint8_t *in, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)in[i];
}

static void load_u16_generic(const uint16_t *in, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)in[i];
}

static void load_bf16_generic(const uint16_t *in, float *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = lumen_bf16_to_f32(in[x]);
}

static void store_f16_generic(const float *in, uint16_t *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = lumen_f32_to_f16(in[x]);
}

static void store_bf16_generic(const float *in, uint16_t *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++)
        out[x] = lumen_f32_to_bf16(in[x]);
}

const lumen_row_kernels lumen_row_kernels_generic = {
    .isa = "generic",
    .direct_rows = direct_rows_generic,
    .direct_rows_max = 1,
    .hfilter = hfilter_generic,
    .vfilter = vfilter_generic,
    .vfilter4 = vfilter4_generic,
    .max_abs = max_abs_generic,
    .complex_mul = complex_mul_generic,
    .store_u8 = store_u8_generic,
    .store_u16 = store_u16_generic,
    .load_f16 = load_f16_generic,
    .load_bf16 = load_bf16_generic,
    .load_u8 = load_u8_generic,
    .load_u16 = load_u16_generic,
    .store_f16 = store_f16_generic,
    .store_bf16 = store_bf16_generic,
};
