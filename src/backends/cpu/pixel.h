/* Loading and storing pixels of any dtype as f32, with OpenCV's saturation. */
#ifndef LUMEN_CPU_PIXEL_H
#define LUMEN_CPU_PIXEL_H

#include "lumen.h"

#include <math.h>
#include <stdint.h>

static inline float lumen_load_px(const void *p, lumen_dtype t)
{
    switch (t) {
    case LUMEN_U8: return (float)*(const uint8_t *)p;
    case LUMEN_U16: return (float)*(const uint16_t *)p;
    case LUMEN_F32: return *(const float *)p;
    }
    return 0.0f;
}

/*
 * Round to nearest, ties to even (as cvRound), then saturate. NaN gives 0 as
 * in OpenCV; values beyond the int range saturate (OpenCV's cvRound wraps
 * them to INT_MIN and so gives 0 there — see docs/semantics.md).
 */
static inline uint8_t lumen_sat_u8(float v)
{
    if (!(v > 0.0f)) return 0;
    if (v >= 255.0f) return 255;
    return (uint8_t)lrintf(v);
}

static inline uint16_t lumen_sat_u16(float v)
{
    if (!(v > 0.0f)) return 0;
    if (v >= 65535.0f) return 65535;
    return (uint16_t)lrintf(v);
}

static inline void lumen_store_px(void *p, lumen_dtype t, float v)
{
    switch (t) {
    case LUMEN_U8: *(uint8_t *)p = lumen_sat_u8(v); break;
    case LUMEN_U16: *(uint16_t *)p = lumen_sat_u16(v); break;
    case LUMEN_F32: *(float *)p = v; break;
    }
}

/* Address of element (b, ch, y, x) of a view. */
static inline char *lumen_px_addr(const lumen_image *im, int64_t b, int64_t ch, int64_t y, int64_t x)
{
    int64_t off = b * im->stride_n + ch * im->stride_c + y * im->stride_h + x * im->stride_w;
    return (char *)im->data + off * (int64_t)lumen_dtype_size(im->dtype);
}

#endif
