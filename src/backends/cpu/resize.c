/*
 * LUMEN_OP_RESIZE on the CPU (docs/resize.md): the scalar reference, the nearest-neighbour
 * copy and the separable fast path. The op built both axes' tables; here they are applied.
 *
 * Fast path: the horizontal pass first (OpenCV's and Pillow's order), only over the input rows
 * that the vertical pass reads: each thread takes a chunk of output rows and keeps the
 * horizontally resampled rows it needs in a ring of `y.taps` rows (the windows' starts never
 * decrease, so each needed row is computed once per chunk). Channels that sit together in
 * memory (stride_c 1) are resampled as one pixel; other layouts plane by plane.
 */
#include "cpu.h"
#include "resize_cpu.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference ---- */

/* One output pixel: the vertical sum of horizontal sums, in double, in that order. */
static double ref_pixel(const lumen_resize_job *j, int64_t b, int64_t c, int64_t oy, int64_t ox)
{
    const lumen_image *s = j->src;
    const float *wy = j->y.weights + oy * j->y.taps, *wx = j->x.weights + ox * j->x.taps;
    double acc = 0;
    for (int ky = 0; ky < j->y.taps; ky++) {
        const int64_t y = j->y.first[oy] + ky;
        double row = 0;
        for (int kx = 0; kx < j->x.taps; kx++)
            row += (double)wx[kx] *
                   lumen_load_px(lumen_px_addr(s, b, c, y, j->x.first[ox] + kx), s->dtype);
        acc += (double)wy[ky] * row;
    }
    return acc;
}

/* Pillow's clip8: a 22-bit fixed-point sum (one half added) to a byte. */
static inline uint8_t clip8(int32_t ss)
{
    ss >>= 22;
    return (uint8_t)(ss < 0 ? 0 : ss > 255 ? 255 : ss);
}

/* One output pixel of Pillow's 8-bit path in its integers: the bytes of the horizontal pass,
 * then their vertical sum. */
static uint8_t ref_pixel_pillow(const lumen_resize_job *j, int64_t b, int64_t c, int64_t oy,
                                int64_t ox)
{
    const lumen_image *s = j->src;
    const int32_t *wy = j->y.iweights + oy * j->y.taps, *wx = j->x.iweights + ox * j->x.taps;
    int32_t acc = 1 << 21;
    for (int ky = 0; ky < j->y.taps; ky++) {
        const int64_t y = j->y.first[oy] + ky;
        int32_t row = 1 << 21;
        for (int kx = 0; kx < j->x.taps; kx++)
            row += wx[kx] * *(const uint8_t *)lumen_px_addr(s, b, c, y, j->x.first[ox] + kx);
        acc += wy[ky] * clip8(row);
    }
    return clip8(acc);
}

/* The copy of one element (nearest): bit for bit when the dtypes agree. */
static void copy_px(const lumen_image *s, const lumen_image *d, const char *from, char *to)
{
    if (s->dtype == d->dtype)
        memcpy(to, from, lumen_dtype_size(s->dtype));
    else
        lumen_store_px(to, d->dtype, lumen_load_px(from, s->dtype));
}

static lumen_status reference(lumen_context *ctx, const lumen_resize_job *j)
{
    const lumen_image *s = j->src, *d = j->dst;
    lumen_cpu_stop st = lumen_cpu_stop_init(ctx);
#pragma omp parallel for num_threads(ctx->threads) schedule(dynamic, 1) collapse(2)
    for (int64_t b = 0; b < d->n; b++)
        for (int64_t oy = 0; oy < d->h; oy++) {
            if (lumen_cpu_should_stop(&st)) continue;
            for (int64_t c = 0; c < d->c; c++)
                for (int64_t ox = 0; ox < d->w; ox++) {
                    char *to = lumen_px_addr(d, b, c, oy, ox);
                    if (j->nearest)
                        copy_px(s, d, lumen_px_addr(s, b, c, j->y.first[oy], j->x.first[ox]), to);
                    else if (j->pillow_rounding)
                        *(uint8_t *)to = ref_pixel_pillow(j, b, c, oy, ox);
                    else
                        lumen_store_px(to, d->dtype, (float)ref_pixel(j, b, c, oy, ox));
                }
        }
    return lumen_cpu_stop_status(&st, LUMEN_OK);
}

/* ---- nearest: copies ---- */

typedef struct nearest_run {
    const lumen_resize_job *j;
    lumen_cpu_stop *st;
    bool whole; /* interleaved channels of one dtype: one memcpy per pixel */
} nearest_run;

/* Output row it (image it / h, row it % h). */
static void nearest_row(void *arg, int64_t it, int tid)
{
    (void)tid;
    const nearest_run *r = arg;
    const lumen_resize_job *j = r->j;
    const lumen_image *s = j->src, *d = j->dst;
    const size_t es = lumen_dtype_size(s->dtype);
    const int64_t b = it / d->h, oy = it % d->h, sy = j->y.first[oy];
    if (lumen_cpu_should_stop(r->st)) return;
    for (int64_t ox = 0; ox < d->w; ox++) {
        const char *from = lumen_px_addr(s, b, 0, sy, j->x.first[ox]);
        char *to = lumen_px_addr(d, b, 0, oy, ox);
        if (r->whole) {
            memcpy(to, from, es * (size_t)s->c);
            continue;
        }
        for (int64_t c = 0; c < d->c; c++)
            copy_px(s, d, from + c * s->stride_c * (int64_t)es,
                    to + c * d->stride_c * (int64_t)lumen_dtype_size(d->dtype));
    }
}

static lumen_status nearest(lumen_context *ctx, const lumen_resize_job *j)
{
    const lumen_image *s = j->src, *d = j->dst;
    lumen_cpu_stop st = lumen_cpu_stop_init(ctx);
    nearest_run r = {j, &st, s->dtype == d->dtype && s->stride_c == 1 && d->stride_c == 1};
    const int64_t rows = d->n * d->h;
    const double work = (double)rows * (double)d->w * (double)d->c * 0.5; /* a copy per pixel */
    lumen_cpu_parallel_for(lumen_cpu_team_size(ctx, work, rows), rows, nearest_row, &r);
    return lumen_cpu_stop_status(&st, LUMEN_OK);
}

/* The work of a separable resize in lumen_cpu_team_size's units: every output takes its taps
 * on both axes, and every source pixel is read once. */
static double resize_work(const lumen_resize_job *j)
{
    const lumen_image *s = j->src, *d = j->dst;
    const double out = (double)d->n * (double)d->c * (double)d->h * (double)d->w;
    const double in = (double)s->n * (double)s->c * (double)s->h * (double)s->w;
    return out * 0.05 * (double)(j->x.taps + j->y.taps) + in * 0.1;
}

/* ---- the separable fast path ---- */

typedef struct plane_geom {
    int C;           /* channels resampled together (1 or src->c) */
    int64_t groups;  /* planes per image: src->c / C */
    bool src_contig; /* a group row of src is C * w contiguous elements */
    bool dst_contig;
} plane_geom;

static plane_geom geometry(const lumen_resize_job *j)
{
    const lumen_image *s = j->src, *d = j->dst;
    plane_geom g;
    g.C = s->stride_c == 1 && d->stride_c == 1 && s->c <= 64 ? (int)s->c : 1;
    if (s->c == 1) g.C = 1;
    g.groups = s->c / g.C;
    g.src_contig = s->stride_w == g.C && (g.C == 1 || s->stride_c == 1);
    g.dst_contig = d->stride_w == g.C && (g.C == 1 || d->stride_c == 1);
    return g;
}

/* Per-thread buffers: the source row in f32, the ring of horizontal rows, the sums. */
typedef struct thread_bufs {
    float *srow, *ring, *acc;
    const void **rows;
    int64_t ring_row; /* floats per ring row */
} thread_bufs;

/* The ring only for horizontal first (vertical first sums straight from src). */
static bool bufs_alloc(thread_bufs *t, const lumen_resize_job *j, int C, bool vfirst)
{
    t->ring_row = ((j->x.out * C + 4) + 15) & ~(int64_t)15;
    t->srow = malloc(sizeof(float) * (size_t)(j->x.in * C + 4));
    t->ring = malloc(sizeof(float) * (size_t)(vfirst ? 1 : t->ring_row * j->y.taps));
    t->acc = malloc(sizeof(float) * (size_t)t->ring_row);
    t->rows = malloc(sizeof(float *) * (size_t)j->y.taps);
    if (t->srow) memset(t->srow, 0, sizeof(float) * (size_t)(j->x.in * C + 4));
    return t->srow && t->ring && t->acc && t->rows;
}

static void bufs_free(thread_bufs *t)
{
    free(t->srow), free(t->ring), free(t->acc), free(t->rows);
}

/* Row y of plane (b, g) of src, horizontally resampled into out. */
static void h_row(const lumen_resize_job *j, const lumen_resize_kernels *k, const plane_geom *g,
                  thread_bufs *t, int64_t b, int64_t grp, int64_t y, float *out)
{
    const lumen_image *s = j->src;
    const char *row = lumen_px_addr(s, b, grp * g->C, y, 0);
    if (g->src_contig) {
        k->hpass(row, s->dtype, g->C, &j->x, 1, out);
    } else { /* gathered into f32 first */
        const int64_t es = (int64_t)lumen_dtype_size(s->dtype);
        for (int64_t x = 0; x < j->x.in; x++)
            for (int c = 0; c < g->C; c++)
                t->srow[x * g->C + c] =
                    lumen_load_px(row + (x * s->stride_w + c * s->stride_c) * es, s->dtype);
        k->hpass(t->srow, LUMEN_F32, g->C, &j->x, 0, out);
    }
}

/* Output row oy of plane (b, g) from the sums in t->acc. */
static void store(const lumen_resize_job *j, const lumen_resize_kernels *k, const plane_geom *g,
                  float *acc, int64_t b, int64_t grp, int64_t oy)
{
    const lumen_image *d = j->dst;
    char *row = lumen_px_addr(d, b, grp * g->C, oy, 0);
    if (g->dst_contig) {
        k->store_row(acc, j->x.out * g->C, d->dtype, row);
        return;
    }
    const int64_t es = (int64_t)lumen_dtype_size(d->dtype);
    for (int64_t x = 0; x < j->x.out; x++)
        for (int c = 0; c < g->C; c++)
            lumen_store_px(row + (x * d->stride_w + c * d->stride_c) * es, d->dtype,
                           acc[x * g->C + c]);
}

/* Where a pass's f32 sums of output row oy go: straight into dst when it is a contiguous f32
 * row (no copy), else the thread's buffer for store(). */
static float *sums_to(const lumen_resize_job *j, const plane_geom *g, thread_bufs *t, int64_t b,
                      int64_t grp, int64_t oy)
{
    if (g->dst_contig && j->dst->dtype == LUMEN_F32)
        return (float *)lumen_px_addr(j->dst, b, grp * g->C, oy, 0);
    return t->acc;
}

/* Output rows [y0, y1) of one plane, with the ring starting empty. */
static void chunk(const lumen_resize_job *j, const lumen_resize_kernels *k, const plane_geom *g,
                  thread_bufs *t, int64_t b, int64_t grp, int64_t y0, int64_t y1)
{
    const int K = j->y.taps;
    int64_t have_lo = 0, have_hi = 0; /* rows [have_lo, have_hi) are in the ring */
    for (int64_t oy = y0; oy < y1; oy++) {
        const int64_t lo = j->y.first[oy], hi = lo + K;
        int64_t from = lo > have_hi || lo < have_lo ? lo : have_hi;
        for (int64_t y = from; y < hi; y++)
            h_row(j, k, g, t, b, grp, y, t->ring + (y % K) * t->ring_row);
        have_lo = lo, have_hi = hi;
        for (int i = 0; i < K; i++)
            t->rows[i] = t->ring + ((lo + i) % K) * t->ring_row;
        const float *w = j->y.weights + oy * K;
        const int64_t n = j->x.out * g->C;
        if (g->dst_contig && k->vpass_to((const float *const *)t->rows, w, K, n, j->dst->dtype,
                                         lumen_px_addr(j->dst, b, grp * g->C, oy, 0)))
            continue; /* stored in dst's dtype by the pass itself */
        k->vpass(t->rows, LUMEN_F32, w, K, n, t->acc);
        store(j, k, g, t->acc, b, grp, oy);
    }
}

/* Output rows [y0, y1) of one plane, the vertical pass first: each output row sums its source
 * rows over the whole width (contiguous, the widest vectors), then that one row is resampled
 * horizontally. Cheaper when shrinking (see vertical_first). */
static void chunk_vfirst(const lumen_resize_job *j, const lumen_resize_kernels *k,
                         const plane_geom *g, thread_bufs *t, int64_t b, int64_t grp, int64_t y0,
                         int64_t y1)
{
    const int K = j->y.taps;
    for (int64_t oy = y0; oy < y1; oy++) {
        for (int i = 0; i < K; i++)
            t->rows[i] = lumen_px_addr(j->src, b, grp * g->C, j->y.first[oy] + i, 0);
        k->vpass(t->rows, j->src->dtype, j->y.weights + oy * K, K, j->x.in * g->C, t->srow);
        float *sums = sums_to(j, g, t, b, grp, oy);
        k->hpass(t->srow, LUMEN_F32, g->C, &j->x, 0, sums);
        if (sums == t->acc) store(j, k, g, t->acc, b, grp, oy);
    }
}

/* Which order costs less, in multiply-adds (the contiguous vertical pass counted at 16 lanes,
 * the horizontal one a pixel per step): horizontal first touches each needed source row once
 * and then sums output-width rows; vertical first sums source-width rows per output row and
 * then resamples only those. Pillow's 8-bit rule rounds between horizontal and vertical, and
 * strided sources gather first: both keep horizontal first. A window of a larger resize
 * decides on the whole resize's tables, so that it sums in the whole's order (the same bits). */
static bool vertical_first(const lumen_resize_job *j, const plane_geom *g)
{
    if (j->pillow_rounding || !g->src_contig) return false;
    const lumen_resize_axis *y = j->whole_y ? j->whole_y : &j->y;
    const lumen_resize_axis *x = j->whole_x ? j->whole_x : &j->x;
    int64_t needed = 0, hi = 0; /* distinct source rows the vertical windows cover */
    for (int64_t oy = 0; oy < y->out; oy++) {
        const int64_t lo = y->first[oy], top = lo + y->taps;
        needed += top - (lo > hi ? lo : hi) > 0 ? top - (lo > hi ? lo : hi) : 0;
        hi = top > hi ? top : hi;
    }
    const double C = g->C, px = g->C <= 4 ? 1 : C, lanes = 16;
    const double out_h = (double)y->out, out_w = (double)x->out, Ky = y->taps;
    const double h_first = (double)needed * out_w * x->taps * px + out_h * out_w * C * Ky / lanes;
    const double v_first = out_h * (double)x->in * C * Ky / lanes + out_h * out_w * x->taps * px;
    return v_first < h_first;
}

/* ---- Pillow's 8-bit path, in its integers ---- */

/* Row y of plane (b, grp) of src (u8) horizontally: bytes, as Pillow's first pass stores. */
static void pillow_h_row(const lumen_resize_job *j, const plane_geom *g, int64_t b, int64_t grp,
                         int64_t y, uint8_t *out)
{
    const lumen_image *s = j->src;
    const uint8_t *row = (const uint8_t *)lumen_px_addr(s, b, grp * g->C, y, 0);
    const int K = j->x.taps, C = g->C;
    const int64_t sw = s->stride_w, sc = s->stride_c;
    for (int64_t o = 0; o < j->x.out; o++) {
        const uint8_t *p = row + (int64_t)j->x.first[o] * sw;
        const int32_t *w = j->x.iweights + o * K;
        for (int c = 0; c < C; c++) {
            int32_t ss = 1 << 21;
            for (int k = 0; k < K; k++)
                ss += w[k] * p[k * sw + c * sc];
            out[o * C + c] = clip8(ss);
        }
    }
}

/* Output rows [y0, y1) of one plane: a ring of horizontal byte rows, as chunk(); out: n
 * bytes of scratch for a non-contiguous dst row. */
static void pillow_chunk(const lumen_resize_job *j, const lumen_resize_kernels *k,
                         const plane_geom *g, const int8_t *dp_tab, int dp_P, uint8_t *ring,
                         int32_t *acc, uint8_t *out, const uint8_t **rows, int64_t b, int64_t grp,
                         int64_t y0, int64_t y1)
{
    const int K = j->y.taps, C = g->C;
    const int64_t n = j->x.out * C;
    const lumen_image *d = j->dst;
    int64_t have_lo = 0, have_hi = 0;
    for (int64_t oy = y0; oy < y1; oy++) {
        const int64_t lo = j->y.first[oy], hi = lo + K;
        const int64_t from = lo > have_hi || lo < have_lo ? lo : have_hi;
        for (int64_t y = from; y < hi; y++) {
            if (dp_tab)
                k->pillow_hrow_dp((const uint8_t *)lumen_px_addr(j->src, b, grp * C, y, 0), C,
                                  &j->x, dp_tab, dp_P, ring + (y % K) * n);
            else if (g->src_contig)
                k->pillow_hrow((const uint8_t *)lumen_px_addr(j->src, b, grp * C, y, 0), C, &j->x,
                               ring + (y % K) * n);
            else
                pillow_h_row(j, g, b, grp, y, ring + (y % K) * n);
        }
        have_lo = lo, have_hi = hi;
        for (int i = 0; i < K; i++)
            rows[i] = ring + ((lo + i) % K) * n;
        uint8_t *row = (uint8_t *)lumen_px_addr(d, b, grp * C, oy, 0);
        k->pillow_vrow(rows, j->y.iweights + oy * K, K, n, acc, g->dst_contig ? row : out);
        if (!g->dst_contig)
            for (int64_t x = 0; x < j->x.out; x++)
                for (int c = 0; c < C; c++)
                    row[x * d->stride_w + c * d->stride_c] = out[x * C + c];
    }
}

/* Output rows per work item: enough items for the threads to balance (about four each), few
 * enough that the source rows neighbouring chunks share cost little; a chunk that fills a ring
 * of y.taps rows first gets at least 4 y.taps rows, up to a thread's share. */
static int64_t rows_per_chunk(const lumen_context *ctx, const lumen_resize_job *j, bool ring)
{
    int64_t per = (j->y.out + 4 * ctx->threads - 1) / (4 * ctx->threads);
    if (per < 8) per = 8;
    if (ring && per < 4 * (int64_t)j->y.taps) per = 4 * (int64_t)j->y.taps;
    /* but never fewer chunks than threads: shrinking to 224 rows with 73-row windows would
     * otherwise be one chunk on one thread (the rows two chunks both read cost ~5 % there) */
    const int64_t even = (j->y.out + ctx->threads - 1) / ctx->threads;
    per = per < even ? per : even > 0 ? even : 1;
    /* and a whole number of chunks per thread, of equal rows: 224 rows in chunks of 60 (box's
     * 15-row windows) left one thread 104 rows to the other's 120 */
    int64_t chunks = (j->y.out + per - 1) / per;
    chunks = (chunks + ctx->threads - 1) / ctx->threads * ctx->threads;
    return chunks > 0 ? (j->y.out + chunks - 1) / chunks : 1;
}

/*
 * The chunked passes (separable, Pillow u8): items = (plane, chunk of `per` output rows), run
 * on a team sized for the work and shared out by lumen_cpu_sched (each thread its own rows
 * first, then the others'). Each thread allocates its buffers (its body) and then takes chunks
 * with next_chunk.
 */
typedef struct chunk_run {
    const lumen_resize_job *j;
    const lumen_resize_kernels *k;
    const plane_geom *g;
    lumen_cpu_stop *st;
    lumen_cpu_sched sched;
    int64_t chunks, per;
    atomic_int failed;    /* a thread could not allocate its buffers */
    bool vfirst;          /* separable: vertical pass first */
    const int8_t *dp_tab; /* Pillow u8: the dot-product pass's weights, or NULL */
    int dp_P;
} chunk_run;

typedef struct chunk_at {
    int64_t b, grp, y0, y1;
} chunk_at;

/* Item it of `chunks` chunks of `per` output rows per plane: its image, group and rows. */
static chunk_at chunk_of(const lumen_resize_job *j, const plane_geom *g, int64_t chunks,
                         int64_t per, int64_t it)
{
    const int64_t plane = it / chunks, y0 = it % chunks * per;
    return (chunk_at){plane / g->groups, plane % g->groups, y0,
                      y0 + per < j->y.out ? y0 + per : j->y.out};
}

/* The calling thread's next chunk; false when none is left (or a buffer failed). */
static bool next_chunk(chunk_run *r, int tid, int *turn, chunk_at *c)
{
    for (int64_t it;
         !atomic_load(&r->failed) && (it = lumen_cpu_sched_next(&r->sched, tid, turn)) >= 0;) {
        if (lumen_cpu_should_stop(r->st)) continue;
        *c = chunk_of(r->j, r->g, r->chunks, r->per, it);
        return true;
    }
    return false;
}

static lumen_status run_chunks(const lumen_context *ctx, chunk_run *r, void (*body)(void *, int))
{
    const lumen_resize_job *j = r->j;
    r->per = rows_per_chunk(ctx, j, !r->vfirst); /* Pillow u8 is horizontal first */
    r->chunks = (j->y.out + r->per - 1) / r->per;
    const int64_t items = j->dst->n * r->g->groups * r->chunks;
    const int team = lumen_cpu_team_size(ctx, resize_work(j), items);
    const lumen_status st = lumen_cpu_pool_share(team, items, &r->sched, body, r);
    if (st) return st;
    if (atomic_load(&r->failed))
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "resize: out of memory for rows");
    return lumen_cpu_stop_status(r->st, LUMEN_OK);
}

static void pillow_body(void *arg, int tid)
{
    chunk_run *r = arg;
    const lumen_resize_job *j = r->j;
    const int64_t n = j->x.out * r->g->C;
    uint8_t *ring = malloc((size_t)(n * j->y.taps)), *out = malloc((size_t)n);
    int32_t *acc = malloc(sizeof(int32_t) * (size_t)n);
    const uint8_t **rows = malloc(sizeof(uint8_t *) * (size_t)j->y.taps);
    if (!(ring && acc && out && rows)) atomic_store(&r->failed, 1);
    int turn = 0;
    for (chunk_at c; next_chunk(r, tid, &turn, &c);)
        pillow_chunk(j, r->k, r->g, r->dp_tab, r->dp_P, ring, acc, out, rows, c.b, c.grp, c.y0,
                     c.y1);
    free(ring), free(acc), free(out), free(rows);
}

static lumen_status pillow_u8(lumen_context *ctx, const lumen_resize_job *j,
                              const lumen_resize_kernels *k)
{
    const plane_geom g = geometry(j);
    /* the dot-product horizontal pass's weights, once per call */
    int8_t *dp_tab = NULL;
    int dp_P = 1;
    if (g.src_contig && k->pillow_dp_ok(g.C)) {
        dp_tab = malloc((size_t)(j->x.out * k->pillow_dp_entry(j->x.taps)));
        if (!dp_tab) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "resize: out of memory");
        dp_P = k->pillow_dp_table(g.C, &j->x, dp_tab);
    }
    lumen_cpu_stop st = lumen_cpu_stop_init(ctx);
    chunk_run r = {.j = j, .k = k, .g = &g, .st = &st, .dp_tab = dp_tab, .dp_P = dp_P};
    const lumen_status s = run_chunks(ctx, &r, pillow_body);
    free(dp_tab);
    return s;
}

#define RESIZE_KERNELS(isa_name, sfx)                                                              \
    {                                                                                              \
        .isa = isa_name, .load_row = lumen_resize_load_row_##sfx,                                  \
        .store_row = lumen_resize_store_row_##sfx, .hpass = lumen_resize_hpass_##sfx,              \
        .pillow_hrow = lumen_resize_pillow_hrow_##sfx,                                             \
        .pillow_vrow = lumen_resize_pillow_vrow_##sfx, .vpass = lumen_resize_vpass_##sfx,          \
        .vpass_to = lumen_resize_vpass_to_##sfx, .box2_u8 = lumen_resize_box2_u8_##sfx,            \
        .box2_u16 = lumen_resize_box2_u16_##sfx, .box2_float = lumen_resize_box2_float_##sfx,      \
        .pillow_dp_ok = lumen_resize_pillow_dp_ok_##sfx,                                           \
        .pillow_dp_table = lumen_resize_pillow_dp_table_##sfx,                                     \
        .pillow_dp_entry = lumen_resize_pillow_dp_entry_##sfx,                                     \
        .pillow_hrow_dp = lumen_resize_pillow_hrow_dp_##sfx                                        \
    }

static const lumen_resize_kernels *kernels_for(const lumen_context *ctx)
{
    static const lumen_resize_kernels k512 = RESIZE_KERNELS("avx512", avx512),
                                      k2 = RESIZE_KERNELS("avx2+fma", avx2),
                                      kg = RESIZE_KERNELS("generic", generic);
    return lumen_ctx_use_avx512(ctx) ? &k512 : lumen_ctx_use_avx2(ctx) ? &k2 : &kg;
}

static void sep_body(void *arg, int tid)
{
    chunk_run *r = arg;
    thread_bufs t;
    if (!bufs_alloc(&t, r->j, r->g->C, r->vfirst)) atomic_store(&r->failed, 1);
    int turn = 0;
    for (chunk_at c; next_chunk(r, tid, &turn, &c);) {
        if (r->vfirst)
            chunk_vfirst(r->j, r->k, r->g, &t, c.b, c.grp, c.y0, c.y1);
        else
            chunk(r->j, r->k, r->g, &t, c.b, c.grp, c.y0, c.y1);
    }
    bufs_free(&t);
}

static lumen_status separable(lumen_context *ctx, const lumen_resize_job *j,
                              const lumen_resize_kernels *k, bool vfirst)
{
    const plane_geom g = geometry(j);
    lumen_cpu_stop st = lumen_cpu_stop_init(ctx);
    chunk_run r = {.j = j, .k = k, .g = &g, .st = &st, .vfirst = vfirst};
    return run_chunks(ctx, &r, sep_body);
}

/* ---- u8, an exact 2:1 box on both axes: integer sums ---- */

/* Output o reads inputs 2o and 2o + 1 with weights 1/2 each (OpenCV's and torch's linear and
 * area at exactly half the size, Pillow's box on f32 tables...): the table says so itself. */
static bool axis_is_box2(const lumen_resize_axis *a)
{
    if (a->taps < 2 || a->in < 2 * a->out) return false;
    for (int64_t o = 0; o < a->out; o++) {
        const float *w = a->weights + o * a->taps;
        if (a->first[o] != 2 * o || w[0] != 0.5f || w[1] != 0.5f) return false;
        for (int k = 2; k < a->taps; k++)
            if (w[k] != 0.f) return false;
    }
    return true;
}

/* u8 or u16 in and the same out, contiguous rows, both axes 2:1 boxes: the 2x2 sums in 16-bit
 * (u8) or 32-bit (u16) integers give the f32 path's values exactly (every partial sum is exact
 * in f32, 4 * 65535 < 2^24; ties to even on both). */
static bool box2_applies(const lumen_resize_job *j, const plane_geom *g)
{
    const lumen_dtype t = j->src->dtype;
    return !j->pillow_rounding && (t == LUMEN_U8 || t == LUMEN_U16) && j->dst->dtype == t &&
           g->src_contig && g->dst_contig && axis_is_box2(&j->x) && axis_is_box2(&j->y);
}

/* f32, f16 or bf16 in and out, contiguous rows, both axes 2:1 boxes of exactly 2 taps, and
 * the separable path would go vertical first (it does for these tables): one fused pass
 * (box2_float) gives its bits, where the kernels have one for C channels (asked with n = 0). */
static bool box2_float_applies(const lumen_resize_job *j, const plane_geom *g,
                               const lumen_resize_kernels *k)
{
    return !j->pillow_rounding && g->src_contig && g->dst_contig && j->x.taps == 2 &&
           j->y.taps == 2 && axis_is_box2(&j->x) && axis_is_box2(&j->y) && vertical_first(j, g) &&
           k->box2_float(NULL, NULL, j->src->dtype, g->C, 0, j->dst->dtype, NULL);
}

/* One output row of a 2:1 box in both axes from source rows 2 oy and 2 oy + 1 of plane
 * (b, ch): the integer kernels (box2_applies) or the float one (box2_float_applies). */
static void box2_row(const lumen_resize_job *j, const lumen_resize_kernels *k, const plane_geom *g,
                     bool u8, int64_t b, int64_t ch, int64_t oy)
{
    const void *r0 = lumen_px_addr(j->src, b, ch, 2 * oy, 0);
    const void *r1 = lumen_px_addr(j->src, b, ch, 2 * oy + 1, 0);
    void *d = lumen_px_addr(j->dst, b, ch, oy, 0);
    if (u8 && j->src->dtype == LUMEN_U16)
        k->box2_u16(r0, r1, g->C, j->x.out * g->C, d);
    else if (u8)
        k->box2_u8(r0, r1, g->C, j->x.out * g->C, d);
    else
        k->box2_float(r0, r1, j->src->dtype, g->C, j->x.out * g->C, j->dst->dtype, d);
}

typedef struct box2_run {
    const lumen_resize_job *j;
    const lumen_resize_kernels *k;
    const plane_geom *g;
    bool u8;
    lumen_cpu_stop *st;
    int64_t chunks, per;
} box2_run;

static void box2_chunk(void *arg, int64_t it, int tid)
{
    (void)tid;
    const box2_run *r = arg;
    if (lumen_cpu_should_stop(r->st)) return;
    const chunk_at c = chunk_of(r->j, r->g, r->chunks, r->per, it);
    for (int64_t oy = c.y0; oy < c.y1; oy++)
        box2_row(r->j, r->k, r->g, r->u8, c.b, c.grp * r->g->C, oy);
}

/* The 2:1 box paths, one fused pass over chunks of output rows. */
static lumen_status box2(lumen_context *ctx, const lumen_resize_job *j,
                         const lumen_resize_kernels *k, const plane_geom *g, bool u8)
{
    const int64_t planes = j->dst->n * g->groups, per = rows_per_chunk(ctx, j, false);
    const int64_t chunks = (j->y.out + per - 1) / per, items = planes * chunks;
    lumen_cpu_stop st = lumen_cpu_stop_init(ctx);
    box2_run r = {j, k, g, u8, &st, chunks, per};
    lumen_cpu_parallel_for(lumen_cpu_team_size(ctx, resize_work(j), items), items, box2_chunk, &r);
    return lumen_cpu_stop_status(&st, LUMEN_OK);
}

lumen_status lumen_cpu_resize(lumen_context *ctx, const lumen_resize_job *j, lumen_run_info *info)
{
    if (!ctx->simd) {
        info->isa = "scalar", info->algo = "reference";
        return reference(ctx, j);
    }
    if (j->nearest) {
        info->isa = "generic", info->algo = "nearest";
        return nearest(ctx, j);
    }
    const lumen_resize_kernels *k = kernels_for(ctx);
    if (j->pillow_rounding) {
        info->isa = k->isa, info->algo = "pillow-u8";
        return pillow_u8(ctx, j, k);
    }
    const plane_geom g = geometry(j);
    if (box2_applies(j, &g)) {
        info->isa = k->isa, info->algo = j->src->dtype == LUMEN_U16 ? "box2-u16" : "box2-u8";
        return box2(ctx, j, k, &g, true);
    }
    if (box2_float_applies(j, &g, k)) {
        info->isa = k->isa, info->algo = "box2-float";
        return box2(ctx, j, k, &g, false);
    }
    const bool vfirst = vertical_first(j, &g);
    info->isa = k->isa, info->algo = vfirst ? "separable:vertical-first" : "separable";
    return separable(ctx, j, k, vfirst);
}
