/*
 * Bloom (docs/film.md; Phos's apply_wavelength_bloom / apply_bloom_with_psf): light scattered
 * in the emulsion. Per channel E = max(x - threshold, 0) eta_c; out = clip(x - E + E (*) K_c,
 * 0, 1), K_c(r) = rho exp(-r^2 / 2 sigma^2) + (1 - rho) exp(-r / kappa) on a (2R + 1)^2 square
 * normalised to sum 1, R = int(4 max sigma) for every channel, border reflect (cv2.filter2D
 * with BORDER_REFLECT). Channels whose PSFs are equal share one filter2d call (one kernel
 * spectrum on the FFT path).
 */
#include "film_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

lumen_bloom_params lumen_bloom_params_default(void)
{
    /* Kodak Portra 400 (data/film_stocks.ini): a PSF of about 20 px core, 30 px tail */
    return (lumen_bloom_params){.threshold = 0.8,
                                .eta = {0.1, 0.1, 0.1},
                                .sigma = {20, 20, 20},
                                .kappa = {30, 30, 30},
                                .rho = {0.95, 0.95, 0.95},
                                .radius = 0};
}

static lumen_status check_params(const lumen_bloom_params *p)
{
    if (!p) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "params: NULL");
    if (!(p->threshold >= 0 && p->threshold <= 1))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "threshold: %g is not in [0, 1]",
                               p->threshold);
    if (p->radius < 0 || p->radius > LUMEN_MAX_KSIZE / 2)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "radius: %d is not in [0, %d]",
                               p->radius, LUMEN_MAX_KSIZE / 2);
    lumen_status s;
    if ((s = film_check_triplet(p->eta, 0, 1, "eta")) ||
        (s = film_check_triplet(p->sigma, 1e-3, LUMEN_MAX_KSIZE / 8, "sigma")) ||
        (s = film_check_triplet(p->kappa, 1e-3, 1e6, "kappa")) ||
        (s = film_check_triplet(p->rho, 0, 1, "rho")))
        return s;
    return LUMEN_OK;
}

/* Phos's radius: int(4 max sigma) over the channels, unless given. */
static int radius_of(const lumen_bloom_params *p)
{
    if (p->radius > 0) return p->radius;
    const double m = fmax(p->sigma[0], fmax(p->sigma[1], p->sigma[2]));
    const int r = (int)(4 * m);
    return r < 1 ? 1 : r > LUMEN_MAX_KSIZE / 2 ? LUMEN_MAX_KSIZE / 2 : r;
}

/* The normalised PSF of channel parameter i, (2R + 1)^2 taps. */
static float *psf(const lumen_bloom_params *p, int i, int radius)
{
    const int size = 2 * radius + 1;
    double *k = malloc((size_t)size * size * sizeof *k);
    float *out = malloc((size_t)size * size * sizeof *out);
    if (!k || !out) {
        free(k), free(out);
        return NULL;
    }
    double sum = 0;
    for (int y = -radius; y <= radius; y++)
        for (int x = -radius; x <= radius; x++) {
            const double r = sqrt((double)(x * x + y * y));
            const double v = p->rho[i] * exp(-r * r / (2 * p->sigma[i] * p->sigma[i])) +
                             (1 - p->rho[i]) * exp(-r / p->kappa[i]);
            k[(y + radius) * size + x + radius] = v;
            sum += v;
        }
    for (int t = 0; t < size * size; t++) /* Phos: a delta when the sum vanishes */
        out[t] = sum > 1e-10 ? (float)(k[t] / sum) : (t == size * size / 2 ? 1.0f : 0.0f);
    free(k);
    return out;
}

static bool same_psf(const lumen_bloom_params *p, int a, int b)
{
    return p->sigma[a] == p->sigma[b] && p->kappa[a] == p->kappa[b] && p->rho[a] == p->rho[b];
}

/* E (*) K of channels [c0, c0 + nc) (all of them with nc = c) into `scattered`. */
static lumen_status scatter(lumen_context *ctx, const film_planes *e, film_planes *scattered,
                            const float *kernel, int size, int64_t c0, int64_t nc,
                            lumen_run_info *info)
{
    lumen_image ev = film_planes_view(e), sv = film_planes_view(scattered);
    ev.data = film_plane(e, 0, c0), sv.data = film_plane(scattered, 0, c0);
    ev.c = sv.c = nc;
    lumen_filter_options o = lumen_filter_options_default();
    o.border = LUMEN_BORDER_REFLECT; /* cv2.BORDER_REFLECT, as Phos passes it */
    return lumen_filter2d(ctx, &ev, &sv, kernel, size, size, &o, info);
}

/* Every channel's E (*) K_c: one call when the PSFs are equal, else one per channel. */
static lumen_status scatter_all(lumen_context *ctx, const lumen_bloom_params *p,
                                const film_planes *e, film_planes *scattered, lumen_run_info *info)
{
    const int radius = radius_of(p), size = 2 * radius + 1;
    const bool one = e->c == 1 || (same_psf(p, 0, 1) && same_psf(p, 1, 2));
    lumen_status s = LUMEN_OK;
    for (int64_t c = 0; c < (one ? 1 : e->c) && !s; c++) {
        float *k = psf(p, film_channel_param(e->c, c), radius);
        if (!k) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "bloom: PSF");
        s = scatter(ctx, e, scattered, k, size, one ? 0 : c, one ? e->c : 1, info);
        free(k);
    }
    return s;
}

/* The whole bloom in one fused FFT pass (film_fused_scatter), each channel with its own PSF;
 * LUMEN_ERR_UNSUPPORTED with nothing written where that path does not apply. */
static lumen_status bloom_fused(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                                const lumen_bloom_params *p, lumen_run_info *info)
{
    const int radius = radius_of(p);
    float gain[3], *psfs[3] = {NULL, NULL, NULL};
    const float unit[3] = {1.0f, 1.0f, 1.0f};
    lumen_status s = LUMEN_OK;
    for (int64_t c = 0; c < src->c && !s; c++) {
        gain[c] = (float)p->eta[film_channel_param(src->c, c)];
        if (!(psfs[c] = psf(p, film_channel_param(src->c, c), radius)))
            s = lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "bloom: PSF");
    }
    const lumen_film_map m = {.in_scale = 1.0f / film_dtype_scale(src->dtype),
                              .out_scale = film_dtype_scale(dst->dtype),
                              .threshold = (float)p->threshold,
                              .gain = gain,
                              .layer_gain = unit,
                              .kernels = (const float *const *)psfs};
    const film_conv conv = {.kernel = psfs[0],
                            .size = 2 * radius + 1,
                            .border = LUMEN_BORDER_REFLECT}; /* as Phos passes it */
    if (!s) s = film_fused_scatter(ctx, src, dst, &conv, &m, info);
    for (int c = 0; c < 3; c++)
        free(psfs[c]);
    return s;
}

lumen_status lumen_bloom(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                         const lumen_bloom_params *p, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s;
    if ((s = film_check(ctx, src, dst, "bloom")) || (s = check_params(p))) return s;
    if ((s = bloom_fused(ctx, src, dst, p, info)) != LUMEN_ERR_UNSUPPORTED) return s;
    lumen_clear_error(); /* the passes below, on any device */
    film_planes e = {0}, scattered = {0};
    if (!(s = film_highlights(src, &e, p->threshold, p->eta, ctx->threads)) &&
        !(s = film_planes_new(src, &scattered))) {
        /* a batch: planes of one channel are not adjacent, so the per-channel calls take
         * one image at a time */
        for (int64_t b = 0; b < e.n && !s; b++) {
            film_planes eb = e, sb = scattered;
            eb.data = film_plane(&e, b, 0), sb.data = film_plane(&scattered, b, 0);
            eb.n = sb.n = 1;
            s = scatter_all(ctx, p, &eb, &sb, info);
        }
        if (!s) film_scatter_back(src, dst, p->threshold, p->eta, &scattered, NULL, ctx->threads);
    }
    film_planes_free(&e);
    film_planes_free(&scattered);
    return s;
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum { BL_SRC, BL_THRESHOLD, BL_ETA, BL_SIGMA, BL_KAPPA, BL_RHO, BL_RADIUS, BL_N };

#define BL_TRIPLET(name_, def_, help_)                                                             \
    {                                                                                              \
        .name = name_, .type = LUMEN_ARG_VECTOR, .flags = LUMEN_ARG_NULLABLE, .def_text = def_,    \
        .help = help_ ": 1 value or 3 (R, G, B)"                                                   \
    }

static const lumen_arg_desc bloom_args[BL_N] = {
    [BL_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image, 1 or 3 channels, linear light in [0, 1] (u8/u16 scaled)"},
    [BL_THRESHOLD] = {.name = "threshold",
                      .type = LUMEN_ARG_REAL,
                      .def = {0.8, 0},
                      .max = 1,
                      .help = "values above it scatter"},
    [BL_ETA] = BL_TRIPLET("eta", "0.1", "fraction of the highlights scattered per channel"),
    [BL_SIGMA] = BL_TRIPLET("sigma", "20", "the PSF core's Gaussian sigma in pixels"),
    [BL_KAPPA] = BL_TRIPLET("kappa", "30", "the PSF tail's exponential length in pixels"),
    [BL_RHO] = BL_TRIPLET("rho", "0.95", "the core's share of the PSF"),
    [BL_RADIUS] = {.name = "radius",
                   .type = LUMEN_ARG_INT,
                   .def = {0, 0},
                   .def_text = "int(4 max sigma)",
                   .max = LUMEN_MAX_KSIZE / 2,
                   .help = "PSF radius in pixels (the kernel is 2 radius + 1 wide); 0: Phos's "
                           "int(4 max sigma)"},
};

static lumen_status bloom_invoke(lumen_context *ctx, const lumen_value *v, const lumen_image *out,
                                 lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_bloom_desc;
    lumen_bloom_params p = lumen_bloom_params_default();
    p.threshold = lumen_value_real(d, v, BL_THRESHOLD);
    p.radius = (int)lumen_value_int(d, v, BL_RADIUS);
    lumen_status s;
    if ((s = film_desc_triplet(&v[BL_ETA], "eta", p.eta)) ||
        (s = film_desc_triplet(&v[BL_SIGMA], "sigma", p.sigma)) ||
        (s = film_desc_triplet(&v[BL_KAPPA], "kappa", p.kappa)) ||
        (s = film_desc_triplet(&v[BL_RHO], "rho", p.rho)))
        return s;
    return lumen_bloom(ctx, v[BL_SRC].u.image, out, &p, info);
}

const lumen_op_desc lumen_bloom_desc = {
    .name = "bloom",
    .command = "bloom",
    .summary = "film bloom: highlights scattered in the emulsion (Phos's formula)",
    .help = "E = max(x - threshold, 0) * eta[c] per channel; out = clip(x - E + E * K_c, 0, 1) "
            "with the PSF K(r) = rho exp(-r^2/2 sigma^2) + (1 - rho) exp(-r/kappa) normalised to "
            "sum 1 (border reflect). docs/film.md.",
    .args = bloom_args,
    .n_args = BL_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the image with bloom: src's shape, and src's dtype unless asked otherwise",
    .output_shape = lumen_desc_shape_like_src,
    .invoke = bloom_invoke,
};
