/*
 * The facts every backend honours, stated once: the border rule, u8/u16 saturation, the
 * Gaussian's default sigma, the FFT's smallest kernel. Plain C that the CUDA module (and any
 * later device compiler) includes too: functions are `static inline` and marked LUMEN_HD, which
 * makes them host and device functions under nvcc. See docs/semantics.md for the rules and
 * docs/architecture.md for where this header sits (core: everything may include it).
 */
#ifndef LUMEN_SEMANTICS_H
#define LUMEN_SEMANTICS_H

#include "lumen.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define LUMEN_HD __host__ __device__
#else
#define LUMEN_HD
#endif

/* Below this many taps the FFT never pays; auto does not even weigh it. */
#define LUMEN_FFT_MIN_TAPS 16

static inline LUMEN_HD int64_t lumen_mod(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* Maps i (any integer) into [0, n) for the border mode; -1 means "the constant value". Exact
 * for any offset, so kernels larger than the image need no special case. */
static inline LUMEN_HD int64_t lumen_border_index(int64_t i, int64_t n, lumen_border b)
{
    if (i >= 0 && i < n) return i;
    /* One reflection or wrap away (every kernel narrower than the image): the same index
     * without lumen_mod's 64-bit division, which made border pixels 16 cycles each. */
    if (i >= -n && i < 2 * n && n > 1) {
        switch (b) {
        case LUMEN_BORDER_REFLECT: return i < 0 ? -1 - i : 2 * n - 1 - i;
        case LUMEN_BORDER_REFLECT101:
            if (i > -n && i < 2 * n - 1) return i < 0 ? -i : 2 * n - 2 - i;
            break;
        case LUMEN_BORDER_WRAP: return i < 0 ? i + n : i - n;
        default: break;
        }
    }
    switch (b) {
    case LUMEN_BORDER_CONSTANT: return -1;
    case LUMEN_BORDER_REPLICATE: return i < 0 ? 0 : n - 1;
    case LUMEN_BORDER_REFLECT: {
        int64_t p = lumen_mod(i, 2 * n); /* cba|abc: period 2n */
        return p < n ? p : 2 * n - 1 - p;
    }
    case LUMEN_BORDER_REFLECT101: {
        if (n == 1) return 0;                /* as OpenCV: a single pixel reflects onto itself */
        int64_t p = lumen_mod(i, 2 * n - 2); /* dcb|abcd: period 2n-2 */
        return p < n ? p : 2 * n - 2 - p;
    }
    case LUMEN_BORDER_WRAP: return lumen_mod(i, n);
    }
    return -1;
}

/*
 * OpenCV's saturate_cast: round to nearest, ties to even (as cvRound; lrintf in the default
 * rounding mode, on the host and on CUDA devices alike), then saturate. NaN gives 0 as in
 * OpenCV; values beyond the int range saturate (OpenCV's cvRound wraps them to INT_MIN and so
 * gives 0 there — see docs/semantics.md).
 */
static inline LUMEN_HD uint8_t lumen_sat_u8(float v)
{
    if (!(v > 0.0f)) return 0;
    if (v >= 255.0f) return 255;
    return (uint8_t)lrintf(v);
}

static inline LUMEN_HD uint16_t lumen_sat_u16(float v)
{
    if (!(v > 0.0f)) return 0;
    if (v >= 65535.0f) return 65535;
    return (uint16_t)lrintf(v);
}

/* ---- half precision: f16 (IEEE binary16) and bf16 -------------------------------------
 * One definition for every backend (docs/semantics.md, "Half precision"). Loads are exact;
 * stores round to nearest, ties to even, on the bits (integer operations only: no dependence
 * on the rounding mode, flush-to-zero or a compiler's _Float16), so the CPU's portable code,
 * its F16C path and device code agree bit for bit. NaN stays NaN with its quiet bit set and
 * its payload truncated, as x86's F16C does; f16 overflows to +-Inf as IEEE does. */

static inline LUMEN_HD uint32_t lumen_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline LUMEN_HD float lumen_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline LUMEN_HD float lumen_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) /* Inf, or NaN made quiet (as F16C's vcvtph2ps does) */
        return lumen_bits_f32(sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0));
    if (e == 0) {
        if (m == 0) return lumen_bits_f32(sign);
        e = 113; /* subnormal: normalise, m * 2^-24 is a normal f32 */
        while (!(m & 0x400u))
            m <<= 1, e--;
        return lumen_bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    return lumen_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* m >> s rounded to nearest even (1 <= s < 32). */
static inline LUMEN_HD uint32_t lumen_shift_rne(uint32_t m, unsigned s)
{
    const uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
    return q + (rem > half || (rem == half && (q & 1u)));
}

static inline LUMEN_HD uint16_t lumen_f32_to_f16(float f)
{
    const uint32_t u = lumen_f32_bits(f), a = u & 0x7fffffffu;
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: rounds to Inf */
    if (a >= 0x38800000u) /* normal: rebias 127 -> 15, round the 13 dropped bits */
        return (uint16_t)(sign | lumen_shift_rne(a - (112u << 23), 13));
    if (a < 0x33000000u) return sign; /* <= 2^-25: half the smallest subnormal, ties to 0 */
    /* subnormal: units of 2^-24 (a carry into 0x400 is the smallest normal, as it should) */
    const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | lumen_shift_rne(m, 126 - e));
}

static inline LUMEN_HD float lumen_bf16_to_f32(uint16_t h)
{
    return lumen_bits_f32((uint32_t)h << 16);
}

static inline LUMEN_HD uint16_t lumen_f32_to_bf16(float f)
{
    const uint32_t u = lumen_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN: quiet */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* overflow carries to Inf */
}

/* Bytes of one element of dtype t (0: not a dtype); lumen_dtype_size is this, for modules
 * that cannot call the core. */
static inline LUMEN_HD size_t lumen_dtype_bytes(lumen_dtype t)
{
    switch (t) {
    case LUMEN_U8: return 1;
    case LUMEN_U16:
    case LUMEN_F16:
    case LUMEN_BF16: return 2;
    case LUMEN_F32: return 4;
    }
    return 0;
}

/* Whether t holds floating-point values (its stores round to a float, never saturate). */
static inline LUMEN_HD int lumen_dtype_is_float(lumen_dtype t)
{
    return t == LUMEN_F32 || t == LUMEN_F16 || t == LUMEN_BF16;
}

/* Pixel of dtype t at p as f32. */
static inline LUMEN_HD float lumen_load_px(const void *p, lumen_dtype t)
{
    switch (t) {
    case LUMEN_U8: return (float)*(const uint8_t *)p;
    case LUMEN_U16: return (float)*(const uint16_t *)p;
    case LUMEN_F32: return *(const float *)p;
    case LUMEN_F16: return lumen_f16_to_f32(*(const uint16_t *)p);
    case LUMEN_BF16: return lumen_bf16_to_f32(*(const uint16_t *)p);
    }
    return 0.0f;
}

/* Stores v as dtype t: saturated for integers, rounded to nearest even for halves. */
static inline LUMEN_HD void lumen_store_px(void *p, lumen_dtype t, float v)
{
    switch (t) {
    case LUMEN_U8: *(uint8_t *)p = lumen_sat_u8(v); break;
    case LUMEN_U16: *(uint16_t *)p = lumen_sat_u16(v); break;
    case LUMEN_F32: *(float *)p = v; break;
    case LUMEN_F16: *(uint16_t *)p = lumen_f32_to_f16(v); break;
    case LUMEN_BF16: *(uint16_t *)p = lumen_f32_to_bf16(v); break;
    }
}

/* The elements a view touches, as offsets from its data pointer: *lo (<= 0: negative strides
 * reach below it) to *hi (>= 0). The core's byte extents and every module's staging copies
 * share this one rule. */
static inline LUMEN_HD void lumen_view_offsets(const lumen_image *v, int64_t *lo, int64_t *hi)
{
    const int64_t dims[4] = {v->n, v->c, v->h, v->w};
    const int64_t strides[4] = {v->stride_n, v->stride_c, v->stride_h, v->stride_w};
    *lo = *hi = 0;
    for (int i = 0; i < 4; i++) {
        const int64_t span = (dims[i] - 1) * strides[i];
        if (span < 0)
            *lo += span;
        else
            *hi += span;
    }
}

/* The kernel size OpenCV's GaussianBlur derives from sigma: round(sigma * 8 + 1) | 1, or
 * * 6 + 1 for 8-bit data; LUMEN_MAX_KSIZE + 1 (too large) when that passes the limit. */
static inline LUMEN_HD int lumen_gaussian_ksize_of(double sigma, int u8)
{
    const double k = sigma * (u8 ? 3 : 4) * 2 + 1;
    if (!(k < LUMEN_MAX_KSIZE)) return LUMEN_MAX_KSIZE + 1;
    return (int)lrint(k) | 1;
}

/* The sigma OpenCV's getGaussianKernel uses for an n-tap kernel when sigma <= 0. */
static inline LUMEN_HD double lumen_gaussian_sigma_of(double sigma, int n)
{
    return sigma > 0 ? sigma : ((n - 1) * 0.5 - 1) * 0.3 + 0.8;
}

#endif
