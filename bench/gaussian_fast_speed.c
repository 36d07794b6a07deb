/*
 * Speed of the fast Gaussian (lumen_cpu_gaussian_fast) on 2000 x 3000 images against the
 * memory floor (memcpy of a 2000 x 3000 f32 image, split between the threads), for A/B runs:
 * build it against two builds and alternate the binaries (docs/gaussian-fast.md, "Speed").
 *
 *   gcc -O2 -std=c17 -fopenmp -Iinclude -Isrc -Isrc/core bench/gaussian_fast_speed.c \
 *       BUILD/liblumen.a -lfftw3f_threads -lfftw3f -lfftw3f_omp -lpng -ljpeg -ltiff -lm -o BIN
 *   BIN THREADS REPS CASE...      CASE = dtype:channels:sigma, e.g. f32:1:30 u8:3:8
 *
 * Prints "memcpy MIN_MS" then "CASE MIN_MS" per case (minimum of REPS warm calls; with GF_CPU
 * set also "CASE-cpu MIN_MS", the process's CPU time, which a busy host disturbs less); channels
 * > 1 are interleaved (nhwc) in src and dst.
 */
#include "backends/cpu/gaussian_fast.h"

#include <lumen.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define H 2000
#define W 3000

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static double memcpy_ms(int threads, int reps)
{
    const size_t n = (size_t)H * W * sizeof(float);
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n), memset(b, 2, n);
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = n * (size_t)t / (size_t)nt, hi = n * (size_t)(t + 1) / (size_t)nt;
            memcpy(b + lo, a + lo, hi - lo);
        }
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    free(a), free(b);
    return 1e3 * best;
}

int main(int argc, char **argv)
{
    if (argc < 4) return 2;
    int threads = atoi(argv[1]), reps = atoi(argv[2]);
    lumen_context *ctx;
    if (lumen_context_create(&ctx) || lumen_context_set_threads(ctx, threads)) return 1;
    printf("memcpy %.3f\n", memcpy_ms(threads, reps));
    for (int i = 3; i < argc; i++) {
        char dt[8];
        int c;
        double sigma;
        if (sscanf(argv[i], "%7[a-z0-9]:%d:%lf", dt, &c, &sigma) != 3) return 2;
        lumen_dtype d = strcmp(dt, "u8") == 0 ? LUMEN_U8 : LUMEN_F32;
        size_t es = d == LUMEN_U8 ? 1 : 4, n = (size_t)H * W * (size_t)c * es;
        unsigned char *s = malloc(n), *o = malloc(n);
        uint64_t st = 12345;
        for (size_t k = 0; k < n / es; k++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            if (d == LUMEN_U8)
                s[k] = (unsigned char)(st >> 56);
            else
                ((float *)s)[k] = (float)((st >> 40) * 0x1p-24);
        }
        memset(o, 0, n);
        lumen_image src = lumen_image_nhwc(s, d, 1, H, W, c);
        lumen_image dst = lumen_image_nhwc(o, d, 1, H, W, c);
        lumen_gauss_job job = {&src, &dst, sigma, sigma, LUMEN_BORDER_REFLECT101, 0.0f};
        double best = 1e9, best_cpu = 1e9;
        for (int r = 0; r <= reps; r++) {
            double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            if (lumen_cpu_gaussian_fast(ctx, &job)) return 1;
            double t = now() - t0, c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (r > 0 && t < best) best = t;
            if (r > 0 && c < best_cpu) best_cpu = c;
        }
        printf("%s %.3f\n", argv[i], 1e3 * best);
        if (getenv("GF_CPU")) printf("%s-cpu %.3f\n", argv[i], 1e3 * best_cpu);
        free(s), free(o);
    }
    lumen_context_destroy(ctx);
    return 0;
}
