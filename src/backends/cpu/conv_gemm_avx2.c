/*
 * The AVX2 + FMA SGEMM microkernel of the fast conv2d path (this file alone is compiled with
 * -mavx2 -mfma and only called after the run-time CPU check). A 6 x 16 tile of C lives in
 * twelve ymm accumulators; per reduction step two 8-float loads of the B sliver and six
 * broadcasts of the A sliver feed twelve FMAs, which keeps both FMA ports busy.
 */
#include "conv.h"

#include <immintrin.h>

#define STEP(p)                                                                                    \
    do {                                                                                           \
        const __m256 b0 = _mm256_load_ps(b + (p) * 16), b1 = _mm256_load_ps(b + (p) * 16 + 8);     \
        __m256 av = _mm256_broadcast_ss(a + (p) * 6 + 0);                                          \
        c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);                    \
        av = _mm256_broadcast_ss(a + (p) * 6 + 1);                                                 \
        c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);                    \
        av = _mm256_broadcast_ss(a + (p) * 6 + 2);                                                 \
        c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);                    \
        av = _mm256_broadcast_ss(a + (p) * 6 + 3);                                                 \
        c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);                    \
        av = _mm256_broadcast_ss(a + (p) * 6 + 4);                                                 \
        c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);                    \
        av = _mm256_broadcast_ss(a + (p) * 6 + 5);                                                 \
        c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);                    \
    } while (0)

/* One row of the tile: c = (first ? bias : c) + acc, 16 floats. */
static inline void store_row(float *c, __m256 lo, __m256 hi, float bias, int first)
{
    if (first) {
        const __m256 bv = _mm256_set1_ps(bias);
        _mm256_storeu_ps(c, _mm256_add_ps(bv, lo));
        _mm256_storeu_ps(c + 8, _mm256_add_ps(bv, hi));
    } else {
        _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(c), lo));
        _mm256_storeu_ps(c + 8, _mm256_add_ps(_mm256_loadu_ps(c + 8), hi));
    }
}

void lumen_sgemm_ukr_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          const float *bias, int first)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, a += 24, b += 64) {
        _mm_prefetch((const char *)(b + 256), _MM_HINT_T0);
        STEP(0);
        STEP(1);
        _mm_prefetch((const char *)(b + 288), _MM_HINT_T0);
        STEP(2);
        STEP(3);
    }
    for (; p < kc; p++, a += 6, b += 16) STEP(0);
    store_row(c + 0 * ldc, c00, c01, bias[0], first);
    store_row(c + 1 * ldc, c10, c11, bias[1], first);
    store_row(c + 2 * ldc, c20, c21, bias[2], first);
    store_row(c + 3 * ldc, c30, c31, bias[3], first);
    store_row(c + 4 * ldc, c40, c41, bias[4], first);
    store_row(c + 5 * ldc, c50, c51, bias[5], first);
}
