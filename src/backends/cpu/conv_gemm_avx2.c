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

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ZERO(i) c##i##0 = _mm256_setzero_ps(), c##i##1 = c##i##0;
#define TILE_SET(i) _mm256_store_ps(t + 16 * i, c##i##0), _mm256_store_ps(t + 16 * i + 8, c##i##1);
#define TILE_ADD(i)                                                                                \
    _mm256_store_ps(t + 16 * i, _mm256_add_ps(_mm256_load_ps(t + 16 * i), c##i##0));               \
    _mm256_store_ps(t + 16 * i + 8, _mm256_add_ps(_mm256_load_ps(t + 16 * i + 8), c##i##1));
#define TILE_GET(i)                                                                                \
    c##i##0 = _mm256_add_ps(_mm256_load_ps(t + 16 * i), c##i##0);                                  \
    c##i##1 = _mm256_add_ps(_mm256_load_ps(t + 16 * i + 8), c##i##1);
#define STORE(i) store_row(c + i * ldc, c##i##0, c##i##1, bias[i], first);

/* Steps [0, n) of one register chunk; a and b advance. One step per iteration: unrolled by
 * four, GCC's schedule needed a 17th register and kept an accumulator on the stack. */
#define CHUNK()                                                                                    \
    ROWS(ZERO)                                                                                     \
    for (int64_t p = 0; p < n; p++, a += 6, b += 16) {                                             \
        _mm_prefetch((const char *)(b + 256), _MM_HINT_T0);                                        \
        STEP(0);                                                                                   \
    }

/* Register chunks of at most LUMEN_GEMM_SUB steps folded into an L1 tile (accuracy: conv.h).
 * One copy of the chunk loop: with a second one (the first chunk apart) GCC kept three to all
 * twelve accumulators on the stack, and pw_256x28x28_k1 ran at 64% of the FMA peak (Zen 5). */
void lumen_sgemm_ukr_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          const float *bias, int first)
{
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    _Alignas(32) float t[6 * 16];
    int folded = 0; /* chunks summed in t */
    for (;;) {
        const int64_t n = kc < LUMEN_GEMM_SUB ? kc : LUMEN_GEMM_SUB;
        CHUNK()
        kc -= n;
        if (kc == 0) break;
        if (folded++) {
            ROWS(TILE_ADD)
        } else {
            ROWS(TILE_SET)
        }
    }
    if (folded) {
        ROWS(TILE_GET)
    }
    ROWS(STORE)
}
