/* NCHW neural-network convolution on the CPU: the job ops hand over, and the scalar reference. */
#ifndef LUMEN_CPU_CONV_H
#define LUMEN_CPU_CONV_H

#include "internal.h"

/*
 * A validated conv job: x (N, C, H, W), w (K, C/g, R, S) for conv2d or (C, K/g, R, S) for
 * conv_transpose2d, y (N, K, P, Q) already of the right shape, all f32 host views, y disjoint
 * from x, w and bias. bias is NULL or K floats. When a backend table entry for conv is added
 * (issue 6), this struct moves to src/core/internal.h beside lumen_filter_job.
 */
typedef struct lumen_conv_job {
    const lumen_image *x, *w, *y;
    const float *bias;
    lumen_conv2d_params p;
} lumen_conv_job;

/* The definition of conv2d: gather loops in double, threads over (n, k). Kept forever. */
lumen_status lumen_cpu_conv2d_reference(lumen_context *ctx, const lumen_conv_job *job);
/* The definition of conv_transpose2d as the exact adjoint of conv2d, in gather form. */
lumen_status lumen_cpu_conv_transpose2d_reference(lumen_context *ctx, const lumen_conv_job *job);

#endif
