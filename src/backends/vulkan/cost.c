/*
 * The Vulkan module's cost model (lumen_backend.cost): estimated seconds of a filter op on the
 * context's device, so that "auto" weighs direct, separable and FFT on the device itself.
 * A roofline per device kind: multiply-adds at a sustained rate, plus the bytes each pass
 * moves, plus a fixed cost per submission, plus the staging copies of host views. The rates
 * are orders of magnitude, not measurements of one GPU: they decide between methods whose
 * costs differ by much more than the rates' error (direct k^2 vs separable 2k vs the FFT's
 * ~log N per pixel). docs/vulkan.md, "Cost model".
 */
#include "vk_internal.h"

#include <math.h>

typedef struct vk_rates {
    double mac;    /* sustained f32 multiply-adds per second in these shaders */
    double fft;    /* the FFT shaders' cost per flop relative to a multiply-add of direct */
    double bytes;  /* device memory bytes per second */
    double host;   /* staging bytes per second (memcpy into mapped memory) */
    double submit; /* seconds per submission (record, submit, wait) */
} vk_rates;

static vk_rates rates_of(lumen_device_kind kind)
{
    switch (kind) {
    case LUMEN_DEVICE_DISCRETE_GPU: return (vk_rates){2e12, 1, 3e11, 1e10, 5e-5};
    case LUMEN_DEVICE_INTEGRATED_GPU: return (vk_rates){3e11, 1, 5e10, 1e10, 5e-5};
    /* lavapipe: the CPU's cores in LLVM code, where the FFT's shared-memory passes cost 2.5x
     * (measured: direct and FFT cross near 17x17 on 512 x 512 f32) */
    default: return (vk_rates){2e9, 2.5, 1e10, 5e9, 2e-4};
    }
}

static double staging(const lumen_image *v, double rate)
{
    if (v->device) return 0;
    return (double)v->n * (double)v->c * (double)v->h * (double)v->w *
           (double)lumen_dtype_bytes(v->dtype) * 2 / rate;
}

/* The FFT's work per output pixel: forward and inverse 2-D transforms of tiles of N x N for
 * T x T outputs (N about twice the kernel, at least 64), 5 N^2 log2(N^2) flops each. */
static double fft_macs_per_pixel(int kw, int kh)
{
    const int k = kw > kh ? kw : kh;
    double n = 64;
    while (n < 2.0 * k)
        n *= 2;
    const double t = n - k + 1;
    return 2 * 2.5 * n * n * log2(n * n) / (t * t) + 4; /* complex multiply, gather, scatter */
}

static double vk_filter_cost(lumen_context *ctx, const lumen_op *op)
{
    const lumen_filter_job *j = op->job;
    vk_state *st = vk_host->state(ctx);
    if (!st) return -1;
    const vk_rates r = rates_of(vk_device_at(st->dev)->kind);
    const lumen_image *s = j->src;
    const double px = (double)s->n * (double)s->c * (double)s->h * (double)s->w;
    double macs, bytes, passes = 1;
    switch (op->kind) {
    case LUMEN_OP_FILTER_DIRECT: macs = px * j->kw * j->kh, bytes = px * 8; break;
    case LUMEN_OP_FILTER_SEPARABLE: macs = px * (j->kw + j->kh), bytes = px * 16, passes = 2; break;
    case LUMEN_OP_FILTER_FFT:
        macs = px * fft_macs_per_pixel(j->kw, j->kh) * r.fft, bytes = px * 64, passes = 8;
        break;
    default: return -1;
    }
    return macs / r.mac + bytes / r.bytes + r.submit + passes * 1e-5 + staging(s, r.host) +
           staging(j->dst, r.host);
}

double vk_cost(lumen_context *ctx, const lumen_op *op)
{
    switch (op->kind) {
    case LUMEN_OP_FILTER_DIRECT:
    case LUMEN_OP_FILTER_SEPARABLE:
    case LUMEN_OP_FILTER_FFT: return vk_filter_cost(ctx, op);
    default: return -1;
    }
}
