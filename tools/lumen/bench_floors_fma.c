/* The FMA floor's microbenchmark: the machine's peak f32 multiply-add rate on its widest vector
 * unit. Each kernel is compiled for its ISA with a target attribute (the CLI's other files keep
 * the baseline flags); which one runs is decided by the caller from the library's detection. */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c17 */
#include "bench_floors.h"

#include <omp.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FLOORS_X86 1
#endif

/* Independent chains per thread: more than latency x pipes (4 x 2 on current x86 cores), so
 * the loop is bound by FMA throughput, not by one chain's latency. */
#define CHAINS 12
/* Loop trips per thread and run: 12 x 2^21 vector FMAs, a few ms per run. */
#define TRIPS (1L << 21)

/* Every chain c = c * M + A converges to A / (1 - M) = 1: no overflow, no denormals. */
#define M_COEF 0.9999999f
#define A_COEF 1e-7f

/* Distinct starting values: chains that start equal would be merged into one by the compiler. */
#define INIT12(set1)                                                                               \
    c0 = set1(0.0f), c1 = set1(0.01f), c2 = set1(0.02f), c3 = set1(0.03f), c4 = set1(0.04f),       \
    c5 = set1(0.05f), c6 = set1(0.06f), c7 = set1(0.07f), c8 = set1(0.08f), c9 = set1(0.09f),      \
    c10 = set1(0.10f), c11 = set1(0.11f)

#define STEP12(op)                                                                                 \
    c0 = op(c0), c1 = op(c1), c2 = op(c2), c3 = op(c3), c4 = op(c4), c5 = op(c5), c6 = op(c6),     \
    c7 = op(c7), c8 = op(c8), c9 = op(c9), c10 = op(c10), c11 = op(c11)

#ifdef FLOORS_X86
__attribute__((target("avx512f"))) static float chains_avx512(long trips)
{
    const __m512 m = _mm512_set1_ps(M_COEF), a = _mm512_set1_ps(A_COEF);
    __m512 INIT12(_mm512_set1_ps);
#define FMA512(c) _mm512_fmadd_ps(c, m, a)
    for (long i = 0; i < trips; i++)
        STEP12(FMA512);
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                             _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float chains_avx2(long trips)
{
    const __m256 m = _mm256_set1_ps(M_COEF), a = _mm256_set1_ps(A_COEF);
    __m256 INIT12(_mm256_set1_ps);
#define FMA256(c) _mm256_fmadd_ps(c, m, a)
    for (long i = 0; i < trips; i++)
        STEP12(FMA256);
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}
#endif

/* The baseline's unit (SSE2 on x86-64: no FMA, a multiply and an add), via GCC's vectors. */
typedef float v4f __attribute__((vector_size(16)));

static v4f v4f_set1(float v)
{
    return (v4f){v, v, v, v};
}

static float chains_sse(long trips)
{
    const v4f m = {M_COEF, M_COEF, M_COEF, M_COEF}, a = {A_COEF, A_COEF, A_COEF, A_COEF};
    v4f INIT12(v4f_set1);
#define MULADD(c) ((c)*m + a)
    for (long i = 0; i < trips; i++)
        STEP12(MULADD);
    v4f s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
    return s[0] + s[1] + s[2] + s[3];
}

/* The chains' results are stored here, so none of them is optimised away. */
static volatile float floors_sink;

static int lanes_of(floors_isa isa)
{
    return isa == FLOORS_ISA_AVX512 ? 16 : isa == FLOORS_ISA_AVX2 ? 8 : 4;
}

static float run_chains(floors_isa isa, long trips)
{
#ifdef FLOORS_X86
    if (isa == FLOORS_ISA_AVX512) return chains_avx512(trips);
    if (isa == FLOORS_ISA_AVX2) return chains_avx2(trips);
#endif
    return chains_sse(trips);
}

const char *floors_isa_name(floors_isa isa)
{
    return isa == FLOORS_ISA_AVX512 ? "avx512 (fma)"
           : isa == FLOORS_ISA_AVX2 ? "avx2 (fma)"
                                    : "sse (mul+add)";
}

void floors_pause(void)
{
    struct timespec ts = {0, FLOORS_PAUSE_NS};
    nanosleep(&ts, NULL);
}

/*
 * Each thread times its own loop while all of them run, and keeps its best run; the peak is the
 * sum of those bests. On a shared host a run in which no thread was disturbed may never come,
 * while each thread's best run still saw the other cores busy (their all-core clock).
 */
double floors_fma_gflops(floors_isa isa, int threads, int reps)
{
#ifndef FLOORS_X86
    isa = FLOORS_ISA_SSE;
#endif
    const double flops = 2.0 * CHAINS * lanes_of(isa) * (double)TRIPS; /* per thread and run */
    double *best = calloc((size_t)threads, sizeof *best);
    if (!best) return 0.0;
    float total = 0.0f;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(threads)
        {
            const int t = omp_get_thread_num();
#pragma omp barrier
            double t0 = omp_get_wtime();
            float v = run_chains(isa, TRIPS);
            double rate = flops / (omp_get_wtime() - t0);
            if (rate > best[t]) best[t] = rate;
#pragma omp atomic
            total += v;
        }
        floors_sink = total;
        floors_pause();
    }
    double sum = 0.0;
    for (int t = 0; t < threads; t++)
        sum += best[t];
    free(best);
    return sum * 1e-9;
}
