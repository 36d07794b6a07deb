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

/*
 * One column block of G output rows (the whole-vector path of conv_depthwise_plane.h): lanes
 * q0 .. q0+15 of outs[0..G), each summed over its taps in tap order (r, s) in one register, from
 * the input rows in[0..nin) (NULL: outside x), input row i being tap r = i - o of output row o.
 * An edge block (a column outside x, or lanes past Q) loads only the columns inside x and
 * masks the FMA of the others (the lane keeps its sum, as if the tap were skipped), and stores
 * only the lanes below Q. The bias is added in registers before the store.
 */
#define LUMEN_DW_VL 16
#define LUMEN_DW_G 4
static inline __attribute__((always_inline)) void
dw_colblock(float *const *outs, int G, const float *const *in, int64_t nin, const float *w,
            int64_t R, int64_t S, int64_t dw, int64_t q0, int64_t c0, int64_t W, float bias,
            bool edge, int64_t nst)
{
    __m512 a[LUMEN_DW_G];
#pragma GCC unroll 4
    for (int o = 0; o < LUMEN_DW_G; o++)
        a[o] = _mm512_setzero_ps();
    /* the columns inside x per tap column s: the same for every input row */
    __mmask16 km[LUMEN_DW_MAX_S];
    if (edge)
#pragma GCC unroll 8
        for (int64_t s = 0; s < S; s++) {
            const int64_t c = c0 + s * dw;
            const int64_t lo = c < 0 ? -c : 0, hi = W - c < 16 ? W - c : 16;
            km[s] = hi > lo ? (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)) : 0;
        }
#pragma GCC unroll 8
    for (int64_t i = 0; i < nin; i++) {
        if (!in[i]) continue;
#pragma GCC unroll 8
        for (int64_t s = 0; s < S; s++) {
            const int64_t c = c0 + s * dw;
            __mmask16 k = 0xffff;
            __m512 v;
            if (edge) {
                k = km[s];
                v = _mm512_maskz_loadu_ps(k, in[i] + c);
            } else {
                v = _mm512_loadu_ps(in[i] + c);
            }
#pragma GCC unroll 4
            for (int o = 0; o < LUMEN_DW_G; o++) {
                const int64_t r = i - o;
                if (o >= G || r < 0 || r >= R) continue;
                const __m512 wv = _mm512_set1_ps(w[r * S + s]);
                a[o] = edge ? _mm512_mask3_fmadd_ps(wv, v, a[o], k) : _mm512_fmadd_ps(wv, v, a[o]);
            }
        }
    }
    const __m512 b = _mm512_set1_ps(bias);
    const __mmask16 ks = nst >= 16 ? 0xffff : (__mmask16)((1u << nst) - 1u);
#pragma GCC unroll 4
    for (int o = 0; o < LUMEN_DW_G; o++) {
        if (o >= G) continue;
        if (edge)
            _mm512_mask_storeu_ps(outs[o] + q0, ks, _mm512_add_ps(a[o], b));
        else
            _mm512_storeu_ps(outs[o] + q0, _mm512_add_ps(a[o], b));
    }
}

#include "conv_depthwise_plane.h"
