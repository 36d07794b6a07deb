/*
 * conv2d / conv_transpose2d with f16 or bf16 tensors: the f32 paths run on widened copies.
 * Widening is exact, so the f32 algorithm sees the very values the half tensors hold; y is
 * computed in f32 and rounded once, to nearest even, on store (docs/semantics.md, "Half
 * precision"). The copies cost O(size) against the convolution's O(size x taps).
 */
#include "conv.h"
#include "semantics.h"

#include <stdlib.h>

void lumen_cpu_conv_convert(const lumen_context *ctx, const lumen_image *half, float *f32,
                            bool store)
{
    const int64_t planes = half->n * half->c, hw = half->h * half->w;
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        const int64_t b = p / half->c, c = p % half->c;
        float *f = f32 + p * hw;
        for (int64_t y = 0; y < half->h; y++)
            for (int64_t x = 0; x < half->w; x++) {
                char *q = lumen_px_addr(half, b, c, y, x);
                if (store)
                    lumen_store_px(q, half->dtype, f[y * half->w + x]);
                else
                    f[y * half->w + x] = lumen_load_px(q, half->dtype);
            }
    }
}

lumen_status lumen_cpu_conv_widened(lumen_context *ctx, lumen_op_kind kind,
                                    const lumen_conv_job *job, lumen_run_info *info)
{
    lumen_image v[3];
    float *buf[3] = {NULL, NULL, NULL};
    lumen_status s = LUMEN_OK;
    for (int i = 0; i < 3 && !s; i++) {
        const lumen_image *t = job->views[i];
        v[i] = *t;
        if (t->dtype == LUMEN_F32) continue;
        buf[i] = malloc(sizeof(float) * (size_t)(t->n * t->c * t->h * t->w));
        if (!buf[i]) {
            s = lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                "%s: no memory to widen the %s tensor "
                                "to f32",
                                i == 0   ? "x"
                                : i == 1 ? "w"
                                         : "y",
                                lumen_dtype_name(t->dtype));
            break;
        }
        v[i] = lumen_image_nchw(buf[i], LUMEN_F32, t->n, t->c, t->h, t->w);
        if (i < 2) lumen_cpu_conv_convert(ctx, t, buf[i], false);
    }
    if (!s) {
        lumen_conv_job j = *job;
        j.x = &v[0], j.w = &v[1], j.y = &v[2];
        s = lumen_cpu_conv(ctx, kind, &j, info);
        if (!s && buf[2]) lumen_cpu_conv_convert(ctx, job->y, buf[2], true);
    }
    free(buf[0]), free(buf[1]), free(buf[2]);
    return s;
}
