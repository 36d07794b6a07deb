/*
 * A/B of the fast Gaussian in one process: lumen_cpu_gaussian_fast of a base build against
 * new_lumen_cpu_gaussian_fast, a second build's gaussian_fast*.o with their global symbols
 * renamed (bench/gaussian_fast_ab.sh builds it). Calls alternate (the order swapped every
 * round), so a busy host disturbs both alike; a memcpy of the 2000 x 3000 f32 image (split
 * between the threads) runs in each round for the floor. docs/gaussian-fast.md, issue 17.
 *
 *   gaussian_fast_ab THREADS ROUNDS CASE...     CASE = dtype:channels:sigma (f32:1:30, u8:3:8)
 *
 * Prints per case the min ms of each, new / base, the floor (2 x the min memcpy), each over
 * the floor, and whether the two outputs are the same bits. Channels > 1 are interleaved.
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
lumen_status new_lumen_cpu_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job);
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double memcpy_once(int threads, char *a, char *b, size_t n)
{
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        size_t lo = n * (size_t)t / (size_t)nt, hi = n * (size_t)(t + 1) / (size_t)nt;
        memcpy(b + lo, a + lo, hi - lo);
    }
    return now() - t0;
}
int main(int argc, char **argv)
{
    int threads = atoi(argv[1]), rounds = atoi(argv[2]);
    lumen_context *ctx;
    if (lumen_context_create(&ctx) || lumen_context_set_threads(ctx, threads)) return 1;
    const size_t nf = (size_t)H * W * 4;
    char *ma = malloc(nf), *mb = malloc(nf);
    memset(ma, 1, nf), memset(mb, 2, nf);
    double mc = 1e9;
    for (int i = 3; i < argc; i++) {
        char dt[8];
        int c;
        double sigma;
        if (sscanf(argv[i], "%7[a-z0-9]:%d:%lf", dt, &c, &sigma) != 3) return 2;
        lumen_dtype d = strcmp(dt, "u8") == 0 ? LUMEN_U8 : LUMEN_F32;
        size_t es = d == LUMEN_U8 ? 1 : 4, n = (size_t)H * W * (size_t)c * es;
        unsigned char *s = malloc(n), *o1 = malloc(n), *o2 = malloc(n);
        uint64_t st = 12345;
        for (size_t k = 0; k < n / es; k++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            if (d == LUMEN_U8)
                s[k] = (unsigned char)(st >> 56);
            else
                ((float *)s)[k] = (float)((st >> 40) * 0x1p-24);
        }
        memset(o1, 0, n), memset(o2, 0, n);
        lumen_image src = lumen_image_nhwc(s, d, 1, H, W, c);
        lumen_image d1 = lumen_image_nhwc(o1, d, 1, H, W, c),
                    d2 = lumen_image_nhwc(o2, d, 1, H, W, c);
        lumen_gauss_job j1 = {&src, &d1, sigma, sigma, LUMEN_BORDER_REFLECT101, 0.0f};
        lumen_gauss_job j2 = {&src, &d2, sigma, sigma, LUMEN_BORDER_REFLECT101, 0.0f};
        double b1 = 1e9, b2 = 1e9;
        for (int r = 0; r <= rounds; r++) {
            double da, db, t0;
            if (r % 2) {
                t0 = now();
                if (lumen_cpu_gaussian_fast(ctx, &j1)) return 1;
                da = now() - t0, t0 = now();
                if (new_lumen_cpu_gaussian_fast(ctx, &j2)) return 1;
                db = now() - t0;
            } else {
                t0 = now();
                if (new_lumen_cpu_gaussian_fast(ctx, &j2)) return 1;
                db = now() - t0, t0 = now();
                if (lumen_cpu_gaussian_fast(ctx, &j1)) return 1;
                da = now() - t0;
            }
            double m = memcpy_once(threads, ma, mb, nf);
            if (r > 0) {
                b1 = da < b1 ? da : b1, b2 = db < b2 ? db : b2;
                mc = m < mc ? m : mc;
            }
        }
        printf("%-10s base %7.3f new %7.3f new/base %.3f | floor(2x memcpy %.3f) base %.2f new "
               "%.2f same %d\n",
               argv[i], 1e3 * b1, 1e3 * b2, b2 / b1, 1e3 * mc, b1 / (2 * mc), b2 / (2 * mc),
               memcmp(o1, o2, n) == 0);
        free(s), free(o1), free(o2);
    }
    return 0;
}
