/*
 * Prepacked conv2d weights on the CPU (lumen_conv2d_weights_pack, src/ops/conv2d_packed.c):
 * the algorithm lumen_cpu_conv would pick for the job's shapes, and that path's own weight
 * transform run once. f16 / bf16 weights are widened exactly first, as a call widens them
 * (conv_half.c), so a packed call gives the unpacked call's result bit for bit.
 */
#include "conv.h"
#include "semantics.h"

#include <stdlib.h>

/* w as a contiguous f32 copy (exact, conv_half.c's widening), or NULL when out of memory. */
static float *widen(const lumen_context *ctx, const lumen_image *w)
{
    float *f = malloc(sizeof(float) * (size_t)(w->n * w->c * w->h * w->w));
    if (f) lumen_cpu_conv_convert(ctx, w, f, false);
    return f;
}

lumen_status lumen_cpu_conv2d_pack(lumen_context *ctx, const lumen_conv_job *job,
                                   lumen_conv_pack **out)
{
    lumen_conv_pack *pk = calloc(1, sizeof *pk);
    if (!pk) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "w: cannot allocate a pack");
    pk->algo = lumen_cpu_conv2d_algo(ctx, job);
    const bool transforms = pk->algo == LUMEN_CONV_GEMM || pk->algo == LUMEN_CONV_WINOGRAD_F2 ||
                            pk->algo == LUMEN_CONV_WINOGRAD_F4;
    lumen_status s = LUMEN_OK;
    if (transforms) {
        lumen_conv_job j = *job;
        lumen_image wf;
        float *buf = NULL;
        if (job->w->dtype != LUMEN_F32) {
            const lumen_image *w = job->w;
            if (!(buf = widen(ctx, w))) {
                free(pk);
                return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "w: no memory to widen it");
            }
            wf = lumen_image_nchw(buf, LUMEN_F32, w->n, w->c, w->h, w->w);
            j.w = &wf;
        }
        if (pk->algo == LUMEN_CONV_GEMM)
            s = lumen_cpu_conv2d_gemm_pack(ctx, &j, pk);
        else
            s = lumen_cpu_conv2d_winograd_pack(ctx, &j, pk->algo == LUMEN_CONV_WINOGRAD_F4 ? 4 : 2,
                                               pk);
        free(buf);
    }
    if (s) {
        free(pk);
        return s;
    }
    *out = pk;
    return LUMEN_OK;
}

void lumen_cpu_conv2d_pack_free(lumen_conv_pack *pack)
{
    if (!pack) return;
    free(pack->data);
    free(pack);
}

const char *lumen_cpu_conv2d_pack_algo(const lumen_conv_pack *pack, size_t *bytes)
{
    if (bytes) *bytes = pack ? pack->bytes : 0;
    return pack ? lumen_cpu_conv_algo_name(pack->algo) : NULL;
}
