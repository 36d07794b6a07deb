/* The depthwise plane kernel for any CPU: plain loops the compiler vectorises (SSE2 on x86-64). */
#define LUMEN_DW_PLANE_FN lumen_dw_plane_generic
#include "conv.h"

static inline void dw_block16(float *restrict out, const float *const *rows, const float *w,
                              int64_t taps_r, int64_t S, int64_t dw, int64_t q0)
{
    float a[16] = {0};
    for (int64_t r = 0; r < taps_r; r++)
        for (int64_t s = 0; s < S; s++) {
            const float wv = w[r * S + s], *src = rows[r] + q0 + s * dw;
            for (int j = 0; j < 16; j++)
                a[j] += wv * src[j];
        }
    for (int j = 0; j < 16; j++)
        out[q0 + j] = a[j];
}

static inline void dw_block16x4(float *restrict out, const float *const *rows, const float *w,
                                int64_t taps_r, int64_t S, int64_t dw, const int64_t *q)
{
    for (int i = 0; i < 4; i++)
        dw_block16(out, rows, w, taps_r, S, dw, q[i]);
}

#include "conv_depthwise_plane.h"
