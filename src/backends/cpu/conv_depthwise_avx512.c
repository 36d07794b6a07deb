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

/* The whole-vector path's primitives (conv_depthwise_plane.h, dw_colblock): 16 lanes, edge lanes
 * by mask registers (a masked FMA keeps the old sum in the lanes outside x). */
#define LUMEN_DW_VL 16
typedef __m512 dw_vec;
typedef __mmask16 dw_mask;
#define dw_zero() _mm512_setzero_ps()
#define dw_set1(x) _mm512_set1_ps(x)
#define dw_loadu(p) _mm512_loadu_ps(p)
#define dw_storeu(p, v) _mm512_storeu_ps(p, v)
#define dw_add(a, b) _mm512_add_ps(a, b)
#define dw_fma(w, v, a) _mm512_fmadd_ps(w, v, a)
#define dw_mask_all() ((__mmask16)0xffff)
#define dw_maskz_loadu(p, k) _mm512_maskz_loadu_ps(k, p)
#define dw_mask_fma(w, v, a, k) _mm512_mask3_fmadd_ps(w, v, a, k)
#define dw_mask_storeu(p, k, v) _mm512_mask_storeu_ps(p, k, v)

/* Lanes j with 0 <= c + j < W. */
static inline dw_mask dw_inside(int64_t c, int64_t W)
{
    const int64_t lo = c < 0 ? -c : 0, hi = W - c < 16 ? W - c : 16;
    return hi > lo ? (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)) : 0;
}

/* Lanes j < n. */
static inline dw_mask dw_below(int64_t n)
{
    return n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1u);
}

#include "conv_depthwise_plane.h"
