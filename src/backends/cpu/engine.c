/*
 * The fast CPU path. Each thread walks tiles (one image plane, a band of
 * rows, a strip of columns) with a ring buffer of kh f32 rows: a new source
 * row is converted from its dtype and padded by the border rule once, as it
 * enters the ring, so u8/u16 data is never converted whole-image and the
 * image is never copied with padding. The strip width keeps the ring in L2.
 * Interleaved images (HWC) are filtered with all channels in one row, taps
 * c floats apart, so their loads and stores stay contiguous. f32 source rows
 * are read in place (only the edges, where the border rule applies, are
 * copied), and so are f16/bf16/u8/u16 rows by the kernels that widen them in
 * registers (direct_rows_half, the row pass's hfilter_half); the direct and
 * column-pass kernels round and store such outputs themselves. A half image
 * then moves half the bytes of an f32 one, and a u8 image a quarter, with no
 * conversion pass through a buffer (those passes cost as much as the filter,
 * and could not overlap it: a 12 MP u8 RGB 3x3 filter went 12.3 -> 7.6 ms).
 */
#include "cpu.h"
#include "internal.h"
#include "row_kernels.h"
#include "rows.h"
#include "semantics.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Ring buffer budget per thread; about half a typical L2. */
#define RING_BYTES (256 * 1024)
/* Rows between interruption polls: a band can be the whole image, so polling per tile would
 * not do; 16 rows of a strip are at most a few ms of work, and the poll's cost is nil. */
#define POLL_ROWS 16
/* How far ahead of the ring source rows are requested (prefetch_row): a four-row step. */
#define PREFETCH_ROWS 4

typedef struct engine {
    const lumen_filter_job *job;
    lumen_cpu_stop *stop; /* interruption, polled every POLL_ROWS rows */
    const lumen_row_kernels *rk;
    bool separable, sym_x, sym_y;
    int64_t cp;         /* channels packed in a row: c for interleaved views, else 1 */
    int64_t strip;      /* column strip width in pixels */
    int64_t nbands;     /* row bands per plane */
    int64_t slot;       /* floats per ring slot */
    int64_t ring_len;   /* slots: kh + the direct step - 1, or kh + 3 for four-row columns */
    bool four_rows;     /* column pass four rows at a time */
    bool in_place;      /* source rows contiguous (channels packed) and read in place: f32,
                           or f16/bf16/u8/u16 when fused */
    lumen_row_fmt hin;  /* format of the source rows read in place (f32 unless fused) */
    lumen_row_fmt hout; /* what the kernels write: dst's format when out_direct, else f32 */
    bool out_direct;    /* the kernels write dst rows themselves, with no buffer */
} engine;

static bool rows_contiguous(const lumen_image *im, int64_t cp);

typedef struct scratch {
    float *ring;        /* kh slots */
    const float **rows; /* ring_len pointers */
    const void **srcp;  /* per slot: the source row read in place (direct), or NULL */
    const float **mid;  /* ring_len pointers: the rows of the in-place run */
    const void **hmid;  /* non-f32 sources: the in-place row, or NULL (then mid's f32 copy) */
    const float **edge; /* ring_len pointers: the rows of the right edge run */
    float *seg;         /* padded source segment (separable) */
    float *out;         /* one output row segment */
} scratch;

/* Row pass of outputs [i0, i1) of a segment starting at source pixel xs, through the padded
 * copy in sc->seg (the border rule, other dtypes). */
static void hpass_copied(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t yy,
                         int64_t xs, int64_t i0, int64_t i1, float *slot)
{
    const lumen_filter_job *job = e->job;
    if (i1 <= i0) return;
    lumen_rows_load(e->rk, job, e->cp, b, ch, yy, xs + i0, i1 - i0 + job->kw - 1, sc->seg);
    e->rk->hfilter(sc->seg, job->kx, job->kw, (int)e->cp, e->sym_x, slot + i0 * e->cp,
                   (i1 - i0) * e->cp);
}

/*
 * Outputs [lo, hi) of a row segment of n outputs from source pixel xs on whose taps all lie
 * inside the image: f32 source rows are read there in place, with no copy; only the outputs
 * whose taps reach past an edge go through a padded copy. The run is a multiple of 16
 * outputs, so no row kernel reads past what its taps need (the AVX2 tail reads whole
 * vectors), and at least 64 (or none), so that splitting pays.
 */
static bool inner_run(const engine *e, int64_t xs, int64_t n, int64_t *lo, int64_t *hi)
{
    *lo = xs < 0 ? -xs : 0;
    *hi = e->job->src->w - e->job->kw + 1 - xs;
    if (*hi > n) *hi = n;
    *hi = *lo + (*hi - *lo) / 16 * 16;
    return e->in_place && *hi - *lo >= 64;
}

/* The row pass of one source row for n outputs from pixel xs on (see inner_run). */
static void hpass(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t yy, int64_t xs,
                  int64_t n, float *slot)
{
    const lumen_filter_job *job = e->job;
    int64_t lo, hi;
    if (yy < 0 || !inner_run(e, xs, n, &lo, &hi)) {
        hpass_copied(e, sc, b, ch, yy, xs, 0, n, slot);
        return;
    }
    const char *row = lumen_px_addr(job->src, b, ch, yy, xs + lo);
    if (e->hin == LUMEN_ROW_F32)
        e->rk->hfilter((const float *)row, job->kx, job->kw, (int)e->cp, e->sym_x,
                       slot + lo * e->cp, (hi - lo) * e->cp);
    else
        e->rk->hfilter_half(row, e->hin, job->kx, job->kw, (int)e->cp, e->sym_x, slot + lo * e->cp,
                            (hi - lo) * e->cp);
    hpass_copied(e, sc, b, ch, yy, xs, 0, lo, slot);
    hpass_copied(e, sc, b, ch, yy, xs, hi, n, slot);
}

/*
 * Requests source row yy's pixels [xs, xs + count) (clipped to the image) into the caches. The
 * ring asks for the row PREFETCH_ROWS ahead of each row it loads: one thread reading rows on
 * demand waited on DRAM for most of the row pass (perf: the half row pass's loads), which the
 * hardware prefetcher, stopping at page ends, did not hide.
 */
static void prefetch_row(const engine *e, int64_t b, int64_t ch, int64_t yy, int64_t xs,
                         int64_t count)
{
    const lumen_image *s = e->job->src;
    int64_t xa = xs < 0 ? 0 : xs, xb = xs + count < s->w ? xs + count : s->w;
    if (yy < 0 || xb <= xa || !rows_contiguous(s, e->cp)) return;
    const char *p = lumen_px_addr(s, b, ch, yy, xa);
    const int64_t bytes = (xb - xa) * e->cp * (int64_t)lumen_dtype_size(s->dtype);
    for (int64_t i = 0; i < bytes; i += 64)
        __builtin_prefetch(p + i, 0, 3);
}

/* Brings logical source row r (may lie outside the image) into its ring slot. */
static void load_ring_row(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t r,
                          int64_t x0, int64_t n)
{
    const lumen_filter_job *job = e->job;
    float *slot = sc->ring + lumen_mod(r, e->ring_len) * e->slot;
    int64_t yy = lumen_border_index(r, job->src->h, job->border);
    const int64_t padded = n + job->kw - 1, xs = x0 - job->ax; /* pixels */
    if (r + PREFETCH_ROWS < job->src->h)
        prefetch_row(e, b, ch, lumen_border_index(r + PREFETCH_ROWS, job->src->h, job->border), xs,
                     padded);
    if (e->separable) {
        hpass(e, sc, b, ch, yy, xs, n, slot);
        return;
    }
    int64_t lo, hi;
    const int64_t slot_i = lumen_mod(r, e->ring_len);
    sc->srcp[slot_i] = NULL;
    if (yy < 0 || !inner_run(e, xs, n, &lo, &hi)) {
        lumen_rows_load(e->rk, job, e->cp, b, ch, yy, xs, padded, slot);
        return;
    }
    /* Only the edge runs' pixels are copied; the middle is read from the row itself. */
    lumen_rows_load(e->rk, job, e->cp, b, ch, yy, xs, lo + job->kw - 1, slot);
    lumen_rows_load(e->rk, job, e->cp, b, ch, yy, xs + hi, padded - hi, slot + hi * e->cp);
    sc->srcp[slot_i] = lumen_px_addr(job->src, b, ch, yy, xs + lo);
}

/*
 * Rows [from, to) are about to enter the ring: their edge runs' first touches would each wait
 * for DRAM in turn, so all of them are started at once (a tile's first rows, which no
 * prefetch_row reached). Only rows read in place have edges apart from their middle.
 */
static void prefetch_edges(const engine *e, int64_t b, int64_t ch, int64_t from, int64_t to,
                           int64_t x0, int64_t n)
{
    const lumen_image *s = e->job->src;
    const int64_t xs = x0 - e->job->ax, last = xs + n + e->job->kw - 2;
    int64_t lo, hi;
    if (!inner_run(e, xs, n, &lo, &hi)) return;
    for (int64_t r = from; r < to; r++) {
        const int64_t yy = lumen_border_index(r, s->h, e->job->border);
        if (yy < 0) continue;
        __builtin_prefetch(lumen_px_addr(s, b, ch, yy, xs > 0 ? xs : 0));
        __builtin_prefetch(lumen_px_addr(s, b, ch, yy, xs + hi));
        __builtin_prefetch(lumen_px_addr(s, b, ch, yy, last < s->w ? last : s->w - 1));
    }
}

/* ---- tiles ------------------------------------------------------------- */

/* Makes logical rows up to `last` resident and points rows[i] at row first + i. */
static void ring_rows(const engine *e, scratch *sc, int64_t b, int64_t ch, int64_t *next,
                      int64_t first, int64_t count, int64_t x0, int64_t n)
{
    prefetch_edges(e, b, ch, *next, first + count, x0, n);
    for (; *next < first + count; (*next)++)
        load_ring_row(e, sc, b, ch, *next, x0, n);
    int64_t slot = lumen_mod(first, e->ring_len); /* then step without dividing */
    for (int64_t i = 0; i < count; i++, slot = slot + 1 == e->ring_len ? 0 : slot + 1) {
        sc->rows[i] = sc->ring + slot * e->slot;
        if (!sc->srcp) continue;
        if (e->hin == LUMEN_ROW_F32) {
            sc->mid[i] = sc->srcp[slot];
        } else {
            sc->hmid[i] = sc->srcp[slot];
            sc->mid[i] = NULL;
        }
    }
}

/* One direct kernel call: f32 rows in and out, or the fused half kernel. */
static void direct_call(const engine *e, const float *const *rows, const void *const *half,
                        void *const *o, int step, int64_t n)
{
    const lumen_filter_job *job = e->job;
    if (e->hin != LUMEN_ROW_F32 || e->hout != LUMEN_ROW_F32) /* half rows: choose_formats */
        e->rk->direct_rows_half(rows, half, e->hin, job->kernel, job->kw, job->kh, (int)e->cp, o,
                                e->hout, step, n);
    else
        e->rk->direct_rows(rows, job->kernel, job->kw, job->kh, (int)e->cp, (float *const *)o, step,
                           n);
}

/* Output rows o advanced by `pixels` pixels (of the kernels' output format). */
static void out_at(const engine *e, void *const *o, int step, int64_t pixels, void **oo)
{
    const int64_t bytes = pixels * e->cp * lumen_row_fmt_size(e->hout);
    for (int j = 0; j < step; j++)
        oo[j] = (char *)o[j] + bytes;
}

/*
 * Direct outputs [0, n) of `step` rows from the rows in sc: the edge runs from the ring's
 * padded copies, the middle run (inner_run) from the source rows in place (rows of the
 * constant border have none: their slots hold the whole padded row).
 */
static void direct_step(const engine *e, scratch *sc, int64_t xs, int64_t n, void *const *o,
                        int step)
{
    const int nrows = e->job->kh + step - 1;
    const int64_t cp = e->cp;
    int64_t lo, hi;
    if (!inner_run(e, xs, n, &lo, &hi)) { /* load_ring_row copied whole rows */
        direct_call(e, sc->rows, NULL, o, step, n * cp);
        return;
    }
    for (int i = 0; i < nrows; i++)
        if (!sc->mid[i]) sc->mid[i] = sc->rows[i] + lo * cp;
    void *oo[4];
    out_at(e, o, step, lo, oo);
    direct_call(e, sc->mid, e->hin == LUMEN_ROW_F32 ? NULL : sc->hmid, oo, step, (hi - lo) * cp);
    if (lo > 0) direct_call(e, sc->rows, NULL, o, step, lo * cp);
    for (int i = 0; i < nrows; i++)
        sc->edge[i] = sc->rows[i] + hi * cp;
    out_at(e, o, step, hi, oo);
    if (hi < n) direct_call(e, sc->edge, NULL, oo, step, (n - hi) * cp);
}

/* Where output row y's segment goes: straight into dst when the kernels write it (out_direct),
 * else into the f32 buffer buf. */
static void *out_row(const engine *e, float *buf, int64_t b, int64_t ch, int64_t y, int64_t x0)
{
    return e->out_direct ? (void *)lumen_px_addr(e->job->dst, b, ch, y, x0) : (void *)buf;
}

static void finish_row(const engine *e, const void *out, int64_t b, int64_t ch, int64_t y,
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
    int64_t next = y0 - job->ay; /* next logical source row to load */
    int64_t y = y0;
    /*
     * Column pass of unscaled separable filters: four rows per step, so each
     * ring row is loaded once for four outputs (this pass is bound by loads).
     */
    for (; e->four_rows && y + 4 <= y1; y += 4) {
        if (stop_at(e, y, y0)) return false;
        ring_rows(e, sc, b, ch, &next, y - job->ay, kh + 3, x0, n);
        void *o[4];
        for (int j = 0; j < 4; j++)
            o[j] = out_row(e, sc->out + j * e->slot, b, ch, y + j, x0);
        if (e->hout == LUMEN_ROW_F32)
            e->rk->vfilter4(sc->rows, job->ky, (int)kh, job->scale, (float *const *)o, ne);
        else
            e->rk->vfilter4_half(sc->rows, job->ky, (int)kh, job->scale, o, e->hout, ne);
        for (int j = 0; j < 4; j++)
            finish_row(e, o[j], b, ch, y + j, x0, ne);
    }
    /* Direct: the row kernels' step of rows shares its source loads (kh + step - 1 rows in
     * the ring); a band's last rows take a shorter step, with the same sums. */
    for (int step = e->rk->direct_rows_max; !e->separable && y < y1; y += step) {
        if (stop_at(e, y, y0)) return false;
        if (step > y1 - y) step = (int)(y1 - y);
        ring_rows(e, sc, b, ch, &next, y - job->ay, kh + step - 1, x0, n);
        void *o[4];
        for (int j = 0; j < step; j++)
            o[j] = out_row(e, sc->out + j * e->slot, b, ch, y + j, x0);
        direct_step(e, sc, x0 - job->ax, n, o, step);
        for (int j = 0; j < step; j++)
            finish_row(e, o[j], b, ch, y + j, x0, ne);
    }
    for (; y < y1; y++) {
        if (stop_at(e, y, y0)) return false;
        ring_rows(e, sc, b, ch, &next, y - job->ay, kh, x0, n);
        void *out = out_row(e, sc->out, b, ch, y, x0);
        /* A band's last rows sum taps in vfilter4's order, or results would depend on
         * where bands end, i.e. on the thread count. */
        const bool sym = e->sym_y && !e->four_rows;
        if (e->hout == LUMEN_ROW_F32)
            e->rk->vfilter(sc->rows, job->ky, kh, sym, job->scale, out, ne);
        else
            e->rk->vfilter_half(sc->rows, job->ky, kh, sym, job->scale, out, e->hout, ne);
        finish_row(e, out, b, ch, y, x0, ne);
    }
    return true;
}

static void process_item(const engine *e, scratch *sc, int64_t item)
{
    const lumen_image *s = e->job->dst; /* outputs (a halo: fewer than src's pixels) */
    const int64_t plane = item / e->nbands, band = item % e->nbands;
    const int64_t groups = s->c / e->cp; /* channel groups per image */
    const int64_t b = plane / groups, ch = plane % groups * e->cp;
    const int64_t y0 = s->h * band / e->nbands, y1 = s->h * (band + 1) / e->nbands;
    for (int64_t x0 = 0; x0 < s->w; x0 += e->strip) {
        int64_t x1 = x0 + e->strip < s->w ? x0 + e->strip : s->w;
        if (!process_tile(e, sc, b, ch, y0, y1, x0, x1)) return;
    }
}

/* n items of `size` bytes at offset *off of base (NULL: only sizing), 64-byte aligned. */
static void *carve(char *base, size_t *off, size_t n, size_t size)
{
    void *q = base ? base + *off : NULL;
    *off += (n * size + 63) / 64 * 64;
    return q;
}

/* The buffers of scratch, laid out in one block (one allocation per thread and call: eight
 * were a tenth of a 16 x 16 image's call) at base, or none when base is NULL; its size. */
static size_t scratch_layout(const engine *e, scratch *sc, char *base)
{
    const lumen_filter_job *job = e->job;
    const size_t seg = (size_t)((e->strip + job->kw - 1) * e->cp + LUMEN_ROW_SLACK);
    const size_t ring = (size_t)e->ring_len, ptr = sizeof(void *);
    size_t off = 0;
    sc->ring = carve(base, &off, ring * (size_t)e->slot, sizeof(float));
    sc->out = carve(base, &off, 4 * (size_t)e->slot, sizeof(float)); /* up to four rows */
    sc->rows = carve(base, &off, ring, ptr);
    sc->seg = e->separable ? carve(base, &off, seg, sizeof(float)) : NULL;
    sc->srcp = e->separable ? NULL : carve(base, &off, ring, ptr);
    sc->mid = e->separable ? NULL : carve(base, &off, ring, ptr);
    sc->hmid = e->separable ? NULL : carve(base, &off, ring, ptr);
    sc->edge = e->separable ? NULL : carve(base, &off, ring, ptr);
    return off;
}

static bool scratch_alloc(const engine *e, scratch *sc)
{
    const size_t bytes = scratch_layout(e, sc, NULL);
    char *base = aligned_alloc(64, bytes);
    if (!base) return false;
    /* zeroed: kernels may read the (never used) slack past a row's end, and srcp's NULLs mean
     * "no row read in place" */
    memset(base, 0, bytes);
    scratch_layout(e, sc, base);
    return true;
}

static void scratch_free(scratch *sc)
{
    free(sc->ring); /* the block's start (NULL when scratch_alloc failed) */
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
    return strip < job->dst->w ? strip : job->dst->w;
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

static lumen_row_fmt row_fmt(lumen_dtype t)
{
    switch (t) {
    case LUMEN_F16: return LUMEN_ROW_F16;
    case LUMEN_BF16: return LUMEN_ROW_BF16;
    case LUMEN_U8: return LUMEN_ROW_U8;
    case LUMEN_U16: return LUMEN_ROW_U16;
    default: return LUMEN_ROW_F32;
    }
}

/* Rows of im whose cp channels (cp > 1: interleaved) lie contiguous. */
static bool rows_contiguous(const lumen_image *im, int64_t cp)
{
    return cp > 1 ? im->stride_c == 1 : im->stride_w == 1;
}

/*
 * Which rows the kernels read and write themselves (the rest goes through rows.c's
 * conversions): contiguous f32 always; contiguous f16/bf16/u8/u16 where the kernel set has the
 * fused variants (direct_rows_half; hfilter_half for the row pass, vfilter*_half for the column
 * pass; the generic set has none).
 */
static void choose_formats(engine *e)
{
    const lumen_row_kernels *rk = e->rk;
    const lumen_image *s = e->job->src, *d = e->job->dst;
    const bool fused_in = e->separable ? rk->hfilter_half && e->job->kw <= LUMEN_HFILTER_HALF_MAX
                                       : rk->direct_rows_half != NULL;
    const bool fused_out =
        e->separable ? rk->vfilter4_half && rk->vfilter_half : rk->direct_rows_half != NULL;
    e->in_place = rows_contiguous(s, e->cp) && (s->dtype == LUMEN_F32 || fused_in);
    e->hin = e->in_place ? row_fmt(s->dtype) : LUMEN_ROW_F32;
    e->out_direct = rows_contiguous(d, e->cp) && (d->dtype == LUMEN_F32 || fused_out);
    e->hout = e->out_direct ? row_fmt(d->dtype) : LUMEN_ROW_F32;
    /* A direct pair with no fused instance (u16 in, u8 out): the output goes through rows.c. */
    if (!e->separable && !lumen_row_pair_fused(e->hin, e->hout)) {
        e->out_direct = d->dtype == LUMEN_F32 && rows_contiguous(d, e->cp);
        e->hout = LUMEN_ROW_F32;
    }
}

typedef struct engine_run {
    const engine *e;
    lumen_cpu_sched *sched;
    atomic_int failed; /* a thread could not allocate its row buffers */
} engine_run;

static void engine_body(void *arg, int tid)
{
    engine_run *run = arg;
    scratch sc;
    if (!scratch_alloc(run->e, &sc)) {
        atomic_store(&run->failed, 1);
    } else {
        /* Own share of bands first, the others' once it runs out (cpu_sched.c): 3x3 direct and
         * box 5x5 4-6 % faster than dynamic at 2 threads, 7x7 unchanged (Zen 5). */
        int turn = 0;
        for (int64_t it; !atomic_load_explicit(&run->failed, memory_order_relaxed) &&
                         (it = lumen_cpu_sched_next(run->sched, tid, &turn)) >= 0;)
            if (!lumen_cpu_should_stop(run->e->stop)) process_item(run->e, &sc, it);
    }
    scratch_free(&sc);
}

/* The run's work in lumen_cpu_team_size's units (about 1 ns of one thread): the kernels' taps
 * and a pixel's loads and stores (LUMEN_CPU_MIN_SHARE's calibration: docs/benchmarks.md). */
static double engine_work(const engine *e)
{
    const lumen_image *d = e->job->dst;
    const double taps = e->separable ? e->job->kw + e->job->kh : (double)e->job->kw * e->job->kh;
    return (double)d->n * (double)d->c * (double)d->h * (double)d->w * (0.03 * taps + 0.2);
}

static lumen_status run_engine(const lumen_context *ctx, const lumen_filter_job *job,
                               bool separable)
{
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx);
    engine e = {.job = job,
                .stop = &stop,
                .rk = lumen_cpu_row_kernels(ctx),
                .separable = separable,
                .cp = 1};
    if (separable)
        e.sym_x = lumen_kernel_is_symmetric(job->kx, job->kw),
        e.sym_y = lumen_kernel_is_symmetric(job->ky, job->kh);
    e.cp = choose_packing(job);
    choose_formats(&e);
    e.strip = choose_strip(job, separable, e.cp);
    const int64_t planes = job->src->n * (job->src->c / e.cp);
    e.nbands = choose_bands(ctx, planes, job->dst->h, job->kh);
    e.slot = (e.strip + (separable ? 0 : job->kw - 1)) * e.cp + LUMEN_ROW_SLACK;
    /* Four rows per step from 3 taps on (box blurs, small Gaussians too); below that a
     * column's few loads are no bottleneck. */
    e.four_rows = separable && job->kh >= 3;
    const int step = separable || e.rk->direct_rows_max < 2 ? 2 : e.rk->direct_rows_max;
    e.ring_len = job->kh + (e.four_rows ? 3 : step - 1);
    const int64_t items = planes * e.nbands;
    lumen_cpu_sched sched;
    engine_run run = {.e = &e, .sched = &sched};
    const int team = lumen_cpu_team_size(ctx, engine_work(&e), items);
    const lumen_status st = lumen_cpu_pool_share(team, items, &sched, engine_body, &run);
    if (st) return st;
    if (atomic_load(&run.failed))
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "cpu: out of memory for per-thread row buffers");
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
