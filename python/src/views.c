/* NumPy arrays and DLPack tensors as lumen image views, without copying.
 * Shapes: H x W (one channel), H x W x C (interleaved) or N x H x W x C (a batch). */
#include "lumen_py.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

const char *lumenpy_dtype_label(lumen_dtype dt)
{
    return dt == LUMEN_U8           ? "uint8"
           : dt == LUMEN_U16        ? "uint16"
           : dt == LUMEN_F16        ? "float16"
           : dt == LUMEN_BF16       ? "bfloat16"
           : (int)dt == LUMENPY_F64 ? "float64"
                                    : "float32";
}

/* NumPy's type for a result dtype; -1 for bf16, which NumPy lacks. */
static int npy_type_of(int dtype)
{
    switch (dtype) {
    case LUMEN_U8: return NPY_UINT8;
    case LUMEN_U16: return NPY_UINT16;
    case LUMEN_F16: return NPY_FLOAT16;
    case LUMEN_BF16: return -1;
    default: return NPY_FLOAT32; /* f32, and float64 results (computed in float32) */
    }
}

/* Whether obj is a tensor of bfloat16 (DLPack's kDLBfloat, 16 bits), by its dtype's name. */
static int is_bf16_tensor(PyObject *obj)
{
    if (!obj || !PyObject_HasAttrString(obj, "new_empty")) return 0;
    PyObject *dt = PyObject_GetAttrString(obj, "dtype");
    PyObject *s = dt ? PyObject_Str(dt) : NULL;
    const char *name = s ? PyUnicode_AsUTF8(s) : NULL;
    const int yes = name && strstr(name, "bfloat16") != NULL;
    Py_XDECREF(s);
    Py_XDECREF(dt);
    PyErr_Clear();
    return yes;
}

/*
 * Results lumen allocates start on a 64-byte line. NumPy's own large arrays start 16 bytes past
 * one (glibc's mmap'ed blocks), so every 64-byte vector store of a kernel writing them touches
 * two lines: conv l4's direct path took 5.34-5.38 ms into such a y against 5.13 into an aligned
 * one (Zen 5, docs/benchmarks.md). NumPy >= 1.22 lets an allocation use another allocator
 * (NEP 49): the array owns its memory as usual and frees it through the same handler.
 */
#if NPY_API_VERSION >= 0x0000000f
/*
 * Large results also start on a 2 MiB page and ask the kernel for transparent huge pages: a
 * fresh 36 MB result (a 12 MP RGB photo) is faulted in on first touch, which took 20.7 ms in
 * 4 KiB pages against 3.3 ms in 2 MiB ones (Zen 4 KVM guest; the page faults, not the
 * clearing, were the cost), as long as the filter itself. Where THP is off it is a no-op.
 *
 * And the last large block freed is kept for the next large result that fits it (a loop
 * `y = lumen.gaussian_blur(x, 1)` frees each y as the next is made): the kernel then clears no
 * pages at all, which was still a sixth of such a call in 2 MiB pages. One block of at most
 * KEEP_MAX is held, as any allocator's free lists hold memory. (MADV_FREE on it, to let the
 * kernel take it back under pressure, made the kernel fault most pages in again on reuse.)
 */
#define HUGE_FROM (4u << 20)
#define HUGE_PAGE (2u << 20)
#define KEEP_MAX ((size_t)256 << 20) /* larger blocks go back at once */

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static void *kept;       /* the block kept, or NULL */
static size_t kept_size; /* its size as last allocated */

/* The kept block when it fits size without wasting more than half of it, else NULL. */
static void *take_kept(size_t size)
{
    void *p = NULL;
    pthread_mutex_lock(&kept_lock);
    if (kept && kept_size >= size && kept_size / 2 <= size) p = kept, kept = NULL;
    pthread_mutex_unlock(&kept_lock);
    return p;
}

static void *line_malloc(void *ctx, size_t size)
{
    (void)ctx;
    void *p = NULL;
    const int huge = size >= HUGE_FROM;
    if (huge && (p = take_kept(size))) return p;
    if (posix_memalign(&p, huge ? HUGE_PAGE : 64, size ? size : 1)) return NULL;
#ifdef MADV_HUGEPAGE
    if (huge) madvise(p, size, MADV_HUGEPAGE); /* advice: a failure changes nothing */
#endif
    return p;
}

static void *line_calloc(void *ctx, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = line_malloc(ctx, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

static void *line_realloc(void *ctx, void *p, size_t size)
{
    (void)ctx;
    return realloc(p, size); /* ndarray.resize: still valid memory, maybe off the line */
}

/* size is the array's, which its block holds (ndarray.resize reallocs to it). */
static void line_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (p && size >= HUGE_FROM && size <= KEEP_MAX && (uintptr_t)p % HUGE_PAGE == 0) {
        pthread_mutex_lock(&kept_lock);
        void *old = kept;
        kept = p, kept_size = size;
        pthread_mutex_unlock(&kept_lock);
        p = old; /* the one kept before goes */
    }
    free(p);
}

static PyDataMem_Handler line_handler = {
    "lumen_cache_line", 1, {NULL, line_malloc, line_calloc, line_realloc, line_free}};

static PyObject *new_on_a_line(int nd, npy_intp *dims, int type)
{
    static PyObject *handler; /* the capsule, kept for the arrays that refer to it */
    if (!handler && !(handler = PyCapsule_New(&line_handler, "mem_handler", NULL))) return NULL;
    PyObject *old = PyDataMem_SetHandler(handler);
    if (!old) return NULL;
    PyObject *a = PyArray_SimpleNew(nd, dims, type);
    PyObject *back = PyDataMem_SetHandler(old); /* this thread's (context's) handler again */
    Py_DECREF(old);
    if (!back) {
        Py_XDECREF(a);
        return NULL;
    }
    Py_DECREF(back);
    return a;
}
#else
static PyObject *new_on_a_line(int nd, npy_intp *dims, int type)
{
    return PyArray_SimpleNew(nd, dims, type);
}
#endif

PyObject *lumenpy_new_array(int nd, const npy_intp *dims, int dtype, PyObject *like)
{
    const int t = npy_type_of(dtype);
    if (t >= 0) return new_on_a_line(nd, (npy_intp *)dims, t);
    if (!is_bf16_tensor(like)) {
        PyErr_SetString(PyExc_TypeError,
                        "dtype: bfloat16 results need a bfloat16 input tensor to make them "
                        "like (NumPy has no bfloat16), or out= a bfloat16 tensor (e.g. "
                        "torch.empty(..., dtype=torch.bfloat16))");
        return NULL;
    }
    PyObject *shape = PyTuple_New(nd);
    for (int i = 0; shape && i < nd; i++)
        PyTuple_SET_ITEM(shape, i, PyLong_FromSsize_t(dims[i]));
    if (!shape) return NULL;
    /* like's kind, dtype and device, C-contiguous (torch's new_empty) */
    PyObject *r = PyObject_CallMethod(like, "new_empty", "(O)", shape);
    Py_DECREF(shape);
    return r;
}

static const char *const layout_names[] = {"auto", "hw", "hwc", "chw", "nhwc", "nchw"};

/* Where n, h, w, c sit among an array's axes in each layout (-1: absent, size 1). */
static const signed char layout_axes[][4] = {
    {0, 0, 0, 0},   /* auto: by ndim, below */
    {-1, 0, 1, -1}, /* hw */
    {-1, 0, 1, 2},  /* hwc */
    {-1, 1, 2, 0},  /* chw */
    {0, 1, 2, 3},   /* nhwc */
    {0, 2, 3, 1},   /* nchw */
};
static const int layout_ndim[] = {0, 2, 3, 3, 4, 4};

const char *lumenpy_layout_name(int layout)
{
    return layout >= 0 && layout <= LUMENPY_LAYOUT_NCHW ? layout_names[layout] : "?";
}

int lumenpy_layout_conv(PyObject *obj, void *out)
{
    int *layout = out;
    if (obj == Py_None) {
        *layout = LUMENPY_LAYOUT_AUTO;
        return 1;
    }
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "layout: expected None or a str, got %s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    for (int i = LUMENPY_LAYOUT_HW; i <= LUMENPY_LAYOUT_NCHW; i++)
        if (!PyUnicode_CompareWithASCIIString(obj, layout_names[i])) {
            *layout = i;
            return 1;
        }
    PyErr_Format(lumenpy_ArgumentError,
                 "layout: unknown layout %R (one of 'hw', 'hwc', 'chw', 'nhwc', 'nchw', or None: "
                 "by the number of dimensions, H x W, H x W x C or N x H x W x C)",
                 obj);
    return 0;
}

/* Fills v->img from a shape and element strides read in `layout`; LUMENPY_LAYOUT_AUTO is the
 * H x W / H x W x C / N x H x W x C convention by ndim. */
static int set_geometry(lumenpy_view *v, const char *name, int ndim, const int64_t *shape,
                        const int64_t *strides, int layout)
{
    if (layout == LUMENPY_LAYOUT_AUTO && (ndim < 2 || ndim > 4)) {
        PyErr_Format(lumenpy_ArgumentError,
                     "%s: expected H x W, H x W x C or N x H x W x C, got %d dimension%s", name,
                     ndim, ndim == 1 ? "" : "s");
        return -1;
    }
    if (layout == LUMENPY_LAYOUT_AUTO)
        layout = ndim == 2   ? LUMENPY_LAYOUT_HW
                 : ndim == 3 ? LUMENPY_LAYOUT_HWC
                             : LUMENPY_LAYOUT_NHWC;
    else if (ndim != layout_ndim[layout]) {
        PyErr_Format(lumenpy_ArgumentError, "%s: layout='%s' needs %d dimensions, got %d", name,
                     layout_names[layout], layout_ndim[layout], ndim);
        return -1;
    }
    const signed char *ax = layout_axes[layout];
    int64_t sh[4], st[4]; /* n, h, w, c */
    for (int k = 0; k < 4; k++) {
        sh[k] = ax[k] >= 0 ? shape[ax[k]] : 1;
        st[k] = ax[k] >= 0 ? strides[ax[k]] : 0;
    }
    if (ax[3] < 0) st[3] = 1;
    for (int i = 0; i < ndim; i++)
        v->shape[i] = (Py_ssize_t)shape[i];
    v->ndim = ndim;
    v->layout = layout;
    v->img.n = sh[0], v->img.h = sh[1], v->img.w = sh[2], v->img.c = sh[3];
    v->img.stride_n = ax[0] >= 0 ? st[0] : sh[1] * st[1];
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
    else if (t == NPY_FLOAT16) *dt = LUMEN_F16;
    else {
        PyObject *s = PyObject_Str((PyObject *)d);
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype %s is not supported (uint8, uint16, float16 or float32; "
                     "convert with .astype(np.float32))",
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

static int view_from_numpy(PyArrayObject *a, const char *name, int writable, int layout,
                           lumenpy_view *v)
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
    if (set_geometry(v, name, nd, shape, strides, layout)) return -1;
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
    else if (t->lanes == 1 && t->code == kDLFloat && t->bits == 16) *dt = LUMEN_F16;
    else if (t->lanes == 1 && t->code == kDLBfloat && t->bits == 16) *dt = LUMEN_BF16;
    else {
        static const char *const codes[] = {"int", "uint", "float", "opaque", "bfloat",
                                            "complex"};
        const char *c = t->code < 6 ? codes[t->code] : "code";
        PyErr_Format(PyExc_TypeError,
                     "%s: DLPack dtype %s%d (lanes %d) is not supported (uint8, uint16, "
                     "float32, float16 or bfloat16)",
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

static int view_from_dltensor(DLManagedTensor *m, const char *name, int layout, lumenpy_view *v)
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
    if (set_geometry(v, name, t->ndim, t->shape, strides, layout)) return -1;
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

static int view_from_dlpack(PyObject *obj, const char *name, int layout, lumenpy_view *v)
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
    return view_from_dltensor(m, name, layout, v);
}

/* Misaligned input (an f32 view at an odd byte offset) is copied once: C may not read it. */
static int view_from_misaligned(PyArrayObject *a, const char *name, int layout, lumenpy_view *v)
{
    PyArrayObject *copy = (PyArrayObject *)PyArray_NewCopy(a, NPY_CORDER);
    if (!copy) return -1;
    int rc = view_from_numpy(copy, name, 0, layout, v);
    Py_DECREF(copy);
    return rc;
}

int lumenpy_view_from(PyObject *obj, const char *name, int writable, lumenpy_view *v)
{
    return lumenpy_view_layout(obj, name, writable, LUMENPY_LAYOUT_AUTO, v);
}

int lumenpy_view_layout(PyObject *obj, const char *name, int writable, int layout, lumenpy_view *v)
{
    memset(v, 0, sizeof *v);
    int rc;
    if (PyArray_Check(obj) && !writable && !PyArray_ISALIGNED((PyArrayObject *)obj)) {
        rc = view_from_misaligned((PyArrayObject *)obj, name, layout, v);
    } else if (PyArray_Check(obj)) {
        rc = view_from_numpy((PyArrayObject *)obj, name, writable, layout, v);
    } else if (PyObject_HasAttrString(obj, "__dlpack__")) {
        rc = view_from_dlpack(obj, name, layout, v);
    } else if (writable) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a NumPy array or an object with __dlpack__, got %s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    } else {
        /* Buffers and __array_interface__ objects are wrapped in place; lists are copied. */
        PyArrayObject *a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
        if (!a) return -1;
        rc = view_from_numpy(a, name, 0, layout, v);
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

static void free_image_capsule(PyObject *cap)
{
    lumen_image *img = PyCapsule_GetPointer(cap, "lumen.image");
    if (!img) return;
    lumen_image_free(img);
    PyMem_Free(img);
}

PyObject *lumenpy_adopt_image(lumen_image *img)
{
    const int type = npy_type_of(img->dtype); /* files never read as bf16 */
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
    PyObject *a = PyArray_SimpleNewFromData(img->c == 1 ? 2 : 3, shape, type, img->data);
    if (!a || PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) {
        Py_XDECREF(a);
        Py_DECREF(cap);
        return NULL;
    }
    return a;
}

/* ---- image ops: layouts, float64 ---- */

/* torch.Tensor and its subclasses (nn.Parameter): torch stores images channels-first. */
static int is_torch_tensor(PyObject *obj)
{
    PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__module__");
    const char *s = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    int torch = s && !strncmp(s, "torch", 5) && (s[5] == '\0' || s[5] == '.');
    Py_XDECREF(mod);
    PyErr_Clear();
    return torch;
}

/* Without layout=, the axes are read by ndim (H x W x C, N x H x W x C). A shape whose channel
 * candidate is the leading (or, in a batch, the second) axis, as torch and most ML code store
 * images, would then be filtered across the wrong axes and give a wrong image without a word:
 * such input is refused with a message that says how to pass layout=. */
static int refuse_ambiguous(PyObject *obj, const lumenpy_view *v, const char *name)
{
    const Py_ssize_t *s = v->shape;
    const int nd = v->ndim;
#define LUMENPY_CHANNELS(x) ((x) == 1 || (x) == 3 || (x) == 4)
    int looks_cf = (nd == 3 && LUMENPY_CHANNELS(s[0]) && s[2] > 4) ||
                   (nd == 4 && LUMENPY_CHANNELS(s[1]) && s[3] > 4);
#undef LUMENPY_CHANNELS
    /* A torch tensor is channels-first by torch's convention; one whose last axis is too long to
     * be colour channels is taken for C x H x W (or N x C x H x W) too. */
    int torch = (nd == 3 || nd == 4) && is_torch_tensor(obj);
    if (!looks_cf && !(torch && s[nd - 1] > 4)) return 0;
    char shape[128];
    int len = 0;
    for (int i = 0; i < nd && len < (int)sizeof shape; i++)
        len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%zd", i ? ", " : "", s[i]);
    const char *cf = nd == 3 ? "chw" : "nchw", *cl = nd == 3 ? "hwc" : "nhwc";
    PyErr_Format(lumenpy_ArgumentError,
                 "%s: %s of shape (%s) looks channels-first (%s), but without layout= a %d-D "
                 "array is read as %s; pass layout='%s' for channels-first (torch) or "
                 "layout='%s' for channels-last (OpenCV, NumPy) to say which",
                 name, torch ? "a torch tensor" : "an array", shape,
                 nd == 3 ? "C x H x W" : "N x C x H x W", nd,
                 nd == 3 ? "H x W x C" : "N x H x W x C", cf, cl);
    return -1;
}

static int is_f64_array(PyObject *obj)
{
    return PyArray_Check(obj) && PyArray_TYPE((PyArrayObject *)obj) == NPY_FLOAT64;
}

/* The dtypes an image op takes from NumPy, said before the view's narrower message would. */
static int check_image_dtype(PyObject *obj, const char *name)
{
    if (!PyArray_Check(obj)) return 0;
    int t = PyArray_TYPE((PyArrayObject *)obj);
    if (t == NPY_UINT8 || t == NPY_UINT16 || t == NPY_FLOAT32 || t == NPY_FLOAT64 ||
        t == NPY_FLOAT16)
        return 0;
    PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR((PyArrayObject *)obj));
    PyErr_Format(PyExc_TypeError,
                 "%s: dtype %s is not supported (uint8, uint16, float16, float32 or float64; "
                 "convert with .astype(np.float32))",
                 name, s ? PyUnicode_AsUTF8(s) : "?");
    Py_XDECREF(s);
    return -1;
}

int lumenpy_image_input(PyObject *obj, const char *name, int layout, lumenpy_view *v, int *was_f64)
{
    *was_f64 = 0;
    /* Nested lists would become int64 or float64 arrays: not an image anyone meant to filter
     * (float64 arrays are taken because `img / 255.0` makes them, lists are not). */
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a NumPy array or a DLPack tensor, got %s (np.asarray(..., "
                     "np.float32) makes one)",
                     name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (check_image_dtype(obj, name)) return -1;
    int rc;
    if (is_f64_array(obj)) {
        /* lumen computes in float32 (DESIGN.md, "Numbers"): one float32 copy of the input,
         * the precision docs/python.md states. */
        PyObject *f = PyArray_Cast((PyArrayObject *)obj, NPY_FLOAT32);
        if (!f) return -1;
        rc = lumenpy_view_layout(f, name, 0, layout, v);
        Py_DECREF(f);
        *was_f64 = 1;
    } else {
        rc = lumenpy_view_layout(obj, name, 0, layout, v);
    }
    if (rc == 0 && layout == LUMENPY_LAYOUT_AUTO && refuse_ambiguous(obj, v, name)) {
        lumenpy_view_release(v);
        return -1;
    }
    return rc;
}

static PyObject *shape_tuple(int nd, const npy_intp *dims)
{
    PyObject *t = PyTuple_New(nd);
    for (int i = 0; t && i < nd; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(dims[i]));
    return t;
}

static int check_out_shape(const lumenpy_view *v, int nd, const npy_intp *dims, const char *what)
{
    int same = v->ndim == nd;
    for (int i = 0; same && i < nd; i++)
        same = v->shape[i] == dims[i];
    if (same) return 0;
    PyObject *a = shape_tuple(v->ndim, v->shape), *b = shape_tuple(nd, dims);
    if (a && b) PyErr_Format(lumenpy_ArgumentError, "out: shape %R differs from %s %R", a, what, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return -1;
}

static int check_out_dtype(int dtype, int out_dtype)
{
    if (dtype < 0 || dtype == out_dtype) return 0;
    PyErr_Format(lumenpy_ArgumentError, "dtype: %s differs from out's dtype %s",
                 lumenpy_dtype_label(dtype), lumenpy_dtype_label(out_dtype));
    return -1;
}

/* out= of float64: the op writes a float32 stand-in of its shape, copied into it at the end. */
static PyObject *f64_out(PyObject *out, int layout, lumenpy_view *v, PyObject **final)
{
    PyArrayObject *a = (PyArrayObject *)out;
    if (PyArray_FailUnlessWriteable(a, "out") < 0) return NULL;
    for (int i = 0; i < PyArray_NDIM(a); i++)
        if (PyArray_DIM(a, i) > 1 && PyArray_STRIDE(a, i) == 0) {
            PyErr_SetString(lumenpy_ArgumentError,
                            "out: has a zero stride (a broadcast view): several pixels share "
                            "memory");
            return NULL;
        }
    PyObject *tmp = PyArray_SimpleNew(PyArray_NDIM(a), PyArray_DIMS(a), NPY_FLOAT32);
    if (!tmp) return NULL;
    if (lumenpy_view_layout(tmp, "out", 1, layout, v)) {
        Py_DECREF(tmp);
        return NULL;
    }
    Py_INCREF(out);
    *final = out;
    return tmp;
}

PyObject *lumenpy_image_output(PyObject *out, int dtype, int nd, const npy_intp *dims, int layout,
                               const char *what, lumenpy_view *v, PyObject **final,
                               PyObject *like)
{
    *final = NULL;
    PyObject *r;
    if (out && out != Py_None) {
        if (is_f64_array(out)) {
            if (check_out_dtype(dtype, LUMENPY_F64)) return NULL;
            r = f64_out(out, layout, v, final);
        } else {
            if (lumenpy_view_layout(out, "out", 1, layout, v)) return NULL;
            if (check_out_dtype(dtype, (int)v->img.dtype)) {
                lumenpy_view_release(v);
                return NULL;
            }
            Py_INCREF(out);
            r = out;
        }
        if (r && check_out_shape(v, nd, dims, what)) {
            lumenpy_view_release(v);
            Py_CLEAR(*final);
            Py_CLEAR(r);
        }
        return r;
    }
    r = lumenpy_new_array(nd, dims, dtype, like);
    if (r && dtype == LUMENPY_F64) {
        /* widened when the op is done: Py_None marks "a new float64 array" */
        Py_INCREF(Py_None);
        *final = Py_None;
    }
    if (r && lumenpy_view_layout(r, "out", 1, layout, v)) {
        Py_CLEAR(*final);
        Py_CLEAR(r);
    }
    return r;
}

PyObject *lumenpy_image_result(PyObject *result, PyObject *final)
{
    if (!final) return result;
    PyObject *r = NULL;
    if (final == Py_None) {
        r = PyArray_Cast((PyArrayObject *)result, NPY_FLOAT64);
    } else if (PyArray_CopyInto((PyArrayObject *) final, (PyArrayObject *)result) == 0) {
        Py_INCREF(final);
        r = final;
    }
    Py_DECREF(result);
    Py_DECREF(final);
    return r;
}
