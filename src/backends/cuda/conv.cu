/*
 * NCHW conv2d and conv_transpose2d on CUDA: cuDNN when the machine has it, else lumen's own
 * direct kernel.
 *
 * cuDNN is loaded at run time (dlopen "libcudnn.so.9", its legacy convolution API through a
 * table of function pointers), so the module loads and runs on machines without it; there
 * every conv takes the own kernel. $LUMEN_CUDA_CONV = own | cudnn | auto (default) forces a
 * path, for tests: `cudnn` makes a job cuDNN cannot run fail as unsupported (the runtime then
 * falls back to the CPU, or strict mode errors), instead of taking the own kernel.
 *
 * cuDNN path:
 *  - Tensors are handed to cuDNN densely packed NCHW. Views that are not (strided, sliced,
 *    channels-last, negative strides) are packed into pool buffers by a gather kernel, and a
 *    y that is not is computed into a packed buffer and scattered back. So a plan depends on
 *    the shapes, not on the strides.
 *  - The algorithm is found once per (kind, x/w/y shapes, stride, pad, dilation, groups, math
 *    mode, 16-byte alignment of the pointers) with cudnnFind*AlgorithmEx on the real buffers
 *    (y's stand-in is a scratch block, so a failed search never writes y) and cached with its
 *    descriptors in the context's plan cache. A shape cuDNN cannot run is cached as such.
 *  - Math: FP32 with FMA (CUDNN_FMA_MATH: no TF32 tensor cores; CUDNN_DEFAULT_MATH would allow
 *    TF32 on Ampere and later, as PyTorch's allow_tf32). Only algorithms that Find reports
 *    with FMA math are taken. lumen_context_set_tf32 / $LUMEN_TF32=1 switch to
 *    CUDNN_DEFAULT_MATH and take Find's choice with its math type.
 *  - Workspaces come from the context's pool, so they count against the memory limit; an
 *    allocation beyond it is LUMEN_ERR_OUT_OF_MEMORY before y is written (the runtime falls
 *    back to the CPU). The search workspace (up to FIND_WS_MAX) is freed right after it.
 *  - conv_transpose2d is cudnnConvolutionBackwardData with w as the filter: the transposed
 *    conv is the adjoint (the input gradient) of conv2d from y's shape to x's.
 *  - bias (host memory, K floats) is uploaded once per value into a cached pool block and
 *    added with cudnnAddTensor.
 *
 * The own kernel: one thread per output element, any strides, f32 accumulation with FMA in
 * gather form (the CPU reference's order of taps). Correct first; it is the path for shapes
 * cuDNN refuses and machines without it.
 */
#include "cuda_views.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#if LUMEN_HAVE_CUDNN
#include "cudnn_api.h"
#endif

namespace
{

/* ---- the own kernel ------------------------------------------------------------------ */

struct conv_params {
    cu_view x, w, y;   /* f32 */
    const float *bias; /* device memory, K floats, or NULL */
    int sh, sw, ph, pw, dh, dw, groups;
    bool transposed;
    int64_t total; /* elements of y */
};

__device__ __forceinline__ const float *fptr(const cu_view &v, int64_t n, int64_t c, int64_t h,
                                             int64_t w)
{
    return reinterpret_cast<const float *>(v.data) + n * v.sn + c * v.sc + h * v.sh + w * v.sw;
}

/* y(n, k, p, q) of conv2d: sum over c of group(k), r, s of w(k, c, r, s) x(n, c0+c, ih, iw). */
__device__ float conv_forward_at(const conv_params &P, int64_t n, int64_t k, int64_t p, int64_t q)
{
    const int64_t cg = P.w.c, kg = P.y.c / P.groups, c0 = k / kg * cg;
    float acc = P.bias ? P.bias[k] : 0.0f;
    for (int64_t c = 0; c < cg; c++)
        for (int64_t r = 0; r < P.w.h; r++) {
            const int64_t ih = p * P.sh - P.ph + r * P.dh;
            if (ih < 0 || ih >= P.x.h) continue;
            for (int64_t s = 0; s < P.w.w; s++) {
                const int64_t iw = q * P.sw - P.pw + s * P.dw;
                if (iw < 0 || iw >= P.x.w) continue;
                acc = fmaf(*fptr(P.w, k, c, r, s), *fptr(P.x, n, c0 + c, ih, iw), acc);
            }
        }
    return acc;
}

/* y(n, k, p, q) of conv_transpose2d (the adjoint of conv2d, in gather form): the taps whose
 * forward image p = ih*stride - pad + r*dil lands on this output. */
__device__ float conv_transposed_at(const conv_params &P, int64_t n, int64_t k, int64_t p,
                                    int64_t q)
{
    const int64_t kg = P.w.c, cg = P.x.c / P.groups, g = k / kg, kk = k - g * kg;
    float acc = P.bias ? P.bias[k] : 0.0f;
    for (int64_t c = g * cg; c < (g + 1) * cg; c++)
        for (int64_t r = 0; r < P.w.h; r++) {
            const int64_t nh = p + P.ph - r * P.dh;
            if (nh < 0 || nh % P.sh) continue;
            const int64_t ih = nh / P.sh;
            if (ih >= P.x.h) continue;
            for (int64_t s = 0; s < P.w.w; s++) {
                const int64_t nw = q + P.pw - s * P.dw;
                if (nw < 0 || nw % P.sw) continue;
                const int64_t iw = nw / P.sw;
                if (iw >= P.x.w) continue;
                acc = fmaf(*fptr(P.w, c, kk, r, s), *fptr(P.x, n, c, ih, iw), acc);
            }
        }
    return acc;
}

/* Consecutive threads take consecutive q of one (n, k, p): a warp reads the same taps. */
__global__ void direct_conv_kernel(const conv_params P)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < P.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = i % P.y.w, t = i / P.y.w, p = t % P.y.h, nk = t / P.y.h;
        const int64_t k = nk % P.y.c, n = nk / P.y.c;
        const float v =
            P.transposed ? conv_transposed_at(P, n, k, p, q) : conv_forward_at(P, n, k, p, q);
        *const_cast<float *>(fptr(P.y, n, k, p, q)) = v;
    }
}

unsigned grid_for(int64_t n, int threads)
{
    return (unsigned)std::max<int64_t>(1,
                                       std::min<int64_t>((n + threads - 1) / threads, 65535 * 16));
}

int64_t elems(const cu_view &v)
{
    return v.n * v.c * v.h * v.w;
}

lumen_status own_conv(cu_state *st, const conv_params &P)
{
    direct_conv_kernel<<<grid_for(P.total, 256), 256, 0, st->stream>>>(P);
    CU_TRY_LAUNCH("conv kernel");
    return LUMEN_OK;
}

/* ---- mode: $LUMEN_CUDA_CONV ------------------------------------------------------------ */

enum conv_mode { MODE_AUTO, MODE_OWN, MODE_CUDNN };

conv_mode mode_from_env()
{
    const char *v = std::getenv("LUMEN_CUDA_CONV");
    if (!v || !*v || !std::strcmp(v, "auto")) return MODE_AUTO;
    if (!std::strcmp(v, "own")) return MODE_OWN;
    if (!std::strcmp(v, "cudnn")) return MODE_CUDNN;
    static std::once_flag warned;
    std::call_once(warned, [v] {
        cu_host->log(LUMEN_LOG_WARN, "LUMEN_CUDA_CONV='%s' is not own, cudnn or auto; auto used",
                     v);
    });
    return MODE_AUTO;
}

/* ---- bias: a device copy per value, cached ---------------------------------------------- */

struct bias_entry {
    int refs;
    cu_state *st;
    float *dev;
};

void bias_unref(void *p)
{
    bias_entry *b = static_cast<bias_entry *>(p);
    if (--b->refs) return;
    cudaSetDevice(b->st->device);
    cu_pool_release(b->st, b->dev); /* stream-ordered: queued readers run first */
    cu_state_unref(b->st);
    delete b;
}

/* Holds one reference for the duration of an op. */
template <void (*Unref)(void *)> struct held {
    void *p = nullptr;
    held() = default;
    held(const held &) = delete;
    held &operator=(const held &) = delete;
    ~held()
    {
        if (p) Unref(p);
    }
};

/* A plan-cache key: a tag, the state, then integers and bytes. */
struct key_builder {
    std::vector<unsigned char> k;
    key_builder(const char *tag, const cu_state *st) : k(tag, tag + std::strlen(tag) + 1)
    {
        bytes(&st, sizeof st);
    }
    void bytes(const void *p, size_t n)
    {
        k.insert(k.end(), static_cast<const unsigned char *>(p),
                 static_cast<const unsigned char *>(p) + n);
    }
};

lumen_status get_bias(cu_op &op, const float *bias, int64_t k, bias_entry **out)
{
    key_builder key("lumen-cuda-conv-bias", op.st);
    key.bytes(bias, (size_t)k * sizeof(float));
    if (auto *b =
            static_cast<bias_entry *>(cu_host->plan_get(op.ctx, key.k.data(), key.k.size()))) {
        b->refs++;
        *out = b;
        return LUMEN_OK;
    }
    bias_entry *b = new (std::nothrow) bias_entry();
    if (!b) return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: conv bias: out of memory");
    b->refs = 1;
    b->st = op.st;
    cu_state_ref(op.st);
    held<bias_unref> guard;
    guard.p = b;
    void *p;
    lumen_status s = cu_alloc(op.ctx, op.st, (size_t)k * sizeof(float), &p, "conv bias");
    if (s) return s;
    b->dev = static_cast<float *>(p);
    if ((s = cu_upload_staged(op.st, b->dev, bias, (size_t)k * sizeof(float)))) return s;
    guard.p = nullptr;
    b->refs++; /* the cache's reference; put drops it on failure */
    cu_host->plan_put(op.ctx, key.k.data(), key.k.size(), b, bias_unref,
                      sizeof *b + (size_t)k * sizeof(float) + key.k.size());
    *out = b;
    return LUMEN_OK;
}

/* ---- one job on the device -------------------------------------------------------------- */

struct conv_run {
    cu_op &op;
    lumen_op_kind kind;
    const lumen_conv_job *job;
    cu_view x, w, y;   /* bound views (device memory) */
    const float *bias; /* device, or NULL */
    bool tf32;
};

conv_params params_of(const conv_run &r, const cu_view &x, const cu_view &w, const cu_view &y,
                      const float *bias)
{
    const lumen_conv2d_params &p = r.job->p;
    conv_params P;
    P.x = x, P.w = w, P.y = y, P.bias = bias;
    P.sh = p.stride_h, P.sw = p.stride_w, P.ph = p.pad_h, P.pw = p.pad_w;
    P.dh = p.dilation_h, P.dw = p.dilation_w, P.groups = p.groups;
    P.transposed = r.kind == LUMEN_OP_CONV_TRANSPOSE2D;
    P.total = elems(y);
    return P;
}

lumen_status run_own(conv_run &r)
{
    return own_conv(r.op.st, params_of(r, r.x, r.w, r.y, r.bias));
}

} // namespace

/* ---- cuDNN ----------------------------------------------------------------------------- */

#if LUMEN_HAVE_CUDNN

namespace
{

lumen_dnn_api dnn;
bool dnn_ok;
std::once_flag dnn_once;

/* ---- packing views into dense NCHW and back ------------------------------------------- */

bool dense_nchw(const cu_view &v)
{
    /* a size-1 axis may have any stride */
    return (v.w == 1 || v.sw == 1) && (v.h == 1 || v.sh == v.w) &&
           (v.c == 1 || v.sc == v.h * v.w) && (v.n == 1 || v.sn == v.c * v.h * v.w);
}

cu_view dense_view(const cu_view &v, void *data)
{
    cu_view d = v;
    d.data = static_cast<char *>(data);
    d.sw = 1, d.sh = v.w, d.sc = v.h * v.w, d.sn = v.c * v.h * v.w;
    return d;
}

/* dst(i) = src(i) for every element; both f32 views of one shape. */
__global__ void copy_view_kernel(const cu_view src, const cu_view dst, int64_t total)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t w = i % src.w, t = i / src.w, h = t % src.h, nc = t / src.h;
        const int64_t c = nc % src.c, n = nc / src.c;
        *const_cast<float *>(fptr(dst, n, c, h, w)) = *fptr(src, n, c, h, w);
    }
}

lumen_status copy_view(cu_state *st, const cu_view &src, const cu_view &dst)
{
    const int64_t total = elems(src);
    copy_view_kernel<<<grid_for(total, 256), 256, 0, st->stream>>>(src, dst, total);
    CU_TRY_LAUNCH("conv packing kernel");
    return LUMEN_OK;
}

/* The view as dense NCHW: itself, or a packed copy in a pool block of the op. */
lumen_status packed_input(cu_op &op, const cu_view &v, cu_view *out, const char *what)
{
    if (dense_nchw(v)) {
        *out = v;
        return LUMEN_OK;
    }
    void *p;
    lumen_status s = cu_op_scratch(op, (size_t)elems(v) * sizeof(float), &p, what);
    if (s) return s;
    *out = dense_view(v, p);
    return copy_view(op.st, v, *out);
}

/* dlopen + dlsym of every entry; any missing one disables cuDNN (the library stays loaded:
 * unloading cuDNN at exit time is a known source of crashes). */
void dnn_load()
{
    void *h = dlopen(LUMEN_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        cu_host->log(LUMEN_LOG_INFO, "cuda: cuDNN not loaded (%s); conv runs lumen's own kernel",
                     dlerror());
        return;
    }
    const char *missing = nullptr;
#define LOAD(f)                                                                                    \
    dnn.f = reinterpret_cast<decltype(dnn.f)>(dlsym(h, #f));                                       \
    if (!dnn.f && !missing) missing = #f;
    LUMEN_DNN_FUNCS(LOAD)
#undef LOAD
    if (missing) {
        cu_host->log(LUMEN_LOG_WARN, "cuda: %s lacks %s; conv runs lumen's own kernel",
                     LUMEN_CUDNN_SONAME, missing);
        dnn = lumen_dnn_api();
        return;
    }
    dnn_ok = true;
    cu_host->log(LUMEN_LOG_INFO, "cuda: cuDNN %zu loaded for conv", dnn.cudnnGetVersion());
}

bool dnn_available()
{
    std::call_once(dnn_once, dnn_load);
    return dnn_ok;
}

/* NOT_SUPPORTED and BAD_PARAM (a shape or layout cuDNN lacks) are "unsupported": the own
 * kernel or the runtime's fallback takes the job; allocation failures are out of memory. */
lumen_status dnn_fail(cudnnStatus_t e, const char *what)
{
    cudaGetLastError();
    const int cat = (int)e / 1000;
    const lumen_status s = cat == 2 || cat == 3 ? LUMEN_ERR_UNSUPPORTED
                           : e == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                                   e == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                               ? LUMEN_ERR_OUT_OF_MEMORY
                               : LUMEN_ERR_INTERNAL;
    return cu_host->set_error(s, "cuda: cuDNN %s: %s (%d)", what, dnn.cudnnGetErrorString(e),
                              (int)e);
}

#define DNN_TRY(call, what)                                                                        \
    do {                                                                                           \
        cudnnStatus_t e_ = (call);                                                                 \
        if (e_ != CUDNN_STATUS_SUCCESS) return dnn_fail(e_, what);                                 \
    } while (0)

void handle_destroy(void *h)
{
    dnn.cudnnDestroy(static_cast<cudnnHandle_t>(h));
}

/* The state's handle, bound to its stream. */
lumen_status dnn_handle(cu_state *st, cudnnHandle_t *out)
{
    if (!st->dnn) {
        cudnnHandle_t h;
        DNN_TRY(dnn.cudnnCreate(&h), "create");
        cudnnStatus_t e = dnn.cudnnSetStream(h, st->stream);
        if (e != CUDNN_STATUS_SUCCESS) {
            dnn.cudnnDestroy(h);
            return dnn_fail(e, "set stream");
        }
        st->dnn = h;
        st->dnn_destroy = handle_destroy;
    }
    *out = static_cast<cudnnHandle_t>(st->dnn);
    return LUMEN_OK;
}

const char *const fwd_names[2][CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {
    {"cudnn:implicit_gemm", "cudnn:implicit_precomp_gemm", "cudnn:gemm", "cudnn:direct",
     "cudnn:fft", "cudnn:fft_tiling", "cudnn:winograd", "cudnn:winograd_nonfused"},
    {"cudnn:implicit_gemm+tf32", "cudnn:implicit_precomp_gemm+tf32", "cudnn:gemm+tf32",
     "cudnn:direct+tf32", "cudnn:fft+tf32", "cudnn:fft_tiling+tf32", "cudnn:winograd+tf32",
     "cudnn:winograd_nonfused+tf32"}};
const char *const bwd_names[2][CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {
    {"cudnn:bwd_data_0", "cudnn:bwd_data_1", "cudnn:bwd_data_fft", "cudnn:bwd_data_fft_tiling",
     "cudnn:bwd_data_winograd", "cudnn:bwd_data_winograd_nonfused"},
    {"cudnn:bwd_data_0+tf32", "cudnn:bwd_data_1+tf32", "cudnn:bwd_data_fft+tf32",
     "cudnn:bwd_data_fft_tiling+tf32", "cudnn:bwd_data_winograd+tf32",
     "cudnn:bwd_data_winograd_nonfused+tf32"}};

/* A shape's descriptors and the algorithm Find chose, or "cuDNN cannot run it". */
struct dnn_plan {
    int refs = 1;
    cu_state *st = nullptr;
    bool usable = false;
    cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;
    cudnnFilterDescriptor_t wd = nullptr;
    cudnnConvolutionDescriptor_t cd = nullptr;
    int algo = 0;
    size_t ws = 0;
    const char *name = nullptr;
};

void plan_unref(void *p)
{
    dnn_plan *d = static_cast<dnn_plan *>(p);
    if (--d->refs) return;
    if (d->xd) dnn.cudnnDestroyTensorDescriptor(d->xd);
    if (d->yd) dnn.cudnnDestroyTensorDescriptor(d->yd);
    if (d->bd) dnn.cudnnDestroyTensorDescriptor(d->bd);
    if (d->wd) dnn.cudnnDestroyFilterDescriptor(d->wd);
    if (d->cd) dnn.cudnnDestroyConvolutionDescriptor(d->cd);
    cu_state_unref(d->st);
    delete d;
}

lumen_status set_tensor(cudnnTensorDescriptor_t d, const cu_view &v)
{
    const cu_view p = dense_view(v, nullptr);
    DNN_TRY(dnn.cudnnSetTensor4dDescriptorEx(d, CUDNN_DATA_FLOAT, (int)v.n, (int)v.c, (int)v.h,
                                             (int)v.w, (int)p.sn, (int)p.sc, (int)p.sh, (int)p.sw),
            "tensor descriptor");
    return LUMEN_OK;
}

lumen_status make_descriptors(const conv_run &r, dnn_plan *d)
{
    const lumen_conv2d_params &p = r.job->p;
    DNN_TRY(dnn.cudnnCreateTensorDescriptor(&d->xd), "create descriptor");
    DNN_TRY(dnn.cudnnCreateTensorDescriptor(&d->yd), "create descriptor");
    DNN_TRY(dnn.cudnnCreateTensorDescriptor(&d->bd), "create descriptor");
    DNN_TRY(dnn.cudnnCreateFilterDescriptor(&d->wd), "create descriptor");
    DNN_TRY(dnn.cudnnCreateConvolutionDescriptor(&d->cd), "create descriptor");
    lumen_status s;
    if ((s = set_tensor(d->xd, r.x)) || (s = set_tensor(d->yd, r.y))) return s;
    DNN_TRY(dnn.cudnnSetTensor4dDescriptorEx(d->bd, CUDNN_DATA_FLOAT, 1, (int)r.y.c, 1, 1,
                                             (int)r.y.c, 1, 1, 1),
            "bias descriptor");
    DNN_TRY(dnn.cudnnSetFilter4dDescriptor(d->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)r.w.n,
                                           (int)r.w.c, (int)r.w.h, (int)r.w.w),
            "filter descriptor");
    DNN_TRY(dnn.cudnnSetConvolution2dDescriptor(d->cd, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                                                p.dilation_h, p.dilation_w, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT),
            "convolution descriptor");
    DNN_TRY(dnn.cudnnSetConvolutionGroupCount(d->cd, p.groups), "group count");
    /* FMA: FP32 on CUDA cores, no TF32; DEFAULT lets Ampere+ use TF32 (asked for only) */
    DNN_TRY(dnn.cudnnSetConvolutionMathType(d->cd, r.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
            "math type");
    return LUMEN_OK;
}

/* Upper bound of the search workspace. */
#define FIND_WS_MAX ((size_t)512 << 20)

/* The largest workspace any algorithm of this shape asks for, at most FIND_WS_MAX. */
size_t find_workspace_bytes(cudnnHandle_t h, const conv_run &r, const dnn_plan *d)
{
    size_t most = 0;
    const int n = r.kind == LUMEN_OP_CONV2D ? (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT
                                               : (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    for (int a = 0; a < n; a++) {
        size_t b = 0;
        const cudnnStatus_t e =
            r.kind == LUMEN_OP_CONV2D
                ? dnn.cudnnGetConvolutionForwardWorkspaceSize(h, d->xd, d->wd, d->cd, d->yd,
                                                              (cudnnConvolutionFwdAlgo_t)a, &b)
                : dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
                      h, d->wd, d->xd, d->cd, d->yd, (cudnnConvolutionBwdDataAlgo_t)a, &b);
        if (e == CUDNN_STATUS_SUCCESS) most = std::max(most, b);
    }
    return std::min(most, FIND_WS_MAX);
}

/* A search workspace: as large as asked, else halved until the pool (and the memory limit)
 * gives one; algorithms that need more are then left out of the search. */
void *find_workspace(cu_op &op, size_t *bytes)
{
    for (size_t b = *bytes; b >= ((size_t)1 << 20); b /= 2) {
        void *p;
        if (cu_alloc(op.ctx, op.st, b, &p, "cuDNN search workspace") == LUMEN_OK) {
            *bytes = b;
            return p;
        }
    }
    *bytes = 0;
    return nullptr;
}

/* First result that ran, with FMA math unless TF32 is allowed. */
template <typename Perf> const Perf *pick(const Perf *perf, int n, bool tf32)
{
    for (int i = 0; i < n; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && (tf32 || perf[i].mathType == CUDNN_FMA_MATH))
            return &perf[i];
    return nullptr;
}

/* cudnnFind on the job's buffers; y's stand-in is a scratch block. Sets d->usable. */
lumen_status find_algorithm(cu_op &op, cudnnHandle_t h, const conv_run &r, dnn_plan *d)
{
    /* y's stand-in, at y's offset from 256-byte alignment (algorithms may depend on it) */
    const size_t yoff = (uintptr_t)r.y.data % 256;
    void *ys;
    lumen_status s =
        cu_op_scratch(op, (size_t)elems(r.y) * sizeof(float) + yoff, &ys, "cuDNN search output");
    if (s) return s;
    ys = static_cast<char *>(ys) + yoff;
    size_t wsb = find_workspace_bytes(h, r, d);
    void *ws = find_workspace(op, &wsb);
    struct discard {
        cu_state *st;
        void *p;
        ~discard() { cu_pool_discard(st, p); } /* big and one-off: not kept in the pool */
    } guard{op.st, ws};
    int n = 0;
    if (r.kind == LUMEN_OP_CONV2D) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        DNN_TRY(dnn.cudnnFindConvolutionForwardAlgorithmEx(
                    h, d->xd, r.x.data, d->wd, r.w.data, d->cd, d->yd, ys,
                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws, wsb),
                "forward algorithm search");
        if (const auto *best = pick(perf, n, r.tf32)) {
            d->usable = true, d->algo = (int)best->algo, d->ws = best->memory;
            d->name = fwd_names[best->mathType != CUDNN_FMA_MATH][d->algo];
            DNN_TRY(dnn.cudnnSetConvolutionMathType(d->cd, best->mathType), "math type");
        }
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        DNN_TRY(dnn.cudnnFindConvolutionBackwardDataAlgorithmEx(
                    h, d->wd, r.w.data, d->xd, r.x.data, d->cd, d->yd, ys,
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws, wsb),
                "backward-data algorithm search");
        if (const auto *best = pick(perf, n, r.tf32)) {
            d->usable = true, d->algo = (int)best->algo, d->ws = best->memory;
            d->name = bwd_names[best->mathType != CUDNN_FMA_MATH][d->algo];
            DNN_TRY(dnn.cudnnSetConvolutionMathType(d->cd, best->mathType), "math type");
        }
    }
    return LUMEN_OK;
}

/* The key: everything the descriptors and Find's choice depend on. */
void put_i64(key_builder &key, int64_t v)
{
    key.bytes(&v, sizeof v);
}

key_builder plan_key(const conv_run &r)
{
    key_builder key("lumen-cuda-conv-plan", r.op.st);
    const lumen_conv2d_params &p = r.job->p;
    const cu_view *v[3] = {&r.x, &r.w, &r.y};
    put_i64(key, r.kind);
    put_i64(key, r.tf32);
    for (const cu_view *t : v) {
        put_i64(key, t->n), put_i64(key, t->c), put_i64(key, t->h), put_i64(key, t->w);
        put_i64(key,
                (int64_t)((uintptr_t)t->data % 16)); /* some algorithms need aligned pointers */
    }
    const int ints[] = {p.stride_h,   p.stride_w,   p.pad_h, p.pad_w,
                        p.dilation_h, p.dilation_w, p.groups};
    key.bytes(ints, sizeof ints);
    return key;
}

bool int_sized(const cu_view &v)
{
    return v.n <= INT_MAX && v.c <= INT_MAX && v.h <= INT_MAX && v.w <= INT_MAX &&
           elems(v) <= INT_MAX;
}

/* The cached plan of r's shape, made (and searched) on a miss; *out holds a reference. */
lumen_status get_plan(cu_op &op, cudnnHandle_t h, const conv_run &r, dnn_plan **out)
{
    const key_builder key = plan_key(r);
    if (auto *d = static_cast<dnn_plan *>(cu_host->plan_get(op.ctx, key.k.data(), key.k.size()))) {
        d->refs++;
        *out = d;
        return LUMEN_OK;
    }
    dnn_plan *d = new (std::nothrow) dnn_plan();
    if (!d) return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: conv plan: out of memory");
    d->st = op.st;
    cu_state_ref(op.st);
    held<plan_unref> guard;
    guard.p = d;
    lumen_status s = make_descriptors(r, d);
    if (!s) s = find_algorithm(op, h, r, d);
    if (s && s != LUMEN_ERR_UNSUPPORTED) return s; /* out of memory, errors: not cached */
    const char *op_name = r.kind == LUMEN_OP_CONV2D ? "conv2d" : "conv_transpose2d";
    if (s) cu_host->log(LUMEN_LOG_INFO, "cuda: %s", cu_host->last_error());
    cu_host->log(LUMEN_LOG_INFO,
                 "cuda: %s %lldx%lldx%lldx%lld * %lldx%lldx%lldx%lld: %s, %zu-byte workspace",
                 op_name, (long long)r.x.n, (long long)r.x.c, (long long)r.x.h, (long long)r.x.w,
                 (long long)r.w.n, (long long)r.w.c, (long long)r.w.h, (long long)r.w.w,
                 d->usable ? d->name : "no cuDNN algorithm, lumen's own kernel", d->ws);
    guard.p = nullptr;
    d->refs++; /* the cache's reference */
    cu_host->plan_put(op.ctx, key.k.data(), key.k.size(), d, plan_unref, sizeof *d + key.k.size());
    *out = d;
    return LUMEN_OK;
}

} // namespace

/* cuDNN runs r; LUMEN_ERR_UNSUPPORTED (nothing written) when it cannot. */
static lumen_status run_cudnn(conv_run &r, const char **name)
{
    if (!dnn_available())
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "cuda: cuDNN is not available (libcudnn.so.9)");
    if (!int_sized(r.x) || !int_sized(r.w) || !int_sized(r.y))
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "cuda: cuDNN: tensors of 2^31 or more elements");
    cu_op &op = r.op;
    cudnnHandle_t h;
    cu_view x, w;
    lumen_status s;
    if ((s = dnn_handle(op.st, &h)) || (s = packed_input(op, r.x, &x, "conv x packing")) ||
        (s = packed_input(op, r.w, &w, "conv w packing")))
        return s;
    /* y: itself when dense, else a dense block scattered into it at the end */
    cu_view y = r.y;
    if (!dense_nchw(r.y)) {
        void *p;
        if ((s = cu_op_scratch(op, (size_t)elems(r.y) * sizeof(float), &p, "conv y packing")))
            return s;
        y = dense_view(r.y, p);
    }
    conv_run pr = r;
    pr.x = x, pr.w = w, pr.y = y; /* what cuDNN sees: the plan is searched on these */
    dnn_plan *d;
    if ((s = get_plan(op, h, pr, &d))) return s;
    held<plan_unref> hold;
    hold.p = d;
    if (!d->usable)
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED, "cuda: cuDNN has no algorithm for this %s",
                                  r.kind == LUMEN_OP_CONV2D ? "conv2d" : "conv_transpose2d");
    /* everything is allocated before y is written */
    void *ws = nullptr;
    if (d->ws && (s = cu_op_scratch(op, d->ws, &ws, "cuDNN workspace"))) return s;
    const float one = 1.0f, zero = 0.0f;
    if (r.kind == LUMEN_OP_CONV2D)
        DNN_TRY(dnn.cudnnConvolutionForward(h, &one, d->xd, x.data, d->wd, w.data, d->cd,
                                            (cudnnConvolutionFwdAlgo_t)d->algo, ws, d->ws, &zero,
                                            d->yd, y.data),
                "convolution forward");
    else
        DNN_TRY(dnn.cudnnConvolutionBackwardData(h, &one, d->wd, w.data, d->xd, x.data, d->cd,
                                                 (cudnnConvolutionBwdDataAlgo_t)d->algo, ws, d->ws,
                                                 &zero, d->yd, y.data),
                "convolution backward data");
    if (r.bias)
        DNN_TRY(dnn.cudnnAddTensor(h, &one, d->bd, r.bias, &one, d->yd, y.data), "add bias");
    if (y.data != r.y.data && (s = copy_view(op.st, y, r.y))) return s;
    *name = d->name;
    return LUMEN_OK;
}

#else /* no cudnn.h at build time */

static lumen_status run_cudnn(conv_run &, const char **)
{
    return cu_host->set_error(
        LUMEN_ERR_UNSUPPORTED,
        "cuda: cuDNN is not available (the module was built without cudnn.h)");
}

#endif

lumen_status cu_conv2d(lumen_context *ctx, lumen_op_kind kind, const lumen_conv_job *job,
                       lumen_run_info *info)
{
    cu_state *st;
    lumen_status s = cu_begin(ctx, &st);
    if (s) return s;
    const conv_mode mode = mode_from_env();
    cu_op op(ctx, st);
    cu_binding wb;
    if ((s = cu_op_start(op, job->x, job->y)) || (s = cu_op_bind_input(op, job->w, &wb))) return s;
    held<bias_unref> bias;
    if (job->bias) {
        bias_entry *b;
        if ((s = get_bias(op, job->bias, job->y->c, &b))) return s;
        bias.p = b;
    }
    conv_run r{op,
               kind,
               job,
               op.src.v,
               wb.v,
               op.dst.v,
               bias.p ? static_cast<bias_entry *>(bias.p)->dev : nullptr,
               cu_host->tf32(ctx) != 0};
    const char *name = nullptr;
    if (mode != MODE_OWN) {
        s = run_cudnn(r, &name);
        if (s && (mode == MODE_CUDNN || s == LUMEN_ERR_OUT_OF_MEMORY)) return s;
        /* auto: what cuDNN cannot run (or fails at) takes the own kernel; nothing was written */
        if (s == LUMEN_ERR_INTERNAL)
            cu_host->log(LUMEN_LOG_WARN, "%s; running lumen's own conv kernel",
                         cu_host->last_error());
        if (s) name = nullptr;
    }
    if (!name) {
        if ((s = run_own(r))) return s;
        name = "cuda:direct";
    }
    if ((s = cu_op_finish(op))) return s;
    info->algo = name;
    return LUMEN_OK;
}
