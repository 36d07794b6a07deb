/*
 * The CPU cost model behind --method auto: seconds = work / rate, with one
 * rate per method measured once on this machine (a few hundred ms of one
 * thread's CPU time, the first time auto has to weigh FFT against the others)
 * and kept beside the FFTW wisdom, so later processes just read it. Measured
 * in CPU time and bounded by a table, so that the machine's load when it was
 * measured cannot flip a choice (docs/large-kernels.md, "Automatic method choice").
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* bump when a kernel's speed or a measurement changes much (v5: rates per row-kernel set and
 * the FFT rate from a larger image; v7: CPU time, best of 5, rates bounded by a table) */
#define COST_FILE "cost-model-v7"

/* The row kernel sets measured apart (lumen_cpu_row_kernels): generic, AVX2, AVX-512. */
enum { ISA_GENERIC, ISA_AVX2, ISA_AVX512, ISA_COUNT };
static const char *const isa_names[ISA_COUNT] = {"generic", "avx2", "avx512"};

typedef struct rates {
    double direct;    /* taps x pixels per second, one thread */
    double separable; /* (kw + kh) x pixels per second, symmetric kernels */
    double fft;       /* lumen_cpu_fft_tile_work units per second */
} rates;

static pthread_mutex_t rates_lock = PTHREAD_MUTEX_INITIALIZER;
static rates cached[ISA_COUNT];
static bool have[ISA_COUNT];
static bool good[ISA_COUNT]; /* measured (or read), not the neutral fallback: worth saving */

/* The calling thread's CPU time, not the wall clock: every calibration run is single-threaded
 * on this thread (threads = 1: no team, FFTW on one thread), and a thread's CPU time does not
 * grow while it waits for a core. Timed by the wall clock, the FFT's runs (tens of ms, longer
 * than a time slice) took 3-4x longer beside two busy processes while the short direct runs
 * did not, and auto chose direct for 61 x 61 on 600 x 900 (test_fft, test_medium_61_auto_fft). */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The best of RUNS runs of entry on job, after one warm-up run: a preemption still costs the
 * run some cache contents, which the minimum leaves out. */
static double time_entry(lumen_context *ctx,
                         lumen_status (*entry)(lumen_context *, const lumen_filter_job *),
                         const lumen_filter_job *job)
{
    enum { RUNS = 5 };
    double best = INFINITY;
    for (int r = 0; r <= RUNS; r++) {
        double t0 = cpu_s();
        if (entry(ctx, job) != LUMEN_OK) return INFINITY;
        if (r > 0) best = fmin(best, cpu_s() - t0);
    }
    return best;
}

/* Each set's rates measured on the development machine (2-core Zen 5 guest, CPU time, best of
 * 5; the means of runs that varied by 1.1-1.4x with another process's load beside them). */
static const rates table[ISA_COUNT] = {
    [ISA_GENERIC] = {6.9e9, 8.5e9, 3.7e9},
    [ISA_AVX2] = {2.3e10, 2.3e10, 4.0e9},
    [ISA_AVX512] = {3.9e10, 2.4e10, 3.4e9},
};
/* How far a measured rate's ratio to the direct rate may stray from the table's: this
 * machine's ratios stay within 1.5x of it; another CPU's FFTW or caches may differ more, and
 * a disturbed measurement cannot flip auto's choice by more. */
#define TABLE_SLACK 2.0

/* The separable and FFT rates bounded to within TABLE_SLACK of the table's ratios to the
 * measured direct rate (which sets this machine's speed). */
static void bound_by_table(int isa, rates *r)
{
    const double scale = r->direct / table[isa].direct;
    double *const rate[2] = {&r->separable, &r->fft};
    const double nominal[2] = {table[isa].separable * scale, table[isa].fft * scale};
    for (int i = 0; i < 2; i++) {
        const double bounded =
            fmin(fmax(*rate[i], nominal[i] / TABLE_SLACK), nominal[i] * TABLE_SLACK);
        if (bounded != *rate[i])
            lumen_log(LUMEN_LOG_DEBUG, "cost model (%s): %s rate %.3g bounded to %.3g by the table",
                      isa_names[isa], i ? "fft" : "separable", *rate[i], bounded);
        *rate[i] = bounded;
    }
}

static rates measure(int isa, bool *ok)
{
    /* The FFT's rate from an FW x FH image: on 512 x 256 its few small tiles cost more per
     * unit of tile work (loads, stores, a partial last tile) than the large images' tiles do,
     * and auto then kept large Gaussians separable where the FFT was 5-10% faster. */
    enum { W = 512, H = 256, KD = 15, KS = 31, KF = 63, FW = 1536, FH = 1024 };
    rates r = {1e9, 1e9, 1e9}; /* used if measuring fails: favours nothing badly */
    *ok = false;
    lumen_context *ctx = NULL;
    float *img = malloc(sizeof(float) * 2 * FW * FH), *k = malloc(sizeof(float) * KF * KF);
    if (!img || !k || lumen_context_create(&ctx) != LUMEN_OK) goto done;
    ctx->threads = 1, ctx->simd = true;
    ctx->cpu_avx2 = ctx->cpu_avx2 && isa >= ISA_AVX2;
    ctx->cpu_avx512 = ctx->cpu_avx512 && isa == ISA_AVX512;
    for (int i = 0; i < FW * FH; i++)
        img[i] = (float)(((int64_t)i * 7919) % 1000) / 1000.0f;
    for (int i = 0; i < KF * KF; i++)
        k[i] = (float)((i * 31) % 17) / 17.0f - 0.4f;
    lumen_image src = lumen_image_nchw(img, LUMEN_F32, 1, 1, H, W);
    lumen_image dst = lumen_image_nchw(img + W * H, LUMEN_F32, 1, 1, H, W);
    const lumen_filter_job base = {
        .src = &src, .dst = &dst, .border = LUMEN_BORDER_REFLECT, .scale = 1.0f};
    lumen_filter_job d = base;
    d.taps = LUMEN_TAPS_2D, d.kw = d.kh = KD, d.ax = d.ay = KD / 2, d.kernel = k;
    r.direct = (double)W * H * KD * KD / time_entry(ctx, lumen_cpu_direct, &d);
    float g[KS];
    for (int i = 0; i < KS; i++)
        g[i] = 1.0f / (float)(1 + abs(i - KS / 2));
    lumen_filter_job s = base;
    s.taps = LUMEN_TAPS_SEPARABLE, s.kw = s.kh = KS, s.ax = s.ay = KS / 2, s.kx = s.ky = g;
    r.separable = (double)W * H * 2 * KS / time_entry(ctx, lumen_cpu_separable, &s);
    lumen_image fsrc = lumen_image_nchw(img, LUMEN_F32, 1, 1, FH, FW);
    lumen_image fdst = lumen_image_nchw(img + FW * FH, LUMEN_F32, 1, 1, FH, FW);
    lumen_filter_job f = base;
    f.src = &fsrc, f.dst = &fdst;
    f.taps = LUMEN_TAPS_2D, f.kw = f.kh = KF, f.ax = f.ay = KF / 2, f.kernel = k;
    r.fft = lumen_cpu_fft_tiling(&f, 1).work / time_entry(ctx, lumen_cpu_fft, &f);
    *ok = r.direct > 0 && r.separable > 0 && r.fft > 0;
    if (*ok) bound_by_table(isa, &r);
done:
    lumen_context_destroy(ctx);
    free(img), free(k);
    return r;
}

/* Reads every ISA's line of the cost file once per process. */
static void load_rates_once(void)
{
    static bool loaded;
    char path[4200], isa[32];
    rates r;
    if (loaded) return;
    loaded = true;
    FILE *f = lumen_cache_path(COST_FILE, path, sizeof path) ? fopen(path, "r") : NULL;
    while (f && fscanf(f, "%31s %lf %lf %lf", isa, &r.direct, &r.separable, &r.fft) == 4) {
        int i = -1;
        for (int j = 0; j < ISA_COUNT; j++)
            if (!strcmp(isa, isa_names[j])) i = j;
        if (i >= 0 && r.direct > 0 && r.separable > 0 && r.fft > 0)
            cached[i] = r, have[i] = good[i] = true;
    }
    if (f) fclose(f);
}

/* Both ISAs' lines, written to a temporary file and renamed. */
static void save_rates(void)
{
    char path[4200], tmp[4300];
    if (!lumen_cache_path(COST_FILE, path, sizeof path)) return;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    for (int i = 0; i < ISA_COUNT; i++)
        if (good[i])
            fprintf(f, "%s %.6g %.6g %.6g\n", isa_names[i], cached[i].direct, cached[i].separable,
                    cached[i].fft);
    if (fclose(f) == 0 && rename(tmp, path) == 0) return;
    unlink(tmp);
}

static rates get_rates(int isa)
{
    pthread_mutex_lock(&rates_lock);
    load_rates_once();
    if (!have[isa]) {
        bool ok;
        cached[isa] = measure(isa, &ok);
        have[isa] = true, good[isa] = ok;
        /* A failed measurement (no memory, say) serves this process only: a later one measures
         * again rather than reading its neutral rates from the cache for good. */
        if (ok) save_rates();
        lumen_log(LUMEN_LOG_DEBUG,
                  "cost model measured (%s): direct %.3g, separable %.3g, fft %.3g /s",
                  isa_names[isa], cached[isa].direct, cached[isa].separable, cached[isa].fft);
    }
    rates r = cached[isa];
    pthread_mutex_unlock(&rates_lock);
    return r;
}

double lumen_cpu_cost(lumen_context *ctx, const lumen_op *op)
{
    const lumen_filter_job *job = op->job;
    const lumen_method method = lumen_op_kind_method(op->kind);
    if (op->kind > LUMEN_OP_FILTER_FFT) return -1.0;
    const lumen_image *s = job->dst; /* the outputs to compute (src less a halo) */
    const double pixels = (double)(s->n * s->c * s->h * s->w) / ctx->threads;
    const rates r = get_rates(lumen_ctx_use_avx512(ctx) ? ISA_AVX512
                              : lumen_ctx_use_avx2(ctx) ? ISA_AVX2
                                                        : ISA_GENERIC);
    switch (method) {
    case LUMEN_METHOD_DIRECT: return job->kernel ? pixels * job->kw * job->kh / r.direct : -1.0;
    case LUMEN_METHOD_SEPARABLE: {
        if (!job->kx) return -1.0;
        /* symmetric taps are paired, about 1.5x cheaper than the general case */
        bool sym = lumen_kernel_is_symmetric(job->kx, job->kw) &&
                   lumen_kernel_is_symmetric(job->ky, job->kh);
        /* scaled jobs (box_blur) take the four-row column pass too, at the same cost */
        return pixels * (job->kw + job->kh) / r.separable * (sym ? 1.0 : 1.5);
    }
    case LUMEN_METHOD_FFT: {
        /* A first call also transforms the kernel: one more tile's worth on one thread; for a
         * shared tile (often the whole image) its r2c alone on all threads, half a tile's work
         * (t.work / t.tiles). Not for a kernel this context ran before another way: it repeats,
         * and the transform is paid once (lumen_cpu_fft_note_kernel). */
        lumen_fft_tiling t = lumen_cpu_fft_tiling(job, ctx->threads);
        double cold = 0.0;
        if (!lumen_cpu_fft_spectrum_cached(ctx, job, t) && !lumen_cpu_fft_kernel_noted(ctx, job))
            cold = t.tile_threads > 1 ? 0.5 * t.work / (double)t.tiles
                                      : lumen_cpu_fft_tile_work(t.nh, t.nw);
        return (t.work + cold) / r.fft;
    }
    default: return -1.0;
    }
}
