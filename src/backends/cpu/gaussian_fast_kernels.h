/*
 * Inner loops of the fast Gaussian (gaussian_fast.c), one set per ISA. They
 * filter m independent "lanes" (columns of the image, or rows transposed into
 * columns) along a sequence of input rows, each row m contiguous floats.
 */
#ifndef LUMEN_CPU_GAUSSIAN_FAST_KERNELS_H
#define LUMEN_CPU_GAUSSIAN_FAST_KERNELS_H

#include "gaussian_fast_coeffs.h" /* lumen_gf_iir, LUMEN_GF_FIR_MAX_TAPS */

#include <stdbool.h>
#include <stdint.h>

/* Floats of per-lane state an IIR kernel needs (its `state` argument holds m times this). */
#define LUMEN_GF_STATE 4

/* Recursion state = (gr + i gi) * x per section, or zero when x is NULL (both ISAs). */
static inline void lumen_gf_state_init(const float *gr, const float *gi, const float *x, float *s,
                                       int64_t m)
{
    for (int64_t j = 0; j < m; j++)
        for (int k = 0; k < 2; k++) {
            s[(2 * k) * m + j] = x ? gr[k] * x[j] : 0.0f;
            s[(2 * k + 1) * m + j] = x ? gi[k] * x[j] : 0.0f;
        }
}

/* State *= q per section (complex), summing the periods before the pad. */
static inline void lumen_gf_state_scale(const lumen_gf_iir *c, float *s, int64_t m)
{
    for (int k = 0; k < 2; k++)
        for (int64_t j = 0; j < m; j++) {
            float re = s[(2 * k) * m + j], im = s[(2 * k + 1) * m + j];
            s[(2 * k) * m + j] = c->qr[k] * re - c->qi[k] * im;
            s[(2 * k + 1) * m + j] = c->qr[k] * im + c->qi[k] * re;
        }
}

/*
 * The row pass's transposes, interleaved with the recursion (gaussian_fast.c): the kernel calls
 * in(ctx, lo, hi) before it reads input samples [lo, hi) of its n and out(ctx, lo, hi) once
 * output samples [lo, hi) are final, so the loads and shuffles of the transposes run while
 * the recursion's FMAs wait on each other, instead of in passes of their own. The pad samples
 * the first pass reads before any in() call must be ready beforehand.
 */
typedef struct lumen_gf_feed {
    void (*in)(void *ctx, int64_t lo, int64_t hi);
    void (*out)(void *ctx, int64_t lo, int64_t hi);
    void *ctx;
} lumen_gf_feed;

/* Samples per feed call (a multiple of 8, so the 8 x 8 transposes need no scalar tail). */
#define LUMEN_GF_FEED 16

typedef struct lumen_gf_kernels {
    const char *isa; /* as lumen_run_info.isa names it */
    /*
     * x[i] + off for 0 <= i < n + 2*pad are the input rows (m floats each).
     * Output row j (0 <= j < n) goes to o[j] + off, or to y + j*ys when o is
     * NULL; y (n rows of stride ys) is scratch either way. o[j] may be the
     * input row x[pad + j]: the last pass reads each row before writing it.
     * state: LUMEN_GF_STATE * m floats. feed: NULL, or called as lumen_gf_feed says.
     */
    void (*iir)(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad, int64_t n,
                int64_t m, float *y, int64_t ys, float *const *o, float *state,
                const lumen_gf_feed *feed);
    /* y[j] = sum_t k[t] * (x[j + t] + off), 0 <= j < n; x has n + taps - 1 rows. */
    void (*fir)(const float *k, int taps, const float *const *x, int64_t off, int64_t n,
                int64_t m, float *y, int64_t ys);
    /* Transpose: out[i*r + j] = rows[j][i] for 0 <= j < r, 0 <= i < n. */
    void (*to_lanes)(const float *const *rows, int r, int64_t n, float *out);
    /* Transpose back: rows[j][i] = in[i*r + j]. */
    void (*from_lanes)(const float *in, int r, int64_t n, float *const *rows);
} lumen_gf_kernels;

extern const lumen_gf_kernels lumen_gf_kernels_generic;
extern const lumen_gf_kernels lumen_gf_kernels_avx2;
extern const lumen_gf_kernels lumen_gf_kernels_avx512;
/* The AVX2 set's 8 x 8 transposes, which the AVX-512 set shares. */
void lumen_gf_to_lanes_avx2(const float *const *rows, int r, int64_t n, float *out);
void lumen_gf_from_lanes_avx2(const float *in, int r, int64_t n, float *const *rows);

#endif
