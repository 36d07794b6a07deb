/*
 * The CUDA module: lumen_module_init, the backend table, device discovery and the cost model.
 *
 * liblumen_cuda.so is loaded by the core at run time (src/core/module.c). It links the CUDA
 * runtime statically and cuFFT dynamically, never the core: the core's services come in the
 * host table. On a machine without an NVIDIA driver (or without a device) it loads, reports
 * 0 devices and stays silent (one debug log line).
 */
#include "cuda_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

const lumen_module_host *cu_host;

lumen_status cu_fail(cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear a non-sticky error so that later calls do not report it */
    return cu_host->set_error(e == cudaErrorMemoryAllocation ? LUMEN_ERR_OUT_OF_MEMORY
                                                             : LUMEN_ERR_INTERNAL,
                              "cuda: %s: %s", what, cudaGetErrorString(e));
}

/* ---- devices ------------------------------------------------------------------------- */

namespace {

struct device_props {
    char name[256];
    int major, minor, integrated, sms;
    size_t total;
};

std::once_flag probe_once;
std::vector<device_props> devices;

void probe()
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cu_host->log(LUMEN_LOG_DEBUG, "cuda: no devices (%s)", cudaGetErrorString(e));
        return;
    }
    try {
        for (int i = 0; i < n; i++) {
            cudaDeviceProp prop;
            if ((e = cudaGetDeviceProperties(&prop, i)) != cudaSuccess) {
                cudaGetLastError();
                cu_host->log(LUMEN_LOG_WARN, "cuda: device %d: %s; devices from %d on are not used",
                             i, cudaGetErrorString(e), i);
                break;
            }
            device_props d;
            std::snprintf(d.name, sizeof d.name, "%s", prop.name);
            d.major = prop.major, d.minor = prop.minor, d.integrated = prop.integrated;
            d.sms = prop.multiProcessorCount;
            d.total = prop.totalGlobalMem;
            devices.push_back(d);
        }
    } catch (...) {
        devices.clear();
    }
}

int device_count()
{
    std::call_once(probe_once, probe);
    return (int)devices.size();
}

lumen_status device_info(int i, lumen_device_info *info)
{
    if (i < 0 || i >= device_count())
        return cu_host->set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: no CUDA device %d", i);
    const device_props &d = devices[(size_t)i];
    std::memset(info, 0, sizeof *info);
    const size_t len = std::min(std::strlen(d.name), sizeof info->name - 1); /* may truncate */
    std::memcpy(info->name, d.name, len);
    std::snprintf(info->backend, sizeof info->backend, "cuda");
    info->kind = d.integrated ? LUMEN_DEVICE_INTEGRATED_GPU : LUMEN_DEVICE_DISCRETE_GPU;
    info->memory_total = d.total;
    std::snprintf(info->compute_capability, sizeof info->compute_capability, "%d.%d", d.major, d.minor);
    info->fp16 = d.major > 5 || (d.major == 5 && d.minor >= 3);
    info->bf16 = d.major >= 8;
    /* free memory: a query on that device (creates its primary context on first use) */
    int prev = -1;
    size_t free_b = 0, total_b = 0;
    if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(i) == cudaSuccess &&
        cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        info->memory_free = free_b;
    if (prev >= 0 && prev != i) cudaSetDevice(prev);
    cudaGetLastError();
    return LUMEN_OK;
}

/* ---- cost model ------------------------------------------------------------------------
 * Rates measured on the device (calibrate.cu) when the probe runs; otherwise these round
 * numbers for an H100-class GPU (132 SMs), scaled by the SM count, which rank methods only
 * roughly. */

#define COST_LAUNCH 5e-6       /* seconds per kernel launch */
#define COST_TAPS_PER_S 6e12   /* multiply-adds per second of the tiled kernel */
#define COST_DEV_BYTES_S 2e12  /* device memory bytes per second */
#define COST_HOST_BYTES_S 2e10 /* host <-> device bytes per second (pinned, PCIe) */
#define COST_FFT_BYTES 72.0    /* device bytes moved per padded element: pad, 2 transforms,
                                  multiply, crop */
#define COST_REF_SMS 132.0

/* Seconds by the rates calibrate.cu measured on this GPU. */
double measured_cost(const cu_rates &r, const lumen_filter_job *job, lumen_method method,
                     double px, double planes, double host_bytes)
{
    const lumen_image *s = job->src;
    double t = host_bytes / r.host_bytes_s;
    switch (method) {
    case LUMEN_METHOD_DIRECT:
        return job->kernel ? t + px * job->kw * job->kh / r.taps_s : -1.0;
    case LUMEN_METHOD_SEPARABLE:
        return job->kx && job->ky ? t + px * (job->kw + job->kh) / r.sep_taps_s : -1.0;
    case LUMEN_METHOD_FFT: {
        const int nh = cu_fft_length(s->h + job->kh - 1, false);
        const int nw = cu_fft_length(s->w + job->kw - 1, true);
        return nh < 0 || nw < 0 ? -1.0 : t + planes * nh * nw / r.fft_elems_s;
    }
    default: return -1.0;
    }
}

double cost(lumen_context *ctx, const lumen_op *op)
{
    if (op->kind > LUMEN_OP_FILTER_FFT) return -1.0;
    const lumen_filter_job *job = static_cast<const lumen_filter_job *>(op->job);
    const lumen_method method = op->kind == LUMEN_OP_FILTER_DIRECT      ? LUMEN_METHOD_DIRECT
                                : op->kind == LUMEN_OP_FILTER_SEPARABLE ? LUMEN_METHOD_SEPARABLE
                                                                        : LUMEN_METHOD_FFT;
    const lumen_image *s = job->src, *d = job->dst;
    const double planes = (double)s->n * s->c, px = planes * s->h * s->w;
    const double es_in = (double)lumen_dtype_bytes(s->dtype);
    const double es_out = (double)lumen_dtype_bytes(d->dtype);
    /* host views cross the bus whatever the method */
    const double host_bytes = (s->device ? 0.0 : px * es_in) + (d->device ? 0.0 : px * es_out);
    cu_rates r;
    if (cu_calibrated_rates(ctx, &r)) return measured_cost(r, job, method, px, planes, host_bytes);
    const int sms = cu_device_sm_count(cu_host->device(ctx));
    const double speed = sms > 0 ? sms / COST_REF_SMS : 1.0;
    const double taps_s = COST_TAPS_PER_S * speed, bytes_s = COST_DEV_BYTES_S * speed;
    double t = host_bytes / COST_HOST_BYTES_S;
    switch (method) {
    case LUMEN_METHOD_DIRECT:
        if (!job->kernel) return -1.0;
        return t + COST_LAUNCH + px * job->kw * job->kh / taps_s + px * (es_in + es_out) / bytes_s;
    case LUMEN_METHOD_SEPARABLE:
        if (!job->kx || !job->ky) return -1.0;
        return t + 2 * COST_LAUNCH + px * (job->kw + job->kh) / taps_s +
               px * (es_in + 8 + es_out) / bytes_s;
    case LUMEN_METHOD_FFT: {
        const int nh = cu_fft_length(s->h + job->kh - 1, false);
        const int nw = cu_fft_length(s->w + job->kw - 1, true);
        if (nh < 0 || nw < 0) return -1.0;
        return t + 6 * COST_LAUNCH + planes * nh * nw * COST_FFT_BYTES / bytes_s;
    }
    default: return -1.0;
    }
}

/* Every op kind of ABI 3 and resize, on u8, u16 and f32 (conv: f32, which the ops layer
 * guarantees); resize outputs up to 65535 x 8 rows tall (its grid's y). */
bool supports(lumen_context *ctx, const lumen_op *op)
{
    (void)ctx;
    /* f16/bf16 views run on the CPU: cu_view and the staging copies size u8/u16/f32 only, and
     * no CUDA half path has run on a GPU yet (the module is built, never run, here) */
    if (!lumen_op_dtypes_in(op, LUMEN_DTYPES_CLASSIC)) return false;
    if (op->kind == LUMEN_OP_RESIZE) /* its grid's y: 65535 blocks of 8 rows */
        return (static_cast<const lumen_resize_job *>(op->job)->dst->h + 7) / 8 <= CU_GRID_YZ_MAX;
    return op->kind >= LUMEN_OP_FILTER_DIRECT && op->kind <= LUMEN_OP_CONV_TRANSPOSE2D;
}

lumen_status run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const lumen_filter_job *fj = static_cast<const lumen_filter_job *>(op->job);
    switch (op->kind) {
    case LUMEN_OP_FILTER_DIRECT: return cu_filter2d(ctx, fj);
    case LUMEN_OP_FILTER_SEPARABLE: return cu_sep_filter(ctx, fj);
    case LUMEN_OP_FILTER_FFT: return cu_fft_filter(ctx, fj);
    case LUMEN_OP_GAUSSIAN_FAST:
        info->method = LUMEN_METHOD_SEPARABLE; /* the exact taps, not a recursive filter */
        info->algo = "exact-taps";
        return cu_gaussian_fast(ctx, static_cast<const lumen_gauss_job *>(op->job));
    case LUMEN_OP_CONV2D:
    case LUMEN_OP_CONV_TRANSPOSE2D:
        return cu_conv2d(ctx, op->kind, static_cast<const lumen_conv_job *>(op->job), info);
    case LUMEN_OP_RESIZE:
        info->algo = "cuda:resize";
        return cu_resize(ctx, static_cast<const lumen_resize_job *>(op->job));
    default: break;
    }
    return cu_host->set_error(LUMEN_ERR_UNSUPPORTED, "cuda: op kind %d", (int)op->kind);
}

lumen_backend backend;

} // namespace

int cu_device_sm_count(int i)
{
    return i >= 0 && i < device_count() ? devices[(size_t)i].sms : 0;
}

/* ---- entry point ------------------------------------------------------------------------ */

extern "C" __attribute__((visibility("default"))) lumen_status
lumen_module_init(int abi, const lumen_module_host *host, const lumen_backend **out)
{
    /* A core of another ABI may lay the host table out differently: touch nothing. */
    if (abi != LUMEN_MODULE_ABI || !host || host->abi != LUMEN_MODULE_ABI || !out)
        return LUMEN_ERR_UNSUPPORTED;
    cu_host = host;
    backend.name = "cuda";
    backend.supports = supports;
    backend.run = run;
    backend.cost = cost;
    backend.device_count = device_count;
    backend.device_info = device_info;
    backend.state_create = cu_state_create;
    backend.state_destroy = cu_state_destroy;
    backend.alloc = cu_mem_alloc;
    backend.release = cu_mem_release;
    backend.upload = cu_mem_upload;
    backend.download = cu_mem_download;
    backend.synchronize = cu_synchronize;
    *out = &backend;
    return LUMEN_OK;
}
