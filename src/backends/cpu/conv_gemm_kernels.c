/*
 * The SGEMM microkernels of the CPU conv paths and the choice among them: the ISA is the best
 * the context allows (SIMD switch, CPU features, $LUMEN_CPU_ISA); within AVX-512 the tile
 * height mr is chosen per GEMM so that few rows of the last W sliver are padding.
 */
#include "conv.h"

static const lumen_sgemm_kernel kernel_generic = {LUMEN_GEMM_MR, LUMEN_GEMM_NR,
                                                  lumen_sgemm_ukr_generic, "generic"};
static const lumen_sgemm_kernel kernel_avx2 = {LUMEN_GEMM_MR, LUMEN_GEMM_NR, lumen_sgemm_ukr_avx2,
                                               "avx2+fma"};
/* The default first; all share nr = 32. */
static const lumen_sgemm_kernel kernels_avx512[] = {
    {14, 32, lumen_sgemm_ukr_avx512_14x32, "avx512"},
    {13, 32, lumen_sgemm_ukr_avx512_13x32, "avx512"},
    {12, 32, lumen_sgemm_ukr_avx512_12x32, "avx512"},
    {8, 32, lumen_sgemm_ukr_avx512_8x32, "avx512"},
};
/* Cycles per reduction step: mr (2*mr FMAs on two ports) + ~1 for the B loads and the loop
 * (the noisy shared machine could not resolve finer differences). */
static const int cost_avx512[] = {15, 14, 13, 9};

const lumen_sgemm_kernel *lumen_cpu_sgemm_kernel(const lumen_context *ctx)
{
    if (lumen_ctx_use_avx512(ctx)) return &kernels_avx512[0];
    return lumen_ctx_use_avx2(ctx) ? &kernel_avx2 : &kernel_generic;
}

const lumen_sgemm_kernel *lumen_cpu_sgemm_kernel_for_rows(const lumen_context *ctx, int64_t rows)
{
    if (!lumen_ctx_use_avx512(ctx) || rows < 1) return lumen_cpu_sgemm_kernel(ctx);
    int best = 0;
    int64_t best_cost = -1;
    for (int i = 0; i < (int)(sizeof kernels_avx512 / sizeof *kernels_avx512); i++) {
        const int64_t mr = kernels_avx512[i].mr;
        const int64_t cost = (rows + mr - 1) / mr * cost_avx512[i]; /* per step, all slivers */
        if (best_cost < 0 || cost < best_cost) best = i, best_cost = cost;
    }
    return &kernels_avx512[best];
}
