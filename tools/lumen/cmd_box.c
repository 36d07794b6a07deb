/* `lumen box`: box blur of an image file (lumen_box_blur, cv2.blur / cv2.boxFilter). */
#include "args.h"
#include "cli.h"
#include "op.h"

#include <stdio.h>

static const char usage[] =
    "Usage: lumen box IN OUT --ksize K[,KY] [options]\n"
    "       lumen box IN... --output-dir DIR --ksize K[,KY] [options]\n"
    "\n"
    "Box blur: the mean of a K x KY window (cv2.blur), or its plain sum with\n"
    "--no-normalize (cv2.boxFilter, normalize=False). OUT keeps IN's dtype (unless\n"
    "--dtype) and channels; each channel is filtered independently. Formats by\n"
    "extension: .npy .png .jpg .jpeg .tif .tiff .webp .exr.\n"
    "\n"
    "Options:\n"
    "  --ksize K[,KY]    window width[,height], 1-%d; KY defaults to K (required)\n"
    "  --no-normalize    sum the window instead of averaging it (default: average)\n"
    "  --border B        reflect|constant|replicate|reflect101|wrap (default: reflect)\n"
    "  --value V         pixel value outside the image for --border constant (default: 0)\n"
    "  --fft-planning P  estimate|measure, as on filter and blur; no effect today:\n"
    "                    box always runs the separable path, never the FFT\n";

static const char examples[] =
    "\n"
    "Example:\n"
    "  lumen box scan.tif smooth.tif --ksize 9,3 --border reflect101 -v\n";

enum { F_KSIZE = CLI_FLAG_CMD, F_NO_NORMALIZE, F_BORDER, F_VALUE };

static const cli_flag flags[] = {
    {"ksize", 0, 1, F_KSIZE}, {"no-normalize", 0, 0, F_NO_NORMALIZE}, {"border", 0, 1, F_BORDER},
    {"value", 0, 1, F_VALUE}, CLI_COMMON_FLAGS, CLI_FFT_FLAGS, CLI_BATCH_FLAGS, {NULL, 0, 0, 0}};

typedef struct box_params {
    int kx, ky;  /* 0 until --ksize is seen */
    int normalize;
    lumen_border border;
    float value;
} box_params;

typedef struct box_state {
    cli_common common;
    cli_batch_opts batch;
    box_params p;
} box_state;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    box_state *st = state;
    switch (id) {
    case F_KSIZE: return cli_arg_ksize(name, value, 1, 0, &st->p.kx, &st->p.ky);
    case F_NO_NORMALIZE: st->p.normalize = 0; return 0;
    case F_BORDER: return cli_arg_border(name, value, &st->p.border);
    case F_VALUE: return cli_arg_float(name, value, &st->p.value);
    default: return cli_image_flag(&st->common, &st->batch, id, name, value);
    }
}

static lumen_status run(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const void *params, lumen_run_info *info)
{
    const box_params *p = params;
    return lumen_box_blur(ctx, src, dst, p->kx, p->ky, p->normalize, p->border, p->value, info);
}

static void describe(const void *params, const lumen_image *src, char *buf, size_t size)
{
    const box_params *p = params;
    (void)src;
    snprintf(buf, size, "ksize %dx%d, %s, border %s", p->kx, p->ky,
             p->normalize ? "mean" : "sum", lumen_border_name(p->border));
}

int cmd_box(int argc, char **argv)
{
    static const char *const names[] = {"IN", "OUT"};
    const cli_command cmd = {"box", flags, on_flag, names, 2, 1};
    box_state st = {{0}, cli_batch_opts_default(), {0, 0, 1, LUMEN_BORDER_REFLECT, 0.0f}};
    cli_batch b = {0};
    int rc = cli_image_parse(&cmd, argc, argv, &st, &st.batch, &b);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_BATCH, examples);
    if (!rc && st.p.kx == 0) {
        cli_error("box", "missing --ksize (see 'lumen box --help')");
        rc = CLI_EXIT_USAGE;
    }
    if (!rc && !(rc = cli_batch_prepare(&b))) {
        const cli_op op = {"box", run, describe, &st.p};
        rc = cli_run_image_op(&st.common, &b, &op);
    }
    cli_batch_free(&b);
    return rc;
}
