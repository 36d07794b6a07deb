/*
 * Views on the device: device-resident views (lumen_image.device != 0) are used in place;
 * host views go through pinned staging into pool memory.
 *
 * A host src is copied by its byte extent (lumen_image_extent: the bytes between its lowest
 * and highest element) when that is at most about twice its pixels' bytes: the device copy
 * has the view's own strides, and one pipelined memcpy + transfer moves it. A sparser src (a
 * column of a wide image, big gaps between images) is gathered into a compact copy instead.
 *
 * A host dst is computed into a device buffer and only its pixel elements are ever written
 * back: a dst without gaps (planar, interleaved, flipped: its extent is all pixels) is
 * downloaded by extent straight into place; a dst with bytes between its pixels (padded rows,
 * a channel of an interleaved image, gaps between images) is computed into a compact copy and
 * scattered back block by block, so those bytes are never touched (another thread may own
 * them).
 *
 * Compact layout: the view's axes in the same order of |stride| and with the same signs, with
 * no gaps; copying between a view and its compact layout moves the largest blocks over which
 * the view is already dense (a row, a padded-row image's row of pixels, a whole image) with
 * one memcpy each.
 */
#ifndef LUMEN_CUDA_VIEWS_H
#define LUMEN_CUDA_VIEWS_H

#include "cuda_state.h"

/* How one view of an op is reached on the device. */
struct cu_binding {
    const lumen_image *img = nullptr;
    cu_view v{};           /* what kernels use */
    bool host = false;     /* a host view, staged through `dev` */
    bool compact = false;  /* `dev` holds the compact layout, else the view's byte extent */
    void *dev = nullptr;   /* the device copy of a host view */
    size_t bytes = 0;      /* bytes of `dev` */
    char *lo = nullptr;    /* host address of the extent's first byte */
};

/* The view itself as a cu_view (data unchanged). */
cu_view cu_view_of(const lumen_image *img);
/* n * c * h * w * element size. */
size_t cu_pixel_bytes(const lumen_image *img);

/*
 * One op's device side: the context's state, its temporaries, its bound src and dst.
 * cu_op_start makes the device current, waits for staging, binds src (uploading a host view)
 * and dst (uploading a host dst with gaps); cu_op_finish copies a host dst back (and waits
 * for it); temporaries return to the pool when the cu_op goes out of scope.
 */
struct cu_op {
    lumen_context *ctx;
    cu_state *st;
    cu_temps temps;
    cu_binding src, dst;
    cu_op(lumen_context *c, cu_state *s) : ctx(c), st(s), temps(s) {}
};

lumen_status cu_op_start(cu_op &op, const lumen_image *src, const lumen_image *dst);
/* Binds one more input of the op (after cu_op_start), uploading a host view as src is. */
lumen_status cu_op_bind_input(cu_op &op, const lumen_image *img, cu_binding *b);
/* n floats of host memory copied into a pool block of the op. */
lumen_status cu_op_upload_floats(cu_op &op, const float *host, size_t n, const float **dev);
/* A pool block of the op (scratch). */
lumen_status cu_op_scratch(cu_op &op, size_t bytes, void **out, const char *what);
lumen_status cu_op_finish(cu_op &op);

#endif
