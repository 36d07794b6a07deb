/* `lumen bench floors`: the machine's limits, measured on this machine in this run, and the
 * floor of every `lumen bench` case derived from them (issue 17's targets are ratios to these):
 *   memory  memcpy of the image on the context's threads (each copies its share), times the
 *           passes over the image the case's method needs at least;
 *   fma     taps x pixels x 2 flops / the peak of an FMA microbenchmark on the widest vector
 *           unit the library would use (AVX-512, AVX2, else SSE; LUMEN_CPU_ISA caps it);
 *   fft     one FFTW r2c + c2r pair over the padded image (H+k-1) x (W+k-1), each side rounded
 *           up to an even 2^a 3^b 5^c 7^d, planned with the library's planner flags
 *           (--fft-planning) on the same threads (FFTW's OpenMP threads when linked). */
#include "bench_floors.h"
#include "args.h"
#include "bench_photo.h"
#include "cli.h"

#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage[] =
    "Usage: lumen bench floors [--json] [--size WxH] [--photo-size WxH] [--repeat N]\n"
    "                          [options]\n"
    "\n"
    "Measures the machine's floors, in this process, and the floor of every\n"
    "'lumen bench' case (issue 17's targets are lumen's time / the case's floor):\n"
    "  memory   memcpy of the W x H f32 image, split between the threads (min of\n"
    "           N runs), times the passes over the image the case's method needs:\n"
    "           direct 1, separable 1 (the column pass fused in row bands), box 1,\n"
    "           the recursive fast Gaussian 2 (rows, then columns in place)\n"
    "  fma      taps x pixels x 2 flops / peak; peak from an FMA microbenchmark on\n"
    "           all threads on the widest vector unit lumen uses here (AVX-512,\n"
    "           else AVX2, else SSE; LUMEN_CPU_ISA and --no-simd cap it as they cap\n"
    "           the library). Taps: direct k*k, separable 2k\n"
    "  fft      one FFTW r2c + c2r pair (out of place) over (H+k-1) x (W+k-1), each\n"
    "           side rounded up to an even 2^a 3^b 5^c 7^d, planned with the\n"
    "           library's flags (--fft-planning; measure keeps wisdom in lumen's cache\n"
    "           folder as fftw-wisdom-f32-floors) on the same threads\n"
    "A case's floor is the one its issue 17 target is set against (k <= 5 direct,\n"
    "box, fast Gaussian: memory, <= 1.3x; direct k = 7, 15: fma, <= 1.5x; FFT\n"
    "k >= 31 and exact Gaussian sigma >= 30: fft, <= 1.2x); cases without a target\n"
    "take the larger of memory and fma. box_k5 is not a 'lumen bench' case (the\n"
    "box filter's floor, for docs/benchmarks.md).\n"
    "Photo cases (issue 30; 'lumen bench' and python3 -m lumen.bench time them): the\n"
    "memcpy of the --photo-size u8 and u16 RGB images, measured the same way, and\n"
    "each photo case's memory floor: that memcpy scaled to the bytes the case reads\n"
    "and writes at least (its input or crop once, its output once); target <= 1.5x\n"
    "for u8 filter2d k3, k5 and box k5.\n"
    "\n"
    "Options:\n"
    "  --json            print one JSON object instead of a table\n"
    "  --size WxH        image width x height (default: 3000x2000, lumen bench's)\n"
    "  --photo-size WxH  the photo cases' RGB image (default: --size when given,\n"
    "                    else 4000x3000)\n"
    "  --repeat N        runs of each FFT pair, the minimum is kept, 3-1000 (default:\n"
    "                    9); the memcpy and the FMA loop, a few ms each, run 8N times,\n"
    "                    2 ms apart\n";

static const char examples[] = "\n"
                               "Example:\n"
                               "  lumen bench floors --threads 2 --json\n";

enum { F_JSON = CLI_FLAG_CMD, F_SIZE, F_REPEAT, F_PHOTO_SIZE };

static const cli_flag flags[] = {
    {"json", 0, 0, F_JSON},  {"size", 0, 1, F_SIZE}, {"repeat", 0, 1, F_REPEAT},
    {"photo-size", 0, 1, F_PHOTO_SIZE}, CLI_COMMON_FLAGS, CLI_FFT_FLAGS, {NULL, 0, 0, 0}};

#define FLOORS_MAX_SIDE 16384

/* Which floor the target for a case is set against. */
typedef enum target_kind { T_NONE, T_MEMORY, T_FMA, T_FFT } target_kind;

typedef struct floor_case {
    const char *name;   /* lumen bench's case name */
    const char *method; /* the method the floor assumes */
    int ksize;          /* k x k (Gaussian: 2*round(3 sigma)+1); 0: none */
    double flops_px;    /* flops per output pixel of that method */
    int passes;         /* memcpy-equivalents over the image it needs at least */
    int batch;          /* images per call */
    target_kind target;
    double limit; /* the target's limit on lumen / floor; 0: none */
} floor_case;

#define DIRECT(k) (2.0 * (k) * (k))
#define SEPARABLE(k) (2.0 * 2 * (k))
static const floor_case cases[] = {
    {"filter2d_k3", "direct", 3, DIRECT(3), 1, 1, T_MEMORY, 1.3},
    {"box_k5", "box", 5, 4.0, 1, 1, T_MEMORY, 1.3}, /* running sums: 2 adds per axis */
    {"filter2d_k7", "direct", 7, DIRECT(7), 1, 1, T_FMA, 1.5},
    {"filter2d_k15", "direct", 15, DIRECT(15), 1, 1, T_FMA, 1.5},
    {"filter2d_k31", "fft", 31, DIRECT(31), 1, 1, T_FFT, 1.2},
    {"filter2d_k61", "fft", 61, DIRECT(61), 1, 1, T_FFT, 1.2},
    {"filter2d_k121", "fft", 121, DIRECT(121), 1, 1, T_FFT, 1.2},
    {"filter2d_k201", "fft", 201, DIRECT(201), 1, 1, T_FFT, 1.2},
    {"filter2d_k61_batch10", "fft", 61, DIRECT(61), 1, 10, T_FFT, 1.2},
    {"gaussian_s1", "separable", 7, SEPARABLE(7), 1, 1, T_NONE, 0},
    {"gaussian_s3", "separable", 19, SEPARABLE(19), 1, 1, T_NONE, 0},
    {"gaussian_s10", "separable", 61, SEPARABLE(61), 1, 1, T_NONE, 0},
    {"gaussian_s30", "separable", 181, SEPARABLE(181), 1, 1, T_FFT, 1.2},
    {"gaussian_s50", "separable", 301, SEPARABLE(301), 1, 1, T_FFT, 1.2},
    /* Deriche's 4th-order recursion: about 27 flops per pixel and axis (gaussian_fast.c) */
    {"gaussian_fast_s30", "recursive", 0, 54.0, 2, 1, T_MEMORY, 1.3},
    {"gaussian_fast_s50", "recursive", 0, 54.0, 2, 1, T_MEMORY, 1.3}};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))
/* An FFT pair is measured for every case with k >= this (a floor for k >= 31 only). */
#define FFT_MIN_K 31

typedef struct floors_state {
    cli_common common;
    int json, w, h, repeat;
    int size_given, photo_w, photo_h; /* photo_w 0: --size when given, else the default */
} floors_state;

/* What was measured once for the whole run. */
typedef struct machine_floors {
    int threads, fftw_threads;
    floors_isa isa;
    double memcpy_min, memcpy_median, gflops;
} machine_floors;

typedef struct case_floor {
    const floor_case *c;
    double memory_ms, fma_ms, fft_ms; /* fft_ms < 0: not measured */
    int fft_h, fft_w;
    double floor_ms;
    const char *bound;
} case_floor;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    floors_state *st = state;
    switch (id) {
    case F_JSON: st->json = 1; return 0;
    case F_SIZE:
        st->size_given = 1;
        return cli_arg_size(name, value, FLOORS_MAX_SIDE, &st->w, &st->h);
    case F_PHOTO_SIZE:
        return cli_arg_size(name, value, FLOORS_MAX_SIDE, &st->photo_w, &st->photo_h);
    case F_REPEAT: return cli_arg_int(name, value, 3, 1000, &st->repeat);
    default: return cli_common_flag(&st->common, id, name, value);
    }
}

/* Runs of the short measurements (memcpy, FMA loop), FLOORS_PAUSE_NS apart: on a shared machine
 * the minimum of many, spread over a quarter of a second or more, is one that no other process
 * disturbed (back to back, all of them may fall into the same busy spell). */
#define MEM_RUNS(st) (8 * (st)->repeat)

/* ---- memory ------------------------------------------------------------------- */

int floors_memcpy(size_t bytes, int threads, int runs, double *min, double *median)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    double *ms = malloc((size_t)runs * sizeof *ms);
    int ok = src && dst && ms;
    if (ok) {
        memset(src, 1, bytes);
        memset(dst, 0, bytes);
        const int n = threads;
        for (int r = 0; r < runs; r++) {
            double t0 = cli_now_ms();
#pragma omp parallel num_threads(n)
            {
                const int t = omp_get_thread_num();
                size_t lo = bytes / (size_t)n * (size_t)t / 64 * 64;
                size_t hi = t + 1 == n ? bytes : bytes / (size_t)n * (size_t)(t + 1) / 64 * 64;
                memcpy(dst + lo, src + lo, hi - lo);
            }
            ms[r] = cli_now_ms() - t0;
            floors_pause();
        }
        cli_min_median(ms, runs, min, median);
    }
    free(src);
    free(dst);
    free(ms);
    return ok ? 0 : -1;
}

/* memcpy of the w x h f32 image. */
static int memcpy_floor(const floors_state *st, machine_floors *m)
{
    const size_t bytes = (size_t)st->w * (size_t)st->h * sizeof(float);
    if (!floors_memcpy(bytes, m->threads, MEM_RUNS(st), &m->memcpy_min, &m->memcpy_median))
        return CLI_EXIT_OK;
    cli_error("bench floors", "out of memory for two %dx%d f32 images", st->w, st->h);
    return CLI_EXIT_FAIL;
}

/* ---- FMA ---------------------------------------------------------------------- */

/* The widest unit the library's kernels use on this CPU under LUMEN_CPU_ISA / --no-simd. */
static floors_isa widest_isa(const lumen_context *ctx)
{
    const char *f = lumen_cpu_features(ctx);
    if (strstr(f, "avx512f")) return FLOORS_ISA_AVX512;
    if (strstr(f, "avx2")) return FLOORS_ISA_AVX2;
    return FLOORS_ISA_SSE;
}

/* ---- FFT ---------------------------------------------------------------------- */

static int smooth7(int n)
{
    static const int primes[] = {2, 3, 5, 7};
    for (int i = 0; i < 4; i++)
        while (n % primes[i] == 0)
            n /= primes[i];
    return n == 1;
}

/* Smallest even 2^a 3^b 5^c 7^d >= n: FFTW's fast radices (a real transform of an even
 * length halves into a complex one). */
static int fft_length(int n)
{
    if (n < 2) n = 2;
    n += n & 1;
    while (!smooth7(n))
        n += 2;
    return n;
}

/* Wisdom of the floors' plans (not the library's file: other thread counts and sizes). */
static int wisdom_path(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[3072];
    if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/lumen", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/lumen", home);
    else
        return 0;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return 0; /* the library makes it */
    return snprintf(buf, size, "%s/fftw-wisdom-f32-floors", dir) < (int)size;
}

typedef struct fft_pair {
    int nh, nw;
    double ms;
} fft_pair;

/* Min ms of `repeat` r2c + c2r pairs over nh x nw (one untimed pair first); < 0 on failure. */
static double time_fft_pair(int nh, int nw, int measure, int repeat)
{
    const size_t nr = (size_t)nh * (size_t)nw, nc = (size_t)nh * (size_t)(nw / 2 + 1);
    float *in = fftwf_alloc_real(nr), *out = fftwf_alloc_real(nr);
    fftwf_complex *freq = fftwf_alloc_complex(nc);
    double best = -1.0;
    fftwf_plan fwd = NULL, inv = NULL;
    if (in && out && freq) {
        unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
        fwd = fftwf_plan_dft_r2c_2d(nh, nw, in, freq, flags);
        inv = fftwf_plan_dft_c2r_2d(nh, nw, freq, out, flags);
    }
    if (fwd && inv) {
        uint64_t seed = 42;
        for (size_t i = 0; i < nr; i++)
            in[i] = cli_lcg_unit(&seed); /* MEASURE wrote over it */
        for (int r = 0; r <= repeat; r++) {
            double t0 = cli_now_ms();
            fftwf_execute(fwd);
            fftwf_execute(inv);
            double t = cli_now_ms() - t0;
            if (r > 0 && (best < 0 || t < best)) best = t;
        }
    }
    if (fwd) fftwf_destroy_plan(fwd);
    if (inv) fftwf_destroy_plan(inv);
    fftwf_free(in);
    fftwf_free(out);
    fftwf_free(freq);
    return best;
}

/* The pair over nh x nw, measured once per size in a run. */
static double fft_pair_ms(fft_pair *memo, int *nmemo, int nh, int nw, int measure, int repeat)
{
    for (int i = 0; i < *nmemo; i++)
        if (memo[i].nh == nh && memo[i].nw == nw) return memo[i].ms;
    double ms = time_fft_pair(nh, nw, measure, repeat);
    memo[(*nmemo)++] = (fft_pair){nh, nw, ms};
    return ms;
}

/* FFTW's threads: the OpenMP flavour, so the pair runs on the same pool as lumen's loops. */
static int fftw_threads_begin(int threads, int measure, char *wisdom, size_t size)
{
    int n = 1;
#ifdef LUMEN_FLOORS_FFTW_OMP
    if (fftwf_init_threads()) {
        fftwf_plan_with_nthreads(threads);
        n = threads;
    }
#else
    (void)threads;
#endif
    if (measure && wisdom_path(wisdom, size))
        fftwf_import_wisdom_from_filename(wisdom);
    else
        wisdom[0] = '\0';
    return n;
}

static void fftw_threads_end(const char *wisdom)
{
    if (wisdom[0]) fftwf_export_wisdom_to_filename(wisdom);
#ifdef LUMEN_FLOORS_FFTW_OMP
    fftwf_cleanup_threads();
#endif
}

/* ---- the cases ---------------------------------------------------------------- */

static void case_floor_of(const floors_state *st, const machine_floors *m, const floor_case *c,
                          fft_pair *memo, int *nmemo, case_floor *f)
{
    const double px = (double)st->w * st->h * c->batch;
    f->c = c;
    f->memory_ms = m->memcpy_min * c->passes * c->batch;
    f->fma_ms = c->flops_px * px / (m->gflops * 1e9) * 1e3;
    f->fft_ms = -1.0;
    if (c->ksize >= FFT_MIN_K) {
        f->fft_h = fft_length(st->h + c->ksize - 1);
        f->fft_w = fft_length(st->w + c->ksize - 1);
        double pair = fft_pair_ms(memo, nmemo, f->fft_h, f->fft_w,
                                  st->common.fft_planning == LUMEN_FFT_MEASURE, st->repeat);
        if (pair >= 0) f->fft_ms = pair * c->batch;
    }
    if (c->target == T_FFT && f->fft_ms >= 0) {
        f->floor_ms = f->fft_ms, f->bound = "fft";
    } else if (c->target == T_MEMORY || (c->target == T_NONE && f->memory_ms >= f->fma_ms)) {
        f->floor_ms = f->memory_ms, f->bound = "memory";
    } else {
        f->floor_ms = f->fma_ms, f->bound = "fma";
    }
}

/* ---- photo cases (issue 30) ----------------------------------------------------- */

typedef struct photo_floors {
    int w, h;
    double memcpy_min[2], memcpy_median[2]; /* [0] u8, [1] u16 */
} photo_floors;

static int photo_dt(lumen_dtype d) { return d == LUMEN_U16; }

static void photo_size(const floors_state *st, int *w, int *h)
{
    if (st->photo_w)
        *w = st->photo_w, *h = st->photo_h;
    else if (st->size_given)
        *w = st->w, *h = st->h;
    else
        *w = PHOTO_DEFAULT_W, *h = PHOTO_DEFAULT_H;
}

static int measure_photo(const floors_state *st, int threads, photo_floors *p)
{
    photo_size(st, &p->w, &p->h);
    for (int i = 0; i < 2; i++) {
        size_t bytes = photo_image_bytes(i ? LUMEN_U16 : LUMEN_U8, p->w, p->h);
        if (floors_memcpy(bytes, threads, MEM_RUNS(st), &p->memcpy_min[i], &p->memcpy_median[i])) {
            cli_error("bench floors", "out of memory for two %dx%d RGB images", p->w, p->h);
            return CLI_EXIT_FAIL;
        }
    }
    return CLI_EXIT_OK;
}

/* The memcpy of the image scaled to the case's bytes: a memcpy reads and writes the image. */
static double photo_floor_ms(const photo_floors *p, const photo_case *c)
{
    const double image = (double)photo_image_bytes(c->dtype, p->w, p->h);
    return p->memcpy_min[photo_dt(c->dtype)] * photo_traffic_bytes(c, p->w, p->h) / (2.0 * image);
}

/* ---- output ------------------------------------------------------------------- */

static const char *planning_name(const floors_state *st)
{
    return st->common.fft_planning == LUMEN_FFT_MEASURE ? "measure" : "estimate";
}

static double image_mb(const floors_state *st)
{
    return (double)st->w * st->h * 4 / 1e6;
}

static void print_photo_table(const photo_floors *p)
{
    printf("\nphoto cases: %dx%d RGB; memcpy of the u8 image (%.1f MB) min %.3f ms, of the u16 "
           "image (%.1f MB) min %.3f ms\n",
           p->w, p->h, (double)photo_image_bytes(LUMEN_U8, p->w, p->h) / 1e6, p->memcpy_min[0],
           (double)photo_image_bytes(LUMEN_U16, p->w, p->h) / 1e6, p->memcpy_min[1]);
    printf("%-28s  %-11s  %5s  %12s  %9s  %s\n", "case", "op", "k", "bytes r+w", "floor ms",
           "target");
    for (int i = 0; i < photo_ncases; i++) {
        const photo_case *c = &photo_cases[i];
        char k[16] = "-", target[24] = "-";
        if (photo_case_ksize(c)) snprintf(k, sizeof k, "%d", photo_case_ksize(c));
        if (c->floor_limit > 0) snprintf(target, sizeof target, "<= %.1fx", c->floor_limit);
        printf("%-28s  %-11s  %5s  %12.0f  %9.3f  %s\n", c->name, photo_op_name(c->op), k,
               photo_traffic_bytes(c, p->w, p->h), photo_floor_ms(p, c), target);
    }
}

static void print_photo_json(const photo_floors *p)
{
    printf(",\n  \"photo\": {\"width\": %d, \"height\": %d, \"memcpy\": {", p->w, p->h);
    for (int i = 0; i < 2; i++) {
        const double bytes = (double)photo_image_bytes(i ? LUMEN_U16 : LUMEN_U8, p->w, p->h);
        printf("%s\"%s\": {\"bytes\": %.0f, \"ms_min\": %.6f, \"ms_median\": %.6f, "
               "\"gb_s\": %.2f}",
               i ? ", " : "", i ? "u16" : "u8", bytes, p->memcpy_min[i], p->memcpy_median[i],
               2.0 * bytes / 1e6 / p->memcpy_min[i]);
    }
    fputs("},\n    \"cases\": [\n", stdout);
    for (int i = 0; i < photo_ncases; i++) {
        const photo_case *c = &photo_cases[i];
        printf("      {\"name\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", \"bytes\": %.0f, "
               "\"memcpy_bytes\": %.0f, \"floor_ms\": %.6f, \"bound\": \"memory\", \"target\": ",
               c->name, lumen_dtype_name(c->dtype), photo_op_name(c->op),
               photo_traffic_bytes(c, p->w, p->h), (double)photo_image_bytes(c->dtype, p->w, p->h),
               photo_floor_ms(p, c));
        if (c->floor_limit > 0)
            printf("%g}", c->floor_limit);
        else
            fputs("null}", stdout);
        fputs(i + 1 < photo_ncases ? ",\n" : "\n", stdout);
    }
    fputs("    ]}", stdout);
}

static void print_table(const floors_state *st, const machine_floors *m, const case_floor *f)
{
    printf("lumen %s bench floors: %dx%d f32, %d threads, best of %d runs (memcpy, fma: %d)\n",
           lumen_version(), st->w, st->h, m->threads, st->repeat, MEM_RUNS(st));
    printf("memory: memcpy of %.1f MB on %d threads: min %.3f ms, median %.3f ms (%.1f GB/s "
           "read+write)\n",
           image_mb(st), m->threads, m->memcpy_min, m->memcpy_median,
           2.0 * image_mb(st) / m->memcpy_min);
    printf("fma: %s on %d threads: %.1f GFLOP/s\n", floors_isa_name(m->isa), m->threads, m->gflops);
    printf("fft: FFTW r2c + c2r pair, planning %s, %d FFTW thread(s)\n\n", planning_name(st),
           m->fftw_threads);
    printf("%-20s  %-9s  %5s  %6s  %9s  %9s  %9s  %-11s  %9s  %-6s  %s\n", "case", "method", "k",
           "passes", "memory ms", "fma ms", "fft ms", "fft size", "floor ms", "bound", "target");
    for (int i = 0; i < NCASES; i++) {
        const case_floor *c = &f[i];
        char k[16] = "-", fft[16] = "-", size[24] = "-", target[24] = "-";
        if (c->c->ksize) snprintf(k, sizeof k, "%d", c->c->ksize);
        if (c->fft_ms >= 0) {
            snprintf(fft, sizeof fft, "%.2f", c->fft_ms);
            snprintf(size, sizeof size, "%dx%d", c->fft_w, c->fft_h);
        }
        if (c->c->limit > 0) snprintf(target, sizeof target, "<= %.1fx", c->c->limit);
        printf("%-20s  %-9s  %5s  %6d  %9.3f  %9.3f  %9s  %-11s  %9.3f  %-6s  %s\n", c->c->name,
               c->c->method, k, c->c->passes, c->memory_ms, c->fma_ms, fft, size, c->floor_ms,
               c->bound, target);
    }
}

static void print_json_case(const case_floor *c)
{
    fputs("    {\"name\": ", stdout);
    cli_json_string(stdout, c->c->name);
    fputs(", \"method\": ", stdout);
    cli_json_string(stdout, c->c->method);
    printf(", \"ksize\": ");
    if (c->c->ksize)
        printf("%d", c->c->ksize);
    else
        fputs("null", stdout);
    printf(", \"batch\": %d, \"passes\": %d, \"flops_per_pixel\": %g, \"memory_ms\": %.6f, "
           "\"fma_ms\": %.6f",
           c->c->batch, c->c->passes, c->c->flops_px, c->memory_ms, c->fma_ms);
    if (c->fft_ms >= 0)
        printf(", \"fft_ms\": %.6f, \"fft_size\": [%d, %d]", c->fft_ms, c->fft_w, c->fft_h);
    else
        fputs(", \"fft_ms\": null, \"fft_size\": null", stdout);
    printf(", \"floor_ms\": %.6f, \"bound\": \"%s\", \"target\": ", c->floor_ms, c->bound);
    if (c->c->limit > 0)
        printf("%g}", c->c->limit);
    else
        fputs("null}", stdout);
}

static void print_json(const floors_state *st, const machine_floors *m, const case_floor *f)
{
    printf("{\n  \"lumen\": \"%s\", \"width\": %d, \"height\": %d, \"threads\": %d, "
           "\"repeat\": %d,\n",
           lumen_version(), st->w, st->h, m->threads, st->repeat);
    printf("  \"memcpy\": {\"bytes\": %.0f, \"ms_min\": %.6f, \"ms_median\": %.6f, "
           "\"gb_s\": %.2f},\n",
           image_mb(st) * 1e6, m->memcpy_min, m->memcpy_median, 2.0 * image_mb(st) / m->memcpy_min);
    fputs("  \"fma\": {\"isa\": ", stdout);
    cli_json_string(stdout, floors_isa_name(m->isa));
    printf(", \"gflops\": %.2f},\n", m->gflops);
    printf("  \"fft\": {\"planning\": \"%s\", \"fftw_threads\": %d},\n", planning_name(st),
           m->fftw_threads);
    fputs("  \"cases\": [\n", stdout);
    for (int i = 0; i < NCASES; i++) {
        print_json_case(&f[i]);
        fputs(i + 1 < NCASES ? ",\n" : "\n", stdout);
    }
    fputs("  ]", stdout);
}

/* ---- driver ------------------------------------------------------------------- */

static int measure_all(const floors_state *st, lumen_context *ctx)
{
    machine_floors m = {0};
    m.threads = cli_common_threads(&st->common);
    m.isa = widest_isa(ctx);
    int rc = memcpy_floor(st, &m);
    if (rc) return rc;
    m.gflops = floors_fma_gflops(m.isa, m.threads, MEM_RUNS(st));
    char wisdom[3200];
    const int measure = st->common.fft_planning == LUMEN_FFT_MEASURE;
    m.fftw_threads = fftw_threads_begin(m.threads, measure, wisdom, sizeof wisdom);
    fft_pair memo[NCASES];
    int nmemo = 0;
    case_floor f[NCASES];
    for (int i = 0; i < NCASES; i++) {
        case_floor_of(st, &m, &cases[i], memo, &nmemo, &f[i]);
        if (st->common.verbose)
            fprintf(stderr, "%s: floor %.3f ms (%s)\n", cases[i].name, f[i].floor_ms, f[i].bound);
    }
    fftw_threads_end(wisdom);
    photo_floors p;
    if ((rc = measure_photo(st, m.threads, &p))) return rc;
    if (st->json) {
        print_json(st, &m, f);
        print_photo_json(&p);
        fputs("\n}\n", stdout);
    } else {
        print_table(st, &m, f);
        print_photo_table(&p);
    }
    return CLI_EXIT_OK;
}

int cmd_bench_floors(int argc, char **argv)
{
    const cli_command cmd = {"bench floors", flags, on_flag, NULL, 0, 0};
    floors_state st = {{0}, 0, 3000, 2000, 9, 0, 0, 0};
    int rc = cli_parse(&cmd, argc, argv, &st, NULL);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_FFT, examples);
    if (rc) return rc;
    lumen_context *ctx = NULL;
    if ((rc = cli_context_create(&st.common, &ctx))) return rc;
    rc = measure_all(&st, ctx);
    lumen_context_destroy(ctx);
    return rc;
}
