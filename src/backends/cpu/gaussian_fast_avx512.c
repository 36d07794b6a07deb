/*
 * AVX-512 inner loops of the fast Gaussian (compiled with -mavx512f/bw/dq/vl, called only
 * after cpu_isa.c's run-time check): gaussian_fast_simd.h's loops at 16 lanes, the same bits
 * as the AVX2 set's; the back transpose is the AVX2 set's, the forward one stores whole lane rows.
 */
#include "gaussian_fast_kernels.h"

#include <immintrin.h>

#include "gaussian_fast_transpose.h"

/* Lanes [0, m) of a 16-float vector (all when m >= 16). */
static inline __mmask16 lane_mask(int64_t m)
{
    return m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1u);
}

static inline __m512 load_n(const float *p, int64_t m)
{
    return m >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(lane_mask(m), p);
}

static inline void store_n(float *p, __m512 v, int64_t m)
{
    if (m >= 16)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, lane_mask(m), v);
}

#define VF __m512
#define VW 16
#define V_SET1 _mm512_set1_ps
#define V_ADD _mm512_add_ps
#define V_MUL _mm512_mul_ps
#define V_FMADD _mm512_fmadd_ps
#define V_FNMADD _mm512_fnmadd_ps
#define GF_IIR iir_avx512
#define GF_FIR fir_avx512
#include "gaussian_fast_simd.h"

/*
 * As lumen_gf_to_lanes_avx2, but each lane row of 16 is stored as one 64-byte vector: the row
 * pass's recursion reads a lane row as one zmm load soon after this writes it (lumen_gf_feed),
 * and a load spanning two pending 32-byte stores cannot be forwarded from them (it waits for
 * both to reach the cache; measured: the row pass 1.7x slower).
 */
static void to_lanes_avx512(const float *const *rows, int r, int64_t n, float *out)
{
    int64_t i = 0;
    for (; r % 16 == 0 && i + 8 <= n; i += 8)
        for (int j0 = 0; j0 < r; j0 += 16) {
            __m256 lo[8], hi[8];
            for (int q = 0; q < 8; q++) {
                lo[q] = _mm256_loadu_ps(rows[j0 + q] + i);
                hi[q] = _mm256_loadu_ps(rows[j0 + 8 + q] + i);
            }
            transpose8(lo), transpose8(hi);
            for (int q = 0; q < 8; q++)
                _mm512_storeu_ps(out + (i + q) * r + j0,
                                 _mm512_insertf32x8(_mm512_castps256_ps512(lo[q]), hi[q], 1));
        }
    for (; i < n; i++)
        for (int j = 0; j < r; j++)
            out[i * r + j] = rows[j][i];
}

const lumen_gf_kernels lumen_gf_kernels_avx512 = {
    .isa = "avx512",
    .iir = iir_avx512,
    .fir = fir_avx512,
    .to_lanes = to_lanes_avx512,
    .from_lanes = lumen_gf_from_lanes_avx2,
};
