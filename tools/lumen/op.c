/* The hand-written image commands' side of a batch: their flags, their lines, their op. */
#include "op.h"

#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int cli_image_flag(cli_common *co, cli_batch_opts *bo, int id, const char *name, const char *value)
{
    int rc = cli_common_flag(co, id, name, value);
    return rc == -1 ? cli_batch_flag(bo, id, name, value) : rc;
}

int cli_image_parse(const cli_command *cmd, int argc, char **argv, void *state,
                    const cli_batch_opts *bo, cli_batch *b)
{
    static const char *const names[] = {"IN", "OUT"};
    const char **pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof *pos);
    if (!pos) {
        cli_error(cmd->name, "out of memory");
        return CLI_EXIT_FAIL;
    }
    int npos = 0;
    int rc = cli_parse_n(cmd, argc, argv, state, pos, &npos);
    if (!rc) {
        b->opt = *bo;
        rc = cli_batch_positionals(b, cmd->name, names, 2, 0, pos, npos, NULL);
    }
    free(pos);
    return rc;
}

/* The method the library ran, plus the planning policy when it was the FFT: "fft (measure)". */
static void format_method(const cli_common *co, const lumen_run_info *info, char *buf, size_t size)
{
    const char *name = lumen_method_name(info->method);
    if (info->method == LUMEN_METHOD_FFT)
        snprintf(buf, size, "%s (%s planning)", name,
                 co->fft_planning == LUMEN_FFT_MEASURE ? "measure" : "estimate");
    else
        snprintf(buf, size, "%s", name);
}

static void print_verbose(const void *state, const cli_common *co, const lumen_image *src,
                          const lumen_image *dst, const lumen_run_info *info, double ms)
{
    const cli_op *op = state;
    char detail[160] = "", method[48], to[16] = "";
    if (op->describe) op->describe(op->params, src, detail, sizeof detail);
    format_method(co, info, method, sizeof method);
    if (dst->dtype != src->dtype) snprintf(to, sizeof to, " -> %s", lumen_dtype_name(dst->dtype));
    fprintf(stderr,
            "lumen: %s: %lldx%lld %lldch %s%s, %s, device %s, isa %s, method %s, threads %d, "
            "%.3f ms\n",
            op->name, (long long)src->w, (long long)src->h, (long long)src->c,
            lumen_dtype_name(src->dtype), to, detail, info->device ? info->device : "?",
            info->isa ? info->isa : "?", method, info->threads, ms);
}

static lumen_status run(const void *state, lumen_context *ctx, const lumen_image *src,
                        const lumen_image *dst, lumen_run_info *info)
{
    const cli_op *op = state;
    return op->run(ctx, src, dst, op->params, info);
}

int cli_run_image_op(const cli_common *co, cli_batch *b, const cli_op *op)
{
    const cli_image_op image_op = {op->name, NULL, run, print_verbose, op};
    return cli_batch_run(b, co, &image_op);
}
