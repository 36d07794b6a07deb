/*
 * Row kernels of the fast CPU path: the inner loops, one set per ISA. The
 * engine (engine.c) feeds them rows of f32 that are already padded by the
 * border rule, so they never branch on borders. Every input row is readable
 * LUMEN_ROW_SLACK floats past its logical end; outputs are written exactly.
 */
#ifndef LUMEN_CPU_ROW_KERNELS_H
#define LUMEN_CPU_ROW_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#define LUMEN_ROW_SLACK 64

/* How a row's values are stored, for the kernels that read or write rows of the image's own
 * dtype directly (halves widened exactly; u8/u16 converted exactly, outputs rounded to nearest
 * even and saturated as store_u8/store_u16 do). */
typedef enum lumen_row_fmt {
    LUMEN_ROW_F32,
    LUMEN_ROW_F16,
    LUMEN_ROW_BF16,
    LUMEN_ROW_U8,
    LUMEN_ROW_U16
} lumen_row_fmt;

/* Bytes per value of a row format. */
static inline int lumen_row_fmt_size(lumen_row_fmt f)
{
    return f == LUMEN_ROW_F32 ? 4 : f == LUMEN_ROW_U8 ? 1 : 2;
}

/* A row of format f advanced by off values. */
static inline const void *lumen_row_at(const void *row, int64_t off, lumen_row_fmt f)
{
    return (const char *)row + off * lumen_row_fmt_size(f);
}
/* The (input, output) format pairs the SIMD sets instantiate direct_rows_half for: each set's
 * dispatcher expands this one list, so they cannot disagree on which pairs are fused. */
#define LUMEN_ROW_HALF_PAIRS(X)                                                                    \
    X(LUMEN_ROW_F16, LUMEN_ROW_F16)                                                                \
    X(LUMEN_ROW_BF16, LUMEN_ROW_BF16)                                                              \
    X(LUMEN_ROW_F32, LUMEN_ROW_F16)                                                                \
    X(LUMEN_ROW_F32, LUMEN_ROW_BF16)                                                               \
    X(LUMEN_ROW_F16, LUMEN_ROW_F32)                                                                \
    X(LUMEN_ROW_BF16, LUMEN_ROW_F32)                                                               \
    X(LUMEN_ROW_F16, LUMEN_ROW_BF16)                                                               \
    X(LUMEN_ROW_BF16, LUMEN_ROW_F16)                                                               \
    X(LUMEN_ROW_U8, LUMEN_ROW_U8)                                                                  \
    X(LUMEN_ROW_U16, LUMEN_ROW_U16)                                                                \
    X(LUMEN_ROW_F32, LUMEN_ROW_U8)                                                                 \
    X(LUMEN_ROW_F32, LUMEN_ROW_U16)                                                                \
    X(LUMEN_ROW_U8, LUMEN_ROW_F32)                                                                 \
    X(LUMEN_ROW_U16, LUMEN_ROW_F32)
/* Whether direct_rows_half has an instance for (hin, hout): a pair of LUMEN_ROW_HALF_PAIRS, or
 * f32 to f32. */
static inline bool lumen_row_pair_fused(lumen_row_fmt hin, lumen_row_fmt hout)
{
#define LUMEN_ROW_PAIR_IS(I, O) || (hin == (I) && hout == (O))
    return (hin == LUMEN_ROW_F32 && hout == LUMEN_ROW_F32) LUMEN_ROW_HALF_PAIRS(LUMEN_ROW_PAIR_IS);
#undef LUMEN_ROW_PAIR_IS
}

/* Longest row kernel hfilter_half takes (its tap table lives on the stack). */
#define LUMEN_HFILTER_HALF_MAX 4096

typedef struct lumen_row_kernels {
    const char *isa;
    /*
     * nout output rows at once (1 <= nout <= direct_rows_max), sharing their loads:
     * out[o][x] = sum_i sum_j k[i*kw + j] * rows[o + i][x + j*ts], 0 <= x < n, from the
     * kh + nout - 1 rows given. The tap stride ts is the channel count of interleaved rows
     * (1 for planar ones). Every set sums i ascending, then j ascending, lane by lane, so all
     * sets and all nout give the same bits.
     */
    void (*direct_rows)(const float *const *rows, const float *k, int kw, int kh, int ts,
                        float *const *out, int nout, int64_t n);
    int direct_rows_max; /* rows per step the engine should ask for */
    /*
     * direct_rows with f16/bf16/u8/u16 storage fused into its loads and stores, so that such
     * images take no conversion pass through a buffer (those passes cost as much as the
     * filter): row r is read from half[r] (format hin, converted exactly) where half is
     * non-NULL and half[r] is, else from rows[r] (f32); out[o] gets format hout (halves rounded
     * to nearest even, as store_f16/store_bf16; u8/u16 as store_u8/store_u16). The sums are
     * direct_rows', so the bits are those of converting in, direct_rows, converting out. NULL
     * in the generic set. The pairs are LUMEN_ROW_HALF_PAIRS.
     */
    void (*direct_rows_half)(const float *const *rows, const void *const *half, lumen_row_fmt hin,
                             const float *k, int kw, int kh, int ts, void *const *out,
                             lumen_row_fmt hout, int nout, int64_t n);
    /* out[x] = sum_j k[j] * in[x + j*ts]; symmetric: k[j] == k[kw-1-j] */
    void (*hfilter)(const float *in, const float *k, int kw, int ts, bool symmetric, float *out,
                    int64_t n);
    /* out[x] = scale * sum_i k[i] * rows[i][x] */
    void (*vfilter)(const float *const *rows, const float *k, int kh, bool symmetric, float scale,
                    float *out, int64_t n);
    /*
     * Four column-pass rows at once: out[j][x] = scale * sum_i k[i] * rows[i + j][x], j < 4,
     * from kh + 3 rows; each row loaded once serves four outputs. Taps are not paired, so
     * this is vfilter's unpaired order (symmetric = false), lane for lane.
     */
    void (*vfilter4)(const float *const *rows, const float *k, int kh, float scale,
                     float *const *out, int64_t n);
    /*
     * The separable passes with f16/bf16/u8/u16 storage fused in (NULL in the generic set): the row
     * pass reading a half row in place (format hin, widened exactly), the column passes
     * writing format hout (halves rounded to nearest even). The sums are hfilter's, vfilter's
     * and vfilter4's, so the bits are those of converting in, filtering, converting out.
     * hfilter_half takes kw <= LUMEN_HFILTER_HALF_MAX.
     */
    void (*hfilter_half)(const void *in, lumen_row_fmt hin, const float *k, int kw, int ts,
                         bool symmetric, float *out, int64_t n);
    void (*vfilter_half)(const float *const *rows, const float *k, int kh, bool symmetric,
                         float scale, void *out, lumen_row_fmt hout, int64_t n);
    void (*vfilter4_half)(const float *const *rows, const float *k, int kh, float scale,
                          void *const *out, lumen_row_fmt hout, int64_t n);
    /* Largest |in[i]|, or NaN when any value is NaN or infinite. */
    float (*max_abs)(const float *in, int64_t n);
    /* f[i] *= s[i] for n complex numbers stored (re, im) interleaved. */
    void (*complex_mul)(float *f, const float *s, int64_t n);
    /* contiguous f32 -> u8 / u16, rounding to nearest even and saturating */
    void (*store_u8)(const float *in, uint8_t *out, int64_t n);
    void (*store_u16)(const float *in, uint16_t *out, int64_t n);
    /* contiguous f16 / bf16 <-> f32 with core/semantics.h's conversions, bit for bit: loads
     * exact, stores rounded to nearest even (the AVX2 set uses F16C for f16) */
    void (*load_f16)(const uint16_t *in, float *out, int64_t n);
    void (*load_bf16)(const uint16_t *in, float *out, int64_t n);
    /* contiguous u8 / u16 -> f32, exact */
    void (*load_u8)(const uint8_t *in, float *out, int64_t n);
    void (*load_u16)(const uint16_t *in, float *out, int64_t n);
    void (*store_f16)(const float *in, uint16_t *out, int64_t n);
    void (*store_bf16)(const float *in, uint16_t *out, int64_t n);
} lumen_row_kernels;

extern const lumen_row_kernels lumen_row_kernels_generic;
extern const lumen_row_kernels lumen_row_kernels_avx2;
extern const lumen_row_kernels lumen_row_kernels_avx512;

#endif
