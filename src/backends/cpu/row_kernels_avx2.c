/*
 * AVX2 + FMA row kernels (this file alone is compiled with -mavx2 -mfma -mf16c and
 * only called after the run-time CPU check). Four 8-float accumulators per
 * step keep both FMA ports busy and hide their latency.
 */
#include "row_kernels.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

/* Row-pass taps handled with a pointer table on the stack; longer kernels use the generic loop. */
#define LUMEN_HTAPS_MAX 4096

/* Writes the first m (< 8) floats of v. */
static inline void store_partial(float *out, __m256 v, int64_t m)
{
    float tmp[8];
    _mm256_storeu_ps(tmp, v);
    memcpy(out, tmp, (size_t)m * sizeof(float));
}

/* lumen_f32_to_bf16 on 8 lanes: add 0x7fff + the kept lsb, keep the top half; NaN quieted. */
static inline __m256i bf16_round(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v), one = _mm256_set1_epi32(1);
    const __m256i top = _mm256_srli_epi32(u, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(top, one));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i q = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    return _mm256_blendv_epi8(r, q, _mm256_castps_si256(nan));
}

/* cvtps rounds to nearest even (MXCSR default); clamping first makes NaN 0. */
static inline __m256i round_clamped(__m256 v, __m256 hi)
{
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), hi));
}

/* Eight values of a row as f32: from the row h of the image's format fmt (widened exactly)
 * when there is one, else from the f32 row p. */
static inline __attribute__((always_inline)) __m256 load8(const float *p, const void *h,
                                                          lumen_row_fmt fmt)
{
    if (fmt == LUMEN_ROW_F32 || !h) return _mm256_loadu_ps(p);
    if (fmt == LUMEN_ROW_U8)
        return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)h)));
    const __m128i v = _mm_loadu_si128((const __m128i *)h);
    if (fmt == LUMEN_ROW_F16) return _mm256_cvtph_ps(v);
    if (fmt == LUMEN_ROW_U16) return _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(v));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}

/* The first m (<= 8) of eight values at element x of an output row of format fmt (halves
 * rounded to nearest even whatever MXCSR says, as store_f16/store_bf16 do; u8/u16 as
 * store_u8/store_u16). */
static inline __attribute__((always_inline)) void store8(void *out, int64_t x, __m256 v,
                                                         lumen_row_fmt fmt, int64_t m)
{
    if (fmt == LUMEN_ROW_F32) {
        if (m == 8)
            _mm256_storeu_ps((float *)out + x, v);
        else
            store_partial((float *)out + x, v, m);
        return;
    }
    __m128i h;
    if (fmt == LUMEN_ROW_U8 || fmt == LUMEN_ROW_U16) { /* store_u8's and store_u16's steps */
        const __m256i r = round_clamped(v, _mm256_set1_ps(fmt == LUMEN_ROW_U8 ? 255.0f : 65535.0f));
        h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        if (fmt == LUMEN_ROW_U8) {
            h = _mm_packus_epi16(h, h);
            if (m == 8)
                _mm_storel_epi64((__m128i *)((uint8_t *)out + x), h);
            else {
                uint8_t tmp[16];
                _mm_storeu_si128((__m128i *)tmp, h);
                memcpy((uint8_t *)out + x, tmp, (size_t)m);
            }
            return;
        }
    } else if (fmt == LUMEN_ROW_F16)
        h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    else {
        const __m256i r = bf16_round(v); /* eight 16-bit results in 32-bit lanes */
        h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    }
    if (m == 8)
        _mm_storeu_si128((__m128i *)((uint16_t *)out + x), h);
    else {
        uint16_t tmp[8];
        _mm_storeu_si128((__m128i *)tmp, h);
        memcpy((uint16_t *)out + x, tmp, (size_t)m * sizeof(uint16_t));
    }
}

/* Row r's pointer at column x: the half row where there is one (see load8). */
#define HALF_AT(half, hin, r, x)                                                                   \
    ((hin) != LUMEN_ROW_F32 && (half) && (half)[r] ? lumen_row_at((half)[r], (x), (hin)) : NULL)

/* Outputs x0 <= x < n of one row. */
static inline __attribute__((always_inline)) void
direct_from(const float *const *rows, const void *const *half, lumen_row_fmt hin, const float *k,
            int kw, int kh, int ts, void *out, lumen_row_fmt hout, int64_t x0, int64_t n)
{
    int64_t x = x0;
    for (; x + 32 <= n; x += 32) {
        __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                       _mm256_setzero_ps()};
        for (int i = 0; i < kh; i++) {
            const float *r = rows[i] + x, *ki = k + (int64_t)i * kw;
            const void *h = HALF_AT(half, hin, i, x);
            for (int j = 0; j < kw; j++) {
                const __m256 kv = _mm256_broadcast_ss(ki + j);
                const int64_t o = (int64_t)j * ts;
                for (int v = 0; v < 4; v++)
                    a[v] = _mm256_fmadd_ps(
                        kv, load8(r + o + 8 * v, h ? lumen_row_at(h, o + 8 * v, hin) : NULL, hin),
                        a[v]);
            }
        }
        for (int v = 0; v < 4; v++)
            store8(out, x + 8 * v, a[v], hout, 8);
    }
    for (; x < n; x += 8) { /* rows have slack, so the last vector may read past n */
        __m256 a = _mm256_setzero_ps();
        for (int i = 0; i < kh; i++) {
            const float *r = rows[i] + x, *ki = k + (int64_t)i * kw;
            const void *h = HALF_AT(half, hin, i, x);
            for (int j = 0; j < kw; j++) {
                const int64_t o = (int64_t)j * ts;
                a = _mm256_fmadd_ps(_mm256_broadcast_ss(ki + j),
                                    load8(r + o, h ? lumen_row_at(h, o, hin) : NULL, hin), a);
            }
        }
        store8(out, x, a, hout, n - x < 8 ? n - x : 8);
    }
}

/*
 * Two output rows: source row r feeds row 0 with kernel row r and row 1 with
 * kernel row r-1, so each load serves two FMAs (the single-row loop is bound
 * by loads, this one by FMAs).
 */
static inline __attribute__((always_inline)) void
direct2_avx2(const float *const *rows, const void *const *half, lumen_row_fmt hin, const float *k,
             int kw, int kh, int ts, void *out0, void *out1, lumen_row_fmt hout, int64_t n)
{
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256 p[4], q[4];
        for (int v = 0; v < 4; v++)
            p[v] = q[v] = _mm256_setzero_ps();
        for (int r = 0; r <= kh; r++) {
            const float *src = rows[r] + x;
            const void *hs = HALF_AT(half, hin, r, x);
            const float *kt = r < kh ? k + (int64_t)r * kw : NULL;
            const float *kb = r > 0 ? k + (int64_t)(r - 1) * kw : NULL;
            for (int j = 0; j < kw; j++) {
                const int64_t o = (int64_t)j * ts;
                __m256 v[4];
                for (int u = 0; u < 4; u++)
                    v[u] =
                        load8(src + o + 8 * u, hs ? lumen_row_at(hs, o + 8 * u, hin) : NULL, hin);
                if (kt) {
                    __m256 kv = _mm256_broadcast_ss(kt + j);
                    for (int u = 0; u < 4; u++)
                        p[u] = _mm256_fmadd_ps(kv, v[u], p[u]);
                }
                if (kb) {
                    __m256 kv = _mm256_broadcast_ss(kb + j);
                    for (int u = 0; u < 4; u++)
                        q[u] = _mm256_fmadd_ps(kv, v[u], q[u]);
                }
            }
        }
        for (int u = 0; u < 4; u++) {
            store8(out0, x + 8 * u, p[u], hout, 8);
            store8(out1, x + 8 * u, q[u], hout, 8);
        }
    }
    direct_from(rows, half, hin, k, kw, kh, ts, out0, hout, x, n);
    direct_from(rows + 1, half ? half + 1 : NULL, hin, k, kw, kh, ts, out1, hout, x, n);
}

/* nout rows, two at a time; hin and hout are constants where this is inlined, so each format
 * pair gets its own loops with no format tests in them. */
static inline __attribute__((always_inline)) void
direct_rows_fmt(const float *const *rows, const void *const *half, lumen_row_fmt hin,
                const float *k, int kw, int kh, int ts, void *const *out, lumen_row_fmt hout,
                int nout, int64_t n)
{
    int o = 0;
    for (; o + 2 <= nout; o += 2)
        direct2_avx2(rows + o, half ? half + o : NULL, hin, k, kw, kh, ts, out[o], out[o + 1], hout,
                     n);
    if (o < nout)
        direct_from(rows + o, half ? half + o : NULL, hin, k, kw, kh, ts, out[o], hout, 0, n);
}

static void direct_rows_avx2(const float *const *rows, const float *k, int kw, int kh, int ts,
                             float *const *out, int nout, int64_t n)
{
    direct_rows_fmt(rows, NULL, LUMEN_ROW_F32, k, kw, kh, ts, (void *const *)out, LUMEN_ROW_F32,
                    nout, n);
}

/* One instance per (input, output) format pair of LUMEN_ROW_HALF_PAIRS. */
#define DIRECT_HALF_CASE(I, O)                                                                     \
    if (hin == (I) && hout == (O)) {                                                               \
        direct_rows_fmt(rows, half, I, k, kw, kh, ts, out, O, nout, n);                            \
        return;                                                                                    \
    }

static void direct_rows_half_avx2(const float *const *rows, const void *const *half,
                                  lumen_row_fmt hin, const float *k, int kw, int kh, int ts,
                                  void *const *out, lumen_row_fmt hout, int nout, int64_t n)
{
    if (!half) hin = LUMEN_ROW_F32; /* f32 rows only: one instance per output format */
    LUMEN_ROW_HALF_PAIRS(DIRECT_HALF_CASE)
    direct_rows_fmt(rows, NULL, LUMEN_ROW_F32, k, kw, kh, ts, out, LUMEN_ROW_F32, nout, n);
}
#undef DIRECT_HALF_CASE

/* Eight values at element off of a row of format fmt (f32, or halves widened exactly). */
static inline __attribute__((always_inline)) __m256 ldv(const void *p, int64_t off,
                                                        lumen_row_fmt fmt)
{
    if (fmt == LUMEN_ROW_F32) return load8((const float *)p + off, NULL, fmt);
    return load8(NULL, lumen_row_at(p, off, fmt), fmt);
}

/*
 * 8 * V outputs of a 1-D filter whose taps are at base[t] + off, t < n (format fin).
 * Symmetric kernels add the mirrored taps first, halving the multiplies. V = 4 independent
 * accumulators hide the FMA latency; V = 1 serves the tails, with the same order per lane.
 */
static inline __attribute__((always_inline)) void taps_v(const void *const *base, int64_t off,
                                                         lumen_row_fmt fin, const float *k, int n,
                                                         bool sym, const int V, __m256 *a)
{
    for (int v = 0; v < V; v++)
        a[v] = _mm256_setzero_ps();
    const int pairs = sym ? n / 2 : 0;
    for (int t = 0; t < pairs; t++) {
        const __m256 kv = _mm256_broadcast_ss(k + t);
        for (int v = 0; v < V; v++)
            a[v] = _mm256_fmadd_ps(kv,
                                   _mm256_add_ps(ldv(base[t], off + 8 * v, fin),
                                                 ldv(base[n - 1 - t], off + 8 * v, fin)),
                                   a[v]);
    }
    for (int t = pairs; t < (sym ? n - pairs : n); t++) {
        const __m256 kv = _mm256_broadcast_ss(k + t);
        for (int v = 0; v < V; v++)
            a[v] = _mm256_fmadd_ps(kv, ldv(base[t], off + 8 * v, fin), a[v]);
    }
}

/* Applies taps to x in [0, n) and scales; shared by the row and column passes. Rows are read
 * as format fin and out written as fout (constants where this is inlined). */
static inline __attribute__((always_inline)) void taps_row(const void *const *base,
                                                           lumen_row_fmt fin, const float *k,
                                                           int nt, bool sym, float scale, void *out,
                                                           lumen_row_fmt fout, int64_t n)
{
    const __m256 sc = _mm256_set1_ps(scale);
    const bool scaled = scale != 1.0f;
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256 a[4];
        taps_v(base, x, fin, k, nt, sym, 4, a);
        for (int v = 0; v < 4; v++)
            store8(out, x + 8 * v, scaled ? _mm256_mul_ps(a[v], sc) : a[v], fout, 8);
    }
    for (; x < n; x += 8) { /* rows have slack, so the last vector may read past n */
        __m256 a;
        taps_v(base, x, fin, k, nt, sym, 1, &a);
        store8(out, x, scaled ? _mm256_mul_ps(a, sc) : a, fout, n - x < 8 ? n - x : 8);
    }
}

/* The row pass: tap t of output x reads in[x + t*ts] (f32, or halves of format fin). */
static inline __attribute__((always_inline)) void hfilter_fmt(const void *in, lumen_row_fmt fin,
                                                              const float *k, int kw, int ts,
                                                              bool sym, float *out, int64_t n)
{
    const void *base[LUMEN_HTAPS_MAX];
    const int64_t es = lumen_row_fmt_size(fin);
    for (int t = 0; t < kw; t++)
        base[t] = (const char *)in + (int64_t)t * ts * es;
    taps_row(base, fin, k, kw, sym, 1.0f, out, LUMEN_ROW_F32, n);
}

static void hfilter_avx2(const float *in, const float *k, int kw, int ts, bool sym, float *out,
                         int64_t n)
{
    if (kw > LUMEN_HTAPS_MAX) {
        lumen_row_kernels_generic.hfilter(in, k, kw, ts, sym, out, n);
        return;
    }
    hfilter_fmt(in, LUMEN_ROW_F32, k, kw, ts, sym, out, n);
}

static void hfilter_half_avx2(const void *in, lumen_row_fmt fin, const float *k, int kw, int ts,
                              bool sym, float *out, int64_t n)
{
    _Static_assert(LUMEN_HFILTER_HALF_MAX <= LUMEN_HTAPS_MAX, "tap table too short");
    if (fin == LUMEN_ROW_F16)
        hfilter_fmt(in, LUMEN_ROW_F16, k, kw, ts, sym, out, n);
    else if (fin == LUMEN_ROW_BF16)
        hfilter_fmt(in, LUMEN_ROW_BF16, k, kw, ts, sym, out, n);
    else if (fin == LUMEN_ROW_U8)
        hfilter_fmt(in, LUMEN_ROW_U8, k, kw, ts, sym, out, n);
    else
        hfilter_fmt(in, LUMEN_ROW_U16, k, kw, ts, sym, out, n);
}

/* The column pass: tap t of output x reads rows[t][x]. */
static void vfilter_avx2(const float *const *rows, const float *k, int kh, bool sym, float scale,
                         float *out, int64_t n)
{
    taps_row((const void *const *)rows, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_F32, n);
}

static void vfilter_half_avx2(const float *const *rows, const float *k, int kh, bool sym,
                              float scale, void *out, lumen_row_fmt fout, int64_t n)
{
    const void *const *b = (const void *const *)rows;
    if (fout == LUMEN_ROW_F16)
        taps_row(b, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_F16, n);
    else if (fout == LUMEN_ROW_BF16)
        taps_row(b, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_BF16, n);
    else if (fout == LUMEN_ROW_U8)
        taps_row(b, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_U8, n);
    else if (fout == LUMEN_ROW_U16)
        taps_row(b, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_U16, n);
    else
        taps_row(b, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_F32, n);
}

/* acc[j] += k[t] * (v0, v1): one tap of output row j. */
#define VF4_TAP(j, t)                                                                              \
    do {                                                                                           \
        __m256 kv = _mm256_broadcast_ss(k + (t));                                                  \
        acc[j][0] = _mm256_fmadd_ps(kv, v0, acc[j][0]);                                            \
        acc[j][1] = _mm256_fmadd_ps(kv, v1, acc[j][1]);                                            \
    } while (0)

/*
 * 16 columns of four output rows: row r of the window feeds output j with tap
 * r - j. Only real taps are applied (a zero tap would turn an Inf into NaN
 * outside the kernel's reach).
 */
static inline void vfilter4_at(const float *const *rows, const float *k, int kh, int64_t x,
                               __m256 acc[4][2])
{
    for (int j = 0; j < 4; j++)
        acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    for (int r = 0; r < kh + 3; r++) {
        __m256 v0 = _mm256_loadu_ps(rows[r] + x), v1 = _mm256_loadu_ps(rows[r] + x + 8);
        if (r >= 3 && r < kh) {
            VF4_TAP(0, r);
            VF4_TAP(1, r - 1);
            VF4_TAP(2, r - 2);
            VF4_TAP(3, r - 3);
            continue;
        }
        for (int j = 0; j < 4; j++)
            if (r - j >= 0 && r - j < kh) VF4_TAP(j, r - j);
    }
}

/* Four column-pass rows written as format fout (a constant where this is inlined). */
static inline __attribute__((always_inline)) void vfilter4_fmt(const float *const *rows,
                                                               const float *k, int kh, float scale,
                                                               void *const *out, lumen_row_fmt fout,
                                                               int64_t n)
{
    const __m256 sc = _mm256_set1_ps(scale);
    const bool scaled = scale != 1.0f;
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256 acc[4][2];
        vfilter4_at(rows, k, kh, x, acc);
        for (int j = 0; j < 4; j++)
            for (int v = 0; v < 2; v++)
                store8(out[j], x + 8 * v, scaled ? _mm256_mul_ps(acc[j][v], sc) : acc[j][v], fout,
                       8);
    }
    /* The last < 16 columns: the same per-lane FMA order, eight columns at a time. */
    for (int j = 0; j < 4; j++)
        for (int64_t xt = x; xt < n; xt += 8) {
            __m256 a;
            taps_v((const void *const *)(rows + j), xt, LUMEN_ROW_F32, k, kh, false, 1, &a);
            store8(out[j], xt, scaled ? _mm256_mul_ps(a, sc) : a, fout, n - xt < 8 ? n - xt : 8);
        }
}

static void vfilter4_avx2(const float *const *rows, const float *k, int kh, float scale,
                          float *const *out, int64_t n)
{
    vfilter4_fmt(rows, k, kh, scale, (void *const *)out, LUMEN_ROW_F32, n);
}

static void vfilter4_half_avx2(const float *const *rows, const float *k, int kh, float scale,
                               void *const *out, lumen_row_fmt fout, int64_t n)
{
    if (fout == LUMEN_ROW_F16)
        vfilter4_fmt(rows, k, kh, scale, out, LUMEN_ROW_F16, n);
    else if (fout == LUMEN_ROW_BF16)
        vfilter4_fmt(rows, k, kh, scale, out, LUMEN_ROW_BF16, n);
    else if (fout == LUMEN_ROW_U8)
        vfilter4_fmt(rows, k, kh, scale, out, LUMEN_ROW_U8, n);
    else if (fout == LUMEN_ROW_U16)
        vfilter4_fmt(rows, k, kh, scale, out, LUMEN_ROW_U16, n);
    else
        vfilter4_fmt(rows, k, kh, scale, out, LUMEN_ROW_F32, n);
}

static float max_abs_avx2(const float *in, int64_t n)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
    __m256 m = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(in + i));
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, big, _CMP_NLE_UQ)); /* NaN, Inf */
        m = _mm256_max_ps(m, a);
    }
    float lanes[8], tail = lumen_row_kernels_generic.max_abs(in + i, n - i), r = 0.0f;
    if (_mm256_movemask_ps(bad) || isnan(tail)) return NAN;
    _mm256_storeu_ps(lanes, m);
    for (int k = 0; k < 8; k++)
        r = lanes[k] > r ? lanes[k] : r;
    return tail > r ? tail : r;
}

/* (a + ib)(c + id) for four complex numbers per vector: fmaddsub does the signs. */
static void complex_mul_avx2(float *f, const float *s, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256 a = _mm256_loadu_ps(f + 2 * i), b = _mm256_loadu_ps(s + 2 * i);
        __m256 re = _mm256_moveldup_ps(b), im = _mm256_movehdup_ps(b);
        __m256 swapped = _mm256_permute_ps(a, 0xB1); /* (im, re) pairs */
        _mm256_storeu_ps(f + 2 * i, _mm256_fmaddsub_ps(a, re, _mm256_mul_ps(swapped, im)));
    }
    lumen_row_kernels_generic.complex_mul(f + 2 * i, s + 2 * i, n - i);
}

static void store_u8_avx2(const float *in, uint8_t *out, int64_t n)
{
    const __m256 hi = _mm256_set1_ps(255.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m256i i0 = round_clamped(_mm256_loadu_ps(in + x), hi);
        __m256i i1 = round_clamped(_mm256_loadu_ps(in + x + 8), hi);
        __m256i i2 = round_clamped(_mm256_loadu_ps(in + x + 16), hi);
        __m256i i3 = round_clamped(_mm256_loadu_ps(in + x + 24), hi);
        __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(i0, i1), _mm256_packus_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)(out + x), _mm256_permutevar8x32_epi32(b, order));
    }
    lumen_row_kernels_generic.store_u8(in + x, out + x, n - x);
}

static void store_u16_avx2(const float *in, uint16_t *out, int64_t n)
{
    const __m256 hi = _mm256_set1_ps(65535.0f);
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256i i0 = round_clamped(_mm256_loadu_ps(in + x), hi);
        __m256i i1 = round_clamped(_mm256_loadu_ps(in + x + 8), hi);
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(i0, i1), 0xD8);
        _mm256_storeu_si256((__m256i *)(out + x), p);
    }
    lumen_row_kernels_generic.store_u16(in + x, out + x, n - x);
}

/* ---- f16 / bf16 (F16C: every AVX2 CPU has it, and cpu_isa.c requires it for "avx2") ---- */

/* vcvtph2ps is exact and quiets NaN as lumen_f16_to_f32 does. */
static void load_f16_avx2(const uint16_t *in, float *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m128i h0 = _mm_loadu_si128((const __m128i *)(in + x));
        __m128i h1 = _mm_loadu_si128((const __m128i *)(in + x + 8));
        _mm256_storeu_ps(out + x, _mm256_cvtph_ps(h0));
        _mm256_storeu_ps(out + x + 8, _mm256_cvtph_ps(h1));
    }
    lumen_row_kernels_generic.load_f16(in + x, out + x, n - x);
}

static void load_u8_avx2(const uint8_t *in, float *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 8 <= n; x += 8)
        _mm256_storeu_ps(out + x, load8(NULL, in + x, LUMEN_ROW_U8));
    lumen_row_kernels_generic.load_u8(in + x, out + x, n - x);
}

static void load_u16_avx2(const uint16_t *in, float *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 8 <= n; x += 8)
        _mm256_storeu_ps(out + x, load8(NULL, in + x, LUMEN_ROW_U16));
    lumen_row_kernels_generic.load_u16(in + x, out + x, n - x);
}

static void load_bf16_avx2(const uint16_t *in, float *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 8 <= n; x += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(in + x)));
        _mm256_storeu_si256((__m256i *)(out + x), _mm256_slli_epi32(w, 16));
    }
    lumen_row_kernels_generic.load_bf16(in + x, out + x, n - x);
}

/* vcvtps2ph with an immediate rounding mode: nearest even whatever MXCSR says, Inf on
 * overflow, NaN quiet with its payload truncated: lumen_f32_to_f16, bit for bit (test_half.c
 * checks every f16 and a sweep of f32 values, both ISAs). */
static void store_f16_avx2(const float *in, uint16_t *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m128i h0 = _mm256_cvtps_ph(_mm256_loadu_ps(in + x), _MM_FROUND_TO_NEAREST_INT);
        __m128i h1 = _mm256_cvtps_ph(_mm256_loadu_ps(in + x + 8), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(out + x), h0);
        _mm_storeu_si128((__m128i *)(out + x + 8), h1);
    }
    lumen_row_kernels_generic.store_f16(in + x, out + x, n - x);
}

/*
 * AVX512_BF16's vcvtneps2bf16 is not used: it flushes f32 subnormals to zero, so its results
 * would differ from the portable definition (and from other CPUs) below 1.2e-38; these integer
 * steps cost little next to the memory traffic they save.
 */
static void store_bf16_avx2(const float *in, uint16_t *out, int64_t n)
{
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256i r0 = bf16_round(_mm256_loadu_ps(in + x));
        __m256i r1 = bf16_round(_mm256_loadu_ps(in + x + 8));
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xD8);
        _mm256_storeu_si256((__m256i *)(out + x), p);
    }
    lumen_row_kernels_generic.store_bf16(in + x, out + x, n - x);
}

const lumen_row_kernels lumen_row_kernels_avx2 = {
    .isa = "avx2+fma",
    .direct_rows = direct_rows_avx2,
    .direct_rows_max = 2,
    .direct_rows_half = direct_rows_half_avx2,
    .hfilter = hfilter_avx2,
    .vfilter = vfilter_avx2,
    .vfilter4 = vfilter4_avx2,
    .hfilter_half = hfilter_half_avx2,
    .vfilter_half = vfilter_half_avx2,
    .vfilter4_half = vfilter4_half_avx2,
    .max_abs = max_abs_avx2,
    .complex_mul = complex_mul_avx2,
    .store_u8 = store_u8_avx2,
    .store_u16 = store_u16_avx2,
    .load_f16 = load_f16_avx2,
    .load_bf16 = load_bf16_avx2,
    .load_u8 = load_u8_avx2,
    .load_u16 = load_u16_avx2,
    .store_f16 = store_f16_avx2,
    .store_bf16 = store_bf16_avx2,
};
