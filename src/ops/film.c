/*
 * The film chain (docs/film.md, "The chain"; Phos.py optical_processing with its sidebar's
 * defaults): decode, the stock's spectral response, grain noise from the response, bloom and
 * halation (colour) or Phos's image-adaptive artistic bloom (black and white), the blend of
 * scattered and direct light with the grain, the tone curve, encode. Strengths scale the
 * effects: bloom eta (or the artistic term), halation's energy fraction, the grain terms.
 *
 * Every convolution goes through lumen_bloom / lumen_halation / the Gaussian blur, so it runs
 * on the context's device; the per-pixel steps run here on the CPU's threads.
 */
#include "film_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Phos's constants (tests/python/film_reference.py names their sources). */
#define GRAIN_LINEAR_RGB_COMPENSATION 0.30
#define FILMIC_EXPOSURE_SCALE 10.0
#define SENSITIVITY_SCALE 0.75
#define SENSITIVITY_BASE 0.10
#define SENSITIVITY_MIN 0.10
#define SENSITIVITY_MAX 0.70
#define BLOOM_STRENGTH_FACTOR 23.0
#define BLOOM_RADIUS_FACTOR 20.0
#define BLOOM_RADIUS_MIN 1
#define BLOOM_RADIUS_MAX 50
#define BASE_DIFFUSION_FACTOR 0.05
#define ARTISTIC_BLUR_SIGMA_SCALE 15.0

lumen_film_options lumen_film_options_default(void)
{
    return (lumen_film_options){.halation = 1, .bloom = 1, .grain = 1, .seed = 0};
}

static lumen_status check_options(const lumen_film_stock *st, const lumen_film_options *o)
{
    if (!st || !o)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: NULL", st ? "options" : "stock");
    const double v[3] = {o->halation, o->bloom, o->grain};
    return film_check_triplet(v, 0, 10, "strengths (halation, bloom, grain)");
}

/* IEC 61966-2-1, as Phos's optical_core (decode without a clip, encode after one). */
static float srgb_decode(float v)
{
    return v <= 0.04045f ? v / 12.92f : powf((v + 0.055f) / 1.055f, 2.4f);
}

static float srgb_encode(float v)
{
    v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    return v <= 0.0031308f ? v * 12.92f : 1.055f * powf(v, 1.0f / 2.4f) - 0.055f;
}

/* The linear input as 3 planes per image (a 1-channel image is grey: R = G = B). */
static lumen_status load_linear(const lumen_image *src, film_planes *lin, int threads)
{
    film_planes x;
    lumen_status s = film_planes_load(src, &x, threads);
    if (s) return s;
    *lin = (film_planes){.n = x.n, .c = 3, .h = x.h, .w = x.w};
    if ((s = film_planes_like(lin, lin))) {
        film_planes_free(&x);
        return s;
    }
    const bool decode = !lumen_dtype_is_float(src->dtype); /* float data is linear */
    const int64_t px = x.h * x.w;
    for (int64_t b = 0; b < x.n; b++)
        for (int64_t c = 0; c < 3; c++) {
            const float *in = film_plane(&x, b, x.c == 1 ? 0 : c);
            float *out = film_plane(lin, b, c);
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < px; i++)
                out[i] = decode ? srgb_decode(in[i]) : in[i];
        }
    film_planes_free(&x);
    return LUMEN_OK;
}

/* resp = M lin per pixel: 3 planes (colour), or the panchromatic 1 plane (black and white). */
static lumen_status response(const film_planes *lin, const lumen_film_stock *st, film_planes *resp,
                             int threads)
{
    *resp = (film_planes){.n = lin->n, .c = st->color ? 3 : 1, .h = lin->h, .w = lin->w};
    lumen_status s = film_planes_like(resp, resp);
    if (s) return s;
    const int64_t px = lin->h * lin->w;
    for (int64_t b = 0; b < lin->n; b++) {
        const float *r = film_plane(lin, b, 0), *g = film_plane(lin, b, 1),
                    *bl = film_plane(lin, b, 2);
        for (int64_t c = 0; c < resp->c; c++) {
            const float m0 = (float)st->matrix[3 * c], m1 = (float)st->matrix[3 * c + 1],
                        m2 = (float)st->matrix[3 * c + 2];
            float *out = film_plane(resp, b, c);
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < px; i++)
                out[i] = m0 * r[i] + m1 * g[i] + m2 * bl[i];
        }
    }
    return LUMEN_OK;
}

/* Phos's colour path: bloom then halation of the response, into `scattered`. Halation reads
 * the bloomed planes while it writes `scattered` (in place it would copy its source first). */
static lumen_status color_scatter(lumen_context *ctx, const lumen_film_stock *st,
                                  const lumen_film_options *o, const film_planes *resp,
                                  film_planes *scattered, lumen_run_info *info)
{
    film_planes bloomed = {0};
    lumen_status s = film_planes_like(resp, scattered);
    if (!s && st->halation_enabled) s = film_planes_like(resp, &bloomed);
    if (s) return s;
    const film_planes *b = st->halation_enabled ? &bloomed : scattered;
    const lumen_image rv = film_planes_view(resp), bv = film_planes_view(b),
                      sv = film_planes_view(scattered);
    lumen_bloom_params bp = st->bloom;
    for (int i = 0; i < 3; i++)
        bp.eta[i] = fmin(bp.eta[i] * o->bloom, 1.0);
    if (!(s = lumen_bloom(ctx, &rv, &bv, &bp, info)) && st->halation_enabled) {
        lumen_halation_params hp = st->halation;
        hp.energy_fraction = fmin(hp.energy_fraction * o->halation, 1.0);
        s = lumen_halation(ctx, &bv, &sv, &hp, info);
    }
    film_planes_free(&bloomed);
    return s;
}

/* Phos's black-and-white bloom (calculate_bloom_params + ArtisticBloomStrategy), from the
 * image's mean response, times the bloom strength. */
static lumen_status artistic_scatter(lumen_context *ctx, const lumen_film_stock *st,
                                     const lumen_film_options *o, const film_planes *total,
                                     film_planes *scattered, lumen_run_info *info)
{
    film_planes weight = {0}, blurred = {0};
    double *means = NULL;
    lumen_status s;
    if ((s = film_planes_like(total, scattered)) || (s = film_planes_like(total, &weight)) ||
        (s = film_planes_like(total, &blurred)))
        goto done;
    const int64_t px = total->h * total->w;
    means = malloc((size_t)total->n * sizeof *means);
    if (!means) {
        s = lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "film: plane sums");
        goto done;
    }
    film_plane_sums(total, means, NULL, ctx->threads); /* row order: thread-independent */
    for (int64_t b = 0; b < total->n && !s; b++) {
        const float *x = film_plane(total, b, 0);
        float *wx = film_plane(&weight, b, 0);
        const double mean = fmin(fmax(means[b] / (double)px, 0.0), 1.0);
        double sens = (1.0 - pow(mean, 1.0 / 2.2)) * SENSITIVITY_SCALE + SENSITIVITY_BASE;
        sens = fmin(fmax(sens, SENSITIVITY_MIN), SENSITIVITY_MAX);
        const double sf = st->sensitivity;
        const float strength = (float)(BLOOM_STRENGTH_FACTOR * sens * sens * sf);
        int radius = (int)(BLOOM_RADIUS_FACTOR * sens * sens * sf);
        radius = radius < BLOOM_RADIUS_MIN   ? BLOOM_RADIUS_MIN
                 : radius > BLOOM_RADIUS_MAX ? BLOOM_RADIUS_MAX
                                             : radius;
        const int k = radius % 2 ? radius : radius + 1;
        const float base = (float)(BASE_DIFFUSION_FACTOR * sf), fs = (float)sens;
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
        for (int64_t i = 0; i < px; i++) { /* x w, with w kept in `scattered` meanwhile */
            float w = (base + x[i] * x[i]) * fs;
            w = w < 0.0f ? 0.0f : w > 1.0f ? 1.0f : w;
            film_plane(scattered, b, 0)[i] = w;
            wx[i] = x[i] * w;
        }
        lumen_image in = film_planes_view(&weight), out = film_planes_view(&blurred);
        in.data = wx, out.data = film_plane(&blurred, b, 0), in.n = out.n = 1;
        s = lumen_gaussian_blur(ctx, &in, &out, k, k, sens * ARTISTIC_BLUR_SIGMA_SCALE,
                                sens * ARTISTIC_BLUR_SIGMA_SCALE, LUMEN_BORDER_REFLECT101, 0.0f,
                                info);
        if (s) break;
        float *sc = film_plane(scattered, b, 0);
        const float *bl = film_plane(&blurred, b, 0);
        const float m = (float)o->bloom;
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
        for (int64_t i = 0; i < px; i++) {
            const float e = bl[i] * sc[i] * strength;
            sc[i] = e / (1.0f + e) * m;
        }
    }
done:
    free(means);
    film_planes_free(&weight);
    film_planes_free(&blurred);
    return s;
}

/* The tone curve of one value (Phos's tone_mapping; filmic on 10 x the light, no clip). */
static float tone(const lumen_film_stock *st, float lux)
{
    if (st->tone) { /* Phos's Reinhard: x^2 / (1 + x), clipped */
        float m = lux * (lux / (1.0f + lux));
        m = m > 0.0f ? m : 0.0f;
        return m < 1.0f ? m : 1.0f;
    }
    const double *f = st->filmic; /* A .. F */
    const double x = FILMIC_EXPOSURE_SCALE * fmax((double)lux, 0.0);
    const double num = x * (f[0] * x + f[2] * f[1]) + f[3] * f[4];
    const double den = x * (f[0] * x + f[1]) + f[3] * f[5];
    return den != 0 ? (float)(num / den - f[4] / f[5]) : 0.0f;
}

/* lux = scattered d + resp i + grain, toned, clipped, encoded for u8/u16 and stored. */
static void finish(const lumen_film_stock *st, const lumen_film_options *o, const film_planes *resp,
                   const film_planes *scattered, const film_planes *noise, const lumen_image *dst,
                   int threads)
{
    const int64_t px = resp->h * resp->w;
    const bool encode = !lumen_dtype_is_float(dst->dtype);
    const float comp = (float)(GRAIN_LINEAR_RGB_COMPENSATION * o->grain);
    const float pan = (float)(st->grain_pan * o->grain);
    const float scale = film_dtype_scale(dst->dtype);
    for (int64_t b = 0; b < resp->n; b++)
        for (int64_t c = 0; c < dst->c; c++) {
            /* black and white: every output channel is the one grey; grey dst of a colour
             * stock: the green layer */
            const int64_t rc = resp->c == 1 ? 0 : dst->c == 1 ? 1 : c;
            const float *r = film_plane(resp, b, rc), *sc = film_plane(scattered, b, rc);
            const float d = (float)st->diffuse[rc], di = (float)st->direct[rc];
            const float layer = resp->c == 3 ? (float)st->grain_layer[rc] * comp : 0.0f;
            const float *g0 = noise ? film_plane(noise, b, 0) : NULL;
            const float *g1 = noise && noise->c == 3 ? film_plane(noise, b, 1) : NULL;
            const float *g2 = noise && noise->c == 3 ? film_plane(noise, b, 2) : NULL;
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < px; i++) {
                float lux = sc[i] * d + r[i] * di;
                if (g0 && g1) /* colour: the red layer's noise at this layer's weight */
                    lux += g0[i] * layer + (g1[i] + g2[i]) * pan;
                else if (g0)
                    lux += g0[i] * pan;
                float v = tone(st, lux);
                v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
                if (encode) v = srgb_encode(v);
                const int64_t y = i / resp->w, x = i % resp->w;
                lumen_store_px(lumen_px_addr(dst, b, c, y, x), dst->dtype, v * scale);
            }
        }
}

lumen_status lumen_film(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const lumen_film_stock *stock, const lumen_film_options *opt,
                        lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s;
    if ((s = film_check(ctx, src, dst, "film")) || (s = check_options(stock, opt))) return s;
    film_planes lin = {0}, resp = {0}, scattered = {0}, noise = {0};
    if ((s = load_linear(src, &lin, ctx->threads)) ||
        (s = response(&lin, stock, &resp, ctx->threads)))
        goto done;
    film_planes_free(&lin);
    if (opt->grain > 0) { /* from the response, before the scattering (Phos's order) */
        lumen_grain_params g = stock->grain;
        g.seed = opt->seed;
        if ((s = film_grain_noise(ctx, &resp, &noise, &g, info))) goto done;
    }
    s = stock->color && !stock->bloom_artistic
            ? color_scatter(ctx, stock, opt, &resp, &scattered, info)
            : artistic_scatter(ctx, stock, opt, &resp, &scattered, info);
    if (!s) finish(stock, opt, &resp, &scattered, noise.data ? &noise : NULL, dst, ctx->threads);
done:
    film_planes_free(&lin);
    film_planes_free(&resp);
    film_planes_free(&scattered);
    film_planes_free(&noise);
    return s;
}
