/* The photo cases of `lumen bench` and `lumen bench floors` (issue 30): u8 and u16 interleaved
 * RGB images (4000x3000 by default), the same names, kernels and sizes as python3 -m lumen.bench
 * (python/lumen/bench_photo.py), border reflect101. */
#ifndef LUMEN_CLI_BENCH_PHOTO_H
#define LUMEN_CLI_BENCH_PHOTO_H

#include "lumen.h"

#include <stddef.h>
#include <stdint.h>

#define PHOTO_DEFAULT_W 4000
#define PHOTO_DEFAULT_H 3000

typedef enum photo_op {
    PHOTO_FILTER2D,
    PHOTO_GAUSSIAN,
    PHOTO_BOX,
    PHOTO_RESIZE,
    PHOTO_CROP_RESIZE,
    PHOTO_FILM
} photo_op;

typedef struct photo_case {
    const char *name;  /* photo_u8_filter2d_k3, ... */
    lumen_dtype dtype; /* LUMEN_U8 or LUMEN_U16 */
    photo_op op;
    int k;        /* filter2d, box: k x k */
    double sigma; /* Gaussian: ksize derived from it as OpenCV does for the dtype */
    int div;      /* resize: output = input / div, rounded half up; crop_resize: the crop's */
    lumen_resize_rule rule;
    double floor_limit; /* issue 30's target on lumen / memory floor; 0: none */
} photo_case;

extern const photo_case photo_cases[];
extern const int photo_ncases;

/* "filter2d", "gaussian", "box", "resize", "crop_resize", "film". */
const char *photo_op_name(photo_op op);
/* The case's k x k (filter2d, box), the Gaussian's derived size; 0 for the others. */
int photo_case_ksize(const photo_case *c);
/* The centre crop of crop_resize in a w x h image: half of each side, [x0, x1) x [y0, y1). */
void photo_crop_box(int w, int h, int *x0, int *y0, int *x1, int *y1);
/* The result's width and height for a w x h input. */
void photo_out_size(const photo_case *c, int w, int h, int *ow, int *oh);
/* Bytes the case reads and writes at least: its input (or crop) once and its output once. */
double photo_traffic_bytes(const photo_case *c, int w, int h);
/* The bytes of a w x h RGB image of dtype: what the memory floor's memcpy copies. */
size_t photo_image_bytes(lumen_dtype dtype, int w, int h);
/* The k x k kernel of filter2d: 3 the sharpen kernel, else LCG values in [0, 1) (seed
 * 2000 + k) divided by their sum. out holds k*k floats. */
void photo_kernel(int k, float *out);
/* A w x h x 3 image of dtype of seeded random values over the dtype's range, malloc'ed. */
void *photo_image(lumen_dtype dtype, int w, int h);
/* Runs the case on the w x h x 3 image src into dst (photo_out_size x 3 of the same dtype).
 * kernel: photo_kernel's for filter2d, else unused; stock: for the film case. */
lumen_status photo_case_run(lumen_context *ctx, const photo_case *c, void *src, int w, int h,
                            void *dst, const float *kernel, const lumen_film_stock *stock,
                            lumen_run_info *info);

#endif
