/* The one tolerance table (see tolerances.h for the rules and the constants' reasons). */
#include "test_support.h"

#include <stddef.h>

static const ts_tolerance table[] = {
    {TS_TOL_FILTER, LUMEN_F32, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 0,
     "f32 sums in any order: ~80 ulps of sum|k| x max|x|"},
    {TS_TOL_FILTER, LUMEN_U8, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding: one level off only within it of a .5 tie"},
    {TS_TOL_FILTER, LUMEN_U16, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding: one level off only within it of a .5 tie"},
    /* f16 / bf16 dst: the f32 bound, then the store's one rounding to nearest even. The
     * window [Q(r - t), Q(r + t)] holds a half result to the f32 result rounded once: one
     * half step off (2^-11 relative for f16, 2^-8 for bf16) only where r lies within t of a
     * rounding boundary. The store's own error against exact arithmetic (<= 2^-11 or 2^-8 of
     * |r|, the accuracy table of docs/semantics.md) is what halves cost; it is not slack here. */
    {TS_TOL_FILTER, LUMEN_F16, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding to f16: one half step off only within it of a boundary"},
    {TS_TOL_FILTER, LUMEN_BF16, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding to bf16: one step off only within it of a boundary"},
    /* The FFT keeps the filter bound: test_fft.c holds it there (measured ~1e-6 of S x R), so
     * a looser FFT row would let a real FFT regression through here unnoticed. */
    {TS_TOL_FFT, LUMEN_F32, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 0,
     "FFT round trip: measured ~1e-6 of sum|k| x max|x|, held to the filter bound"},
    {TS_TOL_FFT, LUMEN_U8, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "FFT round trip, then rounding: one level off only near a .5 tie"},
    {TS_TOL_FFT, LUMEN_U16, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "FFT round trip, then rounding: one level off only near a .5 tie"},
    {TS_TOL_FFT, LUMEN_F16, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "FFT round trip, then rounding to f16: one half step off only near a boundary"},
    {TS_TOL_FFT, LUMEN_BF16, TS_SCALE_KSUM_MAX, TS_F32_REL, TS_F32_ABS, 1,
     "FFT round trip, then rounding to bf16: one step off only near a boundary"},
    {TS_TOL_GAUSS_FAST, LUMEN_F32, TS_SCALE_RANGE, TS_GAUSS_FAST_REL, 0.0, 0,
     "docs/gaussian-fast.md: |fast - exact| <= 1e-3 x range"},
    {TS_TOL_GAUSS_FAST, LUMEN_U8, TS_SCALE_RANGE, TS_GAUSS_FAST_REL, 0.0, 1,
     "docs/gaussian-fast.md: <= 1 + 1e-3 x range once rounded"},
    {TS_TOL_GAUSS_FAST, LUMEN_U16, TS_SCALE_RANGE, TS_GAUSS_FAST_REL, 0.0, 1,
     "docs/gaussian-fast.md: <= 1 + 1e-3 x range once rounded"},
    {TS_TOL_GAUSS_FAST, LUMEN_F16, TS_SCALE_RANGE, TS_GAUSS_FAST_REL, 0.0, 1,
     "docs/gaussian-fast.md's 1e-3 x range, then rounding to f16"},
    {TS_TOL_GAUSS_FAST, LUMEN_BF16, TS_SCALE_RANGE, TS_GAUSS_FAST_REL, 0.0, 1,
     "docs/gaussian-fast.md's 1e-3 x range, then rounding to bf16"},
    {TS_TOL_CONV, LUMEN_F32, TS_SCALE_TERMS, TS_CONV_REL, TS_CONV_ABS, 0,
     "relative 1e-6 of sum|x*w| + |bias| (issue 6), for every conv path"},
    /* halves: widened exactly, the f32 conv, one rounding of y (as the filters' rows) */
    {TS_TOL_CONV, LUMEN_F16, TS_SCALE_TERMS, TS_CONV_REL, TS_CONV_ABS, 1,
     "the f32 conv bound, then rounding y to f16: one half step off only near a boundary"},
    {TS_TOL_CONV, LUMEN_BF16, TS_SCALE_TERMS, TS_CONV_REL, TS_CONV_ABS, 1,
     "the f32 conv bound, then rounding y to bf16: one step off only near a boundary"},
    /* Resize: weights sum to 1 (cubic and Lanczos lobes give sum|w| up to ~1.5), so the f32
     * bound is relative to the data's range. */
    {TS_TOL_RESIZE, LUMEN_F32, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 0,
     "f32 sums of taps whose weights sum to 1: 1e-5 of the data's range"},
    {TS_TOL_RESIZE, LUMEN_U8, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding: one level off only within it of a .5 tie"},
    {TS_TOL_RESIZE, LUMEN_U16, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding: one level off only within it of a .5 tie"},
    {TS_TOL_RESIZE, LUMEN_F16, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding to f16: one half step off only near a boundary"},
    {TS_TOL_RESIZE, LUMEN_BF16, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding to bf16: one step off only near a boundary"},
    /* Pillow's 8-bit rule is integer arithmetic (its 22-bit weights, bytes between the
     * passes): every device must give the reference's bytes exactly. */
    {TS_TOL_RESIZE_PILLOW_U8, LUMEN_U8, TS_SCALE_RANGE, 0.0, 0.0, 1,
     "Pillow's 8-bit rule is integer arithmetic: the reference's own bytes exactly"},
    {TS_TOL_RESIZE_PILLOW_U8, LUMEN_U16, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding: one level off only within it of a .5 tie"},
    {TS_TOL_RESIZE_PILLOW_U8, LUMEN_F32, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 0,
     "f32 sums of taps whose weights sum to 1: 1e-5 of the data's range"},
    {TS_TOL_RESIZE_PILLOW_U8, LUMEN_F16, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding to f16: one half step off only near a boundary"},
    {TS_TOL_RESIZE_PILLOW_U8, LUMEN_BF16, TS_SCALE_RANGE, TS_F32_REL, TS_F32_ABS, 1,
     "the f32 bound, then rounding to bf16: one step off only near a boundary"},
};

const ts_tolerance *ts_tolerance_of(ts_tol_kind kind, lumen_dtype dtype)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].kind == kind && table[i].dtype == dtype) return &table[i];
    fail_msg("tolerance table: no row for %s on %s", ts_tol_kind_name(kind),
             lumen_dtype_name(dtype));
    return NULL;
}

const char *ts_tol_kind_name(ts_tol_kind kind)
{
    static const char *names[] = {"filter", "fft",    "gauss-fast",
                                  "conv",   "resize", "resize-pillow-u8"};
    return (unsigned)kind < TS_TOL_KIND_COUNT ? names[kind] : "?";
}

double ts_tolerance_bound(const ts_tolerance *t, double scale)
{
    return t->rel * scale + t->abs;
}
