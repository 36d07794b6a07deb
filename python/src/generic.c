/* The generic binding: one function that runs any op of the descriptor table
 * (include/lumen_ops.h) from Python arguments, so that an op with a descriptor and no
 * hand-written function still appears in the package (docs/descriptors.md). Arguments are
 * parsed by their descriptor's types with the converters the hand-written ops use, the output
 * is allocated from lumen_op_output_shape, and the op runs through lumen_op_invoke with the
 * GIL released. */
#include "lumen_py.h"

#include <string.h>

#define GEN_MAX_ARGS 32 /* lumen_value arrays live on the stack */

/* The front end's own keywords, after the descriptor's; an op takes those that
 * lumenpy_op_extras (descriptors.c) lists for it. */
enum { EX_OUT, EX_DTYPE, EX_LAYOUT, EX_CONTEXT, EX_MODE, EX_CVAL, EX_TRUNCATE, EX_N };
static const char *const extra_names[EX_N] = {"out",  "dtype", "layout",  "context",
                                              "mode", "cval",  "truncate"};

typedef struct gen_call {
    const lumen_op_desc *op;
    PyObject *given[GEN_MAX_ARGS]; /* borrowed; NULL: not passed */
    PyObject *extra[EX_N];         /* borrowed out=, dtype= ...; NULL: not passed */
    lumenpy_gauss_forms forms;     /* SciPy's forms, for an op that takes mode= */
    lumen_value values[GEN_MAX_ARGS];
    lumenpy_view views[GEN_MAX_ARGS];    /* IMAGE and TENSOR arguments */
    PyArrayObject *arrays[GEN_MAX_ARGS]; /* KERNEL and VECTOR arguments, float32 */
    int first_view;                      /* the first IMAGE/TENSOR argument, -1: none */
    int layout;                          /* layout= of IMAGE arguments */
    int f64;                             /* the first IMAGE argument was float64 */
    lumenpy_view dst;
    PyObject *result; /* the array the op writes: a new one, out=, or a float32 stand-in */
    PyObject *final;  /* NULL, or the float64 result to make (lumenpy_image_result) */
    int device;       /* the device whose memory a view lives in, or -1 (host only) */
} gen_call;

static void gen_cleanup(gen_call *c)
{
    for (int i = 0; i < c->op->n_args; i++) {
        lumenpy_view_release(&c->views[i]);
        Py_CLEAR(c->arrays[i]);
    }
    lumenpy_view_release(&c->dst);
    Py_CLEAR(c->result);
    Py_CLEAR(c->final);
    lumenpy_gauss_forms_release(&c->forms);
}

/* ---- positional and keyword arguments ---- */

/* How many leading arguments may be given by position: the required and POSITIONAL ones (the
 * table puts them first, tests/c/test_descriptors.c checks it). */
static int n_positional(const lumen_op_desc *op)
{
    int n = 0;
    while (n < op->n_args && (op->args[n].flags & (LUMEN_ARG_REQUIRED | LUMEN_ARG_POSITIONAL)))
        n++;
    return n;
}

static int takes_extra(const lumen_op_desc *op, int e)
{
    for (const char *const *x = lumenpy_op_extras(op); *x; x++)
        if (!strcmp(*x, extra_names[e])) return 1;
    return 0;
}

static PyObject **keyword_slot(gen_call *c, PyObject *key)
{
    for (int i = 0; i < c->op->n_args; i++)
        if (!PyUnicode_CompareWithASCIIString(key, c->op->args[i].name)) return &c->given[i];
    for (int e = 0; e < EX_N; e++)
        if (takes_extra(c->op, e) && !PyUnicode_CompareWithASCIIString(key, extra_names[e]))
            return &c->extra[e];
    return NULL;
}

static int collect_keywords(gen_call *c, PyObject *kw)
{
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (kw && PyDict_Next(kw, &pos, &key, &val)) {
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "%s(): keywords must be strings", c->op->name);
            return -1;
        }
        PyObject **slot = keyword_slot(c, key);
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         c->op->name, key);
            return -1;
        }
        if (*slot) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", c->op->name,
                         key);
            return -1;
        }
        *slot = val;
    }
    return 0;
}

/* Fills c->given and c->extra as Python's own argument rules do (the errors are TypeErrors,
 * worded as PyArg_ParseTupleAndKeywords words them for the hand-written functions). */
static int collect(gen_call *c, PyObject *args, Py_ssize_t first, PyObject *kw)
{
    const lumen_op_desc *op = c->op;
    const Py_ssize_t n = PyTuple_GET_SIZE(args) - first;
    const int np = n_positional(op);
    if (n > np) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional argument%s (%zd given)",
                     op->name, np, np == 1 ? "" : "s", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        c->given[i] = PyTuple_GET_ITEM(args, first + i);
    if (collect_keywords(c, kw)) return -1;
    for (int i = 0; i < op->n_args; i++)
        if (!c->given[i] && (op->args[i].flags & LUMEN_ARG_REQUIRED)) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", op->name,
                         op->args[i].name, i + 1);
            return -1;
        }
    return 0;
}

/* ---- one value per argument type ---- */

static int type_error(const lumen_arg_desc *a, const char *expected, PyObject *obj)
{
    PyErr_Format(PyExc_TypeError, "%s: expected %s, got %s", a->name, expected,
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* As border_value's converter: a real number, not a bool; border_value itself through that
 * converter (finite, within float32). */
static int real_arg(const lumen_arg_desc *a, PyObject *obj, double *out)
{
    if (!strcmp(a->name, "border_value")) {
        float v;
        if (!lumenpy_value_conv(obj, &v)) return -1;
        *out = v;
        return 0;
    }
    if (PyBool_Check(obj) || !PyNumber_Check(obj) || PyComplex_Check(obj))
        return type_error(a, "a real number", obj);
    *out = PyFloat_AsDouble(obj);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* An int (both numbers) or a pair in the argument's order, as the CLI's "A" or "A,B"; PAIR_BOTH
 * (an anchor) wants the pair, since one number would hide which axis it is for. Ranges are
 * lumen_op_check_args'. */
static int pair_arg(const lumen_arg_desc *a, PyObject *obj, int64_t pair[2])
{
    const int both = (a->flags & LUMEN_ARG_PAIR_BOTH) != 0;
    const char *form = a->flags & LUMEN_ARG_PAIR_XY ? "(x, y)" : "(h, w)";
    int v[2] = {0, 0};
    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        if (both || PyBool_Check(obj) || !PyIndex_Check(obj)) {
            PyErr_Format(PyExc_TypeError, "%s: expected %s %s of ints, got %s", a->name,
                         both ? "a pair" : "an int or a pair", form, Py_TYPE(obj)->tp_name);
            return -1;
        }
        if (!lumenpy_int_arg(obj, a->name, &v[0])) return -1;
        pair[0] = pair[1] = v[0];
        return 0;
    }
    Py_ssize_t n = PySequence_Size(obj);
    if (n != 2) {
        PyErr_Format(lumenpy_ArgumentError, "%s: expected %s %s of ints, got %R", a->name,
                     both ? "a pair" : "an int or a pair", form, obj);
        return -1;
    }
    PyObject *x = PySequence_GetItem(obj, 0), *y = PySequence_GetItem(obj, 1);
    int ok = x && y && lumenpy_int_arg(x, a->name, &v[0]) && lumenpy_int_arg(y, a->name, &v[1]);
    Py_XDECREF(x);
    Py_XDECREF(y);
    pair[0] = v[0], pair[1] = v[1];
    return ok ? 0 : -1;
}

static int unknown_choice(const lumen_arg_desc *a, const char *s)
{
    char names[512] = "";
    size_t len = 0;
    for (const lumen_choice *ch = a->choices; ch && ch->name && len < sizeof names; ch++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'",
                                ch == a->choices ? "" : ", ", ch->name);
    PyErr_Format(lumenpy_ArgumentError, "%s: unknown choice '%s' (one of %s)", a->name, s, names);
    return -1;
}

/* A choice by name. A border also takes its aliases and cv2.BORDER_* integers, through the
 * converter of the hand-written ops (lumen_border's values are the border choices'). */
static int enum_arg(const lumen_arg_desc *a, PyObject *obj, int64_t *out)
{
    if (!strcmp(a->name, "border")) {
        lumen_border b;
        if (!lumenpy_border_conv(obj, &b)) return -1;
        *out = b;
        return 0;
    }
    if (!PyUnicode_Check(obj)) return type_error(a, "a str", obj);
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s) return -1;
    for (const lumen_choice *ch = a->choices; ch && ch->name; ch++)
        if (!strcmp(ch->name, s)) {
            *out = ch->value;
            return 0;
        }
    return unknown_choice(a, s);
}

/* KERNEL (kh x kw) or VECTOR, as a contiguous float32 array kept until the call ends. */
static int array_arg(gen_call *c, int i, PyObject *obj)
{
    const lumen_arg_desc *a = &c->op->args[i];
    const int vec = a->type == LUMEN_ARG_VECTOR;
    PyArrayObject *k = lumenpy_kernel(obj, a->name, vec ? 1 : 2);
    if (!k) return -1;
    c->arrays[i] = k;
    lumen_value *v = &c->values[i];
    v->u.array.data = PyArray_DATA(k);
    v->u.array.h = vec ? 1 : PyArray_DIM(k, 0);
    v->u.array.w = PyArray_DIM(k, vec ? 0 : 1);
    return 0;
}

/* IMAGE (H x W, H x W x C, N x H x W x C) or TENSOR (N x C x H x W), used in place. */
static int view_arg(gen_call *c, int i, PyObject *obj)
{
    const lumen_arg_desc *a = &c->op->args[i];
    lumenpy_view *v = &c->views[i];
    int f64 = 0;
    int rc = a->type == LUMEN_ARG_TENSOR ? lumenpy_nchw_view(obj, a->name, 0, v)
                                         : lumenpy_image_input(obj, a->name, c->layout, v, &f64);
    if (rc) return -1;
    if (c->first_view < 0) c->f64 = f64;
    c->values[i].u.image = &v->img;
    if (c->first_view < 0) c->first_view = i;
    return 0;
}

static int int_arg(const lumen_arg_desc *a, PyObject *obj, int64_t *out)
{
    int v;
    if (!lumenpy_int_arg(obj, a->name, &v)) return -1;
    *out = v;
    return 0;
}

/* As the hand-written ops' "p": any object's truth. */
static int bool_arg(PyObject *obj, int64_t *out)
{
    int t = PyObject_IsTrue(obj);
    *out = t;
    return t < 0 ? -1 : 0;
}

static int convert_arg(gen_call *c, int i, PyObject *obj)
{
    const lumen_arg_desc *a = &c->op->args[i];
    lumen_value *v = &c->values[i];
    switch (a->type) {
    case LUMEN_ARG_IMAGE:
    case LUMEN_ARG_TENSOR: return view_arg(c, i, obj);
    case LUMEN_ARG_KERNEL:
    case LUMEN_ARG_VECTOR: return array_arg(c, i, obj);
    case LUMEN_ARG_INT: return int_arg(a, obj, &v->u.i);
    case LUMEN_ARG_INT_PAIR: return pair_arg(a, obj, v->u.pair);
    case LUMEN_ARG_REAL: return real_arg(a, obj, &v->u.real);
    case LUMEN_ARG_BOOL: return bool_arg(obj, &v->u.i);
    case LUMEN_ARG_ENUM: return enum_arg(a, obj, &v->u.i);
    }
    PyErr_Format(PyExc_SystemError, "%s: argument type %d has no Python form", a->name,
                 (int)a->type);
    return -1;
}

/* Every passed argument to its tagged value; None for a NULLABLE one stays absent (what its
 * def_text says). Ranges and required ones are left to lumen_op_check_args. */
/* The slot of the argument called name, or NULL when the op has none. */
static PyObject **arg_slot(gen_call *c, const char *name)
{
    int i = lumen_op_arg_index(c->op, name);
    return i >= 0 ? &c->given[i] : NULL;
}

/* SciPy's forms (sigma pair, mode=, cval=, truncate=) rewritten into the descriptor's sigma,
 * sigma_y, ksize, border and border_value, as the hand-written gaussian_blur does. */
static int apply_forms(gen_call *c)
{
    static const char *const names[5] = {"sigma", "sigma_y", "ksize", "border", "border_value"};
    lumenpy_gauss_forms *f = &c->forms;
    PyObject **slots[5];
    for (int k = 0; k < 5; k++)
        if (!(slots[k] = arg_slot(c, names[k]))) {
            PyErr_Format(PyExc_SystemError, "%s: mode= needs an argument '%s'", c->op->name,
                         names[k]);
            return -1;
        }
    f->sigma = *slots[0], f->sigma_y = *slots[1], f->ksize = *slots[2];
    f->border = *slots[3], f->border_value = *slots[4];
    f->mode = c->extra[EX_MODE], f->cval = c->extra[EX_CVAL], f->truncate = c->extra[EX_TRUNCATE];
    if (lumenpy_gauss_forms_apply(f)) return -1;
    *slots[0] = f->sigma, *slots[1] = f->sigma_y, *slots[2] = f->ksize;
    *slots[3] = f->border, *slots[4] = f->border_value;
    return 0;
}

static int convert_all(gen_call *c)
{
    if (takes_extra(c->op, EX_MODE) && apply_forms(c)) return -1;
    if (c->extra[EX_LAYOUT] && !lumenpy_layout_conv(c->extra[EX_LAYOUT], &c->layout)) return -1;
    lumen_op_values_init(c->op, c->values);
    for (int i = 0; i < c->op->n_args; i++) {
        PyObject *obj = c->given[i];
        if (!obj || (obj == Py_None && (c->op->args[i].flags & LUMEN_ARG_NULLABLE))) continue;
        if (convert_arg(c, i, obj)) return -1;
        c->values[i].given = 1;
    }
    return 0;
}

/* ---- the output ---- */

/* An IMAGE output in the layout of the image input (H x W, H x W x C, C x H x W, N x H x W x C
 * or N x C x H x W), as the hand-written ops keep it, with more axes only where the shape needs
 * them. Sets *layout to the output's. */
static int image_dims(const gen_call *c, const lumen_out_shape *s, npy_intp dims[4], int *layout)
{
    int l = c->first_view >= 0 ? c->views[c->first_view].layout : LUMENPY_LAYOUT_HW;
    if (s->n > 1)
        l = l == LUMENPY_LAYOUT_CHW || l == LUMENPY_LAYOUT_NCHW ? LUMENPY_LAYOUT_NCHW
                                                                : LUMENPY_LAYOUT_NHWC;
    else if (s->c > 1 && l == LUMENPY_LAYOUT_HW)
        l = LUMENPY_LAYOUT_HWC;
    const int64_t n = s->n, h = s->h, w = s->w, ch = s->c;
    const int64_t by_layout[][4] = {
        {0}, {h, w}, {h, w, ch}, {ch, h, w}, {n, h, w, ch}, {n, ch, h, w},
    };
    const int nd = l == LUMENPY_LAYOUT_HW ? 2 : l <= LUMENPY_LAYOUT_CHW ? 3 : 4;
    for (int i = 0; i < nd; i++)
        dims[i] = (npy_intp)by_layout[l][i];
    *layout = l;
    return nd;
}

static PyObject *dims_tuple(int nd, const npy_intp *dims)
{
    PyObject *t = PyTuple_New(nd);
    for (int i = 0; t && i < nd; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(dims[i]));
    return t;
}

static int check_out(const gen_call *c, int nd, const npy_intp *dims)
{
    int same = c->dst.ndim == nd;
    for (int i = 0; same && i < nd; i++)
        same = c->dst.shape[i] == dims[i];
    if (!same) {
        PyObject *a = dims_tuple(c->dst.ndim, c->dst.shape), *b = dims_tuple(nd, dims);
        if (a && b)
            PyErr_Format(lumenpy_ArgumentError, "out: shape %R differs from the result's %R", a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
        return -1;
    }
    return 0;
}

/* A TENSOR output: out= checked against the shape, or a new C-contiguous array of the shape's
 * dtype (conv: x's). */
static int tensor_output(gen_call *c, const lumen_out_shape *s, PyObject *out)
{
    npy_intp dims[4] = {(npy_intp)s->n, (npy_intp)s->c, (npy_intp)s->h, (npy_intp)s->w};
    if (out && out != Py_None) {
        if (lumenpy_nchw_view(out, "out", 1, &c->dst) || check_out(c, 4, dims)) return -1;
        Py_INCREF(out);
        c->result = out;
        return 0;
    }
    PyObject *like = c->first_view >= 0 ? c->given[c->first_view] : NULL;
    c->result = lumenpy_new_array(4, dims, (int)s->dtype, like);
    return c->result ? lumenpy_nchw_view(c->result, "out", 1, &c->dst) : -1;
}

/* The output from the shape output_shape gives: out= checked against it, or a new array (of
 * dtype=, else the input's; a float64 input gives a float64 image, computed in float32). */
static int make_output(gen_call *c)
{
    lumen_out_shape s;
    lumen_status st = lumen_op_output_shape(c->op, c->values, &s);
    if (st) {
        lumenpy_raise_py_names(st);
        return -1;
    }
    PyObject *out = c->extra[EX_OUT];
    if (s.type != LUMEN_ARG_IMAGE) return tensor_output(c, &s, out);
    int dtype = -1, layout;
    PyObject *dt = c->extra[EX_DTYPE];
    if (dt && !lumenpy_dtype_conv(dt, &dtype)) return -1;
    npy_intp dims[4];
    const int nd = image_dims(c, &s, dims, &layout);
    const int want = dtype >= 0 ? dtype : c->f64 ? LUMENPY_F64 : (int)s.dtype;
    const int has_out = out && out != Py_None;
    PyObject *like = c->first_view >= 0 ? c->given[c->first_view] : NULL;
    c->result = lumenpy_image_output(out, has_out ? dtype : want, nd, dims, layout, "the result's",
                                     &c->dst, &c->final, like);
    return c->result ? 0 : -1;
}

/* The one device the views live on (-1: host memory only), as conv.c picks it. */
static int pick_device(gen_call *c)
{
    c->device = -1;
    for (int i = 0; i <= c->op->n_args; i++) {
        const lumen_image *m = i < c->op->n_args ? &c->views[i].img : &c->dst.img;
        if (!m->device) continue;
        if (c->device >= 0 && c->device != m->device) {
            PyErr_Format(lumenpy_ArgumentError,
                         "%s: the arrays live on different devices (move them to one)",
                         c->op->name);
            return -1;
        }
        c->device = m->device;
    }
    return 0;
}

/* ---- the call ---- */

/* Runs the op with the GIL released; device results are complete when it returns. */
static PyObject *gen_run(gen_call *c)
{
    PyObject *ctx_obj = c->extra[EX_CONTEXT] ? c->extra[EX_CONTEXT] : Py_None;
    lumen_context *ctx = lumenpy_context_acquire(ctx_obj, c->device);
    if (!ctx) return NULL;
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    lumen_status s;
    Py_BEGIN_ALLOW_THREADS s = lumen_op_invoke(c->op, ctx, c->values, &c->dst.img, &info);
    if (s == LUMEN_OK && c->device >= 0) s = lumen_context_synchronize(ctx);
    Py_END_ALLOW_THREADS lumenpy_context_release(ctx_obj, ctx, c->device);
    if (s) {
        lumenpy_raise_py_names(s);
        return NULL;
    }
    const lumen_image *src = c->first_view >= 0 ? &c->views[c->first_view].img : &c->dst.img;
    lumenpy_record_run(&info, src, &c->dst.img);
    PyObject *r = lumenpy_image_result(c->result, c->final);
    c->result = c->final = NULL;
    return r;
}

PyObject *lumenpy_op_call(const lumen_op_desc *op, PyObject *args, Py_ssize_t first, PyObject *kw)
{
    if (op->n_args > GEN_MAX_ARGS)
        return PyErr_Format(PyExc_SystemError, "%s: %d arguments, the generic binding takes %d",
                            op->name, op->n_args, GEN_MAX_ARGS);
    gen_call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.first_view = -1;
    PyObject *r = NULL;
    if (!collect(&c, args, first, kw) && !convert_all(&c) && !make_output(&c) && !pick_device(&c))
        r = gen_run(&c);
    gen_cleanup(&c);
    return r;
}
