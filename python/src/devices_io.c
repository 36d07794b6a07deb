/* lumen.devices(), lumen.device_info(), lumen.read_image(), lumen.write_image(). */
#include "lumen_py.h"

static PyObject *info_dict(const lumen_device_info *d)
{
    char driver[256] = "", spec[32] = "";
    lumen_device_get_driver(d->index, driver, sizeof driver);
    lumen_device_spec(d->index, spec, sizeof spec);
    return Py_BuildValue("{s:i,s:s,s:s,s:s,s:s,s:K,s:K,s:s,s:s,s:O,s:O}", "index", d->index,
                         "spec", spec, "name", d->name, "backend", d->backend, "kind",
                         lumen_device_kind_name(d->kind),
                         "memory_total", (unsigned long long)d->memory_total, "memory_free",
                         (unsigned long long)d->memory_free, "compute_capability",
                         d->compute_capability, "driver", driver, "fp16",
                         d->fp16 ? Py_True : Py_False, "bf16", d->bf16 ? Py_True : Py_False);
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

/* max_pixels: None (the process limit: lumen_get_max_image_pixels, $LUMEN_MAX_PIXELS) or an
 * int >= 0, 0 meaning no limit (docs/io.md, "Limits"). */
static int parse_max_pixels(PyObject *obj, uint64_t *out)
{
    *out = 0;
    if (!obj || obj == Py_None) return 0;
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "max_pixels: expected an int or None, got %s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    const unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "max_pixels: expected an int >= 0 (0 = no limit)");
        return -1;
    }
    *out = v == 0 ? UINT64_MAX : (uint64_t)v;
    return 0;
}

PyObject *lumenpy_read_image(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"path", "max_pixels", "ignore_orientation", NULL};
    PyObject *path = NULL, *max_obj = NULL;
    int ignore = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$Op:read_image", kwlist, PyUnicode_FSConverter,
                                     &path, &max_obj, &ignore))
        return NULL;
    lumen_read_options opt = lumen_read_options_default();
    opt.ignore_orientation = ignore;
    if (parse_max_pixels(max_obj, &opt.max_pixels)) {
        Py_DECREF(path);
        return NULL;
    }
    lumen_image img;
    lumen_status s;
    Py_BEGIN_ALLOW_THREADS s = lumen_read_image_ex(PyBytes_AS_STRING(path), &opt, &img, NULL);
    Py_END_ALLOW_THREADS Py_DECREF(path);
    return s ? lumenpy_raise(s) : lumenpy_adopt_image(&img);
}

/* quality: None (the format's default) or 1..100 (JPEG, WebP); lossless (WebP), half (EXR). */
PyObject *lumenpy_write_image(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"path", "image", "quality", "lossless", "half", NULL};
    PyObject *path = NULL, *obj, *quality = NULL;
    lumen_write_options opt = lumen_write_options_default();
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O|$Opp:write_image", kwlist,
                                     PyUnicode_FSConverter, &path, &obj, &quality, &opt.lossless,
                                     &opt.half))
        return NULL;
    if (quality && quality != Py_None) {
        const long q =
            PyLong_Check(quality) && !PyBool_Check(quality) ? PyLong_AsLong(quality) : -1;
        if (q < 1 || q > 100) {
            Py_DECREF(path);
            PyErr_Clear();
            return PyErr_Format(PyExc_ValueError, "quality: expected an int in 1..100 or None");
        }
        opt.quality = (int)q;
    }
    lumenpy_view v;
    if (lumenpy_view_from(obj, "image", 0, &v)) {
        Py_DECREF(path);
        return NULL;
    }
    lumen_status s;
    Py_BEGIN_ALLOW_THREADS s = lumen_write_image_ex(PyBytes_AS_STRING(path), &v.img, &opt, NULL);
    Py_END_ALLOW_THREADS lumenpy_view_release(&v);
    Py_DECREF(path);
    if (s) return lumenpy_raise(s);
    Py_RETURN_NONE;
}
