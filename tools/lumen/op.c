/* The read -> filter -> write pipeline shared by filter, blur and box. */
#include "op.h"

#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A contiguous HWC buffer shaped and typed like src, so OUT keeps IN's dtype and channels. */
static int alloc_like(const lumen_image *src, lumen_image *dst)
{
    size_t count = (size_t)src->h * (size_t)src->w * (size_t)src->c;
    void *data = malloc(count * lumen_dtype_size(src->dtype));
    if (!data) return -1;
    *dst = lumen_image_nhwc(data, src->dtype, 1, src->h, src->w, src->c);
    return 0;
}

/* The method the library ran, plus the planning policy when it was the FFT: "fft (measure)". */
static void format_method(const cli_common *co, const lumen_run_info *info, char *buf,
                          size_t size)
{
    const char *name = lumen_method_name(info->method);
    if (info->method == LUMEN_METHOD_FFT)
        snprintf(buf, size, "%s (%s planning)", name,
                 co->fft_planning == LUMEN_FFT_MEASURE ? "measure" : "estimate");
    else
        snprintf(buf, size, "%s", name);
}

static void print_verbose(const cli_common *co, const cli_op *op, const lumen_image *src,
                          const lumen_run_info *info, double ms)
{
    char detail[160] = "", method[48];
    if (op->describe) op->describe(op->params, src, detail, sizeof detail);
    format_method(co, info, method, sizeof method);
    fprintf(stderr,
            "lumen: %s: %lldx%lld %lldch %s, %s, device %s, isa %s, method %s, threads %d, "
            "%.3f ms\n",
            op->name, (long long)src->w, (long long)src->h, (long long)src->c,
            lumen_dtype_name(src->dtype), detail, info->device ? info->device : "?",
            info->isa ? info->isa : "?", method, info->threads, ms);
}

/* Filters src into a new buffer and writes it; src is already read. */
static int filter_and_write(lumen_context *ctx, const cli_common *co, const lumen_image *src,
                            const char *out_path, const cli_op *op)
{
    lumen_image dst;
    if (alloc_like(src, &dst)) {
        cli_error(op->name, "out of memory for a %lldx%lldx%lld image", (long long)src->w,
                  (long long)src->h, (long long)src->c);
        return CLI_EXIT_FAIL;
    }
    lumen_run_info info = {LUMEN_METHOD_AUTO, NULL, NULL, 0, NULL};
    double t0 = cli_now_ms();
    lumen_status s = op->run(ctx, src, &dst, op->params, &info);
    double ms = cli_now_ms() - t0;
    int rc = CLI_EXIT_OK;
    if (s) {
        rc = cli_lib_error(op->name, s);
    } else {
        if (co->verbose) print_verbose(co, op, src, &info, ms);
        if ((s = lumen_write_image(out_path, &dst))) rc = cli_lib_error(out_path, s);
    }
    free(dst.data);
    return rc;
}

int cli_run_image_op(const cli_common *co, const char *in_path, const char *out_path,
                     const cli_op *op)
{
    lumen_context *ctx = NULL;
    int rc = cli_context_create(co, &ctx);
    if (rc) return rc;
    lumen_image src = {0};
    lumen_status s = lumen_read_image(in_path, &src);
    if (s)
        rc = cli_lib_error(in_path, s);
    else
        rc = filter_and_write(ctx, co, &src, out_path, op);
    lumen_image_free(&src);
    lumen_context_destroy(ctx);
    return rc;
}
