/* The depthwise plane kernel for AVX2 + FMA CPUs (this file alone gets -mavx2 -mfma). */
#define LUMEN_DW_PLANE_FN lumen_dw_plane_avx2
#include "conv.h"

#include <immintrin.h>

static inline void dw_block16(float *restrict out, const float *const *rows, const float *w,
                              int64_t taps_r, int64_t S, int64_t dw, int64_t q0)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int64_t r = 0; r < taps_r; r++)
        for (int64_t s = 0; s < S; s++) {
            const __m256 wv = _mm256_set1_ps(w[r * S + s]);
            const float *src = rows[r] + q0 + s * dw;
            a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src), a0);
            a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src + 8), a1);
        }
    _mm256_storeu_ps(out + q0, a0);
    _mm256_storeu_ps(out + q0 + 8, a1);
}

#include "conv_depthwise_plane.h"
