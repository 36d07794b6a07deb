/* Shared front-end steps of the filtering ops: checks, anchors, aliasing. */
#ifndef LUMEN_OP_COMMON_H
#define LUMEN_OP_COMMON_H

#include "internal.h"

/* Checks ctx, the image pair, the border mode and value. */
lumen_status lumen_op_check_common(const lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, lumen_border border, float value);
/* Whether the halo has a margin (NULL: none). */
bool lumen_op_has_halo(const lumen_halo *h);
/* dst's h and w for src less the halo's margins; an error naming the halo when a margin is
 * negative or they leave nothing. */
lumen_status lumen_op_halo_shape(const lumen_image *src, const lumen_halo *h, int64_t *oh,
                                 int64_t *ow);
/* lumen_op_check_common with src's context margins (lumen_halo; NULL or zeros: none): dst is src
 * less them. */
lumen_status lumen_op_check_halo(const lumen_context *ctx, const lumen_image *src,
                                 const lumen_image *dst, lumen_border border, float value,
                                 const lumen_halo *halo);
/* Makes a filter job on the whole src write dst = its outputs inside the halo's margins (after
 * the anchors are resolved and mirrored): the anchors move back by the top and left margins. */
void lumen_op_apply_halo(lumen_filter_job *job, const lumen_halo *halo);
/* Checks a kernel side length; `what` names the argument. */
lumen_status lumen_op_check_ksize(int k, const char *what);
/* Checks n kernel values are present and finite. */
lumen_status lumen_op_check_kernel_values(const float *k, int64_t n, const char *what);
/* Resolves anchor (-1 = k/2) and checks 0 <= anchor < k. */
lumen_status lumen_op_resolve_anchor(int anchor, int k, const char *what, int *out);

/*
 * If dst overlaps *src, copies *src into a new contiguous buffer and points
 * *src at *copy_view; *copy must be freed with lumen_op_release_src.
 */
lumen_status lumen_op_unalias(const lumen_image **src, const lumen_image *dst,
                              lumen_image *copy_view, void **copy);
void lumen_op_release_src(void *copy);

/* A method query (lumen_*_method) reads a view's shape, dtype and device, never its pixels, so
 * its data may be NULL: *v then points at a copy in *tmp whose data is a stand-in address
 * (aligned for every dtype) that the view checks accept. Returns the view to use. */
const lumen_image *lumen_op_shape_view(const lumen_image *v, lumen_image *tmp);

/* Reversed copy of n floats (true convolution flips kernels); NULL on OOM. */
float *lumen_op_reversed(const float *k, int64_t n);

#endif
