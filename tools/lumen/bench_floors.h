/* `lumen bench floors`: the machine's limits the benchmark cases are judged against. */
#ifndef LUMEN_CLI_BENCH_FLOORS_H
#define LUMEN_CLI_BENCH_FLOORS_H

#include <stddef.h>

/* The vector units the FMA microbenchmark can run on, widest last. */
typedef enum floors_isa { FLOORS_ISA_SSE, FLOORS_ISA_AVX2, FLOORS_ISA_AVX512 } floors_isa;

/* "sse (mul+add)", "avx2 (fma)", "avx512 (fma)". */
const char *floors_isa_name(floors_isa isa);

/* Peak single-precision GFLOP/s of `threads` threads each running independent multiply-add
 * chains on isa's registers (an FMA counts 2 flops), all at once: the sum of each thread's best
 * of `reps` runs. The CPU must have isa (the caller checks with the library's detection, which
 * honours LUMEN_CPU_ISA). */
double floors_fma_gflops(floors_isa isa, int threads, int reps);

/* memcpy of `bytes` split between `threads` OpenMP threads (each its contiguous share, 64-byte
 * aligned boundaries), both buffers touched first: min and median ms of `runs` runs,
 * FLOORS_PAUSE_NS apart. 0, or -1 when out of memory. */
int floors_memcpy(size_t bytes, int threads, int runs, double *min, double *median);

/* Sleeps FLOORS_PAUSE_NS between two runs of a short measurement. */
#define FLOORS_PAUSE_NS 2000000L
void floors_pause(void);

#endif
