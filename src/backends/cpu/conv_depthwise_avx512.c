/* The depthwise plane kernel for AVX-512 CPUs (this file alone gets the AVX-512 flags). */
#define LUMEN_DW_PLANE_FN lumen_dw_plane_avx512
#include "conv.h"

#include <immintrin.h>

/* Four blocks at once (q[0..3], repeats allowed): four independent FMA chains hide the FMA
 * latency that one chain of R*S dependent FMAs per block waits on; each output's sum keeps
 * the tap order (r, s) of one block at a time, so the results are the same bits. */
static inline void dw_block16x4(float *restrict out, const float *const *rows, const float *w,
                                int64_t taps_r, int64_t S, int64_t dw, const int64_t *q)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t r = 0; r < taps_r; r++)
        for (int64_t s = 0; s < S; s++) {
            const __m512 wv = _mm512_set1_ps(w[r * S + s]);
            const float *src = rows[r] + s * dw;
            a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + q[0]), a0);
            a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + q[1]), a1);
            a2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + q[2]), a2);
            a3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + q[3]), a3);
        }
    _mm512_storeu_ps(out + q[0], a0);
    _mm512_storeu_ps(out + q[1], a1);
    _mm512_storeu_ps(out + q[2], a2);
    _mm512_storeu_ps(out + q[3], a3);
}

#include "conv_depthwise_plane.h"
