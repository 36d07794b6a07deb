/*
 * AVX2 + FMA inner loops of the fast Gaussian (compiled with -mavx2 -mfma,
 * called only after the run-time CPU check). Each step of the recursion
 * updates all lanes of a row, 8 per vector; the lanes are independent, so
 * the vectors of one step overlap in the pipeline and hide the FMA latency
 * of the recursion. The last partial vector uses masked loads and stores.
 */
#include "gaussian_fast_kernels.h"

#include <immintrin.h>

/* Mask of the first m (0 < m < 8) lanes. */
static inline __m256i lane_mask(int64_t m)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), idx);
}

static inline __m256 load_n(const float *p, int64_t m)
{
    return m >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lane_mask(m));
}

static inline void store_n(float *p, __m256 v, int64_t m)
{
    if (m >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, lane_mask(m), v);
}

/*
 * Rows PREFETCH steps ahead are requested early: in the column pass each row
 * is a new page of T, beyond the reach of the hardware prefetchers, so
 * without this every step waits for memory.
 */
#define PREFETCH 8

static inline void prefetch_row(const float *p, int64_t m)
{
    for (int64_t j = 0; j < m; j += 16) _mm_prefetch((const char *)(p + j), _MM_HINT_T0);
}

/* The coefficients of one direction, broadcast once per call. */
typedef struct coefs {
    __m256 pr0, pi0, pr1, pi1; /* poles */
    __m256 ar0, ai0, ar1, ai1; /* input weights */
} coefs;

static coefs make_coefs(const lumen_gf_iir *c, bool causal)
{
    coefs k;
    k.pr0 = _mm256_set1_ps(c->pr[0]), k.pi0 = _mm256_set1_ps(c->pi[0]);
    k.pr1 = _mm256_set1_ps(c->pr[1]), k.pi1 = _mm256_set1_ps(c->pi[1]);
    k.ar0 = _mm256_set1_ps(causal ? c->ar[0] : c->br[0]);
    k.ai0 = _mm256_set1_ps(causal ? c->ai[0] : c->bi[0]);
    k.ar1 = _mm256_set1_ps(causal ? c->ar[1] : c->br[1]);
    k.ai1 = _mm256_set1_ps(causal ? c->ai[1] : c->bi[1]);
    return k;
}

/* re + i im = (pr + i pi)(re + i im) + (ar + i ai) x for one section, in registers. */
#define SECTION(pr, pi, ar, ai, xv, re, im)                                                        \
    do {                                                                                           \
        __m256 re_ = _mm256_fmadd_ps(pr, re, _mm256_fnmadd_ps(pi, im, _mm256_mul_ps(ar, xv)));     \
        __m256 im_ = _mm256_fmadd_ps(pr, im, _mm256_fmadd_ps(pi, re, _mm256_mul_ps(ai, xv)));      \
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
    for (int64_t j = 0; j < m; j += 8) {
        const int64_t r = m - j;
        float *s0 = s + j, *s1 = s + m + j, *s2 = s + 2 * m + j, *s3 = s + 3 * m + j;
        __m256 zr0 = load_n(s0, r), zi0 = load_n(s1, r), zr1 = load_n(s2, r), zi1 = load_n(s3, r);
        for (int t = 0; t < u; t++) {
            UPDATE(k, load_n(x[t] + j, r), zr0, zi0, zr1, zi1);
            if (!out) continue;
            __m256 v = _mm256_add_ps(zr0, zr1);
            store_n(out[t] + j, add ? _mm256_add_ps(v, load_n(add[t] + j, r)) : v, r);
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
    for (int t = 0; t < u; t++) out[t] = x[i + t * d] + off;
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
        for (int t = 0; t < STEPS && y; t++) os[t] = y + (i - t - pad) * ys;
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
static void iir_avx2(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad,
                     int64_t n, int64_t m, float *y, int64_t ys, float *const *o, float *s)
{
    const int64_t len = n + 2 * pad;
    const coefs kc = make_coefs(c, true), ka = make_coefs(c, false);
    lumen_gf_state_init(c->hr, c->hi, c->periodic ? NULL : x[len - 1] + off, s, m);
    anticausal(&ka, x, off, len - 2, pad + n - 1, pad, NULL, 0, s, m);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    for (int64_t j = 0; j < m; j++) y[(n - 1) * ys + j] = s[j] + s[2 * m + j];
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
static inline __attribute__((always_inline)) void
fir_chunk(const __m256 *kv, int taps, const float *const *xi, int64_t j, int64_t r, float *out,
          int nv)
{
    const int c = taps / 2;
    __m256 acc[4];
    const float *mid = xi[c] + j;
    for (int q = 0; q < nv; q++) acc[q] = _mm256_mul_ps(kv[c], load_n(mid + 8 * q, r - 8 * q));
    for (int t = 0; t < c; t++) {
        const float *lo = xi[t] + j, *hi = xi[taps - 1 - t] + j;
        for (int q = 0; q < nv; q++) {
            __m256 pair =
                _mm256_add_ps(load_n(lo + 8 * q, r - 8 * q), load_n(hi + 8 * q, r - 8 * q));
            acc[q] = _mm256_fmadd_ps(kv[t], pair, acc[q]);
        }
    }
    for (int q = 0; q < nv; q++) store_n(out + 8 * q, acc[q], r - 8 * q);
}

/* The taps are OpenCV's Gaussian: symmetric, odd length (fir_chunk relies on both). */
static void fir_avx2(const float *k, int taps, const float *const *x, int64_t off, int64_t n,
                     int64_t m, float *y, int64_t ys)
{
    __m256 kv[LUMEN_GF_FIR_MAX_TAPS];
    const float *xi[LUMEN_GF_FIR_MAX_TAPS];
    for (int t = 0; t < taps; t++) kv[t] = _mm256_set1_ps(k[t]);
    for (int64_t i = 0; i < n; i++) {
        for (int t = 0; t < taps; t++) xi[t] = x[i + t] + off;
        if (i + PREFETCH < n) prefetch_row(x[i + taps - 1 + PREFETCH] + off, m);
        float *out = y + i * ys;
        int64_t j = 0;
        for (; j + 32 <= m; j += 32) fir_chunk(kv, taps, xi, j, 32, out + j, 4);
        for (; j + 16 <= m; j += 16) fir_chunk(kv, taps, xi, j, 16, out + j, 2);
        for (; j < m; j += 8) fir_chunk(kv, taps, xi, j, m - j, out + j, 1);
    }
}

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

void lumen_gf_to_lanes_avx2(const float *const *rows, int r, int64_t n, float *out)
{
    int64_t i = 0;
    for (; r % 8 == 0 && i + 8 <= n; i += 8)
        for (int j0 = 0; j0 < r; j0 += 8) {
            __m256 v[8];
            for (int q = 0; q < 8; q++) v[q] = _mm256_loadu_ps(rows[j0 + q] + i);
            transpose8(v);
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(out + (i + q) * r + j0, v[q]);
        }
    for (; i < n; i++)
        for (int j = 0; j < r; j++) out[i * r + j] = rows[j][i];
}

void lumen_gf_from_lanes_avx2(const float *in, int r, int64_t n, float *const *rows)
{
    int64_t i = 0;
    for (; r % 8 == 0 && i + 8 <= n; i += 8)
        for (int j0 = 0; j0 < r; j0 += 8) {
            __m256 v[8];
            for (int q = 0; q < 8; q++) v[q] = _mm256_loadu_ps(in + (i + q) * r + j0);
            transpose8(v);
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(rows[j0 + q] + i, v[q]);
        }
    for (; i < n; i++)
        for (int j = 0; j < r; j++) rows[j][i] = in[i * r + j];
}

const lumen_gf_kernels lumen_gf_kernels_avx2 = {
    .iir = iir_avx2,
    .fir = fir_avx2,
    .to_lanes = lumen_gf_to_lanes_avx2,
    .from_lanes = lumen_gf_from_lanes_avx2,
};
