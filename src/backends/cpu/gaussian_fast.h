/*
 * The fast Gaussian blur of the CPU backend (LUMEN_PRECISION_FAST): Deriche's
 * 4th-order recursive filter, cost per pixel independent of sigma, with the
 * exact kernel for sigma < 2. Method, boundary handling, error bound and
 * timings: docs/gaussian-fast.md.
 */
#ifndef LUMEN_CPU_GAUSSIAN_FAST_H
#define LUMEN_CPU_GAUSSIAN_FAST_H

#include "internal.h"

/*
 * Approximate Gaussian blur whose cost does not grow with sigma.
 *
 * job: validated views of the same shape (any dtype, any strides, dst may
 * alias src exactly but must not overlap it otherwise), sigma_x, sigma_y > 0
 * and finite, any border mode. Result: within 1e-3 x the data range of the
 * exact blur (OpenCV's kernel of size round(8 sigma + 1) | 1, same border
 * rule); u8/u16 round to nearest and saturate. A NaN or infinity anywhere in
 * a channel plane makes that whole plane NaN once an axis is recursive
 * (sigma >= 2); along an axis with sigma < 2 it spreads as in the exact blur.
 * Memory: when dst is not f32 (or its layout cannot hold the intermediate),
 * one f32 plane (h x w, or h x w x c for interleaved dst) plus about 1 MiB
 * per thread.
 */
lumen_status lumen_cpu_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job);

#endif
