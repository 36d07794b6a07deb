/*
 * Prepacked conv2d weights (include/lumen.h, docs/conv2d.md): the handle keeps the view of w,
 * the x shape and parameters it was packed for, and the CPU's transformed weights. A packed
 * call checks that x and p match, then runs the ordinary conv2d job with the pack attached;
 * the CPU paths use it when the call's algorithm and kernel are the packed ones (always, for
 * the same context settings), other backends run on w.
 */
#include "conv_common.h"
#include "op_common.h"

#include <stdlib.h>
#include <string.h>

#define ERR_ARG LUMEN_ERR_INVALID_ARGUMENT

struct lumen_conv2d_weights {
    lumen_image w;
    lumen_conv2d_params p;
    int64_t x_shape[4];
    lumen_conv_pack *pack; /* NULL when w lives in device memory */
};

/* A view of x's shape whose data is never read (the pack reads shapes only): the method
 * queries' stand-in (op_common.c). */
static lumen_image shape_view(const int64_t s[4])
{
    const lumen_image v = lumen_image_nchw(NULL, LUMEN_F32, s[0], s[1], s[2], s[3]);
    lumen_image tmp;
    return *lumen_op_shape_view(&v, &tmp);
}

lumen_status lumen_conv2d_weights_pack(lumen_context *ctx, const int64_t x_shape[4],
                                       const lumen_image *w, const lumen_conv2d_params *p,
                                       lumen_conv2d_weights **out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(ERR_ARG, "out: pointer is NULL");
    *out = NULL;
    if (!ctx) return lumen_set_error(ERR_ARG, "ctx: context is NULL");
    if (!x_shape) return lumen_set_error(ERR_ARG, "x_shape: pointer is NULL");
    const lumen_image x = shape_view(x_shape);
    int64_t k, oh, ow;
    lumen_status s = lumen_conv_shape(LUMEN_OP_CONV2D, &x, w, p, &k, &oh, &ow);
    if (s || (s = lumen_view_check_residence(ctx, w, "w"))) return s;
    lumen_conv2d_weights *h = calloc(1, sizeof *h);
    if (!h) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "out: cannot allocate the handle");
    h->w = *w, h->p = *p;
    memcpy(h->x_shape, x_shape, sizeof h->x_shape);
    if (!w->device) {
        const lumen_image y = lumen_image_nchw(x.data, LUMEN_F32, x_shape[0], k, oh, ow);
        const lumen_conv_job job = {.x = &x, .w = w, .y = &y, .p = *p};
        if ((s = lumen_cpu_conv2d_pack(ctx, &job, &h->pack))) {
            free(h);
            return s;
        }
    }
    *out = h;
    return LUMEN_OK;
}

/* The message names the first field of p that differs from the packed one. */
static lumen_status check_same_params(const lumen_conv2d_params *a, const lumen_conv2d_params *b)
{
    const int va[] = {a->stride_h,   a->stride_w,   a->pad_h, a->pad_w,
                      a->dilation_h, a->dilation_w, a->groups};
    const int vb[] = {b->stride_h,   b->stride_w,   b->pad_h, b->pad_w,
                      b->dilation_h, b->dilation_w, b->groups};
    static const char *const names[] = {"stride_h",   "stride_w",   "pad_h", "pad_w",
                                        "dilation_h", "dilation_w", "groups"};
    for (int i = 0; i < 7; i++)
        if (va[i] != vb[i])
            return lumen_set_error(ERR_ARG,
                                   "%s: %d differs from the %d the weights were packed for",
                                   names[i], va[i], vb[i]);
    if (a->output_pad_h || a->output_pad_w)
        return lumen_set_error(ERR_ARG, "output_pad_h: must be 0 for conv2d");
    return LUMEN_OK;
}

lumen_status lumen_conv2d_packed(lumen_context *ctx, const lumen_image *x,
                                 const lumen_conv2d_weights *wp, const float *bias,
                                 const lumen_conv2d_params *p, const lumen_image *y,
                                 lumen_run_info *info)
{
    lumen_clear_error();
    if (!wp) return lumen_set_error(ERR_ARG, "wp: packed weights are NULL");
    lumen_status s;
    if (p && (s = check_same_params(p, &wp->p))) return s;
    if ((s = lumen_image_check(x, "x"))) return s;
    const int64_t *e = wp->x_shape;
    if (x->n != e[0] || x->c != e[1] || x->h != e[2] || x->w != e[3])
        return lumen_set_error(ERR_ARG,
                               "x: shape (%lld, %lld, %lld, %lld) differs from the "
                               "(%lld, %lld, %lld, %lld) the weights were packed for",
                               (long long)x->n, (long long)x->c, (long long)x->h, (long long)x->w,
                               (long long)e[0], (long long)e[1], (long long)e[2], (long long)e[3]);
    return lumen_conv_run_packed(ctx, x, &wp->w, bias, &wp->p, y, wp->pack, info);
}

const char *lumen_conv2d_weights_algo(const lumen_conv2d_weights *wp, size_t *bytes)
{
    if (bytes) *bytes = 0;
    if (!wp) return NULL;
    if (!wp->pack) return "none";
    return lumen_cpu_conv2d_pack_algo(wp->pack, bytes);
}

void lumen_conv2d_weights_free(lumen_conv2d_weights *wp)
{
    if (!wp) return;
    lumen_cpu_conv2d_pack_free(wp->pack);
    free(wp);
}
