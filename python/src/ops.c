/* The filtering ops: arguments -> views -> the C call with the GIL released -> result. */
#include "lumen_py.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* One op call: the input and output views, the result object and the context. */
typedef struct op_call {
    lumenpy_view src, dst;
    PyObject *result; /* the array the op writes: a new one, out=, or a float32 stand-in */
    PyObject *final;  /* NULL, or a float64 result to make from `result` (lumenpy_image_result) */
    PyObject *ctx_obj;
    lumen_context *ctx;
    int device; /* the device whose memory a view lives in, or -1 (host views only) */
} op_call;

static void op_cleanup(op_call *c)
{
    lumenpy_view_release(&c->src);
    lumenpy_view_release(&c->dst);
    Py_CLEAR(c->result);
    Py_CLEAR(c->final);
}

/* Set while lumenpy_choose_method calls an op's function: the function parses its arguments as
 * always, then asks lumen_<op>_method which method it would run (op_query) instead of running;
 * no output is made. Per thread: a query keeps the GIL, so no other call of this thread can
 * come in between. */
static _Thread_local int query_mode;

/* halo_y and halo_x (None, one margin for both sides, or a pair (before, after)) into *h. */
static int halo_conv(PyObject *hy, PyObject *hx, lumen_halo *h)
{
    if (hy != Py_None && !lumenpy_int_pair(hy, "halo_y", &h->top, &h->bottom)) return -1;
    if (hx != Py_None && !lumenpy_int_pair(hx, "halo_x", &h->left, &h->right)) return -1;
    if (h->top >= 0 && h->bottom >= 0 && h->left >= 0 && h->right >= 0) return 0;
    PyErr_Format(lumenpy_ArgumentError, "halo_y, halo_x: margins must be >= 0, got %R and %R", hy,
                 hx);
    return -1;
}

/* The output's dims: src's (dims in src's layout), less the halo's margins on H and W. */
static int halo_dims(const op_call *c, const lumen_halo *h, npy_intp *dims)
{
    static const int h_axis[] = {[LUMENPY_LAYOUT_HW] = 0,
                                 [LUMENPY_LAYOUT_HWC] = 0,
                                 [LUMENPY_LAYOUT_CHW] = 1,
                                 [LUMENPY_LAYOUT_NHWC] = 1,
                                 [LUMENPY_LAYOUT_NCHW] = 2};
    for (int i = 0; i < c->src.ndim; i++)
        dims[i] = c->src.shape[i];
    if (!h) return 0;
    const int a = h_axis[c->src.layout];
    dims[a] -= (npy_intp)h->top + h->bottom, dims[a + 1] -= (npy_intp)h->left + h->right;
    if (dims[a] >= 1 && dims[a + 1] >= 1) return 0;
    PyErr_Format(lumenpy_ArgumentError,
                 "halo_y, halo_x: margins (%d, %d) and (%d, %d) leave nothing of src (%lld x %lld) "
                 "to filter",
                 h->top, h->bottom, h->left, h->right, (long long)c->src.img.h,
                 (long long)c->src.img.w);
    return -1;
}

/* Views src in `layout` and out (or a new output of dtype, -1: src's; a float64 src gives a
 * float64 result; src's shape less the halo's margins, NULL: none), and takes a context. */
static int op_begin(op_call *c, PyObject *src, PyObject *out, int dtype, int layout,
                    PyObject *ctx_obj, const lumen_halo *halo)
{
    memset(c, 0, sizeof *c);
    int f64;
    if (lumenpy_image_input(src, "src", layout, &c->src, &f64)) return -1;
    const int want = dtype >= 0 ? dtype : f64 ? LUMENPY_F64 : (int)c->src.img.dtype;
    npy_intp dims[4];
    if (halo_dims(c, halo, dims)) {
        op_cleanup(c);
        return -1;
    }
    if (query_mode) { /* the output's shape and dtype only: lumen_*_method reads no pixels */
        c->dst.img = c->src.img;
        c->dst.img.data = NULL;
        if (halo)
            c->dst.img.h -= halo->top + halo->bottom, c->dst.img.w -= halo->left + halo->right;
        c->dst.img.dtype = want == LUMENPY_F64 ? LUMEN_F32 : (lumen_dtype)want;
        c->device = c->src.img.device ? c->src.img.device : -1;
        if ((c->ctx = lumenpy_context_acquire(ctx_obj, c->device))) {
            c->ctx_obj = ctx_obj;
            return 0;
        }
        op_cleanup(c);
        return -1;
    }
    /* Without out=, the new array's dtype; with it, a dtype= that differs is refused. */
    c->result = lumenpy_image_output(out, out == Py_None ? want : dtype, c->src.ndim, dims,
                                     c->src.layout, "src", &c->dst, &c->final, src);
    if (!c->result) goto fail;
    c->ctx_obj = ctx_obj;
    c->device = c->src.img.device ? c->src.img.device : c->dst.img.device ? c->dst.img.device : -1;
    c->ctx = lumenpy_context_acquire(ctx_obj, c->device);
    if (c->ctx) return 0;
fail:
    op_cleanup(c);
    return -1;
}

/* Gives the context back and returns the result, or raises the C error. */
static PyObject *op_end(op_call *c, lumen_status s, const lumen_run_info *info)
{
    /* Device results are complete when the call returns, whatever stream the caller uses. */
    if (s == LUMEN_OK && c->device >= 0) {
        Py_BEGIN_ALLOW_THREADS
        s = lumen_context_synchronize(c->ctx);
        Py_END_ALLOW_THREADS
    }
    lumenpy_context_release(c->ctx_obj, c->ctx, c->device);
    PyObject *r = NULL;
    if (s == LUMEN_OK) {
        lumenpy_record_run(info, &c->src.img, &c->dst.img);
        r = lumenpy_image_result(c->result, c->final);
        c->result = c->final = NULL;
    } else {
        lumenpy_raise(s);
    }
    op_cleanup(c);
    return r;
}

/* A query's end: gives the context back and returns the method's name, or raises. */
static PyObject *op_query(op_call *c, lumen_status s, lumen_method m)
{
    lumenpy_context_release(c->ctx_obj, c->ctx, c->device);
    op_cleanup(c);
    return s == LUMEN_OK ? PyUnicode_FromString(lumen_method_name(m)) : lumenpy_raise(s);
}

/* anchor: None or an (x, y) pair (a bare int would hide which axis it is for). */
static int anchor_conv(PyObject *obj, lumen_filter_options *o)
{
    if (obj == Py_None) return 0;
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "anchor: expected None or a pair (x, y), got %s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return lumenpy_int_pair(obj, "anchor", &o->anchor_x, &o->anchor_y) ? 0 : -1;
}

PyObject *lumenpy_filter2d(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    char **kwlist = lumenpy_op_kwlist("filter2d");
    PyObject *src, *kobj, *anchor = Py_None, *hy = Py_None, *hx = Py_None, *out = Py_None,
                          *ctx = Py_None;
    lumen_filter_options o = lumen_filter_options_default();
    int dtype = -1, layout = LUMENPY_LAYOUT_AUTO;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O&O&OpO&OOOO&O&O:filter2d", kwlist, &src, &kobj,
                                     lumenpy_border_conv, &o.border, lumenpy_value_conv,
                                     &o.border_value, &anchor, &o.convolve, lumenpy_method_conv,
                                     &o.method, &hy, &hx, &out, lumenpy_dtype_conv, &dtype,
                                     lumenpy_layout_conv, &layout, &ctx) ||
        anchor_conv(anchor, &o) || halo_conv(hy, hx, &o.halo))
        return NULL;
    PyArrayObject *k = lumenpy_kernel(kobj, "kernel", 2);
    op_call c;
    if (!k || op_begin(&c, src, out, dtype, layout, ctx, &o.halo)) {
        Py_XDECREF(k);
        return NULL;
    }
    lumen_run_info info;
    lumen_status s;
    if (query_mode) {
        lumen_method m = LUMEN_METHOD_AUTO;
        s = lumen_filter2d_method(c.ctx, &c.src.img, &c.dst.img, PyArray_DATA(k),
                                  (int)PyArray_DIM(k, 1), (int)PyArray_DIM(k, 0), &o, &m);
        Py_DECREF(k);
        return op_query(&c, s, m);
    }
    Py_BEGIN_ALLOW_THREADS
    s = lumen_filter2d(c.ctx, &c.src.img, &c.dst.img, PyArray_DATA(k), (int)PyArray_DIM(k, 1),
                       (int)PyArray_DIM(k, 0), &o, &info);
    Py_END_ALLOW_THREADS
    Py_DECREF(k);
    return op_end(&c, s, &info);
}

PyObject *lumenpy_sep_filter2d(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    char **kwlist = lumenpy_op_kwlist("sep_filter2d");
    PyObject *src, *kxo, *kyo, *anchor = Py_None, *hy = Py_None, *hx = Py_None, *out = Py_None,
                               *ctx = Py_None;
    lumen_filter_options o = lumen_filter_options_default();
    int dtype = -1, layout = LUMENPY_LAYOUT_AUTO;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$O&O&OpO&OOOO&O&O:sep_filter2d", kwlist, &src,
                                     &kxo, &kyo, lumenpy_border_conv, &o.border, lumenpy_value_conv,
                                     &o.border_value, &anchor, &o.convolve, lumenpy_method_conv,
                                     &o.method, &hy, &hx, &out, lumenpy_dtype_conv, &dtype,
                                     lumenpy_layout_conv, &layout, &ctx) ||
        anchor_conv(anchor, &o) || halo_conv(hy, hx, &o.halo))
        return NULL;
    PyArrayObject *kx = lumenpy_kernel(kxo, "kx", 1);
    PyArrayObject *ky = kx ? lumenpy_kernel(kyo, "ky", 1) : NULL;
    op_call c;
    if (!ky || op_begin(&c, src, out, dtype, layout, ctx, &o.halo)) {
        Py_XDECREF(kx);
        Py_XDECREF(ky);
        return NULL;
    }
    lumen_run_info info;
    lumen_status s;
    if (query_mode) {
        lumen_method m = LUMEN_METHOD_AUTO;
        s = lumen_sep_filter2d_method(c.ctx, &c.src.img, &c.dst.img, PyArray_DATA(kx),
                                      (int)PyArray_DIM(kx, 0), PyArray_DATA(ky),
                                      (int)PyArray_DIM(ky, 0), &o, &m);
        Py_DECREF(kx);
        Py_DECREF(ky);
        return op_query(&c, s, m);
    }
    Py_BEGIN_ALLOW_THREADS
    s = lumen_sep_filter2d(c.ctx, &c.src.img, &c.dst.img, PyArray_DATA(kx),
                           (int)PyArray_DIM(kx, 0), PyArray_DATA(ky), (int)PyArray_DIM(ky, 0), &o,
                           &info);
    Py_END_ALLOW_THREADS
    Py_DECREF(kx);
    Py_DECREF(ky);
    return op_end(&c, s, &info);
}

/* sigma (a number), sigma_y (None: sigma), ksize (None or 0: derived from sigma), border and
 * border_value (NULL: the defaults), after the SciPy forms were rewritten into them. */
static int gaussian_conv(const lumenpy_gauss_forms *f, lumen_gaussian_options *o)
{
    if (PyBool_Check(f->sigma) || !PyNumber_Check(f->sigma) || PyComplex_Check(f->sigma)) {
        PyErr_Format(PyExc_TypeError, "sigma: expected a real number or a pair (sx, sy), got %s",
                     Py_TYPE(f->sigma)->tp_name);
        return -1;
    }
    o->sigma_x = PyFloat_AsDouble(f->sigma);
    if (o->sigma_x == -1.0 && PyErr_Occurred()) return -1;
    o->sigma_y = o->sigma_x;
    if (f->sigma_y && f->sigma_y != Py_None) {
        o->sigma_y = PyFloat_AsDouble(f->sigma_y);
        if (o->sigma_y == -1.0 && PyErr_Occurred()) return -1;
    }
    if (f->border && !lumenpy_border_conv(f->border, &o->border)) return -1;
    if (f->border_value && !lumenpy_value_conv(f->border_value, &o->border_value)) return -1;
    if (!f->ksize || f->ksize == Py_None) return 0;
    if (!lumenpy_int_pair(f->ksize, "ksize", &o->ksize_x, &o->ksize_y)) return -1;
    if (o->ksize_x >= 0 && o->ksize_y >= 0) return 0;
    PyErr_Format(lumenpy_ArgumentError,
                 "ksize: expected 0 (derived from sigma) or a positive odd size, got %R", f->ksize);
    return -1;
}

PyObject *lumenpy_gaussian_blur(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    char **kwlist = lumenpy_op_kwlist("gaussian_blur");
    PyObject *src, *hy = Py_None, *hx = Py_None, *out = Py_None, *ctx = Py_None;
    lumenpy_gauss_forms f = {0};
    lumen_gaussian_options o = lumen_gaussian_options_default();
    int dtype = -1, layout = LUMENPY_LAYOUT_AUTO;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "OO|$OOOOO&O&OOOOOOO&O&O:gaussian_blur", kwlist, &src, &f.sigma, &f.sigma_y,
            &f.ksize, &f.border, &f.border_value, lumenpy_precision_conv, &o.precision,
            lumenpy_method_conv, &o.method, &hy, &hx, &f.mode, &f.cval, &f.truncate, &out,
            lumenpy_dtype_conv, &dtype, lumenpy_layout_conv, &layout, &ctx) ||
        halo_conv(hy, hx, &o.halo))
        return NULL;
    int bad = lumenpy_gauss_forms_apply(&f) || gaussian_conv(&f, &o);
    lumenpy_gauss_forms_release(&f);
    op_call c;
    if (bad || op_begin(&c, src, out, dtype, layout, ctx, &o.halo)) return NULL;
    lumen_run_info info;
    lumen_status s;
    if (query_mode) {
        lumen_method m = LUMEN_METHOD_AUTO;
        s = lumen_gaussian_blur_method(c.ctx, &c.src.img, &c.dst.img, &o, &m);
        return op_query(&c, s, m);
    }
    Py_BEGIN_ALLOW_THREADS
    s = lumen_gaussian_blur_ex(c.ctx, &c.src.img, &c.dst.img, &o, &info);
    Py_END_ALLOW_THREADS
    return op_end(&c, s, &info);
}

PyObject *lumenpy_box_blur(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    char **kwlist = lumenpy_op_kwlist("box_blur");
    PyObject *src, *ksize, *out = Py_None, *ctx = Py_None;
    int normalize = 1, kw_ = 0, kh = 0, dtype = -1, layout = LUMENPY_LAYOUT_AUTO;
    lumen_border border = LUMEN_BORDER_REFLECT;
    float value = 0.0f;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$pO&O&OO&O&O:box_blur", kwlist, &src, &ksize,
                                     &normalize, lumenpy_border_conv, &border, lumenpy_value_conv,
                                     &value, &out, lumenpy_dtype_conv, &dtype, lumenpy_layout_conv,
                                     &layout, &ctx) ||
        !lumenpy_int_pair(ksize, "ksize", &kw_, &kh))
        return NULL;
    op_call c;
    if (op_begin(&c, src, out, dtype, layout, ctx, NULL)) return NULL;
    lumen_run_info info;
    lumen_status s;
    if (query_mode) {
        lumen_method m = LUMEN_METHOD_AUTO;
        s = lumen_box_blur_method(c.ctx, &c.src.img, &c.dst.img, kw_, kh, border, value, &m);
        return op_query(&c, s, m);
    }
    Py_BEGIN_ALLOW_THREADS
    s = lumen_box_blur(c.ctx, &c.src.img, &c.dst.img, kw_, kh, normalize, border, value, &info);
    Py_END_ALLOW_THREADS
    return op_end(&c, s, &info);
}

PyObject *lumenpy_gaussian_kernel(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"n", "sigma", NULL};
    int n;
    double sigma;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "id:gaussian_kernel", kwlist, &n, &sigma))
        return NULL;
    if (n < 1 || n > LUMEN_MAX_KSIZE) /* the library's cap, checked before allocating */
        return PyErr_Format(lumenpy_ArgumentError, "n: expected 1..%d taps, got %d",
                            LUMEN_MAX_KSIZE, n);
    npy_intp dims[1] = {n};
    PyObject *a = PyArray_SimpleNew(1, dims, NPY_FLOAT32);
    if (!a) return NULL;
    lumen_status s = lumen_gaussian_kernel(n, sigma, PyArray_DATA((PyArrayObject *)a));
    if (s) {
        Py_DECREF(a);
        return lumenpy_raise(s);
    }
    return a;
}

PyObject *lumenpy_gaussian_ksize(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"sigma", "dtype", NULL};
    double sigma;
    int dtype = LUMEN_F32;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "d|O&:gaussian_ksize", kwlist, &sigma,
                                     lumenpy_dtype_conv, &dtype))
        return NULL;
    /* PyErr_Format has no %g: the number goes in as a float object (%R). */
    PyObject *sv = PyFloat_FromDouble(sigma);
    if (!sv) return NULL;
    const int u8 = dtype == LUMEN_U8; /* float64 sizes as float32 does (OpenCV: not 8-bit) */
    int n = 0;
    if (!(sigma > 0) || !isfinite(sigma))
        PyErr_Format(lumenpy_ArgumentError, "sigma: must be positive and finite, got %R", sv);
    else if ((n = lumen_gaussian_ksize(sigma, u8 ? LUMEN_U8 : LUMEN_F32)) > LUMEN_MAX_KSIZE)
        /* The library's size rule gives LUMEN_MAX_KSIZE + 1 past the cap; no op takes it. */
        PyErr_Format(lumenpy_ArgumentError,
                     "sigma: %R needs a kernel of more than %d taps, the library's limit "
                     "(LUMEN_MAX_KSIZE); sigma may be at most %d for %s",
                     sv, LUMEN_MAX_KSIZE, (LUMEN_MAX_KSIZE - 2) / (u8 ? 6 : 8),
                     u8 ? "uint8" : "float32, uint16 and float64");
    Py_DECREF(sv);
    return PyErr_Occurred() ? NULL : PyLong_FromLong(n);
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Benchmark helper: seconds of each of `repeat` bare C calls of lumen_gaussian_blur on the
 * same views, so the binding's own overhead can be measured against it. */
PyObject *lumenpy_time_c(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"op", "src", "out", "repeat", "sigma", "context", NULL};
    const char *op;
    PyObject *src, *out, *ctx = Py_None;
    int repeat;
    double sigma = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOOi|$dO:_time_c", kwlist, &op, &src, &out,
                                     &repeat, &sigma, &ctx))
        return NULL;
    if (strcmp(op, "gaussian_blur") || repeat < 1)
        return PyErr_Format(lumenpy_ArgumentError, "_time_c: only 'gaussian_blur', repeat >= 1");
    PyObject *times = PyList_New(repeat);
    op_call c;
    if (!times || op_begin(&c, src, out, -1, LUMENPY_LAYOUT_AUTO, ctx, NULL)) {
        Py_XDECREF(times);
        return NULL;
    }
    lumen_status s = LUMEN_OK;
    for (int i = 0; i < repeat && s == LUMEN_OK; i++) {
        double t0 = now_seconds();
        s = lumen_gaussian_blur(c.ctx, &c.src.img, &c.dst.img, 0, 0, sigma, 0.0,
                                LUMEN_BORDER_REFLECT, 0.0f, NULL);
        PyList_SET_ITEM(times, i, PyFloat_FromDouble(now_seconds() - t0));
    }
    lumen_run_info info = {0};
    PyObject *r = op_end(&c, s, &info);
    if (!r) {
        Py_DECREF(times);
        return NULL;
    }
    Py_DECREF(r);
    return times;
}

/* ---- film (docs/film.md): the chain, the stocks and the grain's draws ---- */

/* A stock as a dict of its numbers (lumen.film.stocks()). */
static PyObject *triplet(const double v[3])
{
    return Py_BuildValue("[ddd]", v[0], v[1], v[2]);
}

static PyObject *stock_dict(const lumen_film_stock *s)
{
    PyObject *m = PyList_New(9);
    for (int i = 0; m && i < 9; i++)
        PyList_SET_ITEM(m, i, PyFloat_FromDouble(s->matrix[i]));
    PyObject *f = PyList_New(6);
    for (int i = 0; f && i < 6; i++)
        PyList_SET_ITEM(f, i, PyFloat_FromDouble(s->filmic[i]));
    PyObject *d = Py_BuildValue(
        "{s:s,s:s,s:O,s:i,s:N,s:s,s:N,s:s,s:d,s:d,s:N,s:N,s:N,s:N,s:O,s:N,s:d,s:d,s:d,s:N,s:N,"
        "s:d,s:d,s:d,s:d,s:N,s:d}",
        "name", s->name, "title", s->title, "color", s->color ? Py_True : Py_False, "iso", s->iso,
        "matrix", m, "tone", s->tone ? "reinhard" : "filmic", "filmic", f, "bloom_mode",
        s->bloom_artistic ? "artistic" : "mie", "sensitivity", s->sensitivity, "bloom_threshold",
        s->bloom.threshold, "bloom_eta", triplet(s->bloom.eta), "bloom_sigma",
        triplet(s->bloom.sigma), "bloom_kappa", triplet(s->bloom.kappa), "bloom_rho",
        triplet(s->bloom.rho), "halation", s->halation_enabled ? Py_True : Py_False, "halation_f",
        triplet(s->halation.f), "halation_energy", s->halation.energy_fraction, "halation_radius",
        s->halation.psf_radius, "halation_threshold", s->halation.threshold, "diffuse",
        triplet(s->diffuse), "direct", triplet(s->direct), "grain_intensity", s->grain.intensity,
        "grain_size", s->grain.size, "grain_density", s->grain.density, "grain_exposure",
        s->grain.exposure, "grain_layer", triplet(s->grain_layer), "grain_pan", s->grain_pan);
    return d;
}

PyObject *lumenpy_film_stocks(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    char names[1024];
    snprintf(names, sizeof names, "%s", lumen_film_stock_names());
    PyObject *list = PyList_New(0);
    for (char *save = NULL, *n = strtok_r(names, ",", &save); list && n;
         n = strtok_r(NULL, ",", &save)) {
        lumen_film_stock s;
        lumen_status st = lumen_film_stock_get(n, &s);
        PyObject *d = st ? lumenpy_raise(st) : stock_dict(&s);
        if (!d || PyList_Append(list, d)) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(d);
    }
    return list;
}

PyObject *lumenpy_film(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"src",  "stock", "halation", "bloom",  "grain", "seed",
                             "out",  "dtype", "layout",   "context", NULL};
    PyObject *src, *out = Py_None, *ctx = Py_None;
    const char *name = "portra400";
    double halation = 1, bloom = 1, grain = 1;
    unsigned long long seed = 0;
    int dtype = -1, layout = LUMENPY_LAYOUT_AUTO;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s$dddKOO&O&O:film", kwlist, &src, &name,
                                     &halation, &bloom, &grain, &seed, &out, lumenpy_dtype_conv,
                                     &dtype, lumenpy_layout_conv, &layout, &ctx))
        return NULL;
    lumen_film_stock stock;
    lumen_status s = lumen_film_stock_get(name, &stock);
    if (s) return lumenpy_raise(s);
    lumen_film_options o = lumen_film_options_default();
    o.halation = halation, o.bloom = bloom, o.grain = grain, o.seed = seed;
    op_call c;
    if (op_begin(&c, src, out, dtype, layout, ctx, NULL)) return NULL;
    lumen_run_info info;
    Py_BEGIN_ALLOW_THREADS
    s = lumen_film(c.ctx, &c.src.img, &c.dst.img, &stock, &o, &info);
    Py_END_ALLOW_THREADS
    return op_end(&c, s, &info);
}

PyObject *lumenpy_grain_normals(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"seed", "h", "w", "image", "channel", NULL};
    unsigned long long seed;
    long long h, w, image = 0, channel = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "KLL|LL:grain_normals", kwlist, &seed, &h, &w,
                                     &image, &channel))
        return NULL;
    if (h < 1 || w < 1 || h > (1 << 20) || w > (1 << 20))
        return PyErr_Format(lumenpy_ArgumentError, "h, w: %lld x %lld is not a plane", h, w);
    npy_intp dims[2] = {(npy_intp)h, (npy_intp)w};
    PyObject *a = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!a) return NULL;
    lumen_status s = lumen_grain_normals(seed, h, w, image, channel,
                                         PyArray_DATA((PyArrayObject *)a));
    if (s) {
        Py_DECREF(a);
        return lumenpy_raise(s);
    }
    return a;
}

/* _choose_method(op, src, *args, **kw): op's function in query mode (query_mode above). */
PyObject *lumenpy_choose_method(PyObject *self, PyObject *args, PyObject *kw)
{
    static const struct {
        const char *name;
        PyObject *(*fn)(PyObject *, PyObject *, PyObject *);
    } ops[] = {{"filter2d", lumenpy_filter2d},
               {"sep_filter2d", lumenpy_sep_filter2d},
               {"gaussian_blur", lumenpy_gaussian_blur},
               {"box_blur", lumenpy_box_blur}};
    PyObject *name = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
    if (!name || !PyUnicode_Check(name))
        return PyErr_Format(PyExc_TypeError, "_choose_method() expects the op's name first");
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (PyUnicode_CompareWithASCIIString(name, ops[i].name)) continue;
        PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
        if (!rest) return NULL;
        query_mode = 1;
        PyObject *r = ops[i].fn(self, rest, kw);
        query_mode = 0;
        Py_DECREF(rest);
        return r;
    }
    return PyErr_Format(lumenpy_ArgumentError,
                        "op: %R has no method to choose (filter2d, sep_filter2d, gaussian_blur, "
                        "box_blur)",
                        name);
}
