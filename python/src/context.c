/* lumen.Context, and the default contexts calls use without one.
 * A lumen_context serves one thread at a time. Default contexts come from a pool guarded by
 * the GIL, so concurrent Python threads each get one of their own (and a single thread keeps
 * reusing the same one, with its plan cache). A Context object has a lock instead. */
#include "lumen_py.h"

#include <stdio.h>
#include <string.h>

#define POOL_MAX 64

/* Idle default contexts; device -1: created with the default device (auto/$LUMEN_DEVICE),
 * else set to that device (for views that live in its memory). */
static struct {
    int device;
    lumen_context *ctx;
} pool[POOL_MAX];
static int pool_size;

/* Puts ctx on device index i, by the spec lumen_device_find resolves back to i. */
static lumen_status set_device_index(lumen_context *ctx, int i)
{
    char spec[48];
    lumen_status s = lumen_device_spec(i, spec, sizeof spec);
    return s ? s : lumen_context_set_device(ctx, spec);
}

static lumen_context *pool_take(int device)
{
    for (int i = pool_size - 1; i >= 0; i--)
        if (pool[i].device == device) {
            lumen_context *ctx = pool[i].ctx;
            pool[i] = pool[--pool_size];
            return ctx;
        }
    lumen_context *ctx = NULL;
    lumen_status s = lumen_context_create(&ctx);
    if (!s && device >= 0) s = set_device_index(ctx, device);
    if (s) {
        lumen_context_destroy(ctx);
        lumenpy_raise(s);
        return NULL;
    }
    return ctx;
}

static void pool_give(lumen_context *ctx, int device)
{
    if (pool_size < POOL_MAX) {
        pool[pool_size].device = device;
        pool[pool_size++].ctx = ctx;
    } else {
        lumen_context_destroy(ctx);
    }
}

void lumenpy_context_pool_clear(void)
{
    while (pool_size > 0) lumen_context_destroy(pool[--pool_size].ctx);
}

/* The context, locked or taken from the pool, before its interrupt hook is set. */
static lumen_context *acquire(PyObject *obj, int device)
{
    if (obj == NULL || obj == Py_None) return pool_take(device);
    if (!PyObject_TypeCheck(obj, &lumenpy_ContextType)) {
        PyErr_Format(PyExc_TypeError, "context: expected a lumen.Context, got %s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    lumenpy_context *c = (lumenpy_context *)obj;
    if (!PyThread_acquire_lock(c->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(c->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    return c->ctx;
}

/* Every call takes its context here, so every call gets the hook that fits the thread it runs
 * on: Ctrl-C stops a long call on the main thread (docs/faults.md); other threads get none
 * (Python delivers KeyboardInterrupt to the main thread only). */
lumen_context *lumenpy_context_acquire(PyObject *obj, int device)
{
    int (*poll)(void *) = NULL;
    if (lumenpy_interrupt_arm(&poll) < 0) return NULL;
    lumen_context *ctx = acquire(obj, device);
    if (ctx) lumen_context_set_interrupt(ctx, poll, NULL);
    return ctx;
}

void lumenpy_context_release(PyObject *obj, lumen_context *ctx, int device)
{
    if (!ctx) return;
    if (obj == NULL || obj == Py_None) pool_give(ctx, device);
    else PyThread_release_lock(((lumenpy_context *)obj)->lock);
}

/* ---- the Context type ---- */

static int planning_from(const char *name, lumen_fft_planning *p)
{
    if (!strcmp(name, "estimate")) *p = LUMEN_FFT_ESTIMATE;
    else if (!strcmp(name, "measure")) *p = LUMEN_FFT_MEASURE;
    else {
        PyErr_Format(lumenpy_ArgumentError,
                     "fft_planning: expected 'estimate' or 'measure', got '%s'", name);
        return -1;
    }
    return 0;
}

static const char *str_arg(PyObject *obj, const char *name)
{
    if (PyUnicode_Check(obj)) return PyUnicode_AsUTF8(obj);
    PyErr_Format(PyExc_TypeError, "%s: expected a str, got %s", name, Py_TYPE(obj)->tp_name);
    return NULL;
}

static int apply_options(lumen_context *ctx, const char *dev, int threads, int strict, int simd,
                         lumen_fft_planning p)
{
    lumen_status s;
    if ((s = lumen_context_set_device(ctx, dev)) || (s = lumen_context_set_threads(ctx, threads)) ||
        (s = lumen_context_set_strict(ctx, strict)) || (s = lumen_context_set_simd(ctx, simd)) ||
        (s = lumen_context_set_fft_planning(ctx, p))) {
        lumenpy_raise(s);
        return -1;
    }
    return 0;
}

static int context_init(lumenpy_context *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"device", "threads", "strict", "simd", "fft_planning", NULL};
    PyObject *device = NULL, *threads_obj = NULL, *planning_obj = NULL;
    int threads = 0, strict = 0, simd = 1;
    lumen_fft_planning planning = LUMEN_FFT_ESTIMATE;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO$ppO:Context", kwlist, &device, &threads_obj,
                                     &strict, &simd, &planning_obj))
        return -1;
    const char *dev = device ? str_arg(device, "device") : "auto";
    const char *plan = planning_obj ? str_arg(planning_obj, "fft_planning") : "estimate";
    if (!dev || !plan || (threads_obj && !lumenpy_int_arg(threads_obj, "threads", &threads)) ||
        planning_from(plan, &planning))
        return -1;
    if (self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Context: already initialised");
        return -1;
    }
    lumen_status s = lumen_context_create(&self->ctx);
    if (s) {
        lumenpy_raise(s);
        return -1;
    }
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        PyErr_NoMemory();
        return -1;
    }
    return apply_options(self->ctx, dev, threads, strict, simd, planning);
}

static void context_dealloc(lumenpy_context *self)
{
    lumen_context_destroy(self->ctx);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int check_ready(lumenpy_context *self)
{
    if (self->ctx) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Context: not initialised");
    return -1;
}

static PyObject *device_label(int index)
{
    char spec[48];
    lumen_status s = lumen_device_spec(index, spec, sizeof spec);
    return s ? lumenpy_raise(s) : PyUnicode_FromString(spec);
}

static PyObject *get_device(lumenpy_context *self, void *unused)
{
    (void)unused;
    return check_ready(self) ? NULL : device_label(lumen_context_device(self->ctx));
}

static PyObject *get_threads(lumenpy_context *self, void *unused)
{
    (void)unused;
    return check_ready(self) ? NULL : PyLong_FromLong(lumen_context_threads(self->ctx));
}

static PyObject *get_strict(lumenpy_context *self, void *unused)
{
    (void)unused;
    return check_ready(self) ? NULL : PyBool_FromLong(lumen_context_strict(self->ctx));
}

static PyObject *get_cpu_features(lumenpy_context *self, void *unused)
{
    (void)unused;
    return check_ready(self) ? NULL : PyUnicode_FromString(lumen_cpu_features(self->ctx));
}

static PyObject *clear_plans(lumenpy_context *self, PyObject *unused)
{
    (void)unused;
    if (check_ready(self)) return NULL;
    lumen_context *ctx = lumenpy_context_acquire((PyObject *)self, -1);
    lumen_context_clear_plans(ctx);
    lumenpy_context_release((PyObject *)self, ctx, -1);
    Py_RETURN_NONE;
}

static PyObject *context_repr(lumenpy_context *self)
{
    if (!self->ctx) return PyUnicode_FromString("lumen.Context(<uninitialised>)");
    PyObject *dev = device_label(lumen_context_device(self->ctx));
    if (!dev) return NULL;
    PyObject *r = PyUnicode_FromFormat("lumen.Context(device=%R, threads=%d, strict=%s)", dev,
                                       lumen_context_threads(self->ctx),
                                       lumen_context_strict(self->ctx) ? "True" : "False");
    Py_DECREF(dev);
    return r;
}

static PyGetSetDef context_getset[] = {
    {"device", (getter)get_device, NULL, "The device ops run on: 'cpu' or 'cuda:N'.", NULL},
    {"threads", (getter)get_threads, NULL, "CPU threads an op may use.", NULL},
    {"strict", (getter)get_strict, NULL, "True: no fallback to the CPU.", NULL},
    {"cpu_features", (getter)get_cpu_features, NULL, "e.g. 'avx2,fma' or 'scalar'.", NULL},
    {NULL},
};

static PyMethodDef context_methods[] = {
    {"clear_plans", (PyCFunction)clear_plans, METH_NOARGS,
     "Drops cached FFT plans and kernel spectra."},
    {NULL},
};

PyTypeObject lumenpy_ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lumen.Context",
    .tp_basicsize = sizeof(lumenpy_context),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(device='auto', threads=0, *, strict=False, simd=True, "
              "fft_planning='estimate')\n\n"
              "Thread count, device, strict mode and the plan cache (FFT plans, kernel spectra)\n"
              "for the ops given context=. threads=0: lumen's default ($LUMEN_NUM_THREADS, else\n"
              "$OMP_NUM_THREADS, else the CPUs this process may use).\n"
              "device: 'auto', 'cpu', 'cuda' or 'cuda:N'. simd=False runs the scalar reference.\n"
              "fft_planning='measure' times FFT plans once per size (seconds), then runs faster.\n"
              "May be shared between threads: calls on one Context take turns.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)context_init,
    .tp_dealloc = (destructor)context_dealloc,
    .tp_repr = (reprfunc)context_repr,
    .tp_getset = context_getset,
    .tp_methods = context_methods,
};
