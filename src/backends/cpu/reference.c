/*
 * The scalar reference: the definition of every filter, kept forever as the
 * oracle for fast paths and devices. Plain loops, double accumulation, the
 * border rule applied per tap; nothing clever.
 */
#include "cpu.h"
#include "semantics.h"

static double fetch(const lumen_filter_job *job, int64_t b, int64_t ch, int64_t y, int64_t x)
{
    const lumen_image *s = job->src;
    int64_t yy = lumen_border_index(y, s->h, job->border);
    int64_t xx = lumen_border_index(x, s->w, job->border);
    if (yy < 0 || xx < 0) return job->border_value;
    return lumen_load_px(lumen_px_addr(s, b, ch, yy, xx), s->dtype);
}

static double direct_at(const lumen_filter_job *job, int64_t b, int64_t ch, int64_t y, int64_t x)
{
    double acc = 0.0;
    for (int i = 0; i < job->kh; i++)
        for (int j = 0; j < job->kw; j++)
            acc += (double)job->kernel[i * job->kw + j] *
                   fetch(job, b, ch, y + i - job->ay, x + j - job->ax);
    return acc;
}

static double separable_at(const lumen_filter_job *job, int64_t b, int64_t ch, int64_t y, int64_t x)
{
    double acc = 0.0;
    for (int i = 0; i < job->kh; i++) {
        double row = 0.0;
        for (int j = 0; j < job->kw; j++)
            row += (double)job->kx[j] * fetch(job, b, ch, y + i - job->ay, x + j - job->ax);
        acc += (double)job->ky[i] * row;
    }
    return acc * (double)job->scale;
}

/* Output rows one by one; polls for interruption before each row (a row of a big kernel is
 * already milliseconds here). */
static lumen_status run(const lumen_context *ctx, const lumen_filter_job *job,
                        double (*at)(const lumen_filter_job *, int64_t, int64_t, int64_t, int64_t))
{
    const lumen_image *d = job->dst; /* a halo makes it smaller than src: the anchor maps */
    int64_t rows = d->n * d->c * d->h;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx);
#pragma omp parallel for num_threads(ctx->threads) schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; r++) {
        if (lumen_cpu_should_stop(&stop)) continue;
        int64_t y = r % d->h, ch = (r / d->h) % d->c, b = r / (d->h * d->c);
        for (int64_t x = 0; x < d->w; x++)
            lumen_store_px(lumen_px_addr(d, b, ch, y, x), d->dtype, (float)at(job, b, ch, y, x));
    }
    return lumen_cpu_stop_status(&stop, LUMEN_OK);
}

/* Either taps of a filter job, as its `taps` says (every method has this one definition). */
lumen_status lumen_cpu_reference_filter(lumen_context *ctx, const lumen_filter_job *job)
{
    return run(ctx, job, job->taps == LUMEN_TAPS_SEPARABLE ? separable_at : direct_at);
}
