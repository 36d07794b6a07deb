/* Runs normalised jobs on the context's device and chooses methods by cost. */
#include "internal.h"

#include <math.h>

/* Only the CPU exists so far; the scalar reference runs when SIMD is switched off. */
static const lumen_backend *backend_for(const lumen_context *ctx)
{
    return ctx->simd ? &lumen_cpu_fast_backend : &lumen_cpu_reference_backend;
}

static void fill_info(const lumen_context *ctx, lumen_method method, lumen_run_info *info)
{
    if (!info) return;
    info->method = method;
    info->device = "cpu";
    info->isa = lumen_ctx_use_avx2(ctx) ? "avx2+fma" : ctx->simd ? "generic" : "scalar";
    info->threads = ctx->threads;
}

lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info)
{
    const lumen_backend *be = backend_for(ctx);
    lumen_status (*entry)(lumen_context *, const lumen_filter_job *) =
        method == LUMEN_METHOD_SEPARABLE ? be->sep_filter
        : method == LUMEN_METHOD_FFT     ? be->fft_filter
                                         : be->filter2d;
    /* The reference defines each kernel form once; every method is that definition. */
    if (!entry) entry = job->kernel ? be->filter2d : be->sep_filter;
    lumen_status s = entry(ctx, job);
    if (s == LUMEN_OK) fill_info(ctx, method, info);
    lumen_log(LUMEN_LOG_DEBUG, "ran %s on cpu (%s), %dx%d kernel, %d threads",
              lumen_method_name(method), be->name, job->kw, job->kh, ctx->threads);
    return s;
}

lumen_method lumen_choose_method(lumen_context *ctx, const lumen_filter_job *job, unsigned allowed)
{
    const lumen_backend *be = backend_for(ctx);
    lumen_method best = LUMEN_METHOD_AUTO;
    double best_cost = INFINITY;
    for (int m = LUMEN_METHOD_DIRECT; m <= LUMEN_METHOD_FFT; m++) {
        if (!(allowed & (1u << m))) continue;
        double c = be->cost ? be->cost(ctx, job, (lumen_method)m) : (double)m;
        lumen_log(LUMEN_LOG_DEBUG, "cost of %s for a %dx%d kernel: %.3g ms",
                  lumen_method_name((lumen_method)m), job->kw, job->kh, c * 1e3);
        if (c >= 0 && c < best_cost) best_cost = c, best = (lumen_method)m;
    }
    if (best == LUMEN_METHOD_AUTO) /* nothing estimable: the first allowed one */
        for (int m = LUMEN_METHOD_FFT; m >= LUMEN_METHOD_DIRECT; m--)
            if (allowed & (1u << m)) best = (lumen_method)m;
    lumen_log(LUMEN_LOG_INFO, "auto chose %s for a %dx%d kernel", lumen_method_name(best), job->kw,
              job->kh);
    return best;
}

lumen_status lumen_run_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job,
                                     lumen_run_info *info)
{
    const lumen_backend *be = backend_for(ctx);
    if (!be->gaussian_fast)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "precision: fast Gaussian not available on %s",
                               be->name);
    lumen_status s = be->gaussian_fast(ctx, job);
    if (s == LUMEN_OK) fill_info(ctx, LUMEN_METHOD_RECURSIVE, info);
    return s;
}
