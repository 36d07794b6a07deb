/*
 * FFT filtering with cuFFT: one whole-plane transform per plane, batched over planes.
 *
 * Each plane is padded by the kernel's extents with the border rule into P (nh x nw, zero
 * beyond the padded image: P[r][c] = src(c - ax, r - ay) for r < h + kh - 1, c < w + kw - 1),
 * transformed (R2C), multiplied by the kernel's spectrum conj(FFT(k)) / (nh nw) and
 * transformed back (C2R): P'[y][x] = sum_ij k[i][j] P[y + i][x + j] = dst(x, y) for y < h,
 * x < w, with no wrap-around because nh >= h + kh - 1 and nw >= w + kw - 1. nh and nw have
 * only the prime factors 2, 3, 5, 7 (nw even).
 *
 * As on the CPU (src/backends/cpu/fft_filter.c), results follow IEEE and round as the direct
 * sum does: a plane whose padded image holds NaN or Inf (which the transform would smear over
 * the whole plane), or values so large that the transform's sums could overflow, is filtered
 * by the direct tiled kernel instead; and for integer dsts with dyadic kernels (taps of at most
 * 12 significant bits, whose exact sums can sit on a .5 tie) outputs within 1e-6 sum|k| max|x|
 * of a tie are summed directly (in double).
 *
 * Plans (R2C and C2R, without auto-allocated work areas: the work area comes from the pool)
 * and kernel spectra (with a device copy of the dense taps) live in the context's plan cache,
 * keyed by the state, sizes and the kernel's bytes. Entries are reference counted, so one
 * evicted while an op uses it stays alive until the op is done.
 */
#include "cuda_views.h"

#include <cufft.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

/* Planes transformed together: up to this many bytes of P and its spectrum. */
#define FFT_BATCH_BYTES ((size_t)512 << 20)

static const char *cufft_name(cufftResult r)
{
    switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "exec failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

static lumen_status cufft_fail(cufftResult r, const char *what)
{
    cudaGetLastError();
    return cu_host->set_error(r == CUFFT_ALLOC_FAILED ? LUMEN_ERR_OUT_OF_MEMORY : LUMEN_ERR_INTERNAL,
                              "cuda: cuFFT %s: %s (%d)", what, cufft_name(r), (int)r);
}

#define FFT_TRY(call, what)                                                                        \
    do {                                                                                           \
        cufftResult r_ = (call);                                                                   \
        if (r_ != CUFFT_SUCCESS) return cufft_fail(r_, what);                                      \
    } while (0)

/* ---- sizes ------------------------------------------------------------------------------ */

static bool smooth7(int64_t m)
{
    for (int p : {2, 3, 5, 7})
        while (m % p == 0) m /= p;
    return m == 1;
}

int cu_fft_length(int64_t n, bool even)
{
    for (int64_t m = std::max<int64_t>(n, 1); m <= 0x7fffffff; m++)
        if ((!even || m % 2 == 0) && smooth7(m)) return (int)m;
    return -1;
}

/* ---- cached plans and spectra -------------------------------------------------------- */

namespace {

struct fft_plans {
    int refs;
    cu_state *st;
    cufftHandle fwd, inv;
    bool has_fwd, has_inv;
    size_t work; /* work area bytes, the larger of the two */
};

void plans_unref(void *p)
{
    fft_plans *f = static_cast<fft_plans *>(p);
    if (--f->refs) return;
    cudaSetDevice(f->st->device);
    cudaStreamSynchronize(f->st->stream); /* no queued transform uses them any more */
    if (f->has_fwd) cufftDestroy(f->fwd);
    if (f->has_inv) cufftDestroy(f->inv);
    cudaGetLastError();
    cu_state_unref(f->st);
    delete f;
}

struct fft_spectrum {
    int refs;
    cu_state *st;
    cufftComplex *spec; /* conj(FFT(k)) / (nh nw), nh x (nw/2 + 1) */
    float *taps;        /* the dense kernel, kh x kw, for the direct reruns */
};

void spectrum_unref(void *p)
{
    fft_spectrum *f = static_cast<fft_spectrum *>(p);
    if (--f->refs) return;
    cudaSetDevice(f->st->device);
    cu_pool_release(f->st, f->spec);
    cu_pool_release(f->st, f->taps);
    cu_state_unref(f->st);
    delete f;
}

/* Holds one reference for the duration of an op. */
template <void (*Unref)(void *)> struct held {
    void *p = nullptr;
    ~held()
    {
        if (p) Unref(p);
    }
};

/* A plan-cache key: a tag, the state and integers, then optional bytes. */
std::vector<unsigned char> make_key(const char *tag, const cu_state *st, std::initializer_list<int64_t> ints,
                                    const void *bytes = nullptr, size_t len = 0)
{
    std::vector<unsigned char> k(tag, tag + std::strlen(tag) + 1);
    const uintptr_t sp = (uintptr_t)st;
    k.insert(k.end(), (const unsigned char *)&sp, (const unsigned char *)&sp + sizeof sp);
    for (int64_t v : ints) k.insert(k.end(), (const unsigned char *)&v, (const unsigned char *)&v + sizeof v);
    if (len) k.insert(k.end(), (const unsigned char *)bytes, (const unsigned char *)bytes + len);
    return k;
}

/* The R2C/C2R plans for batch planes of nh x nw, cached; *out holds a reference. */
lumen_status get_plans(lumen_context *ctx, cu_state *st, int nh, int nw, int batch, fft_plans **out)
{
    std::vector<unsigned char> key = make_key("lumen-cuda-fft-plans", st, {nh, nw, batch});
    if (auto *f = static_cast<fft_plans *>(cu_host->plan_get(ctx, key.data(), key.size()))) {
        f->refs++;
        *out = f;
        return LUMEN_OK;
    }
    fft_plans *f = new (std::nothrow) fft_plans();
    if (!f) return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: fft plans: out of memory");
    f->refs = 1;
    f->st = st;
    cu_state_ref(st);
    held<plans_unref> guard;
    guard.p = f;
    long long n[2] = {nh, nw};
    size_t wf = 0, wi = 0;
    FFT_TRY(cufftCreate(&f->fwd), "create");
    f->has_fwd = true;
    FFT_TRY(cufftSetAutoAllocation(f->fwd, 0), "set auto allocation");
    FFT_TRY(cufftMakePlanMany64(f->fwd, 2, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, batch, &wf),
            "R2C plan");
    FFT_TRY(cufftCreate(&f->inv), "create");
    f->has_inv = true;
    FFT_TRY(cufftSetAutoAllocation(f->inv, 0), "set auto allocation");
    FFT_TRY(cufftMakePlanMany64(f->inv, 2, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2R, batch, &wi),
            "C2R plan");
    f->work = std::max(wf, wi);
    guard.p = nullptr;
    f->refs++; /* the cache's reference; put drops it on failure */
    cu_host->plan_put(ctx, key.data(), key.size(), f, plans_unref, sizeof *f + 4096);
    *out = f;
    return LUMEN_OK;
}

/* Runs one plan's transform on the op's stream; work: at least f->work bytes of device memory. */
lumen_status exec(cu_op &op, fft_plans *f, bool forward, void *in, void *out, void *work)
{
    cufftHandle h = forward ? f->fwd : f->inv;
    FFT_TRY(cufftSetStream(h, op.st->stream), "set stream");
    FFT_TRY(cufftSetWorkArea(h, work), "set work area");
    if (forward)
        FFT_TRY(cufftExecR2C(h, static_cast<cufftReal *>(in), static_cast<cufftComplex *>(out)),
                "R2C");
    else
        FFT_TRY(cufftExecC2R(h, static_cast<cufftComplex *>(in), static_cast<cufftReal *>(out)),
                "C2R");
    return LUMEN_OK;
}

/* A work area of the op for plan f (NULL when it needs none). */
lumen_status work_area(cu_op &op, const fft_plans *f, void **work)
{
    *work = nullptr;
    return f->work ? cu_op_scratch(op, f->work, work, "cuFFT work area") : LUMEN_OK;
}

/* spec[i] = conj(spec[i]) * norm */
__global__ void conj_scale_kernel(cufftComplex *spec, int64_t n, float norm)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        cufftComplex v = spec[i];
        spec[i] = make_cuComplex(v.x * norm, -v.y * norm);
    }
}

unsigned blocks_for(int64_t n, int threads)
{
    return (unsigned)std::min<int64_t>((n + threads - 1) / threads, 65535 * 8);
}

/* The kernel's spectrum for nh x nw (dense taps k, kh x kw), cached; *out holds a reference. */
lumen_status get_spectrum(cu_op &op, const std::vector<float> &k, int kw, int kh, int nh, int nw,
                          fft_spectrum **out)
{
    lumen_context *ctx = op.ctx;
    cu_state *st = op.st;
    std::vector<unsigned char> key =
        make_key("lumen-cuda-fft-spectrum", st, {nh, nw, kh, kw}, k.data(), k.size() * sizeof(float));
    if (auto *f = static_cast<fft_spectrum *>(cu_host->plan_get(ctx, key.data(), key.size()))) {
        f->refs++;
        *out = f;
        return LUMEN_OK;
    }
    const int64_t nc = (int64_t)nh * (nw / 2 + 1);
    fft_spectrum *f = new (std::nothrow) fft_spectrum();
    if (!f) return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: fft spectrum: out of memory");
    f->refs = 1;
    f->st = st;
    cu_state_ref(st);
    held<spectrum_unref> guard;
    guard.p = f;
    lumen_status s;
    void *p;
    if ((s = cu_alloc(ctx, st, (size_t)nc * sizeof(cufftComplex), &p, "fft kernel spectrum")))
        return s;
    f->spec = static_cast<cufftComplex *>(p);
    if ((s = cu_alloc(ctx, st, k.size() * sizeof(float), &p, "fft kernel taps"))) return s;
    f->taps = static_cast<float *>(p);
    if ((s = cu_upload_staged(st, f->taps, k.data(), k.size() * sizeof(float)))) return s;

    /* the kernel zero-padded to nh x nw, transformed by a one-plane plan */
    void *kpad;
    if ((s = cu_op_scratch(op, (size_t)nh * nw * sizeof(float), &kpad, "fft kernel padding")))
        return s;
    CU_TRY(cudaMemsetAsync(kpad, 0, (size_t)nh * nw * sizeof(float), st->stream), "cudaMemsetAsync");
    CU_TRY(cudaMemcpy2DAsync(kpad, (size_t)nw * sizeof(float), f->taps, (size_t)kw * sizeof(float),
                             (size_t)kw * sizeof(float), (size_t)kh, cudaMemcpyDeviceToDevice,
                             st->stream),
           "cudaMemcpy2DAsync");
    fft_plans *one;
    if ((s = get_plans(ctx, st, nh, nw, 1, &one))) return s;
    held<plans_unref> one_guard;
    one_guard.p = one;
    void *work;
    if ((s = work_area(op, one, &work)) || (s = exec(op, one, true, kpad, f->spec, work))) return s;
    const float norm = 1.0f / ((float)nh * (float)nw);
    conj_scale_kernel<<<blocks_for(nc, 256), 256, 0, st->stream>>>(f->spec, nc, norm);
    CU_TRY_LAUNCH("fft spectrum kernel");
    guard.p = nullptr;
    f->refs++; /* the cache's reference */
    cu_host->plan_put(ctx, key.data(), key.size(), f, spectrum_unref,
                      (size_t)nc * sizeof(cufftComplex) + k.size() * sizeof(float));
    *out = f;
    return LUMEN_OK;
}

/* ---- kernels -------------------------------------------------------------------------- */

struct fft_params {
    cu_view src, dst;
    int kw, kh, ax, ay, border;
    float bval;
    int nh, nw;
    int64_t ph, pw;    /* padded image: h + kh - 1, w + kw - 1 */
    int64_t planes;    /* of the image */
    int64_t first;     /* plane of batch slot 0 */
    int batch;         /* slots */
    float sum_abs;     /* sum |k| */
    bool exact_ties;   /* integer dst and dyadic taps */
    const float *taps; /* dense, kh x kw */
};

/* P (batch slots of nh x nw) from the planes first .. first + batch - 1, zero elsewhere;
 * amax[plane] = max over the padded image of |value| as float bits (NaN, Inf: >= 0x7f800000).
 * Blocks are 32 x 8 threads; each walks rows with a running maximum, reduced over the block at
 * the end of each slot, so one atomic per block and slot reaches amax. */
__global__ void pad_kernel(const fft_params p, float *P, unsigned *amax)
{
    __shared__ unsigned warp_max[8];
    const int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    for (int64_t slot = blockIdx.z; slot < p.batch; slot += gridDim.z) {
        const int64_t plane = p.first + slot;
        const bool real = plane < p.planes;
        const char *sp = real ? cu_plane_ptr(p.src, plane) : nullptr;
        float *out = P + slot * (int64_t)p.nh * p.nw;
        unsigned m = 0;
        for (int64_t r = (int64_t)blockIdx.y * 8 + threadIdx.y; r < p.nh; r += (int64_t)gridDim.y * 8) {
            float v = 0.0f;
            if (real && r < p.ph && c < p.pw) v = cu_fetch(p.src, sp, r - p.ay, c - p.ax, p.border, p.bval);
            if (c < p.nw) out[r * p.nw + c] = v;
            m = max(m, __float_as_uint(fabsf(v)));
        }
        m = __reduce_max_sync(0xffffffffu, m); /* a warp is one row of the block: all lanes here */
        if (threadIdx.x == 0) warp_max[threadIdx.y] = m;
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            for (int i = 1; i < 8; i++) m = max(m, warp_max[i]);
            if (real && m) atomicMax(&amax[plane], m);
        }
        __syncthreads(); /* warp_max is reused by the next slot */
    }
}

/* C[slot][i] *= S[i] for i < n (the spectrum of one plane) */
__global__ void multiply_kernel(cufftComplex *C, const cufftComplex *S, int64_t n, int64_t slots)
{
    for (int64_t slot = blockIdx.y; slot < slots; slot += gridDim.y) {
        cufftComplex *c = C + slot * n;
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
             i += (int64_t)gridDim.x * blockDim.x) {
            const cufftComplex a = c[i], b = S[i];
            c[i] = make_cuComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
        }
    }
}

/* True when the plane must be summed directly (see the header comment). */
__device__ __forceinline__ bool plane_direct(const fft_params &p, unsigned amax_bits)
{
    if (amax_bits >= 0x7f800000u) return true;
    return (double)__uint_as_float(amax_bits) * p.nh * p.nw * fmax(1.0, (double)p.sum_abs) >
           FLT_MAX / 64.0;
}

/* dst(x, y) summed directly in double. */
__device__ double direct_at(const fft_params &p, const char *sp, int64_t y, int64_t x)
{
    double acc = 0.0;
    for (int i = 0; i < p.kh; i++)
        for (int j = 0; j < p.kw; j++)
            acc += (double)p.taps[i * p.kw + j] *
                   (double)cu_fetch(p.src, sp, y + i - p.ay, x + j - p.ax, p.border, p.bval);
    return acc;
}

/* dst of the batch's planes from P (skipping planes that are summed directly). */
__global__ void crop_kernel(const fft_params p, const float *P, const unsigned *amax)
{
    const int64_t x = (int64_t)blockIdx.x * 32 + threadIdx.x;
    for (int64_t slot = blockIdx.z; slot < p.batch; slot += gridDim.z) {
        const int64_t plane = p.first + slot;
        if (plane >= p.planes) break;
        const unsigned am = amax[plane];
        if (plane_direct(p, am)) continue;
        const float eps = 1e-6f * p.sum_abs * __uint_as_float(am);
        const char *sp = cu_plane_ptr(p.src, plane);
        char *dp = cu_plane_ptr(p.dst, plane);
        const float *in = P + slot * (int64_t)p.nh * p.nw;
        if (x >= p.dst.w) continue;
        for (int64_t y = (int64_t)blockIdx.y * 8 + threadIdx.y; y < p.dst.h; y += (int64_t)gridDim.y * 8) {
            float v = in[y * p.nw + x];
            if (p.exact_ties && fabsf(v - floorf(v) - 0.5f) <= eps) v = (float)direct_at(p, sp, y, x);
            cu_store(dp + (y * p.dst.sh + x * p.dst.sw) * p.dst.es, p.dst.dtype, v);
        }
    }
}

/* flags[plane] = plane_direct(amax[plane]) */
__global__ void flags_kernel(const fft_params p, const unsigned *amax, int *flags)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.planes;
         i += (int64_t)gridDim.x * blockDim.x)
        flags[i] = plane_direct(p, amax[i]) ? 1 : 0;
}

/* True when every tap has at most 12 significant bits (as fft_filter.c's kernel_is_dyadic). */
bool is_dyadic(const std::vector<float> &k)
{
    for (float t : k) {
        int e;
        const float m = std::frexp(t, &e) * 4096.0f;
        if (m != std::trunc(m)) return false;
    }
    return true;
}

} // namespace

lumen_status cu_fft_filter(lumen_context *ctx, const lumen_filter_job *job)
{
    const lumen_image *src = job->src;
    const int kw = job->kw, kh = job->kh;
    /* the dense taps: the 2-D kernel, or ky (x) kx * scale as the CPU's kernel_tap */
    std::vector<float> k;
    try {
        k.resize((size_t)kw * kh);
    } catch (...) {
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: fft kernel: out of memory");
    }
    if (job->taps == LUMEN_TAPS_2D && job->kernel)
        std::memcpy(k.data(), job->kernel, k.size() * sizeof(float));
    else if (job->kx && job->ky)
        for (int i = 0; i < kh; i++)
            for (int j = 0; j < kw; j++) k[(size_t)i * kw + j] = job->ky[i] * job->kx[j] * job->scale;
    else return cu_host->set_error(LUMEN_ERR_INTERNAL, "cuda: fft filter without a kernel");

    const int64_t ph = src->h + kh - 1, pw = src->w + kw - 1, planes = src->n * src->c;
    const int nh = cu_fft_length(ph, false), nw = cu_fft_length(pw, true);
    if (nh < 0 || nw < 0 || (int64_t)nh * nw > ((int64_t)1 << 31))
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "fft: a %lldx%lld padded image is too large for one cuFFT "
                                  "transform on CUDA",
                                  (long long)pw, (long long)ph);
    const int64_t nc = (int64_t)nh * (nw / 2 + 1);
    const size_t plane_bytes = (size_t)nh * nw * sizeof(float) + (size_t)nc * sizeof(cufftComplex);
    const int batch = (int)std::max<int64_t>(1, std::min<int64_t>(planes, FFT_BATCH_BYTES / plane_bytes));

    cu_state *st;
    lumen_status s = cu_begin(ctx, &st);
    if (s) return s;
    cu_op op(ctx, st);
    if ((s = cu_op_start(op, job->src, job->dst))) return s;
    fft_plans *plans = nullptr;
    fft_spectrum *spec = nullptr;
    if ((s = get_plans(ctx, st, nh, nw, batch, &plans))) return s;
    held<plans_unref> plans_guard;
    plans_guard.p = plans;
    if ((s = get_spectrum(op, k, kw, kh, nh, nw, &spec))) return s;
    held<spectrum_unref> spec_guard;
    spec_guard.p = spec;

    /* every allocation before the first write to dst: running out of memory leaves it as it was */
    void *P, *C, *amax, *flags, *work;
    if ((s = work_area(op, plans, &work)) ||
        (s = cu_op_scratch(op, (size_t)batch * nh * nw * sizeof(float), &P, "fft image")) ||
        (s = cu_op_scratch(op, (size_t)batch * nc * sizeof(cufftComplex), &C, "fft spectrum")) ||
        (s = cu_op_scratch(op, (size_t)planes * sizeof(unsigned), &amax, "fft plane maxima")) ||
        (s = cu_op_scratch(op, (size_t)planes * sizeof(int), &flags, "fft plane flags")))
        return s;
    CU_TRY(cudaMemsetAsync(amax, 0, (size_t)planes * sizeof(unsigned), st->stream), "cudaMemsetAsync");

    fft_params p;
    p.src = op.src.v, p.dst = op.dst.v;
    p.kw = kw, p.kh = kh, p.ax = job->ax, p.ay = job->ay, p.border = (int)job->border;
    p.bval = job->border_value;
    p.nh = nh, p.nw = nw, p.ph = ph, p.pw = pw, p.planes = planes, p.batch = batch;
    double sum_abs = 0.0;
    for (float t : k) sum_abs += std::fabs((double)t);
    p.sum_abs = (float)sum_abs;
    p.exact_ties = !lumen_dtype_is_float(job->dst->dtype) && is_dyadic(k);
    p.taps = spec->taps;

    const dim3 block(32, 8);
    const unsigned slots = (unsigned)std::min<int64_t>(batch, CU_GRID_YZ_MAX);
    /* at most 64 blocks down a plane: each then reduces many rows before its one atomic */
    const dim3 pad_grid((unsigned)((nw + 31) / 32), (unsigned)std::min<int64_t>((nh + 7) / 8, 64), slots);
    const dim3 crop_grid((unsigned)((src->w + 31) / 32),
                         (unsigned)std::min<int64_t>((src->h + 7) / 8, CU_GRID_YZ_MAX), slots);
    for (int64_t first = 0; first < planes; first += batch) {
        p.first = first;
        pad_kernel<<<pad_grid, block, 0, st->stream>>>(p, static_cast<float *>(P), static_cast<unsigned *>(amax));
        CU_TRY_LAUNCH("fft pad kernel");
        if ((s = exec(op, plans, true, P, C, work))) return s;
        multiply_kernel<<<dim3(blocks_for(nc, 256), slots), 256, 0, st->stream>>>(
            static_cast<cufftComplex *>(C), spec->spec, nc, batch);
        CU_TRY_LAUNCH("fft multiply kernel");
        if ((s = exec(op, plans, false, C, P, work))) return s;
        crop_kernel<<<crop_grid, block, 0, st->stream>>>(p, static_cast<const float *>(P),
                                                         static_cast<const unsigned *>(amax));
        CU_TRY_LAUNCH("fft crop kernel");
    }
    /* planes holding NaN/Inf (or huge values): the direct tiled kernel, those planes only */
    flags_kernel<<<blocks_for(planes, 256), 256, 0, st->stream>>>(p, static_cast<const unsigned *>(amax),
                                                                  static_cast<int *>(flags));
    CU_TRY_LAUNCH("fft flags kernel");
    cu_tile_job direct = {op.src.v, op.dst.v, spec->taps, kw, kh, job->ax, job->ay, (int)job->border,
                          job->border_value, 1.0f, static_cast<const int *>(flags)};
    if ((s = cu_tile_filter(st, direct, CU_TILE_2D))) return s;
    cu_host->log(LUMEN_LOG_DEBUG, "cuda: fft %dx%d for a %dx%d kernel, %lld plane(s) in batches of %d",
                 nw, nh, kw, kh, (long long)planes, batch);
    return cu_op_finish(op);
}
