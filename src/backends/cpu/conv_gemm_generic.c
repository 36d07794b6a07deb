/*
 * The portable C SGEMM microkernel of the fast conv2d path, for CPUs without AVX2 + FMA (or
 * with SIMD paths allowed but AVX2 absent): the same 6 x 16 tile and packed layouts as the
 * AVX2 kernel, written so that the compiler vectorises the 16-wide rows (SSE2 on x86-64).
 */
#include "conv.h"

#define MR LUMEN_GEMM_MR
#define NR LUMEN_GEMM_NR

/* acc = sum over n steps (one register-sized chunk); a and b advance. */
static void chunk(int64_t n, const float **pa, const float **pb, float acc[MR][NR])
{
    const float *a = *pa, *b = *pb;
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) acc[i][j] = 0.0f;
    for (int64_t p = 0; p < n; p++, a += MR, b += NR)
        for (int i = 0; i < MR; i++) {
            const float av = a[i];
            for (int j = 0; j < NR; j++) acc[i][j] += av * b[j];
        }
    *pa = a, *pb = b;
}

/* Chunks of LUMEN_GEMM_SUB terms summed into a tile, as the SIMD kernels do (accuracy). */
void lumen_sgemm_ukr_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                             const float *bias, int first)
{
    float acc[MR][NR], tile[MR][NR] = {{0}};
    for (int64_t p = 0; p < kc; p += LUMEN_GEMM_SUB) {
        chunk(kc - p < LUMEN_GEMM_SUB ? kc - p : LUMEN_GEMM_SUB, &a, &b, acc);
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) tile[i][j] = p == 0 ? acc[i][j] : tile[i][j] + acc[i][j];
    }
    for (int i = 0; i < MR; i++) {
        float *ci = c + i * ldc;
        for (int j = 0; j < NR; j++) ci[j] = (first ? bias[i] : ci[j]) + tile[i][j];
    }
}
