/*
 * AVX-512 row kernels (this file alone is compiled with -mavx512f/bw/dq/vl and only called
 * after cpu_isa.c's CPUID + XGETBV check). They are the AVX2 kernels twice as wide: every
 * output lane sums the same taps in the same order as row_kernels_avx2.c, so both sets give
 * the same bits (test_filter2d.c compares them) and only the speed differs. Tails use masked
 * loads and stores: nothing is read or written past a row's last needed float.
 */
#include "row_kernels.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>

/* Row-pass taps handled with a pointer table on the stack; longer kernels use the generic loop. */
#define LUMEN_HTAPS_MAX 4096

/* Lanes [0, m) of a 16-float vector, m <= 16. */
static inline __mmask16 lanes(int64_t m)
{
    return (__mmask16)((1u << m) - 1u);
}

static inline __m512 bf16_widen(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* lumen_f32_to_bf16 on 16 lanes: add 0x7fff + the kept lsb, keep the top half; NaN quieted.
 * (AVX512_BF16's vcvtneps2bf16 flushes subnormals: not used, as in the AVX2 set.) */
static inline __m512i bf16_round(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v), one = _mm512_set1_epi32(1);
    const __m512i top = _mm512_srli_epi32(u, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(top, one));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __m512i q = _mm512_or_si512(top, _mm512_set1_epi32(0x40));
    return _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, q);
}

/* cvtps rounds to nearest even (MXCSR default); clamping first makes NaN 0. */
static inline __m512i round_clamped(__m512 v, __m512 hi)
{
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), hi));
}

/* 16 values of a row as f32: from the row h of the image's format fmt (widened exactly) when
 * there is one, else from the f32 row p. */
static inline __attribute__((always_inline)) __m512
load_row16(const float *p, const void *h, lumen_row_fmt fmt, __mmask16 m, bool masked)
{
    if (fmt == LUMEN_ROW_F32 || !h)
        return masked ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
    if (fmt == LUMEN_ROW_U8) {
        const __m128i b = masked ? _mm_maskz_loadu_epi8(m, h) : _mm_loadu_si128((const __m128i *)h);
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
    }
    const __m256i v =
        masked ? _mm256_maskz_loadu_epi16(m, h) : _mm256_loadu_si256((const __m256i *)h);
    return fmt == LUMEN_ROW_F16    ? _mm512_cvtph_ps(v)
           : fmt == LUMEN_ROW_BF16 ? bf16_widen(v)
                                   : _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(v));
}

/* 16 values at element x of an output row of format fmt (halves rounded to nearest even
 * whatever MXCSR says, as store_f16/store_bf16 do; u8/u16 as store_u8/store_u16). */
static inline __attribute__((always_inline)) void
store_row16(void *out, int64_t x, __m512 v, lumen_row_fmt fmt, __mmask16 m, bool masked)
{
    if (fmt == LUMEN_ROW_F32) {
        if (masked)
            _mm512_mask_storeu_ps((float *)out + x, m, v);
        else
            _mm512_storeu_ps((float *)out + x, v);
        return;
    }
    if (fmt == LUMEN_ROW_U8) { /* store_u8's steps */
        const __m128i b = _mm512_cvtepi32_epi8(round_clamped(v, _mm512_set1_ps(255.0f)));
        if (masked)
            _mm_mask_storeu_epi8((uint8_t *)out + x, m, b);
        else
            _mm_storeu_si128((__m128i *)((uint8_t *)out + x), b);
        return;
    }
    const __m256i h = fmt == LUMEN_ROW_U16
                          ? _mm512_cvtepi32_epi16(round_clamped(v, _mm512_set1_ps(65535.0f)))
                      : fmt == LUMEN_ROW_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)
                                             : _mm512_cvtepi32_epi16(bf16_round(v));
    if (masked)
        _mm256_mask_storeu_epi16((uint16_t *)out + x, m, h);
    else
        _mm256_storeu_si256((__m256i *)((uint16_t *)out + x), h);
}

/* Loads 64 values at p (or h, see load_row16), lanes beyond the masks' reach as zeros (never
 * read). */
static inline __attribute__((always_inline)) void
load4(const float *p, const void *h, lumen_row_fmt fmt, const __mmask16 *m, bool masked, __m512 *v)
{
    for (int u = 0; u < 4; u++)
        v[u] = load_row16(p + 16 * u, h ? lumen_row_at(h, 16 * u, fmt) : NULL, fmt, m[u], masked);
}

/*
 * 64 columns (x .. x+63, masked to the row's end) of R output rows at once: source row r
 * feeds output row o with kernel row r - o, so each load serves up to R rows' FMAs (one row
 * alone is bound by loads; four rows are bound by FMAs). Every lane sums kernel rows in
 * ascending order and taps in ascending order within a row, as the AVX2 and generic kernels
 * do, whatever R, the masks and the row formats are.
 */
static inline __attribute__((always_inline)) void
direct_block(const float *const *rows, const void *const *half, lumen_row_fmt hin, const float *k,
             int kw, int kh, int ts, void *const *out, lumen_row_fmt hout, const int R, int64_t x,
             const __mmask16 *m, bool masked)
{
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int o = 0; o < R; o++)
        for (int u = 0; u < 4; u++)
            acc[o][u] = _mm512_setzero_ps();
    for (int r = 0; r < kh + R - 1; r++) {
        const float *src = rows[r] + x;
        const void *hsrc =
            hin != LUMEN_ROW_F32 && half && half[r] ? lumen_row_at(half[r], x, hin) : NULL;
        for (int j = 0; j < kw; j++) {
            __m512 v[4];
            load4(src + (int64_t)j * ts, hsrc ? lumen_row_at(hsrc, (int64_t)j * ts, hin) : NULL,
                  hin, m, masked, v);
#pragma GCC unroll 4
            for (int o = 0; o < R; o++) {
                if (r - o < 0 || r - o >= kh) continue;
                const __m512 kv = _mm512_set1_ps(k[(int64_t)(r - o) * kw + j]);
                for (int u = 0; u < 4; u++)
                    acc[o][u] = _mm512_fmadd_ps(kv, v[u], acc[o][u]);
            }
        }
    }
#pragma GCC unroll 4
    for (int o = 0; o < R; o++)
        for (int u = 0; u < 4; u++)
            store_row16(out[o], x + 16 * u, acc[o][u], hout, m[u], masked);
}

/* Lanes j.. of a, then the first j lanes of b: a row's vector j values on (valignd). valignd
 * takes its count as an immediate: the callers' loops are unrolled, so j is a constant there
 * and the switch folds away (gcc); clang wants the immediate written as a literal in the
 * source, which the cases give it. */
static inline __attribute__((always_inline)) __m512 shift16(__m512 a, __m512 b, int j)
{
    const __m512i x = _mm512_castps_si512(a), y = _mm512_castps_si512(b);
    switch (j) {
#define SHIFT16_CASE(J)                                                                            \
    case J: return _mm512_castsi512_ps(_mm512_alignr_epi32(y, x, J));
        /* clang-format off */
        SHIFT16_CASE(1) SHIFT16_CASE(2) SHIFT16_CASE(3) SHIFT16_CASE(4) SHIFT16_CASE(5)
        SHIFT16_CASE(6) SHIFT16_CASE(7) SHIFT16_CASE(8) SHIFT16_CASE(9) SHIFT16_CASE(10)
        SHIFT16_CASE(11) SHIFT16_CASE(12) SHIFT16_CASE(13) SHIFT16_CASE(14) SHIFT16_CASE(15)
#undef SHIFT16_CASE
    default: return a; /* j = 0 */
        /* clang-format on */
    }
}

/* The 16 values s on from vector u of v (s < 32): shift16 within the pair that holds them. */
static inline __attribute__((always_inline)) __m512 shifted(const __m512 *v, int u, int s)
{
    return s < 16 ? shift16(v[u], v[u + 1], s) : shift16(v[u + 1], v[u + 2], s - 16);
}

/* Whether a row format holds only finite values (integers): a zero tap then adds +0 to a sum
 * that is never -0, so skipping it leaves every bit as it was (an f32 Inf or NaN times 0 is NaN,
 * so f32 and half rows keep every tap). */
static inline __attribute__((always_inline)) bool finite_fmt(lumen_row_fmt f)
{
    return f == LUMEN_ROW_U8 || f == LUMEN_ROW_U16;
}

/*
 * direct_block's whole 64-column blocks of four rows for a square kernel of KS taps a side,
 * TS values apart (1 planar, 3 or 4 interleaved RGB/RGBA), both known at compile time. Each
 * source row's 64 + (KS - 1) * TS values are loaded (or widened) once, as up to six vectors,
 * and every tap's shifted vectors are made in registers (valignd): the tap-by-tap loads of
 * direct_block cross cache lines (three of four taps) and widen each value KS times. Zero taps
 * of integer images are skipped (finite_fmt: a sharpen or edge kernel's corners). The same FMAs
 * in the same order, lane by lane.
 */
static inline __attribute__((always_inline)) void
direct_block_fixed(const float *const *rows, const void *const *half, lumen_row_fmt hin,
                   const float *k, const int KS, const int TS, void *const *out, lumen_row_fmt hout,
                   int64_t x)
{
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int o = 0; o < 4; o++)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            acc[o][u] = _mm512_setzero_ps();
    const int reach = (KS - 1) * TS; /* values past the block's 64 that the taps read */
    const __mmask16 more0 = lanes(reach < 16 ? reach : 16),
                    more1 = lanes(reach > 16 ? reach - 16 : 0);
#pragma GCC unroll 1
    for (int r = 0; r < KS + 3; r++) {
        const float *src = rows[r] + x;
        const void *hsrc =
            hin != LUMEN_ROW_F32 && half && half[r] ? lumen_row_at(half[r], x, hin) : NULL;
        __m512 v[6];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            v[u] = load_row16(src + 16 * u, hsrc ? lumen_row_at(hsrc, 16 * u, hin) : NULL, hin,
                              0xFFFF, false);
        v[4] = load_row16(src + 64, hsrc ? lumen_row_at(hsrc, 64, hin) : NULL, hin, more0, true);
        v[5] = reach > 16 ? load_row16(src + 80, hsrc ? lumen_row_at(hsrc, 80, hin) : NULL, hin,
                                       more1, true)
                          : _mm512_setzero_ps();
#pragma GCC unroll 7
        for (int j = 0; j < KS; j++) {
            __m512 t[4];
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++)
                t[u] = shifted(v, u, j * TS);
#pragma GCC unroll 4
            for (int o = 0; o < 4; o++) {
                if (r - o < 0 || r - o >= KS) continue;
                const float kj = k[(r - o) * KS + j];
                if (finite_fmt(hin) && kj == 0.0f) continue;
                const __m512 kv = _mm512_set1_ps(kj);
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++)
                    acc[o][u] = _mm512_fmadd_ps(kv, t[u], acc[o][u]);
            }
        }
    }
#pragma GCC unroll 4
    for (int o = 0; o < 4; o++)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            store_row16(out[o], x + 16 * u, acc[o][u], hout, 0xFFFF, false);
}

/* Whole blocks [0, n / 64 * 64) of four rows with a kernel of KS taps a side. */
static inline __attribute__((always_inline)) int64_t
direct_blocks_fixed(const float *const *rows, const void *const *half, lumen_row_fmt hin,
                    const float *k, const int KS, const int TS, void *const *out,
                    lumen_row_fmt hout, int64_t n)
{
    int64_t x = 0;
    for (; x + 64 <= n; x += 64)
        direct_block_fixed(rows, half, hin, k, KS, TS, out, hout, x);
    return x;
}

/* direct_blocks_fixed's instance for ks and ts, where there is one (3, 5, 7; 1, 3, 4). */
static inline __attribute__((always_inline)) int64_t
direct_blocks_fixed_any(const float *const *rows, const void *const *half, lumen_row_fmt hin,
                        const float *k, int ks, int ts, void *const *out, lumen_row_fmt hout,
                        int64_t n)
{
#define DFIXED_TS(KS)                                                                              \
    (ts == 1   ? direct_blocks_fixed(rows, half, hin, k, KS, 1, out, hout, n)                      \
     : ts == 3 ? direct_blocks_fixed(rows, half, hin, k, KS, 3, out, hout, n)                      \
     : ts == 4 ? direct_blocks_fixed(rows, half, hin, k, KS, 4, out, hout, n)                      \
               : 0)
    return ks == 3 ? DFIXED_TS(3) : ks == 5 ? DFIXED_TS(5) : ks == 7 ? DFIXED_TS(7) : 0;
#undef DFIXED_TS
}

/* Whether (hin, hout) gets direct_block_fixed instances: same-format pairs, the common case
 * (every instance is a few kB of code). */
static inline __attribute__((always_inline)) bool fixed_pair(lumen_row_fmt hin, lumen_row_fmt hout)
{
    return hin == hout;
}

/* R output rows over [0, n): whole 64-column blocks, then one masked block. */
static inline __attribute__((always_inline)) void
direct_rows_r(const float *const *rows, const void *const *half, lumen_row_fmt hin, const float *k,
              int kw, int kh, int ts, void *const *out, lumen_row_fmt hout, const int R, int64_t n)
{
    const __mmask16 all[4] = {0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF};
    int64_t x = 0;
    if (R == 4 && kw == kh && fixed_pair(hin, hout))
        x = direct_blocks_fixed_any(rows, half, hin, k, kw, ts, out, hout, n);
    for (; x + 64 <= n; x += 64)
        direct_block(rows, half, hin, k, kw, kh, ts, out, hout, R, x, all, false);
    if (x < n) {
        __mmask16 m[4];
        for (int u = 0; u < 4; u++) {
            const int64_t left = n - x - 16 * u;
            m[u] = lanes(left <= 0 ? 0 : left < 16 ? left : 16);
        }
        direct_block(rows, half, hin, k, kw, kh, ts, out, hout, R, x, m, true);
    }
}

/* nout rows (1 to 4) in steps of four, two and one; hin and hout are constants where this is
 * inlined, so each format pair gets its own loop with no format tests in it. */
static inline __attribute__((always_inline)) void
direct_rows_fmt(const float *const *rows, const void *const *half, lumen_row_fmt hin,
                const float *k, int kw, int kh, int ts, void *const *out, lumen_row_fmt hout,
                int nout, int64_t n)
{
    switch (nout) {
    case 4: direct_rows_r(rows, half, hin, k, kw, kh, ts, out, hout, 4, n); break;
    case 3:
        direct_rows_r(rows, half, hin, k, kw, kh, ts, out, hout, 2, n);
        direct_rows_r(rows + 2, half ? half + 2 : NULL, hin, k, kw, kh, ts, out + 2, hout, 1, n);
        break;
    case 2: direct_rows_r(rows, half, hin, k, kw, kh, ts, out, hout, 2, n); break;
    default: direct_rows_r(rows, half, hin, k, kw, kh, ts, out, hout, 1, n); break;
    }
}

static void direct_rows_avx512(const float *const *rows, const float *k, int kw, int kh, int ts,
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

static void direct_rows_half_avx512(const float *const *rows, const void *const *half,
                                    lumen_row_fmt hin, const float *k, int kw, int kh, int ts,
                                    void *const *out, lumen_row_fmt hout, int nout, int64_t n)
{
    if (!half) hin = LUMEN_ROW_F32; /* f32 rows only: one instance per output format */
    LUMEN_ROW_HALF_PAIRS(DIRECT_HALF_CASE)
    direct_rows_fmt(rows, NULL, LUMEN_ROW_F32, k, kw, kh, ts, out, LUMEN_ROW_F32, nout, n);
}
#undef DIRECT_HALF_CASE

/* 16 values at element off of a row of format fmt (f32, or another format widened exactly). */
static inline __attribute__((always_inline)) __m512 ldv(const void *p, int64_t off,
                                                        lumen_row_fmt fmt, __mmask16 m, bool masked)
{
    if (fmt == LUMEN_ROW_F32) return load_row16((const float *)p + off, NULL, fmt, m, masked);
    return load_row16(NULL, lumen_row_at(p, off, fmt), fmt, m, masked);
}

/* Sum of taps t < nt at base[t] + off for 16 lanes (masked): mirrored pairs added first when
 * sym, then one FMA per pair (the AVX2 kernels' order, lane for lane). */
static inline __attribute__((always_inline)) __m512 taps16(const void *const *base, int64_t off,
                                                           lumen_row_fmt fin, const float *k,
                                                           int nt, bool sym, __mmask16 m)
{
    __m512 a = _mm512_setzero_ps();
    const int pairs = sym ? nt / 2 : 0;
    for (int t = 0; t < pairs; t++) {
        __m512 s = _mm512_add_ps(ldv(base[t], off, fin, m, true),
                                 ldv(base[nt - 1 - t], off, fin, m, true));
        a = _mm512_fmadd_ps(_mm512_set1_ps(k[t]), s, a);
    }
    for (int t = pairs; t < (sym ? nt - pairs : nt); t++)
        a = _mm512_fmadd_ps(_mm512_set1_ps(k[t]), ldv(base[t], off, fin, m, true), a);
    return a;
}

/* The same for 64 lanes: four independent accumulators hide the FMA latency. */
static inline __attribute__((always_inline)) void taps64(const void *const *base, int64_t off,
                                                         lumen_row_fmt fin, const float *k, int nt,
                                                         bool sym, __m512 *acc)
{
    for (int u = 0; u < 4; u++)
        acc[u] = _mm512_setzero_ps();
    const int pairs = sym ? nt / 2 : 0;
    for (int t = 0; t < pairs; t++) {
        const void *p = base[t], *q = base[nt - 1 - t];
        const __m512 kv = _mm512_set1_ps(k[t]);
        for (int u = 0; u < 4; u++)
            acc[u] = _mm512_fmadd_ps(kv,
                                     _mm512_add_ps(ldv(p, off + 16 * u, fin, 0xFFFF, false),
                                                   ldv(q, off + 16 * u, fin, 0xFFFF, false)),
                                     acc[u]);
    }
    for (int t = pairs; t < (sym ? nt - pairs : nt); t++) {
        const void *p = base[t];
        const __m512 kv = _mm512_set1_ps(k[t]);
        for (int u = 0; u < 4; u++)
            acc[u] = _mm512_fmadd_ps(kv, ldv(p, off + 16 * u, fin, 0xFFFF, false), acc[u]);
    }
}

/* Applies taps to x in [0, n) and scales; shared by the row and column passes. Rows are read
 * as format fin and out written as fout (constants where this is inlined). */
static inline __attribute__((always_inline)) void taps_row(const void *const *base,
                                                           lumen_row_fmt fin, const float *k,
                                                           int nt, bool sym, float scale, void *out,
                                                           lumen_row_fmt fout, int64_t n)
{
    const __m512 sc = _mm512_set1_ps(scale);
    const bool scaled = scale != 1.0f;
    int64_t x = 0;
    for (; x + 64 <= n; x += 64) {
        __m512 a[4];
        taps64(base, x, fin, k, nt, sym, a);
        for (int u = 0; u < 4; u++)
            store_row16(out, x + 16 * u, scaled ? _mm512_mul_ps(a[u], sc) : a[u], fout, 0xFFFF,
                        false);
    }
    for (; x < n; x += 16) {
        const __mmask16 m = lanes(n - x < 16 ? n - x : 16);
        __m512 a = taps16(base, x, fin, k, nt, sym, m);
        store_row16(out, x, scaled ? _mm512_mul_ps(a, sc) : a, fout, m, true);
    }
}

/*
 * The row pass with KW taps TS values apart (TS = 1 planar, 3 or 4 interleaved RGB/RGBA), both
 * known at compile time, over whole 64-output blocks; returns where it stopped. Each block's
 * 64 + (KW - 1) * TS inputs are loaded (or widened) once, as up to six vectors, and every tap's
 * vector is shifted out of them in registers: taps64 loads (widens) every input KW times, at
 * offsets that mostly cross cache lines (a u8 RGB row spent most of its time widening). Sums
 * as taps64: mirrored pairs added first when sym, then one FMA per pair, then the rest.
 */
static inline __attribute__((always_inline)) int64_t
hfilter_fixed(const void *in, lumen_row_fmt fin, const float *k, const int KW, const int TS,
              bool sym, float *out, int64_t n)
{
    const int reach = (KW - 1) * TS; /* values past the block's 64 that its taps read */
    const __mmask16 more0 = lanes(reach < 16 ? reach : 16);
    const __mmask16 more1 = lanes(reach > 16 ? reach - 16 : 0);
    const int pairs = sym ? KW / 2 : 0;
    int64_t x = 0;
    for (; x + 64 <= n; x += 64) {
        __m512 v[6], acc[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            v[u] = ldv(in, x + 16 * u, fin, 0xFFFF, false);
            acc[u] = _mm512_setzero_ps();
        }
        v[4] = ldv(in, x + 64, fin, more0, true);
        v[5] = reach > 16 ? ldv(in, x + 80, fin, more1, true) : _mm512_setzero_ps();
        /* Each tap spelled out, so that every shift count is a constant (a loop over t, even
         * under an unroll pragma, was left rolled for TS 3 and shifted through a jump table). */
#define HTAP(t)                                                                                    \
    if ((t) < pairs) {                                                                             \
        const __m512 kv = _mm512_set1_ps(k[t]);                                                    \
        for (int u = 0; u < 4; u++)                                                                \
            acc[u] = _mm512_fmadd_ps(                                                              \
                kv, _mm512_add_ps(shifted(v, u, (t)*TS), shifted(v, u, (KW - 1 - (t)) * TS)),      \
                acc[u]);                                                                           \
    } else if ((t) < KW - pairs) {                                                                 \
        const __m512 kv = _mm512_set1_ps(k[t]);                                                    \
        for (int u = 0; u < 4; u++)                                                                \
            acc[u] = _mm512_fmadd_ps(kv, shifted(v, u, (t)*TS), acc[u]);                           \
    }
        HTAP(0)
        HTAP(1) HTAP(2) HTAP(3) HTAP(4) HTAP(5) HTAP(6) /* KW <= 7 */
#undef HTAP
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) _mm512_storeu_ps(out + x + 16 * u, acc[u]);
    }
    return x;
}

/* hfilter_fixed's instance for kw and ts, where there is one (kw 3, 5, 7; ts 1, 3, 4). */
static inline __attribute__((always_inline)) int64_t
hfilter_fixed_any(const void *in, lumen_row_fmt fin, const float *k, int kw, int ts, bool sym,
                  float *out, int64_t n)
{
#define HFIXED_TS(KW)                                                                              \
    (ts == 1   ? hfilter_fixed(in, fin, k, KW, 1, sym, out, n)                                     \
     : ts == 3 ? hfilter_fixed(in, fin, k, KW, 3, sym, out, n)                                     \
     : ts == 4 ? hfilter_fixed(in, fin, k, KW, 4, sym, out, n)                                     \
               : 0)
    return kw == 3 ? HFIXED_TS(3) : kw == 5 ? HFIXED_TS(5) : kw == 7 ? HFIXED_TS(7) : 0;
#undef HFIXED_TS
}

/* The row pass: tap t of output x reads in[x + t*ts] (f32, or halves of format fin). */
static inline __attribute__((always_inline)) void hfilter_fmt(const void *in, lumen_row_fmt fin,
                                                              const float *k, int kw, int ts,
                                                              bool sym, float *out, int64_t n)
{
    const void *base[LUMEN_HTAPS_MAX];
    const int64_t es = lumen_row_fmt_size(fin);
    const int64_t x = hfilter_fixed_any(in, fin, k, kw, ts, sym, out, n); /* outputs done */
    for (int t = 0; t < kw; t++)
        base[t] = (const char *)in + ((int64_t)t * ts + x) * es;
    taps_row(base, fin, k, kw, sym, 1.0f, out + x, LUMEN_ROW_F32, n - x);
}

static void hfilter_avx512(const float *in, const float *k, int kw, int ts, bool sym, float *out,
                           int64_t n)
{
    if (kw > LUMEN_HTAPS_MAX) {
        lumen_row_kernels_generic.hfilter(in, k, kw, ts, sym, out, n);
        return;
    }
    hfilter_fmt(in, LUMEN_ROW_F32, k, kw, ts, sym, out, n);
}

static void hfilter_half_avx512(const void *in, lumen_row_fmt fin, const float *k, int kw, int ts,
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
static void vfilter_avx512(const float *const *rows, const float *k, int kh, bool sym, float scale,
                           float *out, int64_t n)
{
    taps_row((const void *const *)rows, LUMEN_ROW_F32, k, kh, sym, scale, out, LUMEN_ROW_F32, n);
}

static void vfilter_half_avx512(const float *const *rows, const float *k, int kh, bool sym,
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

/*
 * 32 columns of four output rows: row r of the window feeds output j with tap r - j. Only
 * real taps are applied (a zero tap would turn an Inf into NaN outside the kernel's reach).
 */
static inline void vfilter4_at(const float *const *rows, const float *k, int kh, int64_t x,
                               __m512 acc[4][2])
{
    for (int j = 0; j < 4; j++)
        acc[j][0] = acc[j][1] = _mm512_setzero_ps();
    for (int r = 0; r < kh + 3; r++) {
        const __m512 v0 = _mm512_loadu_ps(rows[r] + x), v1 = _mm512_loadu_ps(rows[r] + x + 16);
        if (r >= 3 && r < kh) { /* every output row takes this row: no tests (long kernels) */
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                const __m512 kv = _mm512_set1_ps(k[r - j]);
                acc[j][0] = _mm512_fmadd_ps(kv, v0, acc[j][0]);
                acc[j][1] = _mm512_fmadd_ps(kv, v1, acc[j][1]);
            }
            continue;
        }
        for (int j = 0; j < 4; j++) {
            if (r - j < 0 || r - j >= kh) continue;
            const __m512 kv = _mm512_set1_ps(k[r - j]);
            acc[j][0] = _mm512_fmadd_ps(kv, v0, acc[j][0]);
            acc[j][1] = _mm512_fmadd_ps(kv, v1, acc[j][1]);
        }
    }
}

/* Whole 32-column blocks [x, n / 32 * 32) of the four rows, kh taps (KH when a constant:
 * vfilter4_at's loops unrolled, its row tests gone); returns where it stopped. */
static inline __attribute__((always_inline)) int64_t vfilter4_blocks(const float *const *rows,
                                                                     const float *k, const int KH,
                                                                     float scale, void *const *out,
                                                                     lumen_row_fmt fout, int64_t n)
{
    const __m512 sc = _mm512_set1_ps(scale);
    const bool scaled = scale != 1.0f;
    int64_t x = 0;
    for (; x + 32 <= n; x += 32) {
        __m512 acc[4][2];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[j][0] = acc[j][1] = _mm512_setzero_ps();
#pragma GCC unroll 10
        for (int r = 0; r < KH + 3; r++) {
            const __m512 v0 = _mm512_loadu_ps(rows[r] + x), v1 = _mm512_loadu_ps(rows[r] + x + 16);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                if (r - j < 0 || r - j >= KH) continue;
                const __m512 kv = _mm512_set1_ps(k[r - j]);
                acc[j][0] = _mm512_fmadd_ps(kv, v0, acc[j][0]);
                acc[j][1] = _mm512_fmadd_ps(kv, v1, acc[j][1]);
            }
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++)
                store_row16(out[j], x + 16 * v, scaled ? _mm512_mul_ps(acc[j][v], sc) : acc[j][v],
                            fout, 0xFFFF, false);
    }
    return x;
}

/* Four column-pass rows written as format fout (a constant where this is inlined). */
static inline __attribute__((always_inline)) void vfilter4_fmt(const float *const *rows,
                                                               const float *k, int kh, float scale,
                                                               void *const *out, lumen_row_fmt fout,
                                                               int64_t n)
{
    const __m512 sc = _mm512_set1_ps(scale);
    const bool scaled = scale != 1.0f;
    int64_t x = 0;
    if (kh == 3)
        x = vfilter4_blocks(rows, k, 3, scale, out, fout, n);
    else if (kh == 5)
        x = vfilter4_blocks(rows, k, 5, scale, out, fout, n);
    else if (kh == 7)
        x = vfilter4_blocks(rows, k, 7, scale, out, fout, n);
    for (; x + 32 <= n; x += 32) {
        __m512 acc[4][2];
        vfilter4_at(rows, k, kh, x, acc);
        for (int j = 0; j < 4; j++)
            for (int v = 0; v < 2; v++)
                store_row16(out[j], x + 16 * v, scaled ? _mm512_mul_ps(acc[j][v], sc) : acc[j][v],
                            fout, 0xFFFF, false);
    }
    /* The last < 32 columns: the same per-lane FMA order, 16 columns at a time. */
    for (int j = 0; j < 4; j++)
        for (int64_t xt = x; xt < n; xt += 16) {
            const __mmask16 m = lanes(n - xt < 16 ? n - xt : 16);
            const __m512 a =
                taps16((const void *const *)(rows + j), xt, LUMEN_ROW_F32, k, kh, false, m);
            store_row16(out[j], xt, scaled ? _mm512_mul_ps(a, sc) : a, fout, m, true);
        }
}

static void vfilter4_avx512(const float *const *rows, const float *k, int kh, float scale,
                            float *const *out, int64_t n)
{
    vfilter4_fmt(rows, k, kh, scale, (void *const *)out, LUMEN_ROW_F32, n);
}

static void vfilter4_half_avx512(const float *const *rows, const float *k, int kh, float scale,
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

static float max_abs_avx512(const float *in, int64_t n)
{
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    __m512 m = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 l = lanes(n - i < 16 ? n - i : 16);
        const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(l, in + i));
        bad |= _mm512_cmp_ps_mask(a, big, _CMP_NLE_UQ); /* NaN, Inf */
        m = _mm512_max_ps(m, a);
    }
    return bad ? NAN : _mm512_reduce_max_ps(m);
}

/* (a + ib)(c + id) for eight complex numbers per vector: fmaddsub does the signs. */
static void complex_mul_avx512(float *f, const float *s, int64_t n)
{
    for (int64_t i = 0; i < n; i += 8) {
        const __mmask16 l = lanes(2 * (n - i < 8 ? n - i : 8));
        const __m512 a = _mm512_maskz_loadu_ps(l, f + 2 * i),
                     b = _mm512_maskz_loadu_ps(l, s + 2 * i);
        const __m512 re = _mm512_moveldup_ps(b), im = _mm512_movehdup_ps(b);
        const __m512 swapped = _mm512_permute_ps(a, 0xB1); /* (im, re) pairs */
        _mm512_mask_storeu_ps(f + 2 * i, l, _mm512_fmaddsub_ps(a, re, _mm512_mul_ps(swapped, im)));
    }
}

/*
 * Conversion loops: whole vectors unmasked, then one masked tail (masked loads and stores on
 * every vector cost these streaming loops about a quarter of their speed). ONE(x, l) converts
 * the 16 values at x with lane mask l (all ones outside the tail).
 */
#define CONVERT_LOOP(n, ONE)                                                                       \
    do {                                                                                           \
        int64_t x = 0;                                                                             \
        for (; x + 16 <= (n); x += 16)                                                             \
            ONE(x, (__mmask16)0xFFFF, false);                                                      \
        if (x < (n)) ONE(x, lanes((n)-x), true);                                                   \
    } while (0)

static inline __m512 load16(const float *p, __mmask16 l, bool masked)
{
    return masked ? _mm512_maskz_loadu_ps(l, p) : _mm512_loadu_ps(p);
}

static void store_u8_avx512(const float *in, uint8_t *out, int64_t n)
{
    const __m512 hi = _mm512_set1_ps(255.0f);
#define U8_ONE(x, l, masked)                                                                       \
    do {                                                                                           \
        const __m128i b = _mm512_cvtepi32_epi8(round_clamped(load16(in + (x), l, masked), hi));    \
        if (masked)                                                                                \
            _mm_mask_storeu_epi8(out + (x), l, b);                                                 \
        else                                                                                       \
            _mm_storeu_si128((__m128i *)(out + (x)), b);                                           \
    } while (0)
    CONVERT_LOOP(n, U8_ONE);
#undef U8_ONE
}

static void store_u16_avx512(const float *in, uint16_t *out, int64_t n)
{
    const __m512 hi = _mm512_set1_ps(65535.0f);
#define U16_ONE(x, l, masked)                                                                      \
    do {                                                                                           \
        const __m256i w = _mm512_cvtepi32_epi16(round_clamped(load16(in + (x), l, masked), hi));   \
        if (masked)                                                                                \
            _mm256_mask_storeu_epi16(out + (x), l, w);                                             \
        else                                                                                       \
            _mm256_storeu_si256((__m256i *)(out + (x)), w);                                        \
    } while (0)
    CONVERT_LOOP(n, U16_ONE);
#undef U16_ONE
}

/* ---- f16 / bf16: the AVX2 set's conversions, 16 lanes wide (same instructions, EVEX) ---- */

static inline __m256i load16_u16(const uint16_t *p, __mmask16 l, bool masked)
{
    return masked ? _mm256_maskz_loadu_epi16(l, p) : _mm256_loadu_si256((const __m256i *)p);
}

static inline void store16(float *p, __m512 v, __mmask16 l, bool masked)
{
    if (masked)
        _mm512_mask_storeu_ps(p, l, v);
    else
        _mm512_storeu_ps(p, v);
}

static inline void store16_u16(uint16_t *p, __m256i v, __mmask16 l, bool masked)
{
    if (masked)
        _mm256_mask_storeu_epi16(p, l, v);
    else
        _mm256_storeu_si256((__m256i *)p, v);
}

static void load_f16_avx512(const uint16_t *in, float *out, int64_t n)
{
#define F16_IN(x, l, masked)                                                                       \
    store16(out + (x), _mm512_cvtph_ps(load16_u16(in + (x), l, masked)), l, masked)
    CONVERT_LOOP(n, F16_IN);
#undef F16_IN
}

static void load_u8_avx512(const uint8_t *in, float *out, int64_t n)
{
#define U8_IN(x, l, masked)                                                                        \
    store16(out + (x), load_row16(NULL, in + (x), LUMEN_ROW_U8, l, masked), l, masked)
    CONVERT_LOOP(n, U8_IN);
#undef U8_IN
}

static void load_u16_avx512(const uint16_t *in, float *out, int64_t n)
{
#define U16_IN(x, l, masked)                                                                       \
    store16(out + (x), load_row16(NULL, in + (x), LUMEN_ROW_U16, l, masked), l, masked)
    CONVERT_LOOP(n, U16_IN);
#undef U16_IN
}

static void load_bf16_avx512(const uint16_t *in, float *out, int64_t n)
{
#define BF16_IN(x, l, masked)                                                                      \
    store16(out + (x), bf16_widen(load16_u16(in + (x), l, masked)), l, masked)
    CONVERT_LOOP(n, BF16_IN);
#undef BF16_IN
}

/* vcvtps2ph with an immediate rounding mode: nearest even whatever MXCSR says (as the AVX2
 * set, so lumen_f32_to_f16 bit for bit: test_half.c checks every ISA). */
static void store_f16_avx512(const float *in, uint16_t *out, int64_t n)
{
#define F16_OUT(x, l, masked)                                                                      \
    store16_u16(out + (x),                                                                         \
                _mm512_cvtps_ph(load16(in + (x), l, masked), _MM_FROUND_TO_NEAREST_INT), l,        \
                masked)
    CONVERT_LOOP(n, F16_OUT);
#undef F16_OUT
}

static void store_bf16_avx512(const float *in, uint16_t *out, int64_t n)
{
#define BF16_OUT(x, l, masked)                                                                     \
    store16_u16(out + (x), _mm512_cvtepi32_epi16(bf16_round(load16(in + (x), l, masked))), l,      \
                masked)
    CONVERT_LOOP(n, BF16_OUT);
#undef BF16_OUT
}

const lumen_row_kernels lumen_row_kernels_avx512 = {
    .isa = "avx512",
    .direct_rows = direct_rows_avx512,
    .direct_rows_max = 4,
    .direct_rows_half = direct_rows_half_avx512,
    .hfilter = hfilter_avx512,
    .vfilter = vfilter_avx512,
    .vfilter4 = vfilter4_avx512,
    .hfilter_half = hfilter_half_avx512,
    .vfilter_half = vfilter_half_avx512,
    .vfilter4_half = vfilter4_half_avx512,
    .max_abs = max_abs_avx512,
    .complex_mul = complex_mul_avx512,
    .store_u8 = store_u8_avx512,
    .store_u16 = store_u16_avx512,
    .load_f16 = load_f16_avx512,
    .load_bf16 = load_bf16_avx512,
    .load_u8 = load_u8_avx512,
    .load_u16 = load_u16_avx512,
    .store_f16 = store_f16_avx512,
    .store_bf16 = store_bf16_avx512,
};
