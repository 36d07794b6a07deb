/* The op descriptor table (include/lumen_ops.h) seen from Python: _lumen._op_descriptors() for
 * lumen/_api.py and the stub generator, and the parts of the binding made from it at import:
 * each op's keyword list and its docstring with a text signature (so inspect.signature shows
 * the real parameters and defaults without a Python wrapper), for the hand-written functions
 * and the generic ones (generic.c) alike. */
#include "lumen_py.h"

#include <lumen_ops.h>
#include <stdarg.h>
#include <string.h>

/* The front end's own keywords after the descriptor's: images take a dtype and a layout,
 * tensors neither. gaussian_blur also takes SciPy's spellings (mode=, cval=, truncate=), which
 * rewrite its border and size arguments (lumenpy_gauss_forms_apply); they are keyed by the
 * descriptor's name because they are a Python user's habit, not an argument of the op. */
static const char *const image_extras[] = {"out", "dtype", "layout", "context", NULL};
static const char *const tensor_extras[] = {"out", "context", NULL};
static const char *const gaussian_extras[] = {"mode",  "cval",   "truncate", "out",
                                              "dtype", "layout", "context",  NULL};

const char *const *lumenpy_op_extras(const lumen_op_desc *op)
{
    if (!strcmp(op->name, "gaussian_blur")) return gaussian_extras;
    return op->output == LUMEN_ARG_IMAGE ? image_extras : tensor_extras;
}

/* ---- _op_descriptors() ---- */

static PyObject *choice_list(const lumen_arg_desc *a)
{
    if (a->type != LUMEN_ARG_ENUM) Py_RETURN_NONE;
    PyObject *l = PyList_New(0);
    for (const lumen_choice *c = a->choices; l && c->name; c++) {
        PyObject *s = PyUnicode_FromString(c->name);
        if (!s || PyList_Append(l, s)) Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}

static const char *choice_name(const lumen_arg_desc *a, int value)
{
    for (const lumen_choice *c = a->choices; c && c->name; c++)
        if (c->value == value) return c->name;
    return NULL;
}

/* The default as a Python value: None when absent means "none" (or the arg is required). */
static PyObject *default_value(const lumen_arg_desc *a)
{
    if (a->flags & (LUMEN_ARG_REQUIRED | LUMEN_ARG_NULLABLE)) Py_RETURN_NONE;
    switch (a->type) {
    case LUMEN_ARG_INT: return PyLong_FromDouble(a->def[0]);
    case LUMEN_ARG_INT_PAIR:
        if (a->def[0] == a->def[1]) return PyLong_FromDouble(a->def[0]);
        return Py_BuildValue("(NN)", PyLong_FromDouble(a->def[0]), PyLong_FromDouble(a->def[1]));
    case LUMEN_ARG_REAL: return PyFloat_FromDouble(a->def[0]);
    case LUMEN_ARG_BOOL: return PyBool_FromLong(a->def[0] != 0);
    case LUMEN_ARG_ENUM: return PyUnicode_FromString(choice_name(a, (int)a->def[0]));
    default: Py_RETURN_NONE;
    }
}

static PyObject *arg_dict(const lumen_arg_desc *a)
{
    return Py_BuildValue("{s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:N,s:z,s:d,s:d,s:N,s:s}", "name", a->name,
                         "type", lumen_arg_type_name(a->type), "required",
                         a->flags & LUMEN_ARG_REQUIRED ? Py_True : Py_False, "positional",
                         a->flags & (LUMEN_ARG_REQUIRED | LUMEN_ARG_POSITIONAL) ? Py_True
                                                                                : Py_False,
                         "nullable", a->flags & LUMEN_ARG_NULLABLE ? Py_True : Py_False, "pair_xy",
                         a->flags & LUMEN_ARG_PAIR_XY ? Py_True : Py_False, "pair_both",
                         a->flags & LUMEN_ARG_PAIR_BOTH ? Py_True : Py_False, "default",
                         default_value(a), "default_text", a->def_text, "min", a->min, "max",
                         a->max, "choices", choice_list(a), "help", a->help);
}

static PyObject *op_dict(const lumen_op_desc *op)
{
    PyObject *args = PyList_New(op->n_args), *ext = PyList_New(0);
    for (int i = 0; args && i < op->n_args; i++) {
        PyObject *d = arg_dict(&op->args[i]);
        if (!d)
            Py_CLEAR(args);
        else
            PyList_SET_ITEM(args, i, d);
    }
    for (const char *const *e = lumenpy_op_extras(op); ext && *e; e++) {
        PyObject *s = PyUnicode_FromString(*e);
        if (!s || PyList_Append(ext, s)) Py_CLEAR(ext);
        Py_XDECREF(s);
    }
    if (!args || !ext) {
        Py_XDECREF(args);
        Py_XDECREF(ext);
        return NULL;
    }
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:N,s:N}", "name", op->name, "command",
                         op->command, "summary", op->summary, "help", op->help, "output",
                         lumen_arg_type_name(op->output), "output_help", op->output_help, "args",
                         args, "extras", ext);
}

PyObject *lumenpy_op_descriptors(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    const int n = lumen_op_count();
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *d = op_dict(lumen_op_at(i));
        if (!d)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, i, d);
    }
    return l;
}

/* ---- keyword lists ---- */

/* One list per op, the descriptor's names then the extras, built once and kept. */
static char **kwlists[LUMENPY_MAX_OPS];

char **lumenpy_op_kwlist(const char *name)
{
    for (int i = 0; i < lumen_op_count() && i < LUMENPY_MAX_OPS; i++)
        if (!strcmp(lumen_op_at(i)->name, name)) return kwlists[i];
    return NULL;
}

static char **build_kwlist(const lumen_op_desc *op)
{
    int n = op->n_args;
    for (const char *const *e = lumenpy_op_extras(op); *e; e++)
        n++;
    char **l = PyMem_RawCalloc((size_t)n + 1, sizeof *l);
    if (!l) return NULL;
    int k = 0;
    for (int i = 0; i < op->n_args; i++)
        l[k++] = (char *)op->args[i].name;
    for (const char *const *e = lumenpy_op_extras(op); *e; e++)
        l[k++] = (char *)*e;
    return l;
}

/* ---- docstrings with text signatures ---- */

typedef struct text {
    char *buf;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[2048];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || !t->buf) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *b = PyMem_RawRealloc(t->buf, cap);
        if (!b) {
            PyMem_RawFree(t->buf);
            t->buf = NULL;
            return;
        }
        t->buf = b, t->cap = cap;
    }
    memcpy(t->buf + t->len, tmp, (size_t)n + 1);
    t->len += (size_t)n;
}

/* A default as Python source for the text signature. */
static void put_default(text *t, const lumen_arg_desc *a)
{
    PyObject *v = default_value(a);
    PyObject *r = v ? PyObject_Repr(v) : NULL;
    const char *s = r ? PyUnicode_AsUTF8(r) : NULL;
    put(t, "=%s", s ? s : "None");
    Py_XDECREF(r);
    Py_XDECREF(v);
    PyErr_Clear();
}

static void put_signature(text *t, const lumen_op_desc *op)
{
    put(t, "%s(", op->name);
    int star = 0;
    for (int i = 0; i < op->n_args; i++) {
        const lumen_arg_desc *a = &op->args[i];
        if (!star && !(a->flags & (LUMEN_ARG_REQUIRED | LUMEN_ARG_POSITIONAL))) {
            put(t, ", *");
            star = 1;
        }
        put(t, "%s%s", i ? ", " : "", a->name);
        if (!(a->flags & LUMEN_ARG_REQUIRED)) put_default(t, a);
    }
    if (!star) put(t, ", *");
    for (const char *const *e = lumenpy_op_extras(op); *e; e++)
        put(t, ", %s=None", *e);
    put(t, ")\n--\n\n");
}

static const char *const extra_help[][2] = {
    {"out", "write the result into this array (it is returned); default: a new array"},
    {"mode", "SciPy's border name (scipy.ndimage.gaussian_filter): 'reflect', 'mirror', "
             "'nearest', 'constant' (with cval), 'wrap' or a 'grid-' synonym; instead of "
             "border=, and brings SciPy's size rule (truncate=4.0) unless ksize= is given"},
    {"cval", "with mode='constant': the value outside the image (SciPy's name of border_value)"},
    {"truncate", "SciPy's size rule: radius int(truncate*sigma + 0.5) per axis; instead of "
                 "ksize="},
    {"dtype", "the result's dtype ('uint8', 'uint16', 'float32', 'float16', 'bfloat16', "
              "'float64', or torch's dtypes); default: src's (float64 results are computed in "
              "float32; a bfloat16 result is a torch tensor: from a bfloat16 src or out=, "
              "docs/python.md)"},
    {"layout", "how src's axes are read: 'hw', 'hwc', 'chw', 'nhwc' or 'nchw'; default: by "
               "ndim (H x W, H x W x C, N x H x W x C), refusing shapes that look "
               "channels-first; the result keeps src's layout"},
    {"context", "a lumen.Context (threads, device, strict ...); default: a shared one"},
};

static void put_help(text *t, const lumen_op_desc *op, const char *notes)
{
    put(t, "%s.\n\n%s\n\nArguments (from the op descriptor):\n", op->summary, op->help);
    for (int i = 0; i < op->n_args; i++) {
        const lumen_arg_desc *a = &op->args[i];
        put(t, "    %s: %s", a->name, a->help);
        if (a->type == LUMEN_ARG_ENUM) {
            put(t, "; one of");
            for (const lumen_choice *c = a->choices; c->name; c++)
                put(t, "%s '%s'", c == a->choices ? "" : ",", c->name);
        }
        if (a->def_text) put(t, " (default: %s)", a->def_text);
        put(t, ".\n");
    }
    put(t, "\nFront-end arguments (Python only):\n");
    for (const char *const *e = lumenpy_op_extras(op); *e; e++)
        for (size_t k = 0; k < sizeof extra_help / sizeof extra_help[0]; k++)
            if (!strcmp(extra_help[k][0], *e)) put(t, "    %s: %s.\n", *e, extra_help[k][1]);
    put(t, "\nReturns: %s.%s%s", op->output_help, notes ? "\n\n" : "", notes ? notes : "");
}

/* Python-only notes: what the binding accepts beyond the descriptor's types. */
static const char *python_notes(const char *name)
{
    if (!strcmp(name, "conv2d") || !strcmp(name, "conv_transpose2d"))
        return "torch's forms are taken too: ints or (h, w) pairs, an unbatched (C, H, W) x, an "
               "empty batch, NumPy arrays or DLPack tensors"
               "; conv2d's padding may also be 'valid' or 'same'.";
    if (!strcmp(name, "gaussian_blur"))
        return "sigma may be a pair (sx, sy), x first as ksize (the reverse of scipy's per-axis "
               "order). Borders also take their aliases (docs/python.md) and cv2.BORDER_* "
               "integers; src is a NumPy array or DLPack tensor of uint8, uint16, float32, "
               "float16 or bfloat16 (NumPy float64 too: filtered in float32, returned as "
               "float64), H x W, "
               "H x W x C or N x H x W x C (or as layout= says), in any strides.";
    return "Borders also take their aliases (docs/python.md) and cv2.BORDER_* integers; src is a "
           "NumPy array or DLPack tensor of uint8, uint16, float32, float16 or bfloat16 (NumPy "
           "float64 too: filtered in float32, returned as float64), H x W, H x W x C or "
           "N x H x W x C (or as "
           "layout= says), in any strides.";
}

/* What the generic binding (generic.c) takes beyond the descriptor's types, from the kinds of
 * arguments the op has: nothing here names an op, so a new op needs no edit. */
static void put_generic_notes(text *t, const lumen_op_desc *op)
{
    int image = 0, tensor = 0, border = 0, pair = 0;
    for (int i = 0; i < op->n_args; i++) {
        const lumen_arg_desc *a = &op->args[i];
        image |= a->type == LUMEN_ARG_IMAGE;
        tensor |= a->type == LUMEN_ARG_TENSOR;
        pair |= a->type == LUMEN_ARG_INT_PAIR;
        border |= a->type == LUMEN_ARG_ENUM && !strcmp(a->name, "border");
    }
    put(t, "\n\nBound from the descriptor (generic binding): arrays are NumPy arrays or DLPack "
           "tensors, used in place");
    if (image)
        put(t, "; images are uint8, uint16, float32, float16 or bfloat16 (NumPy float64 too: "
               "filtered in float32, "
               "returned as float64), H x W, H x W x C or N x H x W x C (or as layout= says), in "
               "any strides");
    if (tensor) put(t, "; tensors are float32, float16 or bfloat16 N x C x H x W");
    if (pair) put(t, "; int pairs are an int (both) or a pair");
    if (border)
        put(t, "; borders also take their aliases (docs/python.md) and cv2.BORDER_* integers");
    put(t, ".");
}

/* Docstrings, made once per op and binding and kept for the life of the process (as the
 * method table that points at them). */
static char *docs[2][LUMENPY_MAX_OPS];

const char *lumenpy_op_doc(const lumen_op_desc *op, int generic)
{
    int i = 0;
    while (i < lumen_op_count() && lumen_op_at(i) != op)
        i++;
    if (i >= lumen_op_count() || i >= LUMENPY_MAX_OPS) {
        PyErr_Format(PyExc_SystemError, "lumen: op %s is not in the table", op->name);
        return NULL;
    }
    if (docs[generic][i]) return docs[generic][i];
    text t = {PyMem_RawMalloc(1024), 0, 1024};
    if (t.buf) t.buf[0] = '\0';
    put_signature(&t, op);
    put_help(&t, op, generic ? NULL : python_notes(op->name));
    if (generic) put_generic_notes(&t, op);
    if (!t.buf) {
        PyErr_NoMemory();
        return NULL;
    }
    return docs[generic][i] = t.buf;
}

int lumenpy_descriptors_init(PyMethodDef *methods)
{
    if (lumen_op_count() > LUMENPY_MAX_OPS) {
        PyErr_Format(PyExc_SystemError, "lumen: %d ops, the binding keeps at most %d",
                     lumen_op_count(), LUMENPY_MAX_OPS);
        return -1;
    }
    for (int i = 0; i < lumen_op_count() && i < LUMENPY_MAX_OPS; i++) {
        const lumen_op_desc *op = lumen_op_at(i);
        if (!(kwlists[i] = build_kwlist(op))) {
            PyErr_NoMemory();
            return -1;
        }
        for (PyMethodDef *m = methods; m->ml_name; m++)
            if (!strcmp(m->ml_name, op->name) && !(m->ml_doc = lumenpy_op_doc(op, 0))) return -1;
    }
    return 0;
}
