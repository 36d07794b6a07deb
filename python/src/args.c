/* Argument converters: borders by name or OpenCV constant, methods, dtypes, pairs, kernels. */
#include "lumen_py.h"

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
    PyArray_Descr *d = NULL;
    if (!PyArray_DescrConverter(obj, &d)) return 0;
    int t = d->type_num;
    Py_DECREF(d);
    if (t == NPY_UINT8) *dt = LUMEN_U8;
    else if (t == NPY_UINT16) *dt = LUMEN_U16;
    else if (t == NPY_FLOAT32) *dt = LUMEN_F32;
    else {
        PyErr_Format(PyExc_TypeError, "dtype: %R is not supported (uint8, uint16 or float32)",
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
