/*
 * The portable C SGEMM microkernel of the fast conv2d path, for CPUs without AVX2 + FMA (or
 * with SIMD paths allowed but AVX2 absent): the same 6 x 16 tile and packed layouts as the
 * AVX2 kernel, written so that the compiler vectorises the 16-wide rows (SSE2 on x86-64).
 */
#include "conv.h"

void lumen_sgemm_ukr_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                             const float *bias, int first)
{
    float acc[LUMEN_GEMM_MR][LUMEN_GEMM_NR] = {{0}};
    for (int64_t p = 0; p < kc; p++, a += LUMEN_GEMM_MR, b += LUMEN_GEMM_NR)
        for (int i = 0; i < LUMEN_GEMM_MR; i++) {
            const float av = a[i];
            for (int j = 0; j < LUMEN_GEMM_NR; j++) acc[i][j] += av * b[j];
        }
    for (int i = 0; i < LUMEN_GEMM_MR; i++) {
        float *ci = c + i * ldc;
        for (int j = 0; j < LUMEN_GEMM_NR; j++) ci[j] = (first ? bias[i] : ci[j]) + acc[i][j];
    }
}

static const lumen_sgemm_kernel kernel_generic = {LUMEN_GEMM_MR, LUMEN_GEMM_NR,
                                                  lumen_sgemm_ukr_generic, "generic"};
static const lumen_sgemm_kernel kernel_avx2 = {LUMEN_GEMM_MR, LUMEN_GEMM_NR, lumen_sgemm_ukr_avx2,
                                               "avx2+fma"};

const lumen_sgemm_kernel *lumen_cpu_sgemm_kernel(const lumen_context *ctx)
{
    return lumen_ctx_use_avx2(ctx) ? &kernel_avx2 : &kernel_generic;
}
