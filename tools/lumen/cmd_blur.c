/* `lumen blur`: Gaussian blur of an image file (lumen_gaussian_blur, cv2.GaussianBlur). */
#include "args.h"
#include "cli.h"
#include "op.h"

#include <stdio.h>

/* Sigma above this is surely a typo; it would derive kernels of thousands of taps. */
#define BLUR_MAX_SIGMA 1000.0

static const char usage[] =
    "Usage: lumen blur IN OUT (--sigma S | --ksize K[,KY]) [options]\n"
    "\n"
    "Gaussian blur, as OpenCV's GaussianBlur. OUT keeps IN's dtype and channels;\n"
    "each channel is blurred independently. Formats by extension: .npy .png .jpg\n"
    ".jpeg .tif .tiff.\n"
    "\n"
    "Options:\n"
    "  --sigma S         horizontal sigma in pixels, > 0 (default: derived from --ksize)\n"
    "  --sigma-y S       vertical sigma, > 0 (default: --sigma)\n"
    "  --ksize K[,KY]    odd kernel width[,height]; KY defaults to K; 0 derives the\n"
    "                    size from sigma (default: 0)\n"
    "  --border B        reflect|constant|replicate|reflect101|wrap (default: reflect)\n"
    "  --value V         pixel value outside the image for --border constant (default: 0)\n"
    "  --threads N       worker threads, 1-1024 (default: $LUMEN_NUM_THREADS, else all CPUs)\n"
    "  --no-simd         use the scalar reference path (for testing)\n"
    "  -v, --verbose     print op, shape, device, isa, method, threads and time to stderr\n"
    "  -h, --help        show this help\n"
    "\n"
    "Example:\n"
    "  lumen blur photo.png soft.png --sigma 2.5 --border replicate -v\n";

enum { F_SIGMA = CLI_FLAG_CMD, F_SIGMA_Y, F_KSIZE, F_BORDER, F_VALUE };

static const cli_flag flags[] = {
    {"sigma", 0, 1, F_SIGMA},   {"sigma-y", 0, 1, F_SIGMA_Y}, {"ksize", 0, 1, F_KSIZE},
    {"border", 0, 1, F_BORDER}, {"value", 0, 1, F_VALUE},     CLI_COMMON_FLAGS,
    {NULL, 0, 0, 0}};

typedef struct blur_params {
    int kx, ky;         /* 0: derived from sigma */
    double sx, sy;      /* 0: derived from ksize / sx */
    lumen_border border;
    float value;
} blur_params;

typedef struct blur_state {
    cli_common common;
    blur_params p;
} blur_state;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    blur_state *st = state;
    switch (id) {
    case F_SIGMA: return cli_arg_positive(name, value, BLUR_MAX_SIGMA, &st->p.sx);
    case F_SIGMA_Y: return cli_arg_positive(name, value, BLUR_MAX_SIGMA, &st->p.sy);
    case F_KSIZE: return cli_arg_ksize(name, value, 1, 1, &st->p.kx, &st->p.ky);
    case F_BORDER: return cli_arg_border(name, value, &st->p.border);
    case F_VALUE: return cli_arg_float(name, value, &st->p.value);
    default: return cli_common_flag(&st->common, id, name, value);
    }
}

/* The library derives a missing size from sigma and a missing sigma from the size, not both. */
static int check_params(const blur_params *p)
{
    if ((p->kx == 0) != (p->ky == 0)) {
        cli_error("--ksize", "give both sizes or 0 for both, got %d,%d", p->kx, p->ky);
        return CLI_EXIT_USAGE;
    }
    if (p->sx == 0 && p->kx == 0) {
        cli_error("blur", "give --sigma or --ksize (see 'lumen blur --help')");
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static lumen_status run(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const void *params, lumen_run_info *info)
{
    const blur_params *p = params;
    return lumen_gaussian_blur(ctx, src, dst, p->kx, p->ky, p->sx, p->sy, p->border, p->value,
                               info);
}

/* "auto" when the library derives sigma from the kernel size. */
static void format_sigma(char *buf, size_t size, double sigma)
{
    if (sigma > 0)
        snprintf(buf, size, "%g", sigma);
    else
        snprintf(buf, size, "auto");
}

static void describe(const void *params, const lumen_image *src, char *buf, size_t size)
{
    const blur_params *p = params;
    double sy = p->sy > 0 ? p->sy : p->sx;
    char sx_text[32], sy_text[32];
    format_sigma(sx_text, sizeof sx_text, p->sx);
    format_sigma(sy_text, sizeof sy_text, sy);
    /* Show the sizes the library will derive, so -v tells the whole story. */
    int kx = p->kx ? p->kx : lumen_gaussian_ksize(p->sx, src->dtype);
    int ky = p->ky ? p->ky : lumen_gaussian_ksize(sy, src->dtype);
    snprintf(buf, size, "sigma %s,%s, ksize %dx%d, border %s", sx_text, sy_text, kx, ky,
             lumen_border_name(p->border));
}

int cmd_blur(int argc, char **argv)
{
    static const char *const names[] = {"IN", "OUT"};
    const cli_command cmd = {"blur", flags, on_flag, names, 2};
    blur_state st = {{0}, {0, 0, 0.0, 0.0, LUMEN_BORDER_REFLECT, 0.0f}};
    const char *pos[2];
    int rc = cli_parse(&cmd, argc, argv, &st, pos);
    if (rc == CLI_HELP) return cli_print_usage(usage);
    if (rc || (rc = check_params(&st.p))) return rc;
    const cli_op op = {"blur", run, describe, &st.p};
    return cli_run_image_op(&st.common, pos[0], pos[1], &op);
}
