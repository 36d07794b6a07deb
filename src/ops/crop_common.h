/* What mask_bbox.c and crop.c share (docs/crop.md): the scan for a mask's boxes and the
 * run_info of the crop ops, which run on host views in the op layer (docs/architecture.md,
 * "Adding an op": an op may do its work itself, as the film effects do). */
#ifndef LUMEN_CROP_COMMON_H
#define LUMEN_CROP_COMMON_H

#include "internal.h"

/* Checks a mask for the crop ops: a valid host view; `what` names it. */
lumen_status lumen_crop_check_host(const lumen_image *img, const char *what, const char *op);
/* The boxes of mask > threshold, one per image, on up to `threads` threads (mask checked). */
void lumen_mask_boxes(const lumen_image *mask, double threshold, lumen_box *boxes, int threads);
/* What a crop op reports: the CPU, portable code, `algo`. */
void lumen_crop_info(const lumen_context *ctx, const char *algo, int threads, lumen_run_info *info);

#endif
