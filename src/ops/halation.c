/*
 * Halation (docs/film.md; Phos's apply_halation): light reflected from the film base. Per
 * channel E = max(x - threshold, 0) f_c energy_fraction; the layer is
 * 0.5 G(61, s) + 0.3 G(121, 2s) + 0.2 G(151, 4s) of E with OpenCV's truncated Gaussians
 * (border reflect101) and s = 0.2 psf_radius; it is rescaled per channel so that its sum is
 * E's; out = clip(x - E + layer, 0, 1).
 *
 * The three Gaussians are one linear filter: their weighted sum is one 151 x 151 kernel, the
 * same for every channel, so one filter2d call (the FFT on a large image: one kernel spectrum
 * for all channels) replaces Phos's nine blurs.
 */
#include "film_common.h"

#include <math.h>
#include <stdlib.h>

#define HALATION_K 151 /* the largest of the three kernels */

lumen_halation_params lumen_halation_params_default(void)
{
    /* Kodak Portra 400 (data/film_stocks.ini) */
    return (lumen_halation_params){.threshold = 0.5,
                                   .f = {0.021948, 0.0021808, 0.00043823},
                                   .energy_fraction = 0.03,
                                   .psf_radius = 80};
}

/* Adds weight x (g (x) g) of a k-tap Gaussian of sigma, centred, to the 151 x 151 kernel. */
static void add_gaussian(double *kernel, int k, double sigma, double weight)
{
    float taps[HALATION_K];
    lumen_gaussian_taps(k, sigma, taps);
    const int off = (HALATION_K - k) / 2;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            kernel[(i + off) * HALATION_K + j + off] += weight * (double)taps[i] * taps[j];
}

/* The one kernel of the three blurs. */
static float *halation_kernel(double psf_radius)
{
    double *k = calloc(HALATION_K * HALATION_K, sizeof *k);
    float *out = malloc(HALATION_K * HALATION_K * sizeof *out);
    if (k && out) {
        const double s = 0.2 * psf_radius;
        add_gaussian(k, 61, s, 0.5);
        add_gaussian(k, 121, 2 * s, 0.3);
        add_gaussian(k, HALATION_K, 4 * s, 0.2);
        for (int i = 0; i < HALATION_K * HALATION_K; i++)
            out[i] = (float)k[i];
    } else {
        free(out);
        out = NULL;
    }
    free(k);
    return out;
}

static lumen_status check_params(const lumen_halation_params *p)
{
    if (!p) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "params: NULL");
    if (!(p->threshold >= 0 && p->threshold <= 1))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "threshold: %g is not in [0, 1]",
                               p->threshold);
    if (!(p->energy_fraction >= 0 && p->energy_fraction <= 1))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "energy_fraction: %g is not in [0, 1]",
                               p->energy_fraction);
    if (!(p->psf_radius > 0 && p->psf_radius <= 10000))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "psf_radius: %g is not in (0, 10000]",
                               p->psf_radius);
    return film_check_triplet(p->f, 0, 1, "f");
}

/* The layer's scale per plane: E's energy over the layer's (Phos rescales when the layer
 * holds any, guard 1e-6). */
static lumen_status layer_scales(lumen_context *ctx, const lumen_image *src, const film_conv *k,
                                 const lumen_halation_params *p, const double gain[3], float *scale)
{
    const int64_t planes = src->n * src->c;
    double *sums = malloc((size_t)planes * 2 * sizeof *sums);
    if (!sums) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "halation: sums");
    lumen_status s = film_layer_sums(src, k, p->threshold, gain, sums, sums + planes, ctx->threads);
    for (int64_t i = 0; i < planes && !s; i++)
        scale[i] = sums[planes + i] > 1e-6 ? (float)(sums[i] / sums[planes + i]) : 1.0f;
    free(sums);
    return s;
}

/* One fused FFT pass per image (its channels share the kernel; each image has its own scales):
 * film_fused_scatter. LUMEN_ERR_UNSUPPORTED with nothing written where it does not apply. */
static lumen_status halation_fused(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const film_conv *k,
                                   const lumen_halation_params *p, const double gain[3],
                                   const float *scale, lumen_run_info *info)
{
    float g[3];
    for (int64_t c = 0; c < src->c; c++)
        g[c] = (float)gain[film_channel_param(src->c, c)];
    lumen_film_map m = {.in_scale = 1.0f / film_dtype_scale(src->dtype),
                        .out_scale = film_dtype_scale(dst->dtype),
                        .threshold = (float)p->threshold,
                        .gain = g};
    lumen_status s = LUMEN_OK;
    for (int64_t b = 0; b < src->n && !s; b++) {
        lumen_image sv = *src, dv = *dst;
        sv.data = lumen_px_addr(src, b, 0, 0, 0), dv.data = lumen_px_addr(dst, b, 0, 0, 0);
        sv.n = dv.n = 1;
        m.layer_gain = scale + b * src->c;
        s = film_fused_scatter(ctx, &sv, &dv, k, &m, info);
    }
    return s;
}

/* E, its convolution and the blend as passes of their own: any device. */
static lumen_status halation_passes(lumen_context *ctx, const lumen_image *src,
                                    const lumen_image *dst, const film_conv *k,
                                    const lumen_halation_params *p, const double gain[3],
                                    const float *scale, lumen_run_info *info)
{
    film_planes e = {0}, layer = {0};
    lumen_status s;
    if (!(s = film_highlights(src, &e, p->threshold, gain, ctx->threads)) &&
        !(s = film_planes_new(src, &layer))) {
        const lumen_image ev = film_planes_view(&e), lv = film_planes_view(&layer);
        lumen_filter_options o = lumen_filter_options_default();
        o.border = k->border;
        s = lumen_filter2d(ctx, &ev, &lv, k->kernel, k->size, k->size, &o, info);
        if (!s) film_scatter_back(src, dst, p->threshold, gain, &layer, scale, ctx->threads);
    }
    film_planes_free(&e);
    film_planes_free(&layer);
    return s;
}

lumen_status lumen_halation(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                            const lumen_halation_params *p, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s;
    if ((s = film_check(ctx, src, dst, "halation")) || (s = check_params(p))) return s;
    const double gain[3] = {p->f[0] * p->energy_fraction, p->f[1] * p->energy_fraction,
                            p->f[2] * p->energy_fraction};
    float *kernel = halation_kernel(p->psf_radius);
    float *scale = malloc((size_t)(src->n * src->c) * sizeof *scale);
    /* cv2.GaussianBlur's default border */
    const film_conv k = {.kernel = kernel, .size = HALATION_K, .border = LUMEN_BORDER_REFLECT101};
    if (!kernel || !scale) s = lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "halation: kernel");
    if (!s && !(s = layer_scales(ctx, src, &k, p, gain, scale)) &&
        (s = halation_fused(ctx, src, dst, &k, p, gain, scale, info)) == LUMEN_ERR_UNSUPPORTED) {
        lumen_clear_error();
        s = halation_passes(ctx, src, dst, &k, p, gain, scale, info);
    }
    free(kernel);
    free(scale);
    return s;
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum { HA_SRC, HA_THRESHOLD, HA_F, HA_ENERGY, HA_RADIUS, HA_N };

static const lumen_arg_desc halation_args[HA_N] = {
    [HA_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image, 1 or 3 channels, linear light in [0, 1] (u8/u16 scaled)"},
    [HA_THRESHOLD] = {.name = "threshold",
                      .type = LUMEN_ARG_REAL,
                      .def = {0.5, 0},
                      .max = 1,
                      .help = "values above it reach the film base"},
    [HA_F] = {.name = "f",
              .type = LUMEN_ARG_VECTOR,
              .flags = LUMEN_ARG_NULLABLE,
              .def_text = "Kodak Portra 400's: 0.021948, 0.0021808, 0.00043823",
              .help = "fraction reflected back per channel, (T_e T_b T_AH)^2 R_bp: 1 value or "
                      "3 (R, G, B)"},
    [HA_ENERGY] = {.name = "energy_fraction",
                   .type = LUMEN_ARG_REAL,
                   .def = {0.03, 0},
                   .max = 1,
                   .help = "artistic scale of the reflected energy (0.15 for stocks without an "
                           "anti-halation layer)"},
    [HA_RADIUS] = {.name = "psf_radius",
                   .type = LUMEN_ARG_REAL,
                   .def = {80, 0},
                   .min = 1e-3,
                   .max = 10000,
                   .help = "the halo's scale: the three Gaussians have sigma 0.2, 0.4 and 0.8 "
                           "times it"},
};

static lumen_status halation_invoke(lumen_context *ctx, const lumen_value *v,
                                    const lumen_image *out, lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_halation_desc;
    lumen_halation_params p = lumen_halation_params_default();
    p.threshold = lumen_value_real(d, v, HA_THRESHOLD);
    p.energy_fraction = lumen_value_real(d, v, HA_ENERGY);
    p.psf_radius = lumen_value_real(d, v, HA_RADIUS);
    lumen_status s = film_desc_triplet(&v[HA_F], "f", p.f);
    return s ? s : lumen_halation(ctx, v[HA_SRC].u.image, out, &p, info);
}

const lumen_op_desc lumen_halation_desc = {
    .name = "halation",
    .command = "halation",
    .summary = "film halation: light reflected from the film base (Phos's formula)",
    .help = "E = max(x - threshold, 0) * f[c] * energy_fraction per channel; E blurred by "
            "0.5 G(61, s) + 0.3 G(121, 2s) + 0.2 G(151, 4s) (OpenCV's Gaussians, border "
            "reflect101, s = 0.2 psf_radius), rescaled to keep E's energy; out = clip(x - E + "
            "layer, 0, 1). docs/film.md.",
    .args = halation_args,
    .n_args = HA_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the image with halation: src's shape, and src's dtype unless asked otherwise",
    .output_shape = lumen_desc_shape_like_src,
    .invoke = halation_invoke,
};
