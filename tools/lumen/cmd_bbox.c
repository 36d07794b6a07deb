/* `lumen mask-bbox`: the bounding box of each mask's foreground (lumen_mask_bbox, docs/crop.md),
 * one line per file, for scripts: what `lumen crop` would start from. */
#include "args.h"
#include "cli.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: lumen mask-bbox MASK... [--threshold T] [--json] [options]\n"
    "\n"
    "Prints the box of the pixels where any channel of MASK is > threshold, half-open\n"
    "(x0 <= x < x1, y0 <= y < y1), one line per file: 'MASK x0 y0 x1 y1'; with --json one\n"
    "object per line: {\"file\": ..., \"box\": [x0, y0, x1, y1], \"empty\": false}. A mask with\n"
    "no foreground gives the empty box 0 0 0 0 (MONAI's), not an error. 'lumen crop' cuts\n"
    "images to such boxes (docs/crop.md). (C: lumen_mask_bbox.)\n"
    "\n"
    "Options:\n"
    "  --threshold T     foreground is mask > T (f32 masks compare in float32; default: 0)\n"
    "  --json            one JSON object per line\n";

enum { F_THRESHOLD = CLI_FLAG_CMD, F_JSON };

static const cli_flag flags[] = {
    {"threshold", 0, 1, F_THRESHOLD}, {"json", 0, 0, F_JSON}, CLI_COMMON_FLAGS, {NULL, 0, 0, 0}};

typedef struct bbox_cli {
    double threshold;
    int json;
    cli_common common;
} bbox_cli;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    bbox_cli *b = state;
    if (id == F_THRESHOLD) return cli_arg_real(name, value, -DBL_MAX, DBL_MAX, &b->threshold);
    if (id == F_JSON) {
        b->json = 1;
        return 0;
    }
    const int rc = cli_common_flag(&b->common, id, name, value);
    return rc == -1 ? CLI_EXIT_USAGE : rc;
}

static void print_box(const bbox_cli *b, const char *path, const lumen_box *r)
{
    if (b->json) {
        printf("{\"file\": ");
        cli_json_string(stdout, path);
        printf(", \"box\": [%lld, %lld, %lld, %lld], \"empty\": %s}\n", (long long)r->x0,
               (long long)r->y0, (long long)r->x1, (long long)r->y1,
               lumen_box_empty(r) ? "true" : "false");
    } else {
        printf("%s %lld %lld %lld %lld\n", path, (long long)r->x0, (long long)r->y0,
               (long long)r->x1, (long long)r->y1);
    }
}

/* One file: read, scan, print. A file that cannot be read is reported and the rest go on. */
static int one_mask(const bbox_cli *b, lumen_context *ctx, const char *path)
{
    lumen_image m;
    lumen_status s = lumen_read_image(path, &m);
    if (s) return cli_lib_error(path, s);
    lumen_box r;
    lumen_run_info info;
    const double t0 = cli_now_ms();
    s = lumen_mask_bbox(ctx, &m, b->threshold, &r, &info);
    if (!s) {
        print_box(b, path, &r);
        if (b->common.verbose)
            fprintf(stderr, "lumen: mask-bbox: %s %lldx%lldx%lld %s, threads %d, %.3f ms\n", path,
                    (long long)m.h, (long long)m.w, (long long)m.c, lumen_dtype_name(m.dtype),
                    info.threads, cli_now_ms() - t0);
    }
    lumen_image_free(&m);
    return s ? cli_lib_error(path, s) : 0;
}

int cmd_mask_bbox(int argc, char **argv)
{
    static const char *const names[] = {"MASK"};
    const cli_command cmd = {"mask-bbox", flags, on_flag, names, 1, 1};
    bbox_cli b = {0};
    const char **pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof *pos);
    if (!pos) {
        cli_error("mask-bbox", "out of memory");
        return CLI_EXIT_FAIL;
    }
    int npos = 0;
    int rc = cli_parse_n(&cmd, argc, argv, &b, pos, &npos);
    if (rc == CLI_HELP) {
        fputs(usage, stdout);
        cli_print_common_help(0);
        rc = CLI_EXIT_OK;
    } else if (!rc && npos < 1) {
        cli_error("mask-bbox", "missing MASK (see 'lumen mask-bbox --help')");
        rc = CLI_EXIT_USAGE;
    } else if (!rc) {
        lumen_context *ctx = NULL;
        rc = cli_context_create(&b.common, &ctx);
        for (int i = 0, r; ctx && i < npos; i++)
            if ((r = one_mask(&b, ctx, pos[i]))) rc = r;
        lumen_context_destroy(ctx);
    }
    free(pos);
    return rc;
}
