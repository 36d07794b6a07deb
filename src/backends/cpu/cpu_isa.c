/* What the CPU offers its kernels: CPUID and XGETBV, capped by $LUMEN_CPU_ISA. The core stores
 * the answer in each context (lumen_context.cpu_avx2/cpu_avx512) when it creates one. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* AVX2, FMA and F16C (the f16 row loads and stores): every AVX2 CPU has all three. */
static bool cpu_has_avx2_fma(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C)) return false;
    /* __builtin_cpu_supports checks the OS enables YMM state as well. */
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

/*
 * AVX-512 F, BW, DQ and VL (CPUID leaf 7) with the OS saving SSE, YMM, opmask and both ZMM
 * halves (XCR0 bits 1, 2, 5, 6, 7): without the XCR0 check a kernel may have the CPU but
 * fault (or lose registers) under an OS that does not enable the state.
 */
static bool cpu_has_avx512(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const unsigned need = bit_AVX512F | bit_AVX512BW | bit_AVX512DQ | bit_AVX512VL;
    if ((b & need) != need) return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0)); /* no -mxsave needed */
    (void)hi;
    const unsigned xcr0_need = (1u << 1) | (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7);
    return (lo & xcr0_need) == xcr0_need;
#else
    return false;
#endif
}

/* $LUMEN_CPU_ISA = generic | avx2 | avx512 caps the kernels a context uses (a CPU without
 * the named ISA still gets only what it has), so tests and benchmarks reach every kernel on
 * one machine. Read at each context's creation, so a test may change it between contexts. */
void lumen_cpu_detect_isa(bool *avx2, bool *avx512)
{
    *avx2 = cpu_has_avx2_fma();
    *avx512 = *avx2 && cpu_has_avx512();
    const char *cap = getenv("LUMEN_CPU_ISA");
    if (!cap || !*cap || !strcmp(cap, "avx512")) return;
    if (!strcmp(cap, "avx2")) {
        *avx512 = false;
    } else if (!strcmp(cap, "generic")) {
        *avx2 = *avx512 = false;
    } else {
        lumen_log(LUMEN_LOG_WARN, "LUMEN_CPU_ISA='%s' is not generic, avx2 or avx512; ignored",
                  cap);
    }
}
