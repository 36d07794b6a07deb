/*
 * Error and speed of the fast Gaussian (lumen_cpu_gaussian_fast) against the
 * exact blur, on a 2000 x 3000 f32 image; numbers go to docs/gaussian-fast.md.
 *
 *   cmake -S . -B BUILD -G Ninja && cmake --build BUILD
 *   gcc -O2 -std=c17 -fopenmp -Iinclude -Isrc -Isrc/core bench/gaussian_fast_error.c \
 *       BUILD/liblumen.a -lfftw3f_threads -lfftw3f -lpng -ljpeg -ltiff -lm \
 *       -o /tmp/gaussian_fast_error
 *   /tmp/gaussian_fast_error [threads (2)] [all]
 *
 * For each sigma in {1, 3, 10, 30, 50}: the time of the fast path (border
 * reflect, min and median of 5 warm runs after a cold one), and max and mean
 * |fast - exact| / range on uniform random data in [0, 1) and on a vertical
 * step edge (0 | 1), border reflect (with "all": the worst over every border
 * mode, constant value 0.5). The exact result is lumen_gaussian_blur with
 * ksize round(8 sigma + 1) | 1 on the SIMD path, exact up to f32 rounding.
 */
#include "backends/cpu/gaussian_fast.h"

#include <lumen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define H 2000
#define W 3000
#define RUNS 5

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check(lumen_status s, const char *what)
{
    if (s == LUMEN_OK) return;
    fprintf(stderr, "%s: %s\n", what, lumen_last_error());
    exit(1);
}

/* Max and mean |a - b| over n values. */
static void errors(const float *a, const float *b, size_t n, double *max, double *mean)
{
    double m = 0.0, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN counts as the worst */
        sum += d;
    }
    *max = m, *mean = sum / (double)n;
}

static void fill(float *img, int step_edge)
{
    uint64_t s = 12345;
    for (size_t i = 0; i < (size_t)H * W; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        img[i] = step_edge ? (float)(i % W >= W / 2) : (float)((s >> 40) * 0x1p-24);
    }
}

/* Min and median of RUNS warm runs of the fast path (after one cold run), in ms. */
static void time_fast(lumen_context *ctx, const float *data, float *fast, double sigma,
                      double *min_ms, double *med_ms)
{
    lumen_image src = lumen_image_nchw((void *)data, LUMEN_F32, 1, 1, H, W);
    lumen_image fa = lumen_image_nchw(fast, LUMEN_F32, 1, 1, H, W);
    lumen_gauss_job job = {&src, &fa, sigma, sigma, LUMEN_BORDER_REFLECT, 0.0f};
    double t[RUNS];
    for (int r = 0; r <= RUNS; r++) {
        double t0 = now();
        check(lumen_cpu_gaussian_fast(ctx, &job), "fast");
        if (r > 0) t[r - 1] = now() - t0;
    }
    qsort(t, RUNS, sizeof(double), cmp_double);
    *min_ms = 1e3 * t[0], *med_ms = 1e3 * t[RUNS / 2];
}

/* Max and mean |fast - exact| / range (both data sets span exactly [0, 1]). */
static void error_case(lumen_context *ctx, const float *data, float *exact, float *fast,
                       double sigma, lumen_border border, double *max, double *mean)
{
    lumen_image src = lumen_image_nchw((void *)data, LUMEN_F32, 1, 1, H, W);
    lumen_image ex = lumen_image_nchw(exact, LUMEN_F32, 1, 1, H, W);
    lumen_image fa = lumen_image_nchw(fast, LUMEN_F32, 1, 1, H, W);
    int k = lumen_gaussian_ksize(sigma, LUMEN_F32);
    check(lumen_gaussian_blur(ctx, &src, &ex, k, k, sigma, sigma, border, 0.5f, NULL), "exact");
    lumen_gauss_job job = {&src, &fa, sigma, sigma, border, 0.5f};
    check(lumen_cpu_gaussian_fast(ctx, &job), "fast");
    errors(fast, exact, (size_t)H * W, max, mean);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int all = argc > 2 && strcmp(argv[2], "all") == 0;
    lumen_context *ctx;
    check(lumen_context_create(&ctx), "context");
    check(lumen_context_set_threads(ctx, threads), "threads");
    float *rnd = malloc(sizeof(float) * H * W), *edge = malloc(sizeof(float) * H * W);
    float *exact = malloc(sizeof(float) * H * W), *fast = malloc(sizeof(float) * H * W);
    if (!rnd || !edge || !exact || !fast) return 1;
    fill(rnd, 0), fill(edge, 1);
    printf("%d x %d f32, %d threads, isa %s; error = |fast - exact| / range\n\n", H, W, threads,
           lumen_cpu_features(ctx));
    const double sigmas[] = {1, 3, 10, 30, 50};
    const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                    LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                    LUMEN_BORDER_WRAP};
    /* Timings first, back to back, so a busy machine disturbs them less. */
    double tmin[5], tmed[5];
    for (int i = 0; i < 5; i++) time_fast(ctx, rnd, fast, sigmas[i], &tmin[i], &tmed[i]);
    printf("| sigma | min ms | median ms | random: max err | mean err "
           "| step: max err | mean err |\n"
           "|------:|-------:|----------:|----------------:|---------:"
           "|--------------:|---------:|\n");
    for (int i = 0; i < 5; i++) {
        double rmax = 0, rmean = 0, smax = 0, smean = 0;
        for (int b = 0; b < (all ? 5 : 1); b++) { /* the worst over the borders */
            double mx, mn;
            error_case(ctx, rnd, exact, fast, sigmas[i], borders[b], &mx, &mn);
            rmax = mx > rmax ? mx : rmax, rmean = mn > rmean ? mn : rmean;
            error_case(ctx, edge, exact, fast, sigmas[i], borders[b], &mx, &mn);
            smax = mx > smax ? mx : smax, smean = mn > smean ? mn : smean;
        }
        printf("| %5.0f | %6.2f | %9.2f | %15.2e | %8.2e | %13.2e | %8.2e |\n", sigmas[i], tmin[i],
               tmed[i], rmax, rmean, smax, smean);
    }
    free(rnd), free(edge), free(exact), free(fast);
    lumen_context_destroy(ctx);
    return 0;
}
