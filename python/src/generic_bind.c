/* The generic binding's function objects: at import, every op of the descriptor table that has
 * no hand-written function in the module becomes a builtin bound to its descriptor (its `self`
 * is a capsule of the lumen_op_desc pointer), with the descriptor's name, docstring and text
 * signature. lumen/__init__.py and gen_stubs.py take the op list from the table, so such an op
 * reaches the package, __all__ and the stubs with no Python edit (docs/descriptors.md). */
#include "lumen_py.h"

#include <stdlib.h>
#include <string.h>

static const char capsule_name[] = "lumen._lumen.op_desc";

/* One method definition per op, made on first use and kept (a builtin points at it). */
static PyMethodDef defs[LUMENPY_MAX_OPS];
/* Which ops the import bound generically, for _generic_ops(). */
static int bound_at_import[LUMENPY_MAX_OPS];

static PyObject *generic_entry(PyObject *self, PyObject *args, PyObject *kw)
{
    const lumen_op_desc *op = PyCapsule_GetPointer(self, capsule_name);
    return op ? lumenpy_op_call(op, args, 0, kw) : NULL;
}

static int op_index(const char *name)
{
    for (int i = 0; i < lumen_op_count() && i < LUMENPY_MAX_OPS; i++)
        if (!strcmp(lumen_op_at(i)->name, name)) return i;
    return -1;
}

/* A new builtin that calls op i generically; module_name is its __module__. */
static PyObject *generic_function(int i, PyObject *module_name)
{
    const lumen_op_desc *op = lumen_op_at(i);
    if (!defs[i].ml_name) {
        const char *doc = lumenpy_op_doc(op, 1);
        if (!doc) return NULL;
        defs[i] = (PyMethodDef){op->name, (PyCFunction)(void (*)(void))generic_entry,
                                METH_VARARGS | METH_KEYWORDS, doc};
    }
    PyObject *cap = PyCapsule_New((void *)op, capsule_name, NULL);
    if (!cap) return NULL;
    PyObject *f = PyCFunction_NewEx(&defs[i], cap, module_name);
    Py_DECREF(cap);
    return f;
}

/* Whether name is in the comma-separated list (or the list is "all"). */
static int listed(const char *list, const char *name)
{
    if (!list) return 0;
    if (!strcmp(list, "all")) return 1;
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p += len + (end != NULL);
    }
    return 0;
}

/* A hand-written function keeps its op, unless the test hook $_LUMEN_PY_GENERIC names it:
 * then the import binds it as it binds an op that has none, so tests can run the whole path
 * (module, package, __all__, stubs) on today's table. */
static int hand_written(const PyMethodDef *methods, const char *name)
{
    if (listed(getenv("_LUMEN_PY_GENERIC"), name)) return 0;
    for (const PyMethodDef *m = methods; m->ml_name; m++)
        if (!strcmp(m->ml_name, name)) return 1;
    return 0;
}

int lumenpy_generic_register(PyObject *m, const PyMethodDef *methods)
{
    PyObject *module_name = PyModule_GetNameObject(m);
    if (!module_name) return -1;
    int rc = 0;
    for (int i = 0; !rc && i < lumen_op_count() && i < LUMENPY_MAX_OPS; i++) {
        const char *name = lumen_op_at(i)->name;
        if (hand_written(methods, name)) continue;
        PyObject *f = generic_function(i, module_name);
        rc = !f || PyModule_AddObjectRef(m, name, f) ? -1 : 0;
        Py_XDECREF(f);
        bound_at_import[i] = !rc;
    }
    Py_DECREF(module_name);
    return rc;
}

/* ---- the generic path by name, for tests ---- */

static int find_op(PyObject *name)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    int i = s ? op_index(s) : -1;
    if (i < 0 && !PyErr_Occurred())
        PyErr_Format(lumenpy_ArgumentError, "op: %R is not an op of the table", name);
    return i;
}

PyObject *lumenpy_op_call_by_name(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    if (PyTuple_GET_SIZE(args) < 1)
        return PyErr_Format(PyExc_TypeError, "_op_call() missing required argument 'name'");
    int i = find_op(PyTuple_GET_ITEM(args, 0));
    return i < 0 ? NULL : lumenpy_op_call(lumen_op_at(i), args, 1, kw);
}

PyObject *lumenpy_bind_generic(PyObject *self, PyObject *name)
{
    int i = find_op(name);
    if (i < 0) return NULL;
    PyObject *module_name = PyModule_GetNameObject(self);
    PyObject *f = module_name ? generic_function(i, module_name) : NULL;
    Py_XDECREF(module_name);
    return f;
}

PyObject *lumenpy_generic_ops(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < lumen_op_count() && i < LUMENPY_MAX_OPS; i++) {
        if (!bound_at_import[i]) continue;
        PyObject *s = PyUnicode_FromString(lumen_op_at(i)->name);
        if (!s || PyList_Append(l, s)) Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}
