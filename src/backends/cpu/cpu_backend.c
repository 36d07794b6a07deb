/* The CPU backend: the op interface over the fast paths and the scalar reference. It supports
 * every op, so that the runtime can always fall back to it. A context with SIMD off runs the
 * reference of every op: the one way to reach the oracle. */
#include "conv.h"
#include "cpu.h"
#include "gaussian_fast.h"

static bool cpu_supports(lumen_context *ctx, const lumen_op *op)
{
    (void)ctx;
    return (unsigned)op->kind < LUMEN_OP_KIND_COUNT;
}

/* The row kernels the filter paths (engine, FFT, fast Gaussian) choose for this context. */
static const char *filter_isa(const lumen_context *ctx)
{
    return lumen_cpu_row_kernels(ctx)->isa;
}

static lumen_status run_filter(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const lumen_filter_job *job = op->job;
    if (job->map && (!ctx->simd || op->kind != LUMEN_OP_FILTER_FFT))
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "film map: only the CPU's FFT path fuses the film steps");
    if (!ctx->simd) {
        info->isa = "scalar", info->algo = "reference";
        return lumen_cpu_reference_filter(ctx, job);
    }
    info->isa = filter_isa(ctx);
    if (op->kind == LUMEN_OP_FILTER_FFT) return lumen_cpu_fft(ctx, job);
    lumen_status s = job->taps == LUMEN_TAPS_SEPARABLE ? lumen_cpu_separable(ctx, job)
                                                       : lumen_cpu_direct(ctx, job);
    if (s == LUMEN_OK) lumen_cpu_fft_note_kernel(ctx, job); /* auto's next FFT estimate */
    return s;
}

static lumen_status cpu_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    lumen_cpu_fit_threads(ctx);
    switch (op->kind) {
    case LUMEN_OP_FILTER_DIRECT:
    case LUMEN_OP_FILTER_SEPARABLE:
    case LUMEN_OP_FILTER_FFT: return run_filter(ctx, op, info);
    case LUMEN_OP_GAUSSIAN_FAST:
        /* The recursive filter's portable C is that approximation's own definition: with SIMD
         * off it runs too, and says so ("generic"). */
        info->isa = lumen_cpu_gaussian_fast_isa(ctx);
        return lumen_cpu_gaussian_fast(ctx, op->job);
    case LUMEN_OP_CONV2D:
    case LUMEN_OP_CONV_TRANSPOSE2D: return lumen_cpu_conv(ctx, op->kind, op->job, info);
    case LUMEN_OP_RESIZE: return lumen_cpu_resize(ctx, op->job, info);
    case LUMEN_OP_KIND_COUNT: break;
    }
    return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "cpu: unknown op kind %d", (int)op->kind);
}

const lumen_backend lumen_cpu_backend = {
    .name = "cpu",
    .supports = cpu_supports,
    .run = cpu_run,
    .cost = lumen_cpu_cost,
    .device_count = lumen_cpu_device_count,
    .device_info = lumen_cpu_device_info,
};
