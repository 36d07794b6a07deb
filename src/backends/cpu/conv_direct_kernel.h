/*
 * The tile kernel of the direct conv2d path (conv_direct.c), built once per ISA: the including
 * file defines DC_FN (the function's name), DC_V, DC_KB (the tile: vectors x channels) and the
 * vector operations below on DC_VEC. Every output lane is summed over the taps in order, one FMA
 * per tap, from 0 in chunks of LUMEN_GEMM_SUB taps that are folded into y (the first with the
 * bias): the same operations on each ISA, whatever its vector width and tile, hence the same
 * bits under AVX2 and AVX-512.
 *
 *   DC_ZERO()       a vector of zeros
 *   DC_LOADU(p)     an unaligned load of one vector
 *   DC_SET1(v)      a float broadcast
 *   DC_FMA(a, b, c) a * b + c, fused
 *   DC_ADD(a, b)    a + b
 *   DC_STOREU(p, v) an unaligned store
 *   DC_LOADN(p, n), DC_STOREN(p, v, n)  the same for lanes [0, n) only (others: 0, untouched)
 */
#include "conv.h"

/* Taps [t0, t1) of the tile into registers, then folded into out (first: bias + sum). */
static inline __attribute__((always_inline)) void dc_chunk(const lumen_dc_tile *t, const int nv,
                                                           const bool part, int64_t t0, int64_t t1)
{
    DC_VEC acc[DC_V][DC_KB];
#pragma GCC unroll 8
    for (int v = 0; v < DC_V; v++)
#pragma GCC unroll 16
        for (int k = 0; k < DC_KB; k++)
            acc[v][k] = DC_ZERO();
    const float *in[DC_V];
#pragma GCC unroll 8
    for (int v = 0; v < DC_V; v++)
        in[v] = t->in[v < nv ? v : 0];
    const float *w = t->w + t0 * DC_KB;
    const int32_t *off = t->off;
    for (int64_t i = t0; i < t1; i++, w += DC_KB) {
        const int64_t o = off[i];
        DC_VEC xv[DC_V];
#pragma GCC unroll 8
        for (int v = 0; v < DC_V; v++)
            if (v < nv) xv[v] = DC_LOADU(in[v] + o);
#pragma GCC unroll 16
        for (int k = 0; k < DC_KB; k++) {
            const DC_VEC wv = DC_SET1(w[k]);
#pragma GCC unroll 8
            for (int v = 0; v < DC_V; v++)
                if (v < nv) acc[v][k] = DC_FMA(wv, xv[v], acc[v][k]);
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < DC_V; v++) {
        if (v >= nv) continue;
        const int n = t->lanes[v];
        const bool whole = !part || n == (int)(sizeof(DC_VEC) / sizeof(float));
#pragma GCC unroll 16
        for (int k = 0; k < DC_KB; k++) {
            if (k >= t->nk) continue;
            float *p = t->out[v] + k * t->ldc;
            if (whole)
                DC_STOREU(p, t0 == 0 ? DC_ADD(DC_SET1(t->bias[k]), acc[v][k])
                                     : DC_ADD(DC_LOADU(p), acc[v][k]));
            else
                DC_STOREN(p,
                          t0 == 0 ? DC_ADD(DC_SET1(t->bias[k]), acc[v][k])
                                  : DC_ADD(DC_LOADN(p, n), acc[v][k]),
                          n);
        }
    }
}

static inline __attribute__((always_inline)) void dc_tile(const lumen_dc_tile *t, const int nv,
                                                          const bool part)
{
    for (int64_t t0 = 0; t0 < t->taps; t0 += LUMEN_GEMM_SUB) {
        const int64_t t1 = t0 + LUMEN_GEMM_SUB < t->taps ? t0 + LUMEN_GEMM_SUB : t->taps;
        dc_chunk(t, nv, part, t0, t1);
    }
}

/* Tiles with a short vector (a row's last when Q is no multiple of the vector): apart, so
 * that the folds of whole tiles test no lane counts. */
static __attribute__((noinline)) void dc_tile_part(const lumen_dc_tile *t)
{
    switch (t->nv) {
#if DC_V >= 4
    case 4: dc_tile(t, 4, true); break;
#endif
#if DC_V >= 3
    case 3: dc_tile(t, 3, true); break;
#endif
#if DC_V >= 2
    case 2: dc_tile(t, 2, true); break;
#endif
    default: dc_tile(t, 1, true); break;
    }
}

/* One copy of the loop per vector count, so that each keeps its accumulators in registers. */
void DC_FN(const lumen_dc_tile *t)
{
    for (int v = 0; v < t->nv; v++)
        if (t->lanes[v] != (int)(sizeof(DC_VEC) / sizeof(float))) {
            dc_tile_part(t);
            return;
        }
    switch (t->nv) {
#if DC_V >= 4
    case 4: dc_tile(t, 4, false); break;
#endif
#if DC_V >= 3
    case 3: dc_tile(t, 3, false); break;
#endif
#if DC_V >= 2
    case 2: dc_tile(t, 2, false); break;
#endif
    default: dc_tile(t, 1, false); break;
    }
}
