/*
 * What the op harnesses (fuzz_ops.c, fuzz_conv.c) share: reading parameters from the fuzz
 * input, views whose buffers are exactly their extent (so ASan sees any access outside a view),
 * element access, and the comparison rule of tests/c/support/tolerances.h.
 */
#ifndef LUMEN_FUZZ_UTIL_H
#define LUMEN_FUZZ_UTIL_H

#include "fuzz_check.h"
#include <lumen.h>

#include "internal.h"  /* the context's ISA flags: the fuzzer picks the kernels it runs */
#include "semantics.h" /* f16 / bf16 elements */
#include "tolerances.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the input as a parameter stream --------------------------------------------------- */

/* Reads bytes in order; past the end every read is 0, so a short input is a valid one (the
 * fuzzer grows it only where more bytes change the behaviour). Data that must not go flat
 * when the input ends (kernels, pixels) comes from rng, seeded by the input. */
typedef struct fz_in {
    const uint8_t *p;
    size_t n;
    uint64_t rng;
} fz_in;

static inline uint8_t fz_u8(fz_in *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

/* Two reads in sequence (the operands of | are unsequenced). */
static inline uint16_t fz_u16(fz_in *in)
{
    const uint16_t lo = fz_u8(in);
    return (uint16_t)(lo | fz_u8(in) << 8);
}

/* One of `count` choices. */
static inline int fz_pick(fz_in *in, int count)
{
    return fz_u8(in) % count;
}

static inline uint32_t fz_rand(fz_in *in)
{
    /* splitmix64: any seed gives a well-spread stream */
    uint64_t z = (in->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* A finite value: from the input while it lasts (signed 16-bit fixed point / 4096, so the
 * fuzzer can reach 0, 1, -1 and exact halves), then from rng. */
static inline float fz_tap(fz_in *in)
{
    const int16_t v = in->n >= 2 ? (int16_t)fz_u16(in) : (int16_t)(fz_rand(in) & 0xffff);
    return (float)v / 4096.0f;
}

/* ---- views with exact buffers ------------------------------------------------------------ */

typedef enum fz_layout {
    FZ_NHWC,          /* interleaved */
    FZ_NCHW,          /* planar */
    FZ_NCHW_FLIPPED,  /* planar, every stride negative */
    FZ_NHWC_BOTTOMUP, /* interleaved, rows bottom-up */
    FZ_LAYOUTS
} fz_layout;

static inline int64_t fz_count(const lumen_image *v)
{
    return v->n * v->c * v->h * v->w;
}

/* A view of layout l over buf, which holds exactly n*c*h*w elements of dtype t. */
static inline lumen_image fz_view(void *buf, fz_layout l, lumen_dtype t, int64_t n, int64_t c,
                                  int64_t h, int64_t w)
{
    lumen_image v = l == FZ_NCHW || l == FZ_NCHW_FLIPPED ? lumen_image_nchw(buf, t, n, c, h, w)
                                                         : lumen_image_nhwc(buf, t, n, h, w, c);
    const size_t es = lumen_dtype_size(t);
    if (l == FZ_NCHW_FLIPPED) {
        v.stride_c = -v.stride_c, v.stride_h = -v.stride_h, v.stride_w = -v.stride_w;
        v.stride_n = -v.stride_n;
        v.data = (char *)buf + (size_t)(n * c * h * w - 1) * es;
    } else if (l == FZ_NHWC_BOTTOMUP) {
        v.stride_h = -v.stride_h;
        v.data = (char *)buf + (size_t)((h - 1) * w * c) * es;
    }
    return v;
}

static inline void *fz_at(const lumen_image *v, int64_t b, int64_t c, int64_t y, int64_t x)
{
    const int64_t off = b * v->stride_n + c * v->stride_c + y * v->stride_h + x * v->stride_w;
    return (char *)v->data + off * (int64_t)lumen_dtype_size(v->dtype);
}

static inline double fz_get(const lumen_image *v, int64_t b, int64_t c, int64_t y, int64_t x)
{
    const void *p = fz_at(v, b, c, y, x);
    switch (v->dtype) {
    case LUMEN_U8: return *(const uint8_t *)p;
    case LUMEN_U16: return *(const uint16_t *)p;
    case LUMEN_F16:
    case LUMEN_BF16: return lumen_load_px(p, v->dtype);
    default: return *(const float *)p;
    }
}

static inline void fz_set(const lumen_image *v, int64_t b, int64_t c, int64_t y, int64_t x,
                          double val)
{
    void *p = fz_at(v, b, c, y, x);
    switch (v->dtype) {
    case LUMEN_U8: *(uint8_t *)p = (uint8_t)val; break;
    case LUMEN_U16: *(uint16_t *)p = (uint16_t)val; break;
    case LUMEN_F16:
    case LUMEN_BF16: lumen_store_px(p, v->dtype, (float)val); break; /* nearest even */
    default: *(float *)p = (float)val; break;
    }
}

/* Round to nearest even, then saturate (NaN to 0): tolerances.h's Q (halves: rounded to them). */
static inline double fz_quantize(double v, lumen_dtype t)
{
    if (t == LUMEN_F32) return v;
    if (t == LUMEN_F16 || t == LUMEN_BF16) {
        uint16_t h;
        lumen_store_px(&h, t, (float)v);
        return lumen_load_px(&h, t);
    }
    const double hi = t == LUMEN_U8 ? 255.0 : 65535.0;
    if (!(v > 0.0)) return 0.0;
    return v >= hi ? hi : nearbyint(v);
}

/* tolerances.h's rule for one element: f32 within t (NaN meets NaN, an infinity the same
 * infinity); integers within [Q(r - t), Q(r + t)] of the unrounded reference r. */
static inline int fz_element_ok(double got, double r, double t, lumen_dtype dst)
{
    if (dst != LUMEN_F32 && isnan(r)) return lumen_dtype_is_float(dst) ? isnan(got) : got == 0.0;
    if (dst != LUMEN_F32) return got >= fz_quantize(r - t, dst) && got <= fz_quantize(r + t, dst);
    if (isnan(got) || isnan(r)) return isnan(got) && isnan(r);
    if (isinf(got) || isinf(r)) return got == r;
    return fabs(got - r) <= t;
}

/* A context: the scalar reference (simd 0) or a fast path with the given kernels. */
typedef enum fz_isa { FZ_ISA_BEST, FZ_ISA_AVX2, FZ_ISA_GENERIC, FZ_ISAS } fz_isa;

static inline lumen_context *fz_context(int simd, fz_isa isa, int threads)
{
    lumen_context *ctx = NULL;
    FUZZ_CHECK(lumen_context_create(&ctx) == LUMEN_OK, "%s", lumen_last_error());
    FUZZ_CHECK(lumen_context_set_threads(ctx, threads) == LUMEN_OK, "%s", lumen_last_error());
    FUZZ_CHECK(lumen_context_set_simd(ctx, simd) == LUMEN_OK, "%s", lumen_last_error());
    FUZZ_CHECK(lumen_context_set_device(ctx, "cpu") == LUMEN_OK, "%s", lumen_last_error());
    /* The kernels below the best this CPU has, as test_support's engines lower them. */
    if (isa != FZ_ISA_BEST) ctx->cpu_avx512 = false;
    if (isa == FZ_ISA_GENERIC) ctx->cpu_avx2 = false;
    return ctx;
}

#endif
