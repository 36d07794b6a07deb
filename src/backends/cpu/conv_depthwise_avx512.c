/* The depthwise plane kernel for AVX-512 CPUs (this file alone gets the AVX-512 flags). */
#define LUMEN_DW_PLANE_FN lumen_dw_plane_avx512
#include "conv.h"

#include <immintrin.h>

static inline void dw_block16(float *restrict out, const float *const *rows, const float *w,
                              int64_t taps_r, int64_t S, int64_t dw, int64_t q0)
{
    __m512 a = _mm512_setzero_ps();
    for (int64_t r = 0; r < taps_r; r++)
        for (int64_t s = 0; s < S; s++)
            a = _mm512_fmadd_ps(_mm512_set1_ps(w[r * S + s]),
                                _mm512_loadu_ps(rows[r] + q0 + s * dw), a);
    _mm512_storeu_ps(out + q0, a);
}

#include "conv_depthwise_plane.h"
