/*
 * LUMEN_OP_FILTER_FFT (docs/vulkan-fft.md): overlap-save tiles as on the CPU
 * (src/backends/cpu/fft_filter.c), with our own shared-memory Stockham transforms (radix 4, 2,
 * 3, 5; lengths 2^a 3^b 5^c). Each tile of T = N - k + 1 outputs per axis reads its N x N
 * input window through the border rule (every border mode exact), is transformed, multiplied
 * by the kernel's conjugate spectrum and transformed back; its first T x T samples are its
 * outputs. Three dispatches per group of tiles, every plane of the batch together:
 *   fft_rows    gather a window row + transform along x (and the tile's largest |x|)
 *   fft_cols    transform along y, multiply by the spectrum, transform back along y
 *   fft_scatter transform back along x, store (tiles with NaN/Inf or overflow risk: direct sum)
 * The kernel's spectrum is made by the same two forward passes, once per call, on the device.
 * Everything is one submission.
 */
#include "vk_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t fft_rows_spv[] = {
#include <fft_rows.spv.inc>
};
static const uint32_t fft_cols_spv[] = {
#include <fft_cols.spv.inc>
};
static const uint32_t fft_scatter_spv[] = {
#include <fft_scatter.spv.inc>
};

/* The shaders' shared capacities (transform lengths a pipeline takes): few pipelines per
 * device whatever the kernel size. A tier needs 2 x 8 bytes per point of shared memory. */
static const int tiers[] = {64, 256, 1024, 2048, 4096};
#define N_TIERS (int)(sizeof tiers / sizeof tiers[0])
#define MIN_LENGTH 8
#define WORK_BUDGET ((uint64_t)64 << 20) /* bytes of tile slots per group, at most */
#define MAX_GROUP 65535                  /* tiles per dispatch (workgroups along y) */

/* fft_common.glsl's push constants, in its order. */
typedef struct fft_push {
    vk_pview s, d;
    int32_t c, h, w, border;
    float border_value;
    int32_t kw, kh, ax, ay;
    int32_t nh, nw, th, tw;
    int32_t tiles_x, tiles_y, tile0;
    int32_t data_off;
    float limit, sum_k;
    int32_t ties;
} fft_push;
_Static_assert(sizeof(fft_push) == 120, "fft_push: fft_common.glsl's push constants");

typedef struct fft_tiling {
    int nh, nw;
    int64_t th, tw, tiles_y, tiles_x, tiles; /* tiles: of the whole op */
} fft_tiling;

/* ---- sizes -------------------------------------------------------------------------------- */

static int tier_of(int n)
{
    for (int i = 0; i < N_TIERS; i++)
        if (tiers[i] >= n) return tiers[i];
    return 0;
}

/* Workgroup size for an n-point transform: one invocation per butterfly of its widest pass
 * (n / its smallest radix), in multiples of 32, so that short rows do not leave most of a
 * workgroup idle (idle invocations still cost on lavapipe, which runs them on the CPU). */
static int group_size(const vk_device *d, int n)
{
    int r = 5; /* the smallest radix of fft_common.glsl's plan: 4s, then 2, 3s, 5s */
    for (int rest = n; rest > 1;) {
        const int q = rest % 4 == 0 ? 4 : rest % 2 == 0 ? 2 : rest % 3 == 0 ? 3 : 5;
        r = q < r ? q : r;
        rest /= q;
    }
    int wg = (n / r + 31) / 32 * 32;
    wg = wg > 256 ? 256 : wg;
    return wg > (int)d->max_group_invocations ? (int)d->max_group_invocations : wg;
}

/* The longest transform the device's shared memory takes. */
static int max_length(const vk_device *d)
{
    int n = 0;
    for (int i = 0; i < N_TIERS; i++)
        if ((uint64_t)tiers[i] * 16 <= d->max_shared) n = tiers[i];
    return n;
}

static bool is_length(int n)
{
    if (n < MIN_LENGTH) return false;
    static const int primes[] = {2, 3, 5};
    for (int i = 0; i < 3; i++)
        while (n % primes[i] == 0)
            n /= primes[i];
    return n == 1;
}

static int next_length(int n)
{
    while (!is_length(n))
        n++;
    return n;
}

/* Candidate lengths for one axis: >= k, up to what the image needs, within nmax. */
static int axis_candidates(int k, int64_t len, int nmax, int *out, int max)
{
    const int64_t need = len + k - 1;
    const int hi = need < nmax ? next_length((int)need) : nmax;
    int count = 0;
    for (int n = next_length(k); n <= hi && n <= nmax && count < max; n = next_length(n + 1))
        out[count++] = n;
    return count;
}

/* The tile sizes of least work: tiles x n log2 n, plus a per-point cost (loads, products),
 * among those whose work slot (8 bytes a point) takes at most half a binding. */
static fft_tiling choose_tiling(const lumen_filter_job *j, int nmax, uint64_t range)
{
    const lumen_image *s = j->src;
    int ch[256], cw[256];
    const int nch = axis_candidates(j->kh, s->h, nmax, ch, 256);
    const int ncw = axis_candidates(j->kw, s->w, nmax, cw, 256);
    fft_tiling best = {0};
    double best_work = INFINITY;
    for (int a = 0; a < nch; a++)
        for (int b = 0; b < ncw; b++) {
            const int nh = ch[a], nw = cw[b];
            if ((uint64_t)nh * (uint64_t)nw * 8 > range / 2) continue;
            const int64_t th = nh - j->kh + 1, tw = nw - j->kw + 1;
            const int64_t ty = (s->h + th - 1) / th, tx = (s->w + tw - 1) / tw;
            const double n = (double)nh * nw, tiles = (double)(s->n * s->c) * (double)(ty * tx);
            const double work = tiles * n * (log2(n) + 6.0);
            if (work < best_work) {
                best_work = work;
                best = (fft_tiling){nh, nw, th, tw, ty, tx, s->n * s->c * ty * tx};
            }
        }
    return best;
}

/* ---- taps --------------------------------------------------------------------------------- */

static float tap(const lumen_filter_job *j, int i, int t)
{
    if (j->taps == LUMEN_TAPS_2D) return j->kernel[(int64_t)i * j->kw + t];
    return j->ky[i] * j->kx[t] * j->scale;
}

/* sum |k|, or Inf when a tap is not finite. */
static float sum_abs_taps(const lumen_filter_job *j)
{
    float s = 0.0f;
    for (int i = 0; i < j->kh; i++)
        for (int t = 0; t < j->kw; t++) {
            const float v = tap(j, i, t);
            if (!isfinite(v)) return INFINITY;
            s += fabsf(v);
        }
    return s;
}

/* Every tap with at most 12 significant bits: integer images can then sit exactly on a .5
 * tie (the CPU's kernel_is_dyadic). */
static bool taps_dyadic(const lumen_filter_job *j)
{
    for (int i = 0; i < j->kh; i++)
        for (int t = 0; t < j->kw; t++) {
            int e;
            const float m = frexpf(tap(j, i, t), &e) * 4096.0f;
            if (m != truncf(m)) return false;
        }
    return true;
}

/* ---- buffers ------------------------------------------------------------------------------ */

/* Floats of Consts (fft_common.glsl): twiddles of nw and nh, the taps, the spectrum. */
static size_t consts_floats(const lumen_filter_job *j, const fft_tiling *t)
{
    size_t taps_end = 2 * (size_t)(t->nw + t->nh) + (size_t)j->kw * (size_t)j->kh;
    return taps_end + (taps_end & 1) + 2 * (size_t)t->nh * (size_t)t->nw;
}

static void put_twiddles(float *out, int n)
{
    const double pi = 3.14159265358979323846;
    for (int m = 0; m < n; m++) {
        out[2 * m] = (float)cos(2.0 * pi * m / n);
        out[2 * m + 1] = (float)-sin(2.0 * pi * m / n);
    }
}

static void fill_consts(const lumen_filter_job *j, const fft_tiling *t, float *c)
{
    put_twiddles(c, t->nw);
    put_twiddles(c + 2 * t->nw, t->nh);
    float *taps = c + 2 * (t->nw + t->nh);
    for (int i = 0; i < j->kh; i++)
        for (int x = 0; x < j->kw; x++)
            taps[i * j->kw + x] = tap(j, i, x);
}

/* Words of Work before the tile slots: one flag per tile, rounded up to an even count. */
static uint64_t flag_words(const fft_tiling *t)
{
    return (uint64_t)(t->tiles + (t->tiles & 1));
}

static uint64_t slot_bytes(const fft_tiling *t)
{
    return (uint64_t)t->nh * (uint64_t)t->nw * 8;
}

/* ---- the op ------------------------------------------------------------------------------- */

static bool fft_plan(lumen_context *ctx, const lumen_filter_job *j, fft_tiling *t, float *sum_k)
{
    vk_state *st = vk_host->state(ctx);
    const vk_device *d = vk_device_at(st->dev);
    const int nmax = max_length(d);
    if (j->taps == LUMEN_TAPS_2D ? !j->kernel : !j->kx || !j->ky) return false;
    if (j->kw > nmax || j->kh > nmax || j->kw < 1 || j->kh < 1) return false;
    *t = choose_tiling(j, nmax, st->max_range);
    if (t->nh == 0) return false;
    /* the spectrum's sums (up to nh nw sum|k|) must stay finite; a non-finite tap would
     * spread over every output: the CPU runs such kernels */
    *sum_k = sum_abs_taps(j);
    if (!(*sum_k * (double)t->nh * t->nw <= FLT_MAX / 64.0)) return false;
    const uint64_t range = st->max_range;
    return t->tiles <= INT32_MAX / 2 && flag_words(t) * 4 + slot_bytes(t) <= range &&
           consts_floats(j, t) * 4 <= range && vk_grid_fits(st, (uint64_t)t->nh, 1, 1) &&
           vk_grid_fits(st, (uint64_t)t->nw, 1, 1);
}

/* Whether j runs as one submission: a tiling, and its views in one binding each. */
static bool fft_fits(lumen_context *ctx, const lumen_filter_job *j)
{
    fft_tiling t;
    float sum_k;
    return vk_view_fits_range(ctx, j->src) && vk_view_fits_range(ctx, j->dst) &&
           fft_plan(ctx, j, &t, &sum_k);
}

static bool fft_supports(lumen_context *ctx, const lumen_op *op)
{
    return vk_filter_fits_in_pieces(ctx, op->job, fft_fits);
}

/* Tiles per group: as many as fit the budget, the binding's range and the grid. */
static int64_t group_tiles(const vk_state *st, const fft_tiling *t)
{
    const vk_device *d = vk_device_at(st->dev);
    uint64_t room = st->max_range - flag_words(t) * 4;
    if (room > WORK_BUDGET) room = WORK_BUDGET;
    int64_t g = (int64_t)(room / slot_bytes(t));
    const int64_t grid = d->max_groups[1] < MAX_GROUP ? d->max_groups[1] : MAX_GROUP;
    g = g < grid ? g : grid;
    g = g < t->tiles ? g : t->tiles;
    return g < 1 ? 1 : g;
}

/* The Work buffer for groups of *g tiles; fewer tiles per group when memory is short. */
static lumen_status work_buffer(lumen_context *ctx, vk_state *st, const fft_tiling *t, int64_t *g,
                                vk_buf **out)
{
    for (;;) {
        const size_t bytes = (size_t)(flag_words(t) * 4 + (uint64_t)*g * slot_bytes(t));
        lumen_status s = vk_scratch(ctx, st, bytes, VK_MEM_DEVICE, out);
        if (s != LUMEN_ERR_OUT_OF_MEMORY || *g == 1) return s;
        *g = (*g + 1) / 2;
    }
}

/* The kernel's spectrum (two forward passes into Consts), then each group's three passes. */
static lumen_status record(vk_state *st, const lumen_filter_job *j, const fft_tiling *t,
                           fft_push *pc, int64_t g, VkBuffer src, VkBuffer dst, VkBuffer work,
                           VkBuffer consts)
{
    const vk_device *d = vk_device_at(st->dev);
    const int tw_ = tier_of(t->nw), th_ = tier_of(t->nh);
    const int wgw = group_size(d, t->nw), wgh = group_size(d, t->nh);
    const int sdt = (int)j->src->dtype, ddt = (int)j->dst->dtype;
    const vk_kernel krows = VK_KERNEL(fft_rows_spv, tw_, wgw, sdt, 1);
    const vk_kernel kcols = VK_KERNEL(fft_cols_spv, th_, wgh, 1);
    const vk_kernel rows = VK_KERNEL(fft_rows_spv, tw_, wgw, sdt, 0);
    const vk_kernel cols = VK_KERNEL(fft_cols_spv, th_, wgh, 0);
    const vk_kernel scatter = VK_KERNEL(fft_scatter_spv, tw_, wgw, sdt, ddt);
    const VkBuffer b_krows[] = {consts, consts, consts}, b_kcols[] = {consts, consts};
    const VkBuffer b_rows[] = {src, work, consts}, b_cols[] = {work, consts};
    const VkBuffer b_scatter[] = {work, dst, src, consts};
    const uint32_t sz = sizeof *pc;
    lumen_status s;
    if ((s = vk_rec_dispatch(st, &krows, b_krows, 3, pc, sz, (uint32_t)t->nh, 1, 1)) ||
        (s = vk_rec_dispatch(st, &kcols, b_kcols, 2, pc, sz, (uint32_t)t->nw, 1, 1)))
        return s;
    for (int64_t t0 = 0; t0 < t->tiles; t0 += g) {
        const uint32_t n = (uint32_t)(t->tiles - t0 < g ? t->tiles - t0 : g);
        pc->tile0 = (int32_t)t0;
        if ((s = vk_rec_dispatch(st, &rows, b_rows, 3, pc, sz, (uint32_t)t->nh, n, 1)) ||
            (s = vk_rec_dispatch(st, &cols, b_cols, 2, pc, sz, (uint32_t)t->nw, n, 1)) ||
            (s = vk_rec_dispatch(st, &scatter, b_scatter, 4, pc, sz, (uint32_t)t->th, n, 1)))
            return s;
    }
    return LUMEN_OK;
}

static lumen_status fft_piece(lumen_context *ctx, const lumen_filter_job *j, lumen_run_info *info)
{
    vk_state *st = vk_host->state(ctx);
    fft_tiling t;
    float sum_k;
    if (!fft_plan(ctx, j, &t, &sum_k))
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED, "vulkan: fft: no tiling fits");
    vk_view src, dst;
    vk_buf *consts, *work;
    int64_t g = group_tiles(st, &t);
    lumen_status s;
    if ((s = vk_view_bind(ctx, st, j->src, false, &src)) ||
        (s = vk_view_bind(ctx, st, j->dst, true, &dst)) ||
        (s = vk_scratch(ctx, st, consts_floats(j, &t) * sizeof(float), VK_MEM_HOST, &consts)) ||
        (s = work_buffer(ctx, st, &t, &g, &work)))
        return s;
    fill_consts(j, &t, (float *)consts->map);
    fft_push pc = {.s = src.pv,
                   .d = dst.pv,
                   .c = (int32_t)j->src->c,
                   .h = (int32_t)j->src->h,
                   .w = (int32_t)j->src->w,
                   .border = (int32_t)j->border,
                   .border_value = j->border_value,
                   .kw = j->kw,
                   .kh = j->kh,
                   .ax = j->ax,
                   .ay = j->ay,
                   .nh = t.nh,
                   .nw = t.nw,
                   .th = (int32_t)t.th,
                   .tw = (int32_t)t.tw,
                   .tiles_x = (int32_t)t.tiles_x,
                   .tiles_y = (int32_t)t.tiles_y,
                   .data_off = (int32_t)flag_words(&t),
                   /* the CPU's needs_direct: the transform's sums stay below FLT_MAX / 64 */
                   .limit = (float)(FLT_MAX / 64.0 / ((double)t.nh * t.nw * fmax(1.0, sum_k))),
                   .sum_k = sum_k,
                   .ties = !lumen_dtype_is_float(j->dst->dtype) && taps_dyadic(j)};
    vk_host->log(LUMEN_LOG_DEBUG,
                 "vulkan: fft: %dx%d transforms, %lldx%lld outputs per tile, "
                 "%lld tiles in groups of %lld",
                 t.nw, t.nh, (long long)t.tw, (long long)t.th, (long long)t.tiles, (long long)g);
    if ((s = vk_rec_begin(st))) return s;
    /* the tiles' largest |x| start at 0 (device memory: the host may not reach it) */
    vk_rec_fill(st, work->buf, 0, (size_t)flag_words(&t) * 4, 0);
    if ((s = record(st, j, &t, &pc, g, src.buf, dst.buf, work->buf, consts->buf)) ||
        (s = vk_rec_submit(st)))
        return s;
    vk_view_finish(&dst);
    vk_ran(info, LUMEN_METHOD_FFT, "vulkan:fft");
    return LUMEN_OK;
}

/* Images larger than a binding run in pieces (vk_pieces.c): planes and row bands with the
 * kernel's reach, each tiled on its own with the image's borders. */
static lumen_status fft_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    return vk_filter_in_pieces(ctx, op->job, fft_fits, fft_piece, info);
}

const vk_op_impl vk_op_fft = {.supports = fft_supports, .run = fft_run, .pieces = true};
