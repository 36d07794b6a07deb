/* Shared front-end steps of the filtering ops. */
#include "op_common.h"


#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Whether the halo has a margin (NULL: none). */
bool lumen_op_has_halo(const lumen_halo *h)
{
    return h && (h->top || h->bottom || h->left || h->right);
}

lumen_status lumen_op_halo_shape(const lumen_image *src, const lumen_halo *h, int64_t *oh,
                                 int64_t *ow)
{
    if (h->top < 0 || h->bottom < 0 || h->left < 0 || h->right < 0)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "halo: margins must be >= 0, got top %d bottom %d left %d right %d",
                               h->top, h->bottom, h->left, h->right);
    *oh = src->h - h->top - h->bottom, *ow = src->w - h->left - h->right;
    if (*oh < 1 || *ow < 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "halo: margins (top %d bottom %d left %d right %d) leave nothing of "
                               "src (h=%lld, w=%lld) to filter",
                               h->top, h->bottom, h->left, h->right, (long long)src->h,
                               (long long)src->w);
    return LUMEN_OK;
}

/* src and dst as lumen_image_check_pair checks them, dst being src less the halo's margins. */
static lumen_status check_halo_pair(const lumen_image *src, const lumen_image *dst,
                                    const lumen_halo *h)
{
    lumen_status s = lumen_image_check(src, "src");
    int64_t oh, ow;
    if (s || (s = lumen_image_check(dst, "dst")) || (s = lumen_op_halo_shape(src, h, &oh, &ow)))
        return s;
    if (src->n != dst->n || src->c != dst->c || dst->h != oh || dst->w != ow)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "dst: shape (n=%lld, c=%lld, h=%lld, w=%lld) is not src's less the "
                               "halo (n=%lld, c=%lld, h=%lld, w=%lld)",
                               (long long)dst->n, (long long)dst->c, (long long)dst->h,
                               (long long)dst->w, (long long)src->n, (long long)src->c,
                               (long long)oh, (long long)ow);
    return LUMEN_OK;
}

lumen_status lumen_op_check_halo(const lumen_context *ctx, const lumen_image *src,
                                 const lumen_image *dst, lumen_border border, float value,
                                 const lumen_halo *halo)
{
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    lumen_status s = lumen_op_has_halo(halo) ? check_halo_pair(src, dst, halo)
                                             : lumen_image_check_pair(src, dst);
    if (s) return s;
    if ((s = lumen_view_check_residence(ctx, src, "src")) ||
        (s = lumen_view_check_residence(ctx, dst, "dst")))
        return s;
    if ((unsigned)border > LUMEN_BORDER_WRAP)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "border: unknown mode %d", (int)border);
    if (border == LUMEN_BORDER_CONSTANT && isnan(value))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "border_value: NaN is not a value");
    return LUMEN_OK;
}

lumen_status lumen_op_check_common(const lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, lumen_border border, float value)
{
    return lumen_op_check_halo(ctx, src, dst, border, value, NULL);
}

void lumen_op_apply_halo(lumen_filter_job *job, const lumen_halo *halo)
{
    /* dst's (0, 0) is src's output (top, left): the same sums with the anchor moved back */
    job->ax -= halo->left, job->ay -= halo->top;
}

lumen_status lumen_op_check_ksize(int k, const char *what)
{
    if (k < 1 || k > LUMEN_MAX_KSIZE)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: kernel size must be in 1..%d, got %d",
                               what, LUMEN_MAX_KSIZE, k);
    return LUMEN_OK;
}

lumen_status lumen_op_check_kernel_values(const float *k, int64_t n, const char *what)
{
    if (!k) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: kernel is NULL", what);
    if (n > LUMEN_MAX_KAREA)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: kernel has %lld taps, more than %d",
                               what, (long long)n, LUMEN_MAX_KAREA);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(k[i]))
            return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                                   "%s: kernel value %lld is not finite (%g)", what, (long long)i,
                                   (double)k[i]);
    return LUMEN_OK;
}

lumen_status lumen_op_resolve_anchor(int anchor, int k, const char *what, int *out)
{
    if (anchor == -1) anchor = k / 2;
    if (anchor < 0 || anchor >= k)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: anchor %d is outside the kernel (0..%d, or -1 for the centre)",
                               what, anchor, k - 1);
    *out = anchor;
    return LUMEN_OK;
}

lumen_status lumen_op_unalias(const lumen_image **src, const lumen_image *dst,
                              lumen_image *copy_view, void **copy)
{
    *copy = NULL;
    const lumen_image *s = *src;
    if (!lumen_views_overlap(s, dst)) return LUMEN_OK;
    if (s->device || dst->device) /* a copy would need the device's own copy kernels */
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "dst: overlaps src in device memory; use separate buffers");
    size_t es = lumen_dtype_size(s->dtype);
    size_t bytes = (size_t)(s->n * s->c * s->h * s->w) * es;
    void *buf = malloc(bytes);
    if (!buf)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "dst: overlaps src and a %zu-byte copy of src failed", bytes);
    *copy_view = lumen_image_nchw(buf, s->dtype, s->n, s->c, s->h, s->w);
    for (int64_t b = 0; b < s->n; b++)
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t y = 0; y < s->h; y++)
                for (int64_t x = 0; x < s->w; x++)
                    memcpy(lumen_px_addr(copy_view, b, c, y, x), lumen_px_addr(s, b, c, y, x), es);
    lumen_log(LUMEN_LOG_DEBUG, "dst overlaps src: filtering from a copy");
    *src = copy_view;
    *copy = buf;
    return LUMEN_OK;
}

void lumen_op_release_src(void *copy) { free(copy); }

const lumen_image *lumen_op_shape_view(const lumen_image *v, lumen_image *tmp)
{
    static max_align_t stand_in; /* never read nor written: only its address is checked */
    if (!v || v->data) return v;
    *tmp = *v;
    tmp->data = &stand_in;
    return tmp;
}

float *lumen_op_reversed(const float *k, int64_t n)
{
    float *r = malloc((size_t)n * sizeof *r);
    if (!r) return NULL;
    for (int64_t i = 0; i < n; i++) r[i] = k[n - 1 - i];
    return r;
}
