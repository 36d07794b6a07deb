/*
 * The fast Gaussian's recursion alone (docs/gaussian-fast.md, issue 17): one axis of
 * lumen_gf_kernels_avx512.iir over m lanes of n samples (σ 30, reflect101 pads), the data in
 * cache, no transposes and no feed. Prints the min time per pixel (both directions) over the
 * repeats (wall clock: a thread-CPU clock costs microseconds a call in this guest): m = 16 is the
 * row pass's shape (16 rows as the lanes of one vector), m = 128 a column strip's.
 *
 *   gcc -O2 -std=c17 -fopenmp -Iinclude -Isrc -Isrc/core bench/gaussian_fast_kernel.c \
 *       build/liblumen.a -lfftw3f_omp -lfftw3f_threads -lfftw3f -lpng -ljpeg -ltiff -lm \
 *       -o /tmp/gaussian_fast_kernel
 *   nice -n -15 /tmp/gaussian_fast_kernel 3000 16 300    # N M REPEATS
 */
#include "backends/cpu/gaussian_fast_kernels.h"
#include "gaussian_fast_coeffs.h"
#include "semantics.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 4) return 2;
    const int64_t n = atoll(argv[1]), m = atoll(argv[2]);
    const int reps = atoi(argv[3]);
    lumen_gf_axis_design d;
    lumen_gf_design_axis(30.0, n, LUMEN_BORDER_REFLECT101, &d);
    const int64_t len = n + 2 * d.pad;
    /* 64-byte aligned, as gaussian_fast.c's scratch: a misaligned lane row spans two lines. */
    const size_t bytes = (sizeof(float) * (size_t)(n * m) + 63) / 64 * 64;
    float *in = aligned_alloc(64, bytes), *y = aligned_alloc(64, bytes);
    float *s = aligned_alloc(64, (sizeof(float) * (size_t)(LUMEN_GF_STATE * m) + 63) / 64 * 64);
    const float **x = malloc(sizeof(*x) * (size_t)len);
    if (!in || !y || !s || !x) return 1;
    for (int64_t i = 0; i < n * m; i++)
        in[i] = (float)(i % 97) / 97.0f;
    for (int64_t i = 0; i < len; i++)
        x[i] = in + lumen_border_index(i - d.pad, n, LUMEN_BORDER_REFLECT101) * m;
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        lumen_gf_kernels_avx512.iir(&d.iir, x, 0, d.pad, n, m, y, m, NULL, s, NULL);
        const double t = now() - t0;
        best = t < best ? t : best;
    }
    printf("n %lld m %lld pad %lld: %.4f ms, %.3f ns per pixel\n", (long long)n, (long long)m,
           (long long)d.pad, 1e3 * best, 1e9 * best / (double)(n * m));
    free(in), free(y), free(s), free(x);
    return 0;
}
