/*
 * lumen_ops.h — op descriptors: each op's arguments declared once, for front ends.
 *
 * Every op of lumen.h has one descriptor (lumen_op_desc): its name, a summary and help text,
 * its arguments with types, ranges, defaults and help, the rule that gives the output's shape
 * from the inputs, and an invoke function that unpacks tagged values and calls the typed
 * function of lumen.h. The CLI (tools/lumen) builds its op commands, flags, --help and range
 * checks from the table; the Python binding builds its keyword lists, signatures, docstrings
 * and type stubs from it (docs/descriptors.md). A C program that knows its op at compile time
 * calls lumen.h directly; this header is for code that handles every op alike.
 *
 * Ranges use lumen.h's limits (LUMEN_MAX_KSIZE, LUMEN_MAX_KAREA, LUMEN_MAX_THREADS). Also here:
 * N-D .npy tensor files.
 */
#ifndef LUMEN_OPS_H
#define LUMEN_OPS_H

#include "lumen.h"

#include <stdint.h>

#ifndef LUMEN_API
#define LUMEN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- arguments ------------------------------------------------------------ */

typedef enum lumen_arg_type {
    LUMEN_ARG_IMAGE = 0,  /* image view: u8/u16/f32, H x W x C (n images), any strides */
    LUMEN_ARG_TENSOR = 1, /* f32 tensor view read as N x C x H x W */
    LUMEN_ARG_KERNEL = 2, /* 2-D float array, kh x kw row-major */
    LUMEN_ARG_VECTOR = 3, /* 1-D float array */
    LUMEN_ARG_INT = 4,
    LUMEN_ARG_INT_PAIR = 5, /* two ints; one number means both */
    LUMEN_ARG_REAL = 6,     /* double */
    LUMEN_ARG_BOOL = 7,
    LUMEN_ARG_ENUM = 8 /* one of `choices`, by name */
} lumen_arg_type;

/* Bits of lumen_arg_desc.flags. */
enum {
    LUMEN_ARG_REQUIRED = 1u << 0,   /* no default: the caller must give it */
    LUMEN_ARG_POSITIONAL = 1u << 1, /* optional but may be given by position (conv's bias) */
    LUMEN_ARG_NULLABLE = 1u << 2,   /* absent is a value of its own (Python None): def_text says
                                     * what the op does then; `def` is unused */
    LUMEN_ARG_PAIR_XY = 1u << 3,    /* INT_PAIR in (x, y) = (width, height) order, else (h, w) */
    LUMEN_ARG_PAIR_BOTH = 1u << 4,  /* INT_PAIR: both numbers must be given (an anchor) */
    LUMEN_ARG_PAIR_SIDES = 1u << 5  /* INT_PAIR of the two sides of one axis (before, after) */
};

/* One name an ENUM argument takes and the C enum value it stands for. */
typedef struct lumen_choice {
    const char *name; /* NULL ends a list */
    int value;
} lumen_choice;

typedef struct lumen_arg_desc {
    const char *name; /* "border_value": the Python keyword; CLI: --border-value */
    lumen_arg_type type;
    unsigned flags;              /* LUMEN_ARG_REQUIRED ... */
    double def[2];               /* default of an optional scalar: INT/REAL/BOOL def[0], ENUM
                                  * the choice's value, INT_PAIR def[0], def[1] */
    const char *def_text;        /* the default in words for help, or NULL (from def) */
    double min, max;             /* inclusive range of INT, INT_PAIR (each) and REAL */
    const lumen_choice *choices; /* ENUM only */
    const char *help;            /* one or more sentences, no trailing newline */
} lumen_arg_desc;

/* A tagged value of one argument; `given` 0 means absent (the default, or NULLABLE's none). */
typedef struct lumen_value {
    lumen_arg_type type;
    int given;
    union {
        const lumen_image *image; /* IMAGE, TENSOR */
        struct {
            const float *data;
            int64_t w, h; /* KERNEL: h x w; VECTOR: w values, h = 1 */
        } array;
        int64_t i;       /* INT, BOOL (0/1), ENUM (the choice's value) */
        int64_t pair[2]; /* INT_PAIR, in the argument's order */
        double real;     /* REAL */
    } u;
} lumen_value;

/* How the output follows from the inputs. */
typedef struct lumen_out_shape {
    lumen_arg_type type; /* IMAGE: in the input image's layout (h, w may differ: resize), or
                          * TENSOR */
    lumen_dtype dtype;   /* IMAGE: the input's dtype (front ends may ask for another) */
    int64_t n, c, h, w;
} lumen_out_shape;

typedef struct lumen_op_desc {
    const char *name;    /* "conv2d": the lumen_<name> function and the Python function */
    const char *command; /* "conv": the CLI command */
    const char *summary; /* one line, no full stop */
    const char *help;    /* paragraphs, no trailing newline */
    const lumen_arg_desc *args;
    int n_args;
    lumen_arg_type output;   /* IMAGE or TENSOR */
    const char *output_help; /* what the output holds */
    /* Shape and dtype of the output for these values (args checked as lumen_op_check_args). */
    lumen_status (*output_shape)(const lumen_value *values, lumen_out_shape *out);
    /* Runs the op into `out`, a view of output_shape's shape; info may be NULL. */
    lumen_status (*invoke)(lumen_context *ctx, const lumen_value *values, const lumen_image *out,
                           lumen_run_info *info);
} lumen_op_desc;

/* ---- the table -------------------------------------------------------------- */

LUMEN_API int lumen_op_count(void);
/* The i-th descriptor, 0 <= i < lumen_op_count(); NULL outside. */
LUMEN_API const lumen_op_desc *lumen_op_at(int i);
/* By name ("conv2d") or command ("conv"); NULL if none. */
LUMEN_API const lumen_op_desc *lumen_op_find(const char *name);
/* Index of the argument named `name` in op->args, or -1. */
LUMEN_API int lumen_op_arg_index(const lumen_op_desc *op, const char *name);
/* Sets values[0 .. op->n_args) to "absent" with the arguments' types. */
LUMEN_API void lumen_op_values_init(const lumen_op_desc *op, lumen_value *values);
/* Checks required arguments are given, types match and numbers are in range; the message names
 * the argument. */
LUMEN_API lumen_status lumen_op_check_args(const lumen_op_desc *op, const lumen_value *values);
/* lumen_op_check_args, then op->output_shape. */
LUMEN_API lumen_status lumen_op_output_shape(const lumen_op_desc *op, const lumen_value *values,
                                             lumen_out_shape *out);
/* lumen_op_check_args, then op->invoke. */
LUMEN_API lumen_status lumen_op_invoke(const lumen_op_desc *op, lumen_context *ctx,
                                       const lumen_value *values, const lumen_image *out,
                                       lumen_run_info *info);
/* "image", "tensor", "kernel", "vector", "int", "int pair", "real", "bool", "enum". */
LUMEN_API const char *lumen_arg_type_name(lumen_arg_type type);

/* ---- tensor files ------------------------------------------------------------
 * .npy arrays of 1 to 4 dimensions as N x C x H x W views (missing leading axes are 1:
 * (C, H, W) -> (1, C, H, W), (K,) -> (1, 1, 1, K)); u8, u16, f32, f64 (read as f32). */

/* Reads into a new contiguous NCHW view; free with lumen_image_free. */
LUMEN_API lumen_status lumen_read_tensor(const char *path, lumen_image *out);
/* Writes t as a 4-D (N, C, H, W) .npy, atomically (a temporary file, then renamed). */
LUMEN_API lumen_status lumen_write_tensor(const char *path, const lumen_image *t);

#ifdef __cplusplus
}
#endif
#endif /* LUMEN_OPS_H */
