/* Moving pixel rows between images of any dtype/stride and f32 row buffers. */
#include "rows.h"

#include "semantics.h"

#include <stdbool.h>
#include <string.h>

/* Typed loops keep the dtype switch out of the per-pixel path; a literal step 1 vectorises. */
#define CONVERT_LOOP(T, step)                                                                      \
    do {                                                                                           \
        const T *q = (const T *)p;                                                                 \
        for (int64_t i = 0; i < m; i++)                                                            \
            out[i] = (float)q[i * (step)];                                                         \
    } while (0)

/* Strided halves, converted one by one (semantics.h's definitions). */
#define CONVERT_HALF(fn)                                                                           \
    do {                                                                                           \
        const uint16_t *q = (const uint16_t *)p;                                                   \
        for (int64_t i = 0; i < m; i++)                                                            \
            out[i] = fn(q[i * sw]);                                                                \
    } while (0)

static void convert_run(const lumen_row_kernels *rk, const char *p, int64_t sw, lumen_dtype t,
                        float *out, int64_t m)
{
    if (t == LUMEN_F32 && sw == 1)
        memcpy(out, p, (size_t)m * sizeof(float));
    else if (t == LUMEN_F32)
        CONVERT_LOOP(float, sw);
    else if (t == LUMEN_U8 && sw == 1)
        rk->load_u8((const uint8_t *)p, out, m);
    else if (t == LUMEN_U8)
        CONVERT_LOOP(uint8_t, sw);
    else if (t == LUMEN_F16 && sw == 1)
        rk->load_f16((const uint16_t *)p, out, m);
    else if (t == LUMEN_F16)
        CONVERT_HALF(lumen_f16_to_f32);
    else if (t == LUMEN_BF16 && sw == 1)
        rk->load_bf16((const uint16_t *)p, out, m);
    else if (t == LUMEN_BF16)
        CONVERT_HALF(lumen_bf16_to_f32);
    else if (sw == 1)
        rk->load_u16((const uint16_t *)p, out, m);
    else
        CONVERT_LOOP(uint16_t, sw);
}

/* Pixels [i0, i1) of a row segment from source pixel xs that lie outside the image, cp
 * channels each, by the border rule (the constant where it gives no pixel). The dtype's size
 * and f32 are decided once per run, not per pixel: on a 16 x 16 image with 13 taps these
 * pixels are 3/7 of all the row pass reads. */
static void load_border_run(const lumen_filter_job *job, int64_t cp, const char *row, int64_t xs,
                            int64_t i0, int64_t i1, float *out)
{
    const lumen_image *s = job->src;
    const int64_t es = (int64_t)lumen_dtype_size(s->dtype);
    const int64_t sw = s->stride_w * es, sc = s->stride_c * es;
    const bool f32 = s->dtype == LUMEN_F32;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t xx = lumen_border_index(xs + i, s->w, job->border);
        float *o = out + i * cp;
        if (xx < 0) {
            for (int64_t k = 0; k < cp; k++)
                o[k] = job->border_value;
            continue;
        }
        const char *p = row + xx * sw;
        for (int64_t k = 0; k < cp; k++)
            o[k] = f32 ? *(const float *)(p + k * sc) : lumen_load_px(p + k * sc, s->dtype);
    }
}

/* Whether the segment holds the whole row and border pixels on both sides (small images). */
static bool whole_row_inside(const lumen_image *s, int64_t xs, int64_t count)
{
    return xs < 0 && xs + count > s->w;
}

/* The segment of whole_row_inside: the row converted once into its place in out, then each
 * border pixel copied from out itself. Read from the source row instead, in between stores
 * to out, border pixels took 4-6 ns each: a 64 x 64 Gaussian (13 taps, reflect101) spent 29 %
 * of its call on them, and this halves the call (17 -> 8.6 us, docs/benchmarks.md). */
static void load_whole_row(const lumen_row_kernels *rk, const lumen_filter_job *job, int64_t cp,
                           const char *row, int64_t xs, int64_t count, float *out)
{
    const lumen_image *s = job->src;
    float *in = out - xs * cp; /* pixel 0 of the row */
    convert_run(rk, row, cp > 1 ? 1 : s->stride_w, s->dtype, in, s->w * cp);
    for (int64_t i = 0; i < count; i++) {
        const int64_t x = xs + i;
        if (x >= 0 && x < s->w) { /* the row itself: on to the right border */
            i = s->w - 1 - xs;
            continue;
        }
        const int64_t xx = lumen_border_index(x, s->w, job->border);
        for (int64_t k = 0; k < cp; k++)
            out[i * cp + k] = xx < 0 ? job->border_value : in[xx * cp + k];
    }
}

/*
 * Pixels xs .. xs+count-1 of source row yy (channels ch .. ch+cp-1) as f32,
 * the border rule applied in x; yy < 0 is a row of the constant.
 */
void lumen_rows_load(const lumen_row_kernels *rk, const lumen_filter_job *job, int64_t cp,
                     int64_t b, int64_t ch, int64_t yy, int64_t xs, int64_t count, float *out)
{
    const lumen_image *s = job->src;
    if (yy < 0) {
        for (int64_t i = 0; i < count * cp; i++)
            out[i] = job->border_value;
        return;
    }
    const char *row = lumen_px_addr(s, b, ch, yy, 0);
    if (whole_row_inside(s, xs, count)) {
        load_whole_row(rk, job, cp, row, xs, count, out);
        return;
    }
    int64_t i = xs < 0 ? (-xs < count ? -xs : count) : 0;
    load_border_run(job, cp, row, xs, 0, i, out);
    int64_t m = s->w - (xs + i);
    if (m > count - i) m = count - i;
    if (m > 0) { /* the interior: one run, contiguous when channels are packed */
        const int64_t es = (int64_t)lumen_dtype_size(s->dtype);
        convert_run(rk, row + (xs + i) * s->stride_w * es, cp > 1 ? 1 : s->stride_w, s->dtype,
                    out + i * cp, m * cp);
        i += m;
    }
    load_border_run(job, cp, row, xs, i, count, out);
}

/* Strided integer and half outputs: round (and saturate) contiguously (SIMD), then scatter. */
#define SCATTER_LOOP(T, store)                                                                     \
    do {                                                                                           \
        T tmp[256];                                                                                \
        for (int64_t i0 = 0; i0 < n; i0 += 256) {                                                  \
            int64_t m = n - i0 < 256 ? n - i0 : 256;                                               \
            store(in + i0, tmp, m);                                                                \
            T *q = (T *)p + i0 * sw;                                                               \
            for (int64_t i = 0; i < m; i++)                                                        \
                q[i * sw] = tmp[i];                                                                \
        }                                                                                          \
    } while (0)

void lumen_rows_store(const lumen_row_kernels *rk, const lumen_image *d, int64_t cp,
                      const float *in, char *p, int64_t n)
{
    const int64_t sw = cp > 1 ? 1 : d->stride_w; /* packed rows are contiguous */
    if (d->dtype == LUMEN_U8 && sw == 1) {
        rk->store_u8(in, (uint8_t *)p, n);
    } else if (d->dtype == LUMEN_U16 && sw == 1) {
        rk->store_u16(in, (uint16_t *)p, n);
    } else if (d->dtype == LUMEN_U8) {
        SCATTER_LOOP(uint8_t, rk->store_u8);
    } else if (d->dtype == LUMEN_U16) {
        SCATTER_LOOP(uint16_t, rk->store_u16);
    } else if (d->dtype == LUMEN_F16 && sw == 1) {
        rk->store_f16(in, (uint16_t *)p, n);
    } else if (d->dtype == LUMEN_F16) {
        SCATTER_LOOP(uint16_t, rk->store_f16);
    } else if (d->dtype == LUMEN_BF16 && sw == 1) {
        rk->store_bf16(in, (uint16_t *)p, n);
    } else if (d->dtype == LUMEN_BF16) {
        SCATTER_LOOP(uint16_t, rk->store_bf16);
    } else if (sw == 1) {
        memcpy(p, in, sizeof(float) * (size_t)n);
    } else {
        float *q = (float *)p;
        for (int64_t i = 0; i < n; i++)
            q[i * sw] = in[i];
    }
}
