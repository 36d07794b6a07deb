/*
 * Filters on images larger than one storage-buffer binding (docs/vulkan.md, "Limits"): a host
 * view whose staging copy, or an intermediate, would pass the device's maxStorageBufferRange
 * (128 MiB on lavapipe; a 3000 x 4500 x 3 f32 photo is 162 MB) is filtered in pieces: one image
 * of the batch at a time, one channel at a time where channels are planes, and bands of output
 * rows with the kernel's reach of source rows. A band at the top starts at source row 0 and one
 * at the bottom ends at row h, so the border rule maps the rows beyond the edge exactly as on
 * the whole image (the piece is taller than the kernel); the wrap rule reaches the other edge,
 * so it is only split by image and channel. Each piece is one submission; the interrupt hook is
 * polled between pieces.
 */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

static lumen_status interrupted(void)
{
    return vk_host->set_error(LUMEN_ERR_INTERRUPTED, "interrupted (the context's interrupt hook "
                                                     "asked the call to stop; its output is "
                                                     "incomplete)");
}

/* Rows [y0, y0 + rows) of channels [c0, c0 + nc) of image b of v. */
static lumen_image sub_view(const lumen_image *v, int64_t b, int64_t c0, int64_t nc, int64_t y0,
                            int64_t rows)
{
    lumen_image s = *v;
    const int64_t off = b * v->stride_n + c0 * v->stride_c + y0 * v->stride_h;
    s.data = (char *)v->data + off * (int64_t)lumen_dtype_bytes(v->dtype);
    s.n = 1, s.c = nc, s.h = rows;
    return s;
}

typedef struct piece {
    lumen_image src, dst;
    lumen_filter_job job;
} piece;

/* The piece of job for output rows [y0, y0 + rows) of channels [c0, c0 + nc) of image b. */
static void make_piece(const lumen_filter_job *j, int64_t b, int64_t c0, int64_t nc, int64_t y0,
                       int64_t rows, piece *p)
{
    const int64_t h = j->src->h;
    int64_t r0 = y0 - j->ay, r1 = y0 + rows - j->ay + j->kh - 1;
    if (r0 < 0 || rows == h) r0 = 0;
    if (r1 > h || rows == h) r1 = h;
    p->src = sub_view(j->src, b, c0, nc, r0, r1 - r0);
    p->dst = sub_view(j->dst, b, c0, nc, y0, rows);
    p->job = *j;
    p->job.src = &p->src, p->job.dst = &p->dst;
    p->job.ay = (int)(j->ay + r0 - y0); /* output row y reads source row y - ay + i */
}

/* The tallest band of nc channels (halving from the whole height) whose pieces fit; 0 when
 * none does. A band is at least twice the kernel's height, so the border rows of an edge band
 * lie inside it. */
static int64_t band_rows(lumen_context *ctx, const lumen_filter_job *j, int64_t nc,
                         vk_piece_fits fits)
{
    const int64_t h = j->src->h;
    for (int64_t rows = h;; rows = (rows + 1) / 2) {
        if (rows < h && (j->border == LUMEN_BORDER_WRAP || rows < 2 * (int64_t)j->kh)) return 0;
        /* the first piece, and the second (a middle one has the kernel's reach on both sides,
         * so it is the largest) */
        piece p;
        make_piece(j, 0, 0, nc, 0, rows, &p);
        bool ok = fits(ctx, &p.job);
        if (ok && rows < h) {
            make_piece(j, 0, 0, nc, rows, rows < h - rows ? rows : h - rows, &p);
            ok = fits(ctx, &p.job);
        }
        if (ok) return rows;
        if (rows == 1) return 0;
    }
}

/* The channels of a piece and its band's rows: every channel together where that fits (an
 * interleaved band is one run of memory), else one plane at a time (staged compactly:
 * vk_view_bind); *rows = 0 when nothing fits. */
static int64_t piece_shape(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits,
                           int64_t *rows)
{
    if ((*rows = band_rows(ctx, j, j->src->c, fits)) > 0 || j->src->c == 1) return j->src->c;
    *rows = band_rows(ctx, j, 1, fits);
    return 1;
}

bool vk_filter_fits_in_pieces(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits)
{
    int64_t rows;
    return fits(ctx, j) || (piece_shape(ctx, j, fits, &rows), rows > 0);
}

lumen_status vk_filter_in_pieces(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits,
                                 vk_piece_run run, lumen_run_info *info)
{
    if (fits(ctx, j)) return run(ctx, j, info);
    int64_t rows;
    const int64_t nc = piece_shape(ctx, j, fits, &rows);
    if (rows <= 0)
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "vulkan: the image does not fit the device's buffers");
    const lumen_image *s = j->src;
    int pieces = 0;
    for (int64_t b = 0; b < s->n; b++)
        for (int64_t c0 = 0; c0 < s->c; c0 += nc)
            for (int64_t y0 = 0; y0 < s->h; y0 += rows) {
                if (vk_host->interrupted(ctx)) return interrupted();
                piece p;
                make_piece(j, b, c0, nc, y0, rows < s->h - y0 ? rows : s->h - y0, &p);
                lumen_status st = run(ctx, &p.job, info);
                vk_scratch_release_all(vk_host->state(ctx));
                if (st) return st;
                pieces++;
            }
    vk_host->log(LUMEN_LOG_DEBUG, "vulkan: %s in %d pieces of %lld rows", info->algo, pieces,
                 (long long)rows);
    return LUMEN_OK;
}

/* ---- any op whose views share n and c: pieces of whole planes ------------------------------ */

/* The op restricted to channels [c0, c0 + nc) of image b: its job copied, its views replaced
 * (every job struct begins with its views: internal.h). */
typedef struct plane_piece {
    lumen_image views[LUMEN_OP_MAX_VIEWS];
    lumen_op op;
    void *job;
} plane_piece;

static lumen_status make_plane_piece(const lumen_op *op, int64_t b, int64_t c0, int64_t nc,
                                     plane_piece *p)
{
    const lumen_image *const *v = lumen_op_views(op);
    const lumen_image *sub[LUMEN_OP_MAX_VIEWS];
    for (int i = 0; i < op->n_views; i++) {
        p->views[i] = sub_view(v[i], b, c0, nc, 0, v[i]->h);
        sub[i] = &p->views[i];
    }
    if (!(p->job = malloc(op->job_size)))
        return vk_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "vulkan: a piece's job");
    memcpy(p->job, op->job, op->job_size);
    memcpy(p->job, sub, sizeof sub[0] * (size_t)op->n_views);
    p->op = *op;
    p->op.job = p->job;
    return LUMEN_OK;
}

/* Channels per piece that fit (all, else one), 0 when not even one plane fits. */
static int64_t plane_group(lumen_context *ctx, const lumen_op *op, vk_op_fits fits)
{
    const int64_t c = lumen_op_views(op)[0]->c;
    for (int64_t nc = c;; nc = 1) {
        plane_piece p;
        if (make_plane_piece(op, 0, 0, nc, &p)) return 0;
        const bool ok = fits(ctx, &p.op);
        free(p.job);
        if (ok) return nc;
        if (nc == 1) return 0;
    }
}

bool vk_op_fits_in_planes(lumen_context *ctx, const lumen_op *op, vk_op_fits fits)
{
    return fits(ctx, op) || plane_group(ctx, op, fits) > 0;
}

lumen_status vk_op_in_planes(lumen_context *ctx, const lumen_op *op, vk_op_fits fits, vk_op_run run,
                             lumen_run_info *info)
{
    if (fits(ctx, op)) return run(ctx, op, info);
    const int64_t nc = plane_group(ctx, op, fits);
    if (nc <= 0)
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "vulkan: a plane does not fit the device's buffers");
    const lumen_image *v = lumen_op_views(op)[0];
    for (int64_t b = 0; b < v->n; b++)
        for (int64_t c0 = 0; c0 < v->c; c0 += nc) {
            if (vk_host->interrupted(ctx)) return interrupted();
            plane_piece p;
            lumen_status s = make_plane_piece(op, b, c0, nc, &p);
            if (!s) s = run(ctx, &p.op, info);
            free(p.job);
            vk_scratch_release_all(vk_host->state(ctx));
            if (s) return s;
        }
    return LUMEN_OK;
}
