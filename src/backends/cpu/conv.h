/* NCHW neural-network convolution on the CPU: the job ops hand over, and the scalar reference. */
#ifndef LUMEN_CPU_CONV_H
#define LUMEN_CPU_CONV_H

#include "internal.h"

/*
 * A validated conv job: x (N, C, H, W), w (K, C/g, R, S) for conv2d or (C, K/g, R, S) for
 * conv_transpose2d, y (N, K, P, Q) already of the right shape, all f32 host views, y disjoint
 * from x, w and bias. bias is NULL or K floats. When a backend table entry for conv is added
 * (issue 6), this struct moves to src/core/internal.h beside lumen_filter_job.
 */
typedef enum { LUMEN_CONV_FORWARD = 0, LUMEN_CONV_TRANSPOSED = 1 } lumen_conv_kind;

typedef struct lumen_conv_job {
    const lumen_image *x, *w, *y;
    const float *bias;
    lumen_conv2d_params p;
} lumen_conv_job;

/*
 * Runs a job on the CPU with the algorithm chosen for its shape (conv_select.c): the reference
 * when SIMD is off, else Winograd, im2col+SGEMM, ... Fills info's method, algo, isa, threads.
 */
lumen_status lumen_cpu_conv(lumen_context *ctx, lumen_conv_kind kind, const lumen_conv_job *job,
                            lumen_run_info *info);

/* The definition of conv2d: gather loops in double, threads over (n, k). Kept forever. */
lumen_status lumen_cpu_conv2d_reference(lumen_context *ctx, const lumen_conv_job *job);
/* The definition of conv_transpose2d as the exact adjoint of conv2d, in gather form. */
lumen_status lumen_cpu_conv_transpose2d_reference(lumen_context *ctx, const lumen_conv_job *job);

/*
 * The fast path of conv2d (forward only): implicit im2col packed straight into B panels plus a
 * blocked, register-tiled SGEMM, C (K/g x N*P*Q per group) = W (K/g x C/g*R*S) * im2col(x), f32
 * accumulation (FMA) with the reduction split into blocks of at most LUMEN_GEMM_KC terms that are
 * added into y. 1x1 stride-1 unpadded convs pack x's rows directly (a plain GEMM). Threads
 * (ctx->threads) split groups x column blocks. *isa receives "avx2+fma" or "generic".
 */
lumen_status lumen_cpu_conv2d_gemm(lumen_context *ctx, const lumen_conv_job *job, const char **isa);

/*
 * The fast path of conv_transpose2d: split by output phase (stride_h x stride_w of them) into
 * stride-1 conv2d jobs on the SGEMM path above (conv_transpose_gemm.c); same error bound.
 */
lumen_status lumen_cpu_conv_transpose2d_gemm(lumen_context *ctx, const lumen_conv_job *job,
                                             const char **isa);

/* Microkernel tile and the largest reduction block. */
#define LUMEN_GEMM_MR 6
#define LUMEN_GEMM_NR 16
#define LUMEN_GEMM_KC 256

/*
 * c[i*ldc + j] = (first ? bias[i] : c[i*ldc + j]) + sum_p a[p*MR + i] * b[p*NR + j] for i < MR,
 * j < NR: a is an MR-row sliver of packed weights, b a 64-byte aligned NR-column sliver of
 * packed im2col columns, both kc deep.
 */
typedef void (*lumen_sgemm_ukr_fn)(int64_t kc, const float *a, const float *b, float *c,
                                   int64_t ldc, const float *bias, int first);
void lumen_sgemm_ukr_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          const float *bias, int first);
void lumen_sgemm_ukr_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                             const float *bias, int first);

/*
 * A microkernel and its tile: slivers of A are kc x mr (a[p*mr + i]), slivers of B kc x nr
 * (b[p*nr + j], 64-byte aligned). Every user of the SGEMM (im2col, Winograd, transposed conv)
 * packs for the tile of the kernel it got here, never for the macros above.
 */
typedef struct lumen_sgemm_kernel {
    int mr, nr;
    lumen_sgemm_ukr_fn fn;
    const char *isa; /* "avx2+fma", "generic", ... for run info */
} lumen_sgemm_kernel;

/* The fastest microkernel this context allows (SIMD switch and the CPU's features). */
const lumen_sgemm_kernel *lumen_cpu_sgemm_kernel(const lumen_context *ctx);

#endif
