/*
 * The fast CPU path. Each thread walks tiles (one image plane, a band of
 * rows, a strip of columns) with a ring buffer of kh f32 rows: a new source
 * row is converted from its dtype and padded by the border rule once, as it
 * enters the ring, so u8/u16 data is never converted whole-image and the
 * image is never copied with padding. The strip width keeps the ring in L2.
 * Interleaved images (HWC) are filtered with all channels in one row, taps
 * c floats apart, so their loads and stores stay contiguous.
 */
#include "semantics.h"
#include "cpu.h"
#include "internal.h"
#include "row_kernels.h"
#include "rows.h"

#include <stdlib.h>
#include <string.h>

/* Ring buffer budget per thread; about half a typical L2. */
#define RING_BYTES (256 * 1024)
/* Rows between interruption polls: a band can be the whole image, so polling per tile would
 * not do; 16 rows of a strip are at most a few ms of work, and the poll's cost is nil. */
#define POLL_ROWS 16

typedef struct engine {
    const lumen_filter_job *job;
    lumen_cpu_stop *stop; /* interruption, polled every POLL_ROWS rows */
    const lumen_row_kernels *rk;
    bool separable, sym_x, sym_y;
    int64_t cp;      /* channels packed in a row: c for interleaved views, else 1 */
    int64_t strip;   /* column strip width in pixels */
    int64_t nbands;  /* row bands per plane */
    int64_t slot;    /* floats per ring slot */
    int64_t ring_len; /* slots: kh + the direct step - 1, or kh + 3 for four-row columns */
    bool four_rows;   /* column pass four rows at a time */
} engine;

typedef struct scratch {
    float *ring;       /* kh slots */
    const float **rows; /* ring_len pointers */
    float *seg;        /* padded source segment (separable) */
    float *out;        /* one output row segment */
} scratch;

/* Brings logical source row r (may lie outside the image) into its ring slot. */
static void load_ring_row(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t r,
                          int64_t x0, int64_t n)
{
    const lumen_filter_job *job = e->job;
    float *slot = sc->ring + lumen_mod(r, e->ring_len) * e->slot;
    int64_t yy = lumen_border_index(r, job->src->h, job->border);
    int64_t padded = n + job->kw - 1; /* pixels */
    if (!e->separable) {
        lumen_rows_load(e->rk, job, e->cp, b, ch, yy, x0 - job->ax, padded, slot);
        return;
    }
    lumen_rows_load(e->rk, job, e->cp, b, ch, yy, x0 - job->ax, padded, sc->seg);
    e->rk->hfilter(sc->seg, job->kx, job->kw, (int)e->cp, e->sym_x, slot, n * e->cp);
}

/* ---- tiles ------------------------------------------------------------- */

/* Makes logical rows up to `last` resident and points rows[i] at row first + i. */
static void ring_rows(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t *next,
                      int64_t first, int64_t count, int64_t x0, int64_t n)
{
    for (; *next < first + count; (*next)++) load_ring_row(e, sc, b, ch, *next, x0, n);
    int64_t slot = lumen_mod(first, e->ring_len); /* then step without dividing */
    for (int64_t i = 0; i < count; i++, slot = slot + 1 == e->ring_len ? 0 : slot + 1)
        sc->rows[i] = sc->ring + slot * e->slot;
}

/* Where output row y's segment goes: straight into dst when it is contiguous f32. */
static float *out_row(const engine *e, float *buf, int64_t b, int64_t ch, int64_t y, int64_t x0)
{
    const lumen_image *d = e->job->dst;
    if (d->dtype == LUMEN_F32 && (e->cp > 1 || d->stride_w == 1))
        return (float *)lumen_px_addr(d, b, ch, y, x0);
    return buf;
}

static void finish_row(const engine *e, const float *out, int64_t b, int64_t ch, int64_t y,
                       int64_t x0, int64_t n)
{
    char *dp = lumen_px_addr(e->job->dst, b, ch, y, x0);
    if ((const char *)out != dp) lumen_rows_store(e->rk, e->job->dst, e->cp, out, dp, n);
}

/* Whether the tile should stop before output row y (every POLL_ROWS rows of it). */
static bool stop_at(const engine *e, int64_t y, int64_t y0)
{
    return (y - y0) % POLL_ROWS == 0 && lumen_cpu_should_stop(e->stop);
}

/* Filters rows y0 .. y1-1 of columns x0 .. x1-1; false when interrupted. */
static bool process_tile(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t y0,
                         int64_t y1, int64_t x0, int64_t x1)
{
    const lumen_filter_job *job = e->job;
    const int64_t n = x1 - x0, ne = n * e->cp, kh = job->kh;
    const int ts = (int)e->cp;
    int64_t next = y0 - job->ay; /* next logical source row to load */
    int64_t y = y0;
    /*
     * Column pass of unscaled separable filters: four rows per step, so each
     * ring row is loaded once for four outputs (this pass is bound by loads).
     */
    for (; e->four_rows && y + 4 <= y1; y += 4) {
        if (stop_at(e, y, y0)) return false;
        ring_rows(e, sc, b, ch, &next, y - job->ay, kh + 3, x0, n);
        float *o[4];
        for (int j = 0; j < 4; j++) o[j] = out_row(e, sc->out + j * e->slot, b, ch, y + j, x0);
        e->rk->vfilter4(sc->rows, job->ky, (int)kh, o, ne);
        for (int j = 0; j < 4; j++) finish_row(e, o[j], b, ch, y + j, x0, ne);
    }
    /* Direct: the row kernels' step of rows shares its source loads (kh + step - 1 rows in
     * the ring); a band's last rows take a shorter step, with the same sums. */
    for (int step = e->rk->direct_rows_max; !e->separable && y < y1; y += step) {
        if (stop_at(e, y, y0)) return false;
        if (step > y1 - y) step = (int)(y1 - y);
        ring_rows(e, sc, b, ch, &next, y - job->ay, kh + step - 1, x0, n);
        float *o[4];
        for (int j = 0; j < step; j++) o[j] = out_row(e, sc->out + j * e->slot, b, ch, y + j, x0);
        e->rk->direct_rows(sc->rows, job->kernel, job->kw, (int)kh, ts, o, step, ne);
        for (int j = 0; j < step; j++) finish_row(e, o[j], b, ch, y + j, x0, ne);
    }
    for (; y < y1; y++) {
        if (stop_at(e, y, y0)) return false;
        ring_rows(e, sc, b, ch, &next, y - job->ay, kh, x0, n);
        float *out = out_row(e, sc->out, b, ch, y, x0);
        /* A band's last rows sum taps in vfilter4's order, or results would depend on
         * where bands end, i.e. on the thread count. */
        e->rk->vfilter(sc->rows, job->ky, kh, e->sym_y && !e->four_rows, job->scale, out, ne);
        finish_row(e, out, b, ch, y, x0, ne);
    }
    return true;
}

static void process_item(const engine *e, scratch *sc, int64_t item)
{
    const lumen_image *s = e->job->src;
    const int64_t plane = item / e->nbands, band = item % e->nbands;
    const int64_t groups = s->c / e->cp; /* channel groups per image */
    const int64_t b = plane / groups, ch = plane % groups * e->cp;
    const int64_t y0 = s->h * band / e->nbands, y1 = s->h * (band + 1) / e->nbands;
    for (int64_t x0 = 0; x0 < s->w; x0 += e->strip) {
        int64_t x1 = x0 + e->strip < s->w ? x0 + e->strip : s->w;
        if (!process_tile(e, sc, b, ch, y0, y1, x0, x1)) return;
    }
}

static bool scratch_alloc(const engine *e, scratch *sc)
{
    const lumen_filter_job *job = e->job;
    const size_t seg = (size_t)((e->strip + job->kw - 1) * e->cp + LUMEN_ROW_SLACK);
    /* calloc: kernels may read the (never used) slack past a row's end. */
    sc->ring = calloc((size_t)(e->ring_len * e->slot), sizeof(float));
    sc->rows = malloc(sizeof(float *) * (size_t)e->ring_len);
    sc->seg = e->separable ? calloc(seg, sizeof(float)) : NULL;
    sc->out = calloc((size_t)(4 * e->slot), sizeof(float)); /* up to four output rows */
    return sc->ring && sc->rows && sc->out && (sc->seg || !e->separable);
}

static void scratch_free(scratch *sc)
{
    free(sc->ring), free(sc->rows), free(sc->seg), free(sc->out);
}

/* Interleaved src and dst (channel stride 1, pixel stride c) are filtered packed. */
static int64_t choose_packing(const lumen_filter_job *job)
{
    const lumen_image *s = job->src, *d = job->dst;
    const int64_t c = s->c;
    if (c > 1 && c <= 16 && s->stride_c == 1 && s->stride_w == c && d->stride_c == 1 &&
        d->stride_w == c)
        return c;
    return 1;
}

/* Strip width in pixels: the ring (kh+1 rows) fits RING_BYTES, but never under 256 columns. */
static int64_t choose_strip(const lumen_filter_job *job, bool separable, int64_t cp)
{
    int64_t pad = separable ? 0 : job->kw - 1;
    int64_t strip = (int64_t)RING_BYTES / (int64_t)sizeof(float) / (job->kh + 3) / cp - pad;
    if (strip < 256) strip = 256;
    strip = (strip + 31) / 32 * 32;
    return strip < job->src->w ? strip : job->src->w;
}

/*
 * Row bands per plane. Items are handed out dynamically, about four per thread, so that a
 * thread slowed by another process (a shared machine) leaves its share to the others instead
 * of holding every thread at the end (static shares made 2-thread times multiples of the
 * scheduler's tick). A band re-reads the kh - 1 rows above it, so bands stay at least 8 kh rows
 * high; and there are at least as many items as threads when the planes allow it.
 */
static int64_t choose_bands(const lumen_context *ctx, int64_t planes, int64_t h, int kh)
{
    const int64_t t = ctx->threads;
    if (t == 1) return 1;
    const int64_t least = planes % t == 0 ? 1 : (t + planes - 1) / planes;
    int64_t bands = (4 * t + planes - 1) / planes;
    const int64_t most = h / (8 * (int64_t)kh);
    if (bands > most) bands = most;
    if (bands < least) bands = least;
    return bands < h ? bands : h;
}

static lumen_status run_engine(const lumen_context *ctx, const lumen_filter_job *job, bool separable)
{
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx);
    engine e = {job, &stop,
                lumen_cpu_row_kernels(ctx),
                separable, false, false, 1, 0, 0, 0, 0, false};
    if (separable) e.sym_x = lumen_kernel_is_symmetric(job->kx, job->kw), e.sym_y = lumen_kernel_is_symmetric(job->ky, job->kh);
    e.cp = choose_packing(job);
    e.strip = choose_strip(job, separable, e.cp);
    const int64_t planes = job->src->n * (job->src->c / e.cp);
    e.nbands = choose_bands(ctx, planes, job->src->h, job->kh);
    e.slot = (e.strip + (separable ? 0 : job->kw - 1)) * e.cp + LUMEN_ROW_SLACK;
    /* Short columns gain nothing from four rows (their zero-padded taps would dominate). */
    e.four_rows = separable && job->scale == 1.0f && job->kh >= 8;
    const int step = separable || e.rk->direct_rows_max < 2 ? 2 : e.rk->direct_rows_max;
    e.ring_len = job->kh + (e.four_rows ? 3 : step - 1);
    const int64_t items = planes * e.nbands;
    int failed = 0;
#pragma omp parallel num_threads(ctx->threads) reduction(| : failed)
    {
        scratch sc;
        failed = !scratch_alloc(&e, &sc);
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++)
            if (!failed && !lumen_cpu_should_stop(&stop)) process_item(&e, &sc, it);
        scratch_free(&sc);
    }
    if (failed)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "cpu: out of memory for per-thread row buffers");
    return lumen_cpu_stop_status(&stop, LUMEN_OK);
}

lumen_status lumen_cpu_direct(lumen_context *ctx, const lumen_filter_job *job)
{
    return run_engine(ctx, job, false);
}

lumen_status lumen_cpu_separable(lumen_context *ctx, const lumen_filter_job *job)
{
    return run_engine(ctx, job, true);
}
