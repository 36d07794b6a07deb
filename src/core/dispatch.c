/* The one dispatch path of every op (docs/architecture.md, "The op interface"): the context's
 * backend runs the op when it supports it; otherwise, or when it runs out of memory, the CPU
 * reruns it with one warning line, device-resident views staged through host memory. In strict
 * mode that fallback is an error instead. Also: the choice of a filter method by cost. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lumen_op_kind_name(lumen_op_kind kind)
{
    switch (kind) {
    case LUMEN_OP_FILTER_DIRECT: return "direct filter";
    case LUMEN_OP_FILTER_SEPARABLE: return "separable filter";
    case LUMEN_OP_FILTER_FFT: return "fft filter";
    case LUMEN_OP_GAUSSIAN_FAST: return "fast Gaussian";
    case LUMEN_OP_CONV2D: return "conv2d";
    case LUMEN_OP_CONV_TRANSPOSE2D: return "conv_transpose2d";
    case LUMEN_OP_RESIZE: return "resize";
    case LUMEN_OP_KIND_COUNT: break;
    }
    return "op";
}

lumen_method lumen_op_kind_method(lumen_op_kind kind)
{
    switch (kind) {
    case LUMEN_OP_FILTER_SEPARABLE:
    case LUMEN_OP_RESIZE: return LUMEN_METHOD_SEPARABLE;
    case LUMEN_OP_FILTER_FFT: return LUMEN_METHOD_FFT;
    case LUMEN_OP_GAUSSIAN_FAST: return LUMEN_METHOD_RECURSIVE;
    default: return LUMEN_METHOD_DIRECT;
    }
}

/* Runs op on backend be and completes info: the backend says how it ran (method, isa, algo),
 * the runtime where (device) and with how many CPU threads. */
static lumen_status run_on(lumen_context *ctx, const lumen_backend *be, const lumen_op *op,
                           bool on_device, lumen_run_info *info)
{
    lumen_run_info ri = {.method = lumen_op_kind_method(op->kind), .isa = be->name};
    lumen_status s = be->run(ctx, op, &ri);
    if (s) return s;
    ri.device = on_device ? lumen_device_name_static(ctx->device) : "cpu";
    ri.threads = ctx->threads;
    lumen_log(LUMEN_LOG_DEBUG, "ran %s on %s (%s, %s%s%s), %d threads",
              lumen_op_kind_name(op->kind), ri.device, lumen_method_name(ri.method), ri.isa,
              ri.algo ? ", " : "", ri.algo ? ri.algo : "", ri.threads);
    if (info) *info = ri;
    return LUMEN_OK;
}

/* ---- staging device-resident views through host memory (fallback only) ---- */

typedef struct staged {
    lumen_image view; /* the host copy, same strides */
    void *buf;
    uintptr_t lo;
    size_t bytes;
} staged;

/* Downloads the byte extent of a device view (also the output's: bytes between its pixels
 * stay as they were when uploaded back). */
static lumen_status stage_in(lumen_context *ctx, const lumen_image *img, staged *st)
{
    uintptr_t hi;
    lumen_image_extent(img, &st->lo, &hi);
    st->bytes = hi - st->lo;
    st->buf = malloc(st->bytes);
    if (!st->buf)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "fallback: %zu-byte host copy failed",
                               st->bytes);
    st->view = *img;
    st->view.device = 0;
    st->view.data = (char *)st->buf + ((uintptr_t)img->data - st->lo);
    return ctx->be->download(ctx, st->buf, (const void *)st->lo, st->bytes);
}

/* A copy of op's job whose views are host[] (the job struct begins with its views). */
static void *rebind(const lumen_op *op, const lumen_image *const *host)
{
    void *job = malloc(op->job_size);
    if (!job) return NULL;
    memcpy(job, op->job, op->job_size);
    memcpy(job, host, sizeof(host[0]) * (size_t)op->n_views);
    return job;
}

/* Runs op on the CPU with host copies of the views that live in device memory, then uploads
 * the output when it lives there. */
static lumen_status run_on_cpu_staged(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    staged st[LUMEN_OP_MAX_VIEWS];
    memset(st, 0, sizeof st);
    const lumen_image *const *views = lumen_op_views(op);
    const lumen_image *host[LUMEN_OP_MAX_VIEWS];
    const int n = op->n_views;
    lumen_status s = LUMEN_OK;
    for (int i = 0; i < n; i++) {
        host[i] = views[i];
        if (!views[i]->device || s) continue;
        s = stage_in(ctx, views[i], &st[i]);
        host[i] = &st[i].view;
    }
    void *job = s ? NULL : rebind(op, host);
    if (!s && !job) s = lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "fallback: out of memory");
    if (!s) {
        lumen_op cpu_op = *op;
        cpu_op.job = job;
        s = run_on(ctx, &lumen_cpu_backend, &cpu_op, false, info);
    }
    const staged *out = &st[n - 1];
    if (!s && views[n - 1]->device) {
        s = ctx->be->upload(ctx, (void *)out->lo, out->buf, out->bytes);
        if (!s && ctx->be->synchronize) s = ctx->be->synchronize(ctx);
    }
    free(job);
    for (int i = 0; i < n; i++)
        free(st[i].buf);
    return s;
}

/* Reruns op on the CPU with one warning line; in strict mode fails with why_status instead. */
static lumen_status fall_back(lumen_context *ctx, const lumen_op *op, lumen_status why_status,
                              const char *why, lumen_run_info *info)
{
    const char *dev = lumen_device_name_static(ctx->device);
    if (ctx->strict)
        return lumen_set_error(why_status, "device %s: %s (strict mode: no fallback to the CPU)",
                               dev, why);
    lumen_log(LUMEN_LOG_WARN, "%s on %s: %s; running it on the CPU", lumen_op_kind_name(op->kind),
              dev, why);
    lumen_clear_error();
    return run_on_cpu_staged(ctx, op, info);
}

/* "u8 to f32": the dtypes of an op's first input and its output, for messages. */
static void describe_dtypes(const lumen_op *op, char *buf, size_t size)
{
    const lumen_image *const *v = lumen_op_views(op);
    snprintf(buf, size, "%s to %s", lumen_dtype_name(v[0]->dtype),
             lumen_dtype_name(v[op->n_views - 1]->dtype));
}

/* A filter job whose dst is smaller than its src (a halo, lumen_halo): only the CPU runs those.
 * A module's filter kernels write dst over src's shape, and modules built before halos existed
 * cannot say they lack them, so the runtime does not ask them. */
static bool halo_job(const lumen_op *op)
{
    if (op->kind != LUMEN_OP_FILTER_DIRECT && op->kind != LUMEN_OP_FILTER_SEPARABLE &&
        op->kind != LUMEN_OP_FILTER_FFT)
        return false;
    const lumen_image *const *v = lumen_op_views(op);
    return v[0]->h != v[1]->h || v[0]->w != v[1]->w;
}

/* Whether backend be runs op (the CPU runs every op). */
static bool backend_runs(const lumen_backend *be, lumen_context *ctx, const lumen_op *op)
{
    return be->supports(ctx, op) && (be == &lumen_cpu_backend || !halo_job(op));
}

lumen_status lumen_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const lumen_backend *be = ctx->be;
    const bool on_device = be != &lumen_cpu_backend;
    char why[300];
    lumen_status s = LUMEN_ERR_UNSUPPORTED;
    /* An interruption that arrived before the op started stops it before any set-up (plans,
     * staging); one during the run is the backend's to notice. An interrupted op is never
     * rerun on the CPU: it is neither a missing feature nor a lack of memory. */
    if (lumen_interrupt_requested(ctx)) return lumen_interrupted_error();
    if (backend_runs(be, ctx, op)) {
        s = run_on(ctx, be, op, on_device, info);
        if (!on_device || (s != LUMEN_ERR_OUT_OF_MEMORY && s != LUMEN_ERR_UNSUPPORTED)) return s;
        snprintf(why, sizeof why, "%s", lumen_last_error());
    } else {
        if (!on_device) /* the CPU supports every op: a new kind it lacks is a bug */
            return lumen_set_error(LUMEN_ERR_INTERNAL, "the CPU backend has no %s",
                                   lumen_op_kind_name(op->kind));
        char dtypes[64];
        describe_dtypes(op, dtypes, sizeof dtypes);
        if (halo_job(op))
            snprintf(why, sizeof why, "%s has no %s with a halo", be->name,
                     lumen_op_kind_name(op->kind));
        else
            snprintf(why, sizeof why, "%s has no %s for %s", be->name, lumen_op_kind_name(op->kind),
                     dtypes);
    }
    return fall_back(ctx, op, s, why, info);
}

bool lumen_context_on_cpu(const lumen_context *ctx)
{
    return ctx->be == &lumen_cpu_backend;
}

/* ---- filters: method by cost ------------------------------------------------ */

static lumen_op_kind filter_kind(lumen_method m)
{
    return m == LUMEN_METHOD_SEPARABLE ? LUMEN_OP_FILTER_SEPARABLE
           : m == LUMEN_METHOD_FFT     ? LUMEN_OP_FILTER_FFT
                                       : LUMEN_OP_FILTER_DIRECT;
}

/* The job as method m runs it: the separable method takes the separable taps, direct the 2-D
 * kernel, the FFT the 2-D kernel when there is one. */
static lumen_filter_job job_for(const lumen_filter_job *job, lumen_method m)
{
    lumen_filter_job j = *job;
    j.taps = m == LUMEN_METHOD_SEPARABLE || (m == LUMEN_METHOD_FFT && !job->kernel)
                 ? LUMEN_TAPS_SEPARABLE
                 : LUMEN_TAPS_2D;
    return j;
}

lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info)
{
    const lumen_filter_job j = job_for(job, method);
    const lumen_op op = lumen_op_filter(filter_kind(method), &j);
    return lumen_run(ctx, &op, info);
}

/* Estimated seconds of method m: the device's model where the device runs it (device_only),
 * else the CPU's, since the fallback would run it there; < 0: not a choice. */
static double method_cost(lumen_context *ctx, const lumen_filter_job *job, lumen_method m,
                          bool device_only)
{
    const lumen_filter_job j = job_for(job, m);
    const lumen_op op = lumen_op_filter(filter_kind(m), &j);
    const bool on_device = backend_runs(ctx->be, ctx, &op);
    if (device_only && !on_device) return -1;
    const lumen_backend *be = on_device ? ctx->be : &lumen_cpu_backend;
    return be->cost ? be->cost(ctx, &op) : (double)m;
}

/* The cheapest allowed method by method_cost; AUTO when none is estimable. */
static lumen_method cheapest(lumen_context *ctx, const lumen_filter_job *job, unsigned allowed,
                             bool device_only)
{
    lumen_method best = LUMEN_METHOD_AUTO;
    double best_cost = INFINITY;
    for (int m = LUMEN_METHOD_DIRECT; m <= LUMEN_METHOD_FFT; m++) {
        if (!(allowed & (1u << m))) continue;
        double c = method_cost(ctx, job, (lumen_method)m, device_only);
        lumen_log(LUMEN_LOG_DEBUG, "cost of %s for a %dx%d kernel: %.3g ms",
                  lumen_method_name((lumen_method)m), job->kw, job->kh, c * 1e3);
        if (c >= 0 && c < best_cost) best_cost = c, best = (lumen_method)m;
    }
    return best;
}

/* On a device, auto chooses among the methods the device runs (so it runs there, in strict
 * mode or not, rather than on the CPU because the CPU's FFT looked cheaper); only when the
 * device runs none of them do the CPU's costs decide. */
lumen_method lumen_choose_method(lumen_context *ctx, const lumen_filter_job *job, unsigned allowed)
{
    lumen_method best = LUMEN_METHOD_AUTO;
    if (ctx->be != &lumen_cpu_backend) best = cheapest(ctx, job, allowed, true);
    if (best == LUMEN_METHOD_AUTO) best = cheapest(ctx, job, allowed, false);
    if (best == LUMEN_METHOD_AUTO) /* nothing estimable: the first allowed one */
        for (int m = LUMEN_METHOD_FFT; m >= LUMEN_METHOD_DIRECT; m--)
            if (allowed & (1u << m)) best = (lumen_method)m;
    lumen_log(LUMEN_LOG_INFO, "auto chose %s for a %dx%d kernel", lumen_method_name(best), job->kw,
              job->kh);
    return best;
}
