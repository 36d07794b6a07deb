/*
 * The fast Gaussian blur (LUMEN_PRECISION_FAST) on the CPU.
 *
 * Per axis: sigma >= 2 runs Deriche's 4th-order recursive Gaussian (two complex
 * one-pole sections, causal + anticausal, normalised to unit DC gain as
 * Farneback & Westin correct it), about 27 flops per pixel whatever sigma;
 * sigma < 2 runs the exact OpenCV kernel (at most 19 taps), where the
 * recursive fit is poorest and a short kernel is as cheap.
 *
 * Borders are exact: each row or column is extended by the border rule
 * before filtering, and the recursion starts from a state that is exact for
 * the extension beyond the pad:
 *   constant, replicate   pad 1 (the extension is constant beyond it), the
 *                         steady state of that constant;
 *   wrap, reflect(101)    when one period of the extension (w, 2w, 2w-2) is at
 *                         most 5 sigma: pad one period, start from zero, then
 *                         sum all earlier periods in closed form;
 *                         otherwise pad 5 sigma, start from the steady state of
 *                         the outermost pad value (error <= 7e-5 x range).
 * So a row costs O(w + 2 min(5 sigma, period)): the pad is the only part that
 * grows with sigma, and it is bounded by the image size.
 *
 * Data flow per plane: blocks of 16 rows are loaded (any dtype and stride)
 * and transposed, so the recursion runs on 16 rows at once in vector lanes;
 * the pads are not copied, each padded sample just points at the sample the
 * border rule names. The result goes, transposed back, to an f32
 * intermediate T: dst itself when dst is f32 with contiguous rows (planar, or
 * interleaved with src interleaved too, all channels at once), else one plane
 * of f32 reused by every plane. Then column strips of T are filtered with the
 * columns as lanes and stored to dst (rounding and saturating u8/u16); when T
 * is dst the recursion writes its result in place.
 */
#include "gaussian_fast.h"

#include "semantics.h"
#include "gaussian_fast_kernels.h"
#include "rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The design (sigma thresholds, pads, coefficients) is core/gaussian_fast_coeffs.h's. */
/* Rows filtered together by the row pass (lanes of the transposed block). */
#define GF_ROWS 16
/* Small images run on fewer threads: a barrier costs more than filtering a few rows. */
#define GF_PIXELS_PER_THREAD 16384
/* Source chunks the row pass's feed prefetches ahead of the one it transposes. */
#define GF_FEED_AHEAD 4
/* Column-strip buffer budget (h x strip floats), kept inside L2. */
#define GF_STRIP_BYTES (1024 * 1024)

/* ---- portable kernels --------------------------------------------------- */

/*
 * One step over m lanes of both sections: s_k = p_k s_k + v_k x (complex, v
 * the input weight of the direction); out = Re(s_0 + s_1) (+ add) unless out is NULL.
 */
static void iir_step(const lumen_gf_iir *c, const float *vr, const float *vi,
                     const float *restrict x, float *restrict s, int64_t m,
                     const float *add, float *out)
{
    for (int k = 0; k < 2; k++) {
        float *restrict sr = s + 2 * k * m, *restrict si = s + (2 * k + 1) * m;
        for (int64_t j = 0; j < m; j++) {
            float re = c->pr[k] * sr[j] - c->pi[k] * si[j] + vr[k] * x[j];
            float im = c->pr[k] * si[j] + c->pi[k] * sr[j] + vi[k] * x[j];
            sr[j] = re, si[j] = im;
        }
    }
    for (int64_t j = 0; out && j < m; j++) out[j] = s[j] + s[2 * m + j] + (add ? add[j] : 0.0f);
}

/*
 * Anticausal pass first, into y; then the causal pass adds y and writes the
 * result, so an output row may be the input row of the same step (the causal
 * pass never reads a row after it was written).
 */
static void iir_generic(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad,
                        int64_t n, int64_t m, float *y, int64_t ys, float *const *o, float *s,
                        const lumen_gf_feed *feed)
{
    const int64_t len = n + 2 * pad;
    if (feed) feed->in(feed->ctx, 0, n); /* portable: no interleaving, all inputs first */
    lumen_gf_state_init(c->hr, c->hi, c->periodic ? NULL : x[len - 1] + off, s, m);
    for (int64_t i = len - 2; i >= pad + n - 1; i--)
        iir_step(c, c->br, c->bi, x[i + 1] + off, s, m, NULL, NULL);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    for (int64_t j = 0; j < m; j++) y[(n - 1) * ys + j] = s[j] + s[2 * m + j];
    for (int64_t i = pad + n - 2; i >= pad; i--)
        iir_step(c, c->br, c->bi, x[i + 1] + off, s, m, NULL, y + (i - pad) * ys);

    lumen_gf_state_init(c->gr, c->gi, c->periodic ? NULL : x[0] + off, s, m);
    for (int64_t i = 0; i < pad; i++) iir_step(c, c->ar, c->ai, x[i] + off, s, m, NULL, NULL);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    for (int64_t i = pad; i < pad + n; i++) {
        float *yi = y + (i - pad) * ys;
        iir_step(c, c->ar, c->ai, x[i] + off, s, m, yi, o ? o[i - pad] + off : yi);
    }
    if (feed) feed->out(feed->ctx, 0, n);
}

static void fir_generic(const float *k, int taps, const float *const *x, int64_t off, int64_t n,
                        int64_t m, float *y, int64_t ys)
{
    for (int64_t i = 0; i < n; i++) {
        float *restrict out = y + i * ys;
        for (int64_t j = 0; j < m; j++) out[j] = 0.0f;
        for (int t = 0; t < taps; t++) {
            const float *restrict in = x[i + t] + off;
            for (int64_t j = 0; j < m; j++) out[j] += k[t] * in[j];
        }
    }
}

static void to_lanes_generic(const float *const *rows, int r, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < r; j++) out[i * r + j] = rows[j][i];
}

static void from_lanes_generic(const float *in, int r, int64_t n, float *const *rows)
{
    for (int j = 0; j < r; j++)
        for (int64_t i = 0; i < n; i++) rows[j][i] = in[i * r + j];
}

const lumen_gf_kernels lumen_gf_kernels_generic = {
    .isa = "generic",
    .iir = iir_generic,
    .fir = fir_generic,
    .to_lanes = to_lanes_generic,
    .from_lanes = from_lanes_generic,
};

/* ---- planning ------------------------------------------------------------ */

typedef struct gf_axis {
    bool fir;
    int taps; /* fir */
    float k[LUMEN_GF_FIR_MAX_TAPS];
    lumen_gf_iir iir;
    int64_t n, pad, len; /* samples, pad on each side, n + 2 pad */
} gf_axis;

/* The method, pad and coefficients of an axis: core/gaussian_fast_coeffs.h (the Vulkan module
 * runs the same design). */
static lumen_status plan_axis(gf_axis *a, double sigma, int64_t n, lumen_border b)
{
    lumen_gf_axis_design d;
    lumen_gf_design_axis(sigma, n, b, &d);
    a->n = n;
    a->fir = d.fir;
    a->taps = d.taps;
    a->iir = d.iir;
    a->pad = d.pad;
    if (a->fir) lumen_gaussian_taps(a->taps, sigma, a->k); /* sigma > 0: checked by the caller */
    a->len = n + 2 * a->pad;
    return LUMEN_OK;
}

typedef struct gf_plan {
    const lumen_gauss_job *job;
    lumen_filter_job load; /* src and border, as lumen_rows_load wants them */
    const lumen_gf_kernels *k;
    const lumen_row_kernels *rk;
    gf_axis ax, ay;
    int64_t rpad_lo, rpad_hi; /* the samples the row axis's right pad reads (lo >= hi: none) */
    int64_t cp;     /* channels interleaved in a row of T: c (src and dst interleaved) or 1 */
    int64_t lanes;  /* floats per row of T: w * cp */
    int64_t strip;  /* lanes per column strip */
    bool t_is_dst;  /* T is dst itself */
    float *tbuf;    /* else T: h x lanes */
    float *vrow;    /* constant border: a row of lanes border values */
} gf_plan;

/*
 * Float buffers the kernels walk in whole vectors, on 64-byte lines: malloc's large blocks start
 * 16 bytes into a page, so every 64-byte lane row (and most of a strip's vectors) would span two
 * lines (Zen 5: the column strips' recursion 1.33x slower, bench/gaussian_fast_kernel.c).
 */
static float *alloc_floats(int64_t n)
{
    return aligned_alloc(64, (sizeof(float) * (size_t)(n > 0 ? n : 1) + 63) / 64 * 64);
}

static bool interleaved(const lumen_image *im)
{
    return im->c > 1 && im->stride_c == 1 && im->stride_w == im->c;
}

/* Strip width: a multiple of 16 lanes with h x strip floats inside GF_STRIP_BYTES. */
static int64_t choose_strip(int64_t h, int64_t lanes)
{
    int64_t s = (int64_t)(GF_STRIP_BYTES / sizeof(float)) / h / 16 * 16;
    if (s < 16) s = 16;
    if (s > 512) s = 512;
    int64_t all = (lanes + 7) / 8 * 8;
    return s < all ? s : all;
}

/*
 * Chooses T and the buffers all threads share. An interleaved f32 dst is T
 * itself with its channels interleaved (cp = c, when src is interleaved too):
 * rows then move as whole contiguous runs and each row-pass block holds every
 * channel. Any other dst gets T of one plane (cp = 1), reused by every plane:
 * a buffer of all c planes costs c times the page faults of a fresh
 * allocation, more than the strided loads and stores of one plane at a time.
 */
static lumen_status plan_memory(gf_plan *p)
{
    const lumen_image *s = p->job->src, *d = p->job->dst;
    const bool f32 = d->dtype == LUMEN_F32;
    p->cp = f32 && interleaved(s) && interleaved(d) && d->c <= GF_ROWS ? d->c : 1;
    p->t_is_dst = f32 && d->stride_w == p->cp;
    p->lanes = d->w * p->cp;
    p->strip = choose_strip(d->h, p->lanes);
    if (!p->t_is_dst) {
        /* the one buffer of image size: refused beyond RAM + swap (cpu.h) */
        const int64_t n = d->h * p->lanes;
        p->tbuf = lumen_cpu_fits_in_memory(sizeof(float) * (uint64_t)n) ? alloc_floats(n) : NULL;
        if (!p->tbuf)
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                   "gaussian fast: out of memory for a %lld x %lld f32 plane",
                                   (long long)d->h, (long long)p->lanes);
    }
    if (p->job->border == LUMEN_BORDER_CONSTANT) {
        p->vrow = alloc_floats(p->lanes);
        if (!p->vrow)
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "gaussian fast: out of memory");
        for (int64_t i = 0; i < p->lanes; i++) p->vrow[i] = p->job->border_value;
    }
    return LUMEN_OK;
}

/* ---- per-thread scratch -------------------------------------------------- */

/*
 * The row pass works on blocks of GF_ROWS rows of w*cp floats, transposed so
 * that each of the w*cp samples of a row is a "lane row" of GF_ROWS floats
 * (one per image row); channel k of pixel x is lane row x*cp + k.
 */
typedef struct gf_scratch {
    float *rows;       /* GF_ROWS source rows of w*cp floats (converted, or zeros) */
    float *lanes;      /* the rows transposed: w*cp lane rows */
    float *vlane;      /* GF_ROWS border constants */
    float *out;        /* row pass output: w*cp lane rows; column pass: h x strip */
    float *state;      /* recursion state */
    const float **hx;  /* row pass inputs, per channel: the lane row padded sample i reads */
    float **vx;        /* column pass inputs: the row of T (or vrow) padded row i reads */
    float **orow;      /* row pass outputs: rows of T */
} gf_scratch;

/* Where padded sample i of an axis reads: its index in [0, n), or -1 for the constant. */
static int64_t pad_index(const gf_axis *a, int64_t i, lumen_border b)
{
    return lumen_border_index(i - a->pad, a->n, b);
}

/* The samples [lo, hi) the right pad of a recursive axis (and its start) reads. */
static void right_pad_span(const gf_axis *a, lumen_border b, int64_t *lo, int64_t *hi)
{
    *lo = a->n, *hi = 0;
    for (int64_t i = a->pad + a->n; i < a->len; i++) {
        const int64_t x = pad_index(a, i, b);
        if (x < 0) continue;
        *lo = x < *lo ? x : *lo;
        *hi = x + 1 > *hi ? x + 1 : *hi;
    }
}

/* Pads cost no copies: padded sample i of channel k reads the lane row the border rule names. */
static void row_inputs(const gf_plan *p, gf_scratch *sc)
{
    for (int j = 0; j < GF_ROWS; j++) sc->vlane[j] = p->job->border_value;
    for (int64_t k = 0; k < p->cp; k++)
        for (int64_t i = 0; i < p->ax.len; i++) {
            int64_t x = pad_index(&p->ax, i, p->job->border);
            sc->hx[k * p->ax.len + i] = x < 0 ? sc->vlane : sc->lanes + (x * p->cp + k) * GF_ROWS;
        }
}

static bool scratch_alloc(const gf_plan *p, gf_scratch *sc)
{
    const int64_t row = p->lanes, n_out_v = p->ay.n * p->strip;
    const int64_t wide = GF_ROWS > p->strip ? GF_ROWS : p->strip;
    sc->rows = alloc_floats(row * GF_ROWS);
    sc->lanes = alloc_floats(row * GF_ROWS);
    sc->vlane = alloc_floats(GF_ROWS);
    sc->out = alloc_floats(row * GF_ROWS > n_out_v ? row * GF_ROWS : n_out_v);
    sc->state = alloc_floats(LUMEN_GF_STATE * wide);
    sc->hx = malloc(sizeof(*sc->hx) * (size_t)(p->cp * p->ax.len));
    sc->vx = malloc(sizeof(*sc->vx) * (size_t)p->ay.len);
    sc->orow = malloc(sizeof(*sc->orow) * GF_ROWS);
    if (!(sc->rows && sc->lanes && sc->vlane && sc->out && sc->state && sc->hx && sc->vx &&
          sc->orow))
        return false;
    row_inputs(p, sc);
    return true;
}

static void scratch_free(gf_scratch *sc)
{
    free(sc->rows), free(sc->lanes), free(sc->vlane), free(sc->out), free(sc->state);
    free(sc->hx), free(sc->vx), free(sc->orow);
}

/* ---- the row pass ---------------------------------------------------------- */

/*
 * One axis over m lanes into y (stride ys); a recursive axis with o != NULL
 * writes to o[j] + off instead (y is then scratch).
 */
static void run_axis(const gf_plan *p, const gf_axis *a, const float *const *x, int64_t off,
                     int64_t m, float *y, int64_t ys, float *const *o, float *state,
                     const lumen_gf_feed *feed)
{
    if (a->fir) p->k->fir(a->k, a->taps, x, off, a->n, m, y, ys);
    else
        p->k->iir(&a->iir, x, off, a->pad, a->n, m, y, ys, o, state, feed);
}

/* Row y of T for image b, channel group ch0. */
static float *t_row(const gf_plan *p, int64_t b, int64_t ch0, int64_t y)
{
    if (p->t_is_dst) return (float *)lumen_px_addr(p->job->dst, b, ch0, y, 0);
    return p->tbuf + y * p->lanes;
}

/* Source row (b, channels ch0 .. ch0+cp-1, y) as w*cp floats: in place if f32, else converted. */
static const float *source_row(const gf_plan *p, int64_t b, int64_t ch0, int64_t y, float *buf)
{
    const lumen_image *s = p->job->src;
    if (s->dtype == LUMEN_F32 && s->stride_w == p->cp)
        return (const float *)lumen_px_addr(s, b, ch0, y, 0);
    lumen_rows_load(p->rk, &p->load, p->cp, b, ch0, y, 0, s->w, buf);
    return buf;
}

/* Lane rows (elements) [e0, e1) of the block's source rows into sc->lanes. */
static void block_to_lanes(const gf_plan *p, gf_scratch *sc, const float *const *rowp, int64_t e0,
                           int64_t e1)
{
    const float *r[GF_ROWS];
    for (int j = 0; j < GF_ROWS; j++)
        r[j] = rowp[j] + e0;
    p->k->to_lanes(r, GF_ROWS, e1 - e0, sc->lanes + e0 * GF_ROWS);
}

/* Lane rows [e0, e1) of sc->out into the block's rows of T (sc->orow). */
static void block_from_lanes(const gf_plan *p, gf_scratch *sc, int64_t e0, int64_t e1)
{
    float *r[GF_ROWS];
    for (int j = 0; j < GF_ROWS; j++)
        r[j] = sc->orow[j] + e0;
    p->k->from_lanes(sc->out + e0 * GF_ROWS, GF_ROWS, e1 - e0, r);
}

/* The row pass's lumen_gf_feed: samples of channel k are elements x*cp + k of a row. */
typedef struct gf_row_feed {
    const gf_plan *p;
    gf_scratch *sc;
    const float *const *rowp;
    int64_t k; /* the channel being filtered */
} gf_row_feed;

/* Channel 0 transposes the elements of every channel (its pass reads first); the right pad's
 * samples were transposed before the recursion. */
static void row_feed_in(void *ctx, int64_t lo, int64_t hi)
{
    const gf_row_feed *f = ctx;
    const int64_t cp = f->p->cp;
    if (f->k > 0 || (lo >= f->p->rpad_lo && hi <= f->p->rpad_hi)) return;
    /* The feed walks the source rows backwards, which the hardware prefetchers do not follow
     * (measured); ask for the chunk GF_FEED_AHEAD chunks below this one. */
    const int64_t ahead = lo - GF_FEED_AHEAD * LUMEN_GF_FEED;
    if (ahead >= 0)
        for (int j = 0; j < GF_ROWS; j++)
            for (int64_t e = 0; e < LUMEN_GF_FEED * cp; e += 16)
                __builtin_prefetch(f->rowp[j] + ahead * cp + e);
    block_to_lanes(f->p, f->sc, f->rowp, lo * cp, hi * cp);
}

/* The last channel's outputs complete the elements of every channel. */
static void row_feed_out(void *ctx, int64_t lo, int64_t hi)
{
    const gf_row_feed *f = ctx;
    const int64_t cp = f->p->cp, ahead = (hi + (GF_FEED_AHEAD - 1) * LUMEN_GF_FEED) * cp;
    if (f->k != cp - 1) return;
    /* Each chunk's stores start new lines of T: ask for them early, as for the source rows. */
    if (ahead + LUMEN_GF_FEED * cp <= f->p->lanes)
        for (int j = 0; j < GF_ROWS; j++)
            for (int64_t e = 0; e < LUMEN_GF_FEED * cp; e += 16)
                __builtin_prefetch(f->sc->orow[j] + ahead + e, 1);
    block_from_lanes(f->p, f->sc, lo * cp, hi * cp);
}

/*
 * Rows y0 .. y0+GF_ROWS-1 (those inside the image) of channels ch0 .. ch0+cp-1 into T. A
 * recursive axis transposes through the feed (lumen_gf_feed), inside the recursion.
 */
static void row_block(const gf_plan *p, gf_scratch *sc, int64_t b, int64_t ch0, int64_t y0)
{
    const int64_t row = p->lanes, h = p->job->src->h, nr = h - y0 < GF_ROWS ? h - y0 : GF_ROWS;
    const float *rowp[GF_ROWS];
    for (int64_t r = 0; r < GF_ROWS; r++) {
        float *buf = sc->rows + r * row;
        if (r >= nr) memset(buf, 0, sizeof(float) * (size_t)row); /* lanes never stored */
        rowp[r] = r < nr ? source_row(p, b, ch0, y0 + r, buf) : buf;
    }
    /* Rows past the image go to their (zero) source buffers: every input is read by then. */
    for (int64_t r = 0; r < GF_ROWS; r++)
        sc->orow[r] = r < nr ? t_row(p, b, ch0, y0 + r) : sc->rows + r * row;
    gf_row_feed fd = {.p = p, .sc = sc, .rowp = rowp};
    const lumen_gf_feed feed = {.in = row_feed_in, .out = row_feed_out, .ctx = &fd};
    if (p->ax.fir)
        block_to_lanes(p, sc, rowp, 0, row);
    else if (p->rpad_lo < p->rpad_hi)
        block_to_lanes(p, sc, rowp, p->rpad_lo * p->cp, p->rpad_hi * p->cp);
    /* Channel k: inputs lane rows x*cp + k (hx), outputs the same lane rows of out. */
    for (fd.k = 0; fd.k < p->cp; fd.k++)
        run_axis(p, &p->ax, sc->hx + fd.k * p->ax.len, 0, GF_ROWS, sc->out + fd.k * GF_ROWS,
                 p->cp * GF_ROWS, NULL, sc->state, &feed);
    if (p->ax.fir) block_from_lanes(p, sc, 0, row);
}

/* ---- the column pass ------------------------------------------------------- */

/* Points vx[i] at the row of T (or the constant row) that padded row i reads. */
static void column_inputs(const gf_plan *p, gf_scratch *sc, int64_t b, int64_t ch0)
{
    const gf_axis *a = &p->ay;
    for (int64_t i = 0; i < a->len; i++) {
        int64_t yy = pad_index(a, i, p->job->border);
        sc->vx[i] = yy < 0 ? p->vrow : t_row(p, b, ch0, yy);
    }
}

static void column_strip(const gf_plan *p, gf_scratch *sc, int64_t b, int64_t ch0, int64_t x0)
{
    const lumen_image *d = p->job->dst;
    const int64_t m = p->lanes - x0 < p->strip ? p->lanes - x0 : p->strip;
    const float *const *x = (const float *const *)sc->vx;
    if (p->t_is_dst && !p->ay.fir) { /* the recursion writes T = dst in place (see iir) */
        run_axis(p, &p->ay, x, x0, m, sc->out, p->strip, sc->vx + p->ay.pad, sc->state, NULL);
        return;
    }
    run_axis(p, &p->ay, x, x0, m, sc->out, p->strip, NULL, sc->state, NULL);
    /* Lane x0 is pixel x0 of a planar dst, or element x0 of an interleaved dst row. */
    const int64_t es = (int64_t)lumen_dtype_size(d->dtype);
    const int64_t step = p->cp > 1 ? 1 : d->stride_w;
    const bool copy = d->dtype == LUMEN_F32 && step == 1;
    for (int64_t y = 0; y < p->ay.n; y++) {
        char *dp = lumen_px_addr(d, b, ch0, y, 0) + x0 * step * es;
        if (copy) memcpy(dp, sc->out + y * p->strip, sizeof(float) * (size_t)m);
        else lumen_rows_store(p->rk, d, p->cp, sc->out + y * p->strip, dp, m);
    }
}

/* ---- driver ------------------------------------------------------------------ */

/* One image's channel group: the row pass, then the column pass. Interruption is polled per
 * block and strip; every thread still runs both worksharing loops (skipping), so all meet
 * the same barriers. */
static void run_group(const gf_plan *p, gf_scratch *sc, lumen_cpu_stop *stop, int64_t g)
{
    const lumen_image *s = p->job->src;
    const int64_t groups_per_image = s->c / p->cp;
    const int64_t b = g / groups_per_image, ch0 = g % groups_per_image * p->cp;
    const int64_t blocks = (s->h + GF_ROWS - 1) / GF_ROWS;
    const int64_t strips = (p->lanes + p->strip - 1) / p->strip;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < blocks; t++)
        if (!lumen_cpu_should_stop(stop)) row_block(p, sc, b, ch0, t * GF_ROWS);
    column_inputs(p, sc, b, ch0);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < strips; t++)
        if (!lumen_cpu_should_stop(stop)) column_strip(p, sc, b, ch0, t * p->strip);
}

/* Threads worth starting: one per GF_PIXELS_PER_THREAD pixels, at most ctx->threads. */
static int choose_threads(const lumen_context *ctx, const lumen_image *s)
{
    const int64_t want = 1 + s->n * s->c * s->h * s->w / GF_PIXELS_PER_THREAD;
    return want < ctx->threads ? (int)want : ctx->threads;
}

typedef struct gf_run {
    const gf_plan *p;
    lumen_cpu_stop *halt;
    int64_t groups;
    int failed; /* a thread could not allocate its buffers (atomic reads and writes) */
} gf_run;

static void gf_body(void *arg, int tid)
{
    (void)tid;
    gf_run *r = arg;
    gf_scratch sc;
    if (!scratch_alloc(r->p, &sc)) {
#pragma omp atomic write
        r->failed = 1;
    }
#pragma omp barrier
    int stop;
#pragma omp atomic read
    stop = r->failed;
    /* Every thread takes the same branch, so the worksharing loops stay matched. */
    for (int64_t g = 0; !stop && g < r->groups; g++)
        run_group(r->p, &sc, r->halt, g);
    scratch_free(&sc);
}

static lumen_status run_plan(lumen_context *ctx, const gf_plan *p)
{
    lumen_cpu_stop halt = lumen_cpu_stop_init(ctx);
    gf_run r = {p, &halt, p->job->src->n * (p->job->src->c / p->cp), 0};
    lumen_cpu_team_run(choose_threads(ctx, p->job->src), gf_body, &r);
    if (r.failed)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "gaussian fast: out of memory for per-thread buffers");
    return lumen_cpu_stop_status(&halt, LUMEN_OK);
}

/* ---- aliasing ---------------------------------------------------------------- */

static bool same_view(const lumen_image *a, const lumen_image *b)
{
    return a->data == b->data && a->dtype == b->dtype && a->stride_n == b->stride_n &&
           a->stride_c == b->stride_c && a->stride_h == b->stride_h && a->stride_w == b->stride_w;
}

/*
 * dst may be src itself: each row is read before it is written and each
 * plane of src is consumed before its plane of dst is written. Any other
 * overlap filters from a contiguous copy of src (*copy, to be freed).
 */
static lumen_status unalias(const lumen_image *src, const lumen_image *dst, lumen_image *view,
                            void **copy)
{
    uintptr_t slo, shi, dlo, dhi;
    *copy = NULL;
    *view = *src;
    lumen_image_extent(src, &slo, &shi);
    lumen_image_extent(dst, &dlo, &dhi);
    if (!(slo < dhi && dlo < shi) || same_view(src, dst)) return LUMEN_OK;
    const size_t es = lumen_dtype_size(src->dtype);
    *copy = malloc((size_t)(src->n * src->c * src->h * src->w) * es);
    if (!*copy) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "gaussian fast: dst overlaps src "
                                       "and a copy of src does not fit in memory");
    *view = lumen_image_nchw(*copy, src->dtype, src->n, src->c, src->h, src->w);
    for (int64_t b = 0; b < src->n; b++)
        for (int64_t c = 0; c < src->c; c++)
            for (int64_t y = 0; y < src->h; y++)
                for (int64_t x = 0; x < src->w; x++)
                    memcpy(lumen_px_addr(view, b, c, y, x), lumen_px_addr(src, b, c, y, x), es);
    return LUMEN_OK;
}

/* The recursive filter's kernels (the rows' loads and stores take lumen_cpu_row_kernels). */
static const lumen_gf_kernels *gf_kernels(const lumen_context *ctx)
{
    if (lumen_ctx_use_avx512(ctx)) return &lumen_gf_kernels_avx512;
    return lumen_ctx_use_avx2(ctx) ? &lumen_gf_kernels_avx2 : &lumen_gf_kernels_generic;
}

const char *lumen_cpu_gaussian_fast_isa(const lumen_context *ctx)
{
    return gf_kernels(ctx)->isa;
}

static bool sigma_ok(double s) { return s > 0 && isfinite(s); }

lumen_status lumen_cpu_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job)
{
    if (!sigma_ok(job->sigma_x) || !sigma_ok(job->sigma_y))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "gaussian fast: sigma must be positive and finite, got %g, %g",
                               job->sigma_x, job->sigma_y);
    lumen_image src;
    void *copy;
    lumen_status s = unalias(job->src, job->dst, &src, &copy);
    if (s) return s;
    lumen_gauss_job j = *job;
    j.src = &src;
    gf_plan p = {.job = &j};
    p.load.src = &src, p.load.dst = job->dst;
    p.load.border = job->border, p.load.border_value = job->border_value;
    p.k = gf_kernels(ctx);
    p.rk = lumen_cpu_row_kernels(ctx);
    if (!(s = plan_axis(&p.ax, job->sigma_x, src.w, job->border)) &&
        !(s = plan_axis(&p.ay, job->sigma_y, src.h, job->border)) && !(s = plan_memory(&p))) {
        right_pad_span(&p.ax, job->border, &p.rpad_lo, &p.rpad_hi);
        s = run_plan(ctx, &p);
    }
    free(p.tbuf), free(p.vrow), free(copy);
    return s;
}
