/*
 * The one tolerance table of lumen's C tests: how far a result may lie from the scalar
 * reference (or from an oracle a test computes itself), per kind of computation and dtype.
 * The per-op tests and the cross-backend test (test_backend_ops.c) take their bounds from here;
 * a bound that changes changes here, with its reason.
 *
 * A bound is t = rel * scale + abs, where scale is one of:
 *   KSUM_MAX  S * R. S: sum of |kernel taps| (separable: sum|kx| * sum|ky|; Gaussian and
 *             normalised box: 1; plain box: kw*kh). R: largest |value| of the source and, for
 *             the constant border, of the border value. A filter output is a sum of S-weighted
 *             values of magnitude <= R, so S * R bounds every partial sum: f32 rounding of any
 *             summation order stays within a few ulps of it.
 *   RANGE     max - min of the source (and the border value, for constant): the fast
 *             Gaussian's error is a fraction of the data's contrast (docs/gaussian-fast.md).
 *   TERMS     per output element, the sum of |x * w| over its taps plus |bias| (conv): the
 *             condition-aware form of a relative error, meaningful when terms cancel.
 *
 * f32 dst:   |got - want| <= t; NaN must meet NaN and an infinity the same infinity.
 * u8/u16 dst (rounding = 1): let r be the reference's unrounded result (the reference run once
 *            more into an f32 dst) and Q round to nearest even then saturate. got must lie in
 *            [Q(r - t), Q(r + t)]: it equals Q(r) except where r lies within t of a .5 rounding
 *            boundary, where a different summation order may legitimately round the other way
 *            (one level off). For the fast Gaussian t is large (1e-3 of the range), so there
 *            the window is the documented "1 + 1e-3 x range" (rounded result).
 * f16/bf16 dst (rounding = 1): the same window with Q = round to nearest even into f16 / bf16
 *            (NaN stays NaN). A half result is the f32 result on the same (exactly widened)
 *            values, rounded once on store; the store errs by at most half an ulp, 2^-11 of
 *            the value for f16 (11 significant bits) and 2^-8 for bf16 (8 bits). That error is
 *            the format's, not the op's, so the window holds it exactly instead of widening t:
 *            got may be one half step off Q(r) only where r lies within t of a rounding
 *            boundary. The rows reuse each kind's f32 rel for t. (Against float64, the bound
 *            is t + 2^-11 |r| or t + 2^-8 |r|: tests/python/tolerances.py, half_atol.)
 */
#ifndef LUMEN_TEST_TOLERANCES_H
#define LUMEN_TEST_TOLERANCES_H

#include <lumen.h>

/* Filters (direct, separable, FFT, box, exact Gaussian), f32 arithmetic: 1e-5 is ~80 f32 ulps
 * of S * R, room for any summation order and the FFT's round trip (test_fft.c measures the FFT
 * at ~1e-6 of S * R up to 201x201 kernels) and far below any wrong tap or border pixel, which
 * errs by a whole term. The absolute part only keeps t > 0 for all-zero data. */
#define TS_F32_REL 1e-5
#define TS_F32_ABS 1e-12

/* The fast (recursive) Gaussian against the exact blur with ksize round(8 sigma + 1) | 1:
 * docs/gaussian-fast.md's contract (measured worst 5.1e-4 of the range for the method, plus
 * pads and f32 rounding). */
#define TS_GAUSS_FAST_REL 1e-3

/* conv2d / conv_transpose2d against a float64 sum: the library's bound for every conv path
 * (issue 6: relative error 1e-6). The reference accumulates in double and rounds once
 * (2^-24 of TERMS), so it meets this with room; fast paths and devices are held to it too. */
#define TS_CONV_REL 1e-6
/* film_layer_sums (test_film_layer_sum.c): sums in double of f32 terms, against the same sum
 * taken term by term; bound relative to (1 + |sum E| x taps), far above double's rounding
 * over these few thousand terms, far below any missed or doubled pixel. */
#define TS_FILM_SUM_REL 1e-10
#define TS_CONV_ABS 1e-30

/* What a bound is relative to (see above). */
typedef enum ts_tol_scale { TS_SCALE_KSUM_MAX, TS_SCALE_RANGE, TS_SCALE_TERMS } ts_tol_scale;

/* The kinds of computation that carry their own bound. */
typedef enum ts_tol_kind {
    TS_TOL_FILTER,     /* direct / separable sums of taps: filter2d, sep_filter2d, box, Gaussian */
    TS_TOL_FFT,        /* the FFT method of filter2d, sep_filter2d and the exact Gaussian */
    TS_TOL_GAUSS_FAST, /* the recursive Gaussian vs the exact one */
    TS_TOL_CONV,       /* conv2d and conv_transpose2d */
    TS_TOL_RESIZE,     /* resize: f32 sums of at most a few dozen taps of weights summing to 1 */
    TS_TOL_RESIZE_PILLOW_U8, /* resize, Pillow's 8-bit rule: rounded between the passes */
    TS_TOL_KIND_COUNT
} ts_tol_kind;

typedef struct ts_tolerance {
    ts_tol_kind kind;
    lumen_dtype dtype; /* of the destination */
    ts_tol_scale scale;
    double rel, abs;
    int rounding; /* integer dst: [Q(r - t), Q(r + t)] as above */
    const char *why;
} ts_tolerance;

/* The row for (kind, dst dtype); fails the current test if the table has none (conv on u8). */
const ts_tolerance *ts_tolerance_of(ts_tol_kind kind, lumen_dtype dtype);
const char *ts_tol_kind_name(ts_tol_kind kind);
/* t = rel * scale + abs for that row. */
double ts_tolerance_bound(const ts_tolerance *t, double scale);

#endif
