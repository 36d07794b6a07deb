/*
 * AVX2 + FMA inner loops of the fast Gaussian (compiled with -mavx2 -mfma, called only after
 * the run-time CPU check): gaussian_fast_simd.h's loops at 8 lanes (the last partial vector
 * masked), and the 8 x 8 transposes, which the AVX-512 set shares.
 */
#include "gaussian_fast_kernels.h"

#include <immintrin.h>

#include "gaussian_fast_transpose.h"

/* Mask of the first m (0 < m < 8) lanes. */
static inline __m256i lane_mask(int64_t m)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), idx);
}

static inline __m256 load_n(const float *p, int64_t m)
{
    return m >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lane_mask(m));
}

static inline void store_n(float *p, __m256 v, int64_t m)
{
    if (m >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, lane_mask(m), v);
}

#define VF __m256
#define VW 8
#define V_SET1 _mm256_set1_ps
#define V_ADD _mm256_add_ps
#define V_MUL _mm256_mul_ps
#define V_FMADD _mm256_fmadd_ps
#define V_FNMADD _mm256_fnmadd_ps
#define GF_IIR iir_avx2
#define GF_FIR fir_avx2
#include "gaussian_fast_simd.h"

void lumen_gf_to_lanes_avx2(const float *const *rows, int r, int64_t n, float *out)
{
    int64_t i = 0;
    for (; r % 8 == 0 && i + 8 <= n; i += 8)
        for (int j0 = 0; j0 < r; j0 += 8) {
            __m256 v[8];
            for (int q = 0; q < 8; q++) v[q] = _mm256_loadu_ps(rows[j0 + q] + i);
            transpose8(v);
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(out + (i + q) * r + j0, v[q]);
        }
    for (; i < n; i++)
        for (int j = 0; j < r; j++) out[i * r + j] = rows[j][i];
}

void lumen_gf_from_lanes_avx2(const float *in, int r, int64_t n, float *const *rows)
{
    int64_t i = 0;
    for (; r % 8 == 0 && i + 8 <= n; i += 8)
        for (int j0 = 0; j0 < r; j0 += 8) {
            __m256 v[8];
            for (int q = 0; q < 8; q++) v[q] = _mm256_loadu_ps(in + (i + q) * r + j0);
            transpose8(v);
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(rows[j0 + q] + i, v[q]);
        }
    for (; i < n; i++)
        for (int j = 0; j < r; j++) rows[j][i] = in[i * r + j];
}

const lumen_gf_kernels lumen_gf_kernels_avx2 = {
    .isa = "avx2+fma",
    .iir = iir_avx2,
    .fir = fir_avx2,
    .to_lanes = lumen_gf_to_lanes_avx2,
    .from_lanes = lumen_gf_from_lanes_avx2,
};
