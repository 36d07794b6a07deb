/*
 * The scalar reference of NCHW conv2d and conv_transpose2d: the oracle every fast path and
 * device is tested against. Plain loops, double accumulation, zero padding by skipping taps
 * that fall outside the input; nothing clever. Threads split (n, k) output planes, so no two
 * threads write the same element and the transposed op needs no atomics (gather form).
 */
#include "conv.h"

static inline float load(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x)
{
    return ((const float *)im->data)[b * im->stride_n + c * im->stride_c + y * im->stride_h +
                                     x * im->stride_w];
}

static inline void store(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x,
                         double v)
{
    ((float *)im->data)[b * im->stride_n + c * im->stride_c + y * im->stride_h +
                        x * im->stride_w] = (float)v;
}

/* y[b, k, oy, ox] = bias[k] + sum over the group's channels c and taps (r, s) of
 * x[b, c, oy*sh - ph + r*dh, ox*sw - pw + s*dw] * w[k, c - c0, r, s]. */
static double conv_at(const lumen_conv_job *job, int64_t b, int64_t k, int64_t oy, int64_t ox)
{
    const lumen_image *x = job->x, *w = job->w;
    const lumen_conv2d_params *p = &job->p;
    const int64_t cg = w->c, kg = w->n / p->groups, c0 = (k / kg) * cg;
    double acc = job->bias ? job->bias[k] : 0.0;
    for (int64_t c = 0; c < cg; c++)
        for (int64_t r = 0; r < w->h; r++) {
            const int64_t iy = oy * p->stride_h - p->pad_h + r * p->dilation_h;
            if (iy < 0 || iy >= x->h) continue;
            for (int64_t s = 0; s < w->w; s++) {
                const int64_t ix = ox * p->stride_w - p->pad_w + s * p->dilation_w;
                if (ix < 0 || ix >= x->w) continue;
                acc += (double)load(x, b, c0 + c, iy, ix) * load(w, k, c, r, s);
            }
        }
    return acc;
}

/*
 * The adjoint: x[b, c, iy, ix] contributed w[c, k - k0, r, s] to y[b, k, oy, ox] wherever
 * oy = iy*sh - ph + r*dh (and likewise for x). Gathering per output: iy = (oy + ph - r*dh)/sh
 * when that divides exactly and lands inside x.
 */
static bool source_index(int64_t o, int64_t pad, int64_t tap, int64_t dil, int64_t stride,
                         int64_t len, int64_t *i)
{
    const int64_t t = o + pad - tap * dil;
    if (t < 0 || t % stride) return false;
    *i = t / stride;
    return *i < len;
}

static double conv_transpose_at(const lumen_conv_job *job, int64_t b, int64_t k, int64_t oy,
                                int64_t ox)
{
    const lumen_image *x = job->x, *w = job->w;
    const lumen_conv2d_params *p = &job->p;
    const int64_t kg = w->c, cg = x->c / p->groups, c0 = (k / kg) * cg;
    double acc = job->bias ? job->bias[k] : 0.0;
    for (int64_t c = c0; c < c0 + cg; c++)
        for (int64_t r = 0; r < w->h; r++) {
            int64_t iy, ix;
            if (!source_index(oy, p->pad_h, r, p->dilation_h, p->stride_h, x->h, &iy)) continue;
            for (int64_t s = 0; s < w->w; s++)
                if (source_index(ox, p->pad_w, s, p->dilation_w, p->stride_w, x->w, &ix))
                    acc += (double)load(x, b, c, iy, ix) * load(w, c, k - (k / kg) * kg, r, s);
        }
    return acc;
}

typedef double (*conv_at_fn)(const lumen_conv_job *, int64_t, int64_t, int64_t, int64_t);

/* Output planes, polling for interruption before each row (docs/faults.md). */
static lumen_status run_planes(const lumen_context *ctx, const lumen_conv_job *job, conv_at_fn at)
{
    const lumen_image *y = job->y;
    const int64_t planes = y->n * y->c;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx);
#pragma omp parallel for num_threads(ctx->threads) schedule(dynamic, 1)
    for (int64_t pl = 0; pl < planes; pl++) {
        const int64_t b = pl / y->c, k = pl % y->c;
        for (int64_t oy = 0; oy < y->h && !lumen_cpu_should_stop(&stop); oy++)
            for (int64_t ox = 0; ox < y->w; ox++) store(y, b, k, oy, ox, at(job, b, k, oy, ox));
    }
    return lumen_cpu_stop_status(&stop, LUMEN_OK);
}

lumen_status lumen_cpu_conv2d_reference(lumen_context *ctx, const lumen_conv_job *job)
{
    return run_planes(ctx, job, conv_at);
}

lumen_status lumen_cpu_conv_transpose2d_reference(lumen_context *ctx, const lumen_conv_job *job)
{
    return run_planes(ctx, job, conv_transpose_at);
}
