/*
 * Measured rates for the CUDA cost model (issue 5 item 4): the first cost query on a device
 * times the direct, separable and FFT filters on a probe image in device memory, and a host ->
 * device copy, then keeps the rates for the process (a few tens of ms on a GPU). The crossovers
 * between methods then follow this GPU, not round numbers. If the probe cannot run (memory
 * cap, an error), the module's uncalibrated constants stay in use.
 */
#include "cuda_state.h"

#include <chrono>
#include <mutex>
#include <vector>

namespace {

constexpr int PROBE_W = 1024, PROBE_H = 1024;
constexpr int DIRECT_K = 9, SEP_K = 31, FFT_K = 63;

std::mutex rates_mutex;
std::vector<cu_rates> rates;      /* per backend device */
std::vector<bool> rates_tried;

double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* A device-resident f32 view of the probe (any non-zero device index means device memory). */
lumen_image probe_view(void *p)
{
    lumen_image v = {p, LUMEN_F32, 1, 1, PROBE_H, PROBE_W,
                     (int64_t)PROBE_H * PROBE_W, (int64_t)PROBE_H * PROBE_W, PROBE_W, 1, 1};
    return v;
}

/* Best of three timed runs after one warm-up (plans, spectra, pool blocks); < 0 on failure. */
double best_time(lumen_context *ctx, lumen_status (*fn)(lumen_context *, const lumen_filter_job *),
                 const lumen_filter_job *job)
{
    double best = -1.0;
    for (int run = 0; run < 4; run++) {
        double t0 = now_s();
        if (fn(ctx, job) != LUMEN_OK || cu_synchronize(ctx) != LUMEN_OK) return -1.0;
        double t = now_s() - t0;
        if (run > 0 && (best < 0 || t < best)) best = t;
    }
    return best;
}

lumen_filter_job probe_job(const lumen_image *src, const lumen_image *dst, int k)
{
    lumen_filter_job j = {};
    j.src = src;
    j.dst = dst;
    j.border = LUMEN_BORDER_REFLECT;
    j.kw = j.kh = k;
    j.ax = j.ay = k / 2;
    j.scale = 1.0f;
    return j;
}

/* Times the three methods and a copy; false when any of them cannot run. */
bool measure(lumen_context *ctx, cu_rates *r)
{
    const size_t bytes = (size_t)PROBE_W * PROBE_H * sizeof(float);
    void *a = nullptr, *b = nullptr;
    if (cu_mem_alloc(ctx, bytes, &a) || cu_mem_alloc(ctx, bytes, &b)) {
        cu_mem_release(ctx, a);
        return false;
    }
    std::vector<float> host(bytes / sizeof(float), 0.5f), k2(FFT_K * FFT_K, 1.0f / 81),
        k1(SEP_K, 1.0f / SEP_K);
    lumen_image src = probe_view(a), dst = probe_view(b);
    bool ok = cu_mem_upload(ctx, a, host.data(), bytes) == LUMEN_OK;
    const double px = (double)PROBE_W * PROBE_H;

    lumen_filter_job direct = probe_job(&src, &dst, DIRECT_K);
    direct.kernel = k2.data();
    double t = ok ? best_time(ctx, cu_filter2d, &direct) : -1.0;
    r->taps_s = t > 0 ? px * DIRECT_K * DIRECT_K / t : 0;

    lumen_filter_job sep = probe_job(&src, &dst, SEP_K);
    sep.taps = LUMEN_TAPS_SEPARABLE;
    sep.kx = sep.ky = k1.data();
    t = ok ? best_time(ctx, cu_sep_filter, &sep) : -1.0;
    r->sep_taps_s = t > 0 ? px * 2 * SEP_K / t : 0;

    lumen_filter_job fft = probe_job(&src, &dst, FFT_K);
    fft.kernel = k2.data();
    t = ok ? best_time(ctx, cu_fft_filter, &fft) : -1.0;
    const double padded = (double)cu_fft_length(PROBE_H + FFT_K - 1, false) *
                          cu_fft_length(PROBE_W + FFT_K - 1, true);
    r->fft_elems_s = t > 0 ? padded / t : 0;

    double t0 = now_s();
    ok = ok && cu_mem_upload(ctx, a, host.data(), bytes) == LUMEN_OK &&
         cu_synchronize(ctx) == LUMEN_OK;
    t = now_s() - t0;
    r->host_bytes_s = ok && t > 0 ? bytes / t : 0;

    cu_mem_release(ctx, a);
    cu_mem_release(ctx, b);
    return r->taps_s > 0 && r->sep_taps_s > 0 && r->fft_elems_s > 0 && r->host_bytes_s > 0;
}

} // namespace

bool cu_calibrated_rates(lumen_context *ctx, cu_rates *out)
{
    const int dev = cu_host->device(ctx);
    std::lock_guard<std::mutex> lock(rates_mutex);
    if ((size_t)dev >= rates.size()) {
        rates.resize((size_t)dev + 1);
        rates_tried.resize((size_t)dev + 1, false);
    }
    if (!rates_tried[(size_t)dev]) {
        rates_tried[(size_t)dev] = true; /* once: a failed probe is not retried per call */
        cu_rates r = {};
        r.measured = measure(ctx, &r);
        rates[(size_t)dev] = r;
        if (r.measured)
            cu_host->log(LUMEN_LOG_INFO,
                         "cuda:%d calibrated: direct %.3g taps/s, separable %.3g taps/s, fft "
                         "%.3g elements/s, host copy %.3g B/s",
                         dev, r.taps_s, r.sep_taps_s, r.fft_elems_s, r.host_bytes_s);
        else
            cu_host->log(LUMEN_LOG_INFO, "cuda:%d: calibration probe failed; cost model "
                                         "uses its constants", dev);
    }
    *out = rates[(size_t)dev];
    return out->measured;
}
