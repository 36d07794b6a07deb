/*
 * AVX-512 inner loops of the fast Gaussian (compiled with -mavx512f/bw/dq/vl, called only
 * after cpu_isa.c's run-time check): gaussian_fast_simd.h's loops at 16 lanes, the same bits
 * as the AVX2 set's; the transposes are the AVX2 set's.
 */
#include "gaussian_fast_kernels.h"

#include <immintrin.h>

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

const lumen_gf_kernels lumen_gf_kernels_avx512 = {
    .isa = "avx512",
    .iir = iir_avx512,
    .fir = fir_avx512,
    .to_lanes = lumen_gf_to_lanes_avx2,
    .from_lanes = lumen_gf_from_lanes_avx2,
};
