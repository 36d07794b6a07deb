/*
 * Winograd F(m x m, 3 x 3) transforms, written once and compiled per tile size and ISA: the
 * includer defines WINO_M (2 or 4) and WINO_SUFFIX (e.g. f2_avx2) and includes this file once
 * per pair (conv_winograd.c for portable C, conv_winograd_avx2.c with -mavx2 -mfma).
 *
 * Every transform works on WINO_LANES tiles at once, one per vector lane, so the arithmetic is
 * plain fixed-length loops the compiler turns into full-width vector code; the matrices are
 * static constants whose zero and unit entries fold away after unrolling. ISO C mode keeps
 * -ffp-contract=off, so every ISA rounds the same way.
 */
#ifndef LUMEN_CONV_WINOGRAD_SHARED
#define LUMEN_CONV_WINOGRAD_SHARED

#include "conv.h"
#include <stdlib.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define WINO_LANES 16
/* Channels per block of the AVX-512 weight_rows: a tile of alpha^2 x 16 x 16 floats. */
#define WINO_CB 16

/* The tiles of one lane block: where each one's input patch and output block start. */
typedef struct wino_lanes {
    int64_t xoff[WINO_LANES]; /* x offset of (image, group's first channel, iy0, ix0) */
    int64_t yoff[WINO_LANES]; /* y offset of (image, group's first channel, oy0, ox0) */
    int32_t iy0[WINO_LANES], ix0[WINO_LANES];  /* input row, column of the patch's corner */
    int8_t rows[WINO_LANES], cols[WINO_LANES]; /* outputs inside y; 0 rows: a padding lane */
    bool inside;                               /* every lane's whole patch lies inside x */
} wino_lanes;

/* What the transforms need of x, y and the scratch layout. */
typedef struct wino_geom {
    const float *x;
    float *y;
    int64_t xs_c, xs_h, xs_w, ys_c, ys_h, ys_w;
    int64_t H, W;
    int64_t cg, kg; /* channels in and out per group */
    int64_t v_pos;  /* floats between transform positions in V */
    int64_t v_chan; /* floats between channels in V (the GEMM's nr) */
    int64_t m_pos;  /* floats between transform positions in M */
    int64_t m_row;  /* floats between output channels in M (tiles per item) */
    bool idx32;     /* every tap's offset from x fits an int32 (gather instructions) */
} wino_geom;

/* Input: channels [0, cg) of a lane block into V (position xi at v + xi*v_pos + c*v_chan). */
typedef void (*wino_input_fn)(const wino_geom *g, const wino_lanes *ln, float *v);
/* Output: channels [0, kg) of a lane block from M (m + xi*m_pos + k*m_row), plus bias. */
typedef void (*wino_output_fn)(const wino_geom *g, const wino_lanes *ln, const float *m,
                               const float *bias);
/* Weights: u[xi*u_pos + c*u_chan] = (G w_k[c] G^T)[xi] for the cg 3x3 kernels of one output
 * channel, computed in double and rounded once. */
typedef void (*wino_weight_fn)(const float *wk, int64_t ws_c, int64_t ws_h, int64_t ws_w,
                               int64_t cg, float *u, int64_t u_pos, int64_t u_chan);
/* The same transform with the lanes over output channels: for channels c < cg of the n <=
 * u_chan <= WINO_LANES kernels wk + j*ws_n, u[xi*u_pos + c*u_chan + j] = (G w_j[c] G^T)[xi]
 * for j < n and 0 for n <= j < u_chan, so one U sliver row (a panel's mr floats) is one
 * contiguous store. Per output the same operations as wino_weight_fn: the same bits. */
typedef void (*wino_weight_rows_fn)(const float *wk, int64_t ws_n, int64_t ws_c, int64_t ws_h,
                                    int64_t ws_w, int n, int64_t cg, float *u, int64_t u_pos,
                                    int64_t u_chan, bool stream);

#define WINO_DECLARE(sfx)                                                                          \
    void lumen_wino_input_##sfx(const wino_geom *g, const wino_lanes *ln, float *v);               \
    void lumen_wino_output_##sfx(const wino_geom *g, const wino_lanes *ln, const float *m,         \
                                 const float *bias);                                               \
    void lumen_wino_weight_##sfx(const float *wk, int64_t ws_c, int64_t ws_h, int64_t ws_w,        \
                                 int64_t cg, float *u, int64_t u_pos, int64_t u_chan);             \
    void lumen_wino_weight_rows_##sfx(const float *wk, int64_t ws_n, int64_t ws_c, int64_t ws_h,   \
                                      int64_t ws_w, int n, int64_t cg, float *u, int64_t u_pos,    \
                                      int64_t u_chan, bool stream);
WINO_DECLARE(f2_generic)
WINO_DECLARE(f4_generic)
WINO_DECLARE(f2_avx2)
WINO_DECLARE(f4_avx2)
WINO_DECLARE(f2_avx512)
WINO_DECLARE(f4_avx512)

#endif /* LUMEN_CONV_WINOGRAD_SHARED */

#ifdef WINO_M

#define WINO_CAT_(a, b) a##b
#define WINO_CAT(a, b) WINO_CAT_(a, b)
#define WINO_FN(name) WINO_CAT(lumen_wino_##name##_, WINO_SUFFIX)
#define WA (WINO_M + 2)
#define LN WINO_LANES
#define UNROLL _Pragma("GCC unroll 8")

/*
 * The matrices (Toom-Cook; the last point is infinity). F(2): points 0, 1, -1 (Lavin's).
 * F(4): points 0, 1, -1, 1/2, -2 rather than Lavin's 0, +-1, +-2: the output transform's
 * entries reach 8 either way, but these halve the measured worst error (docs/conv2d.md).
 */
#if WINO_M == 2
static const float WINO_CAT(BT_, WINO_SUFFIX)[WA][WA] = {
    {1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
static const double WINO_CAT(G_, WINO_SUFFIX)[WA][3] = {
    {1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const float WINO_CAT(AT_, WINO_SUFFIX)[WINO_M][WA] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
#elif WINO_M == 4
static const float WINO_CAT(BT_, WINO_SUFFIX)[WA][WA] = {
    {1, -1.5f, -2, 1.5f, 1, 0}, {0, -1, 0.5f, 2.5f, 1, 0},  {0, 1, -2.5f, 0.5f, 1, 0},
    {0, -2, -1, 2, 1, 0},       {0, 0.5f, -1, -0.5f, 1, 0}, {0, 1, -1.5f, -2, 1.5f, 1}};
static const double WINO_CAT(G_, WINO_SUFFIX)[WA][3] = {{1, 0, 0},
                                                        {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                                        {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                                                        {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                                        {1.0 / 15, -2.0 / 15, 4.0 / 15},
                                                        {0, 0, 1}};
static const float WINO_CAT(AT_, WINO_SUFFIX)[WINO_M][WA] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5f, -2, 0}, {0, 1, 1, 0.25f, 4, 0}, {0, 1, -1, 0.125f, -8, 1}};
#else
#error "WINO_M must be 2 or 4"
#endif
#define BT WINO_CAT(BT_, WINO_SUFFIX)
#define GM WINO_CAT(G_, WINO_SUFFIX)
#define AT WINO_CAT(AT_, WINO_SUFFIX)

/* acc[j] (+)= c * src[j] in type T: the first term stores, zero terms vanish, +-1 terms are adds.
 */
#define WINO_AXPY(T, acc, c, src, first)                                                           \
    do {                                                                                           \
        const double c_ = (c);                                                                     \
        if (c_ == 0.0) break;                                                                      \
        for (int j = 0; j < LN; j++) {                                                             \
            const T t_ = c_ == 1.0 ? (src)[j] : c_ == -1.0 ? -(src)[j] : (T)c_ * (src)[j];         \
            (acc)[j] = (first) ? t_ : (acc)[j] + t_;                                               \
        }                                                                                          \
        (first) = false;                                                                           \
    } while (0)

/* The alpha x alpha patches of a lane block for channel c into d[r][s][lane], zero outside x. */
static inline void WINO_CAT(gather_, WINO_SUFFIX)(const wino_geom *g, const wino_lanes *ln,
                                                  int64_t c, float d[WA][WA][LN])
{
    const float *xc = g->x + c * g->xs_c;
    if (ln->inside && g->xs_w == 1) {
        for (int j = 0; j < LN; j++) {
            const float *p = xc + ln->xoff[j];
            UNROLL for (int r = 0; r < WA; r++) UNROLL for (int s = 0; s < WA; s++) d[r][s][j] =
                p[r * g->xs_h + s];
        }
        return;
    }
    /* edge tiles: offsets stay integers until the tap is known to lie inside x */
    for (int j = 0; j < LN; j++) {
        const int64_t iy = ln->iy0[j], ix = ln->ix0[j];
        for (int r = 0; r < WA; r++) {
            const bool row_in = ln->rows[j] > 0 && iy + r >= 0 && iy + r < g->H;
            for (int s = 0; s < WA; s++)
                d[r][s][j] = row_in && ix + s >= 0 && ix + s < g->W
                                 ? xc[ln->xoff[j] + r * g->xs_h + s * g->xs_w]
                                 : 0.0f;
        }
    }
}

#if defined(__AVX512F__)
/* One masked 16-lane gather per tap instead of 16 scalar loads and stores: the index and the
 * mask of each tap (zero padding, padding lanes) are worked out once per lane block. */
#define TAPS WINO_CAT(wino_taps_, WINO_SUFFIX)
typedef struct TAPS {
    int32_t idx[WA][WA][LN];
    __mmask16 mask[WA][WA];
} TAPS;

static void WINO_CAT(taps_, WINO_SUFFIX)(const wino_geom *g, const wino_lanes *ln, TAPS *tp)
{
    for (int r = 0; r < WA; r++)
        for (int s = 0; s < WA; s++) {
            __mmask16 mk = 0;
            for (int j = 0; j < LN; j++) {
                const int64_t iy = ln->iy0[j] + r, ix = ln->ix0[j] + s;
                const bool in = ln->rows[j] > 0 && iy >= 0 && iy < g->H && ix >= 0 && ix < g->W;
                tp->idx[r][s][j] = in ? (int32_t)(ln->xoff[j] + r * g->xs_h + s * g->xs_w) : 0;
                mk |= (__mmask16)(in << j);
            }
            tp->mask[r][s] = mk;
        }
}

static inline void WINO_CAT(gather512_, WINO_SUFFIX)(const TAPS *tp, const float *xc,
                                                     float d[WA][WA][LN])
{
    UNROLL for (int r = 0; r < WA; r++) UNROLL for (int s = 0; s < WA; s++)
    {
        const __m512i ix = _mm512_loadu_si512(tp->idx[r][s]);
        _mm512_storeu_ps(d[r][s],
                         _mm512_mask_i32gather_ps(_mm512_setzero_ps(), tp->mask[r][s], ix, xc, 4));
    }
}

/* The patches of 16 tiles with dense rows (xs_w 1): per patch row one masked load of WA floats
 * per tile (the mask zeroes taps outside x and padding lanes, which are not read) and a 16 x 8
 * transpose (the 8 x 8 AVX transpose on both 256-bit halves, rows k and k + 8 paired in one
 * zmm), instead of WA masked gathers of 16 lanes. Same values as the gathers. */
#define PATCH_ROWS WINO_CAT(wino_patch_rows_, WINO_SUFFIX)
typedef struct PATCH_ROWS {
    int64_t off[WA][LN]; /* x offset of the row's first tap (0 where the mask is empty) */
    __mmask8 mask[WA][LN];
} PATCH_ROWS;

static void WINO_CAT(patch_rows_, WINO_SUFFIX)(const wino_geom *g, const wino_lanes *ln,
                                               PATCH_ROWS *pr)
{
    for (int j = 0; j < LN; j++) {
        unsigned cols = 0;
        for (int s = 0; s < WA; s++) {
            const int64_t ix = ln->ix0[j] + s;
            cols |= (unsigned)(ix >= 0 && ix < g->W) << s;
        }
        for (int r = 0; r < WA; r++) {
            const int64_t iy = ln->iy0[j] + r;
            const bool in = ln->rows[j] > 0 && iy >= 0 && iy < g->H && cols;
            pr->mask[r][j] = (__mmask8)(in ? cols : 0);
            pr->off[r][j] = in ? ln->xoff[j] + r * g->xs_h : 0;
        }
    }
}

static inline __m512 WINO_CAT(halves_, WINO_SUFFIX)(__m512 a, __m512 b, int hi)
{
    /* [a.c0 b.c0 a.c2 b.c2] (or c1, c3): element s of rows 0-3, 4-7, 8-11, 12-15 */
    const __m512 u = hi ? _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1))
                        : _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm512_shuffle_f32x4(u, u, _MM_SHUFFLE(3, 1, 2, 0));
}

static inline void WINO_CAT(rows512_, WINO_SUFFIX)(const PATCH_ROWS *pr, const float *xc,
                                                   float d[WA][WA][LN])
{
    for (int r = 0; r < WA; r++) {
        __m512 z[8];
        for (int k = 0; k < 8; k++) {
            const __m256 lo = _mm256_maskz_loadu_ps(pr->mask[r][k], xc + pr->off[r][k]);
            const __m256 hi = _mm256_maskz_loadu_ps(pr->mask[r][k + 8], xc + pr->off[r][k + 8]);
            z[k] = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
        }
        __m512 t[8], q[8], o[8];
        for (int k = 0; k < 8; k += 2) {
            t[k] = _mm512_unpacklo_ps(z[k], z[k + 1]);
            t[k + 1] = _mm512_unpackhi_ps(z[k], z[k + 1]);
        }
        for (int k = 0; k < 8; k += 4) { /* q[k + e]: elements e and e + 4 of 4 rows */
            q[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);
            q[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xEE);
            q[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44);
            q[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
        }
        for (int e = 0; e < 4; e++) {
            o[e] = WINO_CAT(halves_, WINO_SUFFIX)(q[e], q[e + 4], 0);
            o[e + 4] = WINO_CAT(halves_, WINO_SUFFIX)(q[e], q[e + 4], 1);
        }
        for (int s = 0; s < WA; s++)
            _mm512_storeu_ps(d[r][s], o[s]);
    }
}
#endif

void WINO_FN(input)(const wino_geom *g, const wino_lanes *ln, float *v)
{
    float d[WA][WA][LN], t[WA][WA][LN];
#if defined(__AVX512F__)
    TAPS tp;
    PATCH_ROWS pr;
    const bool rows = g->xs_w == 1;
    if (rows)
        WINO_CAT(patch_rows_, WINO_SUFFIX)(g, ln, &pr);
    else if (g->idx32)
        WINO_CAT(taps_, WINO_SUFFIX)(g, ln, &tp);
#endif
    for (int64_t c = 0; c < g->cg; c++) {
#if defined(__AVX512F__)
        if (rows)
            WINO_CAT(rows512_, WINO_SUFFIX)(&pr, g->x + c * g->xs_c, d);
        else if (g->idx32)
            WINO_CAT(gather512_, WINO_SUFFIX)(&tp, g->x + c * g->xs_c, d);
        else
#endif
            WINO_CAT(gather_, WINO_SUFFIX)(g, ln, c, d);
        /* t = BT d (rows), then v = t BT^T (columns), stored lane-contiguous per position */
        UNROLL for (int i = 0; i < WA; i++) UNROLL for (int s = 0; s < WA; s++)
        {
            bool first = true;
            UNROLL for (int k = 0; k < WA; k++) WINO_AXPY(float, t[i][s], BT[i][k], d[k][s], first);
        }
        float *vc = v + c * g->v_chan;
        UNROLL for (int i = 0; i < WA; i++) UNROLL for (int l = 0; l < WA; l++)
        {
            float acc[LN];
            bool first = true;
            UNROLL for (int s = 0; s < WA; s++) WINO_AXPY(float, acc, BT[l][s], t[i][s], first);
            float *dst = vc + (i * WA + l) * g->v_pos;
            for (int j = 0; j < LN; j++)
                dst[j] = acc[j];
        }
    }
}

void WINO_FN(output)(const wino_geom *g, const wino_lanes *ln, const float *m, const float *bias)
{
    float mt[WA][WA][LN], t[WINO_M][WA][LN], o[WINO_M][WINO_M][LN];
    for (int64_t k = 0; k < g->kg; k++) {
        const float *mk = m + k * g->m_row;
        UNROLL for (int a = 0; a < WA; a++)
            UNROLL for (int b = 0; b < WA; b++) for (int j = 0; j < LN; j++) mt[a][b][j] =
                mk[(a * WA + b) * g->m_pos + j];
        UNROLL for (int i = 0; i < WINO_M; i++) UNROLL for (int b = 0; b < WA; b++)
        {
            bool first = true;
            UNROLL for (int a = 0; a < WA; a++)
                WINO_AXPY(float, t[i][b], AT[i][a], mt[a][b], first);
        }
        const float bv = bias ? bias[k] : 0.0f;
        UNROLL for (int i = 0; i < WINO_M; i++) UNROLL for (int l = 0; l < WINO_M; l++)
        {
            bool first = true;
            UNROLL for (int b = 0; b < WA; b++) WINO_AXPY(float, o[i][l], AT[l][b], t[i][b], first);
            for (int j = 0; j < LN; j++)
                o[i][l][j] += bv;
        }
        /* scatter: lane j is one tile; only its outputs inside y */
        float *yk = g->y + k * g->ys_c;
        for (int j = 0; j < LN; j++) {
            float *p = yk + ln->yoff[j];
            const int rows = ln->rows[j], cols = ln->cols[j];
            if (rows == WINO_M && cols == WINO_M) {
                UNROLL for (int i = 0; i < WINO_M; i++) UNROLL for (int l = 0; l < WINO_M; l++)
                    p[i * g->ys_h + l * g->ys_w] = o[i][l][j];
                continue;
            }
            for (int i = 0; i < rows; i++)
                for (int l = 0; l < cols; l++)
                    p[i * g->ys_h + l * g->ys_w] = o[i][l][j];
        }
    }
}

/* t = G gk for LN kernels at once (lane j: kernel j), in double: the first half of the
 * transform G gk G^T, which both weight layouts share (each does the second half as it stores). */
static inline void WINO_CAT(kernel_rows_, WINO_SUFFIX)(const double gk[3][3][LN],
                                                       double t[WA][3][LN])
{
    UNROLL for (int i = 0; i < WA; i++) UNROLL for (int s = 0; s < 3; s++)
    {
        bool first = true;
        UNROLL for (int r = 0; r < 3; r++) WINO_AXPY(double, t[i][s], GM[i][r], gk[r][s], first);
    }
}

void WINO_FN(weight)(const float *wk, int64_t ws_c, int64_t ws_h, int64_t ws_w, int64_t cg,
                     float *u, int64_t u_pos, int64_t u_chan)
{
    double gk[3][3][LN], t[WA][3][LN];
    for (int64_t c0 = 0; c0 < cg; c0 += LN) {
        const int n = cg - c0 < LN ? (int)(cg - c0) : LN;
        for (int j = 0; j < LN; j++)
            for (int r = 0; r < 3; r++)
                for (int s = 0; s < 3; s++)
                    gk[r][s][j] = j < n ? wk[(c0 + j) * ws_c + r * ws_h + s * ws_w] : 0.0;
        WINO_CAT(kernel_rows_, WINO_SUFFIX)(gk, t);
        UNROLL for (int i = 0; i < WA; i++) UNROLL for (int l = 0; l < WA; l++)
        {
            double acc[LN];
            bool first = true;
            UNROLL for (int s = 0; s < 3; s++) WINO_AXPY(double, acc, GM[l][s], t[i][s], first);
            float *dst = u + (i * WA + l) * u_pos + c0 * u_chan;
            for (int j = 0; j < n; j++)
                dst[j * u_chan] = (float)acc[j];
        }
    }
}

#if defined(__AVX512F__)
/* acc (+)= c * b for 8 doubles, as WINO_AXPY does per lane (exact negation for -1). */
static inline __m512d WINO_CAT(axpy8_, WINO_SUFFIX)(__m512d acc, double c, __m512d b, bool first)
{
    const __m512d t = c == 1.0    ? b
                      : c == -1.0 ? _mm512_xor_pd(b, _mm512_set1_pd(-0.0))
                                  : _mm512_mul_pd(_mm512_set1_pd(c), b);
    return first ? t : _mm512_add_pd(acc, t);
}

/* weight_rows in registers, 8 rows (one half of the lanes) at a time: g, t and one output in
 * 28 zmm registers, each output stored into its position's run in a tile of WINO_CB channels,
 * then each run (WINO_CB x u_chan floats) stored whole. With `stream` (a U too large to stay in
 * the L3 until the GEMMs read it: l1's is 37.7 MB) those stores skip the caches. l1's 512 x 512
 * kernels on one Zen 5 core (a driver, min of 2 runs): 4.2-4.7 ms against 7.2 ms for the
 * portable template (16-lane arrays of double on the stack, one float stored per kernel and
 * position); with cached stores and a copy per channel this one took 6.0-8.3 ms, streamed
 * 5.3 ms: writing U, more than its arithmetic, bounds the transform. The same operations per
 * output in the same order as wino_weight_fn: the same bits. */
/* One channel of 8 kernels (rows wc + rows[j]) into the lanes `out` of tile + xi * pitch for
 * each position xi; lanes outside `in` read nothing and get 0. */
static inline void WINO_CAT(weight8_, WINO_SUFFIX)(const float *wc, __m256i rows, int64_t ws_h,
                                                   int64_t ws_w, __mmask8 in, __mmask8 out,
                                                   float *tile, int64_t pitch)
{
    __m512d g[3][3], t[WA][3];
    UNROLL for (int r = 0; r < 3; r++) UNROLL for (int s = 0; s < 3; s++)
    {
        const __m256 v =
            _mm256_mmask_i32gather_ps(_mm256_setzero_ps(), in, rows, wc + r * ws_h + s * ws_w, 4);
        g[r][s] = _mm512_cvtps_pd(v);
    }
    UNROLL for (int i = 0; i < WA; i++) UNROLL for (int s = 0; s < 3; s++)
    {
        bool first = true;
        t[i][s] = _mm512_setzero_pd();
        UNROLL for (int r = 0; r < 3; r++) if (GM[i][r] != 0.0)
        {
            t[i][s] = WINO_CAT(axpy8_, WINO_SUFFIX)(t[i][s], GM[i][r], g[r][s], first);
            first = false;
        }
    }
    UNROLL for (int i = 0; i < WA; i++) UNROLL for (int l = 0; l < WA; l++)
    {
        __m512d acc = _mm512_setzero_pd();
        bool first = true;
        UNROLL for (int s = 0; s < 3; s++) if (GM[l][s] != 0.0)
        {
            acc = WINO_CAT(axpy8_, WINO_SUFFIX)(acc, GM[l][s], t[i][s], first);
            first = false;
        }
        const __m256 f = _mm256_maskz_mov_ps(in, _mm512_cvtpd_ps(acc)); /* 0 past n */
        _mm256_mask_storeu_ps(tile + (i * WA + l) * pitch, out, f);
    }
}

/* Each position's run of len floats (cn x u_chan) is contiguous in u: stored whole (streamed
 * when asked and aligned). */
static inline void WINO_CAT(store_block_, WINO_SUFFIX)(const float tile[][WINO_CB * LN],
                                                       int64_t len, float *u, int64_t u_pos,
                                                       bool stream)
{
    for (int xi = 0; xi < WA * WA; xi++) {
        float *dst = u + xi * u_pos;
        const float *run = tile[xi];
        int64_t k = 0;
        if (stream && ((uintptr_t)dst & 63) == 0)
            for (; k + 16 <= len; k += 16)
                _mm512_stream_ps(dst + k, _mm512_load_ps(run + k));
        for (; k < len; k++)
            dst[k] = run[k];
    }
}

static void WINO_CAT(weight_rows512_, WINO_SUFFIX)(const float *wk, int64_t ws_n, int64_t ws_c,
                                                   int64_t ws_h, int64_t ws_w, int n, int64_t cg,
                                                   float *u, int64_t u_pos, int64_t u_chan,
                                                   bool stream)
{
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32((int32_t)ws_n));
    _Alignas(64) float tile[WA * WA][WINO_CB * LN]; /* per position: c * u_chan + row */
    for (int64_t c0 = 0; c0 < cg; c0 += WINO_CB) {
        const int64_t cn = cg - c0 < WINO_CB ? cg - c0 : WINO_CB;
        for (int h = 0; h * 8 < u_chan; h++) {
            const int nh = n - 8 * h < 0 ? 0 : n - 8 * h > 8 ? 8 : n - 8 * h;
            const int oh = u_chan - 8 * h > 8 ? 8 : (int)u_chan - 8 * h;
            const __mmask8 in = (__mmask8)((1u << nh) - 1), out = (__mmask8)((1u << oh) - 1);
            for (int64_t c = 0; c < cn; c++)
                WINO_CAT(weight8_, WINO_SUFFIX)
            (wk + 8 * h * ws_n + (c0 + c) * ws_c, rows, ws_h, ws_w, in, out,
             tile[0] + c * u_chan + 8 * h, WINO_CB * LN);
        }
        WINO_CAT(store_block_, WINO_SUFFIX)(tile, cn * u_chan, u + c0 * u_chan, u_pos, stream);
    }
    if (stream) _mm_sfence(); /* the streamed lines before the GEMMs (other threads) read them */
}
#endif

void WINO_FN(weight_rows)(const float *wk, int64_t ws_n, int64_t ws_c, int64_t ws_h, int64_t ws_w,
                          int n, int64_t cg, float *u, int64_t u_pos, int64_t u_chan, bool stream)
{
    (void)stream; /* AVX-512 only */
#if defined(__AVX512F__)
    /* gather offsets are int32: rows up to 15 * ws_n, taps up to 2 * (ws_h + ws_w) */
    if (llabs(ws_n) * (LN - 1) < INT32_MAX && u_chan <= LN) {
        WINO_CAT(weight_rows512_, WINO_SUFFIX)
        (wk, ws_n, ws_c, ws_h, ws_w, n, cg, u, u_pos, u_chan, stream);
        return;
    }
#endif
    double gk[3][3][LN], t[WA][3][LN];
    for (int64_t c = 0; c < cg; c++) {
        const float *wc = wk + c * ws_c;
        for (int j = 0; j < LN; j++)
            for (int r = 0; r < 3; r++)
                for (int s = 0; s < 3; s++)
                    gk[r][s][j] = j < n ? wc[j * ws_n + r * ws_h + s * ws_w] : 0.0;
        WINO_CAT(kernel_rows_, WINO_SUFFIX)(gk, t);
        UNROLL for (int i = 0; i < WA; i++) UNROLL for (int l = 0; l < WA; l++)
        {
            double acc[LN];
            bool first = true;
            UNROLL for (int s = 0; s < 3; s++) WINO_AXPY(double, acc, GM[l][s], t[i][s], first);
            float *dst = u + (i * WA + l) * u_pos + c * u_chan;
            for (int j = 0; j < u_chan; j++)
                dst[j] = j < n ? (float)acc[j] : 0.0f;
        }
    }
}

#undef TAPS
#undef PATCH_ROWS
#undef BT
#undef GM
#undef AT
#undef WA
#undef LN
#undef UNROLL
#undef WINO_FN
#undef WINO_M
#undef WINO_SUFFIX
#endif /* WINO_M */
