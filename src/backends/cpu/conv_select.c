/*
 * The CPU's choice of conv algorithm per job. The reference (the oracle of the tests) runs
 * when SIMD paths are off; otherwise the fastest path that takes the shape. Each fast path
 * states its own error bound in docs/conv2d.md.
 */
#include "conv.h"

lumen_status lumen_cpu_conv(lumen_context *ctx, lumen_op_kind kind, const lumen_conv_job *job,
                            lumen_run_info *info)
{
    const lumen_op op = lumen_op_conv(kind, job);
    if (!lumen_op_dtypes_in(&op, 1u << LUMEN_F32))
        return lumen_cpu_conv_widened(ctx, kind, job, info);
    const char *isa = "scalar", *algo = "reference";
    lumen_status s;
    if (!ctx->simd)
        s = kind == LUMEN_OP_CONV2D ? lumen_cpu_conv2d_reference(ctx, job)
                                    : lumen_cpu_conv_transpose2d_reference(ctx, job);
    else if (kind == LUMEN_OP_CONV2D && lumen_cpu_conv2d_depthwise_applies(job))
        algo = "depthwise", s = lumen_cpu_conv2d_depthwise(ctx, job, &isa);
    else if (kind == LUMEN_OP_CONV2D && lumen_cpu_conv2d_winograd_applies(ctx, job))
        algo = "winograd-f2x2", s = lumen_cpu_conv2d_winograd(ctx, job, &isa);
    else if (kind == LUMEN_OP_CONV2D)
        algo = "im2col+sgemm", s = lumen_cpu_conv2d_gemm(ctx, job, &isa);
    else
        algo = "phases+sgemm", s = lumen_cpu_conv_transpose2d_gemm(ctx, job, &isa);
    if (s) return s;
    info->method = LUMEN_METHOD_DIRECT;
    info->device = "cpu";
    info->isa = isa;
    info->algo = algo;
    info->threads = ctx->threads;
    return LUMEN_OK;
}
