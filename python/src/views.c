/* NumPy arrays and DLPack tensors as lumen image views, without copying.
 * Shapes: H x W (one channel), H x W x C (interleaved) or N x H x W x C (a batch). */
#include "lumen_py.h"

#include <stdio.h>
#include <string.h>

const char *lumenpy_dtype_label(lumen_dtype dt)
{
    return dt == LUMEN_U8 ? "uint8" : dt == LUMEN_U16 ? "uint16" : "float32";
}

/* Fills v->img from a shape and element strides in the H[xW[xC]] / NxHxWxC convention. */
static int set_geometry(lumenpy_view *v, const char *name, int ndim, const int64_t *shape,
                        const int64_t *strides)
{
    if (ndim < 2 || ndim > 4) {
        PyErr_Format(lumenpy_ArgumentError,
                     "%s: expected H x W, H x W x C or N x H x W x C, got %d dimension%s", name,
                     ndim, ndim == 1 ? "" : "s");
        return -1;
    }
    int64_t sh[4] = {1, 1, 1, 1}, st[4] = {0, 0, 0, 1}; /* n, h, w, c */
    int off = ndim == 4 ? 0 : 1;
    for (int i = 0; i < ndim; i++) {
        sh[i + off] = shape[i];
        st[i + off] = strides[i];
        v->shape[i] = (Py_ssize_t)shape[i];
    }
    if (ndim == 2) st[3] = 1;
    v->ndim = ndim;
    v->img.n = sh[0], v->img.h = sh[1], v->img.w = sh[2], v->img.c = sh[3];
    v->img.stride_n = ndim == 4 ? st[0] : sh[1] * st[1];
    v->img.stride_h = st[1], v->img.stride_w = st[2], v->img.stride_c = st[3];
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) {
            PyErr_Format(lumenpy_ArgumentError, "%s: the image is empty (dimension %d is 0)",
                         name, i);
            return -1;
        }
    return 0;
}

/* Two pixels of a writable view sharing memory would make the result depend on order. */
static int check_no_zero_strides(const lumenpy_view *v, const char *name)
{
    const lumen_image *m = &v->img;
    if ((m->n > 1 && m->stride_n == 0) || (m->h > 1 && m->stride_h == 0) ||
        (m->w > 1 && m->stride_w == 0) || (m->c > 1 && m->stride_c == 0)) {
        PyErr_Format(lumenpy_ArgumentError,
                     "%s: has a zero stride (a broadcast view): several pixels share memory",
                     name);
        return -1;
    }
    return 0;
}

static int numpy_dtype(PyArrayObject *a, const char *name, lumen_dtype *dt)
{
    PyArray_Descr *d = PyArray_DESCR(a);
    int t = d->type_num;
    if (t == NPY_UINT8) *dt = LUMEN_U8;
    else if (t == NPY_UINT16) *dt = LUMEN_U16;
    else if (t == NPY_FLOAT32) *dt = LUMEN_F32;
    else {
        PyObject *s = PyObject_Str((PyObject *)d);
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype %s is not supported (uint8, uint16 or float32; convert with "
                     ".astype(np.float32))",
                     name, s ? PyUnicode_AsUTF8(s) : "?");
        Py_XDECREF(s);
        return -1;
    }
    if (!PyArray_ISNOTSWAPPED(a)) {
        PyErr_Format(PyExc_TypeError, "%s: byte order is not the machine's (use .astype(%s))",
                     name, lumenpy_dtype_label(*dt));
        return -1;
    }
    return 0;
}

static int view_from_numpy(PyArrayObject *a, const char *name, int writable, lumenpy_view *v)
{
    lumen_dtype dt;
    if (numpy_dtype(a, name, &dt)) return -1;
    if (writable && PyArray_FailUnlessWriteable(a, name) < 0) return -1;

    int nd = PyArray_NDIM(a);
    int64_t shape[4] = {0}, strides[4] = {0};
    npy_intp es = PyArray_ITEMSIZE(a);
    for (int i = 0; i < nd && i < 4; i++) {
        shape[i] = PyArray_DIM(a, i);
        if (PyArray_STRIDE(a, i) % es) {
            PyErr_Format(lumenpy_ArgumentError,
                         "%s: stride %zd of dimension %d is not a multiple of the item size %zd",
                         name, (Py_ssize_t)PyArray_STRIDE(a, i), i, (Py_ssize_t)es);
            return -1;
        }
        strides[i] = PyArray_STRIDE(a, i) / es;
    }
    if (set_geometry(v, name, nd, shape, strides)) return -1;
    if (!PyArray_ISALIGNED(a)) { /* inputs were copied before; outputs cannot be */
        PyErr_Format(lumenpy_ArgumentError, "%s: data is not aligned to its %zd-byte elements",
                     name, (Py_ssize_t)es);
        return -1;
    }
    v->img.data = PyArray_DATA(a);
    v->img.dtype = dt;
    Py_INCREF(a);
    v->owner = (PyObject *)a;
    return 0;
}

/* ---- DLPack ---- */

/* DLPack device type names (numbers, since older dlpack.h lacks the newer enumerators). */
static const char *dl_device_name(int type)
{
    static const char *const names[] = {"?",       "cpu",     "cuda",     "cuda_host", "opencl",
                                        "vulkan",  "metal",   "vpi",      "rocm",      "?",
                                        "?",       "rocm_host", "ext_dev", "cuda_managed",
                                        "oneapi",  "webgpu",  "hexagon"};
    return type >= 0 && type < (int)(sizeof names / sizeof names[0]) ? names[type] : "device";
}

/* Host-readable memory types: plain CPU, pinned host memory, managed (unified) memory. */
static int dl_device_is_host(int type)
{
    return type == kDLCPU || type == kDLCUDAHost || type == kDLROCMHost ||
           type == kDLCUDAManaged;
}

/* The lumen device whose memory a DLPack device holds: 0 for host-readable memory, a CUDA
 * device's index for kDLCUDA when lumen has that device; -1 when lumen has none. */
static int dl_lumen_device(int type, int id)
{
    if (dl_device_is_host(type)) return 0;
    char spec[32];
    int index;
    snprintf(spec, sizeof spec, "cuda:%d", id);
    if (type == kDLCUDA && lumen_device_find(spec, &index) == LUMEN_OK) return index;
    return -1;
}

/* Refuses memory on a device lumen cannot use before anything is exported. */
static int check_dlpack_device(PyObject *obj, const char *name, int *on_cuda)
{
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev) return -1;
    int type = 0, id = 0;
    int ok = PyArg_ParseTuple(dev, "ii;__dlpack_device__ must return (type, id)", &type, &id);
    Py_DECREF(dev);
    if (!ok) return -1;
    *on_cuda = type == kDLCUDA;
    if (dl_lumen_device(type, id) >= 0) return 0;
    PyErr_Format(lumenpy_ArgumentError,
                 "%s: the array lives on %s:%d (DLPack device type %d); lumen has no device "
                 "for it on this machine and does not copy behind your back: move it to host "
                 "memory first (e.g. tensor.cpu())",
                 name, dl_device_name(type), id, type);
    return -1;
}

static int dl_dtype(const DLDataType *t, const char *name, lumen_dtype *dt)
{
    if (t->lanes == 1 && t->code == kDLUInt && t->bits == 8) *dt = LUMEN_U8;
    else if (t->lanes == 1 && t->code == kDLUInt && t->bits == 16) *dt = LUMEN_U16;
    else if (t->lanes == 1 && t->code == kDLFloat && t->bits == 32) *dt = LUMEN_F32;
    else {
        static const char *const codes[] = {"int", "uint", "float", "opaque", "bfloat",
                                            "complex"};
        const char *c = t->code < 6 ? codes[t->code] : "code";
        PyErr_Format(PyExc_TypeError,
                     "%s: DLPack dtype %s%d (lanes %d) is not supported (uint8, uint16 or "
                     "float32)",
                     name, c, (int)t->bits, (int)t->lanes);
        return -1;
    }
    return 0;
}

/* Some producers (torch <= 1.13) export bool as uint8; their dtype attribute tells. */
static int refuse_bool(PyObject *obj, const char *name)
{
    PyObject *d = PyObject_GetAttrString(obj, "dtype");
    if (!d) {
        PyErr_Clear();
        return 0;
    }
    PyObject *s = PyObject_Str(d);
    Py_DECREF(d);
    int is_bool = s && PyUnicode_Check(s) &&
                  (!PyUnicode_CompareWithASCIIString(s, "torch.bool") ||
                   !PyUnicode_CompareWithASCIIString(s, "bool"));
    Py_XDECREF(s);
    PyErr_Clear();
    if (!is_bool) return 0;
    PyErr_Format(PyExc_TypeError, "%s: dtype bool is not supported (uint8, uint16 or float32)",
                 name);
    return -1;
}

static int view_from_dltensor(DLManagedTensor *m, const char *name, lumenpy_view *v)
{
    DLTensor *t = &m->dl_tensor;
    int device = dl_lumen_device(t->device.device_type, t->device.device_id);
    if (device < 0) {
        PyErr_Format(lumenpy_ArgumentError, "%s: the DLPack tensor is on a device lumen lacks",
                     name);
        return -1;
    }
    lumen_dtype dt;
    if (dl_dtype(&t->dtype, name, &dt)) return -1;
    int64_t strides[4];
    if (t->ndim >= 2 && t->ndim <= 4) {
        int64_t step = 1; /* strides == NULL: compact row-major */
        for (int i = t->ndim - 1; i >= 0; i--) {
            strides[i] = t->strides ? t->strides[i] : step;
            step *= t->shape[i];
        }
    }
    if (set_geometry(v, name, t->ndim, t->shape, strides)) return -1;
    v->img.data = (char *)t->data + t->byte_offset;
    v->img.dtype = dt;
    v->img.device = device; /* device memory is used in place by a context on that device */
    return 0;
}

/* obj.__dlpack__(stream=stream): the keyword, since the array API makes it keyword-only. */
static PyObject *dlpack_on_stream(PyObject *obj, long stream)
{
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    PyObject *args = PyTuple_New(0), *kwargs = Py_BuildValue("{s:l}", "stream", stream);
    PyObject *cap = method && args && kwargs ? PyObject_Call(method, args, kwargs) : NULL;
    Py_XDECREF(method);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return cap;
}

static int view_from_dlpack(PyObject *obj, const char *name, lumenpy_view *v)
{
    int on_cuda = 0;
    if (check_dlpack_device(obj, name, &on_cuda) || refuse_bool(obj, name)) return -1;
    /* CUDA producers order their pending writes before the legacy default stream (1), which
     * lumen's CUDA streams wait for; host producers take no stream argument. */
    PyObject *cap = on_cuda ? dlpack_on_stream(obj, 1) : PyObject_CallMethod(obj, "__dlpack__", NULL);
    if (!cap) return -1;
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m) {
        Py_DECREF(cap);
        return -1;
    }
    /* Renaming takes ownership: the producer's capsule destructor then leaves it to us. */
    if (PyCapsule_SetName(cap, "used_dltensor")) {
        Py_DECREF(cap);
        return -1;
    }
    v->owner = cap;
    v->dl = m;
    return view_from_dltensor(m, name, v);
}

/* Misaligned input (an f32 view at an odd byte offset) is copied once: C may not read it. */
static int view_from_misaligned(PyArrayObject *a, const char *name, lumenpy_view *v)
{
    PyArrayObject *copy = (PyArrayObject *)PyArray_NewCopy(a, NPY_CORDER);
    if (!copy) return -1;
    int rc = view_from_numpy(copy, name, 0, v);
    Py_DECREF(copy);
    return rc;
}

int lumenpy_view_from(PyObject *obj, const char *name, int writable, lumenpy_view *v)
{
    memset(v, 0, sizeof *v);
    int rc;
    if (PyArray_Check(obj) && !writable && !PyArray_ISALIGNED((PyArrayObject *)obj)) {
        rc = view_from_misaligned((PyArrayObject *)obj, name, v);
    } else if (PyArray_Check(obj)) {
        rc = view_from_numpy((PyArrayObject *)obj, name, writable, v);
    } else if (PyObject_HasAttrString(obj, "__dlpack__")) {
        rc = view_from_dlpack(obj, name, v);
    } else if (writable) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a NumPy array or an object with __dlpack__, got %s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    } else {
        /* Buffers and __array_interface__ objects are wrapped in place; lists are copied. */
        PyArrayObject *a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
        if (!a) return -1;
        rc = view_from_numpy(a, name, 0, v);
        Py_DECREF(a);
    }
    if (rc == 0 && writable) rc = check_no_zero_strides(v, name);
    if (rc) lumenpy_view_release(v);
    return rc;
}

void lumenpy_view_release(lumenpy_view *v)
{
    if (v->dl && v->dl->deleter) v->dl->deleter(v->dl);
    v->dl = NULL;
    Py_CLEAR(v->owner);
}

PyObject *lumenpy_new_output(const lumenpy_view *src, lumen_dtype dt, lumenpy_view *v)
{
    static const int types[] = {NPY_UINT8, NPY_UINT16, NPY_FLOAT32};
    npy_intp shape[4];
    for (int i = 0; i < src->ndim; i++) shape[i] = src->shape[i];
    PyObject *a = PyArray_SimpleNew(src->ndim, shape, types[dt]);
    if (!a) return NULL;
    if (lumenpy_view_from(a, "out", 1, v)) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

static void free_image_capsule(PyObject *cap)
{
    lumen_image *img = PyCapsule_GetPointer(cap, "lumen.image");
    if (!img) return;
    lumen_image_free(img);
    PyMem_Free(img);
}

PyObject *lumenpy_adopt_image(lumen_image *img)
{
    static const int types[] = {NPY_UINT8, NPY_UINT16, NPY_FLOAT32};
    npy_intp shape[3] = {(npy_intp)img->h, (npy_intp)img->w, (npy_intp)img->c};
    lumen_image *owned = PyMem_Malloc(sizeof *owned);
    if (!owned) return PyErr_NoMemory();
    *owned = *img;
    PyObject *cap = PyCapsule_New(owned, "lumen.image", free_image_capsule);
    if (!cap) {
        lumen_image_free(owned);
        PyMem_Free(owned);
        return NULL;
    }
    PyObject *a = PyArray_SimpleNewFromData(img->c == 1 ? 2 : 3, shape, types[img->dtype],
                                            img->data);
    if (!a || PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) {
        Py_XDECREF(a);
        Py_DECREF(cap);
        return NULL;
    }
    return a;
}
