/* The direct conv2d tile kernel for AVX2+FMA CPUs (this file alone gets the AVX2 flags):
 * 3 vectors of 8 outputs x 4 channels = 12 accumulators, 3 input vectors and a broadcast
 * weight in the 16 registers. */
#include <immintrin.h>

#define DC_FN lumen_dc_tile_avx2
#define DC_V LUMEN_DC_AVX2_V
#define DC_KB LUMEN_DC_AVX2_KB
#define DC_VEC __m256
#define DC_ZERO() _mm256_setzero_ps()
#define DC_LOADU(p) _mm256_loadu_ps(p)
#define DC_SET1(v) _mm256_set1_ps(v)
#define DC_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define DC_ADD(a, b) _mm256_add_ps(a, b)
#define DC_STOREU(p, v) _mm256_storeu_ps(p, v)
/* lanes below n: all bits set (maskload/maskstore read the sign bit) */
#define DC_MASK(n)                                                                                 \
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define DC_LOADN(p, n) _mm256_maskload_ps(p, DC_MASK(n))
#define DC_STOREN(p, v, n) _mm256_maskstore_ps(p, DC_MASK(n), v)
#include "conv_direct_kernel.h"
