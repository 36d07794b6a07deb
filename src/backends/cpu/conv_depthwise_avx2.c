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

/*
 * One column block of G output rows (the whole-vector path of conv_depthwise_plane.h): lanes
 * q0 .. q0+7 of outs[0..G), each summed over its taps in tap order (r, s) in one register, from
 * the input rows in[0..nin) (NULL: outside x), input row i being tap r = i - o of output row o.
 * An edge block (a column outside x, or lanes past Q) loads only the columns inside x and keeps
 * the old sum in the other lanes (as if the tap were skipped: the same bits as AVX-512's masked
 * FMA), and stores only the lanes below Q. The bias is added in registers before the store.
 */
#define LUMEN_DW_VL 8
#define LUMEN_DW_G 4
static inline __attribute__((always_inline)) void
dw_colblock(float *const *outs, int G, const float *const *in, int64_t nin, const float *w,
            int64_t R, int64_t S, int64_t dw, int64_t q0, int64_t c0, int64_t W, float bias,
            bool edge, int64_t nst)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 a[LUMEN_DW_G];
#pragma GCC unroll 4
    for (int o = 0; o < LUMEN_DW_G; o++)
        a[o] = _mm256_setzero_ps();
    /* lanes j with 0 <= c + j < W per tap column s: the same for every input row */
    __m256i km[LUMEN_DW_MAX_S];
    if (edge)
#pragma GCC unroll 8
        for (int64_t s = 0; s < S; s++) {
            const __m256i cj = _mm256_add_epi32(lane, _mm256_set1_epi32((int)(c0 + s * dw)));
            km[s] = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), cj),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)W), cj));
        }
#pragma GCC unroll 8
    for (int64_t i = 0; i < nin; i++) {
        if (!in[i]) continue;
#pragma GCC unroll 8
        for (int64_t s = 0; s < S; s++) {
            const int64_t c = c0 + s * dw;
            __m256i k = _mm256_set1_epi32(-1);
            __m256 v;
            if (edge) {
                k = km[s];
                v = _mm256_maskload_ps(in[i] + c, k);
            } else {
                v = _mm256_loadu_ps(in[i] + c);
            }
#pragma GCC unroll 4
            for (int o = 0; o < LUMEN_DW_G; o++) {
                const int64_t r = i - o;
                if (o >= G || r < 0 || r >= R) continue;
                const __m256 wv = _mm256_set1_ps(w[r * S + s]);
                const __m256 f = _mm256_fmadd_ps(wv, v, a[o]);
                a[o] = edge ? _mm256_blendv_ps(a[o], f, _mm256_castsi256_ps(k)) : f;
            }
        }
    }
    const __m256 b = _mm256_set1_ps(bias);
    const __m256i ks = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(nst < 8 ? nst : 8)), lane);
#pragma GCC unroll 4
    for (int o = 0; o < LUMEN_DW_G; o++) {
        if (o >= G) continue;
        if (edge)
            _mm256_maskstore_ps(outs[o] + q0, ks, _mm256_add_ps(a[o], b));
        else
            _mm256_storeu_ps(outs[o] + q0, _mm256_add_ps(a[o], b));
    }
}

#include "conv_depthwise_plane.h"
