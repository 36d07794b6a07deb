/*
 * The AVX-512 SGEMM microkernels of the fast conv2d path (this file alone is compiled with
 * -mavx512f/vl/bw/dq and only called after the run-time CPUID + XGETBV check).
 *
 * A tile of MR x 32 floats of C lives in 2*MR zmm accumulators; per reduction step two aligned
 * 16-float loads of the B sliver and MR broadcasts of the A sliver feed 2*MR FMAs. With MR = 14
 * that is 28 accumulators + 2 B registers + 1-2 broadcasts, the most the 32 zmm registers hold,
 * and 16 loads per 28 FMAs, which the two load ports sustain at two FMAs per cycle.
 *
 * Accuracy: the registers hold at most LUMEN_GEMM_SUB (64) terms; each chunk is then folded
 * into a tile in L1 (registers of the last chunk are added straight into C). f32 sums of 64
 * terms then of kc/64 partials keep the error on all-positive data near 3e-7 * sum|a*b|, where
 * one 256-term register chain reached 1e-6 (the tests' bound).
 */
#include "conv.h"

#include <immintrin.h>

#define NR 32
#define SUB LUMEN_GEMM_SUB

/* Row lists: the accumulators are named variables (c<i>0, c<i>1), as an array of __m512 is
 * kept in memory by GCC. */
#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROWS12(X) ROWS8(X) X(8) X(9) X(10) X(11)
#define ROWS13(X) ROWS12(X) X(12)
#define ROWS14(X) ROWS13(X) X(13)

#define ACC_DECL(i) __m512 c##i##0, c##i##1;
#define ACC_ZERO(i) c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0;
#define ACC_FMA(i)                                                                                 \
    {                                                                                              \
        const __m512 av = _mm512_set1_ps(a[i]);                                                    \
        c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1);                                                \
    }
#define TILE_SET(i) _mm512_store_ps(tile[i], c##i##0), _mm512_store_ps(tile[i] + 16, c##i##1);
#define TILE_ADD(i)                                                                                \
    _mm512_store_ps(tile[i], _mm512_add_ps(_mm512_load_ps(tile[i]), c##i##0));                     \
    _mm512_store_ps(tile[i] + 16, _mm512_add_ps(_mm512_load_ps(tile[i] + 16), c##i##1));
#define TILE_GET(i)                                                                                \
    c##i##0 = _mm512_add_ps(_mm512_load_ps(tile[i]), c##i##0);                                     \
    c##i##1 = _mm512_add_ps(_mm512_load_ps(tile[i] + 16), c##i##1);
#define C_PREFETCH(i)                                                                              \
    _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);                                        \
    _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
#define C_STORE(i)                                                                                 \
    {                                                                                              \
        float *ci = c + i * ldc;                                                                   \
        const __m512 lo = first ? _mm512_set1_ps(bias[i]) : _mm512_loadu_ps(ci);                   \
        const __m512 hi = first ? _mm512_set1_ps(bias[i]) : _mm512_loadu_ps(ci + 16);              \
        _mm512_storeu_ps(ci, _mm512_add_ps(lo, c##i##0));                                          \
        _mm512_storeu_ps(ci + 16, _mm512_add_ps(hi, c##i##1));                                     \
    }

/*
 * One chunk: accumulators = sum over n steps; a and b advance. A streams from L2 (the B sliver
 * stays in L1 across the panels of A), so it is prefetched about 16 steps ahead.
 */
#define CHUNK(MR, ROWS)                                                                            \
    ROWS(ACC_ZERO)                                                                                 \
    for (int64_t p = 0; p < n; p++, a += MR, b += NR) {                                            \
        _mm_prefetch((const char *)(a + 16 * MR), _MM_HINT_T0);                                    \
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);                          \
        ROWS(ACC_FMA)                                                                              \
    }

/* C is touched only at the end: its lines are prefetched while the FMAs run. */
#define DEFINE_UKR(MR)                                                                             \
    void lumen_sgemm_ukr_avx512_##MR##x32(int64_t kc, const float *a, const float *b, float *c,    \
                                          int64_t ldc, const float *bias, int first)               \
    {                                                                                              \
        ROWS##MR(ACC_DECL) _Alignas(64) float tile[MR][NR];                                        \
        ROWS##MR(C_PREFETCH) int64_t n = kc < SUB ? kc : SUB;                                      \
        CHUNK(MR, ROWS##MR)                                                                        \
        kc -= n;                                                                                   \
        if (kc > 0) {                                                                              \
            ROWS##MR(TILE_SET) for (;;)                                                            \
            {                                                                                      \
                n = kc < SUB ? kc : SUB;                                                           \
                CHUNK(MR, ROWS##MR)                                                                \
                kc -= n;                                                                           \
                if (kc == 0) break;                                                                \
                ROWS##MR(TILE_ADD)                                                                 \
            }                                                                                      \
            ROWS##MR(TILE_GET)                                                                     \
        }                                                                                          \
        ROWS##MR(C_STORE)                                                                          \
    }

DEFINE_UKR(14)
DEFINE_UKR(13)
DEFINE_UKR(12)
DEFINE_UKR(8)
