/* The hand-written image commands (filter, blur, box): one op run on every file of a batch. */
#ifndef LUMEN_CLI_OP_H
#define LUMEN_CLI_OP_H

#include "args.h"
#include "batch.h"
#include "lumen.h"

#include <stddef.h>

typedef lumen_status (*cli_op_run)(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const void *params,
                                   lumen_run_info *info);
/* Writes a short description of the parameters ("sigma=3 ksize=19x19") for --verbose. */
typedef void (*cli_op_describe)(const void *params, const lumen_image *src, char *buf, size_t size);

typedef struct cli_op {
    const char *name; /* "blur": names the op in messages */
    cli_op_run run;
    cli_op_describe describe;
    const void *params;
} cli_op;

/* The flags of an image command's state: common (co) or batch (bo); -1 when id is neither. */
int cli_image_flag(cli_common *co, cli_batch_opts *bo, int id, const char *name, const char *value);

/* Parses IN OUT or IN... --output-dir DIR (cmd is variadic; bo is where on_flag puts the batch
 * flags) and splits the positionals into b. Returns 0, CLI_HELP or an exit status. */
int cli_image_parse(const cli_command *cmd, int argc, char **argv, void *state,
                    const cli_batch_opts *bo, cli_batch *b);

/* Runs op on every file of the prepared batch; returns the exit status. On failure nothing is
 * written for that file (the library writes atomically). */
int cli_run_image_op(const cli_common *co, cli_batch *b, const cli_op *op);

#endif
