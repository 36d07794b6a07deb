/*
 * The design of the fast Gaussian (LUMEN_PRECISION_FAST, docs/gaussian-fast.md), shared by
 * every backend that runs it: which method each axis takes, its pad, and Deriche's
 * coefficients as the f32 recursion uses them. The CPU backend (src/backends/cpu/
 * gaussian_fast.c) and the Vulkan module (src/backends/vulkan/gauss_fast.c) include it, so both
 * run the same filter. Plain C17 with static inline functions: modules may include it (it calls
 * nothing of the core).
 */
#ifndef LUMEN_GAUSSIAN_FAST_COEFFS_H
#define LUMEN_GAUSSIAN_FAST_COEFFS_H

#include "semantics.h"

#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Below this sigma the exact kernel runs (cheap, and Deriche's fit is least accurate there). */
#define LUMEN_GF_FIR_SIGMA 2.0
/* Pad of the recursive filter in sigmas when no exact start exists. */
#define LUMEN_GF_PAD_SIGMAS 5.0
/*
 * A larger sigma runs as this one: beyond it the poles round to 1 (the design
 * breaks down, e.g. NaN at 1e300). Measured exact to 1e-7 at 1e6 and 1e7; the
 * blur of a wider Gaussian differs from this one by about 2e-8 x side length
 * x range (replicate, the worst rule): within 1e-3 for sides up to 50000.
 */
#define LUMEN_GF_SIGMA_MAX 1e7
/* The most taps of the exact kernel for sigma < 2: lrint(8 sigma + 1) | 1 <= 19. */
#define LUMEN_GF_FIR_MAX_TAPS 19

/*
 * Deriche's filter as two complex one-pole sections (pole p_k, weight a_k):
 *   causal      z_k[i] = p_k z_k[i-1] + a_k x[i]             y+[i] = Re(z_0 + z_1)
 *   anticausal  w_k[i] = p_k w_k[i+1] + p_k a_k x[i+1]       y-[i] = Re(w_0 + w_1)
 * and y = y+ + y-. First-order complex sections keep f32 accurate where a
 * 4th-order direct form loses all digits (sigma > ~10).
 *
 * The input holds `pad` samples of border extension on each side. Causal
 * start: periodic == false, the steady state of a constant input x[0]
 * (g_k = a_k / (1 - p_k) per unit); periodic == true, zero, and after the
 * left pad (one whole period of the extension) the state is multiplied by
 * q_k = 1 / (1 - p_k^period), which sums all earlier periods exactly.
 * Anticausal start mirrors this at the right end (h_k = p_k a_k / (1 - p_k)).
 */
typedef struct lumen_gf_iir {
    bool periodic;
    float pr[2], pi[2]; /* p_k */
    float ar[2], ai[2]; /* a_k */
    float br[2], bi[2]; /* p_k a_k */
    float gr[2], gi[2]; /* g_k */
    float hr[2], hi[2]; /* h_k */
    float qr[2], qi[2]; /* q_k */
} lumen_gf_iir;

/* One axis of the filter: the exact kernel (fir) or the recursion, and its pad. */
typedef struct lumen_gf_axis_design {
    bool fir;
    int taps;         /* fir: OpenCV's kernel size lrint(8 sigma + 1) | 1 (<= 19) */
    lumen_gf_iir iir; /* !fir */
    int64_t pad;      /* samples of border extension on each side */
} lumen_gf_axis_design;

/* Period of the border extension of n samples (0: not periodic). */
static inline int64_t lumen_gf_border_period(lumen_border b, int64_t n)
{
    switch (b) {
    case LUMEN_BORDER_WRAP: return n;
    case LUMEN_BORDER_REFLECT: return 2 * n;
    case LUMEN_BORDER_REFLECT101: return n > 1 ? 2 * n - 2 : 1;
    default: return 0;
    }
}

static inline float lumen_gf_round(double complex v, float *im)
{
    *im = (float)cimag(v);
    return (float)creal(v);
}

/*
 * Coefficients for sigma (<= LUMEN_GF_SIGMA_MAX). Deriche (1993), 4th order:
 * h(t) = sum_k 2 Re(alpha_k exp(-lambda_k t / sigma)), his optimised constants to 10
 * digits. The poles are rounded to f32 first and the DC gain is computed from the rounded
 * poles, so the f32 filter sums to 1 (Deriche's own normalisation omits the doubly counted
 * h(0); Farneback & Westin).
 */
static inline void lumen_gf_design_iir(double sigma, int64_t period, bool periodic, lumen_gf_iir *c)
{
    const double complex alpha[2] = {0.8398646116180554 + 1.8674149134551790 * I,
                                     -0.3401391750903449 - 0.1299150239479813 * I};
    const double complex lambda[2] = {1.7831906544515104 + 0.6318113174569493 * I,
                                      1.7228297663338028 + 1.9969276832487770 * I};
    double complex p[2];
    double sum = 0.0, h0 = 0.0;
    for (int k = 0; k < 2; k++) {
        double complex e = cexp(-lambda[k] / sigma);
        p[k] = (double)(float)creal(e) + (double)(float)cimag(e) * I;
        sum += 2.0 * creal(alpha[k] / (1.0 - p[k]));
        h0 += 2.0 * creal(alpha[k]);
    }
    const double dc = 2.0 * sum - h0; /* causal sum + anticausal sum (which lacks h(0)) */
    c->periodic = periodic;
    for (int k = 0; k < 2; k++) {
        double complex a = 2.0 * alpha[k] / dc;
        c->pr[k] = lumen_gf_round(p[k], &c->pi[k]);
        c->ar[k] = lumen_gf_round(a, &c->ai[k]);
        c->br[k] = lumen_gf_round(p[k] * a, &c->bi[k]);
        c->gr[k] = lumen_gf_round(a / (1.0 - p[k]), &c->gi[k]);
        c->hr[k] = lumen_gf_round(p[k] * a / (1.0 - p[k]), &c->hi[k]);
        c->qr[k] =
            lumen_gf_round(periodic ? 1.0 / (1.0 - cpow(p[k], (double)period)) : 1.0, &c->qi[k]);
    }
}

/*
 * The axis of n samples with this sigma (> 0, finite) and border rule: sigma < 2 the exact
 * kernel, padded by taps / 2 (its taps are OpenCV's, lumen_gaussian_taps); else the
 * recursion, padded by one period of the rule when that is at most 5 sigma (exact start),
 * ceil(5 sigma) when the rule is periodic with a longer period, 1 for constant and replicate.
 */
static inline void lumen_gf_design_axis(double sigma, int64_t n, lumen_border b,
                                        lumen_gf_axis_design *a)
{
    *a = (lumen_gf_axis_design){.fir = sigma < LUMEN_GF_FIR_SIGMA};
    if (a->fir) {
        a->taps = lumen_gaussian_ksize_of(sigma, 0); /* lrint(8 sigma + 1) | 1 <= 19 */
        a->pad = a->taps / 2;
        return;
    }
    const int64_t period = lumen_gf_border_period(b, n);
    const bool periodic = period > 0 && (double)period <= LUMEN_GF_PAD_SIGMAS * sigma;
    /* not periodic: 5 sigma < period <= 2n, so the cast cannot overflow */
    a->pad = periodic ? period : period > 0 ? (int64_t)ceil(LUMEN_GF_PAD_SIGMAS * sigma) : 1;
    lumen_gf_design_iir(sigma < LUMEN_GF_SIGMA_MAX ? sigma : LUMEN_GF_SIGMA_MAX, period, periodic,
                        &a->iir);
}

#endif
