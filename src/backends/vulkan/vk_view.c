/*
 * Views and scratch memory (docs/vulkan.md, "Memory"). A device-resident view is bound in
 * place: its data pointer is a mapped address inside one of the context's buffers. A host view
 * is staged through a pooled scratch buffer: its whole byte range (a window's gaps too) is
 * copied in, and for the output copied back after the submission, so the bytes between a
 * window's rows come back as they were. Scratch buffers (staging, taps, intermediates) are
 * pooled per context: after the first calls of a given size no op allocates device memory.
 */
#include "vk_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- scratch pool ---------------------------------------------------------------------- */

/* Pool buffers grow in powers of two from 64 KiB so that calls of similar sizes share them. */
static size_t pool_size(size_t bytes, uint64_t max_range)
{
    size_t s = 64 << 10;
    while (s < bytes && s < SIZE_MAX / 2)
        s *= 2;
    return s > max_range && bytes <= max_range ? (size_t)max_range : s;
}

lumen_status vk_scratch(lumen_context *ctx, vk_state *st, size_t bytes, vk_mem_kind kind,
                        vk_buf **out)
{
    int best = -1;
    for (int i = 0; i < st->n_scratch; i++) {
        const vk_scratch_buf *s = &st->scratch[i];
        if (!s->busy && s->b.kind == kind && s->b.size >= bytes &&
            (best < 0 || s->b.size < st->scratch[best].b.size))
            best = i;
    }
    if (best < 0) {
        lumen_status s = vk_grow(&st->scratch, st->n_scratch, &st->cap_scratch, sizeof *st->scratch,
                                 "scratch table");
        if (s) return s;
        vk_buf b;
        s = vk_buf_create(ctx, st, pool_size(bytes, st->max_range), kind, false, &b);
        if (s == LUMEN_ERR_OUT_OF_MEMORY) { /* idle pool buffers first, then the exact size */
            vk_scratch_trim(st);
            s = vk_buf_create(ctx, st, bytes, kind, false, &b);
        }
        if (s) return s;
        best = st->n_scratch++;
        st->scratch[best] = (vk_scratch_buf){.b = b};
    }
    st->scratch[best].busy = true;
    *out = &st->scratch[best].b;
    return LUMEN_OK;
}

void vk_scratch_release_all(vk_state *st)
{
    for (int i = 0; i < st->n_scratch; i++)
        st->scratch[i].busy = false;
}

void vk_scratch_trim(vk_state *st)
{
    int kept = 0;
    for (int i = 0; i < st->n_scratch; i++) {
        if (st->scratch[i].busy)
            st->scratch[kept++] = st->scratch[i];
        else
            vk_buf_destroy(st, &st->scratch[i].b);
    }
    st->n_scratch = kept;
}

/* ---- views ----------------------------------------------------------------------------- */

static bool fits_i32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

/* Elements below the data pointer (lo >= 0) and above it that the view touches. */
static void span(const lumen_image *v, int64_t *lo, int64_t *hi)
{
    lumen_view_offsets(v, lo, hi); /* core/semantics.h: *lo <= 0 there */
    *lo = -*lo;
}

bool vk_view_fits(lumen_context *ctx, const lumen_image *v)
{
    vk_state *st = vk_host->state(ctx);
    if (!st) return false;
    /* shaders index elements with 32-bit ints and strides */
    if (!fits_i32(v->stride_n) || !fits_i32(v->stride_c) || !fits_i32(v->stride_h) ||
        !fits_i32(v->stride_w))
        return false;
    if (!v->device) return true; /* staged whole, or in pieces (vk_pieces.c) */
    int64_t lo, hi;
    span(v, &lo, &hi);
    const int64_t es = (int64_t)lumen_dtype_bytes(v->dtype);
    const int64_t bytes = (lo + hi + 1) * es;
    const char *first = (const char *)v->data - lo * es;
    const vk_buf *b = fits_i32(bytes) ? vk_find(st, first, (size_t)bytes) : NULL;
    return b && ((const char *)v->data - b->addr) % es == 0 &&
           fits_i32(((const char *)v->data - b->addr) / es);
}

/* Bytes of a view's elements alone (its compact copy). */
static int64_t dense_bytes(const lumen_image *v)
{
    return v->n * v->c * v->h * v->w * (int64_t)lumen_dtype_bytes(v->dtype);
}

/* Whether a host view is staged compactly (its elements alone, in NCHW order) rather than as
 * its byte range: when the range is mostly other data (one channel of an interleaved image, a
 * window with wide gaps) or too large for a binding while the elements are not. */
static bool stage_compactly(const vk_state *st, const lumen_image *v, int64_t span_bytes)
{
    const int64_t dense = dense_bytes(v);
    return span_bytes > dense + dense / 2 || (uint64_t)span_bytes > st->max_range ||
           !fits_i32(span_bytes);
}

bool vk_view_fits_range(lumen_context *ctx, const lumen_image *v)
{
    vk_state *st = vk_host->state(ctx);
    if (!st) return false;
    if (v->device) return vk_view_fits(ctx, v); /* its buffer fits: vk_buf_create made it */
    int64_t lo, hi;
    span(v, &lo, &hi);
    const int64_t es = (int64_t)lumen_dtype_bytes(v->dtype);
    const int64_t bytes =
        stage_compactly(st, v, (lo + hi + 1) * es) ? dense_bytes(v) : (lo + hi + 1) * es;
    return fits_i32(bytes) && (uint64_t)bytes <= st->max_range;
}

/* Copies a view's elements between its host memory and a compact NCHW copy, row by row. */
static void copy_compact(const lumen_image *v, char *dense, bool to_dense)
{
    const size_t es = lumen_dtype_bytes(v->dtype), row = (size_t)v->w * es;
    for (int64_t b = 0; b < v->n; b++)
        for (int64_t c = 0; c < v->c; c++)
            for (int64_t y = 0; y < v->h; y++) {
                char *h = (char *)v->data +
                          (b * v->stride_n + c * v->stride_c + y * v->stride_h) * (int64_t)es;
                char *d = dense + (((b * v->c + c) * v->h + y) * v->w) * (int64_t)es;
                if (v->stride_w == 1) {
                    memcpy(to_dense ? d : h, to_dense ? h : d, row);
                    continue;
                }
                for (int64_t x = 0; x < v->w; x++) {
                    char *hx = h + x * v->stride_w * (int64_t)es, *dx = d + x * (int64_t)es;
                    memcpy(to_dense ? dx : hx, to_dense ? hx : dx, es);
                }
            }
}

lumen_status vk_view_bind(lumen_context *ctx, vk_state *st, const lumen_image *v, bool is_output,
                          vk_view *out)
{
    int64_t lo, hi;
    span(v, &lo, &hi);
    const int64_t es = (int64_t)lumen_dtype_bytes(v->dtype);
    char *first = (char *)v->data - lo * es;
    memset(out, 0, sizeof *out);
    out->img = v;
    out->bytes = (size_t)((lo + hi + 1) * es);
    out->pv = (vk_pview){.sn = (int32_t)v->stride_n,
                         .sc = (int32_t)v->stride_c,
                         .sh = (int32_t)v->stride_h,
                         .sw = (int32_t)v->stride_w};
    if (v->device) {
        const vk_buf *b = vk_find(st, first, out->bytes);
        if (!b) return vk_host->set_error(LUMEN_ERR_UNSUPPORTED, "vulkan: view not in a buffer");
        out->buf = b->buf;
        out->pv.off = (int32_t)(((char *)v->data - b->addr) / es);
        return LUMEN_OK;
    }
    if (stage_compactly(st, v, (int64_t)out->bytes)) {
        /* an output's elements are all written by the op: only inputs are copied in */
        lumen_status s = vk_scratch(ctx, st, (size_t)dense_bytes(v), VK_MEM_HOST, &out->tmp);
        if (s) return s;
        if (!is_output) copy_compact(v, out->tmp->map, true);
        out->compact = true;
        out->bytes = (size_t)dense_bytes(v);
        out->pv = (vk_pview){.off = 0,
                             .sn = (int32_t)(v->c * v->h * v->w),
                             .sc = (int32_t)(v->h * v->w),
                             .sh = (int32_t)v->w,
                             .sw = 1};
        out->buf = out->tmp->buf;
        out->host_first = first;
        return LUMEN_OK;
    }
    lumen_status s = vk_scratch(ctx, st, out->bytes, VK_MEM_HOST, &out->tmp);
    if (s) return s;
    memcpy(out->tmp->map, first, out->bytes);
    out->buf = out->tmp->buf;
    out->pv.off = (int32_t)lo;
    out->host_first = first;
    return LUMEN_OK;
}

void vk_view_finish(const vk_view *v)
{
    if (!v->host_first) return;
    if (v->compact)
        copy_compact(v->img, v->tmp->map, false);
    else
        memcpy(v->host_first, v->tmp->map, v->bytes);
}

lumen_status vk_upload_floats(lumen_context *ctx, vk_state *st, const float *p, size_t n,
                              VkBuffer *out)
{
    vk_buf *b;
    lumen_status s = vk_scratch(ctx, st, n * sizeof(float), VK_MEM_HOST, &b);
    if (s) return s;
    memcpy(b->map, p, n * sizeof(float));
    *out = b->buf;
    return LUMEN_OK;
}
