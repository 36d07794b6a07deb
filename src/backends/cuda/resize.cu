/*
 * LUMEN_OP_RESIZE on CUDA (docs/resize.md): one thread per output pixel sums its window from
 * the op's two axis tables (uploaded once per call), horizontal then vertical as the CPU;
 * nearest copies (f32 bit for bit). Every window lies
 * inside the image (the tables fold the edge rules in), so there is no border code; Pillow's
 * 8-bit rule runs in its integers (22-bit weights, bytes between the passes). One launch
 * covers every plane (grid z walks them, looping past 65535). Built on every machine with
 * nvcc; run only where a GPU is (test_backend_ops then holds it to the reference).
 */
#include "cuda_views.h"

namespace {

struct resize_params {
    cu_view src, dst;
    const int32_t *fx, *fy; /* window starts per output column and row */
    const float *wx, *wy;   /* kx weights per column, ky per row */
    const int32_t *iwx, *iwy; /* Pillow's 8-bit rule: its integer weights (else unused) */
    int kx, ky;
    int nearest, pillow_u8;
};

__global__ void resize_kernel(resize_params p)
{
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t y = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.dst.w || y >= p.dst.h) return;
    const int64_t planes = p.dst.n * p.dst.c;
    for (int64_t plane = blockIdx.z; plane < planes; plane += gridDim.z) {
        const char *s = cu_plane_ptr(p.src, plane);
        char *d = cu_plane_ptr(p.dst, plane) + (y * p.dst.sh + x * p.dst.sw) * p.dst.es;
        const int64_t x0 = p.fx[x], y0 = p.fy[y];
        if (p.nearest) {
            const char *e = s + (y0 * p.src.sh + x0 * p.src.sw) * p.src.es;
            if (p.src.dtype == LUMEN_F32 && p.dst.dtype == LUMEN_F32)
                *(uint32_t *)d = *(const uint32_t *)e;
            else
                cu_store(d, p.dst.dtype, cu_load(e, p.src.dtype));
            continue;
        }
        if (p.pillow_u8) { /* Pillow's integers: 22-bit weights, bytes between the passes */
            int32_t acc = 1 << 21;
            for (int i = 0; i < p.ky; i++) {
                const uint8_t *row = (const uint8_t *)s + (y0 + i) * p.src.sh + x0 * p.src.sw;
                int32_t r = 1 << 21;
                for (int t = 0; t < p.kx; t++)
                    r += p.iwx[x * p.kx + t] * row[t * p.src.sw];
                acc += p.iwy[y * p.ky + i] * min(max(r >> 22, 0), 255);
            }
            *(uint8_t *)d = (uint8_t)min(max(acc >> 22, 0), 255);
            continue;
        }
        float acc = 0.0f;
        for (int i = 0; i < p.ky; i++) {
            const char *row = s + ((y0 + i) * p.src.sh + x0 * p.src.sw) * p.src.es;
            float r = 0.0f;
            for (int t = 0; t < p.kx; t++)
                r += p.wx[x * p.kx + t] * cu_load(row + t * p.src.sw * p.src.es, p.src.dtype);
            acc += p.wy[y * p.ky + i] * r;
        }
        cu_store(d, p.dst.dtype, acc);
    }
}

} // namespace

lumen_status cu_resize(lumen_context *ctx, const lumen_resize_job *job)
{
    cu_state *st;
    lumen_status s = cu_begin(ctx, &st);
    if (s) return s;
    cu_op op(ctx, st);
    const float *fx, *fy, *wx, *wy, *iwx = nullptr, *iwy = nullptr;
    /* the int starts travel as their bits through the float upload */
    if ((s = cu_op_start(op, job->src, job->dst)) ||
        (s = cu_op_upload_floats(op, reinterpret_cast<const float *>(job->x.first),
                                 (size_t)job->x.out, &fx)) ||
        (s = cu_op_upload_floats(op, reinterpret_cast<const float *>(job->y.first),
                                 (size_t)job->y.out, &fy)) ||
        (s = cu_op_upload_floats(op, job->x.weights, (size_t)(job->x.out * job->x.taps), &wx)) ||
        (s = cu_op_upload_floats(op, job->y.weights, (size_t)(job->y.out * job->y.taps), &wy)))
        return s;
    if (job->pillow_rounding &&
        ((s = cu_op_upload_floats(op, reinterpret_cast<const float *>(job->x.iweights),
                                  (size_t)(job->x.out * job->x.taps), &iwx)) ||
         (s = cu_op_upload_floats(op, reinterpret_cast<const float *>(job->y.iweights),
                                  (size_t)(job->y.out * job->y.taps), &iwy))))
        return s;
    resize_params p = {op.src.v,
                       op.dst.v,
                       reinterpret_cast<const int32_t *>(fx),
                       reinterpret_cast<const int32_t *>(fy),
                       wx,
                       wy,
                       reinterpret_cast<const int32_t *>(iwx),
                       reinterpret_cast<const int32_t *>(iwy),
                       job->x.taps,
                       job->y.taps,
                       job->nearest,
                       job->pillow_rounding};
    const dim3 block(32, 8);
    const int64_t planes = cu_planes(op.dst.v);
    const dim3 grid((unsigned)((op.dst.v.w + 31) / 32), (unsigned)((op.dst.v.h + 7) / 8),
                    (unsigned)(planes < CU_GRID_YZ_MAX ? planes : CU_GRID_YZ_MAX));
    if (grid.y > CU_GRID_YZ_MAX)
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED, "cuda: resize: output too tall");
    resize_kernel<<<grid, block, 0, st->stream>>>(p);
    CU_TRY_LAUNCH("resize kernel");
    return cu_op_finish(op);
}
