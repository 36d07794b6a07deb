/*
 * Grain (docs/film.md; Phos's Poisson mode, grain_strategies.PoissonGrainStrategy): per pixel
 * photons ~ N(m, sqrt m) with m = max(x exposure, 1), at least 0; relative noise
 * (photons - m) / (m + 1e-6), blurred by OpenCV's Gaussian of sigma `size` (ksize
 * int(4 size) | 1 clamped to [3, 15], border reflect101; none when size <= 0.5), divided by 3x
 * its standard deviation over the plane, times density x intensity, clipped to [-1, 1]; out =
 * clip(x + amount x noise, 0, 1).
 *
 * The normal draws are lumen's own, not NumPy's: a counter-based generator (SplitMix64 of the
 * seed, the image, the channel and the pixel's position) and Box-Muller, so the grain depends
 * only on (seed, image size, position), whatever the device or thread count.
 */
#include "film_common.h"

#include <math.h>
#include <stdlib.h>

lumen_grain_params lumen_grain_params_default(void)
{
    return (lumen_grain_params){.intensity = 0.15,
                                .size = 1.0,
                                .density = 1.0,
                                .exposure = 1000.0,
                                .amount = 1.0,
                                .seed = 0};
}

static lumen_status check_params(const lumen_grain_params *p)
{
    if (!p) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "params: NULL");
    if (!(p->intensity >= 0 && p->intensity <= 100))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "intensity: %g is not in [0, 100]",
                               p->intensity);
    if (!(p->size >= 0 && p->size <= 100))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "size: %g is not in [0, 100]", p->size);
    if (!(p->density >= 0 && p->density <= 100))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "density: %g is not in [0, 100]",
                               p->density);
    if (!(p->exposure >= 1 && p->exposure <= 1e9))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "exposure: %g is not in [1, 1e9]",
                               p->exposure);
    if (!(p->amount >= 0 && p->amount <= 100))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "amount: %g is not in [0, 100]",
                               p->amount);
    return LUMEN_OK;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A standard normal draw for pixel i of plane `plane` (Box-Muller on two 53-bit uniforms). */
static double normal_draw(uint64_t key, int64_t i)
{
    const uint64_t a = splitmix64(key ^ splitmix64((uint64_t)i));
    const uint64_t b = splitmix64(a);
    const double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    const double u2 = (double)(b >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The generator's key of a plane: seed, image size, image and channel. */
static uint64_t plane_key(uint64_t seed, int64_t h, int64_t w, int64_t b, int64_t c)
{
    uint64_t k = splitmix64(seed);
    k = splitmix64(k ^ (uint64_t)h * 0x100000001b3ull ^ (uint64_t)w);
    return splitmix64(k ^ ((uint64_t)b << 8) ^ (uint64_t)c);
}

lumen_status lumen_grain_normals(uint64_t seed, int64_t h, int64_t w, int64_t image,
                                 int64_t channel, float *out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: NULL");
    if (h < 1 || w < 1 || image < 0 || channel < 0 || h > INT64_MAX / w)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "h, w, image, channel: %lld x %lld, %lld, %lld is not a plane",
                               (long long)h, (long long)w, (long long)image, (long long)channel);
    const uint64_t key = plane_key(seed, h, w, image, channel);
    for (int64_t i = 0; i < h * w; i++)
        out[i] = (float)normal_draw(key, i);
    return LUMEN_OK;
}

/* Relative photon noise of every plane into r (before the blur). */
static void photon_noise(const film_planes *x, film_planes *r, const lumen_grain_params *p,
                         int threads)
{
    const int64_t px = x->h * x->w;
    for (int64_t b = 0; b < x->n; b++)
        for (int64_t c = 0; c < x->c; c++) {
            const uint64_t key = plane_key(p->seed, x->h, x->w, b, c);
            const float *xs = film_plane(x, b, c);
            float *rs = film_plane(r, b, c);
#pragma omp parallel for num_threads(threads) schedule(static)
            for (int64_t i = 0; i < px; i++) {
                const double m = fmax((double)xs[i] * p->exposure, 1.0);
                const double photons = fmax(m + sqrt(m) * normal_draw(key, i), 0.0);
                rs[i] = (float)((photons - m) / (m + 1e-6));
            }
        }
}

/* Phos's blur of the noise: ksize int(4 size) | 1 within [3, 15]; none at size <= 0.5. */
static lumen_status blur_noise(lumen_context *ctx, film_planes *r, film_planes *tmp, double size,
                               lumen_run_info *info)
{
    if (!(size > 0.5)) return LUMEN_OK;
    int k = (int)(size * 4) | 1;
    k = k < 3 ? 3 : k > 15 ? 15 : k;
    const lumen_image rv = film_planes_view(r), tv = film_planes_view(tmp);
    lumen_status s =
        lumen_gaussian_blur(ctx, &rv, &tv, k, k, size, size, LUMEN_BORDER_REFLECT101, 0.0f, info);
    if (!s) {
        float *t = r->data;
        r->data = tmp->data, tmp->data = t;
    }
    return s;
}

/* r = clip(r / (3 std) x density x intensity, -1, 1), per plane (std: np.std's, population;
 * its sums added in row order, so the grain does not depend on the thread count). */
static lumen_status normalise_noise(film_planes *r, const lumen_grain_params *p, int threads)
{
    const int64_t px = r->h * r->w, planes = r->n * r->c;
    double *sums = malloc((size_t)planes * 2 * sizeof *sums);
    if (!sums) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "grain: plane sums");
    film_plane_sums(r, sums, sums + planes, threads);
    for (int64_t q = 0; q < planes; q++) {
        float *rs = r->data + q * px;
        const double mean = sums[q] / (double)px;
        const double sd = sqrt(fmax(sums[planes + q] / (double)px - mean * mean, 0.0));
        const double norm = sd > 1e-6 ? 1.0 / (3.0 * sd) : 1.0;
        const float k = (float)(norm * p->density * p->intensity);
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < px; i++) {
            const float g = rs[i] * k;
            rs[i] = g < -1.0f ? -1.0f : g > 1.0f ? 1.0f : g;
        }
    }
    free(sums);
    return LUMEN_OK;
}

lumen_status film_grain_noise(lumen_context *ctx, const film_planes *x, film_planes *noise,
                              const lumen_grain_params *p, lumen_run_info *info)
{
    film_planes tmp = {0};
    lumen_status s = film_planes_like(x, noise);
    if (!s) s = film_planes_like(x, &tmp);
    if (!s) {
        photon_noise(x, noise, p, ctx->threads);
        if (!(s = blur_noise(ctx, noise, &tmp, p->size, info)))
            s = normalise_noise(noise, p, ctx->threads);
    }
    film_planes_free(&tmp);
    if (s) film_planes_free(noise);
    return s;
}

lumen_status lumen_grain(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                         const lumen_grain_params *p, lumen_run_info *info)
{
    lumen_clear_error();
    lumen_status s;
    if ((s = film_check(ctx, src, dst, "grain")) || (s = check_params(p))) return s;
    film_planes x = {0}, noise = {0};
    if (!(s = film_planes_load(src, &x, ctx->threads)) &&
        !(s = film_grain_noise(ctx, &x, &noise, p, info))) {
        const int64_t all = x.n * x.c * x.h * x.w;
        const float a = (float)p->amount;
#pragma omp parallel for num_threads(ctx->threads) schedule(static)
        for (int64_t i = 0; i < all; i++)
            x.data[i] += a * noise.data[i];
        film_planes_store(&x, dst, ctx->threads);
    }
    film_planes_free(&x);
    film_planes_free(&noise);
    return s;
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum { GR_SRC, GR_INTENSITY, GR_SIZE, GR_DENSITY, GR_EXPOSURE, GR_AMOUNT, GR_SEED, GR_N };

static const lumen_arg_desc grain_args[GR_N] = {
    [GR_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image, 1 or 3 channels, linear light in [0, 1] (u8/u16 scaled)"},
    [GR_INTENSITY] = {.name = "intensity",
                      .type = LUMEN_ARG_REAL,
                      .def = {0.15, 0},
                      .max = 100,
                      .help = "strength of the grain"},
    [GR_SIZE] = {.name = "size",
                 .type = LUMEN_ARG_REAL,
                 .def = {1.0, 0},
                 .max = 100,
                 .help = "grain size: sigma in pixels of the noise's blur (none at <= 0.5)"},
    [GR_DENSITY] = {.name = "density",
                    .type = LUMEN_ARG_REAL,
                    .def = {1.0, 0},
                    .max = 100,
                    .help = "Phos's grain_density: multiplies the intensity"},
    [GR_EXPOSURE] = {.name = "exposure",
                     .type = LUMEN_ARG_REAL,
                     .def = {1000, 0},
                     .min = 1,
                     .max = 1e9,
                     .help = "photons at x = 1: fewer photons, coarser relative noise"},
    [GR_AMOUNT] = {.name = "amount",
                   .type = LUMEN_ARG_REAL,
                   .def = {1.0, 0},
                   .max = 100,
                   .help = "how much of the noise is added to the image"},
    [GR_SEED] = {.name = "seed",
                 .type = LUMEN_ARG_INT,
                 .def = {0, 0},
                 .max = 9007199254740991.0,
                 .help = "the random field's seed: the same seed and image size give the same "
                         "grain on every device"},
};

static lumen_status grain_invoke(lumen_context *ctx, const lumen_value *v, const lumen_image *out,
                                 lumen_run_info *info)
{
    const lumen_op_desc *d = &lumen_grain_desc;
    lumen_grain_params p = lumen_grain_params_default();
    p.intensity = lumen_value_real(d, v, GR_INTENSITY);
    p.size = lumen_value_real(d, v, GR_SIZE);
    p.density = lumen_value_real(d, v, GR_DENSITY);
    p.exposure = lumen_value_real(d, v, GR_EXPOSURE);
    p.amount = lumen_value_real(d, v, GR_AMOUNT);
    p.seed = (uint64_t)lumen_value_int(d, v, GR_SEED);
    return lumen_grain(ctx, v[GR_SRC].u.image, out, &p, info);
}

const lumen_op_desc lumen_grain_desc = {
    .name = "grain",
    .command = "grain",
    .summary = "film grain: seeded photon noise (Phos's Poisson mode)",
    .help = "Photon counts N(m, sqrt m) with m = max(x * exposure, 1); their relative noise "
            "blurred by a Gaussian of sigma size, scaled to 1/3 of its standard deviation, times "
            "density * intensity, clipped to [-1, 1] and added (times amount). Deterministic per "
            "(seed, image size) on every device. docs/film.md.",
    .args = grain_args,
    .n_args = GR_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the grainy image: src's shape, and src's dtype unless asked otherwise",
    .output_shape = lumen_desc_shape_like_src,
    .invoke = grain_invoke,
};
