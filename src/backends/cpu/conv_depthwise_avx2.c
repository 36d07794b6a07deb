/* The depthwise plane kernel for AVX2 + FMA CPUs (this file alone gets -mavx2 -mfma). */
#define LUMEN_DW_PLANE_FN lumen_dw_plane_avx2
#include "conv.h"

#include <immintrin.h>

/* Four blocks at once (q[0..3], repeats allowed): eight independent FMA chains; each output's
 * sum keeps the tap order (r, s) of one block at a time (the same bits). */
static inline void dw_block16x4(float *restrict out, const float *const *rows, const float *w,
                                int64_t taps_r, int64_t S, int64_t dw, const int64_t *q)
{
    __m256 a[8];
    for (int i = 0; i < 8; i++)
        a[i] = _mm256_setzero_ps();
    for (int64_t r = 0; r < taps_r; r++)
        for (int64_t s = 0; s < S; s++) {
            const __m256 wv = _mm256_set1_ps(w[r * S + s]);
            const float *src = rows[r] + s * dw;
            for (int i = 0; i < 8; i++)
                a[i] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src + q[i / 2] + 8 * (i % 2)), a[i]);
        }
    for (int i = 0; i < 8; i++)
        _mm256_storeu_ps(out + q[i / 2] + 8 * (i % 2), a[i]);
}

#include "conv_depthwise_plane.h"
