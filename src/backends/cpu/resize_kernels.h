/*
 * The row kernels of the CPU resize (resize.c), written once in portable C with GCC vector
 * types and compiled three times: resize_generic.c (the baseline ISA), resize_avx2.c and
 * resize_avx512.c (the compiler widens the loops). Each file defines RESIZE_NAME(x) and
 * includes this header. Pixels are read and written through semantics.h's lumen_load_px and
 * lumen_store_px with a constant dtype, so that a new storage type is one more case there.
 */
#include "resize_cpu.h"

#include <math.h>
#include <string.h>

/* a * b + c, fused where the ISA has it (the build's ISO C contracts nothing by itself). */
#if defined(__FMA__)
#define RESIZE_FMA(a, b, c) fmaf(a, b, c)
#else
#define RESIZE_FMA(a, b, c) ((a) * (b) + (c))
#endif

typedef float resize_v4f __attribute__((vector_size(16), aligned(4)));

/* n elements of dtype t at src (contiguous) as f32. */
static inline __attribute__((always_inline)) void load_row_t(const void *src, lumen_dtype t,
                                                             int64_t n, float *out)
{
    const size_t es = lumen_dtype_bytes(t);
    for (int64_t i = 0; i < n; i++)
        out[i] = lumen_load_px((const char *)src + i * (int64_t)es, t);
}

void RESIZE_NAME(load_row)(const void *src, lumen_dtype t, int64_t n, float *out)
{
    switch (t) {
    case LUMEN_U8: load_row_t(src, LUMEN_U8, n, out); break;
    case LUMEN_U16: load_row_t(src, LUMEN_U16, n, out); break;
    case LUMEN_F32: memcpy(out, src, (size_t)n * sizeof(float)); break;
    }
}

static inline __attribute__((always_inline)) void store_row_t(const float *v, int64_t n,
                                                              lumen_dtype t, void *dst)
{
    const size_t es = lumen_dtype_bytes(t);
    for (int64_t i = 0; i < n; i++)
        lumen_store_px((char *)dst + i * (int64_t)es, t, v[i]);
}

void RESIZE_NAME(store_row)(const float *v, int64_t n, lumen_dtype t, void *dst)
{
    switch (t) {
    case LUMEN_U8: store_row_t(v, n, LUMEN_U8, dst); break;
    case LUMEN_U16: store_row_t(v, n, LUMEN_U16, dst); break;
    case LUMEN_F32: memcpy(dst, v, (size_t)n * sizeof(float)); break;
    }
}

/* One channel: a dot product of `taps` weights per output pixel. */
static void hpass_c1(const float *in, const lumen_resize_axis *x, float *out)
{
    const int K = x->taps;
    for (int64_t o = 0; o < x->out; o++) {
        const float *s = in + x->first[o], *w = x->weights + o * K;
        float a = 0;
        for (int k = 0; k < K; k++)
            a += w[k] * s[k];
        out[o] = a;
    }
}

/* Three or four channels: a pixel is one 4-lane vector (three channels read one float past
 * the pixel, and write one that the next pixel overwrites: the buffers carry 4 floats of
 * padding). */
static inline __attribute__((always_inline)) void hpass_c34(const float *in, int C,
                                                            const lumen_resize_axis *x, float *out)
{
    const int K = x->taps;
    for (int64_t o = 0; o < x->out; o++) {
        const float *s = in + (int64_t)x->first[o] * C, *w = x->weights + o * K;
        resize_v4f a = {0, 0, 0, 0};
        for (int k = 0; k < K; k++) {
            resize_v4f p;
            memcpy(&p, s + k * C, sizeof p);
            a += w[k] * p;
        }
        memcpy(out + o * C, &a, sizeof a);
    }
}

/* Any channel count: C accumulators per output pixel. */
static void hpass_cn(const float *in, int C, const lumen_resize_axis *x, float *out)
{
    const int K = x->taps;
    for (int64_t o = 0; o < x->out; o++) {
        const float *s = in + (int64_t)x->first[o] * C, *w = x->weights + o * K;
        for (int c = 0; c < C; c++) {
            float a = 0;
            for (int k = 0; k < K; k++)
                a += w[k] * s[k * C + c];
            out[o * C + c] = a;
        }
    }
}

void RESIZE_NAME(hpass)(const float *in, int C, const lumen_resize_axis *x, float *out)
{
    switch (C) {
    case 1: hpass_c1(in, x, out); break;
    case 3: hpass_c34(in, 3, x, out); break;
    case 4: hpass_c34(in, 4, x, out); break;
    default: hpass_cn(in, C, x, out); break;
    }
}

/* acc[i] = sum_k w[k] * rows[k][i], in blocks that stay in L1. */
void RESIZE_NAME(vpass)(const float *const *rows, const float *w, int K, int64_t n, float *acc)
{
    for (int64_t i0 = 0; i0 < n; i0 += 2048) {
        const int64_t m = n - i0 < 2048 ? n - i0 : 2048;
        float *restrict a = acc + i0;
        const float *restrict r0 = rows[0] + i0;
        const float w0 = w[0];
        for (int64_t i = 0; i < m; i++)
            a[i] = w0 * r0[i];
        for (int k = 1; k < K; k++) {
            const float *restrict r = rows[k] + i0;
            const float wk = w[k];
            for (int64_t i = 0; i < m; i++)
                a[i] = RESIZE_FMA(wk, r[i], a[i]);
        }
    }
}
