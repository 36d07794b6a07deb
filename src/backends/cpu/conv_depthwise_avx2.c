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

/* The whole-vector path's primitives (conv_depthwise_plane.h, dw_colblock): 8 lanes, edge lanes
 * by all-ones vector masks (maskload zeroes the others; a blend after the FMA keeps the old sum
 * there: the same bits as AVX-512's masked FMA). */
#define LUMEN_DW_VL 8
typedef __m256 dw_vec;
typedef __m256i dw_mask;
#define dw_zero() _mm256_setzero_ps()
#define dw_set1(x) _mm256_set1_ps(x)
#define dw_loadu(p) _mm256_loadu_ps(p)
#define dw_storeu(p, v) _mm256_storeu_ps(p, v)
#define dw_add(a, b) _mm256_add_ps(a, b)
#define dw_fma(w, v, a) _mm256_fmadd_ps(w, v, a)
#define dw_mask_all() _mm256_set1_epi32(-1)
#define dw_maskz_loadu(p, k) _mm256_maskload_ps(p, k)
#define dw_mask_fma(w, v, a, k)                                                                    \
    _mm256_blendv_ps(a, _mm256_fmadd_ps(w, v, a), _mm256_castsi256_ps(k))
#define dw_mask_storeu(p, k, v) _mm256_maskstore_ps(p, k, v)

/* Lanes j with 0 <= c + j < W. */
static inline dw_mask dw_inside(int64_t c, int64_t W)
{
    const __m256i cj =
        _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)c));
    return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), cj),
                               _mm256_cmpgt_epi32(_mm256_set1_epi32((int)W), cj));
}

/* Lanes j < n. */
static inline dw_mask dw_below(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 8 ? n : 8)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#include "conv_depthwise_plane.h"
