/*
 * Error and speed of the fast Gaussian (lumen_cpu_gaussian_fast) against the
 * exact blur, on a 2000 x 3000 f32 image; numbers go to docs/gaussian-fast.md.
 *
 *   gcc -O2 -std=c17 -fopenmp -Iinclude -Isrc -Isrc/core bench/gaussian_fast_error.c \
 *       BUILD/liblumen.a -lpng -ljpeg -ltiff -lm -o /tmp/gaussian_fast_error
 *   /tmp/gaussian_fast_error [threads] [all]
 *
 * For each sigma in {1, 3, 10, 30, 50}: max and mean |fast - exact| / range on
 * uniform random data in [0, 1) and on a vertical step edge (0 | 1), border
 * reflect (with "all": every border mode), and the time of the fast path
 * (min and median of 5 warm runs). The exact result is lumen_gaussian_blur with
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

static void run_case(lumen_context *ctx, const float *data, float *exact, float *fast, double sigma,
                     lumen_border border, const char *data_name, int timed)
{
    lumen_image src = lumen_image_nchw((void *)data, LUMEN_F32, 1, 1, H, W);
    lumen_image ex = lumen_image_nchw(exact, LUMEN_F32, 1, 1, H, W);
    lumen_image fa = lumen_image_nchw(fast, LUMEN_F32, 1, 1, H, W);
    int k = lumen_gaussian_ksize(sigma, LUMEN_F32);
    check(lumen_gaussian_blur(ctx, &src, &ex, k, k, sigma, sigma, border, 0.5f, NULL), "exact");
    lumen_gauss_job job = {&src, &fa, sigma, sigma, border, 0.5f};
    double t[RUNS];
    for (int r = 0; r < (timed ? RUNS + 1 : 1); r++) { /* the first run is the cold one */
        double t0 = now();
        check(lumen_cpu_gaussian_fast(ctx, &job), "fast");
        if (r > 0) t[r - 1] = now() - t0;
    }
    double max, mean;
    errors(fast, exact, (size_t)H * W, &max, &mean); /* both data sets span exactly [0, 1] */
    printf("| %5.1f | %-10s | %-6s | %.2e | %.2e |", sigma, lumen_border_name(border), data_name,
           max, mean);
    if (timed) {
        qsort(t, RUNS, sizeof(double), cmp_double);
        printf(" %6.2f | %6.2f |", 1e3 * t[0], 1e3 * t[RUNS / 2]);
    }
    printf("\n");
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
    printf("| sigma | border     | data   | max err  | mean err | min ms | med ms |\n");
    printf("|------:|------------|--------|---------:|---------:|-------:|-------:|\n");
    const double sigmas[] = {1, 3, 10, 30, 50};
    const lumen_border borders[] = {LUMEN_BORDER_REFLECT, LUMEN_BORDER_CONSTANT,
                                    LUMEN_BORDER_REPLICATE, LUMEN_BORDER_REFLECT101,
                                    LUMEN_BORDER_WRAP};
    for (int i = 0; i < 5; i++)
        for (int b = 0; b < (all ? 5 : 1); b++) {
            run_case(ctx, rnd, exact, fast, sigmas[i], borders[b], "random", b == 0);
            run_case(ctx, edge, exact, fast, sigmas[i], borders[b], "step", 0);
        }
    free(rnd), free(edge), free(exact), free(fast);
    lumen_context_destroy(ctx);
    return 0;
}
