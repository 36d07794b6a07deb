/* Runs a normalised filter job on the context's device. */
#include "internal.h"

lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info)
{
    /* Only the CPU exists so far; the reference runs when SIMD is switched off. */
    const lumen_backend *be = ctx->simd ? &lumen_cpu_fast_backend : &lumen_cpu_reference_backend;
    lumen_status s = method == LUMEN_METHOD_SEPARABLE ? be->sep_filter(ctx, job) : be->filter2d(ctx, job);
    if (s == LUMEN_OK && info) {
        info->method = method;
        info->device = "cpu";
        info->isa = lumen_ctx_use_avx2(ctx) ? "avx2+fma" : ctx->simd ? "generic" : "scalar";
        info->threads = ctx->threads;
    }
    lumen_log(LUMEN_LOG_DEBUG, "ran %s on cpu (%s), %dx%d kernel, %d threads",
              lumen_method_name(method), be->name, job->kw, job->kh, ctx->threads);
    return s;
}
