/*
 * Shared helpers of lumen's C tests (cmocka): engines, deterministic data,
 * image layouts, the tolerance rule, comparisons and an independent oracle.
 *
 * ENGINES. Every op can run three ways through the public API:
 *   TS_REF      lumen_context_set_simd(ctx, 0): the scalar reference (double accumulation);
 *   TS_GENERIC  the fast tiled engine with the portable row kernels (the test clears the
 *               context's cpu_avx2 flag from src/core/internal.h, so this path is tested
 *               on AVX2 machines too);
 *   TS_AVX2     the fast engine with the AVX2+FMA row kernels (skipped without AVX2+FMA;
 *               the test clears cpu_avx512 so the AVX-512 kernels stay out);
 *   TS_AVX512   the fast engine with the AVX-512 row kernels (skipped without AVX-512).
 * ts_check() runs the reference and every fast engine and compares them.
 *
 * TOLERANCES -- the one table is tolerances.h (its constants and reasons, and the bounds of
 * the fast Gaussian and of conv); the filter rule that ts_check and ts_compare apply:
 *
 *   dst f32   |fast - ref| <= TS_F32_REL * S * R + TS_F32_ABS
 *             S: sum of |kernel taps| (separable: sum|kx| * sum|ky| * |scale|; Gaussian
 *                and normalised box: 1; plain box: kw*kh),
 *             R: largest |value| of the source data and, for the constant border, of the
 *                border value.
 *             NaN must meet NaN and an infinity the same infinity.
 *   dst u8    Let r be the reference's unrounded result (the reference run once more into
 *   dst u16   an f32 dst), t the f32 tolerance above and Q(v) round-to-nearest-even then
 *             saturate (NaN -> 0). The fast result must lie in [Q(r - t), Q(r + t)]: it
 *             equals Q(r) except where r lies within t of a .5 rounding boundary, where it
 *             may be one unit off. The reference's own integer output must equal Q(r).
 *   dst f16   The same window, Q rounding to f16 / bf16 (nearest even; NaN stays NaN, f16
 *   dst bf16  overflows to inf): a half result is the f32 result rounded once, so it may be
 *             one half-ulp step off only where r lies within t of a rounding boundary.
 *   oracle    The independent oracle (double, OpenCV's borderInterpolate loop) and the
 *             reference's unrounded result obey the same f32 rule.
 */
#ifndef LUMEN_TEST_SUPPORT_H
#define LUMEN_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four headers it needs */

#include <lumen.h>
#include <stdbool.h>

#include "tolerances.h" /* TS_F32_REL, TS_F32_ABS and the rest of the table */

#define TS_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- engines ------------------------------------------------------------ */

typedef enum ts_engine { TS_REF, TS_GENERIC, TS_AVX2, TS_AVX512, TS_ENGINE_COUNT } ts_engine;

const char *ts_engine_name(ts_engine e);
/* A context running engine e with the given threads; NULL if e is not available here. */
lumen_context *ts_context(ts_engine e, int threads);
/* The run_info.isa string engine e reports. */
const char *ts_engine_isa(ts_engine e);

/* ---- deterministic data ------------------------------------------------- */

typedef struct ts_rng {
    uint64_t s;
} ts_rng;

ts_rng ts_rng_make(uint64_t seed);
uint32_t ts_rng_u32(ts_rng *r);
/* Uniform in [lo, hi). */
double ts_rng_uniform(ts_rng *r, double lo, double hi);
/* n taps uniform in [-0.5, 1), scaled to sum 1 (positive-leaning, so u8 results stay in range). */
void ts_random_kernel(float *k, int n, uint64_t seed);

/* ---- images ------------------------------------------------------------- */

typedef enum ts_layout {
    TS_PLANAR,      /* NCHW contiguous */
    TS_INTERLEAVED, /* NHWC contiguous */
    TS_STRIDED,     /* planar window inside a padded buffer (rows, planes and images padded) */
    TS_FLIPPED,     /* planar with negative strides in c, h and w */
    TS_BATCH,       /* planar with a gap between images (used with n = 2) */
    TS_STRIDED_HWC, /* interleaved window inside a padded buffer (rows and images padded) */
    TS_FLIPPED_HWC, /* interleaved, rows bottom-up (negative row stride) */
    TS_LAYOUT_COUNT
} ts_layout;

const char *ts_layout_name(ts_layout l);
/* The (n, c) a layout is tested with by default: planar 1x1, interleaved 1x3, strided 1x2,
 * flipped 1x2, batch 2x2, strided-hwc 2x4, flipped-hwc 1x2. */
void ts_layout_shape(ts_layout l, int64_t *n, int64_t *c);

/* A view and the buffer it lives in; buffer bytes outside the view hold TS_GUARD_BYTE. */
typedef struct ts_image {
    lumen_image v;
    unsigned char *buf;
    size_t elems, es;
    unsigned char *inside; /* per buffer element: 1 where the view lies */
} ts_image;

#define TS_GUARD_BYTE 0xA5

void ts_image_alloc(ts_image *im, ts_layout l, lumen_dtype t, int64_t n, int64_t c, int64_t h,
                    int64_t w);
void ts_image_free(ts_image *im);
/* u8: 0..255, u16: 0..65535, f32: [-64, 192); in (b, c, y, x) order from seed. */
void ts_image_fill_random(ts_image *im, uint64_t seed);
/* Sets every byte of every view element to `byte`. */
void ts_image_fill_bytes(ts_image *im, unsigned char byte);
/* True if the bytes outside the view still hold TS_GUARD_BYTE; msg names the first bad one. */
bool ts_guards_intact(const ts_image *im, char *msg, size_t len);

/* True if word occurs in msg as a whole identifier (error messages name their argument). */
bool ts_names(const char *msg, const char *word);

double ts_get(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x);
void ts_set(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x, double v);
/* Largest |value| in the view (NaN and Inf skipped). */
double ts_absmax(const lumen_image *im);

/* ---- tolerance and comparison ------------------------------------------- */

/* The f32 bound of the table above. */
double ts_f32_tol(double ksum, double range);
/* Round to nearest even and saturate to dtype t (identity for f32; f16/bf16: rounded to it). */
double ts_quantize(double v, lumen_dtype t);

/*
 * Walks got and want element by element with their own strides. dst f32: the f32 rule with
 * tolerance tol. dst u8/u16: `exact` (f32 view, same shape) holds the reference's unrounded
 * values and got must lie in [Q(exact - tol), Q(exact + tol)]; want is only reported.
 * Returns the number of bad elements; msg describes the first (b, c, y, x, values).
 */
int64_t ts_compare(const lumen_image *got, const lumen_image *want, const lumen_image *exact,
                   double tol, char *msg, size_t len);
/* Same values exactly (NaN equals NaN); returns the bad count, msg as above. */
int64_t ts_compare_exact(const lumen_image *got, const lumen_image *want, char *msg, size_t len);
/* Fails the test (with label) unless got equals want exactly. */
void ts_assert_equal_images(const lumen_image *got, const lumen_image *want, const char *label);

/* ---- ops ---------------------------------------------------------------- */

typedef enum ts_op_kind { TS_OP_FILTER2D, TS_OP_SEP, TS_OP_GAUSSIAN, TS_OP_BOX } ts_op_kind;

/* One call of one op; opt.border and opt.border_value apply to every op; opt.method to
 * filter2d, sep and Gaussian (a Gaussian with a method other than AUTO runs through
 * lumen_gaussian_blur_ex, precision EXACT). */
typedef struct ts_op {
    ts_op_kind kind;
    int kw, kh;              /* filter2d, sep, box sizes; Gaussian ksize_x, ksize_y */
    const float *kernel;     /* filter2d: kh x kw row-major */
    const float *kx, *ky;    /* sep */
    double sigma_x, sigma_y; /* Gaussian */
    int normalize;           /* box */
    lumen_filter_options opt;
} ts_op;

ts_op ts_op_filter2d(const float *k, int kw, int kh);
ts_op ts_op_sep(const float *kx, int kw, const float *ky, int kh);
ts_op ts_op_gaussian(int ksize_x, int ksize_y, double sigma_x, double sigma_y);
ts_op ts_op_box(int kw, int kh, int normalize);
/* Returns op with border b (and value v for the constant border). */
ts_op ts_with_border(ts_op op, lumen_border b, float v);

lumen_status ts_op_run(lumen_context *ctx, const ts_op *op, const lumen_image *src,
                       const lumen_image *dst, lumen_run_info *info);
/* S of the tolerance table for this op on source dtype t. */
double ts_op_ksum(const ts_op *op, lumen_dtype t);
/* "filter2d 3x3 anchor(-1,-1) reflect" etc. */
const char *ts_op_describe(const ts_op *op, char *buf, size_t len);

/* ---- fast vs reference vs oracle ----------------------------------------- */

typedef struct ts_case {
    ts_layout src_layout, dst_layout;
    lumen_dtype src_dtype, dst_dtype;
    int64_t n, c, h, w;
    int threads;
    uint64_t seed;
    /* Source data; NULL: ts_image_fill_random(src, seed). */
    void (*fill)(ts_image *src, uint64_t seed);
    bool no_oracle; /* skip the (slow) independent oracle */
    /* AUTO (0, the default): not checked; otherwise every engine's run_info.method must be
     * this (the reference reports the method asked for, and runs its one definition). */
    lumen_method want_method;
} ts_case;

/* Layout l for src and dst with its default (n, c). */
ts_case ts_case_make(ts_layout l, lumen_dtype src, lumen_dtype dst, int64_t h, int64_t w,
                     int threads, uint64_t seed);

/*
 * The main check: runs op on the reference (into the dst layout and, for integer dsts, into
 * f32 as well), checks it against the oracle, then runs every fast engine and compares with
 * the reference by the tolerance table. Also checks: status OK, run_info, no byte outside a
 * dst view written, src untouched. Fails the current test with a full description.
 */
void ts_check(const ts_op *op, const ts_case *cs);

/*
 * Runs op on every engine (threads 1 and 2) on one h x w plane whose values (row-major) are
 * `src` in dtype t, into an f32 dst, and checks each output against want: |got - want| <= tol,
 * NaN meets NaN, an infinity the same infinity. `what` labels failures.
 */
void ts_expect(const ts_op *op, lumen_dtype t, int64_t h, int64_t w, const double *src,
               const double *want, double tol, const char *what);

/* OpenCV's borderInterpolate (a loop, not lumen's modulo arithmetic); -1: the constant. */
int64_t ts_border_interp(int64_t p, int64_t len, lumen_border b);
/*
 * The oracle: the dense correlation kernel of op (flipped for convolution, sep/box/Gaussian
 * expanded as an outer product) applied in double with ts_border_interp. Returns n*c*h*w
 * values in NCHW order (free with free()).
 */
double *ts_oracle(const ts_op *op, const lumen_image *src);

#endif
