/* Moving pixel rows between images of any dtype/stride and f32 row buffers. */
#ifndef LUMEN_CPU_ROWS_H
#define LUMEN_CPU_ROWS_H

#include "internal.h"
#include "row_kernels.h"

/*
 * out[(i*cp + k)] = src(b, ch + k, yy, xs + i) for 0 <= i < count, 0 <= k < cp,
 * with the job's border rule applied in x (any xs, any count); yy < 0 gives
 * a row of the constant. rk converts f16/bf16 runs. cp > 1 requires channels interleaved (stride_c 1,
 * stride_w cp), so the interior is one contiguous run.
 */
void lumen_rows_load(const lumen_row_kernels *rk, const lumen_filter_job *job, int64_t cp,
                     int64_t b, int64_t ch, int64_t yy, int64_t xs, int64_t count, float *out);

/*
 * Writes n f32 values to dst at p (element stride: 1 when cp > 1, else
 * stride_w), rounding and saturating for u8/u16, rounding to nearest even for f16/bf16.
 */
void lumen_rows_store(const lumen_row_kernels *rk, const lumen_image *d, int64_t cp,
                      const float *in, char *p, int64_t n);

#endif
