/* Portable row kernels (the compiler vectorises them for the baseline ISA). */
#include "pixel.h"
#include "row_kernels.h"

static void direct_generic(const float *const *rows, const float *k, int kw, int kh, int ts,
                           float *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++) out[x] = 0.0f;
    for (int i = 0; i < kh; i++)
        for (int j = 0; j < kw; j++) {
            const float kv = k[i * kw + j], *r = rows[i] + (int64_t)j * ts;
            for (int64_t x = 0; x < n; x++) out[x] += kv * r[x];
        }
}

static void direct2_generic(const float *const *rows, const float *k, int kw, int kh, int ts,
                            float *out0, float *out1, int64_t n)
{
    direct_generic(rows, k, kw, kh, ts, out0, n);
    direct_generic(rows + 1, k, kw, kh, ts, out1, n);
}

static void hfilter_generic(const float *in, const float *k, int kw, int ts, bool symmetric,
                            float *out, int64_t n)
{
    (void)symmetric;
    for (int64_t x = 0; x < n; x++) out[x] = 0.0f;
    for (int j = 0; j < kw; j++) {
        const float kv = k[j], *r = in + (int64_t)j * ts;
        for (int64_t x = 0; x < n; x++) out[x] += kv * r[x];
    }
}

static void vfilter_generic(const float *const *rows, const float *k, int kh, bool symmetric,
                            float scale, float *out, int64_t n)
{
    (void)symmetric;
    for (int64_t x = 0; x < n; x++) out[x] = 0.0f;
    for (int i = 0; i < kh; i++) {
        const float kv = k[i], *r = rows[i];
        for (int64_t x = 0; x < n; x++) out[x] += kv * r[x];
    }
    if (scale != 1.0f)
        for (int64_t x = 0; x < n; x++) out[x] *= scale;
}

static void store_u8_generic(const float *in, uint8_t *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++) out[x] = lumen_sat_u8(in[x]);
}

static void store_u16_generic(const float *in, uint16_t *out, int64_t n)
{
    for (int64_t x = 0; x < n; x++) out[x] = lumen_sat_u16(in[x]);
}

const lumen_row_kernels lumen_row_kernels_generic = {
    "generic", direct_generic, direct2_generic, hfilter_generic, vfilter_generic, store_u8_generic, store_u16_generic,
};
