/* Runs one filtering op on a file: read IN, filter into a same-typed buffer, write OUT. */
#ifndef LUMEN_CLI_OP_H
#define LUMEN_CLI_OP_H

#include "args.h"
#include "lumen.h"

#include <stddef.h>

typedef lumen_status (*cli_op_run)(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const void *params,
                                   lumen_run_info *info);
/* Writes a short description of the parameters ("sigma=3 ksize=19x19") for --verbose. */
typedef void (*cli_op_describe)(const void *params, const lumen_image *src, char *buf,
                                size_t size);

typedef struct cli_op {
    const char *name;  /* "blur": names the op in messages */
    cli_op_run run;
    cli_op_describe describe;
    const void *params;
} cli_op;

/* Returns an exit status; on failure nothing is written (the library writes atomically). */
int cli_run_image_op(const cli_common *co, const char *in_path, const char *out_path,
                     const cli_op *op);

#endif
