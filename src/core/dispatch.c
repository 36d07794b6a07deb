/* Runs normalised jobs on the context's device and chooses methods by cost.
 * Fallback lives here, not in backends: when the device's backend has no entry for the op or
 * dtype, or runs out of memory, the job reruns on the CPU with one warning line; in strict mode
 * that is an error instead. Device-resident views are staged through host memory for it. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef lumen_status (*filter_entry)(lumen_context *, const lumen_filter_job *);

/* The CPU runs the scalar reference when SIMD is switched off. */
static const lumen_backend *cpu_backend(const lumen_context *ctx)
{
    return ctx->simd ? &lumen_cpu_fast_backend : &lumen_cpu_reference_backend;
}

/* The whole of info (callers may pass it uninitialised); algo: conv's algorithm or NULL. */
static void fill_info(const lumen_context *ctx, lumen_method method, bool on_device,
                      const char *algo, lumen_run_info *info)
{
    if (!info) return;
    info->method = method;
    info->device = on_device ? lumen_device_name_static(ctx->device) : "cpu";
    info->isa = on_device                 ? ctx->be->name
                : lumen_ctx_use_avx2(ctx) ? "avx2+fma"
                : ctx->simd               ? "generic"
                                          : "scalar";
    info->threads = ctx->threads;
    info->algo = algo;
}

static filter_entry entry_for(const lumen_backend *be, lumen_method method)
{
    return method == LUMEN_METHOD_SEPARABLE ? be->sep_filter
           : method == LUMEN_METHOD_FFT     ? be->fft_filter
                                            : be->filter2d;
}

static bool takes_dtypes(const lumen_backend *be, const lumen_image *src, const lumen_image *dst)
{
    return !be->dtypes || (((be->dtypes >> src->dtype) & 1) && ((be->dtypes >> dst->dtype) & 1));
}

static lumen_status run_on_cpu(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                               lumen_run_info *info)
{
    const lumen_backend *be = cpu_backend(ctx);
    filter_entry entry = entry_for(be, method);
    /* The reference defines each kernel form once; every method is that definition. */
    if (!entry) entry = job->kernel ? be->filter2d : be->sep_filter;
    lumen_status s = entry(ctx, job);
    if (s == LUMEN_OK) fill_info(ctx, method, false, NULL, info);
    lumen_log(LUMEN_LOG_DEBUG, "ran %s on cpu (%s), %dx%d kernel, %d threads",
              lumen_method_name(method), be->name, job->kw, job->kh, ctx->threads);
    return s;
}

/* ---- staging device-resident views through host memory (fallback only) ---- */

typedef struct staged {
    lumen_image view; /* the host copy, same strides */
    void *buf;
    uintptr_t lo;
    size_t bytes;
} staged;

/* Downloads the byte extent of a device view (also dst's: bytes between its pixels stay). */
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

/* Runs an op on host views: views[0 .. n-1] are its inputs and views[n-1] its output. */
typedef lumen_status (*host_run)(lumen_context *ctx, const lumen_image *const *views, void *arg);

#define MAX_VIEWS 4

/* Runs fn on host copies of the views that live in device memory (host views are passed as
 * they are), then uploads the output when it lives there. */
static lumen_status run_on_host_views(lumen_context *ctx, const lumen_image *const *views, int n,
                                      host_run fn, void *arg)
{
    staged st[MAX_VIEWS];
    memset(st, 0, sizeof st);
    const lumen_image *host[MAX_VIEWS];
    lumen_status s = LUMEN_OK;
    for (int i = 0; i < n; i++) {
        host[i] = views[i];
        if (!views[i]->device || s) continue;
        s = stage_in(ctx, views[i], &st[i]);
        host[i] = &st[i].view;
    }
    if (!s) s = fn(ctx, host, arg);
    const staged *out = &st[n - 1];
    if (!s && views[n - 1]->device) {
        s = ctx->be->upload(ctx, (void *)out->lo, out->buf, out->bytes);
        if (!s && ctx->be->synchronize) s = ctx->be->synchronize(ctx);
    }
    for (int i = 0; i < n; i++) free(st[i].buf);
    return s;
}

typedef struct filter_call {
    const lumen_filter_job *job;
    lumen_method method;
    lumen_run_info *info;
} filter_call;

static lumen_status filter_on_cpu(lumen_context *ctx, const lumen_image *const *views, void *arg)
{
    const filter_call *fc = arg;
    lumen_filter_job job = *fc->job;
    job.src = views[0];
    job.dst = views[1];
    return run_on_cpu(ctx, &job, fc->method, fc->info);
}

/* Reruns an op (what: "direct filter", "fast Gaussian", "conv2d") on the CPU through fn, with
 * one warning line; in strict mode fails with why_status instead. views: as host_run's. */
static lumen_status fall_back(lumen_context *ctx, const char *what, const lumen_image *const *views,
                              int n, lumen_status why_status, const char *why, host_run fn,
                              void *arg)
{
    const char *dev = lumen_device_name_static(ctx->device);
    if (ctx->strict)
        return lumen_set_error(why_status, "device %s: %s (strict mode: no fallback to the CPU)",
                               dev, why);
    lumen_log(LUMEN_LOG_WARN, "%s on %s: %s; running it on the CPU", what, dev, why);
    lumen_clear_error();
    return run_on_host_views(ctx, views, n, fn, arg);
}

static lumen_status filter_fall_back(lumen_context *ctx, const lumen_filter_job *job,
                                     lumen_method method, lumen_run_info *info,
                                     lumen_status why_status, const char *why)
{
    char what[48];
    snprintf(what, sizeof what, "%s filter", lumen_method_name(method));
    filter_call fc = {job, method, info};
    const lumen_image *views[2] = {job->src, job->dst};
    return fall_back(ctx, what, views, 2, why_status, why, filter_on_cpu, &fc);
}

lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info)
{
    if (!ctx->be) return run_on_cpu(ctx, job, method, info);
    const lumen_backend *be = ctx->be;
    filter_entry entry = entry_for(be, method);
    char why[300];
    if (!entry) {
        snprintf(why, sizeof why, "%s has no %s filter", be->name, lumen_method_name(method));
        return filter_fall_back(ctx, job, method, info, LUMEN_ERR_UNSUPPORTED, why);
    }
    if (!takes_dtypes(be, job->src, job->dst)) {
        snprintf(why, sizeof why, "%s does not filter %s to %s", be->name,
                 lumen_dtype_name(job->src->dtype), lumen_dtype_name(job->dst->dtype));
        return filter_fall_back(ctx, job, method, info, LUMEN_ERR_UNSUPPORTED, why);
    }
    lumen_status s = entry(ctx, job);
    if (s == LUMEN_OK) fill_info(ctx, method, true, NULL, info);
    if (s != LUMEN_ERR_OUT_OF_MEMORY && s != LUMEN_ERR_UNSUPPORTED) return s;
    snprintf(why, sizeof why, "%s", lumen_last_error());
    return filter_fall_back(ctx, job, method, info, s, why);
}

/* Estimated seconds of method m: the device's model for what it runs, else the CPU's. */
static double method_cost(lumen_context *ctx, const lumen_filter_job *job, lumen_method m)
{
    const lumen_backend *be = ctx->be && entry_for(ctx->be, m) ? ctx->be : cpu_backend(ctx);
    return be->cost ? be->cost(ctx, job, m) : (double)m;
}

lumen_method lumen_choose_method(lumen_context *ctx, const lumen_filter_job *job, unsigned allowed)
{
    lumen_method best = LUMEN_METHOD_AUTO;
    double best_cost = INFINITY;
    for (int m = LUMEN_METHOD_DIRECT; m <= LUMEN_METHOD_FFT; m++) {
        if (!(allowed & (1u << m))) continue;
        double c = method_cost(ctx, job, (lumen_method)m);
        lumen_log(LUMEN_LOG_DEBUG, "cost of %s for a %dx%d kernel: %.3g ms",
                  lumen_method_name((lumen_method)m), job->kw, job->kh, c * 1e3);
        if (c >= 0 && c < best_cost) best_cost = c, best = (lumen_method)m;
    }
    if (best == LUMEN_METHOD_AUTO) /* nothing estimable: the first allowed one */
        for (int m = LUMEN_METHOD_FFT; m >= LUMEN_METHOD_DIRECT; m--)
            if (allowed & (1u << m)) best = (lumen_method)m;
    lumen_log(LUMEN_LOG_INFO, "auto chose %s for a %dx%d kernel", lumen_method_name(best), job->kw,
              job->kh);
    return best;
}

typedef struct gauss_call {
    const lumen_gauss_job *job;
    lumen_run_info *info;
} gauss_call;

static lumen_status gaussian_fast_on_cpu(lumen_context *ctx, const lumen_gauss_job *job,
                                         lumen_run_info *info)
{
    const lumen_backend *be = cpu_backend(ctx);
    if (!be->gaussian_fast)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "precision: fast Gaussian not available on %s", be->name);
    lumen_status s = be->gaussian_fast(ctx, job);
    if (s == LUMEN_OK) fill_info(ctx, LUMEN_METHOD_RECURSIVE, false, NULL, info);
    return s;
}

static lumen_status gaussian_on_host_views(lumen_context *ctx, const lumen_image *const *views,
                                           void *arg)
{
    const gauss_call *gc = arg;
    lumen_gauss_job job = *gc->job;
    job.src = views[0];
    job.dst = views[1];
    return gaussian_fast_on_cpu(ctx, &job, gc->info);
}

lumen_status lumen_run_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job,
                                     lumen_run_info *info)
{
    if (!ctx->be) return gaussian_fast_on_cpu(ctx, job, info);
    const lumen_backend *be = ctx->be;
    lumen_status s = LUMEN_ERR_UNSUPPORTED;
    char why[300];
    snprintf(why, sizeof why, "%s has no fast Gaussian for %s", be->name,
             lumen_dtype_name(job->src->dtype));
    if (be->gaussian_fast && takes_dtypes(be, job->src, job->dst)) {
        s = be->gaussian_fast(ctx, job);
        if (s == LUMEN_OK) fill_info(ctx, LUMEN_METHOD_RECURSIVE, true, NULL, info);
        if (s != LUMEN_ERR_OUT_OF_MEMORY && s != LUMEN_ERR_UNSUPPORTED) return s;
        snprintf(why, sizeof why, "%s", lumen_last_error());
    }
    gauss_call gc = {job, info};
    const lumen_image *views[2] = {job->src, job->dst};
    return fall_back(ctx, "fast Gaussian", views, 2, s, why, gaussian_on_host_views, &gc);
}

/* ---- NCHW convolution ---------------------------------------------------- */

typedef struct conv_call {
    lumen_conv_kind kind;
    const lumen_conv_job *job;
    lumen_run_info *info;
} conv_call;

static const char *conv_name(lumen_conv_kind kind)
{
    return kind == LUMEN_CONV_FORWARD ? "conv2d" : "conv_transpose2d";
}

/* The CPU's conv2d entry chooses the reference itself when SIMD is off (conv_select.c). */
static lumen_status conv_on_cpu(lumen_context *ctx, lumen_conv_kind kind, const lumen_conv_job *job,
                                lumen_run_info *info)
{
    lumen_run_info ri = {0};
    lumen_status s = lumen_cpu_fast_backend.conv2d(ctx, kind, job, &ri);
    if (s) return s;
    lumen_log(LUMEN_LOG_DEBUG, "ran %s on cpu (%s, %s), %lldx%lld kernel, %d threads",
              conv_name(kind), ri.algo, ri.isa, (long long)job->w->h, (long long)job->w->w,
              ri.threads);
    if (info) *info = ri;
    return LUMEN_OK;
}

static lumen_status conv_on_host_views(lumen_context *ctx, const lumen_image *const *views,
                                       void *arg)
{
    const conv_call *cc = arg;
    lumen_conv_job job = *cc->job;
    job.x = views[0];
    job.w = views[1];
    job.y = views[2];
    return conv_on_cpu(ctx, cc->kind, &job, cc->info);
}

lumen_status lumen_run_conv(lumen_context *ctx, lumen_conv_kind kind, const lumen_conv_job *job,
                            lumen_run_info *info)
{
    if (!ctx->be) return conv_on_cpu(ctx, kind, job, info);
    const lumen_backend *be = ctx->be;
    lumen_status s = LUMEN_ERR_UNSUPPORTED;
    char why[300];
    if (!be->conv2d) snprintf(why, sizeof why, "%s has no %s", be->name, conv_name(kind));
    else snprintf(why, sizeof why, "%s does not run %s on f32", be->name, conv_name(kind));
    if (be->conv2d && takes_dtypes(be, job->x, job->y)) {
        lumen_run_info ri = {0};
        s = be->conv2d(ctx, kind, job, &ri);
        if (s == LUMEN_OK) {
            fill_info(ctx, LUMEN_METHOD_DIRECT, true, ri.algo, &ri);
            lumen_log(LUMEN_LOG_DEBUG, "ran %s on %s (%s)", conv_name(kind), ri.device, ri.algo);
            if (info) *info = ri;
            return LUMEN_OK;
        }
        if (s != LUMEN_ERR_OUT_OF_MEMORY && s != LUMEN_ERR_UNSUPPORTED) return s;
        snprintf(why, sizeof why, "%s", lumen_last_error());
    }
    conv_call cc = {kind, job, info};
    const lumen_image *views[3] = {job->x, job->w, job->y};
    return fall_back(ctx, conv_name(kind), views, 3, s, why, conv_on_host_views, &cc);
}
