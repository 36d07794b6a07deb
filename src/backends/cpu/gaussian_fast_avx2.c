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

/*
 * One step over all lanes: s = p s + v x per section (complex, v the input
 * weight of the direction); out = Re(s0 + s1) (+ add) unless out is NULL.
 * Inlined with constant NULLs, so each use compiles to its own loop.
 */
static inline void step(const coefs *k, const float *x, float *s, int64_t m, const float *add,
                        float *out)
{
    for (int64_t j = 0; j < m; j += 8) {
        const int64_t r = m - j;
        float *s0 = s + j, *s1 = s + m + j, *s2 = s + 2 * m + j, *s3 = s + 3 * m + j;
        __m256 xv = load_n(x + j, r);
        __m256 zr0 = load_n(s0, r), zi0 = load_n(s1, r), zr1 = load_n(s2, r), zi1 = load_n(s3, r);
        __m256 r0 = _mm256_fmadd_ps(k->pr0, zr0, _mm256_fnmadd_ps(k->pi0, zi0, _mm256_mul_ps(k->ar0, xv)));
        __m256 i0 = _mm256_fmadd_ps(k->pr0, zi0, _mm256_fmadd_ps(k->pi0, zr0, _mm256_mul_ps(k->ai0, xv)));
        __m256 r1 = _mm256_fmadd_ps(k->pr1, zr1, _mm256_fnmadd_ps(k->pi1, zi1, _mm256_mul_ps(k->ar1, xv)));
        __m256 i1 = _mm256_fmadd_ps(k->pr1, zi1, _mm256_fmadd_ps(k->pi1, zr1, _mm256_mul_ps(k->ai1, xv)));
        store_n(s0, r0, r), store_n(s1, i0, r), store_n(s2, r1, r), store_n(s3, i1, r);
        if (!out) continue;
        __m256 v = _mm256_add_ps(r0, r1);
        store_n(out + j, add ? _mm256_add_ps(v, load_n(add + j, r)) : v, r);
    }
}

/* State = g x (per section, complex), or zero when x is NULL. */
static void state_init(const float *gr, const float *gi, const float *x, float *s, int64_t m)
{
    for (int64_t j = 0; j < m; j++)
        for (int k = 0; k < 2; k++) {
            s[(2 * k) * m + j] = x ? gr[k] * x[j] : 0.0f;
            s[(2 * k + 1) * m + j] = x ? gi[k] * x[j] : 0.0f;
        }
}

static void state_scale(const lumen_gf_iir *c, float *s, int64_t m)
{
    for (int k = 0; k < 2; k++)
        for (int64_t j = 0; j < m; j++) {
            float re = s[(2 * k) * m + j], im = s[(2 * k + 1) * m + j];
            s[(2 * k) * m + j] = c->qr[k] * re - c->qi[k] * im;
            s[(2 * k + 1) * m + j] = c->qr[k] * im + c->qi[k] * re;
        }
}

/* As iir_generic (gaussian_fast.c): anticausal into y, then causal + y into the output. */
static void iir_avx2(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad,
                     int64_t n, int64_t m, float *y, int64_t ys, float *const *o, float *s)
{
    const int64_t len = n + 2 * pad;
    const coefs kc = make_coefs(c, true), ka = make_coefs(c, false);
    state_init(c->hr, c->hi, c->periodic ? NULL : x[len - 1] + off, s, m);
    for (int64_t i = len - 2; i >= pad + n - 1; i--) step(&ka, x[i + 1] + off, s, m, NULL, NULL);
    if (c->periodic) state_scale(c, s, m);
    for (int64_t j = 0; j < m; j++) y[(n - 1) * ys + j] = s[j] + s[2 * m + j];
    for (int64_t i = pad + n - 2; i >= pad; i--)
        step(&ka, x[i + 1] + off, s, m, NULL, y + (i - pad) * ys);

    state_init(c->gr, c->gi, c->periodic ? NULL : x[0] + off, s, m);
    for (int64_t i = 0; i < pad; i++) step(&kc, x[i] + off, s, m, NULL, NULL);
    if (c->periodic) state_scale(c, s, m);
    for (int64_t i = pad; i < pad + n; i++) {
        float *yi = y + (i - pad) * ys;
        step(&kc, x[i] + off, s, m, yi, o ? o[i - pad] + off : yi);
    }
}

static void fir_avx2(const float *k, int taps, const float *const *x, int64_t off, int64_t n,
                     int64_t m, float *y, int64_t ys)
{
    __m256 kv[LUMEN_GF_FIR_MAX_TAPS];
    for (int t = 0; t < taps; t++) kv[t] = _mm256_set1_ps(k[t]);
    for (int64_t i = 0; i < n; i++) {
        const float *const *xi = x + i;
        for (int64_t j = 0; j < m; j += 8) {
            const int64_t r = m - j;
            __m256 a0 = _mm256_mul_ps(kv[0], load_n(xi[0] + off + j, r));
            __m256 a1 = _mm256_setzero_ps();
            int t = 1;
            for (; t + 1 < taps; t += 2) { /* two accumulators halve the add chain */
                a0 = _mm256_fmadd_ps(kv[t], load_n(xi[t] + off + j, r), a0);
                a1 = _mm256_fmadd_ps(kv[t + 1], load_n(xi[t + 1] + off + j, r), a1);
            }
            if (t < taps) a0 = _mm256_fmadd_ps(kv[t], load_n(xi[t] + off + j, r), a0);
            store_n(y + i * ys + j, _mm256_add_ps(a0, a1), r);
        }
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

static void to_lanes_avx2(const float *const *rows, int r, int64_t n, float *out)
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

static void from_lanes_avx2(const float *in, int r, int64_t n, float *const *rows)
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
    .to_lanes = to_lanes_avx2,
    .from_lanes = from_lanes_avx2,
};
