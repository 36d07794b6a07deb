/* Shared front-end steps of conv2d and conv_transpose2d: argument checks, shapes, running. */
#ifndef LUMEN_CONV_COMMON_H
#define LUMEN_CONV_COMMON_H

#include "internal.h"

/* Checks x, w and p (not y) and computes the output height and width; the message of an
 * empty output names the axis. *k receives the output channels. Never touches ctx. */
lumen_status lumen_conv_shape(lumen_op_kind kind, const lumen_image *x, const lumen_image *w,
                              const lumen_conv2d_params *p, int64_t *k, int64_t *out_h,
                              int64_t *out_w);

/* The public _output_size calls: clears the error, checks the out pointers, then the shape. */
lumen_status lumen_conv_output_size(lumen_op_kind kind, const lumen_image *x,
                                    const lumen_image *w, const lumen_conv2d_params *p,
                                    int64_t *out_h, int64_t *out_w);

/* Every check of a call into a preallocated y, then runs it on the context's device (or the
 * CPU, by the runtime's fallback rules: src/core/dispatch.c). */
lumen_status lumen_conv_run(lumen_op_kind kind, lumen_context *ctx, const lumen_image *x,
                            const lumen_image *w, const float *bias,
                            const lumen_conv2d_params *p, const lumen_image *y,
                            lumen_run_info *info);

/* lumen_conv_run of conv2d with the CPU's prepacked weights of w attached to the job. */
lumen_status lumen_conv_run_packed(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                                   const float *bias, const lumen_conv2d_params *p,
                                   const lumen_image *y, const lumen_conv_pack *pack,
                                   lumen_run_info *info);

/* Allocates a contiguous NCHW f32 y of the output shape and runs; on failure frees it and
 * leaves *y zeroed. */
lumen_status lumen_conv_run_alloc(lumen_op_kind kind, lumen_context *ctx, const lumen_image *x,
                                  const lumen_image *w, const float *bias,
                                  const lumen_conv2d_params *p, lumen_image *y,
                                  lumen_run_info *info);

#endif
