/*
 * The CPU's choice of conv algorithm per job. The reference (the oracle of the tests) runs
 * when SIMD paths are off; otherwise the fastest path that takes the shape. Each fast path
 * states its own error bound in docs/conv2d.md.
 */
#include "conv.h"

lumen_conv_algo lumen_cpu_conv2d_algo(const lumen_context *ctx, const lumen_conv_job *job)
{
    if (!ctx->simd) return LUMEN_CONV_REFERENCE;
    if (lumen_cpu_conv2d_depthwise_applies(job)) return LUMEN_CONV_DEPTHWISE;
    if (lumen_cpu_conv2d_direct_applies(ctx, job)) return LUMEN_CONV_DIRECT;
    if (lumen_cpu_conv2d_winograd_applies(ctx, job))
        return lumen_cpu_conv2d_winograd_tile_for(job) == 4 ? LUMEN_CONV_WINOGRAD_F4
                                                            : LUMEN_CONV_WINOGRAD_F2;
    return LUMEN_CONV_GEMM;
}

const char *lumen_cpu_conv_algo_name(lumen_conv_algo a)
{
    static const char *const names[] = {"reference",     "depthwise",    "winograd-f2x2",
                                        "winograd-f4x4", "im2col+sgemm", "direct"};
    return names[a];
}

lumen_status lumen_cpu_conv(lumen_context *ctx, lumen_op_kind kind, const lumen_conv_job *job,
                            lumen_run_info *info)
{
    const lumen_op op = lumen_op_conv(kind, job);
    if (!lumen_op_dtypes_in(&op, 1u << LUMEN_F32))
        return lumen_cpu_conv_widened(ctx, kind, job, info);
    const char *isa = "scalar", *algo = "reference";
    lumen_status s;
    if (kind == LUMEN_OP_CONV_TRANSPOSE2D) {
        if (ctx->simd)
            algo = "phases+sgemm", s = lumen_cpu_conv_transpose2d_gemm(ctx, job, &isa);
        else
            s = lumen_cpu_conv_transpose2d_reference(ctx, job);
    } else {
        const lumen_conv_algo a = lumen_cpu_conv2d_algo(ctx, job);
        algo = lumen_cpu_conv_algo_name(a);
        switch (a) {
        case LUMEN_CONV_REFERENCE: s = lumen_cpu_conv2d_reference(ctx, job); break;
        case LUMEN_CONV_DEPTHWISE: s = lumen_cpu_conv2d_depthwise(ctx, job, &isa); break;
        case LUMEN_CONV_WINOGRAD_F2: s = lumen_cpu_conv2d_winograd_tile(ctx, job, 2, &isa); break;
        case LUMEN_CONV_WINOGRAD_F4: s = lumen_cpu_conv2d_winograd_tile(ctx, job, 4, &isa); break;
        case LUMEN_CONV_DIRECT: s = lumen_cpu_conv2d_direct(ctx, job, &isa); break;
        default: s = lumen_cpu_conv2d_gemm(ctx, job, &isa); break;
        }
    }
    if (s) return s;
    info->method = LUMEN_METHOD_DIRECT;
    info->device = "cpu";
    info->isa = isa;
    info->algo = algo;
    info->threads = ctx->threads;
    return LUMEN_OK;
}
