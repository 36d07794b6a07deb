/*
 * Winograd F(m x m, 3 x 3) conv2d for 3x3 kernels, stride 1, dilation 1 (Lavin & Gray 2016).
 *
 * Per group the output is cut into m x m tiles over (image, tile row, tile column). A tile's
 * alpha x alpha input patch (alpha = m + 2) becomes V = B^T d B, each 3x3 kernel U = G g G^T,
 * and for each of the alpha^2 positions xi the products summed over input channels are one
 * GEMM, M_xi (K/g x tiles) = U_xi (K/g x C/g) * V_xi (C/g x tiles), run with the shared SGEMM
 * microkernel; the output tile is A^T M A + bias. Multiplies per output drop from 9 C/g to
 * alpha^2 / m^2 C/g: 4 for F(2x2), 2.25 for F(4x4).
 *
 * U is transformed once per call (in double, rounded once) and packed as the microkernel's A
 * slivers. Threads take items (group, block of tiles): the block's V and M (alpha^2 (C/g + K/g)
 * floats per tile) are sized to stay in L2; per position the microkernel runs over every
 * U sliver and V sliver of the block, the reduction over C/g split into blocks of at most
 * WINO_KC terms (shorter f32 sums: smaller error). The output transform adds bias and writes
 * y through its strides; tiles that overhang y write only their inside part.
 *
 * Error: see docs/conv2d.md. F(2x2) stays inside the tests' 1e-6 * sum|x*w| bound where
 * _applies takes it (padding <= 1); F(4x4) has its own bound, 1e-5 * sum|x*w| (measured up to
 * ~5e-6), and runs where it is faster (lumen_cpu_conv2d_winograd_tile_for).
 */
#include "conv.h"
#include "conv_winograd_kernels.h"

#include <stdlib.h>
#include <string.h>

#define WINO_M 2
#define WINO_SUFFIX f2_generic
#include "conv_winograd_kernels.h"

#define WINO_M 4
#define WINO_SUFFIX f4_generic
#include "conv_winograd_kernels.h"

/* Longest f32 reduction in one microkernel call: the products of all-positive data do not
 * cancel, and chains of 128 (64) reached 1.1e-6 (1.2e-6) of sum|x*w| at padded corners; 32
 * stay at 7.4e-7, 16 at 7e-7, and 32 is about 10% faster than 16 on the 512-channel layer. */
#define WINO_KC 32
/* Scratch (V and M) per item: about half of a 2 MB L2. */
#define WINO_ITEM_BYTES (1 << 20)
/* Shared blocks (lumen_cpu_conv2d_winograd_run): taken when U is larger than half of a 32 MB
 * L3, since each thread's item then streams the whole U from memory again (l1: 37.7 MB per item,
 * four items per call). A U that stays in the L3 is cheaper to reread than V and M are to pass
 * between the threads: l3's 9.6 MB U ran 5% slower in shared blocks (Zen 5, 1 and 2 threads).
 * A shared block's V and M together stay under WINO_SHARED_BYTES. */
#define WINO_SHARED_U_BYTES (16 << 20)
#define WINO_SHARED_BYTES (32 << 20)
/* The microkernel's bias when it only accumulates: one float per tile row. */
static const float zeros[64];

typedef struct wino_scheme {
    wino_input_fn input;
    wino_output_fn output;
    wino_weight_fn weight;
    wino_weight_rows_fn weight_rows;
} wino_scheme;

#define SCHEME(sfx)                                                                                \
    {                                                                                              \
        lumen_wino_input_##sfx, lumen_wino_output_##sfx, lumen_wino_weight_##sfx,                  \
            lumen_wino_weight_rows_##sfx                                                           \
    }
/* [tile 2 or 4][generic, avx2, avx512] */
static const wino_scheme schemes[2][3] = {
    {SCHEME(f2_generic), SCHEME(f2_avx2), SCHEME(f2_avx512)},
    {SCHEME(f4_generic), SCHEME(f4_avx2), SCHEME(f4_avx512)},
};

typedef struct wino_plan {
    const lumen_conv_job *job;
    const lumen_sgemm_kernel *kern;
    const wino_scheme *sc;
    int m, alpha2;
    int64_t th, tw, tiles; /* tile rows, columns per image; tiles per group */
    int64_t groups, cg, kg, panels, kgp, kc;
    int64_t nsl, cols; /* slivers and tiles per item */
    int64_t blocks;    /* items per group */
    bool shared;       /* items are shared blocks: every thread works on each one */
    int64_t pchunks;   /* shared blocks: panel ranges per position, the GEMM phase's units */
    float *upack;      /* alpha^2 x groups x panels slivers of cg x mr */
    bool idx32;        /* x's taps all lie within +-2^31 elements of its start */
} wino_plan;

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}
static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}
static size_t round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* U sliver of (position, group, panel). */
static const float *u_sliver(const wino_plan *pl, int64_t xi, int64_t g, int64_t panel)
{
    return pl->upack + ((xi * pl->groups + g) * pl->panels + panel) * pl->cg * pl->kern->mr;
}

/* Transforms and packs the weights; rows past K/g in the last panel are zero. The units are
 * (group, panel, channel range). With the AVX-512 tiles (mr >= 12) the panel's rows are the
 * transform's lanes, so each U sliver row is written whole (weight_rows); the small tiles keep
 * lanes over channels, the mr rows taking turns per block of WINO_LANES channels so that the
 * block's U lines stay in L1 while all mr rows fill them (row by row over every channel each
 * row wrote one float into every line of the panel's U, 1.2 MB for l1). */
static size_t u_size(const wino_plan *pl);

typedef struct pack_run {
    const wino_plan *pl;
    int threads;
} pack_run;

/* One thread's part of pack_weights (a lumen_cpu_team_run body: the units are shared out by
 * the worksharing loop). */
static void pack_units(void *arg, int tid)
{
    (void)tid;
    const wino_plan *pl = ((const pack_run *)arg)->pl;
    const int threads = ((const pack_run *)arg)->threads;
    const lumen_image *w = pl->job->w;
    const int mr = pl->kern->mr;
    const int64_t u_pos = pl->groups * pl->panels * pl->cg * mr;
    const int64_t cblocks = cdiv(pl->cg, WINO_LANES), panels = pl->groups * pl->panels;
    const int64_t cchunks = min64(cdiv(4 * (int64_t)threads, panels), cblocks);
    const int64_t per_chunk = cdiv(cblocks, cchunks) * WINO_LANES;
    const bool dense = w->stride_w == 1 && w->stride_h == 3 && w->stride_c == 9;
    /* lanes over the panel's rows when they fill most of them (the AVX-512 tiles, mr >= 12) */
    const bool rows_lanes = 2 * mr > WINO_LANES;
    /* a U larger than the L3 share would leave it before the GEMMs read it: its stores skip
     * the caches (no read for ownership of lines that are only written) */
    const bool stream = u_size(pl) > WINO_SHARED_U_BYTES;
#pragma omp for schedule(dynamic, 1)
    for (int64_t unit = 0; unit < panels * cchunks; unit++) {
        const int64_t gp = unit / cchunks, g = gp / pl->panels, panel = gp % pl->panels;
        const int64_t c1 = min64(pl->cg, (unit % cchunks + 1) * per_chunk);
        float *up = (float *)u_sliver(pl, 0, g, panel);
        if (rows_lanes) { /* the panel's rows in the lanes: one store per U sliver row */
            const int64_t c0 = unit % cchunks * per_chunk, k0 = g * pl->kg + panel * mr;
            const float *wk = (const float *)w->data + k0 * w->stride_n + c0 * w->stride_c;
            if (c0 < c1)
                pl->sc->weight_rows(wk, w->stride_n, w->stride_c, w->stride_h, w->stride_w,
                                    (int)min64(mr, pl->kg - panel * mr), c1 - c0, up + c0 * mr,
                                    u_pos, mr, stream);
            continue;
        }
        for (int64_t c0 = unit % cchunks * per_chunk; c0 < c1; c0 += WINO_LANES) {
            const int64_t n = min64(WINO_LANES, c1 - c0);
            for (int64_t i = 0; i < mr; i++) {
                const int64_t kk = panel * mr + i;
                float *u = up + c0 * mr + i;
                if (kk >= pl->kg) {
                    for (int64_t xi = 0; xi < pl->alpha2; xi++)
                        for (int64_t c = 0; c < n; c++)
                            u[xi * u_pos + c * mr] = 0.0f;
                    continue;
                }
                const float *wk =
                    (const float *)w->data + (g * pl->kg + kk) * w->stride_n + c0 * w->stride_c;
                if (dense && c0 + WINO_LANES < c1) /* the row's next block, 9 * 16 floats */
                    for (int64_t b = 0; b < 9 * WINO_LANES; b += 16)
                        __builtin_prefetch(wk + 9 * WINO_LANES + b);
                pl->sc->weight(wk, w->stride_c, w->stride_h, w->stride_w, n, u, u_pos, mr);
            }
        }
    }
}

static void pack_weights(const wino_plan *pl, int threads)
{
    pack_run r = {pl, threads};
    lumen_cpu_team_run(threads, pack_units, &r);
}

/* Where the tiles [t0, t0 + WINO_LANES) of group g start in x and y; lanes past the last
 * tile get no rows (zero input, no output). */
static void build_lanes(const wino_plan *pl, int64_t g, int64_t t0, wino_lanes *ln)
{
    const lumen_image *x = pl->job->x, *y = pl->job->y;
    const int64_t per_image = pl->th * pl->tw, m = pl->m, alpha = m + 2;
    const int64_t ph = pl->job->p.pad_h, pw = pl->job->p.pad_w;
    ln->inside = true;
    for (int j = 0; j < WINO_LANES; j++) {
        const int64_t t = t0 + j;
        if (t >= pl->tiles) {
            ln->xoff[j] = ln->yoff[j] = 0;
            ln->iy0[j] = ln->ix0[j] = 0;
            ln->rows[j] = ln->cols[j] = 0;
            ln->inside = false;
            continue;
        }
        const int64_t b = t / per_image, ty = (t % per_image) / pl->tw, tx = t % pl->tw;
        const int64_t oy = ty * m, ox = tx * m, iy = oy - ph, ix = ox - pw;
        ln->xoff[j] =
            b * x->stride_n + g * pl->cg * x->stride_c + iy * x->stride_h + ix * x->stride_w;
        ln->yoff[j] =
            b * y->stride_n + g * pl->kg * y->stride_c + oy * y->stride_h + ox * y->stride_w;
        ln->iy0[j] = (int32_t)iy, ln->ix0[j] = (int32_t)ix;
        ln->rows[j] = (int8_t)min64(m, y->h - oy);
        ln->cols[j] = (int8_t)min64(m, y->w - ox);
        if (iy < 0 || ix < 0 || iy + alpha > x->h || ix + alpha > x->w) ln->inside = false;
    }
}

/* Per position xi in [xi0, xi1): rows of M_xi (kgp x cols) = U_xi * V_xi for the U panels
 * [p0, p1). The reduction is cut into blocks of at most kc so that a kc x nr block of a V
 * sliver stays in L1 while the U slivers (kc x kgp, in L2) pass over it, as in GotoBLAS. */
static void gemms(const wino_plan *pl, int64_t g, int64_t nsl, const float *v, float *mbuf,
                  int64_t xi0, int64_t xi1, int64_t p0, int64_t p1)
{
    const int mr = pl->kern->mr, nr = pl->kern->nr;
    const lumen_sgemm_ukr_fn ukr = pl->kern->fn;
    const int64_t cols = pl->cols, cg = pl->cg;
    for (int64_t xi = xi0; xi < xi1; xi++) {
        const float *a = u_sliver(pl, xi, g, 0);
        float *mx = mbuf + xi * pl->kgp * cols;
        for (int64_t c0 = 0; c0 < cg; c0 += pl->kc) {
            const int64_t kc = min64(pl->kc, cg - c0);
            for (int64_t sl = 0; sl < nsl; sl++) {
                const float *b = v + ((xi * pl->nsl + sl) * cg + c0) * nr;
                for (int64_t panel = p0; panel < p1; panel++)
                    ukr(kc, a + (panel * cg + c0) * mr, b, mx + panel * mr * cols + sl * nr, cols,
                        zeros, c0 == 0);
            }
        }
    }
}

static wino_geom make_geom(const wino_plan *pl)
{
    const lumen_conv_job *job = pl->job;
    return (wino_geom){
        .x = (const float *)job->x->data,
        .y = (float *)job->y->data,
        .xs_c = job->x->stride_c,
        .xs_h = job->x->stride_h,
        .xs_w = job->x->stride_w,
        .ys_c = job->y->stride_c,
        .ys_h = job->y->stride_h,
        .ys_w = job->y->stride_w,
        .H = job->x->h,
        .W = job->x->w,
        .cg = pl->cg,
        .kg = pl->kg,
        .v_pos = pl->nsl * pl->cg * pl->kern->nr,
        .v_chan = pl->kern->nr,
        .m_pos = pl->kgp * pl->cols,
        .m_row = pl->cols,
        .idx32 = pl->idx32,
    };
}

/* Input transform of the lane block at l0 of the item's tiles (which start at tile t0). Every
 * lane of the used slivers is written, padding lanes zero, so the GEMM reads no stale data. */
static void input_lanes(const wino_plan *pl, const wino_geom *geo, int64_t g, int64_t t0,
                        int64_t l0, float *v)
{
    const int nr = pl->kern->nr;
    wino_lanes ln;
    build_lanes(pl, g, t0 + l0, &ln);
    pl->sc->input(geo, &ln, v + (l0 / nr) * pl->cg * nr + l0 % nr);
}

static void output_lanes(const wino_plan *pl, const wino_geom *geo, int64_t g, int64_t t0,
                         int64_t l0, const float *mbuf)
{
    wino_lanes ln;
    build_lanes(pl, g, t0 + l0, &ln);
    const float *bias = pl->job->bias ? pl->job->bias + g * pl->kg : NULL;
    pl->sc->output(geo, &ln, mbuf + l0, bias);
}

/* One item by one thread, in its own V and M. */
static void run_item(const wino_plan *pl, int64_t item, float *v, float *mbuf)
{
    const int nr = pl->kern->nr;
    const int64_t g = item / pl->blocks, t0 = (item % pl->blocks) * pl->cols;
    const int64_t ntiles = min64(pl->cols, pl->tiles - t0), nsl = cdiv(ntiles, nr);
    const wino_geom geo = make_geom(pl);
    for (int64_t l0 = 0; l0 < nsl * nr; l0 += WINO_LANES)
        input_lanes(pl, &geo, g, t0, l0, v);
    gemms(pl, g, nsl, v, mbuf, 0, pl->alpha2, 0, pl->panels);
    for (int64_t l0 = 0; l0 < ntiles; l0 += WINO_LANES)
        output_lanes(pl, &geo, g, t0, l0, mbuf);
}

/* One shared block by every thread of the team (called by each of them, inside the parallel
 * region): lane blocks of the input transform, then (position, panel range) GEMMs, then lane
 * blocks of the output transform, with the worksharing loops' barriers between the phases.
 * Each U_xi is read by one thread once per block instead of by every item. The same kernel
 * calls in the same order per output as run_item: the same bits. */
static void run_shared(const wino_plan *pl, int64_t item, float *v, float *mbuf,
                       lumen_cpu_stop *stop)
{
    const int nr = pl->kern->nr;
    const int64_t g = item / pl->blocks, t0 = (item % pl->blocks) * pl->cols;
    const int64_t ntiles = min64(pl->cols, pl->tiles - t0), nsl = cdiv(ntiles, nr);
    const int64_t chunk = cdiv(pl->panels, pl->pchunks), units = pl->alpha2 * pl->pchunks;
    const wino_geom geo = make_geom(pl);
#pragma omp for schedule(dynamic, 1)
    for (int64_t l0 = 0; l0 < nsl * nr; l0 += WINO_LANES)
        if (!lumen_cpu_should_stop(stop)) input_lanes(pl, &geo, g, t0, l0, v);
#pragma omp for schedule(dynamic, 1)
    for (int64_t u = 0; u < units; u++) {
        const int64_t xi = u / pl->pchunks, p0 = u % pl->pchunks * chunk;
        if (!lumen_cpu_should_stop(stop) && p0 < pl->panels)
            gemms(pl, g, nsl, v, mbuf, xi, xi + 1, p0, min64(p0 + chunk, pl->panels));
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t l0 = 0; l0 < ntiles; l0 += WINO_LANES)
        if (!lumen_cpu_should_stop(stop)) output_lanes(pl, &geo, g, t0, l0, mbuf);
}

/* A bound on |offset| of any tap from x's start, patches overhanging by up to alpha. */
static int64_t x_extent(const lumen_image *x, int64_t alpha)
{
    return llabs(x->stride_n) * x->n + llabs(x->stride_c) * x->c +
           llabs(x->stride_h) * (x->h + alpha) + llabs(x->stride_w) * (x->w + alpha);
}

/* Slivers per item: V and M within WINO_ITEM_BYTES, at most 8, and items enough for every
 * thread to get about two. */
static int64_t choose_slivers(const wino_plan *pl, int threads)
{
    const int nr = pl->kern->nr;
    const int64_t per_tile = pl->alpha2 * (pl->cg + pl->kgp) * (int64_t)sizeof(float);
    int64_t nsl = WINO_ITEM_BYTES / (per_tile * nr);
    nsl = nsl < 1 ? 1 : nsl > 8 ? 8 : nsl;
    while (nsl > 1 && pl->groups * cdiv(pl->tiles, nsl * nr) < 2 * (int64_t)threads)
        nsl--;
    return nsl;
}

bool lumen_cpu_conv2d_winograd_applies(const lumen_context *ctx, const lumen_conv_job *job)
{
    const lumen_conv2d_params *p = &job->p;
    const lumen_sgemm_kernel *k = lumen_cpu_sgemm_kernel(ctx);
    if (job->w->h != 3 || job->w->w != 3 || p->stride_h != 1 || p->stride_w != 1 ||
        p->dilation_h != 1 || p->dilation_w != 1)
        return false;
    if (k->nr % WINO_LANES || k->mr > (int)(sizeof zeros / sizeof *zeros)) return false;
    /* Error: the transforms mix all 9 taps, so an output that sees few of them through zero
     * padding gets an error relative to its own sum|x*w| up to 9/taps times the interior one.
     * With padding <= 1 on planes of >= 2 every output sees >= 4 taps: all-positive data then
     * measured <= 7e-7 (bound 1e-6); padding 2 reached 1.7e-6 (docs/conv2d.md). */
    if (p->pad_h > 1 || p->pad_w > 1 || (p->pad_h && job->x->h < 2) || (p->pad_w && job->x->w < 2))
        return false;
    /* Speed (measured): with few channels per group the transforms cost more than the
     * multiplies they save. */
    const int64_t cg = job->w->c, kg = job->w->n / p->groups;
    return cg >= 16 && kg >= 16;
}

/* F(4x4) needs 2.25 multiplies per output against F(2x2)'s 4, but its U is 2.25x larger and
 * its tiles 4x fewer: with few tiles per group the GEMMs have too few columns to reuse U and the
 * threads too few items, and F(2x2) wins. Measured on a 2-core Zen 4 (AVX-512): F(4) 1.2-1.6x
 * faster from 64 tiles per group up (l1: 128 tiles, l2: 1568, l3: 128, 4x128x14x14: 64),
 * 0.4-0.8x at 16-32 (1x256x14x14, 8x512x7x7). Its error bound is F(2)'s times about 6
 * (docs/conv2d.md, "Winograd's bound"). */
#define WINO_F4_MIN_TILES 64

int lumen_cpu_conv2d_winograd_tile_for(const lumen_conv_job *job)
{
    const int64_t tiles = job->x->n * cdiv(job->y->h, 4) * cdiv(job->y->w, 4);
    return tiles >= WINO_F4_MIN_TILES ? 4 : 2;
}

/* The transformed weights and per-thread scratch of a shape, kept in the context's plan cache
 * so that repeated calls do not map and fault in tens of MB again (the contents are rewritten
 * on every call: new weights may sit at the same pointer). */
typedef struct wino_buffers {
    float *u;
    unsigned char *scratch;
} wino_buffers;

static void buffers_destroy(void *p)
{
    wino_buffers *b = p;
    if (!b) return;
    free(b->u);
    free(b->scratch);
    free(b);
}

static const wino_buffers *get_buffers(lumen_context *ctx, size_t u_bytes, size_t s_bytes)
{
    const struct {
        char tag[16];
        size_t u, s;
    } key = {"conv2d.wino.buf", u_bytes, s_bytes};
    wino_buffers *b = lumen_plan_cache_get(ctx->plans, &key, sizeof key);
    if (b) return b;
    b = calloc(1, sizeof *b);
    if (b) b->u = aligned_alloc(64, u_bytes), b->scratch = aligned_alloc(64, s_bytes);
    if (!b || !b->u || !b->scratch) {
        buffers_destroy(b);
        lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                        "conv2d: cannot allocate %zu bytes of "
                        "transformed weights and %zu bytes of scratch",
                        u_bytes, s_bytes);
        return NULL;
    }
    b = lumen_plan_cache_put(ctx->plans, &key, sizeof key, b, buffers_destroy, u_bytes + s_bytes);
    if (!b) lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "conv2d: cannot cache Winograd buffers");
    return b;
}

/* The plan of tile m for the job (shapes only), with the kernel and transform of ctx's ISA. */
static wino_plan plan_init(const lumen_context *ctx, const lumen_conv_job *job, int m, int *isa_index)
{
    const lumen_sgemm_kernel *kern =
        lumen_cpu_sgemm_kernel_for_rows(ctx, job->w->n / job->p.groups);
    *isa_index = lumen_ctx_use_avx512(ctx) ? 2 : lumen_ctx_use_avx2(ctx) ? 1 : 0;
    wino_plan pl = {
        .job = job,
        .kern = kern,
        .sc = &schemes[m == 4][*isa_index],
        .m = m,
        .alpha2 = (m + 2) * (m + 2),
        .groups = job->p.groups,
        .cg = job->w->c,
        .kg = job->w->n / job->p.groups,
    };
    pl.th = cdiv(job->y->h, m), pl.tw = cdiv(job->y->w, m);
    pl.tiles = job->x->n * pl.th * pl.tw;
    pl.panels = cdiv(pl.kg, kern->mr), pl.kgp = pl.panels * kern->mr;
    pl.kc = cdiv(pl.cg, cdiv(pl.cg, WINO_KC));
    return pl;
}

static size_t u_size(const wino_plan *pl)
{
    return round64((size_t)(pl->alpha2 * pl->groups * pl->kgp * pl->cg) * sizeof(float));
}

lumen_status lumen_cpu_conv2d_winograd_pack(lumen_context *ctx, const lumen_conv_job *job, int m,
                                            lumen_conv_pack *pack)
{
    int isa_index;
    wino_plan pl = plan_init(ctx, job, m, &isa_index);
    const size_t bytes = u_size(&pl);
    pl.upack = aligned_alloc(64, bytes);
    if (!pl.upack)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "w: cannot allocate %zu bytes of transformed weights", bytes);
    pack_weights(&pl, ctx->threads);
    pack->kernel = pl.kern, pack->wino_isa = isa_index;
    pack->data = pl.upack, pack->bytes = bytes;
    return LUMEN_OK;
}

/* The job's prepacked U when it was made for this tile, kernel and transform. */
static const float *packed_u(const wino_plan *pl, int isa_index)
{
    const lumen_conv_pack *pk = pl->job->pack;
    const lumen_conv_algo want = pl->m == 4 ? LUMEN_CONV_WINOGRAD_F4 : LUMEN_CONV_WINOGRAD_F2;
    if (!pk || pk->algo != want || pk->kernel != pl->kern || pk->wino_isa != isa_index ||
        pk->bytes != u_size(pl))
        return NULL;
    return pk->data;
}

/* Shared blocks of at most max_nsl slivers (0: as many as V and M of WINO_SHARED_BYTES hold),
 * all of the group's tiles when they fit, and panel ranges enough for about four GEMM units
 * per thread. */
static void plan_shared(wino_plan *pl, int threads, int64_t max_nsl)
{
    const int nr = pl->kern->nr;
    const int64_t per_sliver = pl->alpha2 * (pl->cg + pl->kgp) * nr * (int64_t)sizeof(float);
    const int64_t fit = max_nsl > 0 ? max_nsl : WINO_SHARED_BYTES / per_sliver;
    pl->nsl = min64(cdiv(pl->tiles, nr), fit < 1 ? 1 : fit);
    pl->pchunks = min64(cdiv(4 * (int64_t)threads, pl->alpha2), pl->panels);
}

lumen_status lumen_cpu_conv2d_winograd_tile(lumen_context *ctx, const lumen_conv_job *job, int m,
                                            const char **isa)
{
    return lumen_cpu_conv2d_winograd_run(ctx, job, m, -1, isa);
}

typedef struct wino_run {
    const wino_plan *pl;
    unsigned char *scratch;
    size_t v_bytes, m_bytes;
    int64_t items;
    lumen_cpu_sched *sched;
    lumen_cpu_stop *stop;
} wino_run;

static void wino_body(void *arg, int tid)
{
    const wino_run *r = arg;
    const wino_plan *pl = r->pl;
    float *v = (float *)(r->scratch + (pl->shared ? 0 : (r->v_bytes + r->m_bytes) * (size_t)tid));
    float *mbuf = (float *)((unsigned char *)v + r->v_bytes);
    if (pl->shared) {
        for (int64_t item = 0; item < r->items; item++) /* every thread, every item */
            run_shared(pl, item, v, mbuf, r->stop);
    } else {
        /* Own share first (cpu_sched.c): l2 1.28-1.37x faster than dynamic in a loop of
         * calls from ctypes, equal from the Python package; l3 0.97-0.98 (Zen 5). */
        int turn = 0;
        for (int64_t item; (item = lumen_cpu_sched_next(r->sched, tid, &turn)) >= 0;)
            if (!lumen_cpu_should_stop(r->stop)) run_item(pl, item, v, mbuf);
    }
}

lumen_status lumen_cpu_conv2d_winograd_run(lumen_context *ctx, const lumen_conv_job *job, int m,
                                           int shared, const char **isa)
{
    if (m != 2 && m != 4)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "conv2d: Winograd tile %d (2 or 4)", m);
    int isa_index;
    wino_plan pl = plan_init(ctx, job, m, &isa_index);
    const int threads =
        lumen_cpu_team_size(ctx, lumen_cpu_conv_work(job, LUMEN_CONV_WORK_DENSE), INT64_MAX);
    const lumen_sgemm_kernel *kern = pl.kern;
    pl.shared = shared < 0 ? u_size(&pl) > WINO_SHARED_U_BYTES : shared > 0;
    if (pl.shared)
        plan_shared(&pl, threads, shared > 0 ? shared : 0);
    else
        pl.nsl = choose_slivers(&pl, threads);
    pl.cols = pl.nsl * kern->nr;
    pl.blocks = cdiv(pl.tiles, pl.cols);
    pl.idx32 = x_extent(job->x, m + 2) < INT32_MAX;
    const float *pre = packed_u(&pl, isa_index);

    /* with a pack the cached U buffer is not needed (one line of 64 bytes stands in) */
    const size_t u_bytes = pre ? 64 : u_size(&pl);
    const size_t v_bytes = round64((size_t)(pl.alpha2 * pl.cg * pl.cols) * sizeof(float));
    const size_t m_bytes = round64((size_t)(pl.alpha2 * pl.kgp * pl.cols) * sizeof(float));
    const size_t copies = pl.shared ? 1 : (size_t)threads; /* of V and M */
    const wino_buffers *buf = get_buffers(ctx, u_bytes, (v_bytes + m_bytes) * copies);
    if (!buf) return LUMEN_ERR_OUT_OF_MEMORY;
    unsigned char *scratch = buf->scratch;
    if (pre) {
        pl.upack = (float *)pre; /* read only: run_item never writes U */
    } else {
        pl.upack = buf->u;
        pack_weights(&pl, threads);
    }

    const int64_t items = pl.groups * pl.blocks;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx); /* polled per item (docs/faults.md) */
    lumen_cpu_sched sched;
    wino_run r = {&pl, scratch, v_bytes, m_bytes, items, &sched, &stop};
    const lumen_status st = lumen_cpu_team_share(threads, items, &sched, wino_body, &r);
    if (isa) *isa = kern->isa;
    return lumen_cpu_stop_status(&stop, st);
}

lumen_status lumen_cpu_conv2d_winograd(lumen_context *ctx, const lumen_conv_job *job,
                                       const char **isa)
{
    return lumen_cpu_conv2d_winograd_tile(ctx, job, lumen_cpu_conv2d_winograd_tile_for(job), isa);
}
