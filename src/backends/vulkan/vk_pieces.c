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

#include <string.h>

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

/* Channels of a piece: all of them where they are interleaved within rows (one band holds
 * every channel), else one plane at a time. */
static int64_t channels_per_piece(const lumen_image *v)
{
    const int64_t sc = v->stride_c < 0 ? -v->stride_c : v->stride_c;
    const int64_t sh = v->stride_h < 0 ? -v->stride_h : v->stride_h;
    return sc < sh ? v->c : 1;
}

/* The tallest band (halving from the whole height) whose pieces fit; 0 when none does. A band
 * is at least twice the kernel's height, so the border rows of an edge band lie inside it. */
static int64_t band_rows(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits)
{
    const int64_t nc = channels_per_piece(j->src) < channels_per_piece(j->dst)
                           ? channels_per_piece(j->src)
                           : channels_per_piece(j->dst);
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

bool vk_filter_fits_in_pieces(lumen_context *ctx, const lumen_filter_job *j, vk_piece_fits fits)
{
    return fits(ctx, j) || band_rows(ctx, j, fits) > 0;
}

lumen_status vk_filter_in_pieces(lumen_context *ctx, const lumen_filter_job *j,
                                 vk_piece_fits fits, vk_piece_run run, lumen_run_info *info)
{
    if (fits(ctx, j)) return run(ctx, j, info);
    const int64_t rows = band_rows(ctx, j, fits);
    if (rows <= 0)
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "vulkan: the image does not fit the device's buffers");
    const int64_t nc = channels_per_piece(j->src) < channels_per_piece(j->dst)
                           ? channels_per_piece(j->src)
                           : channels_per_piece(j->dst);
    const lumen_image *s = j->src;
    int pieces = 0;
    for (int64_t b = 0; b < s->n; b++)
        for (int64_t c0 = 0; c0 < s->c; c0 += nc)
            for (int64_t y0 = 0; y0 < s->h; y0 += rows) {
                if (vk_host->interrupted(ctx))
                    return vk_host->set_error(LUMEN_ERR_INTERRUPTED,
                                              "interrupted (the context's interrupt hook asked "
                                              "the call to stop; its output is incomplete)");
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
