/* Neural-network convolution (NCHW): lumen.conv2d and lumen.conv_transpose2d, with the
 * argument names, order and int-or-pair rules of torch.nn.functional.conv2d /
 * conv_transpose2d. Tensors are float32 N x C x H x W NumPy arrays or DLPack tensors in any
 * strides, used in place; the bias (K values) is converted to a contiguous float32 copy. */
#include "lumen_py.h"

#include <string.h>

/* ---- NCHW views ---- */

/* Number of dimensions of obj when it can be told without exporting it (-1: unknown). */
static int known_ndim(PyObject *obj)
{
    if (PyArray_Check(obj)) return PyArray_NDIM((PyArrayObject *)obj);
    PyObject *nd = PyObject_GetAttrString(obj, "ndim"); /* torch, CuPy, JAX, array API */
    if (!nd) {
        PyErr_Clear();
        return -1;
    }
    long v = PyLong_Check(nd) ? PyLong_AsLong(nd) : -1;
    Py_DECREF(nd);
    if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    return v >= 0 && v < 64 ? (int)v : -1;
}

static int refuse_ndim(const char *name, int nd)
{
    const char *layout = !strcmp(name, "weight") ? "out/in channels x kernel height x width"
                         : !strcmp(name, "out")
                             ? "N x K x P x Q"
                             : "N x C x H x W; an unbatched C x H x W is x[None]";
    PyErr_Format(lumenpy_ArgumentError, "%s: expected a 4-D tensor (%s), got %d dimension%s",
                 name, layout, nd, nd == 1 ? "" : "s");
    return -1;
}

/* Borrows a 4-D float32 tensor as an N x C x H x W view. views.c reads a 4-D array as
 * N x H x W x C (the image convention); the same four axes are renamed here, so
 * n = shape[0], c = shape[1], h = shape[2], w = shape[3], and the strides likewise. */
int lumenpy_nchw_view(PyObject *obj, const char *name, int writable, lumenpy_view *v)
{
    memset(v, 0, sizeof *v);
    PyObject *held = NULL;
    if (!writable && !PyArray_Check(obj) && !PyObject_HasAttrString(obj, "__dlpack__")) {
        /* Lists and buffers become an array first, so their ndim is known. */
        held = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
        if (!held) return -1;
        obj = held;
    }
    int nd = known_ndim(obj);
    if (nd >= 0 && nd != 4) {
        Py_XDECREF(held);
        return refuse_ndim(name, nd);
    }
    int rc = lumenpy_view_from(obj, name, writable, v);
    Py_XDECREF(held);
    if (rc) return -1;
    if (v->ndim != 4) {
        nd = v->ndim;
        lumenpy_view_release(v);
        return refuse_ndim(name, nd);
    }
    if (v->img.dtype != LUMEN_F32 && v->img.dtype != LUMEN_F16 && v->img.dtype != LUMEN_BF16) {
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype %s is not supported (float32, float16 or bfloat16; convert with "
                     ".astype(np.float32) or .float())",
                     name, lumenpy_dtype_label(v->img.dtype));
        lumenpy_view_release(v);
        return -1;
    }
    lumen_image m = v->img; /* fields as views.c named them: n, h=shape1, w=shape2, c=shape3 */
    v->img.c = m.h, v->img.stride_c = m.stride_h;
    v->img.h = m.w, v->img.stride_h = m.stride_w;
    v->img.w = m.c, v->img.stride_w = m.stride_c;
    return 0;
}

/* Lowest and one-past-highest byte an N x C x H x W view touches. */
static void extent(const lumen_image *m, const char **lo, const char **hi)
{
    const int64_t dims[4] = {m->n, m->c, m->h, m->w};
    const int64_t st[4] = {m->stride_n, m->stride_c, m->stride_h, m->stride_w};
    int64_t a = 0, b = 0;
    for (int i = 0; i < 4; i++) {
        int64_t d = (dims[i] - 1) * st[i];
        if (d < 0) a += d;
        else b += d;
    }
    *lo = (const char *)m->data + a * 4;
    *hi = (const char *)m->data + (b + 1) * 4;
}

static int overlaps(const lumen_image *a, const lumen_image *b)
{
    const char *alo, *ahi, *blo, *bhi;
    extent(a, &alo, &ahi);
    extent(b, &blo, &bhi);
    return a->device == b->device && alo < bhi && blo < ahi;
}

/* ---- arguments ---- */

/* An int (not a bool) or a sequence of 1 or 2 ints, as torch's IntArrayRef[2]: (h, w). */
static int hw_pair(PyObject *obj, const char *name, int *h, int *w)
{
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        if (PyBool_Check(obj) || !PyIndex_Check(obj)) {
            PyErr_Format(PyExc_TypeError, "%s: expected an int or a pair (h, w) of ints, got %s",
                         name, Py_TYPE(obj)->tp_name);
            return 0;
        }
        if (!lumenpy_int_arg(obj, name, h)) return 0;
        *w = *h;
        return 1;
    }
    Py_ssize_t n = PySequence_Size(obj);
    if (n != 1 && n != 2) {
        PyErr_Format(lumenpy_ArgumentError,
                     "%s: expected an int or a pair (h, w) of ints, got %zd values %R", name, n,
                     obj);
        return 0;
    }
    PyObject *a = PySequence_GetItem(obj, 0), *b = PySequence_GetItem(obj, n - 1);
    int ok = a && b && lumenpy_int_arg(a, name, h) && lumenpy_int_arg(b, name, w);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return ok;
}

/* conv2d's padding: an int, a pair, 'valid' (no padding) or 'same' (output size = input
 * size; stride 1 only). *same is set for 'same'; the pads are then derived from the weight. */
static int conv2d_padding(PyObject *obj, lumen_conv2d_params *p, int *same)
{
    *same = 0;
    if (!PyUnicode_Check(obj)) return hw_pair(obj, "padding", &p->pad_h, &p->pad_w);
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s) return 0;
    if (!strcmp(s, "valid")) {
        p->pad_h = p->pad_w = 0;
        return 1;
    }
    if (!strcmp(s, "same")) {
        *same = 1;
        return 1;
    }
    PyErr_Format(lumenpy_ArgumentError,
                 "padding: invalid padding string '%s' (expected 'valid', 'same', an int or a "
                 "pair (h, w))",
                 s);
    return 0;
}

/* bias: None, or K real numbers, copied to a contiguous float32 array. */
static int bias_array(PyObject *obj, int64_t k, PyArrayObject **out)
{
    *out = NULL;
    if (obj == Py_None) return 0;
    PyArrayObject *a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!a) return -1;
    int t = PyArray_TYPE(a);
    if (!PyTypeNum_ISNUMBER(t) || PyTypeNum_ISCOMPLEX(t) || PyTypeNum_ISBOOL(t)) {
        PyErr_Format(PyExc_TypeError, "bias: expected real numbers, got dtype %S",
                     (PyObject *)PyArray_DESCR(a));
        Py_DECREF(a);
        return -1;
    }
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != k) {
        PyObject *shape = PyObject_GetAttrString((PyObject *)a, "shape");
        if (shape)
            PyErr_Format(lumenpy_ArgumentError,
                         "bias: expected a 1-D array of %lld values (one per output channel), "
                         "got shape %R",
                         (long long)k, shape);
        Py_XDECREF(shape);
        Py_DECREF(a);
        return -1;
    }
    *out = (PyArrayObject *)PyArray_FromAny(
        (PyObject *)a, PyArray_DescrFromType(NPY_FLOAT32), 1, 1,
        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST | NPY_ARRAY_ENSURECOPY,
        NULL);
    Py_DECREF(a);
    return *out ? 0 : -1;
}

/* ---- errors ---- */

/* The C messages name C's fields; the Python ones are torch's argument names. */
static const struct {
    const char *c, *py;
} arg_names[] = {
    {"w", "weight"},
    {"y", "out"},
    {"stride_h", "stride (height)"},
    {"stride_w", "stride (width)"},
    {"pad_h", "padding (height)"},
    {"pad_w", "padding (width)"},
    {"dilation_h", "dilation (height)"},
    {"dilation_w", "dilation (width)"},
    {"output_pad_h", "output_padding (height)"},
    {"output_pad_w", "output_padding (width)"},
};

/* lumenpy_raise, with the message's leading "name:" renamed to the Python argument. */
void lumenpy_raise_py_names(lumen_status s)
{
    lumenpy_raise(s);
    const char *msg = lumen_last_error();
    const char *colon = msg ? strchr(msg, ':') : NULL;
    if (!colon) return;
    size_t len = (size_t)(colon - msg);
    for (size_t i = 0; i < sizeof arg_names / sizeof arg_names[0]; i++)
        if (strlen(arg_names[i].c) == len && !strncmp(msg, arg_names[i].c, len)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_Format(type, "%s%s", arg_names[i].py, colon);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return;
        }
}

/* ---- the call ---- */

typedef struct conv_call {
    lumenpy_view x, w, y;   /* y: out=, or the new result */
    lumenpy_view t;         /* the wider temporary of an asymmetric 'same' */
    PyArrayObject *bias;
    PyObject *result, *tmp;
    int device;             /* the device whose memory a view lives in, or -1 */
    int w_borrowed;         /* w is the packed weights' view (their capsule releases it) */
} conv_call;

static void conv_cleanup(conv_call *c)
{
    lumenpy_view_release(&c->x);
    if (!c->w_borrowed) lumenpy_view_release(&c->w);
    lumenpy_view_release(&c->y);
    lumenpy_view_release(&c->t);
    Py_CLEAR(c->bias);
    Py_CLEAR(c->result);
    Py_CLEAR(c->tmp);
}

/* A new N x K x P x Q array of x's dtype, as torch's result (bf16: made like x). */
static PyObject *new_like_x(int64_t n, int64_t k, int64_t h, int64_t w, const char *name,
                            lumenpy_view *v, int dtype, PyObject *like)
{
    npy_intp shape[4] = {(npy_intp)n, (npy_intp)k, (npy_intp)h, (npy_intp)w};
    PyObject *a = lumenpy_new_array(4, shape, dtype, like);
    if (!a) return NULL;
    if (lumenpy_nchw_view(a, name, 1, v)) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* The output: out= checked against (N, K, P, Q), or a new array of that shape. */
static int conv_output(conv_call *c, PyObject *out, int64_t k, int64_t p, int64_t q,
                       PyObject *like)
{
    int64_t n = c->x.img.n;
    if (out == Py_None) {
        c->result = new_like_x(n, k, p, q, "out", &c->y, (int)c->x.img.dtype, like);
        return c->result ? 0 : -1;
    }
    if (lumenpy_nchw_view(out, "out", 1, &c->y)) return -1;
    const lumen_image *y = &c->y.img;
    if (y->n != n || y->c != k || y->h != p || y->w != q) {
        PyErr_Format(lumenpy_ArgumentError,
                     "out: shape (%lld, %lld, %lld, %lld) differs from the output shape (%lld, "
                     "%lld, %lld, %lld)",
                     (long long)y->n, (long long)y->c, (long long)y->h, (long long)y->w,
                     (long long)n, (long long)k, (long long)p, (long long)q);
        return -1;
    }
    if (overlaps(y, &c->x.img) || overlaps(y, &c->w.img)) {
        PyErr_Format(lumenpy_ArgumentError, "out: shares memory with %s (write to a separate "
                     "array)", overlaps(y, &c->x.img) ? "x" : "weight");
        return -1;
    }
    Py_INCREF(out);
    c->result = out;
    return 0;
}

static int pick_device(conv_call *c)
{
    const lumen_image *v[3] = {&c->x.img, &c->w.img, &c->y.img};
    c->device = -1;
    for (int i = 0; i < 3; i++) {
        if (!v[i]->device) continue;
        if (c->device >= 0 && c->device != v[i]->device) {
            PyErr_SetString(lumenpy_ArgumentError,
                            "x, weight and out live on different devices (move them to one)");
            return -1;
        }
        c->device = v[i]->device;
    }
    return 0;
}

/* dst = src[:, :, dh:, dw:] (shapes already agree once the offsets are applied). */
/* src is f32; dst any float dtype, each value rounded once as lumen stores it. */
static void copy_shifted(const lumen_image *src, int dh, int dw, const lumen_image *dst)
{
    const float *s0 = (const float *)src->data + dh * src->stride_h + dw * src->stride_w;
    const int64_t es = (int64_t)lumen_dtype_size(dst->dtype);
    char *d0 = dst->data;
    for (int64_t n = 0; n < dst->n; n++)
        for (int64_t k = 0; k < dst->c; k++)
            for (int64_t i = 0; i < dst->h; i++) {
                const float *s = s0 + n * src->stride_n + k * src->stride_c + i * src->stride_h;
                char *d = d0 + (n * dst->stride_n + k * dst->stride_c + i * dst->stride_h) * es;
                for (int64_t j = 0; j < dst->w; j++)
                    lumen_element_set(d + j * dst->stride_w * es, dst->dtype, s[j * src->stride_w]);
            }
}

/* padding='same' (stride 1 only): total = d (k - 1) per axis; torch pads total // 2 before and
 * the rest after. The pads become the larger half on both sides; *extra_h / *extra_w are 1
 * where that gives one more output row (column) at the start, dropped afterwards. Bad
 * dilations are left to the C checks (the pads are then meaningless but unused). */
static int resolve_same(lumen_conv2d_params *p, const lumen_image *w, int *extra_h, int *extra_w)
{
    if (p->stride_h != 1 || p->stride_w != 1) {
        PyErr_Format(lumenpy_ArgumentError,
                     "padding: 'same' is not supported for strided convolutions (stride "
                     "(%d, %d)); torch refuses it too",
                     p->stride_h, p->stride_w);
        return -1;
    }
    int64_t th = (int64_t)p->dilation_h * (w->h - 1);
    int64_t tw = (int64_t)p->dilation_w * (w->w - 1);
    if (p->dilation_h > 0 && p->dilation_w > 0) {
        if (th > 2147483646 || tw > 2147483646) {
            PyErr_SetString(lumenpy_ArgumentError, "padding: 'same' padding is too large");
            return -1;
        }
        *extra_h = (int)(th & 1), *extra_w = (int)(tw & 1);
        p->pad_h = (int)((th + 1) / 2), p->pad_w = (int)((tw + 1) / 2);
    }
    return 0;
}

/* ---- prepacked weights (lumen.Conv2dWeights, python/lumen/_conv.py) ---- */

#define PACKED_CAPSULE "lumen.conv2d_weights"

/* A capsule's contents: the handle, the weight view it keeps (held until the capsule dies)
 * and the parameters it was packed with. */
typedef struct conv_packed {
    lumen_conv2d_weights *h;
    lumenpy_view w;
    lumen_conv2d_params p;
    int same; /* packed with padding='same' (its pads resolved in p) */
} conv_packed;

static void packed_destroy(PyObject *cap)
{
    conv_packed *pk = PyCapsule_GetPointer(cap, PACKED_CAPSULE);
    if (!pk) return;
    lumen_conv2d_weights_free(pk->h);
    lumenpy_view_release(&pk->w);
    PyMem_Free(pk);
}

typedef lumen_status (*size_fn)(const lumen_image *, const lumen_image *,
                                const lumen_conv2d_params *, int64_t *, int64_t *);
typedef lumen_status (*conv_fn)(lumen_context *, const lumen_image *, const lumen_image *,
                                const float *, const lumen_conv2d_params *, const lumen_image *,
                                lumen_run_info *);

/* The shared body. same_h / same_w: 1 where 'same' needs one more zero row (column) at the end
 * than at the start (torch pads the end); the op then runs with the larger pad on both sides
 * into a temporary one row (column) larger, whose first row (column) is dropped. */
static PyObject *conv_run(PyObject *xo, PyObject *wo, PyObject *bo, lumen_conv2d_params *p,
                          int same, int transposed, PyObject *out, PyObject *ctx_obj,
                          const conv_packed *pk)
{
    conv_call c;
    memset(&c, 0, sizeof c);
    size_fn size = transposed ? lumen_conv_transpose2d_output_size : lumen_conv2d_output_size;
    conv_fn run = transposed ? lumen_conv_transpose2d : lumen_conv2d;
    int extra_h = 0, extra_w = 0;
    if (lumenpy_nchw_view(xo, "x", 0, &c.x)) goto fail;
    if (pk)
        c.w = pk->w, c.w_borrowed = 1;
    else if (lumenpy_nchw_view(wo, "weight", 0, &c.w))
        goto fail;
    if (same && resolve_same(p, &c.w.img, &extra_h, &extra_w)) goto fail;
    int64_t oh = 0, ow = 0;
    lumen_status s = size(&c.x.img, &c.w.img, p, &oh, &ow);
    if (s) {
        lumenpy_raise_py_names(s);
        goto fail;
    }
    int64_t k = transposed ? c.w.img.c * (int64_t)p->groups : c.w.img.n;
    if (bias_array(bo, k, &c.bias)) goto fail;
    if (conv_output(&c, out, k, oh - extra_h, ow - extra_w, xo)) goto fail;
    if (pick_device(&c)) goto fail;
    if ((extra_h || extra_w) && c.device > 0) {
        PyErr_SetString(lumenpy_UnsupportedError,
                        "padding: 'same' with an even extent d*(k-1) (asymmetric padding) is "
                        "not supported on device memory; give explicit padding instead");
        goto fail;
    }
    const lumen_image *dst = &c.y.img;
    if (extra_h || extra_w) {
        c.tmp = new_like_x(c.x.img.n, k, oh, ow, "out", &c.t, LUMEN_F32, NULL);
        if (!c.tmp) goto fail;
        dst = &c.t.img;
    }
    lumen_context *ctx = lumenpy_context_acquire(ctx_obj, c.device);
    if (!ctx) goto fail;
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    const float *bias = c.bias ? (const float *)PyArray_DATA(c.bias) : NULL;
    Py_BEGIN_ALLOW_THREADS s = pk ? lumen_conv2d_packed(ctx, &c.x.img, pk->h, bias, p, dst, &info)
                                  : run(ctx, &c.x.img, &c.w.img, bias, p, dst, &info);
    if (s == LUMEN_OK && dst == &c.t.img) copy_shifted(&c.t.img, extra_h, extra_w, &c.y.img);
    if (s == LUMEN_OK && c.device >= 0) s = lumen_context_synchronize(ctx);
    Py_END_ALLOW_THREADS
    lumenpy_context_release(ctx_obj, ctx, c.device);
    if (s) {
        lumenpy_raise_py_names(s);
        goto fail;
    }
    lumenpy_record_run(&info, &c.x.img, &c.y.img);
    PyObject *r = c.result;
    c.result = NULL;
    conv_cleanup(&c);
    return r;
fail:
    conv_cleanup(&c);
    return NULL;
}

/* Parameters given with packed weights must be the packed ones: checked before the shapes,
 * so that the message names the parameter (lumen_conv2d_packed's words, Python's names). */
static int packed_params_differ(const lumen_conv2d_params *p, const conv_packed *pk, int same)
{
    if (same != pk->same) {
        PyErr_Format(lumenpy_ArgumentError,
                     "padding: %s differs from the %s the weights were "
                     "packed for",
                     same ? "'same'" : "explicit padding",
                     pk->same ? "'same'" : "explicit padding");
        return 1;
    }
    const int a[] = {p->stride_h,   p->stride_w,   p->pad_h, p->pad_w,
                     p->dilation_h, p->dilation_w, p->groups};
    const int b[] = {pk->p.stride_h,   pk->p.stride_w,   pk->p.pad_h, pk->p.pad_w,
                     pk->p.dilation_h, pk->p.dilation_w, pk->p.groups};
    static const char *const names[] = {"stride (height)", "stride (width)",    "padding (height)",
                                        "padding (width)", "dilation (height)", "dilation (width)",
                                        "groups"};
    for (int i = 0; i < 7; i++)
        if (a[i] != b[i] && !(same && (i == 2 || i == 3))) {
            PyErr_Format(lumenpy_ArgumentError,
                         "%s: %d differs from the %d the weights were "
                         "packed for",
                         names[i], a[i], b[i]);
            return 1;
        }
    return 0;
}

PyObject *lumenpy_conv2d(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    char **kwlist = lumenpy_op_kwlist("conv2d");
    PyObject *x, *w, *bias = Py_None, *stride = NULL, *padding = NULL, *dilation = NULL,
                     *groups = NULL, *out = Py_None, *ctx = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$OOOOOO:conv2d", kwlist, &x, &w, &bias,
                                     &stride, &padding, &dilation, &groups, &out, &ctx))
        return NULL;
    const conv_packed *pk =
        PyCapsule_IsValid(w, PACKED_CAPSULE) ? PyCapsule_GetPointer(w, PACKED_CAPSULE) : NULL;
    /* packed weights: parameters not given are the packed ones, given ones must match them */
    lumen_conv2d_params p = pk ? pk->p : lumen_conv2d_params_default();
    int same = 0;
    if ((stride && !hw_pair(stride, "stride", &p.stride_h, &p.stride_w)) ||
        (padding && !conv2d_padding(padding, &p, &same)) ||
        (dilation && !hw_pair(dilation, "dilation", &p.dilation_h, &p.dilation_w)) ||
        (groups && !lumenpy_int_arg(groups, "groups", &p.groups)))
        return NULL;
    if (pk && !padding) same = pk->same; /* 'same' may crop one row or column */
    if (pk && packed_params_differ(&p, pk, same)) return NULL;
    return conv_run(x, w, bias, &p, same, 0, out, ctx, pk);
}

/* _lumen._conv2d_pack(x_shape, weight, *, stride, padding, dilation, groups, context): a
 * capsule of packed weights for lumen.Conv2dWeights, and the algorithm and bytes packed. */
PyObject *lumenpy_conv2d_pack(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"x_shape",  "weight", "stride",  "padding",
                             "dilation", "groups", "context", NULL};
    PyObject *shape, *w, *stride = NULL, *padding = NULL, *dilation = NULL, *groups = NULL,
                         *ctx_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$OOOOO:Conv2dWeights", kwlist, &shape, &w,
                                     &stride, &padding, &dilation, &groups, &ctx_obj))
        return NULL;
    int64_t xs[4];
    PyObject *seq = PySequence_Fast(shape, "x_shape: expected (N, C, H, W)");
    if (!seq) return NULL;
    const int ok_len = PySequence_Fast_GET_SIZE(seq) == 4;
    for (int i = 0; ok_len && i < 4; i++)
        xs[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    Py_DECREF(seq);
    if (!ok_len) {
        PyErr_SetString(lumenpy_ArgumentError, "x_shape: expected 4 ints (N, C, H, W)");
        return NULL;
    }
    if (PyErr_Occurred()) return NULL;
    conv_packed *pk = PyMem_Calloc(1, sizeof *pk);
    if (!pk) return PyErr_NoMemory();
    pk->p = lumen_conv2d_params_default();
    int same = 0, eh = 0, ew = 0;
    if ((stride && !hw_pair(stride, "stride", &pk->p.stride_h, &pk->p.stride_w)) ||
        (padding && !conv2d_padding(padding, &pk->p, &same)) ||
        (dilation && !hw_pair(dilation, "dilation", &pk->p.dilation_h, &pk->p.dilation_w)) ||
        (groups && !lumenpy_int_arg(groups, "groups", &pk->p.groups)) ||
        lumenpy_nchw_view(w, "weight", 0, &pk->w)) {
        PyMem_Free(pk);
        return NULL;
    }
    if (same && resolve_same(&pk->p, &pk->w.img, &eh, &ew)) goto fail;
    pk->same = same;
    lumen_context *ctx = lumenpy_context_acquire(ctx_obj, pk->w.img.device ? pk->w.img.device : -1);
    if (!ctx) goto fail;
    lumen_status s;
    Py_BEGIN_ALLOW_THREADS s = lumen_conv2d_weights_pack(ctx, xs, &pk->w.img, &pk->p, &pk->h);
    Py_END_ALLOW_THREADS lumenpy_context_release(ctx_obj, ctx,
                                                 pk->w.img.device ? pk->w.img.device : -1);
    if (s) {
        lumenpy_raise_py_names(s);
        goto fail;
    }
    size_t bytes = 0;
    const char *algo = lumen_conv2d_weights_algo(pk->h, &bytes);
    PyObject *cap = PyCapsule_New(pk, PACKED_CAPSULE, packed_destroy);
    if (!cap) {
        lumen_conv2d_weights_free(pk->h);
        goto fail;
    }
    return Py_BuildValue("Nsn", cap, algo, (Py_ssize_t)bytes);
fail:
    lumenpy_view_release(&pk->w);
    PyMem_Free(pk);
    return NULL;
}

PyObject *lumenpy_conv_transpose2d(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    char **kwlist = lumenpy_op_kwlist("conv_transpose2d");
    PyObject *x, *w, *bias = Py_None, *stride = NULL, *padding = NULL, *opad = NULL,
                     *groups = NULL, *dilation = NULL, *out = Py_None, *ctx = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$OOOOOOO:conv_transpose2d", kwlist, &x, &w,
                                     &bias, &stride, &padding, &opad, &groups, &dilation, &out,
                                     &ctx))
        return NULL;
    lumen_conv2d_params p = lumen_conv2d_params_default();
    if ((stride && !hw_pair(stride, "stride", &p.stride_h, &p.stride_w)) ||
        (padding && !hw_pair(padding, "padding", &p.pad_h, &p.pad_w)) ||
        (opad && !hw_pair(opad, "output_padding", &p.output_pad_h, &p.output_pad_w)) ||
        (groups && !lumenpy_int_arg(groups, "groups", &p.groups)) ||
        (dilation && !hw_pair(dilation, "dilation", &p.dilation_h, &p.dilation_w)))
        return NULL;
    return conv_run(x, w, bias, &p, 0, 1, out, ctx, NULL);
}
