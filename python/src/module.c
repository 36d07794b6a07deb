/* The lumen._lumen extension module: exceptions, the per-thread record of the last run, the
 * method table, and the ops the generic binding adds at import (those with a descriptor but no
 * function here). The Python package (lumen/__init__.py) re-exports these names. */
#define LUMENPY_IMPORT_ARRAY
#include "lumen_py.h"

PyObject *lumenpy_Error, *lumenpy_ArgumentError, *lumenpy_UnsupportedError, *lumenpy_FileError;

PyObject *lumenpy_raise(lumen_status s)
{
    if (s == LUMEN_ERR_INTERRUPTED) return lumenpy_raise_interrupted();
    PyObject *type = s == LUMEN_ERR_INVALID_ARGUMENT ? lumenpy_ArgumentError
                     : s == LUMEN_ERR_UNSUPPORTED    ? lumenpy_UnsupportedError
                     : s == LUMEN_ERR_OUT_OF_MEMORY  ? PyExc_MemoryError
                     : s == LUMEN_ERR_IO || s == LUMEN_ERR_CORRUPT ? lumenpy_FileError
                                                                   : lumenpy_Error;
    const char *msg = lumen_last_error();
    PyErr_SetString(type, msg && *msg ? msg : lumen_status_string(s));
    return NULL;
}

/* What the last successful op on this thread did; the pointers let tests prove no copy. */
static _Thread_local struct {
    int valid;
    lumen_run_info info;
    void *src, *dst;
} last_run;

void lumenpy_record_run(const lumen_run_info *info, const lumen_image *src,
                        const lumen_image *dst)
{
    last_run.valid = 1;
    last_run.info = *info;
    last_run.src = src->data;
    last_run.dst = dst->data;
}

static PyObject *lumenpy_last_run(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (!last_run.valid) Py_RETURN_NONE;
    const lumen_run_info *i = &last_run.info;
    return Py_BuildValue("{s:s,s:s,s:s,s:i,s:K,s:K,s:z}", "method", lumen_method_name(i->method),
                         "device", i->device ? i->device : "?", "isa", i->isa ? i->isa : "?",
                         "threads", i->threads, "src_ptr", (unsigned long long)last_run.src,
                         "dst_ptr", (unsigned long long)last_run.dst, "algo", i->algo);
}

#define KW METH_VARARGS | METH_KEYWORDS
static PyMethodDef methods[] = {
    /* The ops' docstrings and signatures are made from their descriptors at import
     * (descriptors.c), as are their keyword lists. */
    {"filter2d", (PyCFunction)(void (*)(void))lumenpy_filter2d, KW, NULL},
    {"sep_filter2d", (PyCFunction)(void (*)(void))lumenpy_sep_filter2d, KW, NULL},
    {"gaussian_blur", (PyCFunction)(void (*)(void))lumenpy_gaussian_blur, KW, NULL},
    {"box_blur", (PyCFunction)(void (*)(void))lumenpy_box_blur, KW, NULL},
    {"_choose_method", (PyCFunction)(void (*)(void))lumenpy_choose_method, KW,
     "_choose_method(op, src, *args, **kwargs) -> str (lumen.choose_method)"},
    {"conv2d", (PyCFunction)(void (*)(void))lumenpy_conv2d, KW, NULL},
    {"conv_transpose2d", (PyCFunction)(void (*)(void))lumenpy_conv_transpose2d, KW, NULL},
    {"_conv2d_pack", (PyCFunction)(void (*)(void))lumenpy_conv2d_pack, KW, NULL},
    {"_film", (PyCFunction)(void (*)(void))lumenpy_film, KW,
     "_film(src, stock='portra400', *, halation, bloom, grain, seed, out, dtype, layout, "
     "context): the film chain (lumen.film.film)"},
    {"_film_stocks", lumenpy_film_stocks, METH_NOARGS, "_film_stocks() -> list of dicts"},
    {"_grain_normals", (PyCFunction)(void (*)(void))lumenpy_grain_normals, KW,
     "_grain_normals(seed, h, w, image=0, channel=0): the grain's standard-normal draws"},
    {"_op_descriptors", lumenpy_op_descriptors, METH_NOARGS,
     "_op_descriptors() -> list of dicts: every op's descriptor (include/lumen_ops.h)"},
    /* An op with no function above is bound at import by the generic binding (generic.c);
     * these run that binding for any op, so tests can hold it against the hand-written one. */
    {"_op_call", (PyCFunction)(void (*)(void))lumenpy_op_call_by_name, KW,
     "_op_call(name, *args, **kwargs) -> the op `name` called through the generic binding"},
    {"_bind_generic", lumenpy_bind_generic, METH_O,
     "_bind_generic(name) -> a new generic function of op `name`, as the import makes one"},
    {"_generic_ops", lumenpy_generic_ops, METH_NOARGS,
     "_generic_ops() -> names of the ops the import bound generically"},
    {"gaussian_kernel", (PyCFunction)(void (*)(void))lumenpy_gaussian_kernel, KW,
     "gaussian_kernel(n, sigma) -> float32 array (cv2.getGaussianKernel)"},
    {"gaussian_ksize", (PyCFunction)(void (*)(void))lumenpy_gaussian_ksize, KW,
     "gaussian_ksize(sigma, dtype='float32') -> the kernel size GaussianBlur derives"},
    {"devices", lumenpy_devices, METH_NOARGS, "devices() -> list of dicts, one per device"},
    {"device_info", (PyCFunction)(void (*)(void))lumenpy_device_info, KW,
     "device_info(device='auto') -> dict; device is a spec ('cpu', 'cuda:0') or an index"},
    {"read_image", (PyCFunction)(void (*)(void))lumenpy_read_image, KW,
     "read_image(path) -> array (.png, .jpg, .tif, .npy)"},
    {"write_image", (PyCFunction)(void (*)(void))lumenpy_write_image, KW,
     "write_image(path, image): atomic (temporary file, then rename)"},
    {"mask_bbox", (PyCFunction)(void (*)(void))lumenpy_mask_bbox, KW,
     "mask_bbox(mask, threshold=0.0, *, layout=None, context=None) -> int64 array of boxes\n"
     "(x0, y0, x1, y1), half-open, of mask > threshold (any channel): shape (4,) for one image,\n"
     "(N, 4) for a batch; (0, 0, 0, 0) where an image has no foreground (docs/crop.md)"},
    {"last_run", lumenpy_last_run, METH_NOARGS,
     "last_run() -> dict of the last op on this thread: method, device, isa, threads, and the\n"
     "data pointers it was given (src_ptr, dst_ptr); None before the first op"},
    {"_time_c", (PyCFunction)(void (*)(void))lumenpy_time_c, KW,
     "_time_c('gaussian_blur', src, out, repeat, *, sigma=1.0, context=None) -> seconds of\n"
     "each bare C call (benchmark helper)"},
    {NULL},
};

static void module_free(void *unused)
{
    (void)unused;
    lumenpy_context_pool_clear();
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "lumen._lumen",
    .m_doc = "lumen's C extension; use the lumen package.", .m_size = -1,
    .m_methods = methods, .m_free = module_free,
};

static PyObject *new_error(const char *name, PyObject *bases, const char *doc)
{
    return PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
}

static int add_errors(PyObject *m)
{
    lumenpy_Error = new_error("lumen.Error", NULL, "Base of lumen's errors.");
    if (!lumenpy_Error) return -1;
    PyObject *b1 = PyTuple_Pack(2, lumenpy_Error, PyExc_ValueError);
    PyObject *b2 = PyTuple_Pack(2, lumenpy_Error, PyExc_OSError);
    lumenpy_ArgumentError = b1 ? new_error("lumen.ArgumentError", b1, "A bad argument.") : NULL;
    lumenpy_FileError = b2 ? new_error("lumen.FileError", b2, "A file cannot be used.") : NULL;
    lumenpy_UnsupportedError =
        new_error("lumen.UnsupportedError", lumenpy_Error, "Valid but not supported.");
    Py_XDECREF(b1);
    Py_XDECREF(b2);
    if (!lumenpy_ArgumentError || !lumenpy_FileError || !lumenpy_UnsupportedError) return -1;
    if (PyModule_AddObjectRef(m, "Error", lumenpy_Error) ||
        PyModule_AddObjectRef(m, "ArgumentError", lumenpy_ArgumentError) ||
        PyModule_AddObjectRef(m, "UnsupportedError", lumenpy_UnsupportedError) ||
        PyModule_AddObjectRef(m, "FileError", lumenpy_FileError))
        return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__lumen(void)
{
    import_array();
    if (PyType_Ready(&lumenpy_ContextType) < 0 || lumenpy_descriptors_init(methods)) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (add_errors(m) || PyModule_AddObjectRef(m, "Context", (PyObject *)&lumenpy_ContextType) ||
        PyModule_AddStringConstant(m, "__version__", lumen_version()) ||
        lumenpy_generic_register(m, methods)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
