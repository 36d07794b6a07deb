/*
 * The fast CPU conv_transpose2d: the transposed conv split by output phase into ordinary
 * stride-1 conv2d jobs for the im2col + SGEMM path (conv_gemm.c).
 *
 * Along one axis (h; w is the same), output row oy receives x[iy] * w[r] whenever
 * oy = iy*s - p + r*d. Group the outputs by phase a = (oy + p) mod s, i.e. oy = a - p + s*t.
 * A tap r reaches phase a only if r*d = a (mod s), and then iy = t - q_r with
 * q_r = (r*d - a) / s. The taps of a phase are every (s / gcd(s, d))-th r, their q_r step by
 * d' = d / gcd(s, d), so with the taps reversed (r' = 0 the largest q) the phase is
 *     y[a - p + s*(t0 + t')] = sum_r' x[t' - (q_max - t0) + r'*d'] * w[r(r')],
 * a stride-1 conv2d with dilation d' and (possibly negative) padding q_max - t0, whose output
 * is every s-th row of y. Channels swap roles: per group, w (C, K/g, R, S) becomes
 * w' (K, C/g, R', S'). Every output belongs to exactly one phase (h phase x w phase), so each
 * gets its bias once; a phase no tap reaches holds the bias alone. Costs: the same multiplies
 * as the scattered definition, no zero-stuffing, and one pass over w to build the phases'
 * weights.
 */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

/* The taps and output rows of one phase along one axis. */
typedef struct axis_phase {
    int64_t taps;   /* R': valid r */
    int64_t r_hi;   /* the valid r with the largest q (r' = 0) */
    int64_t r_step; /* r(r') = r_hi - r' * r_step */
    int64_t dil;    /* d' */
    int64_t pad;    /* q_max - t0 */
    int64_t out0;   /* first output row of the phase */
    int64_t outs;   /* output rows of the phase (may be 0) */
} axis_phase;

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        const int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* floor(a / b) for b > 0 and any sign of a. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Phase a of an axis with kernel taps R, stride s, padding p, dilation d and out outputs. */
static axis_phase phase_of(int64_t a, int64_t R, int64_t s, int64_t p, int64_t d, int64_t out)
{
    axis_phase ph = {0};
    const int64_t g = gcd64(s, d);
    ph.r_step = s / g, ph.dil = d / g;
    int64_t r_lo = -1; /* smallest r with r*d = a (mod s) */
    for (int64_t r = 0; r < R && r < s; r++)
        if ((r * d) % s == a) {
            r_lo = r;
            break;
        }
    const int64_t t0 = floor_div(p - a + s - 1, s); /* first t with a - p + s*t >= 0 */
    const int64_t t1 = floor_div(out - 1 + p - a, s);
    ph.outs = t1 >= t0 ? t1 - t0 + 1 : 0;
    ph.out0 = a - p + s * t0;
    if (r_lo < 0) return ph; /* no tap reaches this phase */
    ph.taps = (R - 1 - r_lo) / ph.r_step + 1;
    ph.r_hi = r_lo + (ph.taps - 1) * ph.r_step;
    ph.pad = (ph.r_hi * d - a) / s - t0;
    return ph;
}

/* w (C, K/g, R, S) to the phase's forward weights (K, C/g, R', S'), contiguous. */
static void phase_weights(const lumen_image *w, int64_t groups, const axis_phase *ph,
                          const axis_phase *pw, float *dst)
{
    const float *wd = (const float *)w->data;
    const int64_t cg = w->n / groups, kg = w->c;
    for (int64_t k = 0; k < kg * groups; k++) {
        const int64_t g = k / kg, kk = k % kg;
        for (int64_t c = 0; c < cg; c++) {
            const float *src = wd + (g * cg + c) * w->stride_n + kk * w->stride_c;
            for (int64_t r = 0; r < ph->taps; r++) {
                const float *row = src + (ph->r_hi - r * ph->r_step) * w->stride_h;
                for (int64_t s = 0; s < pw->taps; s++)
                    *dst++ = row[(pw->r_hi - s * pw->r_step) * w->stride_w];
            }
        }
    }
}

/* The outputs of a phase no tap reaches: bias (or 0). */
static void fill_bias(const lumen_image *y, const float *bias)
{
    for (int64_t n = 0; n < y->n; n++)
        for (int64_t k = 0; k < y->c; k++) {
            const float v = bias ? bias[k] : 0.0f;
            float *plane = (float *)y->data + n * y->stride_n + k * y->stride_c;
            for (int64_t i = 0; i < y->h; i++)
                for (int64_t j = 0; j < y->w; j++)
                    plane[i * y->stride_h + j * y->stride_w] = v;
        }
}

/* y's rows out0, out0 + s, ... of one phase pair, as a view. */
static lumen_image phase_view(const lumen_image *y, const axis_phase *ph, const axis_phase *pw,
                              int64_t sh, int64_t sw)
{
    lumen_image v = *y;
    v.data = (float *)y->data + ph->out0 * y->stride_h + pw->out0 * y->stride_w;
    v.h = ph->outs, v.w = pw->outs;
    v.stride_h = y->stride_h * sh, v.stride_w = y->stride_w * sw;
    return v;
}

static lumen_status run_phase(lumen_context *ctx, const lumen_conv_job *job, const axis_phase *ph,
                              const axis_phase *pw, float *wbuf, const char **isa)
{
    const lumen_conv2d_params *p = &job->p;
    const lumen_image yv = phase_view(job->y, ph, pw, p->stride_h, p->stride_w);
    if (yv.h == 0 || yv.w == 0) return LUMEN_OK;
    if (ph->taps == 0 || pw->taps == 0) {
        fill_bias(&yv, job->bias);
        return LUMEN_OK;
    }
    phase_weights(job->w, p->groups, ph, pw, wbuf);
    const int64_t k = job->y->c, cg = job->w->n / p->groups;
    const lumen_image wv = lumen_image_nchw(wbuf, LUMEN_F32, k, cg, ph->taps, pw->taps);
    lumen_conv_job fwd = {
        .x = job->x,
        .w = &wv,
        .y = &yv,
        .bias = job->bias,
        .p = {.stride_h = 1,
              .stride_w = 1,
              .pad_h = ph->pad,
              .pad_w = pw->pad,
              .dilation_h = ph->dil,
              .dilation_w = pw->dil,
              .groups = p->groups}};
    return lumen_cpu_conv2d_gemm(ctx, &fwd, isa);
}

lumen_status lumen_cpu_conv_transpose2d_gemm(lumen_context *ctx, const lumen_conv_job *job,
                                             const char **isa)
{
    const lumen_image *w = job->w, *y = job->y;
    const lumen_conv2d_params *p = &job->p;
    const size_t bytes = (size_t)(w->n * w->c * w->h * w->w) * sizeof(float);
    float *wbuf = malloc(bytes);
    if (!wbuf)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "conv_transpose2d: cannot allocate %zu "
                               "bytes of phase weights",
                               bytes);
    /* Only the phases of outputs 0 .. min(stride, out) - 1 hold outputs (a = (o + p) mod s):
     * a stride of 2^31 - 1 on a small output must not visit 2^31 empty phases. */
    const int64_t nh = p->stride_h < y->h ? p->stride_h : y->h;
    const int64_t nw = p->stride_w < y->w ? p->stride_w : y->w;
    lumen_status s = LUMEN_OK;
    for (int64_t oh = 0; oh < nh && !s; oh++) {
        const int64_t a = (oh + p->pad_h) % p->stride_h;
        const axis_phase ph = phase_of(a, w->h, p->stride_h, p->pad_h, p->dilation_h, y->h);
        for (int64_t ow = 0; ow < nw && !s; ow++) {
            const int64_t b = (ow + p->pad_w) % p->stride_w;
            const axis_phase pw = phase_of(b, w->w, p->stride_w, p->pad_w, p->dilation_w, y->w);
            s = run_phase(ctx, job, &ph, &pw, wbuf, isa);
        }
    }
    free(wbuf);
    return s;
}
