/*
 * lumen_resize's coefficient tables, one rule at a time (docs/resize.md has each rule with its
 * source). Every rule first gives the raw taps of one output pixel -- input indices, possibly
 * outside the image, and weights -- and one assembler folds the out-of-range taps onto the
 * edge pixel (OpenCV's and torch's replicated edges; Pillow's and the antialiased taps never
 * leave the image), then places every window at a common width inside the image, so that the
 * kernels need no border code. The arithmetic follows each peer's own types (OpenCV's float
 * fractions from double positions, torch's float, Pillow's double) so that the indices agree
 * exactly and the weights within float rounding.
 */
#include "resize_taps.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RESIZE_PI 3.14159265358979323846

/* The most raw taps any output pixel may have for this spec. */
#define RAW_MAX_FIXED 8

typedef struct raw_taps {
    int n;
    int64_t *idx;
    double *w;
    double pos; /* Pillow's nearest: its running position */
} raw_taps;

double lumen_resize_cv_scale(const lumen_resize_axis_spec *s)
{
    const double inv = s->factor > 0 ? s->factor : (double)s->out / (double)s->in;
    return 1.0 / inv;
}

/* ---- OpenCV (imgproc/src/resize.cpp) ---- */

/* interpolateCubic: A = -0.75, in float as OpenCV. */
static void cv_cubic(float x, double *c)
{
    const float A = -0.75f;
    const float c0 = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    const float c1 = ((A + 2) * x - (A + 3)) * x * x + 1;
    const float c2 = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[0] = c0, c[1] = c1, c[2] = c2, c[3] = 1.f - c0 - c1 - c2;
}

/* Lanczos with a = 4 over the 8 taps sx-3 .. sx+4, normalised to sum 1 (interpolateLanczos4). */
static void cv_lanczos4(float x, double *c)
{
    double sum = 0;
    for (int i = 0; i < 8; i++) {
        const double t = (double)x + 3 - i;
        if (fabs(t) < FLT_EPSILON) {
            c[i] = 1e30; /* the sample itself: all the weight after normalising, as OpenCV */
        } else {
            const double y = RESIZE_PI * t;
            c[i] = 4.0 * sin(y) * sin(y / 4) / (y * y);
        }
        sum += c[i];
    }
    for (int i = 0; i < 8; i++)
        c[i] /= sum;
}

/* The area table of one output pixel (computeResizeAreaTab): the fractional overlap of its
 * cell with each input pixel over the cell's width (cut at the image's end). */
static void cv_area(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    const double scale = lumen_resize_cv_scale(s);
    const double fsx1 = (double)o * scale, fsx2 = fsx1 + scale;
    const double cell = fmin(scale, (double)s->in - fsx1);
    int64_t sx1 = (int64_t)ceil(fsx1), sx2 = (int64_t)floor(fsx2);
    if (sx2 > s->in - 1) sx2 = s->in - 1;
    if (sx1 > sx2) sx1 = sx2;
    t->n = 0;
    if (sx1 - fsx1 > 1e-3) t->idx[t->n] = sx1 - 1, t->w[t->n++] = (float)((sx1 - fsx1) / cell);
    for (int64_t x = sx1; x < sx2; x++)
        t->idx[t->n] = x, t->w[t->n++] = (float)(1.0 / cell);
    if (fsx2 - sx2 > 1e-3)
        t->idx[t->n] = sx2, t->w[t->n++] = (float)(fmin(fmin(fsx2 - sx2, 1.0), cell) / cell);
}

static void cv_taps(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    const double scale = lumen_resize_cv_scale(s);
    const lumen_interpolation ip = s->interpolation;
    if (ip == LUMEN_INTER_NEAREST) { /* resizeNN: floor(dx * (1 / inv_scale)) */
        const int64_t sx = (int64_t)floor((double)o * scale);
        t->n = 1, t->idx[0] = sx < s->in - 1 ? sx : s->in - 1, t->w[0] = 1;
        return;
    }
    if (ip == LUMEN_INTER_NEAREST_EXACT) {
        /* resizeNN_bitexact: floor((o + 0.5) in / out) in 16.16 fixed point, the half step
         * taken one unit short (equal to cv2 4.6 for every size pair 1..69 x 1..69) */
        const int64_t ifx = ((s->in << 16) + s->out / 2) / s->out;
        const int64_t ifx0 = ifx / 2 - 1;
        const int64_t sx = (ifx * o + ifx0) >> 16;
        t->n = 1, t->idx[0] = sx < s->in - 1 ? sx : s->in - 1, t->w[0] = 1;
        return;
    }
    if (ip == LUMEN_INTER_AREA && s->area_shrinks) {
        cv_area(s, o, t);
        return;
    }
    float fx;
    int64_t sx;
    if (ip == LUMEN_INTER_AREA) { /* INTER_AREA when an axis grows: linear with these fractions */
        const double inv = 1.0 / scale;
        sx = (int64_t)floor((double)o * scale);
        fx = (float)((double)(o + 1) - (double)(sx + 1) * inv);
        fx = fx <= 0 ? 0.f : fx - floorf(fx);
    } else {
        fx = (float)(((double)o + 0.5) * scale - 0.5);
        sx = (int64_t)floorf(fx);
        fx -= (float)sx;
    }
    if (ip == LUMEN_INTER_LINEAR || ip == LUMEN_INTER_AREA) {
        if (sx < 0) fx = 0, sx = 0;
        if (sx >= s->in - 1) fx = 0, sx = s->in - 1;
        t->n = 2;
        t->idx[0] = sx, t->idx[1] = sx + 1;
        t->w[0] = 1.f - fx, t->w[1] = fx;
    } else if (ip == LUMEN_INTER_CUBIC) {
        t->n = 4;
        cv_cubic(fx, t->w);
        for (int k = 0; k < 4; k++)
            t->idx[k] = sx - 1 + k;
    } else { /* lanczos */
        t->n = 8;
        cv_lanczos4(fx, t->w);
        for (int k = 0; k < 8; k++)
            t->idx[k] = sx - 3 + k;
    }
}

/* ---- Pillow (libImaging/Resample.c) and torch's antialiased taps ---- */

static double sinc(double x)
{
    if (x == 0.0) return 1.0;
    x *= RESIZE_PI;
    return sin(x) / x;
}

/* Pillow's filters; a = -0.5 for the cubic. */
static double pil_filter(lumen_interpolation ip, double x)
{
    switch (ip) {
    case LUMEN_INTER_BOX: return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
    case LUMEN_INTER_HAMMING:
        if (x < 0) x = -x;
        if (x == 0.0) return 1.0;
        if (x >= 1.0) return 0.0;
        x *= RESIZE_PI;
        return sin(x) / x * (0.54 + 0.46 * cos(x));
    case LUMEN_INTER_CUBIC: {
        const double a = -0.5;
        if (x < 0) x = -x;
        if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
        if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
        return 0.0;
    }
    case LUMEN_INTER_LANCZOS: return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
    default: /* linear */
        if (x < 0) x = -x;
        return x < 1.0 ? 1.0 - x : 0.0;
    }
}

static double pil_support(lumen_interpolation ip)
{
    switch (ip) {
    case LUMEN_INTER_BOX: return 0.5;
    case LUMEN_INTER_CUBIC: return 2.0;
    case LUMEN_INTER_LANCZOS: return 3.0;
    default: return 1.0; /* linear, hamming */
    }
}

/* precompute_coeffs: support scaled by the shrink factor, taps truncated at the image's edges
 * and renormalised. Pillow computes in double. */
static void pil_taps(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    const double scale = (double)s->in / (double)s->out;
    const double filterscale = scale < 1.0 ? 1.0 : scale;
    const double support = pil_support(s->interpolation) * filterscale;
    const double center = ((double)o + 0.5) * scale, ss = 1.0 / filterscale;
    int64_t xmin = (int64_t)(center - support + 0.5), xmax = (int64_t)(center + support + 0.5);
    if (xmin < 0) xmin = 0;
    if (xmax > s->in) xmax = s->in;
    double ww = 0;
    t->n = 0;
    for (int64_t x = xmin; x < xmax; x++) {
        const double w = pil_filter(s->interpolation, ((double)x - center + 0.5) * ss);
        t->idx[t->n] = x, t->w[t->n++] = w;
        ww += w;
    }
    for (int k = 0; k < t->n && ww != 0.0; k++)
        t->w[k] /= ww;
    if (t->n == 0) /* an output pixel past the input (cannot happen for out <= in * 2^k) */
        t->n = 1, t->idx[0] = s->in - 1, t->w[0] = 1;
}

/* Pillow's NEAREST (Geometry.c, ImagingScaleAffine): the position starts at in / out / 2 and
 * grows by in / out per output pixel, summed in double, then truncated; the sum's rounding
 * decides exact halves (36 -> 50: output 37 reads 26, not 27). Called for o = 0, 1, ... in
 * order, carrying the sum in t->pos. */
static void pil_nearest(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    const double a = (double)s->in / (double)s->out;
    t->pos = o == 0 ? a * 0.5 : t->pos + a;
    int64_t sx = (int64_t)t->pos;
    if (sx > s->in - 1) sx = s->in - 1;
    t->n = 1, t->idx[0] = sx, t->w[0] = 1;
}

/* ---- torch (aten/src/ATen/native/UpSample.h, cpu/UpSampleKernel.cpp), in float ---- */

/* area_pixel_compute_scale */
static float th_scale(const lumen_resize_axis_spec *s)
{
    if (s->align_corners) return s->out > 1 ? (float)(s->in - 1) / (float)(s->out - 1) : 0.f;
    return s->factor > 0 ? (float)(1.0 / s->factor) : (float)s->in / (float)s->out;
}

/* _compute_weights_aa: Pillow's coefficients with torch's scale, in float. */
static void th_aa_taps(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    const float scale = th_scale(s);
    const float interp = s->interpolation == LUMEN_INTER_CUBIC ? 4.f : 2.f;
    const float support = scale >= 1.0f ? interp * 0.5f * scale : interp * 0.5f;
    const float center = scale * ((float)o + 0.5f);
    const float invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
    int64_t xmin = (int64_t)(center - support + 0.5f);
    if (xmin < 0) xmin = 0;
    int64_t xmax = (int64_t)(center + support + 0.5f);
    if (xmax > s->in) xmax = s->in;
    float total = 0;
    t->n = 0;
    for (int64_t x = xmin; x < xmax; x++) {
        const float v =
            (float)pil_filter(s->interpolation, (double)(((float)x - center + 0.5f) * invscale));
        t->idx[t->n] = x, t->w[t->n++] = v;
        total += v;
    }
    for (int k = 0; k < t->n && total != 0.0f; k++)
        t->w[k] = (float)t->w[k] / total;
    if (t->n == 0) t->n = 1, t->idx[0] = s->in - 1, t->w[0] = 1;
}

static void th_taps(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    const lumen_interpolation ip = s->interpolation;
    if (ip == LUMEN_INTER_NEAREST || ip == LUMEN_INTER_NEAREST_EXACT) {
        int64_t sx;
        const float scale = s->factor > 0 ? (float)(1.0 / s->factor) : (float)s->in / (float)s->out;
        if (ip == LUMEN_INTER_NEAREST_EXACT)
            sx = (int64_t)floorf((float)(((double)o + 0.5) * scale));
        else if (s->out == s->in)
            sx = o;
        else if (s->out == 2 * s->in)
            sx = o >> 1;
        else
            sx = (int64_t)floorf((float)o * scale);
        t->n = 1, t->idx[0] = sx < s->in - 1 ? sx : s->in - 1, t->w[0] = 1;
        return;
    }
    if (ip == LUMEN_INTER_AREA) { /* adaptive_avg_pool: [floor(o in / out), ceil((o+1) in / out)) */
        const int64_t a = o * s->in / s->out, b = ((o + 1) * s->in + s->out - 1) / s->out;
        t->n = 0;
        for (int64_t x = a; x < b; x++)
            t->idx[t->n] = x, t->w[t->n++] = 1.0 / (double)(b - a);
        return;
    }
    if (s->antialias) {
        th_aa_taps(s, o, t);
        return;
    }
    const float scale = th_scale(s);
    float real = s->align_corners ? scale * (float)o : scale * ((float)o + 0.5f) - 0.5f;
    if (ip == LUMEN_INTER_LINEAR) {
        if (real < 0) real = 0;
        int64_t i0 = (int64_t)floorf(real);
        if (i0 > s->in - 1) i0 = s->in - 1;
        float l1 = real - (float)i0;
        l1 = l1 < 0 ? 0 : l1 > 1 ? 1 : l1;
        t->n = 2;
        t->idx[0] = i0, t->idx[1] = i0 < s->in - 1 ? i0 + 1 : i0;
        t->w[0] = 1.0f - l1, t->w[1] = l1;
        return;
    }
    /* bicubic, A = -0.75 (upsample_bicubic2d) */
    const int64_t i0 = (int64_t)floorf(real);
    const float x = real - (float)i0, A = -0.75f;
    const float x1 = x + 1, x2 = 1 - x, x3 = 2 - x;
    t->n = 4;
    t->w[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    t->w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    t->w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    t->w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
    for (int k = 0; k < 4; k++)
        t->idx[k] = i0 - 1 + k;
}

/* ---- the assembler ---- */

/* The most raw taps one output pixel of this spec can have. */
static int64_t raw_max(const lumen_resize_axis_spec *s)
{
    const double ratio = (double)s->in / (double)s->out;
    const double wide = ceil(ratio > 1 ? ratio : 1);
    if (s->rule == LUMEN_RESIZE_PILLOW)
        return (int64_t)ceil(pil_support(s->interpolation) * wide) * 2 + 3;
    if (s->rule == LUMEN_RESIZE_TORCH && s->antialias)
        return (int64_t)ceil((s->interpolation == LUMEN_INTER_CUBIC ? 2 : 1) * wide) * 2 + 3;
    if (s->interpolation == LUMEN_INTER_AREA) {
        const double sc = s->rule == LUMEN_RESIZE_OPENCV ? lumen_resize_cv_scale(s) : ratio;
        return (int64_t)ceil(sc > 1 ? sc : 1) + 3;
    }
    return RAW_MAX_FIXED;
}

static void raw_of(const lumen_resize_axis_spec *s, int64_t o, raw_taps *t)
{
    if (s->rule == LUMEN_RESIZE_OPENCV)
        cv_taps(s, o, t);
    else if (s->rule == LUMEN_RESIZE_TORCH)
        th_taps(s, o, t);
    else if (s->interpolation == LUMEN_INTER_NEAREST ||
             s->interpolation == LUMEN_INTER_NEAREST_EXACT)
        pil_nearest(s, o, t);
    else
        pil_taps(s, o, t);
    for (int k = 0; k < t->n; k++) /* replicated edges: a tap outside reads the edge pixel */
        t->idx[k] = t->idx[k] < 0 ? 0 : t->idx[k] >= s->in ? s->in - 1 : t->idx[k];
}

lumen_status lumen_resize_taps(const lumen_resize_axis_spec *s, lumen_resize_axis *axis, void **mem)
{
    const int64_t rmax = raw_max(s);
    int64_t *lo = malloc(sizeof(int64_t) * (size_t)s->out);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)rmax);
    double *w = malloc(sizeof(double) * (size_t)rmax);
    *mem = NULL;
    if (!lo || !idx || !w) goto oom;
    raw_taps t = {0, idx, w, 0};
    int64_t width = 1;
    for (int64_t o = 0; o < s->out; o++) { /* pass 1: the common window width */
        raw_of(s, o, &t);
        int64_t a = t.idx[0], b = t.idx[0];
        for (int k = 1; k < t.n; k++)
            a = t.idx[k] < a ? t.idx[k] : a, b = t.idx[k] > b ? t.idx[k] : b;
        lo[o] = a;
        if (b - a + 1 > width) width = b - a + 1;
    }
    /* first, weights and (Pillow u8) iweights, each 64-byte aligned */
    const size_t first_bytes = (sizeof(int32_t) * (size_t)s->out + 63) & ~(size_t)63;
    const size_t w_bytes = (sizeof(float) * (size_t)(s->out * width) + 63) & ~(size_t)63;
    char *m = calloc(1, first_bytes + w_bytes * (s->pillow_u8 ? 2 : 1) + 64);
    if (!m) goto oom;
    int32_t *first = (int32_t *)m;
    float *weights = (float *)(m + first_bytes);
    int32_t *iweights = s->pillow_u8 ? (int32_t *)(m + first_bytes + w_bytes) : NULL;
    for (int64_t o = 0; o < s->out; o++) { /* pass 2: windows of that width inside the image */
        raw_of(s, o, &t);
        const int64_t f = lo[o] < s->in - width ? lo[o] : s->in - width;
        first[o] = (int32_t)f;
        for (int k = 0; k < t.n; k++)
            weights[o * width + (t.idx[k] - f)] += (float)t.w[k];
        /* normalize_coeffs_8bpc: (int)(w * 2^22 +- 0.5), half away from zero (Pillow's taps
         * never share an index, so nothing is merged) */
        for (int k = 0; iweights && k < t.n; k++)
            iweights[o * width + (t.idx[k] - f)] =
                (int32_t)(t.w[k] * (1 << 22) + (t.w[k] < 0 ? -0.5 : 0.5));
    }
    free(lo), free(idx), free(w);
    *axis = (lumen_resize_axis){s->in, s->out, (int)width, first, weights, iweights};
    *mem = m;
    return LUMEN_OK;
oom:
    free(lo), free(idx), free(w);
    return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "resize: out of memory for the coefficients");
}
