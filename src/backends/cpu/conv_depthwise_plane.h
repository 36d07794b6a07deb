/*
 * The body of one depthwise output plane, compiled once per ISA: conv_depthwise_generic.c,
 * _avx2.c and _avx512.c define LUMEN_DW_PLANE_FN and dw_block16x4 (four blocks of 16 outputs
 * of a stride-1 row, each summed over every tap in registers, in tap order: out[q + j] =
 * sum_r,s w[r*S + s] * rows[r][q + j + s*dw], j < 16, q = q[0..3]; four independent chains
 * measured 8-16% faster than one block at a time on dw_128x56x56_k3, AVX-512, 2-core Zen 4),
 * then include this file. AVX2 and AVX-512 also define LUMEN_DW_VL and dw_colblock's vector
 * primitives (dw_vec, dw_fma, dw_inside, ...): stride 1
 * over dense x and y rows then takes the whole-vector path (dw_plane_vec below: row groups,
 * masked edges, bias in registers). Otherwise stride 1 over dense rows (x's stride_w 1) reads
 * x itself: the outputs whose taps all lie inside the row in blocks, the few at the padded
 * edges one by one (25-30% faster than copying the plane first, with the blocks above, on
 * dw_128x56x56_k3). Otherwise the input plane is first copied, zero-padded in width, into the
 * thread's scratch: the taps then read it with no border branches, and each input row is copied
 * once rather than once per output row that uses it. Rows outside x are skipped.
 * Accumulation is f32 in tap order (r, s), then the bias is added.
 */
#include "conv.h"

#include <string.h>
#ifdef LUMEN_DW_VL
#include <immintrin.h>
#endif

/* acc[0 .. Q) += w * src[q * sw]. */
static inline void dw_axpy(float *restrict acc, const float *restrict src, float w, int64_t Q,
                           int64_t sw)
{
    if (sw == 1) {
        for (int64_t q = 0; q < Q; q++)
            acc[q] += w * src[q];
    } else {
        for (int64_t q = 0; q < Q; q++)
            acc[q] += w * src[q * sw];
    }
}

/* x's plane into pad (H rows of `padded` floats, pad_w zeros on the left, zeros on the right). */
static inline void dw_pad_plane(const lumen_image *x, const float *xp, int64_t pad_w,
                                int64_t padded, float *restrict pad)
{
    for (int64_t i = 0; i < x->h; i++) {
        float *dst = pad + i * padded;
        const float *row = xp + i * x->stride_h;
        memset(dst, 0, (size_t)pad_w * sizeof(float));
        if (x->stride_w == 1) {
            memcpy(dst + pad_w, row, (size_t)x->w * sizeof(float));
        } else {
            for (int64_t j = 0; j < x->w; j++)
                dst[pad_w + j] = row[j * x->stride_w];
        }
        memset(dst + pad_w + x->w, 0, (size_t)(padded - pad_w - x->w) * sizeof(float));
    }
}

/*
 * A stride-1 output row in blocks of 16 that keep their sums in registers over all taps; the
 * last block overlaps the one before when Q is not a multiple of 16 (recomputing a few outputs
 * to the same values beats a scalar tail). Returns the outputs done: 0 when Q < 16.
 */
static inline int64_t dw_row_s1(float *restrict out, const float *const *rows, const float *w,
                                int64_t taps_r, int64_t S, int64_t dw, int64_t Q)
{
    if (Q < 16) return 0;
    /* four blocks per call (dw_block16x4): independent chains; a last group of fewer repeats
     * its last block (the same values stored twice) */
    const int64_t blocks = (Q + 15) / 16;
    for (int64_t b = 0; b < blocks; b += 4) {
        int64_t q[4];
        for (int i = 0; i < 4; i++) {
            const int64_t bi = b + i < blocks ? b + i : blocks - 1;
            q[i] = bi * 16 + 16 <= Q ? bi * 16 : Q - 16;
        }
        dw_block16x4(out, rows, w, taps_r, S, dw, q);
    }
    return Q;
}

/* Output q of a stride-1 row read straight from x's rows: the taps inside the row, in tap order
 * (the zero-padded taps add nothing). */
static inline float dw_edge(const float *const *rows, const float *w, int64_t taps_r, int64_t S,
                            int64_t dw, int64_t col0, int64_t W)
{
    float a = 0.0f;
    for (int64_t r = 0; r < taps_r; r++)
        for (int64_t s = 0; s < S; s++) {
            const int64_t col = col0 + s * dw;
            if (col >= 0 && col < W) a += w[r * S + s] * rows[r][col];
        }
    return a;
}

/* A stride-1 row from x's own (dense) rows, no padded copy: the outputs whose taps all lie
 * inside x, [qa, qb], in blocks of 16 from x directly; the few at the padded edges one by one. */
static inline void dw_row_direct(float *restrict out, const float *const *rows, const float *w,
                                 int64_t taps_r, int64_t S, int64_t dw, int64_t Q, int64_t pad_w,
                                 int64_t W)
{
    const int64_t qa = pad_w, qb = W - 1 - (S - 1) * dw + pad_w; /* interior, inclusive */
    int64_t lo = Q, hi = Q; /* [lo, hi): outputs done by the blocks */
    if (qb - qa + 1 >= 16 && qb < Q) {
        /* column q - pad_w of x is column q - qa of rows: dw_row_s1 over the interior */
        lo = qa, hi = qb + 1;
        dw_row_s1(out + qa, rows, w, taps_r, S, dw, hi - lo);
    }
    for (int64_t q = 0; q < Q; q++) {
        if (q == lo) q = hi;
        if (q >= Q) break;
        out[q] = dw_edge(rows, w, taps_r, S, dw, q - pad_w, W);
    }
}

#ifdef LUMEN_DW_VL
#define LUMEN_DW_G 4
/*
 * One column block of G output rows (the whole-vector path below), on the ISA file's primitives
 * (dw_vec, dw_mask, dw_fma, ...): lanes q0 .. q0+VL-1 of outs[0..G), each summed over its taps
 * in tap order (r, s) in one register, from the input rows in[0..nin) (NULL: outside x), input
 * row i being tap r = i - o of output row o. An edge block (a column outside x, or lanes past
 * Q) loads only the columns inside x and keeps the old sum in the other lanes (as if the tap
 * were skipped), and stores only the lanes below Q. The bias is added in registers before the
 * store. One loop for both ISAs keeps the tap order, on which their same bits rest, in one place.
 */
static inline __attribute__((always_inline)) void
dw_colblock(float *const *outs, int G, const float *const *in, int64_t nin, const float *w,
            int64_t R, int64_t S, int64_t dw, int64_t q0, int64_t c0, int64_t W, float bias,
            bool edge, int64_t nst)
{
    dw_vec a[LUMEN_DW_G];
#pragma GCC unroll 4
    for (int o = 0; o < LUMEN_DW_G; o++)
        a[o] = dw_zero();
    dw_mask km[LUMEN_DW_MAX_S]; /* the columns inside x per tap column s, for every input row */
    if (edge)
#pragma GCC unroll 8
        for (int64_t s = 0; s < S; s++)
            km[s] = dw_inside(c0 + s * dw, W);
#pragma GCC unroll 8
    for (int64_t i = 0; i < nin; i++) {
        if (!in[i]) continue;
#pragma GCC unroll 8
        for (int64_t s = 0; s < S; s++) {
            const int64_t c = c0 + s * dw;
            const dw_mask k = edge ? km[s] : dw_mask_all();
            const dw_vec v = edge ? dw_maskz_loadu(in[i] + c, k) : dw_loadu(in[i] + c);
#pragma GCC unroll 4
            for (int o = 0; o < LUMEN_DW_G; o++) {
                const int64_t r = i - o;
                if (o >= G || r < 0 || r >= R) continue;
                const dw_vec wv = dw_set1(w[r * S + s]);
                a[o] = edge ? dw_mask_fma(wv, v, a[o], k) : dw_fma(wv, v, a[o]);
            }
        }
    }
    const dw_vec b = dw_set1(bias);
    const dw_mask ks = dw_below(nst);
#pragma GCC unroll 4
    for (int o = 0; o < LUMEN_DW_G; o++) {
        if (o >= G) continue;
        if (edge)
            dw_mask_storeu(outs[o] + q0, ks, dw_add(a[o], b));
        else
            dw_storeu(outs[o] + q0, dw_add(a[o], b));
    }
}

/*
 * The whole-vector path (AVX2, AVX-512: the ISA file defines dw_colblock, LUMEN_DW_VL lanes),
 * stride 1 over dense x and y rows. Each output row is whole vectors, the edge ones masked, with
 * the bias added before the one store: no scalar edge outputs, no second pass over the row.
 * With stride_h = dilation_h = 1, LUMEN_DW_G consecutive output rows are done together, so each
 * input row is loaded once for the (up to R) outputs it feeds rather than once per output row.
 * Output rows [oy0, oy0 + G).
 */
static inline __attribute__((always_inline)) void dw_group(const lumen_dw_plane *pl, int64_t oy0,
                                                           int G, int64_t R, int64_t S)
{
    const lumen_image *x = pl->job->x, *y = pl->job->y;
    const lumen_conv2d_params *p = &pl->job->p;
    const float *in[LUMEN_DW_MAX_R + LUMEN_DW_G];
    float *outs[LUMEN_DW_G];
    /* G = 1: the R taps' rows at any stride and dilation; G > 1: rows oy0 - pad_h + i */
    const int64_t nin = G == 1 ? R : G + R - 1;
    for (int64_t i = 0; i < nin; i++) {
        const int64_t iy =
            G == 1 ? oy0 * p->stride_h - p->pad_h + i * p->dilation_h : oy0 - p->pad_h + i;
        in[i] = iy >= 0 && iy < x->h ? pl->xp + iy * x->stride_h : NULL;
    }
    for (int o = 0; o < G; o++)
        outs[o] = pl->yp + (oy0 + o) * y->stride_h;
    if (G > 1) {
        /* Prefetch the G input rows the next group reads first (past the plane: the next
         * channel's, the plane this thread most likely does next), and for writing the output
         * rows two groups ahead (their lines are read for ownership before the stores). Under
         * a busy memory system these pay most: 1.7x the old kernel on dw_128x56x56_k3, 1
         * thread, against 1.4x with the output rows' alone (Zen 5, conv_ab.py --clock thread,
         * docs/benchmarks.md). Hints only: addresses past x or y are never dereferenced. */
        for (int64_t i = nin; i < nin + G; i++) {
            const int64_t iy = oy0 - p->pad_h + i;
            const float *row = iy < x->h ? pl->xp + iy * x->stride_h
                                         : pl->xp + x->stride_c + (iy - x->h) * x->stride_h;
            for (int64_t c = 0; c < x->w; c += 16)
                _mm_prefetch((const char *)(row + c), _MM_HINT_T0);
        }
        for (int64_t o = 2 * G; o < 3 * G; o++) {
            const float *row = pl->yp + (oy0 + o) * y->stride_h;
            for (int64_t c = 0; c < y->w; c += 16)
                _mm_prefetch((const char *)(row + c), _MM_HINT_ET0);
        }
    }
    const int64_t Q = y->w, W = x->w, dw = p->dilation_w, reach = (S - 1) * dw;
    for (int64_t q0 = 0; q0 < Q; q0 += LUMEN_DW_VL) {
        const int64_t c0 = q0 - p->pad_w;
        if (c0 < 0 || c0 + LUMEN_DW_VL - 1 + reach >= W || q0 + LUMEN_DW_VL > Q)
            dw_colblock(outs, G, in, nin, pl->w, R, S, dw, q0, c0, W, pl->bias, true, Q - q0);
        else
            dw_colblock(outs, G, in, nin, pl->w, R, S, dw, q0, c0, W, pl->bias, false, LUMEN_DW_VL);
    }
}

/* The plane in groups of LUMEN_DW_G rows where the rows may share inputs, the rest one by one. */
static inline __attribute__((always_inline)) void dw_plane_vec(const lumen_dw_plane *pl, int64_t R,
                                                               int64_t S)
{
    const lumen_conv2d_params *p = &pl->job->p;
    const int64_t P = pl->job->y->h;
    int64_t oy = 0;
    if (p->stride_h == 1 && p->dilation_h == 1)
        for (; oy + LUMEN_DW_G <= P; oy += LUMEN_DW_G)
            dw_group(pl, oy, LUMEN_DW_G, R, S);
    for (; oy < P; oy++)
        dw_group(pl, oy, 1, R, S);
}
#endif

void LUMEN_DW_PLANE_FN(const lumen_dw_plane *pl, float *restrict pad, float *restrict acc)
{
    const lumen_conv_job *job = pl->job;
    const lumen_image *x = job->x, *y = job->y;
    const lumen_conv2d_params *p = &job->p;
    const int64_t R = pl->R, S = pl->S, Q = y->w, padded = pl->padded;
    /* stride 1 over dense rows: the taps read x itself, no copy of the plane */
    const bool direct = p->stride_w == 1 && x->stride_w == 1;
#ifdef LUMEN_DW_VL
    if (direct && y->stride_w == 1) {
        /* 3x3 (the common case) with its loops unrolled and its taps in registers */
        if (R == 3 && S == 3)
            dw_plane_vec(pl, 3, 3);
        else
            dw_plane_vec(pl, R, S);
        return;
    }
#endif
    if (!direct) dw_pad_plane(x, pl->xp, p->pad_w, padded, pad);
    for (int64_t oy = 0; oy < y->h; oy++) {
        float *yr = pl->yp + oy * y->stride_h;
        float *out = y->stride_w == 1 ? yr : acc; /* accumulate in y when its row is dense */
        /* The rows in x and their taps; rows outside x contribute nothing. */
        const float *rows[LUMEN_DW_MAX_R];
        float wr[LUMEN_DW_MAX_R * LUMEN_DW_MAX_S];
        int64_t nr = 0;
        for (int64_t r = 0; r < R; r++) {
            const int64_t iy = oy * p->stride_h - p->pad_h + r * p->dilation_h;
            if (iy < 0 || iy >= x->h) continue;
            rows[nr] = direct ? pl->xp + iy * x->stride_h : pad + iy * padded;
            memcpy(wr + nr * S, pl->w + r * S, (size_t)S * sizeof(float));
            nr++;
        }
        if (direct) {
            dw_row_direct(out, rows, wr, nr, S, p->dilation_w, Q, p->pad_w, x->w);
        } else {
            const int64_t done =
                p->stride_w == 1 ? dw_row_s1(out, rows, wr, nr, S, p->dilation_w, Q) : 0;
            memset(out + done, 0, (size_t)(Q - done) * sizeof(float));
            for (int64_t r = 0; r < nr; r++)
                for (int64_t s = 0; s < S; s++)
                    dw_axpy(out + done, rows[r] + done * p->stride_w + s * p->dilation_w,
                            wr[r * S + s], Q - done, p->stride_w);
        }
        if (out == yr) {
            for (int64_t q = 0; q < Q; q++)
                yr[q] += pl->bias;
        } else {
            for (int64_t q = 0; q < Q; q++)
                yr[q * y->stride_w] = pl->bias + acc[q];
        }
    }
}
