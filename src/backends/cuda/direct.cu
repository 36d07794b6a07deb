/*
 * Direct filtering: the tiled correlation kernel (also both passes of the separable filter)
 * and the backend's filter2d entry.
 *
 * A block computes a TW x TH tile of outputs of one plane; each thread computes RY outputs of
 * one column (rows ty, ty + BH, ...), so every tap read from shared memory serves RY FMAs.
 * The kernel is taken in chunks of at most CKW x CKH taps: for each chunk the block loads the
 * (TW + ckw - 1) x (TH + ckh - 1) source window it needs (border rule applied per element,
 * dtype converted to f32) and the chunk's taps into shared memory, then accumulates. Small
 * kernels are one chunk; any kernel size works (shared memory stays under 20 KB), large ones
 * just take many chunks — the FFT path is the fast route there.
 *
 * One launch covers every plane (n * c): grid z walks planes, grid y tile rows, grid x tile
 * columns; y and z loop when there are more than 65535.
 */
#include "cuda_views.h"

#include <algorithm>

namespace {

struct tile_params {
    cu_view src, dst;
    const float *taps;
    int kw, kh, ax, ay, border;
    float bval, scale;
    const int *only_if;
    int64_t planes, tiles_y;
    int ckw, ckh; /* chunk sizes (the largest chunk; the last ones may be smaller) */
};

template <int BW, int BH, int RY>
__global__ void __launch_bounds__(BW *BH) tile_kernel(const tile_params p)
{
    extern __shared__ float smem[];
    constexpr int TW = BW, TH = BH * RY, NT = BW * BH;
    const int sw = TW + p.ckw - 1; /* shared row length */
    float *tile = smem;
    float *taps = smem + (TH + p.ckh - 1) * sw;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BW + tx;
    const int64_t x0 = (int64_t)blockIdx.x * TW;

    for (int64_t plane = blockIdx.z; plane < p.planes; plane += gridDim.z) {
        if (p.only_if && !p.only_if[plane]) continue; /* uniform across the block */
        const char *sp = cu_plane_ptr(p.src, plane);
        char *dp = cu_plane_ptr(p.dst, plane);
        for (int64_t by = blockIdx.y; by < p.tiles_y; by += gridDim.y) {
            const int64_t y0 = by * TH;
            float acc[RY];
#pragma unroll
            for (int r = 0; r < RY; r++) acc[r] = 0.0f;

            for (int ki0 = 0; ki0 < p.kh; ki0 += p.ckh) {
                const int ch = min(p.ckh, p.kh - ki0);
                for (int kj0 = 0; kj0 < p.kw; kj0 += p.ckw) {
                    const int cw = min(p.ckw, p.kw - kj0);
                    const int lw = TW + cw - 1, lh = TH + ch - 1;
                    const int64_t sy0 = y0 + ki0 - p.ay, sx0 = x0 + kj0 - p.ax;
                    const bool inside =
                        sy0 >= 0 && sy0 + lh <= p.src.h && sx0 >= 0 && sx0 + lw <= p.src.w;
                    __syncthreads(); /* the previous chunk has been read */
                    for (int i = tid; i < lw * lh; i += NT) {
                        const int r = i / lw, c = i - r * lw;
                        tile[r * sw + c] =
                            inside ? cu_load(sp + ((sy0 + r) * p.src.sh + (sx0 + c) * p.src.sw) * p.src.es,
                                             p.src.dtype)
                                   : cu_fetch(p.src, sp, sy0 + r, sx0 + c, p.border, p.bval);
                    }
                    for (int i = tid; i < ch * cw; i += NT) {
                        const int r = i / cw, c = i - r * cw;
                        taps[i] = p.taps[(int64_t)(ki0 + r) * p.kw + kj0 + c];
                    }
                    __syncthreads();
                    for (int i = 0; i < ch; i++) {
                        const float *row = tile + (ty + i) * sw + tx;
                        const float *trow = taps + i * cw;
                        for (int j = 0; j < cw; j++) {
                            const float t = trow[j];
#pragma unroll
                            for (int r = 0; r < RY; r++) acc[r] = fmaf(t, row[r * BH * sw + j], acc[r]);
                        }
                    }
                }
            }

            const int64_t x = x0 + tx;
            if (x < p.dst.w) {
#pragma unroll
                for (int r = 0; r < RY; r++) {
                    const int64_t y = y0 + ty + r * BH;
                    if (y < p.dst.h)
                        cu_store(dp + (y * p.dst.sh + x * p.dst.sw) * p.dst.es, p.dst.dtype,
                                 acc[r] * p.scale);
                }
            }
        }
    }
}

template <int BW, int BH, int RY>
lumen_status launch(cu_state *st, tile_params p, int max_ckw, int max_ckh)
{
    constexpr int TW = BW, TH = BH * RY;
    p.ckw = std::min(p.kw, max_ckw);
    p.ckh = std::min(p.kh, max_ckh);
    const int64_t tiles_x = (p.dst.w + TW - 1) / TW;
    p.tiles_y = (p.dst.h + TH - 1) / TH;
    p.planes = cu_planes(p.dst);
    if (tiles_x > 0x7fffffff)
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED, "cuda: image width %lld is too large",
                                  (long long)p.dst.w);
    const size_t smem =
        sizeof(float) * ((size_t)(TH + p.ckh - 1) * (TW + p.ckw - 1) + (size_t)p.ckh * p.ckw);
    dim3 grid((unsigned)tiles_x, (unsigned)std::min<int64_t>(p.tiles_y, CU_GRID_YZ_MAX),
              (unsigned)std::min<int64_t>(p.planes, CU_GRID_YZ_MAX));
    tile_kernel<BW, BH, RY><<<grid, dim3(BW, BH), smem, st->stream>>>(p);
    CU_TRY_LAUNCH("tiled filter kernel");
    return LUMEN_OK;
}

} // namespace

lumen_status cu_tile_filter(cu_state *st, const cu_tile_job &job, cu_tile_shape shape)
{
    tile_params p;
    p.src = job.src, p.dst = job.dst, p.taps = job.taps;
    p.kw = job.kw, p.kh = job.kh, p.ax = job.ax, p.ay = job.ay, p.border = job.border;
    p.bval = job.bval, p.scale = job.scale, p.only_if = job.plane_only_if;
    switch (shape) {
    case CU_TILE_ROW: return launch<128, 2, 4>(st, p, 128, 8);  /* 128 x 8 outputs */
    case CU_TILE_COL: return launch<32, 8, 8>(st, p, 8, 64);    /* 32 x 64 outputs */
    default: return launch<32, 8, 4>(st, p, 32, 32);            /* 32 x 32 outputs */
    }
}

lumen_status cu_filter2d(lumen_context *ctx, const lumen_filter_job *job)
{
    if (!job->kernel)
        return cu_host->set_error(LUMEN_ERR_INTERNAL, "cuda: direct filter without a kernel");
    cu_state *st;
    lumen_status s = cu_begin(ctx, &st);
    if (s) return s;
    cu_op op(ctx, st);
    const float *taps;
    if ((s = cu_op_start(op, job->src, job->dst)) ||
        (s = cu_op_upload_floats(op, job->kernel, (size_t)job->kw * job->kh, &taps)))
        return s;
    cu_tile_job tj = {op.src.v, op.dst.v, taps, job->kw, job->kh, job->ax, job->ay,
                      (int)job->border, job->border_value, 1.0f, nullptr};
    /* 1-D kernels take the row or column pass's tile shape */
    const cu_tile_shape shape = job->kh == 1 ? CU_TILE_ROW : job->kw == 1 ? CU_TILE_COL : CU_TILE_2D;
    if ((s = cu_tile_filter(st, tj, shape))) return s;
    return cu_op_finish(op);
}
