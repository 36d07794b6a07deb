/*
 * The film effects' per-pixel steps around their convolution (docs/film.md), stated once.
 *
 * Bloom and halation compute E = max(v - threshold, 0) * gain from the image, convolve it, and
 * blend the result back: out = clip(v - E + layer * layer_gain, 0, 1). The op layer runs these
 * steps as passes of its own (src/ops/film_common.c) on any device; on the CPU, a filter job
 * may instead carry a lumen_film_map, and the FFT path runs them inside its tile loads and
 * stores (src/backends/cpu/fft_filter.c), so neither E nor the convolved layer is ever stored.
 * Both paths call these functions, so they give the same bits.
 */
#ifndef LUMEN_FILM_MAP_H
#define LUMEN_FILM_MAP_H

typedef struct lumen_film_map {
    float in_scale;          /* a stored value times this is linear light: 1/255, 1/65535, 1 */
    float out_scale;         /* linear light times this is the stored value: 255, 65535, 1 */
    float threshold;         /* what exceeds it is a highlight */
    const float *gain;       /* per channel of the job's views: E's scale */
    const float *layer_gain; /* per channel: the convolved layer's scale in the blend */
    /* per channel (at most 4): its own kernel, the job's size; NULL: the job's kernel for all.
     * Bloom's PSF differs by channel, and one job over all channels reads an interleaved
     * image once rather than once per channel. */
    const float *const *kernels;
} lumen_film_map;

/* E of one linear value. Every operation runs unconditionally (selects, no branches), so the
 * compiler vectorises the loops around these under IEEE (trapping) math. */
static inline float lumen_film_highlight(float v, float threshold, float gain)
{
    const float d = v - threshold;
    return (v > threshold ? d : 0.0f) * gain;
}

/* The blend of one linear value v, its highlight e and its layer value (already scaled). */
static inline float lumen_film_blend(float v, float e, float layer)
{
    const float o = v - e + layer;
    const float lo = o < 0.0f ? 0.0f : o;
    return lo > 1.0f ? 1.0f : lo; /* NaN stays NaN */
}

#endif
