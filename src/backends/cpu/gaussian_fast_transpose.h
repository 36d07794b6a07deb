/*
 * The 8 x 8 in-register transpose of the fast Gaussian's row pass, shared by the AVX2 and
 * AVX-512 kernel files (each compiled with AVX2 enabled; include after <immintrin.h>).
 */
#ifndef LUMEN_CPU_GAUSSIAN_FAST_TRANSPOSE_H
#define LUMEN_CPU_GAUSSIAN_FAST_TRANSPOSE_H

/* In-register transpose of an 8 x 8 block. */
static inline void transpose8(__m256 v[8])
{
    __m256 t[8], u[8];
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm256_unpacklo_ps(v[q], v[q + 1]);
        t[q + 1] = _mm256_unpackhi_ps(v[q], v[q + 1]);
    }
    for (int q = 0; q < 8; q += 4) {
        u[q] = _mm256_shuffle_ps(t[q], t[q + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int q = 0; q < 4; q++) {
        v[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
        v[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
    }
}

#endif
