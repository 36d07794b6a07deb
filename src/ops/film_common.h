/* What the film effects (bloom.c, halation.c, grain.c, film.c; docs/film.md) share: checks,
 * images as planes of normalised f32 values and back, per-channel parameters. */
#ifndef LUMEN_FILM_COMMON_H
#define LUMEN_FILM_COMMON_H

#include "film_map.h"
#include "internal.h"

/* A working copy of an image: n x c planes of h x w f32 values, x / 255 (u8), x / 65535 (u16)
 * or x (f32), contiguous NCHW. */
typedef struct film_planes {
    float *data;
    int64_t n, c, h, w;
} film_planes;

/* The value of 1.0 in dtype t: 255 (u8), 65535 (u16), 1 (f32). */
float film_dtype_scale(lumen_dtype t);
/* Checks ctx and an image pair for a film op: host views of 1 or 3 channels and the same
 * shape; `op` names the op in messages. */
lumen_status film_check(const lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const char *op);
/* New planes of img's shape, uninitialised or loaded from img (normalised). */
lumen_status film_planes_new(const lumen_image *img, film_planes *out);
lumen_status film_planes_load(const lumen_image *img, film_planes *out, int threads);
void film_planes_free(film_planes *p);
/* New (uninitialised) planes of p's shape. */
lumen_status film_planes_like(const film_planes *p, film_planes *out);
/* The planes as an f32 NCHW view (for the filters). */
lumen_image film_planes_view(const film_planes *p);
/* Plane (b, c) and its length. */
static inline float *film_plane(const film_planes *p, int64_t b, int64_t c)
{
    return p->data + (b * p->c + c) * p->h * p->w;
}
/* Stores planes into dst, clipped to [0, 1] and scaled back (u8/u16 rounded half to even). */
void film_planes_store(const film_planes *p, const lumen_image *dst, int threads);
/* The index of a per-channel parameter: the channel of a 3-channel image, 1 (green) for a
 * 1-channel one. */
static inline int film_channel_param(int64_t c, int64_t ch)
{
    return c == 1 ? 1 : (int)ch;
}
/* Row y of plane (b, c) of img, normalised, into row[0 .. w). */
void film_row_load(const lumen_image *img, int64_t b, int64_t c, int64_t y, float *row);

/* The highlights of every plane: e = max(x - threshold, 0) * k[channel param], from src
 * directly (film_map.h). */
lumen_status film_highlights(const lumen_image *src, film_planes *e, double threshold,
                             const double k[3], int threads);
/* The sum of each plane into sums[b * c + ch], and of its squares into squares[] (may be NULL),
 * rows added in order: the same for any thread count. */
void film_plane_sums(const film_planes *p, double *sums, double *squares, int threads);
/* dst = clip(x - e(x) + scale[plane] * s, 0, 1) with x read from src again and e(x) as
 * film_highlights makes it (no copy of x is kept); scale NULL: 1. src may be dst. */
void film_scatter_back(const lumen_image *src, const lumen_image *dst, double threshold,
                       const double k[3], const film_planes *s, const float *scale, int threads);

/* The convolution of bloom and halation: a size x size kernel, centred, and a border. */
typedef struct film_conv {
    const float *kernel;
    int size;
    lumen_border border;
    float border_value; /* in src's units, for border constant */
} film_conv;
/* dst = clip(x - E + (E (*) K) * m->layer_gain[c], 0, 1) with E = max(x - m->threshold, 0) *
 * m->gain[c], in one pass of the CPU's FFT that makes E as it loads its tiles and blends as it
 * stores them (film_map.h). LUMEN_ERR_UNSUPPORTED, with nothing written, where that path does
 * not apply (a device context, SIMD off, or a kernel small enough for the direct method): the
 * caller then runs its own passes. In place works (src is copied first). */
lumen_status film_fused_scatter(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                                const film_conv *k, const lumen_film_map *m, lumen_run_info *info);
/* Per plane q = b * c + ch of src: e_sums[q], the sum of its highlights (threshold, gain by
 * channel param, as film_highlights makes them), and layer_sums[q], the exact sum of their
 * convolution by k (film_layer_sum.c), rows added in order. */
lumen_status film_layer_sums(const lumen_image *src, const film_conv *k, double threshold,
                             const double gain[3], double *e_sums, double *layer_sums, int threads);

/* The grain of planes x (grain.c): clip(relative photon noise, blurred, / (3 std) x density x
 * intensity, -1, 1) into new planes `noise` (Phos's PoissonGrainStrategy without the add). */
lumen_status film_grain_noise(lumen_context *ctx, const film_planes *x, film_planes *noise,
                              const lumen_grain_params *p, lumen_run_info *info);

/* Checks per-channel values are finite and within [lo, hi]; `what` names them. */
lumen_status film_check_triplet(const double v[3], double lo, double hi, const char *what);

/* ---- descriptors (the ops' entries at the end of their files) ---- */
#include "lumen_ops.h"

/* Per-channel values of a VECTOR argument: 1 number (every channel) or 3 (R, G, B); left as
 * they are when the argument is absent. */
lumen_status film_desc_triplet(const lumen_value *v, const char *what, double out[3]);

#endif
