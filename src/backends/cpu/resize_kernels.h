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
#if defined(__SSE4_1__)
#include <immintrin.h>
#endif

/* a * b + c, fused where the ISA has it (the build's ISO C contracts nothing by itself). */
#if defined(__FMA__)
#define RESIZE_FMA(a, b, c) fmaf(a, b, c)
#else
#define RESIZE_FMA(a, b, c) ((a) * (b) + (c))
#endif

typedef float resize_v4f __attribute__((vector_size(16), aligned(4)));

#define RESIZE_INLINE static inline __attribute__((always_inline))

/* n elements of dtype t at src (contiguous) as f32. */
RESIZE_INLINE void load_row_t(const void *src, lumen_dtype t, int64_t n, float *out)
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
    default: load_row_t(src, t, n, out); break;
    }
}

/* lumen_sat_u8 / lumen_sat_u16 in a form the compiler vectorises: NaN and negatives to 0,
 * saturated, rounded to nearest with ties to even (rintf in the default rounding mode, as
 * lrintf there). Equal to lumen_store_px for every float. */
RESIZE_INLINE void store_int_t(const float *v, int64_t n, float hi, int u16, void *dst)
{
    for (int64_t i = 0; i < n; i++) {
        float x = v[i] > 0.0f ? v[i] : 0.0f;
        x = x < hi ? x : hi;
        const int32_t r = (int32_t)__builtin_rintf(x);
        if (u16)
            ((uint16_t *)dst)[i] = (uint16_t)r;
        else
            ((uint8_t *)dst)[i] = (uint8_t)r;
    }
}

/* lumen_f32_to_f16 (semantics.h: the same bits as F16C's conversion, rounding to nearest
 * even), 16 or 8 at a time where the ISA has F16C. */
RESIZE_INLINE void store_f16(const float *v, int64_t n, void *dst)
{
    uint16_t *d = dst;
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(
            (__m256i *)(d + i),
            _mm512_cvtps_ph(_mm512_loadu_ps(v + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(
            (__m128i *)(d + i),
            _mm256_cvtps_ph(_mm256_loadu_ps(v + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; i++)
        d[i] = lumen_f32_to_f16(v[i]);
}

/* lumen_f32_to_bf16 without branches, so that the compiler vectorises it. */
RESIZE_INLINE void store_bf16(const float *v, int64_t n, void *dst)
{
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, v + i, sizeof u);
        const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x40u;
        d[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
    }
}

void RESIZE_NAME(store_row)(const float *v, int64_t n, lumen_dtype t, void *dst)
{
    switch (t) {
    case LUMEN_U8: store_int_t(v, n, 255.0f, 0, dst); break;
    case LUMEN_U16: store_int_t(v, n, 65535.0f, 1, dst); break;
    case LUMEN_F32: memcpy(dst, v, (size_t)n * sizeof(float)); break;
    case LUMEN_F16: store_f16(v, n, dst); break;
    case LUMEN_BF16: store_bf16(v, n, dst); break;
    default: /* any other storage type, through the shared rule */
        for (int64_t i = 0; i < n; i++)
            lumen_store_px((char *)dst + i * (int64_t)lumen_dtype_bytes(t), t, v[i]);
        break;
    }
}

/* One channel: a dot product of K weights per output pixel, reading src of dtype t. */
RESIZE_INLINE void hpass_c1(const void *in, lumen_dtype t, const lumen_resize_axis *x, int K,
                            float *out)
{
    const size_t es = lumen_dtype_bytes(t);
    for (int64_t o = 0; o < x->out; o++) {
        const char *s = (const char *)in + (int64_t)x->first[o] * (int64_t)es;
        const float *w = x->weights + o * K;
        float a = 0;
        for (int k = 0; k < K; k++)
            a += w[k] * lumen_load_px(s + k * (int64_t)es, t);
        out[o] = a;
    }
}

typedef uint8_t resize_v4u8 __attribute__((vector_size(4), aligned(1)));
typedef uint16_t resize_v4u16 __attribute__((vector_size(8), aligned(2)));

/* Four consecutive elements of dtype t at p as one vector (PMOVZX where the ISA has it: the
 * compiler's own conversion of a byte vector goes lane by lane). */
RESIZE_INLINE resize_v4f load4(const char *p, lumen_dtype t)
{
    resize_v4f v;
#if defined(__SSE4_1__)
    if (t == LUMEN_U8 || t == LUMEN_U16) {
        int32_t u32;
        int64_t u64;
        __m128i i;
        if (t == LUMEN_U8) {
            memcpy(&u32, p, sizeof u32);
            i = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(u32));
        } else {
            memcpy(&u64, p, sizeof u64);
            i = _mm_cvtepu16_epi32(_mm_cvtsi64_si128(u64));
        }
        __m128 f = _mm_cvtepi32_ps(i);
        memcpy(&v, &f, sizeof v);
        return v;
    }
#endif
#if defined(__F16C__)
    if (t == LUMEN_F16) {
        int64_t u64;
        memcpy(&u64, p, sizeof u64);
        __m128 f = _mm_cvtph_ps(_mm_cvtsi64_si128(u64));
        memcpy(&v, &f, sizeof v);
        return v;
    }
#endif
    if (t == LUMEN_F16 || t == LUMEN_BF16) {
        for (int l = 0; l < 4; l++)
            v[l] = lumen_load_px(p + 2 * l, t);
        return v;
    }
    if (t == LUMEN_U8) {
        resize_v4u8 u;
        memcpy(&u, p, sizeof u);
        v = __builtin_convertvector(u, resize_v4f);
    } else if (t == LUMEN_U16) {
        resize_v4u16 u;
        memcpy(&u, p, sizeof u);
        v = __builtin_convertvector(u, resize_v4f);
    } else {
        memcpy(&v, p, sizeof v);
    }
    return v;
}

#if defined(__AVX512F__)
/* 16 consecutive elements of dtype t at p as f32 (exact for every dtype). */
RESIZE_INLINE __m512 load16(const char *p, lumen_dtype t)
{
    switch (t) {
    case LUMEN_U8:
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)p)));
    case LUMEN_U16:
        return _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)p)));
    case LUMEN_F16: return _mm512_cvtph_ps(_mm256_loadu_si256((const void *)p));
    case LUMEN_BF16:
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)p)), 16));
    default: return _mm512_loadu_ps((const float *)p);
    }
}

/* Pixels p = 0..3 of dtype t at s[p] (4 elements each) in the 4 lanes of group p. */
RESIZE_INLINE __m512 load4x4(const char *const s[4], lumen_dtype t)
{
    if (t == LUMEN_U8) {
        int32_t u[4];
        for (int p = 0; p < 4; p++)
            memcpy(&u[p], s[p], 4);
        const __m128i b = _mm_set_epi32(u[3], u[2], u[1], u[0]);
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
    }
    if (t == LUMEN_U16) {
        int64_t u[4];
        for (int p = 0; p < 4; p++)
            memcpy(&u[p], s[p], 8);
        const __m256i b = _mm256_set_epi64x(u[3], u[2], u[1], u[0]);
        return _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(b));
    }
    if (t == LUMEN_F16 || t == LUMEN_BF16) {
        int64_t u[4];
        for (int p = 0; p < 4; p++)
            memcpy(&u[p], s[p], 8);
        const __m256i b = _mm256_set_epi64x(u[3], u[2], u[1], u[0]);
        if (t == LUMEN_F16) return _mm512_cvtph_ps(b);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
    __m512 v = _mm512_castps128_ps512(_mm_loadu_ps((const float *)s[0]));
    v = _mm512_insertf32x4(v, _mm_loadu_ps((const float *)s[1]), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps((const float *)s[2]), 2);
    return _mm512_insertf32x4(v, _mm_loadu_ps((const float *)s[3]), 3);
}

/* The 4 pixels' C floats of a step at out + o C: a plain 16-float store while that stays
 * inside the row's nout pixels (the lanes past 4 C are the next step's, rewritten by it; Zen's
 * masked stores are slow), else only the 4 C. */
RESIZE_INLINE void hpass_x4_store(float *out, int64_t o, int C, int64_t nout, __mmask16 lanes,
                                  __m512 v)
{
    if (o * C + 16 <= nout * C)
        _mm512_storeu_ps(out + o * C, v);
    else
        _mm512_mask_storeu_ps(out + o * C, lanes, v);
}

/* Four output pixels per 512-bit step (hpass_c34's arithmetic, lane for lane: products then
 * sums in tap order, no fusing, so that every layout gives the same bits). The weights of
 * four consecutive outputs are 4K consecutive floats: one or two registers (K <= 8) spread to
 * the pixel lanes by a permute, or (wider kernels) 4 taps of each pixel per lane. Returns the
 * first output not done. */
RESIZE_INLINE int64_t hpass_c34_x4(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                                   int K, int64_t end, int streamed, float *out)
{
    const int64_t es = (int64_t)lumen_dtype_bytes(t);
    const __m512i group = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i stride = _mm512_mullo_epi32(group, _mm512_set1_epi32(K));
    const __mmask16 lanes = C == 3 ? 0x0FFF : 0xFFFF;
    /* three channels: lanes 0-2, 4-6, 8-10, 12-14 to 0-11 (one vpermps: vcompressps took
     * 15 % of the pass on Zen 5) */
    const __m512i pack =
        C == 3 ? _mm512_set_epi32(15, 15, 15, 15, 14, 13, 12, 10, 9, 8, 6, 5, 4, 2, 1, 0)
               : _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i chan = _mm512_set_epi32(3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0);
    const int32_t *first = x->first;
    const float *weights = x->weights;
    /* shrinking far (4000 -> 224: a window every 54 bytes) a row streamed from memory is read
     * ahead, a line per pixel, as the hardware prefetcher alone does not (0.8x the time on Zen
     * 5); not where the windows step less than 16 bytes (enlarging: 1.1-1.3x with it), nor
     * a row just written (vertical first's, in cache) */
    const bool far = streamed && x->in * C * es >= 16 * x->out;
    int64_t o = 0;
    for (; o + 4 <= end; o += 4) {
        const char *s[4];
        for (int p = 0; p < 4; p++) {
            s[p] = (const char *)in + (int64_t)first[o + p] * C * es;
            if (far) _mm_prefetch(s[p] + 1024, _MM_HINT_T0);
        }
        const float *w = weights + o * K;
        /* the 4K weights in one register (K <= 4) or two (K <= 8), never read past them */
        const __m512 wv = K <= 4   ? _mm512_maskz_loadu_ps((__mmask16)((1u << (4 * K)) - 1), w)
                          : K <= 8 ? _mm512_loadu_ps(w)
                                   : _mm512_setzero_ps();
        const __m512 wv2 =
            K > 4 && K <= 8 ? _mm512_maskz_loadu_ps((__mmask16)((1u << (4 * K - 16)) - 1), w + 16)
                            : _mm512_setzero_ps();
        __m512 a = _mm512_setzero_ps();
        const int64_t f0 = first[o];
        if (K > 4 && K <= 8 && (first[o + 3] - f0 + K) * C <= 32 && f0 * C + 32 <= x->in * C) {
            /* 5 to 8 taps, the 4 windows within 32 elements (enlarging with Lanczos): two
             * vectors loaded once and each tap's elements picked by one vpermt2ps, where
             * load4x4 costs 4 loads and 3 inserts per tap (0.91-0.95x the time of OpenCV's
             * Lanczos 2x up, Zen 5, 1 thread); up to 4 taps no faster (1.0-1.1x) */
            const char *p = (const char *)in + f0 * C * es;
            const __m512 lo = load16(p, t), hi = load16(p + 16 * es, t);
            const __m128i off = _mm_mullo_epi32(
                _mm_sub_epi32(_mm_loadu_si128((const __m128i *)(first + o)), _mm_set1_epi32(f0)),
                _mm_set1_epi32(C));
            const __m512i base = _mm512_add_epi32(
                _mm512_permutexvar_epi32(group, _mm512_castsi128_si512(off)), chan);
            for (int k = 0; k < K; k++) {
                const __m512i idx = _mm512_add_epi32(stride, _mm512_set1_epi32(k));
                const __m512 wk =
                    K <= 4 ? _mm512_permutexvar_ps(idx, wv) : _mm512_permutex2var_ps(wv, idx, wv2);
                const __m512 v = _mm512_permutex2var_ps(
                    lo, _mm512_add_epi32(base, _mm512_set1_epi32(k * C)), hi);
                a = _mm512_add_ps(a, _mm512_mul_ps(wk, v));
            }
            hpass_x4_store(out, o, C, x->out, lanes, _mm512_permutexvar_ps(pack, a));
            continue;
        }
        if (K > 8) {
            /* 4 taps of the 4 pixels per 128-bit lane (masked loads: never past the weights),
             * each tap's weight spread over its lane by an in-lane permute: no gather (16
             * single loads on Zen 4) */
            for (int k0 = 0; k0 < K; k0 += 4) {
                const int nk = K - k0 < 4 ? K - k0 : 4;
                const __mmask8 m = (__mmask8)((1u << nk) - 1);
                __m512 w4 = _mm512_castps128_ps512(_mm_maskz_loadu_ps(m, w + k0));
                w4 = _mm512_insertf32x4(w4, _mm_maskz_loadu_ps(m, w + K + k0), 1);
                w4 = _mm512_insertf32x4(w4, _mm_maskz_loadu_ps(m, w + 2 * K + k0), 2);
                w4 = _mm512_insertf32x4(w4, _mm_maskz_loadu_ps(m, w + 3 * K + k0), 3);
                for (int q = 0; q < nk; q++) {
                    const __m512 wk = _mm512_permutevar_ps(w4, _mm512_set1_epi32(q));
                    const int64_t off = (int64_t)(k0 + q) * C * es;
                    const char *sk[4] = {s[0] + off, s[1] + off, s[2] + off, s[3] + off};
                    a = _mm512_add_ps(a, _mm512_mul_ps(wk, load4x4(sk, t)));
                }
            }
            hpass_x4_store(out, o, C, x->out, lanes, _mm512_permutexvar_ps(pack, a));
            continue;
        }
        for (int k = 0; k < K; k++) {
            const __m512i idx = _mm512_add_epi32(stride, _mm512_set1_epi32(k));
            const __m512 wk =
                K <= 4 ? _mm512_permutexvar_ps(idx, wv) : _mm512_permutex2var_ps(wv, idx, wv2);
            const char *sk[4] = {s[0] + k * C * es, s[1] + k * C * es, s[2] + k * C * es,
                                 s[3] + k * C * es};
            a = _mm512_add_ps(a, _mm512_mul_ps(wk, load4x4(sk, t)));
        }
        /* three channels: drop lane 3 of each pixel, write 12 floats */
        hpass_x4_store(out, o, C, x->out, lanes, _mm512_permutexvar_ps(pack, a));
    }
    return o;
}
#endif

/* Outputs [o0, o1) of the horizontal pass, any channel count: C accumulators per output
 * pixel (the plain loop the vector paths leave their last outputs to). */
RESIZE_INLINE void hpass_cn_range(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                                  int64_t o0, int64_t o1, float *out)
{
    const int K = x->taps;
    const int64_t es = (int64_t)lumen_dtype_bytes(t);
    for (int64_t o = o0; o < o1; o++) {
        const char *s = (const char *)in + (int64_t)x->first[o] * C * es;
        const float *w = x->weights + o * K;
        for (int c = 0; c < C; c++) {
            float a = 0;
            for (int k = 0; k < K; k++)
                a += w[k] * lumen_load_px(s + (k * C + c) * es, t);
            out[o * C + c] = a;
        }
    }
}

/* Three or four channels: a pixel is one 4-lane vector. Three channels read one element past
 * the pixel (never past the row: the outputs whose window ends at the row's last pixel take
 * the plain loop) and write exactly their C floats (out may be the dst row). */
RESIZE_INLINE void hpass_c34(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                             int K, int streamed, float *out)
{
    const int64_t es = (int64_t)lumen_dtype_bytes(t);
    int64_t end = x->out; /* outputs [end, out) touch the last pixel */
    if (C == 3)
        while (end > 0 && x->first[end - 1] + K >= x->in)
            end--;
    int64_t o = 0;
#if defined(__AVX512F__)
    o = hpass_c34_x4(in, t, C, x, K, end, streamed, out);
#else
    (void)streamed;
#endif
    for (; o < end; o++) {
        const char *s = (const char *)in + (int64_t)x->first[o] * C * es;
        const float *w = x->weights + o * K;
        resize_v4f a = {0, 0, 0, 0};
        for (int k = 0; k < K; k++)
            a += w[k] * load4(s + k * C * es, t);
        memcpy(out + o * C, &a, (size_t)C * sizeof(float)); /* out may be dst: nothing past */
    }
    hpass_cn_range(in, t, C, x, end, x->out, out);
}

/* Any channel count: C accumulators per output pixel. */
RESIZE_INLINE void hpass_cn(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                            float *out)
{
    hpass_cn_range(in, t, C, x, 0, x->out, out);
}

/* The common tap counts as constants, so that the compiler unrolls their loops. */
RESIZE_INLINE void hpass_c34_k(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                               int streamed, float *out)
{
    switch (x->taps) {
    case 1: hpass_c34(in, t, C, x, 1, streamed, out); break;
    case 2: hpass_c34(in, t, C, x, 2, streamed, out); break;
    case 3: hpass_c34(in, t, C, x, 3, streamed, out); break;
    case 4: hpass_c34(in, t, C, x, 4, streamed, out); break;
    case 6: hpass_c34(in, t, C, x, 6, streamed, out); break;
    case 8: hpass_c34(in, t, C, x, 8, streamed, out); break;
    default: hpass_c34(in, t, C, x, x->taps, streamed, out); break;
    }
}

RESIZE_INLINE void hpass_c1_k(const void *in, lumen_dtype t, const lumen_resize_axis *x, float *out)
{
    switch (x->taps) {
    case 2: hpass_c1(in, t, x, 2, out); break;
    case 4: hpass_c1(in, t, x, 4, out); break;
    default: hpass_c1(in, t, x, x->taps, out); break;
    }
}

RESIZE_INLINE void hpass_t(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                           int streamed, float *out)
{
    switch (C) {
    case 1: hpass_c1_k(in, t, x, out); break;
    case 3: hpass_c34_k(in, t, 3, x, streamed, out); break;
    case 4: hpass_c34_k(in, t, 4, x, streamed, out); break;
    default: hpass_cn(in, t, C, x, out); break;
    }
}

/* One row of C-channel pixels (contiguous, dtype t) resampled horizontally into out (f32). */
void RESIZE_NAME(hpass)(const void *in, lumen_dtype t, int C, const lumen_resize_axis *x,
                        int streamed, float *out)
{
    switch (t) {
    case LUMEN_U8: hpass_t(in, LUMEN_U8, C, x, streamed, out); break;
    case LUMEN_U16: hpass_t(in, LUMEN_U16, C, x, streamed, out); break;
    case LUMEN_F32: hpass_t(in, LUMEN_F32, C, x, streamed, out); break;
    case LUMEN_F16: hpass_t(in, LUMEN_F16, C, x, streamed, out); break;
    case LUMEN_BF16: hpass_t(in, LUMEN_BF16, C, x, streamed, out); break;
    default: hpass_cn(in, t, C, x, out); break;
    }
}

/* ---- Pillow's 8-bit rule, in its integers ---- */

static inline uint8_t pil_clip8(int32_t ss)
{
    ss >>= 22;
    return (uint8_t)(ss < 0 ? 0 : ss > 255 ? 255 : ss);
}

/* One contiguous row of C-channel bytes resampled horizontally into bytes: per output and
 * channel 2^21 + sum of bytes x 22-bit weights, shifted and clipped. 3 and 4 channels take a
 * 4-lane int32 vector per pixel (three read one byte past the pixel: never past the row, the
 * outputs whose window ends at the row's last pixel take the plain loop). */
RESIZE_INLINE void pillow_hrow_c(const uint8_t *row, int C, const lumen_resize_axis *x,
                                 uint8_t *out)
{
    const int K = x->taps;
    const int32_t *first = x->first, *iw = x->iweights;
    int64_t o = 0;
#if defined(__SSE4_1__)
    if (C == 3 || C == 4) {
        int64_t end = x->out;
        if (C == 3)
            while (end > 0 && first[end - 1] + K >= x->in)
                end--;
        for (; o < end; o++) {
            const uint8_t *p = row + (int64_t)first[o] * C;
            const int32_t *w = iw + o * K;
            __m128i a = _mm_set1_epi32(1 << 21);
            for (int k = 0; k < K; k++) {
                int32_t u;
                memcpy(&u, p + k * C, 4);
                const __m128i v = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(u));
                a = _mm_add_epi32(a, _mm_mullo_epi32(v, _mm_set1_epi32(w[k])));
            }
            int32_t r[4];
            _mm_storeu_si128((__m128i *)r, a);
            for (int c = 0; c < C; c++)
                out[o * C + c] = pil_clip8(r[c]);
        }
    }
#endif
    for (; o < x->out; o++) {
        const uint8_t *p = row + (int64_t)first[o] * C;
        const int32_t *w = iw + o * K;
        for (int c = 0; c < C; c++) {
            int32_t ss = 1 << 21;
            for (int k = 0; k < K; k++)
                ss += w[k] * p[k * C + c];
            out[o * C + c] = pil_clip8(ss);
        }
    }
}

void RESIZE_NAME(pillow_hrow)(const uint8_t *row, int C, const lumen_resize_axis *x, uint8_t *out)
{
    switch (C) {
    case 1: pillow_hrow_c(row, 1, x, out); break;
    case 3: pillow_hrow_c(row, 3, x, out); break;
    case 4: pillow_hrow_c(row, 4, x, out); break;
    default: pillow_hrow_c(row, C, x, out); break;
    }
}

/* out[i] = clip8(2^21 + sum_k w[k] rows[k][i]) over n bytes (acc: n int32 of scratch). */
#if defined(__AVX512BW__)
/* 64 bytes at a time with the sums in registers over all K rows (the portable loop below
 * passes over acc once per row); the tail by masks. */
static void pillow_vrow_avx512(const uint8_t *const *rows, const int32_t *w, int K, int64_t n,
                               uint8_t *out)
{
    const __m512i half = _mm512_set1_epi32(1 << 21);
    for (int64_t i = 0; i < n; i += 64) {
        const int64_t m = n - i < 64 ? n - i : 64;
        const __mmask64 lm = m == 64 ? ~(__mmask64)0 : (((__mmask64)1 << m) - 1);
        __m512i a[4] = {half, half, half, half};
        for (int k = 0; k < K; k++) {
            const __m512i v = _mm512_maskz_loadu_epi8(lm, rows[k] + i),
                          wk = _mm512_set1_epi32(w[k]);
#define PIL_V_ACC(q)                                                                               \
    a[q] = _mm512_add_epi32(                                                                       \
        a[q], _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(v, q)), wk))
            PIL_V_ACC(0);
            PIL_V_ACC(1);
            PIL_V_ACC(2);
            PIL_V_ACC(3);
#undef PIL_V_ACC
        }
        for (int q = 0; q < 4; q++) {
            const int64_t mq = m - 16 * q;
            if (mq <= 0) break;
            const __m128i b = _mm512_cvtusepi32_epi8(
                _mm512_max_epi32(_mm512_srai_epi32(a[q], 22), _mm512_setzero_si512()));
            _mm_mask_storeu_epi8(out + i + 16 * q,
                                 mq >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << mq) - 1), b);
        }
    }
}
#endif

void RESIZE_NAME(pillow_vrow)(const uint8_t *const *rows, const int32_t *w, int K, int64_t n,
                              int32_t *acc, uint8_t *out)
{
#if defined(__AVX512BW__)
    (void)acc;
    pillow_vrow_avx512(rows, w, K, n, out);
    return;
#endif
    for (int64_t i = 0; i < n; i++)
        acc[i] = 1 << 21;
    for (int k = 0; k < K; k++) {
        const uint8_t *restrict r = rows[k];
        const int32_t wk = w[k];
        int32_t *restrict a = acc;
        for (int64_t i = 0; i < n; i++)
            a[i] += wk * r[i];
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = pil_clip8(acc[i]);
}

/* acc[i] = sum_k w[k] * rows[k][i] (rows of dtype t), in blocks that stay in L1. */
RESIZE_INLINE void vpass_t(const void *const *rows, lumen_dtype t, const float *w, int K, int64_t n,
                           float *acc)
{
    const int64_t es = (int64_t)lumen_dtype_bytes(t);
    for (int64_t i0 = 0; i0 < n; i0 += 2048) {
        const int64_t m = n - i0 < 2048 ? n - i0 : 2048;
        float *restrict a = acc + i0;
        const char *restrict r0 = (const char *)rows[0] + i0 * es;
        const float w0 = w[0];
        for (int64_t i = 0; i < m; i++)
            a[i] = w0 * lumen_load_px(r0 + i * es, t);
        for (int k = 1; k < K; k++) {
            const char *restrict r = (const char *)rows[k] + i0 * es;
            const float wk = w[k];
            for (int64_t i = 0; i < m; i++)
                a[i] = RESIZE_FMA(wk, lumen_load_px(r + i * es, t), a[i]);
        }
    }
}

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
/* The same sums with the accumulators in registers over all K rows (vpass_t passes over acc
 * once per row, a load and a store per tap) and the elements widened in registers (u8, u16,
 * f16 by F16C, bf16 by a shift), so that a half-precision row is read at half the bytes and
 * never converted in a pass of its own. Per element the same operations in the same order as
 * vpass_t (w[0] times the first row, then one fused multiply-add per row): the same bits. */
#if defined(__AVX512F__)
typedef __m512 vp_vec;
#define VP_W 16
#define VP_SET1 _mm512_set1_ps
#define VP_MUL _mm512_mul_ps
#define VP_FMA _mm512_fmadd_ps
#define VP_STORE _mm512_storeu_ps
RESIZE_INLINE vp_vec vp_load(const char *p, lumen_dtype t)
{
    return load16(p, t);
}
#else
typedef __m256 vp_vec;
#define VP_W 8
#define VP_SET1 _mm256_set1_ps
#define VP_MUL _mm256_mul_ps
#define VP_FMA _mm256_fmadd_ps
#define VP_STORE _mm256_storeu_ps
RESIZE_INLINE vp_vec vp_load(const char *p, lumen_dtype t)
{
    switch (t) {
    case LUMEN_U8:
        return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *)p)));
    case LUMEN_U16:
        return _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)p)));
    case LUMEN_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const void *)p));
    case LUMEN_BF16:
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)p)), 16));
    default: return _mm256_loadu_ps((const float *)p);
    }
}
#endif

/* VP_W sums stored as dtype td at dst + i elements: f32, or f16 rounded by F16C (the same
 * bits as lumen_f32_to_f16), or bf16 rounded on the bits as lumen_f32_to_bf16 (AVX-512). */
RESIZE_INLINE void vp_store(void *dst, int64_t i, lumen_dtype td, vp_vec v)
{
    if (td == LUMEN_F16) {
#if defined(__AVX512F__)
        _mm256_storeu_si256((__m256i *)((uint16_t *)dst + i),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
        _mm_storeu_si128((__m128i *)((uint16_t *)dst + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
        return;
    }
#if defined(__AVX512F__)
    if (td == LUMEN_BF16) {
        const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
        const __m512i r =
            _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                               _mm512_and_si512(hi, _mm512_set1_epi32(1))),
                              16);
        const __mmask16 nan = _mm512_cmpgt_epi32_mask(
            _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
        const __m512i q = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
        _mm256_storeu_si256((__m256i *)((uint16_t *)dst + i),
                            _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, r, q)));
        return;
    }
#endif
    VP_STORE((float *)dst + i, v);
}

/* The dst dtypes vp_store writes. */
static inline int vp_stores(lumen_dtype td)
{
#if defined(__AVX512F__)
    return td == LUMEN_F32 || td == LUMEN_F16 || td == LUMEN_BF16;
#else
    return td == LUMEN_F32 || td == LUMEN_F16;
#endif
}

/* vpass_t's sums of n elements, stored as dtype td (vp_stores) at dst: a half-precision dst row
 * is written once, with no f32 row and no conversion pass between. */
#define VP_PF 4 /* blocks ahead that vpass_reg_to prefetches */
RESIZE_INLINE void vpass_reg_to(const void *const *rows, lumen_dtype t, const float *w, int K,
                                int64_t n, lumen_dtype td, void *dst)
{
    const int64_t es = (int64_t)lumen_dtype_bytes(t), B = 4 * VP_W;
    /* half-precision rows of short windows 2 KiB ahead (16 blocks): at 4 blocks (512 bytes)
     * f16 2x down with 4 taps took 1.1x the time (Zen 5, 1 and 2 threads); 12 rows so far
     * ahead took 1.06x (Pillow's Lanczos 2x down) */
    const int64_t pf = es == 2 && K <= 6 ? 2048 : VP_PF * B * es;
    int64_t i = 0;
    for (; i + B <= n; i += B) {
        const char *r = (const char *)rows[0] + i * es;
        const vp_vec w0 = VP_SET1(w[0]);
        vp_vec a0 = VP_MUL(w0, vp_load(r, t)), a1 = VP_MUL(w0, vp_load(r + VP_W * es, t)),
               a2 = VP_MUL(w0, vp_load(r + 2 * VP_W * es, t)),
               a3 = VP_MUL(w0, vp_load(r + 3 * VP_W * es, t));
        for (int k = 1; k < K; k++) {
            r = (const char *)rows[k] + i * es;
            /* many rows at once outrun the hardware prefetcher (a 28-row window stalls on
             * every load): each row's next lines, a few blocks ahead */
            for (int64_t l = 0; l < B * es; l += 64)
                _mm_prefetch(r + pf + l, _MM_HINT_T0);
            const vp_vec wk = VP_SET1(w[k]);
            a0 = VP_FMA(wk, vp_load(r, t), a0);
            a1 = VP_FMA(wk, vp_load(r + VP_W * es, t), a1);
            a2 = VP_FMA(wk, vp_load(r + 2 * VP_W * es, t), a2);
            a3 = VP_FMA(wk, vp_load(r + 3 * VP_W * es, t), a3);
        }
        vp_store(dst, i, td, a0), vp_store(dst, i + VP_W, td, a1);
        vp_store(dst, i + 2 * VP_W, td, a2), vp_store(dst, i + 3 * VP_W, td, a3);
    }
    for (; i + VP_W <= n; i += VP_W) {
        vp_vec a = VP_MUL(VP_SET1(w[0]), vp_load((const char *)rows[0] + i * es, t));
        for (int k = 1; k < K; k++)
            a = VP_FMA(VP_SET1(w[k]), vp_load((const char *)rows[k] + i * es, t), a);
        vp_store(dst, i, td, a);
    }
    for (; i < n; i++) { /* the tail: fmaf is the vector FMA's rounding */
        float a = w[0] * lumen_load_px((const char *)rows[0] + i * es, t);
        for (int k = 1; k < K; k++)
            a = fmaf(w[k], lumen_load_px((const char *)rows[k] + i * es, t), a);
        lumen_store_px((char *)dst + i * (int64_t)lumen_dtype_bytes(td), td, a);
    }
}

RESIZE_INLINE void vpass_reg(const void *const *rows, lumen_dtype t, const float *w, int K,
                             int64_t n, float *acc)
{
    vpass_reg_to(rows, t, w, K, n, LUMEN_F32, acc);
}
#define RESIZE_VPASS_REG 1
#endif

void RESIZE_NAME(vpass)(const void *const *rows, lumen_dtype t, const float *w, int K, int64_t n,
                        float *acc)
{
#if defined(RESIZE_VPASS_REG)
    switch (t) {
    case LUMEN_U8: vpass_reg(rows, LUMEN_U8, w, K, n, acc); break;
    case LUMEN_U16: vpass_reg(rows, LUMEN_U16, w, K, n, acc); break;
    case LUMEN_F32: vpass_reg(rows, LUMEN_F32, w, K, n, acc); break;
    case LUMEN_F16: vpass_reg(rows, LUMEN_F16, w, K, n, acc); break;
    case LUMEN_BF16: vpass_reg(rows, LUMEN_BF16, w, K, n, acc); break;
    default: vpass_t(rows, t, w, K, n, acc); break;
    }
#else
    switch (t) {
    case LUMEN_U8: vpass_t(rows, LUMEN_U8, w, K, n, acc); break;
    case LUMEN_U16: vpass_t(rows, LUMEN_U16, w, K, n, acc); break;
    case LUMEN_F32: vpass_t(rows, LUMEN_F32, w, K, n, acc); break;
    default: vpass_t(rows, t, w, K, n, acc); break;
    }
#endif
}

/* vpass of f32 rows stored straight into a dst row of dtype td; 0 where this build does not
 * store td so (the caller then sums into f32 and stores). */
int RESIZE_NAME(vpass_to)(const float *const *rows, const float *w, int K, int64_t n,
                          lumen_dtype td, void *dst)
{
#if defined(RESIZE_VPASS_REG)
    const void *const *r = (const void *const *)rows;
    switch (td) {
    case LUMEN_F32: vpass_reg_to(r, LUMEN_F32, w, K, n, LUMEN_F32, dst); return 1;
    case LUMEN_F16:
        if (!vp_stores(LUMEN_F16)) return 0;
        vpass_reg_to(r, LUMEN_F32, w, K, n, LUMEN_F16, dst);
        return 1;
    case LUMEN_BF16:
        if (!vp_stores(LUMEN_BF16)) return 0;
        vpass_reg_to(r, LUMEN_F32, w, K, n, LUMEN_BF16, dst);
        return 1;
    default: return 0;
    }
#else
    if (td != LUMEN_F32) return 0;
    RESIZE_NAME(vpass)((const void *const *)rows, LUMEN_F32, w, K, n, dst);
    return 1;
#endif
}

/* The 2x2 sum s of u8 pixels divided by 4, rounded to nearest with ties to even: the f32
 * path's result exactly (s / 4 and each partial sum with weights 1/2 are exact in f32). */
RESIZE_INLINE uint8_t box2_round(unsigned s)
{
    return (uint8_t)((s + 1 + ((s >> 2) & 1)) >> 2);
}

#if defined(__AVX512BW__)
/* 32 output bytes (fewer for C = 3: a whole number of pixels) per step: both rows' 2x bytes
 * widened to 16 bits and added, then each output's two horizontal neighbours picked from the
 * 64 sums by permutes (any C up to 32), added, rounded and narrowed. */
RESIZE_INLINE __m256i box2_u8_step(__m512i a, __m512i b, __m512i idx_e, __m512i idx_o)
{
    const __m512i one = _mm512_set1_epi16(1);
    const __m512i lo = _mm512_add_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(a)),
                                        _mm512_cvtepu8_epi16(_mm512_castsi512_si256(b)));
    const __m512i hi = _mm512_add_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(a, 1)),
                                        _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(b, 1)));
    const __m512i s = _mm512_add_epi16(_mm512_permutex2var_epi16(lo, idx_e, hi),
                                       _mm512_permutex2var_epi16(lo, idx_o, hi));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi16(s, 2), one);
    return _mm512_cvtepi16_epi8(
        _mm512_srli_epi16(_mm512_add_epi16(s, _mm512_add_epi16(one, odd)), 2));
}

#define BOX2_PF 512 /* bytes ahead of each row that box2_u8_avx512 prefetches */

static void box2_u8_avx512(const uint8_t *r0, const uint8_t *r1, int C, int64_t n, uint8_t *out)
{
    const int step = (32 / C) * C;
    uint16_t ie[32], io[32];
    for (int i = 0; i < 32; i++) {
        const int e = 2 * (i / C) * C + i % C;
        ie[i] = (uint16_t)(i < step ? e : 0), io[i] = (uint16_t)(i < step ? e + C : 0);
    }
    const __m512i idx_e = _mm512_loadu_si512(ie), idx_o = _mm512_loadu_si512(io);
    int64_t i = 0;
    /* Whole steps with plain loads and stores while they stay inside the rows (64 bytes of
     * each read, 32 written: those past step are the next step's, rewritten by it); the rows
     * prefetched ahead: two streams that the hardware prefetcher alone serves at ~0.8x this
     * speed (Zen 5, 3840x2160 -> 1920x1080). */
    for (; i + 32 <= n; i += step) {
        _mm_prefetch((const char *)r0 + 2 * i + BOX2_PF, _MM_HINT_T0);
        _mm_prefetch((const char *)r1 + 2 * i + BOX2_PF, _MM_HINT_T0);
        const __m512i a = _mm512_loadu_si512(r0 + 2 * i), b = _mm512_loadu_si512(r1 + 2 * i);
        _mm256_storeu_si256((__m256i *)(out + i), box2_u8_step(a, b, idx_e, idx_o));
    }
    for (; i < n; i += step) { /* the last steps: masked */
        const int64_t m = n - i < step ? n - i : step;
        const __mmask64 lm = 2 * m >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (2 * m)) - 1);
        const __m512i a = _mm512_maskz_loadu_epi8(lm, r0 + 2 * i);
        const __m512i b = _mm512_maskz_loadu_epi8(lm, r1 + 2 * i);
        _mm256_mask_storeu_epi8(out + i, m >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << m) - 1),
                                box2_u8_step(a, b, idx_e, idx_o));
    }
}
#endif

void RESIZE_NAME(box2_u8)(const uint8_t *r0, const uint8_t *r1, int C, int64_t n, uint8_t *out)
{
#if defined(__AVX512BW__)
    if (C <= 32) {
        box2_u8_avx512(r0, r1, C, n, out);
        return;
    }
#endif
    for (int64_t o = 0; o < n / C; o++) {
        const uint8_t *a = r0 + 2 * o * C, *b = r1 + 2 * o * C;
        for (int c = 0; c < C; c++)
            out[o * C + c] = box2_round((unsigned)a[c] + a[c + C] + b[c] + b[c + C]);
    }
}

#if defined(__AVX512BW__)
/* 16 output u16 (fewer: a whole number of pixels) per step from 32 values of each row: the
 * vertical pairs summed in 32 bits, each output's two neighbours picked by permutes. */
RESIZE_INLINE __m256i box2_u16_step(__m512i a, __m512i b, __m512i idx_e, __m512i idx_o)
{
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i lo = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(a)),
                                        _mm512_cvtepu16_epi32(_mm512_castsi512_si256(b)));
    const __m512i hi = _mm512_add_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(a, 1)),
                                        _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(b, 1)));
    const __m512i s = _mm512_add_epi32(_mm512_permutex2var_epi32(lo, idx_e, hi),
                                       _mm512_permutex2var_epi32(lo, idx_o, hi));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(s, 2), one);
    return _mm512_cvtepi32_epi16(
        _mm512_srli_epi32(_mm512_add_epi32(s, _mm512_add_epi32(one, odd)), 2));
}

static void box2_u16_avx512(const uint16_t *r0, const uint16_t *r1, int C, int64_t n, uint16_t *out)
{
    const int step = (16 / C) * C;
    uint32_t ie[16], io[16];
    for (int i = 0; i < 16; i++) {
        const int e = 2 * (i / C) * C + i % C;
        ie[i] = (uint32_t)(i < step ? e : 0), io[i] = (uint32_t)(i < step ? e + C : 0);
    }
    const __m512i idx_e = _mm512_loadu_si512(ie), idx_o = _mm512_loadu_si512(io);
    int64_t i = 0;
    /* As box2_u8_avx512: whole steps while they stay inside the rows, then masked ones. */
    for (; i + 16 <= n; i += step) {
        _mm_prefetch((const char *)(r0 + 2 * i) + BOX2_PF, _MM_HINT_T0);
        _mm_prefetch((const char *)(r1 + 2 * i) + BOX2_PF, _MM_HINT_T0);
        const __m512i a = _mm512_loadu_si512(r0 + 2 * i), b = _mm512_loadu_si512(r1 + 2 * i);
        _mm256_storeu_si256((__m256i *)(out + i), box2_u16_step(a, b, idx_e, idx_o));
    }
    for (; i < n; i += step) {
        const int64_t m = n - i < step ? n - i : step;
        const __mmask32 lm = 2 * m >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (2 * m)) - 1);
        const __m512i a = _mm512_maskz_loadu_epi16(lm, r0 + 2 * i);
        const __m512i b = _mm512_maskz_loadu_epi16(lm, r1 + 2 * i);
        _mm256_mask_storeu_epi16(out + i, (__mmask16)((1u << m) - 1),
                                 box2_u16_step(a, b, idx_e, idx_o));
    }
}
#endif

void RESIZE_NAME(box2_u16)(const uint16_t *r0, const uint16_t *r1, int C, int64_t n, uint16_t *out)
{
#if defined(__AVX512BW__)
    if (C <= 16) {
        box2_u16_avx512(r0, r1, C, n, out);
        return;
    }
#endif
    for (int64_t o = 0; o < n / C; o++) {
        const uint16_t *a = r0 + 2 * o * C, *b = r1 + 2 * o * C;
        for (int c = 0; c < C; c++) {
            const uint32_t s = (uint32_t)a[c] + a[c + C] + b[c] + b[c + C];
            out[o * C + c] = (uint16_t)((s + 1 + ((s >> 2) & 1)) >> 2);
        }
    }
}

/* f32, f16 or bf16, both axes an exact 2:1 box of 2 taps: the separable path's operations
 * fused into one pass with no row between. Per output, as vpass (v = fma(1/2, r1, 1/2 r0))
 * then hpass (0 + 1/2 v_2o, + 1/2 v_2o+1, products then sums), stored as dtype td as
 * store_row does: the same bits. Half-precision rows are widened in registers. 16 - 16 % C
 * outputs per step from 2 vectors of each row, each output's two neighbours picked by permutes
 * (C up to 16). Returns 0 where this build has no such path (n 0: asks). */
#if defined(__AVX512F__)
/* 16 elements of dtype t (f32, f16, bf16) at p as f32, those outside mask m not read. */
RESIZE_INLINE __m512 box2_load(const char *p, lumen_dtype t, __mmask16 m)
{
    if (t == LUMEN_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    if (t == LUMEN_BF16)
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    return _mm512_maskz_loadu_ps(m, p);
}

#define BOX2F_PF 3072 /* bytes ahead of each row that box2_float_t prefetches */

RESIZE_INLINE void box2_float_t(const char *r0, const char *r1, lumen_dtype ts, int C, int64_t n,
                                lumen_dtype td, void *out)
{
    const int64_t es = (int64_t)lumen_dtype_bytes(ts), ed = (int64_t)lumen_dtype_bytes(td);
    const int step = (16 / C) * C;
    int32_t ie[16], io[16];
    for (int i = 0; i < 16; i++) {
        const int e = 2 * (i / C) * C + i % C;
        ie[i] = i < step ? e : 0, io[i] = i < step ? e + C : 0;
    }
    const __m512i idx_e = _mm512_loadu_si512(ie), idx_o = _mm512_loadu_si512(io);
    const __m512 h = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
    int64_t i = 0;
    /* whole steps, plain loads and stores while they stay inside the rows (Zen 4's masked
     * stores are slow): 32 elements of each row read, 16 written (those past step: the next
     * step's, rewritten by it) */
    for (; i + 16 <= n; i += step) {
        const char *a = r0 + 2 * i * es, *b = r1 + 2 * i * es;
        /* both rows read ahead, each line once (a step reads 2 step es bytes of each: 60 for
         * f16 RGB, 120 for f32): two streams that the hardware prefetcher alone served at
         * 0.7x this speed in f16 (Zen 5, 3840x2160 -> 1920x1080, 1 thread) */
        _mm_prefetch(a + BOX2F_PF, _MM_HINT_T0);
        _mm_prefetch(b + BOX2F_PF, _MM_HINT_T0);
        if (es == 4) {
            _mm_prefetch(a + BOX2F_PF + 64, _MM_HINT_T0);
            _mm_prefetch(b + BOX2F_PF + 64, _MM_HINT_T0);
        }
        const __m512 lo = _mm512_fmadd_ps(h, vp_load(b, ts), _mm512_mul_ps(h, vp_load(a, ts)));
        const __m512 hi = _mm512_fmadd_ps(h, vp_load(b + 16 * es, ts),
                                          _mm512_mul_ps(h, vp_load(a + 16 * es, ts)));
        const __m512 e = _mm512_permutex2var_ps(lo, idx_e, hi);
        const __m512 o = _mm512_permutex2var_ps(lo, idx_o, hi);
        vp_store(out, i, td,
                 _mm512_add_ps(_mm512_add_ps(zero, _mm512_mul_ps(h, e)), _mm512_mul_ps(h, o)));
    }
    for (; i < n; i += step) { /* the last step: masked, through a buffer for the store */
        const int64_t m = n - i < step ? n - i : step, m2 = 2 * m;
        const __mmask16 l0 = m2 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m2) - 1);
        const __mmask16 l1 = m2 <= 16 ? 0 : (__mmask16)((1u << (m2 - 16)) - 1);
        const char *a = r0 + 2 * i * es, *b = r1 + 2 * i * es;
        const __m512 lo =
            _mm512_fmadd_ps(h, box2_load(b, ts, l0), _mm512_mul_ps(h, box2_load(a, ts, l0)));
        const __m512 hi = _mm512_fmadd_ps(h, box2_load(b + 16 * es, ts, l1),
                                          _mm512_mul_ps(h, box2_load(a + 16 * es, ts, l1)));
        const __m512 e = _mm512_permutex2var_ps(lo, idx_e, hi);
        const __m512 o = _mm512_permutex2var_ps(lo, idx_o, hi);
        uint32_t buf[16]; /* 16 results of at most 4 bytes each */
        vp_store(buf, 0, td,
                 _mm512_add_ps(_mm512_add_ps(zero, _mm512_mul_ps(h, e)), _mm512_mul_ps(h, o)));
        memcpy((char *)out + i * ed, buf, (size_t)(m * ed));
    }
}
#endif

int RESIZE_NAME(box2_float)(const void *r0, const void *r1, lumen_dtype ts, int C, int64_t n,
                            lumen_dtype td, void *out)
{
#if defined(__AVX512F__)
    const int ok_s = ts == LUMEN_F32 || ts == LUMEN_F16 || ts == LUMEN_BF16;
    const int ok_d = td == LUMEN_F32 || td == LUMEN_F16 || td == LUMEN_BF16;
    if (C > 16 || !ok_s || !ok_d) return 0;
    switch (ts) {
    case LUMEN_F16: box2_float_t(r0, r1, LUMEN_F16, C, n, td, out); break;
    case LUMEN_BF16: box2_float_t(r0, r1, LUMEN_BF16, C, n, td, out); break;
    default: box2_float_t(r0, r1, LUMEN_F32, C, n, td, out); break;
    }
    return 1;
#else
    (void)r0, (void)r1, (void)ts, (void)C, (void)n, (void)td, (void)out;
    return 0;
#endif
}

/* ---- Pillow's 8-bit horizontal pass as byte dot products (AVX-512 VNNI + VBMI) ----
 *
 * The same integers as pillow_hrow. A step fills one 64-byte vector of 16 int32 lanes: lane
 * L is slot L / 16, channel (L / 4) % 4, byte L % 4. One vpermb puts 4 consecutive taps of one
 * channel of one output pixel into a lane, and three VPDPBUSD multiply them by the 22-bit
 * weights cut into three signed byte digits, w = w2 2^16 + w1 2^8 + w0, so that the sum is
 * (s2 << 16) + (s1 << 8) + s0: Pillow's int32 sum exactly. A group of P output pixels shares
 * the 4 slots (P = 4: up to 4 taps each; 2: up to 8; 1: 16 taps per step, as many steps as
 * needed), pixel j of the group in slots j, j + P, ..., when their windows lie within 64
 * bytes. The table (pillow_dp_table, once per call) holds per group the 64-byte index for
 * vpermb and per step the three 64-byte digit vectors (zero past a window, past C channels
 * and past the last pixel). */
static int dp_group(int K)
{
    return K <= 4 ? 4 : K <= 8 ? 2 : 1;
}

int64_t RESIZE_NAME(pillow_dp_entry)(int K)
{
    const int S = dp_group(K) > 1 ? 1 : (K + 15) / 16;
    return 64 + (int64_t)S * 192;
}

int RESIZE_NAME(pillow_dp_table)(int C, const lumen_resize_axis *x, int8_t *tab)
{
    const int K = x->taps;
    int P = dp_group(K);
    for (int64_t o = 0; P > 1 && o < x->out; o += P) { /* every group's windows in 64 bytes */
        const int64_t last = o + P - 1 < x->out ? o + P - 1 : x->out - 1;
        if ((x->first[last] - x->first[o] + K) * C > 64) P = 1;
    }
    const int S = P > 1 ? 1 : (K + 15) / 16;
    const int64_t E = 64 + (int64_t)S * 192;
    for (int64_t g = 0; g * P < x->out; g++) {
        int8_t *e = tab + g * E;
        const int64_t o0 = g * P;
        for (int L = 0; L < 64; L++) {
            const int slot = L / 16, c = (L / 4) % 4, b = L % 4, j = slot % P, q = slot / P;
            const int64_t o = o0 + j;
            const int64_t off = o < x->out ? x->first[o] - x->first[o0] : 0;
            e[L] = (int8_t)(c < C && o < x->out ? (off + 4 * q + b) * C + c : 0);
            for (int s = 0; s < S; s++) {
                const int t = 16 * s + 4 * q + b;
                const int32_t w = t < K && c < C && o < x->out ? x->iweights[o * K + t] : 0;
                const int32_t w0 = ((w + 128) & 255) - 128, r = (w - w0) / 256;
                const int32_t w1 = ((r + 128) & 255) - 128, w2 = (r - w1) / 256;
                int8_t *d = e + 64 + s * 192;
                d[L] = (int8_t)w0, d[64 + L] = (int8_t)w1, d[128 + L] = (int8_t)w2;
            }
        }
    }
    return P;
}

#if defined(__AVX512BW__)
#define DP_TARGET __attribute__((target("avx512vnni,avx512vbmi")))
#define DP_PF 1024 /* bytes ahead that the pass prefetches (see pillow_hrow_dp_avx512) */

/* One group's three digit sums over its S steps, joined: (s2 << 16) + (s1 << 8) + s0. */
DP_TARGET RESIZE_INLINE __m512i dp_sum(const uint8_t *p, int64_t span, __m512i idx, const int8_t *e,
                                       int S, int C)
{
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0;
    for (int s = 0; s < S; s++) {
        const int8_t *w = e + 64 + s * 192;
        const int64_t left = span - 16 * s * C;
        const __mmask64 m = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
        const __m512i v = _mm512_permutexvar_epi8(idx, _mm512_maskz_loadu_epi8(m, p + 16 * s * C));
        a0 = _mm512_dpbusd_epi32(a0, v, _mm512_loadu_si512(w));
        a1 = _mm512_dpbusd_epi32(a1, v, _mm512_loadu_si512(w + 64));
        a2 = _mm512_dpbusd_epi32(a2, v, _mm512_loadu_si512(w + 128));
    }
    return _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(a2, 16), _mm512_slli_epi32(a1, 8)),
                            a0);
}

/* Sums of pixel j in lanes 4j .. 4j + 3 to bytes: Pillow's clip8 (2^21 added, shifted,
 * clipped to 0..255), pixel j's C channels then packed to bytes jC .. jC + C - 1 (pack: the
 * pshufb index) and stored for the group's n pixels at out + o C (a row of nout pixels). A
 * plain 16-byte store where it stays inside the row (it writes the next pixels' bytes, which
 * their own group rewrites), else a masked one. */
DP_TARGET RESIZE_INLINE void dp_store(__m512i t, __m128i pack, int C, int64_t o, int64_t n,
                                      int64_t nout, uint8_t *out)
{
    t = _mm512_srai_epi32(_mm512_add_epi32(t, _mm512_set1_epi32(1 << 21)), 22);
    const __m128i b =
        _mm_shuffle_epi8(_mm512_cvtusepi32_epi8(_mm512_max_epi32(t, _mm512_setzero_si512())), pack);
    uint8_t *d = out + o * C;
    if ((o * C + 16) <= nout * C)
        _mm_storeu_si128((__m128i *)d, b);
    else
        _mm_mask_storeu_epi8(d, (__mmask16)((1u << (n * C)) - 1), b);
}

/* Four output pixels' sums folded together: pixel j's four slots (128-bit chunks) summed
 * into chunk j by two rounds of chunk shuffles. */
DP_TARGET RESIZE_INLINE __m512i dp_fold4(__m512i t0, __m512i t1, __m512i t2, __m512i t3)
{
    const __m512i a =
        _mm512_add_epi32(_mm512_shuffle_i32x4(t0, t1, 0x44), _mm512_shuffle_i32x4(t0, t1, 0xEE));
    const __m512i b =
        _mm512_add_epi32(_mm512_shuffle_i32x4(t2, t3, 0x44), _mm512_shuffle_i32x4(t2, t3, 0xEE));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, 0x88), _mm512_shuffle_i32x4(a, b, 0xDD));
}

/* Pixel o + j of a one-pixel-per-group table (zero past the row's last pixel), prefetching a
 * line DP_PF ahead: each output reads ~K C bytes past the last, one sequential stream that
 * the hardware prefetcher alone serves at half this speed (Zen 5, 4000 -> 224). */
DP_TARGET RESIZE_INLINE __m512i dp_pixel(const uint8_t *row, int C, const lumen_resize_axis *x,
                                         const int8_t *tab, int64_t E, int S, __m512i idx,
                                         int64_t o)
{
    if (o >= x->out) return _mm512_setzero_si512();
    const uint8_t *p = row + (int64_t)x->first[o] * C;
    _mm_prefetch((const char *)p + DP_PF, _MM_HINT_T0);
    return dp_sum(p, (int64_t)x->taps * C, idx, tab + o * E, S, C);
}

/* One pixel per group (windows past 8 taps): four pixels per step, one fold and one store
 * for the four. S a constant in the common cases, so that the steps unroll. */
DP_TARGET RESIZE_INLINE void dp_row1(const uint8_t *row, int C, const lumen_resize_axis *x,
                                     const int8_t *tab, int S, __m128i pack, uint8_t *out)
{
    const int64_t E = 64 + (int64_t)S * 192;
    const __m512i idx = _mm512_loadu_si512(tab); /* every pixel's index alike */
    for (int64_t o = 0; o < x->out; o += 4) {
        const __m512i t0 = dp_pixel(row, C, x, tab, E, S, idx, o);
        const __m512i t1 = dp_pixel(row, C, x, tab, E, S, idx, o + 1);
        const __m512i t2 = dp_pixel(row, C, x, tab, E, S, idx, o + 2);
        const __m512i t3 = dp_pixel(row, C, x, tab, E, S, idx, o + 3);
        const int64_t n = o + 4 <= x->out ? 4 : x->out - o;
        dp_store(dp_fold4(t0, t1, t2, t3), pack, C, o, n, x->out, out);
    }
}

DP_TARGET static void pillow_hrow_dp_avx512(const uint8_t *row, int C, const lumen_resize_axis *x,
                                            const int8_t *tab, int P, uint8_t *out)
{
    const int K = x->taps, S = P > 1 ? 1 : (K + 15) / 16;
    const int64_t E = 64 + (int64_t)S * 192;
    int8_t pk[16];
    for (int i = 0; i < 16; i++)
        pk[i] = (int8_t)(i < 4 * C ? 4 * (i / C) + i % C : -1);
    const __m128i pack = _mm_loadu_si128((const __m128i *)pk);
    if (P == 1) {
        switch (S) {
        case 1: dp_row1(row, C, x, tab, 1, pack, out); break;
        case 2: dp_row1(row, C, x, tab, 2, pack, out); break;
        case 3: dp_row1(row, C, x, tab, 3, pack, out); break;
        default: dp_row1(row, C, x, tab, S, pack, out); break;
        }
        return;
    }
    const int8_t *e = tab;
    for (int64_t o = 0; o < x->out; o += P, e += E) {
        const uint8_t *p = row + (int64_t)x->first[o] * C;
        _mm_prefetch((const char *)p + DP_PF, _MM_HINT_T0);
        const int64_t n = o + P <= x->out ? P : x->out - o; /* pixels in this group */
        /* the group's bytes: up to the last pixel's window end */
        const int64_t span = (x->first[o + n - 1] - x->first[o] + K) * C;
        __m512i t = dp_sum(p, span, _mm512_loadu_si512(e), e, 1, C);
        if (P == 2) /* slots j and j + 2 are one pixel: pixel j to lanes 4j .. 4j + 3 */
            t = _mm512_castsi256_si512(
                _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1)));
        dp_store(t, pack, C, o, n, x->out, out);
    }
}
#endif

/* Whether this build and CPU run the dot-product pass (else pillow_hrow). */
int RESIZE_NAME(pillow_dp_ok)(int C)
{
#if defined(__AVX512BW__)
    return C <= 4 && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi");
#else
    (void)C;
    return 0;
#endif
}

void RESIZE_NAME(pillow_hrow_dp)(const uint8_t *row, int C, const lumen_resize_axis *x,
                                 const int8_t *tab, int P, uint8_t *out)
{
#if defined(__AVX512BW__)
    pillow_hrow_dp_avx512(row, C, x, tab, P, out);
#else
    (void)tab, (void)P;
    RESIZE_NAME(pillow_hrow)(row, C, x, out);
#endif
}
