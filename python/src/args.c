/* Argument converters: borders by name or OpenCV constant, methods, dtypes, pairs, kernels. */
#include "lumen_py.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Names that mean the same pattern in every library that uses them (docs/python.md). The
 * string "reflect" is lumen's (= scipy's, = BORDER_REFLECT); torch's/numpy's is reflect101. */
static const struct {
    const char *name;
    lumen_border border;
} border_names[] = {
    {"reflect", LUMEN_BORDER_REFLECT},       {"symmetric", LUMEN_BORDER_REFLECT},
    {"grid-mirror", LUMEN_BORDER_REFLECT},   {"reflect101", LUMEN_BORDER_REFLECT101},
    {"reflect_101", LUMEN_BORDER_REFLECT101}, {"reflect-101", LUMEN_BORDER_REFLECT101},
    {"mirror", LUMEN_BORDER_REFLECT101},     {"replicate", LUMEN_BORDER_REPLICATE},
    {"nearest", LUMEN_BORDER_REPLICATE},     {"edge", LUMEN_BORDER_REPLICATE},
    {"constant", LUMEN_BORDER_CONSTANT},     {"grid-constant", LUMEN_BORDER_CONSTANT},
    {"wrap", LUMEN_BORDER_WRAP},             {"grid-wrap", LUMEN_BORDER_WRAP},
    {"circular", LUMEN_BORDER_WRAP},
};

/* OpenCV's BORDER_* values, indexed by the constant. */
static const lumen_border opencv_borders[] = {
    LUMEN_BORDER_CONSTANT,  /* BORDER_CONSTANT = 0 */
    LUMEN_BORDER_REPLICATE, /* BORDER_REPLICATE = 1 */
    LUMEN_BORDER_REFLECT,   /* BORDER_REFLECT = 2 */
    LUMEN_BORDER_WRAP,      /* BORDER_WRAP = 3 */
    LUMEN_BORDER_REFLECT101 /* BORDER_REFLECT_101 = BORDER_DEFAULT = 4 */
};
#define OPENCV_BORDER_ISOLATED 16

static int border_from_name(PyObject *obj, lumen_border *out)
{
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s) return 0;
    for (size_t i = 0; i < sizeof border_names / sizeof border_names[0]; i++)
        if (!strcmp(s, border_names[i].name)) {
            *out = border_names[i].border;
            return 1;
        }
    PyErr_Format(lumenpy_ArgumentError,
                 "border: unknown mode '%s' (reflect, reflect101, replicate, constant, wrap, "
                 "their aliases in docs/python.md, or a cv2.BORDER_* constant)",
                 s);
    return 0;
}

/* BORDER_ISOLATED only matters for OpenCV ROIs: lumen never reads outside the view. */
static int border_from_opencv(PyObject *obj, lumen_border *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) return 0;
    long mode = v & ~(long)OPENCV_BORDER_ISOLATED;
    if (mode >= 0 && mode < 5) {
        *out = opencv_borders[mode];
        return 1;
    }
    PyErr_Format(lumenpy_ArgumentError,
                 "border: %ld is not a supported OpenCV border (BORDER_CONSTANT 0, REPLICATE 1, "
                 "REFLECT 2, WRAP 3, REFLECT_101 4; BORDER_TRANSPARENT is not supported)",
                 v);
    return 0;
}

int lumenpy_border_conv(PyObject *obj, void *out)
{
    if (PyUnicode_Check(obj)) return border_from_name(obj, out);
    /* True/False (and numpy's) are not border constants, whatever int() says. */
    if (PyIndex_Check(obj) && !PyBool_Check(obj) && !PyArray_IsScalar(obj, Bool)) {
        PyObject *i = PyNumber_Index(obj);
        if (!i) return 0;
        int ok = border_from_opencv(i, out);
        Py_DECREF(i);
        return ok;
    }
    PyErr_Format(PyExc_TypeError, "border: expected a name or a cv2.BORDER_* int, got %s",
                 Py_TYPE(obj)->tp_name);
    return 0;
}

/* Parses a str argument with a lumen_*_parse function, raising its message. */
static int parse_name(PyObject *obj, const char *what, lumen_status (*parse)(const char *, void *),
                      void *out)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a str, got %s", what, Py_TYPE(obj)->tp_name);
        return 0;
    }
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s) return 0;
    lumen_status st = parse(s, out);
    if (st) {
        lumenpy_raise(st);
        return 0;
    }
    return 1;
}

static lumen_status method_parse(const char *s, void *out) { return lumen_method_parse(s, out); }

int lumenpy_method_conv(PyObject *obj, void *out)
{
    return parse_name(obj, "method", method_parse, out);
}

int lumenpy_precision_conv(PyObject *obj, void *out)
{
    if (!PyUnicode_Check(obj)) { /* a TypeError, as method's and the generic binding's */
        PyErr_Format(PyExc_TypeError, "precision: expected a str, got %s", Py_TYPE(obj)->tp_name);
        return 0;
    }
    const char *s = PyUnicode_AsUTF8(obj);
    if (s && !strcmp(s, "exact")) *(lumen_precision *)out = LUMEN_PRECISION_EXACT;
    else if (s && !strcmp(s, "fast")) *(lumen_precision *)out = LUMEN_PRECISION_FAST;
    else {
        if (!PyErr_Occurred())
            PyErr_Format(lumenpy_ArgumentError, "precision: expected 'exact' or 'fast', got %R",
                         obj);
        return 0;
    }
    return 1;
}

/* dtype=None keeps the input's; anything np.dtype() accepts otherwise. */
int lumenpy_dtype_conv(PyObject *obj, void *out)
{
    int *dt = out;
    if (obj == Py_None) {
        *dt = -1;
        return 1;
    }
    /* bfloat16, which NumPy lacks: by name, or torch.bfloat16 (whose str says so) */
    PyObject *name = PyObject_Str(obj);
    const char *n = name ? PyUnicode_AsUTF8(name) : NULL; /* lives as long as name */
    const int bf16 = n && (!strcmp(n, "bfloat16") || !strcmp(n, "bf16") ||
                           !strcmp(n, "torch.bfloat16"));
    const int torch_f16 = n && !strcmp(n, "torch.float16");
    Py_XDECREF(name);
    PyErr_Clear();
    if (bf16 || torch_f16) {
        *dt = bf16 ? LUMEN_BF16 : LUMEN_F16;
        return 1;
    }
    PyArray_Descr *d = NULL;
    if (!PyArray_DescrConverter(obj, &d)) return 0;
    int t = d->type_num;
    Py_DECREF(d);
    if (t == NPY_UINT8) *dt = LUMEN_U8;
    else if (t == NPY_UINT16) *dt = LUMEN_U16;
    else if (t == NPY_FLOAT32) *dt = LUMEN_F32;
    else if (t == NPY_FLOAT16) *dt = LUMEN_F16;
    else if (t == NPY_FLOAT64)
        *dt = LUMENPY_F64; /* computed in float32, then widened */
    else {
        PyErr_Format(PyExc_TypeError,
                     "dtype: %R is not supported (uint8, uint16, float16, bfloat16, float32 or "
                     "float64)",
                     obj);
        return 0;
    }
    return 1;
}

int lumenpy_value_conv(PyObject *obj, void *out)
{
    if (PyBool_Check(obj) || !PyNumber_Check(obj) || PyComplex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "border_value: expected a real number, got %s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) return 0;
    /* As the CLI: a NaN or infinite border would spread into every pixel near the edge. Values
     * past float32's range would become infinite in the float32 pixel arithmetic. */
    if (!isfinite(v) || fabs(v) > 3.4028234663852886e38) {
        PyObject *r = PyFloat_FromDouble(v);
        if (r)
            PyErr_Format(lumenpy_ArgumentError,
                         "border_value: must be a finite float32 value, got %R", r);
        Py_XDECREF(r);
        return 0;
    }
    *(float *)out = (float)v;
    return 1;
}

int lumenpy_int_arg(PyObject *obj, const char *name, int *out)
{
    if (PyBool_Check(obj) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %s", name,
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) return 0;
    if (v < -2147483647L || v > 2147483647L) {
        PyErr_Format(lumenpy_ArgumentError, "%s: %ld is out of range", name, v);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int lumenpy_int_pair(PyObject *obj, const char *name, int *x, int *y)
{
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        if (!lumenpy_int_arg(obj, name, x)) return 0;
        *y = *x;
        return 1;
    }
    if (PySequence_Size(obj) != 2) {
        PyErr_Format(lumenpy_ArgumentError, "%s: expected an int or a pair (x, y), got %R", name,
                     obj);
        return 0;
    }
    PyObject *a = PySequence_GetItem(obj, 0), *b = PySequence_GetItem(obj, 1);
    int ok = a && b && lumenpy_int_arg(a, name, x) && lumenpy_int_arg(b, name, y);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return ok;
}

/* Flattens (1, k) and (k, 1) for separable kernels, as cv2.sepFilter2D accepts them. */
static PyArrayObject *as_vector(PyArrayObject *k, const char *name)
{
    if (PyArray_NDIM(k) == 2 && (PyArray_DIM(k, 0) == 1 || PyArray_DIM(k, 1) == 1)) {
        npy_intp n = PyArray_SIZE(k);
        PyArray_Dims d = {&n, 1};
        PyArrayObject *r = (PyArrayObject *)PyArray_Newshape(k, &d, NPY_CORDER);
        Py_DECREF(k);
        return r;
    }
    if (PyArray_NDIM(k) != 1) {
        PyErr_Format(lumenpy_ArgumentError, "%s: expected a 1-D kernel, got %d dimensions", name,
                     PyArray_NDIM(k));
        Py_DECREF(k);
        return NULL;
    }
    return k;
}

PyArrayObject *lumenpy_kernel(PyObject *obj, const char *name, int ndim)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!a) return NULL;
    int t = PyArray_TYPE(a);
    if (!PyTypeNum_ISNUMBER(t) || PyTypeNum_ISCOMPLEX(t)) {
        PyErr_Format(PyExc_TypeError, "%s: expected real numbers, got dtype %S", name,
                     (PyObject *)PyArray_DESCR(a));
        Py_DECREF(a);
        return NULL;
    }
    PyArrayObject *k = (PyArrayObject *)PyArray_FromAny(
        (PyObject *)a, PyArray_DescrFromType(NPY_FLOAT32), 0, 0,
        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, NULL);
    Py_DECREF(a);
    if (!k) return NULL;
    if (ndim == 1) k = as_vector(k, name);
    else if (PyArray_NDIM(k) != 2) {
        PyErr_Format(lumenpy_ArgumentError,
                     "%s: expected a 2-D kernel, got %d dimension%s (a row is k[None, :], a "
                     "column k[:, None])",
                     name, PyArray_NDIM(k), PyArray_NDIM(k) == 1 ? "" : "s");
        Py_DECREF(k);
        return NULL;
    }
    for (int i = 0; k && i < PyArray_NDIM(k); i++)
        if (PyArray_DIM(k, i) > (1 << 30)) {
            PyErr_Format(lumenpy_ArgumentError, "%s: the kernel is too large", name);
            Py_DECREF(k);
            return NULL;
        }
    if (k && PyArray_SIZE(k) == 0) {
        PyErr_Format(lumenpy_ArgumentError, "%s: the kernel is empty", name);
        Py_DECREF(k);
        return NULL;
    }
    return k;
}

/* ---- gaussian_blur's SciPy forms ---- */

/* scipy.ndimage's modes for its filters and the lumen border each one is (docs/python.md). In
 * scipy's filters 'grid-constant', 'grid-mirror' and 'grid-wrap' are synonyms of 'constant',
 * 'reflect' and 'wrap'. */
static const char *const scipy_modes[][2] = {
    {"reflect", "reflect"},   {"grid-mirror", "reflect"}, {"mirror", "reflect101"},
    {"nearest", "replicate"}, {"constant", "constant"},   {"grid-constant", "constant"},
    {"wrap", "wrap"},         {"grid-wrap", "wrap"},
};

static int given(PyObject *o)
{
    return o && o != Py_None;
}

static PyObject *hold(lumenpy_gauss_forms *f, PyObject *o)
{
    for (int i = 0; o && i < 4; i++)
        if (!f->hold[i]) return f->hold[i] = o;
    Py_XDECREF(o);
    return NULL;
}

void lumenpy_gauss_forms_release(lumenpy_gauss_forms *f)
{
    for (int i = 0; i < 4; i++)
        Py_CLEAR(f->hold[i]);
}

/* sigma=(sx, sy): OpenCV's order (x first), as ksize=; scipy's per-axis sequences are rows
 * first, so the pair is spelled out in the docs. */
static int sigma_pair(lumenpy_gauss_forms *f)
{
    if (!PyTuple_Check(f->sigma) && !PyList_Check(f->sigma)) return 0;
    if (PySequence_Size(f->sigma) != 2) {
        PyErr_Format(lumenpy_ArgumentError, "sigma: expected a number or a pair (sx, sy), got %R",
                     f->sigma);
        return -1;
    }
    if (given(f->sigma_y)) {
        PyErr_SetString(lumenpy_ArgumentError,
                        "sigma_y: given twice, as sigma=(sx, sy) and as sigma_y=; give one");
        return -1;
    }
    PyObject *seq = f->sigma;
    if (!(f->sigma = hold(f, PySequence_GetItem(seq, 0)))) return -1;
    if (!(f->sigma_y = hold(f, PySequence_GetItem(seq, 1)))) return -1;
    return 0;
}

static int scipy_mode(lumenpy_gauss_forms *f)
{
    if (f->border) {
        PyErr_SetString(lumenpy_ArgumentError,
                        "mode: SciPy's name for border=; give mode= or border=, not both");
        return -1;
    }
    if (f->border_value) {
        PyErr_SetString(lumenpy_ArgumentError,
                        "border_value: with SciPy's mode= the constant is cval=; give mode= and "
                        "cval=, or border= and border_value=");
        return -1;
    }
    if (!PyUnicode_Check(f->mode)) {
        PyErr_Format(PyExc_TypeError,
                     "mode: expected one SciPy mode name (a str) for both axes, got %s "
                     "(per-axis modes have no lumen equivalent)",
                     Py_TYPE(f->mode)->tp_name);
        return -1;
    }
    for (size_t i = 0; i < sizeof scipy_modes / sizeof scipy_modes[0]; i++)
        if (!PyUnicode_CompareWithASCIIString(f->mode, scipy_modes[i][0])) {
            f->border = hold(f, PyUnicode_FromString(scipy_modes[i][1]));
            return f->border ? 0 : -1;
        }
    PyErr_Format(lumenpy_ArgumentError,
                 "mode: unknown SciPy mode %R (reflect, mirror, nearest, constant, wrap, "
                 "grid-mirror, grid-constant, grid-wrap)",
                 f->mode);
    return -1;
}

static int real_of(PyObject *o, const char *name, double *out)
{
    if (PyBool_Check(o) || !PyNumber_Check(o) || PyComplex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a real number, got %s", name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(o);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* scipy.ndimage's size rule: radius = int(truncate * sigma + 0.5) on each axis. */
static int radius_of(double truncate, double sigma, const char *sname, long *r)
{
    if (!(sigma >= 0) || !isfinite(sigma)) {
        PyObject *v = PyFloat_FromDouble(sigma);
        if (v)
            PyErr_Format(lumenpy_ArgumentError,
                         "%s: must be finite and >= 0 with SciPy's size rule (mode=, truncate=), "
                         "got %R",
                         sname, v);
        Py_XDECREF(v);
        return -1;
    }
    const double x = truncate * sigma + 0.5;
    if (!(x < (LUMEN_MAX_KSIZE - 1) / 2 + 1)) {
        PyObject *a = PyFloat_FromDouble(truncate), *b = PyFloat_FromDouble(sigma);
        if (a && b)
            PyErr_Format(lumenpy_ArgumentError,
                         "truncate: truncate=%R with %s=%R gives a kernel of more than %d taps "
                         "(the library's limit)",
                         a, sname, b, LUMEN_MAX_KSIZE);
        Py_XDECREF(a);
        Py_XDECREF(b);
        return -1;
    }
    *r = (long)x;
    return 0;
}

static int scipy_truncate(lumenpy_gauss_forms *f, double truncate)
{
    if (given(f->ksize)) {
        PyErr_SetString(lumenpy_ArgumentError,
                        "truncate: sets the kernel size (SciPy's rule); give truncate= or ksize=, "
                        "not both");
        return -1;
    }
    double sx, sy;
    if (real_of(f->sigma, "sigma", &sx)) return -1;
    sy = sx;
    if (given(f->sigma_y) && real_of(f->sigma_y, "sigma_y", &sy)) return -1;
    long rx, ry;
    if (radius_of(truncate, sx, "sigma", &rx) || radius_of(truncate, sy, "sigma_y", &ry)) return -1;
    f->ksize = hold(f, Py_BuildValue("(ll)", 2 * rx + 1, 2 * ry + 1));
    return f->ksize ? 0 : -1;
}

int lumenpy_gauss_forms_apply(lumenpy_gauss_forms *f)
{
    if (f->sigma && sigma_pair(f)) return -1;
    if (given(f->mode) && scipy_mode(f)) return -1;
    if (given(f->cval)) {
        if (!given(f->mode)) {
            PyErr_SetString(lumenpy_ArgumentError,
                            "cval: SciPy's constant goes with mode=; lumen's own is "
                            "border_value= (with border='constant')");
            return -1;
        }
        double v;
        if (real_of(f->cval, "cval", &v)) return -1;
        if (!isfinite(v) || fabs(v) > 3.4028234663852886e38) {
            PyErr_Format(lumenpy_ArgumentError, "cval: must be a finite float32 value, got %R",
                         f->cval);
            return -1;
        }
        f->border_value = f->cval;
    }
    /* mode= asks for SciPy's filter, so SciPy's size rule comes with it (truncate=4.0, its
     * default) unless a size is given: the same call then gives scipy's answer. */
    if (given(f->truncate) || (given(f->mode) && !given(f->ksize))) {
        double truncate = 4.0;
        if (given(f->truncate) && real_of(f->truncate, "truncate", &truncate)) return -1;
        if (!(truncate > 0) || !isfinite(truncate)) {
            PyErr_Format(lumenpy_ArgumentError, "truncate: must be finite and > 0, got %R",
                         f->truncate);
            return -1;
        }
        if (scipy_truncate(f, truncate)) return -1;
    }
    return 0;
}
