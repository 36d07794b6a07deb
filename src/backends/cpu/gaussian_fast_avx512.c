/*
 * AVX-512 inner loops of the fast Gaussian (compiled with -mavx512f/bw/dq/vl, called only
 * after cpu_isa.c's run-time check): gaussian_fast_avx2.c's loops with 16 lanes per vector.
 * Every lane runs the same operations in the same order as there, so both sets give the same
 * bits (test_gaussian_fast.c compares them); the transposes are the AVX2 set's.
 */
#include "gaussian_fast_kernels.h"

#include <immintrin.h>

/* Lanes [0, m) of a 16-float vector (all when m >= 16). */
static inline __mmask16 lane_mask(int64_t m)
{
    return m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1u);
}

static inline __m512 load_n(const float *p, int64_t m)
{
    return m >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(lane_mask(m), p);
}

static inline void store_n(float *p, __m512 v, int64_t m)
{
    if (m >= 16)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, lane_mask(m), v);
}

/*
 * Rows PREFETCH steps ahead are requested early: in the column pass each row
 * is a new page of T, beyond the reach of the hardware prefetchers, so
 * without this every step waits for memory.
 */
#define PREFETCH 8

static inline void prefetch_row(const float *p, int64_t m)
{
    for (int64_t j = 0; j < m; j += 16)
        _mm_prefetch((const char *)(p + j), _MM_HINT_T0);
}

/* The coefficients of one direction, broadcast once per call. */
typedef struct coefs {
    __m512 pr0, pi0, pr1, pi1; /* poles */
    __m512 ar0, ai0, ar1, ai1; /* input weights */
} coefs;

static coefs make_coefs(const lumen_gf_iir *c, bool causal)
{
    coefs k;
    k.pr0 = _mm512_set1_ps(c->pr[0]), k.pi0 = _mm512_set1_ps(c->pi[0]);
    k.pr1 = _mm512_set1_ps(c->pr[1]), k.pi1 = _mm512_set1_ps(c->pi[1]);
    k.ar0 = _mm512_set1_ps(causal ? c->ar[0] : c->br[0]);
    k.ai0 = _mm512_set1_ps(causal ? c->ai[0] : c->bi[0]);
    k.ar1 = _mm512_set1_ps(causal ? c->ar[1] : c->br[1]);
    k.ai1 = _mm512_set1_ps(causal ? c->ai[1] : c->bi[1]);
    return k;
}

/* re + i im = (pr + i pi)(re + i im) + (ar + i ai) x for one section, in registers. */
#define SECTION(pr, pi, ar, ai, xv, re, im)                                                        \
    do {                                                                                           \
        __m512 re_ = _mm512_fmadd_ps(pr, re, _mm512_fnmadd_ps(pi, im, _mm512_mul_ps(ar, xv)));     \
        __m512 im_ = _mm512_fmadd_ps(pr, im, _mm512_fmadd_ps(pi, re, _mm512_mul_ps(ai, xv)));      \
        re = re_, im = im_;                                                                        \
    } while (0)

/* s = p s + v x for both sections (complex). */
#define UPDATE(k, xv, zr0, zi0, zr1, zi1)                                                          \
    do {                                                                                           \
        SECTION((k)->pr0, (k)->pi0, (k)->ar0, (k)->ai0, xv, zr0, zi0);                             \
        SECTION((k)->pr1, (k)->pi1, (k)->ar1, (k)->ai1, xv, zr1, zi1);                             \
    } while (0)

/*
 * u steps (u = 1 or STEPS) over all lanes: for step t the input x[t] + off
 * and, unless out is NULL, the output out[t] = Re(s0 + s1) (+ add[t] unless
 * add is NULL). The state stays in registers across the u steps: loading and
 * storing it once per step made the loop bound by memory operations.
 * Inlined with constant u and NULLs, so each use compiles to its own loop.
 */
static inline void steps(const coefs *k, const float *const *x, float *s, int64_t m, int u,
                         const float *const *add, float *const *out)
{
    for (int64_t j = 0; j < m; j += 16) {
        const int64_t r = m - j;
        float *s0 = s + j, *s1 = s + m + j, *s2 = s + 2 * m + j, *s3 = s + 3 * m + j;
        __m512 zr0 = load_n(s0, r), zi0 = load_n(s1, r), zr1 = load_n(s2, r), zi1 = load_n(s3, r);
        for (int t = 0; t < u; t++) {
            UPDATE(k, load_n(x[t] + j, r), zr0, zi0, zr1, zi1);
            if (!out) continue;
            __m512 v = _mm512_add_ps(zr0, zr1);
            store_n(out[t] + j, add ? _mm512_add_ps(v, load_n(add[t] + j, r)) : v, r);
        }
        store_n(s0, zr0, r), store_n(s1, zi0, r), store_n(s2, zr1, r), store_n(s3, zi1, r);
    }
}

/* Steps per block of the recursion (see steps()). */
#define STEPS 4

/* Rows i, i+d, ..., i+(u-1)d of x, offset by off. */
static inline void gather(const float *const *x, int64_t off, int64_t i, int64_t d, int u,
                          const float **out)
{
    for (int t = 0; t < u; t++)
        out[t] = x[i + t * d] + off;
}

/* Anticausal over positions hi down to lo (inclusive), input x[i+1]; outputs to y rows when y. */
static void anticausal(const coefs *k, const float *const *x, int64_t off, int64_t hi, int64_t lo,
                       int64_t pad, float *y, int64_t ys, float *s, int64_t m)
{
    const float *xs[STEPS];
    float *os[STEPS];
    int64_t i = hi;
    for (; i - STEPS + 1 >= lo; i -= STEPS) {
        for (int t = 0; t < STEPS && i - t - PREFETCH >= 0; t++)
            prefetch_row(x[i - t - PREFETCH] + off, m);
        gather(x, off, i + 1, -1, STEPS, xs);
        for (int t = 0; t < STEPS && y; t++)
            os[t] = y + (i - t - pad) * ys;
        steps(k, xs, s, m, STEPS, NULL, y ? os : NULL);
    }
    for (; i >= lo; i--) {
        gather(x, off, i + 1, -1, 1, xs);
        os[0] = y ? y + (i - pad) * ys : NULL;
        steps(k, xs, s, m, 1, NULL, y ? os : NULL);
    }
}

/* Causal over positions lo .. hi-1; when y, output row i-pad = Re(s) + y row, to o or y. */
static void causal(const coefs *k, const float *const *x, int64_t off, int64_t lo, int64_t hi,
                   int64_t pad, float *y, int64_t ys, float *const *o, float *s, int64_t m)
{
    const int64_t xlen = hi; /* rows past hi are not read by this pass */
    const float *xs[STEPS], *as[STEPS];
    float *os[STEPS];
    int64_t i = lo;
    for (; i + STEPS <= hi; i += STEPS) {
        for (int t = 0; t < STEPS && i + t + PREFETCH < xlen; t++)
            prefetch_row(x[i + t + PREFETCH] + off, m);
        gather(x, off, i, 1, STEPS, xs);
        for (int t = 0; t < STEPS && y; t++) {
            as[t] = y + (i + t - pad) * ys;
            os[t] = o ? o[i + t - pad] + off : y + (i + t - pad) * ys;
        }
        steps(k, xs, s, m, STEPS, y ? as : NULL, y ? os : NULL);
    }
    for (; i < hi; i++) {
        gather(x, off, i, 1, 1, xs);
        if (y) as[0] = y + (i - pad) * ys, os[0] = o ? o[i - pad] + off : y + (i - pad) * ys;
        steps(k, xs, s, m, 1, y ? as : NULL, y ? os : NULL);
    }
}

/* As iir_generic (gaussian_fast.c): anticausal into y, then causal + y into the output. */
static void iir_avx512(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad,
                       int64_t n, int64_t m, float *y, int64_t ys, float *const *o, float *s)
{
    const int64_t len = n + 2 * pad;
    const coefs kc = make_coefs(c, true), ka = make_coefs(c, false);
    lumen_gf_state_init(c->hr, c->hi, c->periodic ? NULL : x[len - 1] + off, s, m);
    anticausal(&ka, x, off, len - 2, pad + n - 1, pad, NULL, 0, s, m);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    for (int64_t j = 0; j < m; j++)
        y[(n - 1) * ys + j] = s[j] + s[2 * m + j];
    anticausal(&ka, x, off, pad + n - 2, pad, pad, y, ys, s, m);

    lumen_gf_state_init(c->gr, c->gi, c->periodic ? NULL : x[0] + off, s, m);
    causal(&kc, x, off, 0, pad, pad, NULL, 0, NULL, s, m);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    causal(&kc, x, off, pad, pad + n, pad, y, ys, o, s, m);
}

/*
 * nv vectors (nv constant after inlining, so the accumulators stay in
 * registers) of one output row from lane j, r of them valid: the kernel is
 * symmetric, so mirrored rows are added first (half the FMAs), and the taps
 * are the outer loop so each row pointer is loaded once.
 */
static inline __attribute__((always_inline)) void fir_chunk(const __m512 *kv, int taps,
                                                            const float *const *xi, int64_t j,
                                                            int64_t r, float *out, int nv)
{
    const int c = taps / 2;
    __m512 acc[4];
    const float *mid = xi[c] + j;
    for (int q = 0; q < nv; q++)
        acc[q] = _mm512_mul_ps(kv[c], load_n(mid + 16 * q, r - 16 * q));
    for (int t = 0; t < c; t++) {
        const float *lo = xi[t] + j, *hi = xi[taps - 1 - t] + j;
        for (int q = 0; q < nv; q++) {
            __m512 pair =
                _mm512_add_ps(load_n(lo + 16 * q, r - 16 * q), load_n(hi + 16 * q, r - 16 * q));
            acc[q] = _mm512_fmadd_ps(kv[t], pair, acc[q]);
        }
    }
    for (int q = 0; q < nv; q++)
        store_n(out + 16 * q, acc[q], r - 16 * q);
}

/* The taps are OpenCV's Gaussian: symmetric, odd length (fir_chunk relies on both). */
static void fir_avx512(const float *k, int taps, const float *const *x, int64_t off, int64_t n,
                       int64_t m, float *y, int64_t ys)
{
    __m512 kv[LUMEN_GF_FIR_MAX_TAPS];
    const float *xi[LUMEN_GF_FIR_MAX_TAPS];
    for (int t = 0; t < taps; t++)
        kv[t] = _mm512_set1_ps(k[t]);
    for (int64_t i = 0; i < n; i++) {
        for (int t = 0; t < taps; t++)
            xi[t] = x[i + t] + off;
        if (i + PREFETCH < n) prefetch_row(x[i + taps - 1 + PREFETCH] + off, m);
        float *out = y + i * ys;
        int64_t j = 0;
        for (; j + 64 <= m; j += 64)
            fir_chunk(kv, taps, xi, j, 64, out + j, 4);
        for (; j + 32 <= m; j += 32)
            fir_chunk(kv, taps, xi, j, 32, out + j, 2);
        for (; j < m; j += 16)
            fir_chunk(kv, taps, xi, j, m - j, out + j, 1);
    }
}

const lumen_gf_kernels lumen_gf_kernels_avx512 = {
    .iir = iir_avx512,
    .fir = fir_avx512,
    .to_lanes = lumen_gf_to_lanes_avx2,
    .from_lanes = lumen_gf_from_lanes_avx2,
};
