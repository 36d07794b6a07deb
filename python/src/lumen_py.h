/* Internal interface of the lumen._lumen extension: NumPy/DLPack views, argument converters,
 * contexts and errors shared by the files of the binding. */
#ifndef LUMEN_PY_H
#define LUMEN_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL lumenpy_ARRAY_API
#ifndef LUMENPY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <dlpack/dlpack.h>
#include <lumen.h>
#include <lumen_ops.h>

/* ---- errors (module.c) ---- */
extern PyObject *lumenpy_Error, *lumenpy_ArgumentError, *lumenpy_UnsupportedError,
    *lumenpy_FileError;
/* Raises the exception that matches s, with lumen_last_error() as the message; returns NULL. */
PyObject *lumenpy_raise(lumen_status s);

/* ---- image views (views.c) ---- */
/* How an image's axes are read (layout=): AUTO is by ndim, H x W, H x W x C, N x H x W x C. */
enum {
    LUMENPY_LAYOUT_AUTO = 0,
    LUMENPY_LAYOUT_HW,
    LUMENPY_LAYOUT_HWC,
    LUMENPY_LAYOUT_CHW,
    LUMENPY_LAYOUT_NHWC,
    LUMENPY_LAYOUT_NCHW
};
/* A dtype of the binding only, past lumen_dtype's: float64 arrays are filtered in float32 and
 * the result widened (docs/python.md). */
#define LUMENPY_F64 16

typedef struct lumenpy_view {
    lumen_image img;
    int ndim;   /* the array's; its axes are read in `layout` */
    int layout; /* LUMENPY_LAYOUT_*, never AUTO once viewed */
    Py_ssize_t shape[4];
    PyObject *owner;       /* the ndarray, or the consumed DLPack capsule */
    DLManagedTensor *dl;   /* deleted on release when the view came from DLPack */
} lumenpy_view;

/* Borrows obj's memory as a view; 0 on success, -1 with an exception set. `name` prefixes
 * messages ("src", "out"); writable views refuse read-only and self-overlapping memory. */
int lumenpy_view_from(PyObject *obj, const char *name, int writable, lumenpy_view *v);
/* The same, reading the axes in `layout` (LUMENPY_LAYOUT_*). */
int lumenpy_view_layout(PyObject *obj, const char *name, int writable, int layout, lumenpy_view *v);
void lumenpy_view_release(lumenpy_view *v);
/* An image op's input: as lumenpy_view_layout, but a float64 ndarray becomes a float32 copy
 * (*was_f64 = 1), and with LUMENPY_LAYOUT_AUTO a shape that looks channels-first (or a torch
 * tensor that does) is refused with a message naming layout=. */
int lumenpy_image_input(PyObject *obj, const char *name, int layout, lumenpy_view *v, int *was_f64);
/* An image op's output of shape dims (nd axes) in `layout`: out= (checked against dims, the
 * message says "differs from <what>") or a new array of dtype (a lumen_dtype or LUMENPY_F64).
 * A float64 result is computed into a float32 array: *final is then out= or Py_None (a new
 * float64 array), for lumenpy_image_result. Returns the array the op writes (new ref). */
PyObject *lumenpy_image_output(PyObject *out, int dtype, int nd, const npy_intp *dims, int layout,
                               const char *what, lumenpy_view *v, PyObject **final,
                               PyObject *like);
/* A new C-contiguous array of dtype (a lumen_dtype or LUMENPY_F64) and shape: NumPy's, or, for
 * bf16 (NumPy has no bfloat16), `like.new_empty(dims)` where like is a bf16 tensor (torch's);
 * otherwise TypeError naming out=. */
PyObject *lumenpy_new_array(int nd, const npy_intp *dims, int dtype, PyObject *like);
/* Steals result and final: the array to return (result, out=, or result widened to float64). */
PyObject *lumenpy_image_result(PyObject *result, PyObject *final);
int lumenpy_layout_conv(PyObject *obj, void *out); /* int: LUMENPY_LAYOUT_*, None: AUTO */
const char *lumenpy_layout_name(int layout);
/* A new ndarray that owns img's malloc'ed data (freed with lumen_image_free). */
PyObject *lumenpy_adopt_image(lumen_image *img);

/* ---- argument converters for PyArg_Parse "O&" (args.c): 1 ok, 0 with an exception ---- */
int lumenpy_border_conv(PyObject *obj, void *out);    /* lumen_border */
int lumenpy_method_conv(PyObject *obj, void *out);    /* lumen_method */
int lumenpy_precision_conv(PyObject *obj, void *out); /* lumen_precision */
int lumenpy_dtype_conv(PyObject *obj, void *out);     /* int: -1 (None), lumen_dtype, LUMENPY_F64 */
int lumenpy_value_conv(PyObject *obj, void *out);     /* float: border_value, finite */
/* gaussian_blur's SciPy forms (args.c): sigma as (sx, sy), mode= and cval= for border= and
 * border_value=, truncate= for ksize=. Each in/out slot is a borrowed object or NULL (not
 * given); the ones rewritten are new references kept in hold[] (Py_XDECREF them after the
 * call). 0, or -1 with an exception naming the argument. */
typedef struct lumenpy_gauss_forms {
    PyObject *sigma, *sigma_y, *ksize, *border, *border_value; /* descriptor arguments */
    PyObject *mode, *cval, *truncate;                          /* SciPy's, Python only */
    PyObject *hold[4];
} lumenpy_gauss_forms;
int lumenpy_gauss_forms_apply(lumenpy_gauss_forms *f);
void lumenpy_gauss_forms_release(lumenpy_gauss_forms *f);
/* An int (not a bool), within int range; 1 ok, 0 with an exception naming `name`. */
int lumenpy_int_arg(PyObject *obj, const char *name, int *out);
/* int or (x, y) pair, e.g. ksize or anchor; name is used in messages. */
int lumenpy_int_pair(PyObject *obj, const char *name, int *x, int *y);
/* A kernel as a new C-contiguous float32 ndarray of ndim 2 (filter2d) or 1 (sep). */
PyArrayObject *lumenpy_kernel(PyObject *obj, const char *name, int ndim);
/* "uint8", "uint16", "float32", "float16", "bfloat16", "float64" (LUMENPY_F64) */
const char *lumenpy_dtype_label(lumen_dtype dt);

/* ---- contexts (context.c) ---- */
typedef struct lumenpy_context {
    PyObject_HEAD
    lumen_context *ctx;
    PyThread_type_lock lock; /* one C call at a time per context */
} lumenpy_context;
extern PyTypeObject lumenpy_ContextType;
/* The context for a call: obj's (locked until release) or a default one from a pool, on
 * `device` (-1: the default device). NULL with an exception set when obj is not None and not a
 * Context. */
lumen_context *lumenpy_context_acquire(PyObject *obj, int device);
void lumenpy_context_release(PyObject *obj, lumen_context *ctx, int device);
/* ---- Ctrl-C during a call (interrupt.c, docs/faults.md) ---- */
/* Before a call: on the main thread with SIGINT's default handler, clears the SIGINT flag and
 * runs pending signal handlers (-1 with an exception set, e.g. KeyboardInterrupt); then
 * *poll is the interrupt hook the context gets for the call, else NULL. */
int lumenpy_interrupt_arm(int (**poll)(void *));
/* After LUMEN_ERR_INTERRUPTED: raises what the signal's handler raises (KeyboardInterrupt). */
PyObject *lumenpy_raise_interrupted(void);

void lumenpy_context_pool_clear(void);

/* ---- what the last op did, per thread (module.c) ---- */
void lumenpy_record_run(const lumen_run_info *info, const lumen_image *src,
                        const lumen_image *dst);

/* ---- the op descriptors (descriptors.c) ---- */
#define LUMENPY_MAX_OPS 64 /* table entries the binding keeps lists and docstrings for */
/* The keyword list of an op: its descriptor's argument names, then the front end's own
 * (lumenpy_op_extras); built at import, NULL for an unknown name. */
char **lumenpy_op_kwlist(const char *name);
/* Builds the keyword lists and gives each op of `methods` its docstring and text signature,
 * from the descriptors. 0, or -1 with an exception. */
int lumenpy_descriptors_init(PyMethodDef *methods);
PyObject *lumenpy_op_descriptors(PyObject *self, PyObject *unused);
/* The op's docstring with its text signature, for the hand-written binding (generic 0) or the
 * generic one (1: its notes say what the generic parser takes); made once and kept. NULL with
 * an exception. */
const char *lumenpy_op_doc(const lumen_op_desc *op, int generic);
/* The front end's keywords of an op, after the descriptor's, NULL-terminated: an op's own
 * Python forms (gaussian_blur's mode, cval, truncate), then out, dtype and layout (image ops),
 * context. */
const char *const *lumenpy_op_extras(const lumen_op_desc *op);

/* ---- the generic binding (generic.c, generic_bind.c) ---- */
/* Calls op with Python arguments parsed by the descriptor's types: args[first:] positional,
 * kw by name, plus out=, dtype= (image ops) and context=. A new reference or NULL. */
PyObject *lumenpy_op_call(const lumen_op_desc *op, PyObject *args, Py_ssize_t first,
                          PyObject *kw);
/* Adds a generic function to module m for every op of the table that `methods` (the module's
 * hand-written functions) lacks. 0, or -1 with an exception. */
int lumenpy_generic_register(PyObject *m, const PyMethodDef *methods);
/* _op_call(name, *args, **kw), _bind_generic(name), _generic_ops(): the generic path by name,
 * for tests. */
PyObject *lumenpy_op_call_by_name(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_bind_generic(PyObject *self, PyObject *name);
PyObject *lumenpy_generic_ops(PyObject *self, PyObject *unused);

/* ---- module functions ---- */
PyObject *lumenpy_filter2d(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_sep_filter2d(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_gaussian_blur(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_box_blur(PyObject *self, PyObject *args, PyObject *kw);
/* _choose_method(op, src, *args, **kw): the method op would run, nothing run (ops.c). */
PyObject *lumenpy_choose_method(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_gaussian_kernel(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_gaussian_ksize(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_time_c(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_devices(PyObject *self, PyObject *unused);
PyObject *lumenpy_device_info(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_read_image(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_write_image(PyObject *self, PyObject *args, PyObject *kw);
/* conv.c: NCHW neural-network convolution (torch.nn.functional's argument rules) */
PyObject *lumenpy_conv2d(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_conv_transpose2d(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_conv2d_pack(PyObject *self, PyObject *args, PyObject *kw);
/* Borrows a 4-D float32 array as an N x C x H x W view (same contract as lumenpy_view_from). */
int lumenpy_nchw_view(PyObject *obj, const char *name, int writable, lumenpy_view *v);
/* lumenpy_raise, with a leading C field name ("w:", "y:", "stride_h:") renamed to the Python
 * argument ("weight:", "out:", "stride (height):"). */
void lumenpy_raise_py_names(lumen_status s);

/* film (ops.c): the chain, the stocks, the grain's draws */
PyObject *lumenpy_film(PyObject *self, PyObject *args, PyObject *kw);
PyObject *lumenpy_film_stocks(PyObject *self, PyObject *unused);
PyObject *lumenpy_grain_normals(PyObject *self, PyObject *args, PyObject *kw);
/* crop.c: lumen.mask_bbox (lumen.crop is the generic binding's) */
PyObject *lumenpy_mask_bbox(PyObject *self, PyObject *args, PyObject *kw);

#endif
