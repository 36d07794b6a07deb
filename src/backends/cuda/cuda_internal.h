/*
 * Shared declarations of the CUDA module: the core's services, errors, device-side views,
 * the border rule and pixel load/store as device functions, and the entries of each file.
 *
 * The module never calls a core function: everything goes through cu_host (set by
 * lumen_module_init), and it is linked with -Wl,--no-undefined without the core library.
 */
#ifndef LUMEN_CUDA_INTERNAL_H
#define LUMEN_CUDA_INTERNAL_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

extern "C" {
#include "internal.h"
}

/* The core's services (error messages, logging, plan cache, context state). */
extern const lumen_module_host *cu_host;

/* ---- errors ---------------------------------------------------------------- */

/*
 * Records "cuda: <what>: <CUDA's message>" and returns LUMEN_ERR_OUT_OF_MEMORY for an
 * allocation failure (so the runtime can fall back to the CPU), else LUMEN_ERR_INTERNAL.
 * Clears CUDA's last (non-sticky) error.
 */
lumen_status cu_fail(cudaError_t e, const char *what);

#define CU_TRY(call, what)                                                                         \
    do {                                                                                           \
        cudaError_t cu_e_ = (call);                                                                \
        if (cu_e_ != cudaSuccess) return cu_fail(cu_e_, what);                                     \
    } while (0)

/* The error of the last kernel launch, if any. */
#define CU_TRY_LAUNCH(what) CU_TRY(cudaGetLastError(), what)

/* ---- views in device memory -------------------------------------------------- */

/* A lumen_image whose data lies in device memory; strides in elements, as lumen_image. */
struct cu_view {
    char *data; /* element (0, 0, 0, 0) */
    int dtype;  /* lumen_dtype */
    int es;     /* element size in bytes */
    int64_t n, c, h, w;
    int64_t sn, sc, sh, sw;
};

/* Planes of a view (n * c); plane p is image p / c, channel p % c. */
static inline int64_t cu_planes(const cu_view &v) { return v.n * v.c; }

/* ---- device functions ------------------------------------------------------------- */

/* The border rule, saturation and pixel loads and stores are core/semantics.h's, compiled as
 * host and device functions (its LUMEN_HD). */

/* Pixel of dtype t at p as f32 (lumen_load_px). */
__device__ __forceinline__ float cu_load(const char *p, int t)
{
    return lumen_load_px(p, (lumen_dtype)t);
}

/* Stores v as dtype t (lumen_store_px: OpenCV's saturate_cast). */
__device__ __forceinline__ void cu_store(char *p, int t, float v)
{
    lumen_store_px(p, (lumen_dtype)t, v);
}

/* Element (0, 0) of plane p. */
__host__ __device__ __forceinline__ char *cu_plane_ptr(const cu_view &v, int64_t p)
{
    return v.data + ((p / v.c) * v.sn + (p % v.c) * v.sc) * v.es;
}

/* src(x, y) of a plane with the border rule; bval for the constant border. */
__device__ __forceinline__ float cu_fetch(const cu_view &s, const char *plane, int64_t y, int64_t x,
                                          int border, float bval)
{
    int64_t yy = lumen_border_index(y, s.h, (lumen_border)border),
            xx = lumen_border_index(x, s.w, (lumen_border)border);
    if (yy < 0 || xx < 0) return bval;
    return cu_load(plane + (yy * s.sh + xx * s.sw) * s.es, s.dtype);
}

/* Grid limits: blockIdx.y and .z stop at 65535; kernels loop over the rest. */
#define CU_GRID_YZ_MAX 65535

/* ---- state (cuda_state.cu) ------------------------------------------------------ */

struct cu_state;

/* ---- the tiled filter (direct.cu), used by direct and by both separable passes ---- */

/* Block shapes of the tiled kernel. */
enum cu_tile_shape {
    CU_TILE_2D,  /* 32 x 32 outputs per block: 2-D kernels */
    CU_TILE_ROW, /* 128 x 8: the row pass (kh == 1) */
    CU_TILE_COL  /* 32 x 64: the column pass (kw == 1) */
};

/* dst(x, y) = scale * sum_ij taps[i*kw+j] * src(x + j - ax, y + i - ay), border rule on src. */
struct cu_tile_job {
    cu_view src, dst;
    const float *taps; /* device memory, kh x kw row-major */
    int kw, kh, ax, ay;
    int border;
    float bval; /* the constant border's value, in src units */
    float scale;
    /* Optional: per-plane flags in device memory; when set, only planes whose flag is
     * non-zero are filtered (the FFT path's direct rerun of non-finite planes). */
    const int *plane_only_if;
};

lumen_status cu_tile_filter(cu_state *st, const cu_tile_job &job, cu_tile_shape shape);

/* ---- backend entries ---------------------------------------------------------------- */

/* Each takes a job of its op kind (module.cu's run() dispatches by kind). */
lumen_status cu_filter2d(lumen_context *ctx, const lumen_filter_job *job);
lumen_status cu_sep_filter(lumen_context *ctx, const lumen_filter_job *job);
lumen_status cu_fft_filter(lumen_context *ctx, const lumen_filter_job *job);
/* The fast Gaussian on CUDA runs the exact taps through the separable passes (run_info says
 * so: method separable, algo "exact-taps"). */
lumen_status cu_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job);
/* NCHW conv2d / conv_transpose2d (conv.cu): cuDNN, or the own direct kernel. */
lumen_status cu_conv2d(lumen_context *ctx, lumen_op_kind kind, const lumen_conv_job *job,
                       lumen_run_info *info);

/* Resize (resize.cu): the op's tables applied, one thread per output pixel. */
lumen_status cu_resize(lumen_context *ctx, const lumen_resize_job *job);

/* FFT lengths (fft.cu): the padded size the FFT path uses along an axis of n samples. */
int cu_fft_length(int64_t n, bool even);

/* Rates measured on a device by calibrate.cu, for the cost model. */
struct cu_rates {
    double taps_s;       /* multiply-adds per second of the direct kernel */
    double sep_taps_s;   /* taps per output pixel per second of the separable passes */
    double fft_elems_s;  /* padded FFT elements per second of the whole FFT filter */
    double host_bytes_s; /* host -> device bytes per second through staging */
    bool measured;
};
/* The context's device's rates, measured on the first call; false when the probe failed. */
bool cu_calibrated_rates(lumen_context *ctx, cu_rates *out);

/* Streaming multiprocessors of backend device i (module.cu), 0 when unknown. */
int cu_device_sm_count(int i);

#endif
