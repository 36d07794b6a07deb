/* The coefficient tables of lumen_resize (docs/resize.md): for one axis and one rule, which
 * input pixels each output pixel reads and with what weights. */
#ifndef LUMEN_RESIZE_TAPS_H
#define LUMEN_RESIZE_TAPS_H

#include "internal.h"

/* What one axis's table depends on. */
typedef struct lumen_resize_axis_spec {
    lumen_resize_rule rule;
    lumen_interpolation interpolation;
    int64_t in, out;
    double factor;     /* the caller's scale factor for this axis, 0: out / in */
    int antialias;     /* torch */
    int align_corners; /* torch */
    int area_shrinks;  /* OpenCV INTER_AREA: both axes shrink (or keep) their size */
    int pillow_u8;     /* also Pillow's 22-bit integer weights (iweights) */
} lumen_resize_axis_spec;

/* Fills *axis (first and weights in one allocation, returned in *mem: free() it). */
lumen_status lumen_resize_taps(const lumen_resize_axis_spec *spec, lumen_resize_axis *axis,
                               void **mem);

/* OpenCV's scale for one axis: 1 / factor, or in / out (as cv2.resize's 1 / inv_scale). */
double lumen_resize_cv_scale(const lumen_resize_axis_spec *spec);

#endif
