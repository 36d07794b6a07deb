/* NCHW neural-network convolution on the CPU: the job ops hand over, and the scalar reference. */
#ifndef LUMEN_CPU_CONV_H
#define LUMEN_CPU_CONV_H

#include "cpu.h"

/* The validated job (lumen_conv_job, kind LUMEN_OP_CONV2D or _CONV_TRANSPOSE2D) lives in internal.h; the CPU gets host
 * views only (the runtime stages device-resident ones). */

/*
 * Runs a job on the CPU with the algorithm chosen for its shape (conv_select.c): the reference
 * when SIMD is off, else Winograd, im2col+SGEMM, ... Fills info's method, algo, isa, threads.
 */
lumen_status lumen_cpu_conv(lumen_context *ctx, lumen_op_kind kind, const lumen_conv_job *job,
                            lumen_run_info *info);
/* f32 (contiguous NCHW) <- a tensor of any dtype and strides, exactly, or tensor <- f32 when
 * `store` (rounded to nearest even); threads over planes (conv_half.c). */
void lumen_cpu_conv_convert(const lumen_context *ctx, const lumen_image *half, float *f32,
                            bool store);
/* The same for a job with f16/bf16 tensors: lumen_cpu_conv on f32 copies (conv_half.c). */
lumen_status lumen_cpu_conv_widened(lumen_context *ctx, lumen_op_kind kind,
                                    const lumen_conv_job *job, lumen_run_info *info);

/* The conv2d algorithms of the CPU (conv_select.c). */
typedef enum lumen_conv_algo {
    LUMEN_CONV_REFERENCE,
    LUMEN_CONV_DEPTHWISE,
    LUMEN_CONV_WINOGRAD_F2,
    LUMEN_CONV_WINOGRAD_F4,
    LUMEN_CONV_GEMM,
    LUMEN_CONV_DIRECT,
} lumen_conv_algo;
/* The algorithm lumen_cpu_conv runs for a conv2d job (f32 or widened); shapes only. */
lumen_conv_algo lumen_cpu_conv2d_algo(const lumen_context *ctx, const lumen_conv_job *job);
/* Its name in lumen_run_info.algo. */
const char *lumen_cpu_conv_algo_name(lumen_conv_algo a);

/* A conv's work in lumen_cpu_team_size's units: its multiply-adds times per_mac. The factors
 * are calibrated so that a second thread joins where it measured faster (docs/benchmarks.md,
 * "Small calls"): below about 50 MFLOP the SGEMM and Winograd paths' fixed costs per thread
 * (transforms, packing, the regions' barriers) outweigh the split. */
#define LUMEN_CONV_WORK_DENSE 0.0003 /* SGEMM, Winograd */
#define LUMEN_CONV_WORK_DIRECT 0.001 /* the direct path for short reductions */
#define LUMEN_CONV_WORK_DEPTHWISE 0.02
static inline double lumen_cpu_conv_work(const lumen_conv_job *job, double per_mac)
{
    const lumen_image *w = job->w, *y = job->y;
    return per_mac * (double)y->n * (double)y->c * (double)y->h * (double)y->w * (double)w->c *
           (double)w->h * (double)w->w;
}

/*
 * Prepacked weights (conv_pack.c, lumen_conv2d_weights_pack): the transform of one algorithm
 * for one SGEMM kernel. A path uses data only when the job's algorithm, tile and kernel are
 * the ones it was packed for, else it transforms w itself as without a pack.
 */
struct lumen_conv_pack {
    lumen_conv_algo algo;
    const struct lumen_sgemm_kernel *kernel; /* the SGEMM tile packed for (NULL: no data) */
    int wino_isa;                     /* Winograd: the transform's ISA index */
    float *data;                      /* 64-byte aligned, bytes long */
    size_t bytes;
};
/* Transformed weights of the job's w for its path, packed by the code the call uses:
 * *data (aligned_alloc, the caller frees) and *kernel. */
lumen_status lumen_cpu_conv2d_gemm_pack(lumen_context *ctx, const lumen_conv_job *job,
                                        lumen_conv_pack *pack);
lumen_status lumen_cpu_conv2d_winograd_pack(lumen_context *ctx, const lumen_conv_job *job, int m,
                                            lumen_conv_pack *pack);

/* The definition of conv2d: gather loops in double, threads over (n, k). Kept forever. */
lumen_status lumen_cpu_conv2d_reference(lumen_context *ctx, const lumen_conv_job *job);
/* The definition of conv_transpose2d as the exact adjoint of conv2d, in gather form. */
lumen_status lumen_cpu_conv_transpose2d_reference(lumen_context *ctx, const lumen_conv_job *job);

/*
 * The fast path of conv2d (forward only): implicit im2col packed straight into B slivers plus a
 * blocked, register-tiled SGEMM, C (K/g x N*P*Q per group) = W (K/g x C/g*R*S) * im2col(x), f32
 * accumulation (FMA) in chunks of LUMEN_GEMM_SUB terms, folded per cache block of the reduction
 * and added into y per block. 1x1 stride-1 unpadded convs pack x's rows directly (a plain GEMM).
 * Threads (ctx->threads) split groups x column blocks. The blocking and the scratch of a shape
 * are planned once and kept in ctx->plans. *isa receives the kernel's name ("avx512",
 * "avx2+fma", "generic").
 */
lumen_status lumen_cpu_conv2d_gemm(lumen_context *ctx, const lumen_conv_job *job, const char **isa);

/*
 * The fast path of conv_transpose2d: split by output phase (stride_h x stride_w of them) into
 * stride-1 conv2d jobs on the SGEMM path above (conv_transpose_gemm.c); same error bound.
 */
lumen_status lumen_cpu_conv_transpose2d_gemm(lumen_context *ctx, const lumen_conv_job *job,
                                             const char **isa);

/*
 * Depthwise conv2d (groups = C, weights (m*C, 1, R, S)): direct loops over padded input rows,
 * threads over output planes (conv_depthwise.c); f32 dot products of R*S terms.
 */
bool lumen_cpu_conv2d_depthwise_applies(const lumen_conv_job *job);
lumen_status lumen_cpu_conv2d_depthwise(lumen_context *ctx, const lumen_conv_job *job,
                                        const char **isa);

/* The largest depthwise kernel on this path (larger ones take the SGEMM path). */
#define LUMEN_DW_MAX_R 16
#define LUMEN_DW_MAX_S 16

/* One depthwise output plane: what the per-ISA kernels (conv_depthwise_plane.h) need. */
typedef struct lumen_dw_plane {
    const lumen_conv_job *job;
    const float *xp; /* the input channel's plane */
    float *yp;       /* the output plane */
    const float *w;  /* R x S taps, dense */
    float bias;
    int64_t R, S, padded; /* padded: width of a zero-padded input row */
} lumen_dw_plane;
typedef void (*lumen_dw_plane_fn)(const lumen_dw_plane *pl, float *pad, float *acc);
void lumen_dw_plane_generic(const lumen_dw_plane *pl, float *pad, float *acc);
void lumen_dw_plane_avx2(const lumen_dw_plane *pl, float *pad, float *acc);
void lumen_dw_plane_avx512(const lumen_dw_plane *pl, float *pad, float *acc);

/*
 * Direct conv2d for short reductions (conv_direct.c): first layers with few input channels
 * (C <= LUMEN_DC_MAX_C, groups 1), any stride, padding and dilation. No im2col: per (image, band
 * of output rows) a thread copies the input rows the band reads into a zero-padded scratch split
 * into stride phases (column i of phase f = padded column i*sw + f), so the input of every tap
 * for 16 (AVX-512) or 8 (AVX2) adjacent outputs of a row is one contiguous vector load. A tile
 * is V such output vectors x KB output channels in registers, summed over the C*R*S taps in
 * order (c, r, s), folded into y every LUMEN_GEMM_SUB taps (y = bias + first chunk, then
 * y += each further chunk): the same sums, in the same order, on both ISAs (same bits).
 * _applies: the shape is one it takes and the ISA has a kernel for (AVX2 or AVX-512).
 */
#define LUMEN_DC_MAX_C 4
#define LUMEN_DC_V_MAX 4
bool lumen_cpu_conv2d_direct_applies(const lumen_context *ctx, const lumen_conv_job *job);
lumen_status lumen_cpu_conv2d_direct(lumen_context *ctx, const lumen_conv_job *job,
                                     const char **isa);

/* One tile of the direct path: nv (<= the kernel's V) output vectors x nk (<= KB) channels. */
typedef struct lumen_dc_tile {
    const float *in[LUMEN_DC_V_MAX]; /* per vector: its tap (0, 0, 0) in the phase scratch */
    float *out[LUMEN_DC_V_MAX];      /* per vector: channel 0's outputs (lanes contiguous) */
    int64_t ldc;                     /* floats from one channel's outputs to the next's */
    const int32_t *off;              /* per tap: its offset from in[v] */
    const float *w;                  /* taps x KB weights, zero past the last channel */
    const float *bias;               /* KB biases (zero past the last channel) */
    int64_t taps;
    int nv, nk;
    int lanes[LUMEN_DC_V_MAX]; /* per vector: outputs to store (the last of a row may be short) */
} lumen_dc_tile;
typedef void (*lumen_dc_tile_fn)(const lumen_dc_tile *t);
/* The kernels and their tiles (V vectors of VL lanes x KB channels). */
void lumen_dc_tile_avx512(const lumen_dc_tile *t);
void lumen_dc_tile_avx2(const lumen_dc_tile *t);
#define LUMEN_DC_AVX512_VL 16
#define LUMEN_DC_AVX512_V 3
#define LUMEN_DC_AVX512_KB 8
#define LUMEN_DC_AVX2_VL 8
#define LUMEN_DC_AVX2_V 3
#define LUMEN_DC_AVX2_KB 4

/*
 * Winograd F(m x m, 3 x 3) conv2d (conv_winograd*.c): 3x3 kernels, stride 1, dilation 1, any
 * padding, groups and batch. Input tiles and weights are transformed, each of the (m+2)^2
 * transform positions is one GEMM (K/g x tiles) = U (K/g x C/g) * V (C/g x tiles) on the
 * shared microkernel, and the output transform adds bias and writes y through its strides.
 * _applies: the shape is one where it measures faster than im2col+SGEMM. _tile runs tile m
 * (2 or 4); _tile_for picks the faster tile for the shape (4 with enough tiles), which the
 * plain call runs. F(2x2) keeps 1e-6 * sum|x*w|, F(4x4) 1e-5 (docs/conv2d.md).
 */
int lumen_cpu_conv2d_winograd_tile_for(const lumen_conv_job *job);
bool lumen_cpu_conv2d_winograd_applies(const lumen_context *ctx, const lumen_conv_job *job);
lumen_status lumen_cpu_conv2d_winograd(lumen_context *ctx, const lumen_conv_job *job,
                                       const char **isa);
lumen_status lumen_cpu_conv2d_winograd_tile(lumen_context *ctx, const lumen_conv_job *job, int m,
                                            const char **isa);
/* _tile with the work split chosen by the caller: shared 0 runs items (a block of tiles per
 * thread, in its own V and M), n > 0 shared blocks of at most n slivers of the kernel's nr
 * tiles (every thread on each block: phases of input transform, GEMMs split by position,
 * output transform), -1 the choice _tile makes (shared blocks as large as 32 MB of scratch
 * allow when U is larger than 16 MB, else items). Every split gives the same bits. */
lumen_status lumen_cpu_conv2d_winograd_run(lumen_context *ctx, const lumen_conv_job *job, int m,
                                           int shared, const char **isa);

/* ---- SGEMM microkernels ---------------------------------------------------
 * The tile of the AVX2 and generic kernels; other kernels have their own (lumen_sgemm_kernel). */
#define LUMEN_GEMM_MR 6
#define LUMEN_GEMM_NR 16
/* The largest mr and nr of any kernel, for scratch tiles sized at compile time. */
#define LUMEN_GEMM_MR_MAX 16
#define LUMEN_GEMM_NR_MAX 32
/* Reduction block of the im2col path: a kc x mr W sliver stays in L1, kc x item B in L2. */
#define LUMEN_GEMM_KC 256
/*
 * Kernels keep at most this many reduction terms in a register accumulator, then fold the
 * partial sum into an L1 tile: a 256-term f32 chain of all-positive terms reached 1.04e-6 of
 * sum|a*b| (over the tests' 1e-6), chunks of 64 stay near 3e-7 at ~2% cost.
 */
#define LUMEN_GEMM_SUB 64

/*
 * c[i*ldc + j] = (first ? bias[i] : c[i*ldc + j]) + sum_p a[p*mr + i] * b[p*nr + j] for i < mr,
 * j < nr: a is an mr-row sliver of packed weights, b a 64-byte aligned nr-column sliver of
 * packed im2col columns, both kc deep (any kc >= 1; the kernel chunks it as above). c needs no
 * alignment; every mr x nr element of it is read (unless first) and written.
 */
typedef void (*lumen_sgemm_ukr_fn)(int64_t kc, const float *a, const float *b, float *c,
                                   int64_t ldc, const float *bias, int first);
void lumen_sgemm_ukr_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          const float *bias, int first);
void lumen_sgemm_ukr_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                             const float *bias, int first);
/* AVX-512 tiles of mr x 32 (conv_gemm_avx512.c). */
void lumen_sgemm_ukr_avx512_14x32(int64_t kc, const float *a, const float *b, float *c,
                                  int64_t ldc, const float *bias, int first);
void lumen_sgemm_ukr_avx512_13x32(int64_t kc, const float *a, const float *b, float *c,
                                  int64_t ldc, const float *bias, int first);
void lumen_sgemm_ukr_avx512_12x32(int64_t kc, const float *a, const float *b, float *c,
                                  int64_t ldc, const float *bias, int first);
void lumen_sgemm_ukr_avx512_8x32(int64_t kc, const float *a, const float *b, float *c,
                                 int64_t ldc, const float *bias, int first);

/*
 * A microkernel and its tile: slivers of A are kc x mr (a[p*mr + i]), slivers of B kc x nr
 * (b[p*nr + j], 64-byte aligned). Every user of the SGEMM (im2col, Winograd, transposed conv)
 * packs for the tile of the kernel it got here, never for the macros above.
 */
typedef struct lumen_sgemm_kernel {
    int mr, nr;
    lumen_sgemm_ukr_fn fn;
    const char *isa; /* "avx512", "avx2+fma", "generic" for run info */
} lumen_sgemm_kernel;

/* The fastest microkernel this context allows (SIMD switch, the CPU's features and
 * $LUMEN_CPU_ISA). */
const lumen_sgemm_kernel *lumen_cpu_sgemm_kernel(const lumen_context *ctx);
/*
 * The kernel of that ISA whose tile best fits a GEMM with `rows` rows of A (K/g): the same
 * ISA and nr as lumen_cpu_sgemm_kernel, mr chosen so that padded rows waste least.
 */
const lumen_sgemm_kernel *lumen_cpu_sgemm_kernel_for_rows(const lumen_context *ctx, int64_t rows);

#endif
