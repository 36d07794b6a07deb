/*
 * AVX2 + FMA row kernels (this file alone is compiled with -mavx2 -mfma and
 * only called after the run-time CPU check). Four 8-float accumulators per
 * step keep both FMA ports busy and hide their latency.
 */
#include "row_kernels.h"

#include <immintrin.h>
#include <string.h>

/* Sum of one tap group for 32 outputs starting at r (load + FMA per vector). */
#define FMA4(kv, r)                                                                                \
    do {                                                                                           \
        a0 = _mm256_fmadd_ps(kv, _mm256_loadu_ps((r)), a0);                                       \
        a1 = _mm256_fmadd_ps(kv, _mm256_loadu_ps((r) + 8), a1);                                   \
        a2 = _mm256_fmadd_ps(kv, _mm256_loadu_ps((r) + 16), a2);                                  \
        a3 = _mm256_fmadd_ps(kv, _mm256_loadu_ps((r) + 24), a3);                                  \
    } while (0)

/* Writes the first m (< 8) floats of v. */
static inline void store_partial(float *out, __m256 v, int64_t m)
{
    float tmp[8];
    _mm256_storeu_ps(tmp, v);
    memcpy(out, tmp, (size_t)m * sizeof(float));
}

static void direct_avx2(const float *const *rows, const float *k, int kw, int kh, float *out,
                        int64_t n)
{
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int i = 0; i < kh; i++) {
            const float *r = rows[i] + x, *ki = k + (int64_t)i * kw;
            for (int j = 0; j < kw; j++) FMA4(_mm256_broadcast_ss(ki + j), r + j);
        }
        _mm256_storeu_ps(out + x, a0), _mm256_storeu_ps(out + x + 8, a1);
        _mm256_storeu_ps(out + x + 16, a2), _mm256_storeu_ps(out + x + 24, a3);
    }
    for (; x < n; x += 8) { /* rows have slack, so the last vector may read past n */
        __m256 a = _mm256_setzero_ps();
        for (int i = 0; i < kh; i++) {
            const float *r = rows[i] + x, *ki = k + (int64_t)i * kw;
            for (int j = 0; j < kw; j++)
                a = _mm256_fmadd_ps(_mm256_broadcast_ss(ki + j), _mm256_loadu_ps(r + j), a);
        }
        if (x + 8 <= n) _mm256_storeu_ps(out + x, a);
        else store_partial(out + x, a, n - x);
    }
}

/* Symmetric taps: k[j]*(in[x+j] + in[x+kw-1-j]) halves the multiplies. */
static inline __m256 hsum_at(const float *in, const float *k, int kw, bool sym)
{
    __m256 a = _mm256_setzero_ps();
    if (!sym) {
        for (int j = 0; j < kw; j++)
            a = _mm256_fmadd_ps(_mm256_broadcast_ss(k + j), _mm256_loadu_ps(in + j), a);
        return a;
    }
    for (int j = 0; j < kw / 2; j++) {
        __m256 s = _mm256_add_ps(_mm256_loadu_ps(in + j), _mm256_loadu_ps(in + kw - 1 - j));
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(k + j), s, a);
    }
    if (kw & 1) a = _mm256_fmadd_ps(_mm256_broadcast_ss(k + kw / 2), _mm256_loadu_ps(in + kw / 2), a);
    return a;
}

static void hfilter_avx2(const float *in, const float *k, int kw, bool sym, float *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256 a0 = hsum_at(in + x, k, kw, sym), a1 = hsum_at(in + x + 8, k, kw, sym);
        __m256 a2 = hsum_at(in + x + 16, k, kw, sym), a3 = hsum_at(in + x + 24, k, kw, sym);
        _mm256_storeu_ps(out + x, a0), _mm256_storeu_ps(out + x + 8, a1);
        _mm256_storeu_ps(out + x + 16, a2), _mm256_storeu_ps(out + x + 24, a3);
    }
    for (; x < n; x += 8) {
        __m256 a = hsum_at(in + x, k, kw, sym);
        if (x + 8 <= n) _mm256_storeu_ps(out + x, a);
        else store_partial(out + x, a, n - x);
    }
}

static inline __m256 vsum_at(const float *const *rows, int64_t x, const float *k, int kh, bool sym)
{
    __m256 a = _mm256_setzero_ps();
    if (!sym) {
        for (int i = 0; i < kh; i++)
            a = _mm256_fmadd_ps(_mm256_broadcast_ss(k + i), _mm256_loadu_ps(rows[i] + x), a);
        return a;
    }
    for (int i = 0; i < kh / 2; i++) {
        __m256 s = _mm256_add_ps(_mm256_loadu_ps(rows[i] + x), _mm256_loadu_ps(rows[kh - 1 - i] + x));
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(k + i), s, a);
    }
    if (kh & 1) a = _mm256_fmadd_ps(_mm256_broadcast_ss(k + kh / 2), _mm256_loadu_ps(rows[kh / 2] + x), a);
    return a;
}

static void vfilter_avx2(const float *const *rows, const float *k, int kh, bool sym, float scale,
                         float *out, int64_t n)
{
    const __m256 sc = _mm256_set1_ps(scale);
    const bool scaled = scale != 1.0f;
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256 a0 = vsum_at(rows, x, k, kh, sym), a1 = vsum_at(rows, x + 8, k, kh, sym);
        __m256 a2 = vsum_at(rows, x + 16, k, kh, sym), a3 = vsum_at(rows, x + 24, k, kh, sym);
        if (scaled) {
            a0 = _mm256_mul_ps(a0, sc), a1 = _mm256_mul_ps(a1, sc);
            a2 = _mm256_mul_ps(a2, sc), a3 = _mm256_mul_ps(a3, sc);
        }
        _mm256_storeu_ps(out + x, a0), _mm256_storeu_ps(out + x + 8, a1);
        _mm256_storeu_ps(out + x + 16, a2), _mm256_storeu_ps(out + x + 24, a3);
    }
    for (; x < n; x += 8) {
        __m256 a = vsum_at(rows, x, k, kh, sym);
        if (scaled) a = _mm256_mul_ps(a, sc);
        if (x + 8 <= n) _mm256_storeu_ps(out + x, a);
        else store_partial(out + x, a, n - x);
    }
}

/* cvtps rounds to nearest even (MXCSR default); clamping first makes NaN 0. */
static inline __m256i round_clamped(__m256 v, __m256 hi)
{
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), hi));
}

static void store_u8_avx2(const float *in, uint8_t *out, int64_t n)
{
    const __m256 hi = _mm256_set1_ps(255.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256i i0 = round_clamped(_mm256_loadu_ps(in + x), hi);
        __m256i i1 = round_clamped(_mm256_loadu_ps(in + x + 8), hi);
        __m256i i2 = round_clamped(_mm256_loadu_ps(in + x + 16), hi);
        __m256i i3 = round_clamped(_mm256_loadu_ps(in + x + 24), hi);
        __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(i0, i1), _mm256_packus_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)(out + x), _mm256_permutevar8x32_epi32(b, order));
    }
    lumen_row_kernels_generic.store_u8(in + x, out + x, n - x);
}

static void store_u16_avx2(const float *in, uint16_t *out, int64_t n)
{
    const __m256 hi = _mm256_set1_ps(65535.0f);
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256i i0 = round_clamped(_mm256_loadu_ps(in + x), hi);
        __m256i i1 = round_clamped(_mm256_loadu_ps(in + x + 8), hi);
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(i0, i1), 0xD8);
        _mm256_storeu_si256((__m256i *)(out + x), p);
    }
    lumen_row_kernels_generic.store_u16(in + x, out + x, n - x);
}

const lumen_row_kernels lumen_row_kernels_avx2 = {
    "avx2+fma", direct_avx2, hfilter_avx2, vfilter_avx2, store_u8_avx2, store_u16_avx2,
};
