/*
 * The fast Gaussian blur of the CPU backend (LUMEN_PRECISION_FAST): Deriche's
 * 4th-order recursive filter, cost per pixel independent of sigma, with the
 * exact kernel for sigma < 2. Method, boundary handling, error bound and
 * timings: docs/gaussian-fast.md.
 */
#ifndef LUMEN_CPU_GAUSSIAN_FAST_H
#define LUMEN_CPU_GAUSSIAN_FAST_H

#include "cpu.h"

/*
 * Approximate Gaussian blur whose cost does not grow with sigma.
 *
 * job: validated views of the same shape (any dtype, any strides; dst may be
 * src itself, filtered in place without a copy, and any other overlap is
 * filtered from a copy of src), sigma_x, sigma_y > 0 and finite, any border
 * mode. Result: within 1e-3 x the data range of the exact blur (OpenCV's
 * kernel of size round(8 sigma + 1) | 1, same border rule); u8/u16 round to
 * nearest and saturate. Non-finite values: along an axis with sigma < 2 a NaN
 * or infinity spreads over the kernel's reach as in the exact blur; along a
 * recursive axis (sigma >= 2) it turns the whole line through it (row or
 * column, pads included) into NaN. So with both axes recursive one NaN or
 * infinity makes its whole channel plane NaN.
 * Memory: none beyond about 1 MiB per thread when dst is f32 with unit pixel
 * stride (planar) or interleaved like src; otherwise one f32 plane (h x w).
 * Cost: O((w + 2 pad_x) h + (h + 2 pad_y) w) per plane, pad at most 5 sigma
 * and at most one period of the border rule (see gaussian_fast.c).
 */
lumen_status lumen_cpu_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job);
/* The kernels it runs in ctx, as lumen_run_info.isa names them. */
const char *lumen_cpu_gaussian_fast_isa(const lumen_context *ctx);

#endif
