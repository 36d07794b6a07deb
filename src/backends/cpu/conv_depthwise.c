/*
 * The fast CPU path of depthwise conv2d (groups = C, one input channel per group, K = m*C):
 * direct loops, threads over (image, output channel) planes.
 *
 * On the SGEMM path a depthwise conv is a GEMM with one weight row per group, so the
 * microkernel tile is mostly padding and packing dominates. Here each output row is a sum of
 * R*S shifted rows of the zero-padded input plane (conv_depthwise_plane.h, built per ISA).
 * Scratch: one padded input plane and one output row per thread.
 */
#include "conv.h"

#include <stdlib.h>

bool lumen_cpu_conv2d_depthwise_applies(const lumen_conv_job *job)
{
    return job->p.groups > 1 && job->p.groups == job->x->c && job->w->c == 1 &&
           job->w->h <= LUMEN_DW_MAX_R && job->w->w <= LUMEN_DW_MAX_S;
}

static lumen_dw_plane_fn pick(const lumen_context *ctx, const char **isa)
{
    if (lumen_ctx_use_avx512(ctx)) return *isa = "avx512", lumen_dw_plane_avx512;
    if (lumen_ctx_use_avx2(ctx)) return *isa = "avx2+fma", lumen_dw_plane_avx2;
    return *isa = "generic", lumen_dw_plane_generic;
}

/* Plane i = (image, output channel) of the job, its taps copied into wk. */
static lumen_dw_plane plane_of(const lumen_conv_job *job, int64_t i, int64_t padded, float *wk)
{
    const lumen_image *x = job->x, *w = job->w, *y = job->y;
    const int64_t n = i / y->c, k = i % y->c, mult = y->c / x->c;
    const float *wd = (const float *)w->data + k * w->stride_n;
    for (int64_t r = 0; r < w->h; r++)
        for (int64_t s = 0; s < w->w; s++)
            wk[r * w->w + s] = wd[r * w->stride_h + s * w->stride_w];
    return (lumen_dw_plane){
        .job = job,
        .xp = (const float *)x->data + n * x->stride_n + (k / mult) * x->stride_c,
        .yp = (float *)y->data + n * y->stride_n + k * y->stride_c,
        .w = wk,
        .bias = job->bias ? job->bias[k] : 0.0f,
        .R = w->h,
        .S = w->w,
        .padded = padded,
    };
}

typedef struct dw_run {
    const lumen_conv_job *job;
    lumen_dw_plane_fn fn;
    float *scratch;
    size_t per_thread;
    int64_t padded;
    lumen_cpu_stop *stop;
} dw_run;

static void dw_body(void *arg, int tid)
{
    const dw_run *r = arg;
    const lumen_conv_job *job = r->job;
    float *pad = r->scratch + r->per_thread * (size_t)tid, *acc = pad + job->x->h * r->padded;
    float *wk = acc + job->y->w;
    const int64_t planes = job->y->n * job->y->c;
#pragma omp for schedule(dynamic, 4)
    for (int64_t i = 0; i < planes; i++) {
        if (lumen_cpu_should_stop(r->stop)) continue;
        const lumen_dw_plane pl = plane_of(job, i, r->padded, wk);
        r->fn(&pl, pad, acc);
    }
}

lumen_status lumen_cpu_conv2d_depthwise(lumen_context *ctx, const lumen_conv_job *job,
                                        const char **isa)
{
    const lumen_image *x = job->x, *w = job->w, *y = job->y;
    const lumen_dw_plane_fn fn = pick(ctx, isa);
    /* The last tap of the last output column reads column (Q-1)*sw + (S-1)*dw of a padded row,
     * which the output-size formula keeps below W + 2*pad_w. */
    const int64_t padded = x->w + 2 * (int64_t)job->p.pad_w;
    const size_t per_thread = (size_t)(x->h * padded + y->w + w->h * w->w);
    float *scratch = malloc(per_thread * sizeof(float) * (size_t)ctx->threads);
    if (!scratch)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "conv2d: cannot allocate %zu bytes of "
                               "depthwise scratch",
                               per_thread * sizeof(float) * (size_t)ctx->threads);
    const int64_t planes = y->n * y->c;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx); /* polled per plane (docs/faults.md) */
    dw_run r = {job, fn, scratch, per_thread, padded, &stop};
    lumen_cpu_team_run(
        lumen_cpu_team_size(ctx, lumen_cpu_conv_work(job, LUMEN_CONV_WORK_DEPTHWISE), planes),
        dw_body, &r);
    free(scratch);
    return lumen_cpu_stop_status(&stop, LUMEN_OK);
}
