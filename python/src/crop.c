/* lumen.mask_bbox: the boxes of a mask's foreground (lumen_mask_bbox, docs/crop.md), as an
 * int64 array. Not a descriptor op: its result is boxes, not an image. lumen.crop is the
 * descriptor's (the generic binding); lumen/_crop.py adds bool masks to both. */
#include "lumen_py.h"

#include <stdlib.h>

/* (N, 4) boxes (x0, y0, x1, y1) for a batch (a 4-D array or layout), else (4,). */
static PyObject *boxes_array(const lumen_box *b, int64_t n, int batched)
{
    npy_intp dims[2] = {(npy_intp)n, 4};
    PyObject *a =
        batched ? PyArray_SimpleNew(2, dims, NPY_INT64) : PyArray_SimpleNew(1, dims + 1, NPY_INT64);
    if (!a) return NULL;
    int64_t *p = PyArray_DATA((PyArrayObject *)a);
    for (int64_t i = 0; i < n; i++) {
        p[4 * i] = b[i].x0, p[4 * i + 1] = b[i].y0;
        p[4 * i + 2] = b[i].x1, p[4 * i + 3] = b[i].y1;
    }
    return a;
}

PyObject *lumenpy_mask_bbox(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"mask", "threshold", "layout", "context", NULL};
    PyObject *mask, *ctx_obj = Py_None;
    double threshold = 0.0;
    int layout = LUMENPY_LAYOUT_AUTO, f64 = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|d$O&O:mask_bbox", kwlist, &mask, &threshold,
                                     lumenpy_layout_conv, &layout, &ctx_obj))
        return NULL;
    lumenpy_view v;
    if (lumenpy_image_input(mask, "mask", layout, &v, &f64)) return NULL;
    PyObject *r = NULL;
    lumen_box *boxes = calloc((size_t)v.img.n, sizeof *boxes);
    lumen_context *ctx = boxes ? lumenpy_context_acquire(ctx_obj, -1) : NULL;
    if (!boxes) PyErr_NoMemory();
    if (ctx) {
        lumen_status s;
        lumen_run_info info;
        Py_BEGIN_ALLOW_THREADS s = lumen_mask_bbox(ctx, &v.img, threshold, boxes, &info);
        Py_END_ALLOW_THREADS lumenpy_context_release(ctx_obj, ctx, -1);
        const int batched = v.layout == LUMENPY_LAYOUT_NHWC || v.layout == LUMENPY_LAYOUT_NCHW;
        r = s ? lumenpy_raise(s) : boxes_array(boxes, v.img.n, batched);
    }
    free(boxes);
    lumenpy_view_release(&v);
    return r;
}
