/* The direct conv2d tile kernel for AVX-512 CPUs (this file alone gets the AVX-512 flags):
 * 3 vectors of 16 outputs x 8 channels = 24 accumulators, 3 input vectors and a broadcast
 * weight in the 32 registers. */
#include <immintrin.h>

#define DC_FN lumen_dc_tile_avx512
#define DC_V LUMEN_DC_AVX512_V
#define DC_KB LUMEN_DC_AVX512_KB
#define DC_VEC __m512
#define DC_ZERO() _mm512_setzero_ps()
#define DC_LOADU(p) _mm512_loadu_ps(p)
#define DC_SET1(v) _mm512_set1_ps(v)
#define DC_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define DC_ADD(a, b) _mm512_add_ps(a, b)
#define DC_STOREU(p, v) _mm512_storeu_ps(p, v)
#define DC_MASK(n) ((__mmask16)((1u << (n)) - 1u))
#define DC_LOADN(p, n) _mm512_maskz_loadu_ps(DC_MASK(n), p)
#define DC_STOREN(p, v, n) _mm512_mask_storeu_ps(p, DC_MASK(n), v)
#include "conv_direct_kernel.h"
