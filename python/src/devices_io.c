/* lumen.devices(), lumen.device_info(), lumen.read_image(), lumen.write_image(). */
#include "lumen_py.h"

static PyObject *info_dict(const lumen_device_info *d)
{
    return Py_BuildValue("{s:i,s:s,s:s,s:s,s:K,s:K,s:s,s:O,s:O}", "index", d->index, "name",
                         d->name, "backend", d->backend, "kind", lumen_device_kind_name(d->kind),
                         "memory_total", (unsigned long long)d->memory_total, "memory_free",
                         (unsigned long long)d->memory_free, "compute_capability",
                         d->compute_capability, "fp16", d->fp16 ? Py_True : Py_False, "bf16",
                         d->bf16 ? Py_True : Py_False);
}

PyObject *lumenpy_devices(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    int n = lumen_device_count();
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        lumen_device_info d;
        lumen_status s = lumen_device_get_info(i, &d);
        PyObject *item = s ? lumenpy_raise(s) : info_dict(&d);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* device: a spec ("auto", "cpu", "cuda:0") or an index into lumen.devices(). */
PyObject *lumenpy_device_info(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"device", NULL};
    PyObject *dev = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:device_info", kwlist, &dev)) return NULL;
    int index = 0;
    lumen_status s;
    if (dev && PyLong_Check(dev) && !PyBool_Check(dev)) {
        index = _PyLong_AsInt(dev);
        if (index == -1 && PyErr_Occurred()) return NULL;
    } else if (dev && !PyUnicode_Check(dev)) {
        return PyErr_Format(PyExc_TypeError, "device: expected a str or an int, got %s",
                            Py_TYPE(dev)->tp_name);
    } else if ((s = lumen_device_find(dev ? PyUnicode_AsUTF8(dev) : "auto", &index))) {
        return lumenpy_raise(s);
    }
    lumen_device_info d;
    if ((s = lumen_device_get_info(index, &d))) return lumenpy_raise(s);
    return info_dict(&d);
}

PyObject *lumenpy_read_image(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"path", NULL};
    PyObject *path = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:read_image", kwlist, PyUnicode_FSConverter,
                                     &path))
        return NULL;
    lumen_image img;
    lumen_status s;
    Py_BEGIN_ALLOW_THREADS
    s = lumen_read_image(PyBytes_AS_STRING(path), &img);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    return s ? lumenpy_raise(s) : lumenpy_adopt_image(&img);
}

PyObject *lumenpy_write_image(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"path", "image", NULL};
    PyObject *path = NULL, *obj;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O:write_image", kwlist, PyUnicode_FSConverter,
                                     &path, &obj))
        return NULL;
    lumenpy_view v;
    if (lumenpy_view_from(obj, "image", 0, &v)) {
        Py_DECREF(path);
        return NULL;
    }
    lumen_status s;
    Py_BEGIN_ALLOW_THREADS
    s = lumen_write_image(PyBytes_AS_STRING(path), &v.img);
    Py_END_ALLOW_THREADS
    lumenpy_view_release(&v);
    Py_DECREF(path);
    if (s) return lumenpy_raise(s);
    Py_RETURN_NONE;
}
