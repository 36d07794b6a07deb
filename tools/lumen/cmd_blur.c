/* `lumen blur`: Gaussian blur of an image file (lumen_gaussian_blur_ex, cv2.GaussianBlur). */
#include "args.h"
#include "cli.h"
#include "op.h"

#include <stdio.h>

/* Sigma above this is surely a typo; it would derive kernels of thousands of taps. */
#define BLUR_MAX_SIGMA 1000.0

static const char usage[] =
    "Usage: lumen blur IN OUT (--sigma S | --ksize K[,KY]) [options]\n"
    "       lumen blur IN... --output-dir DIR (--sigma S | --ksize K[,KY]) [options]\n"
    "\n"
    "Gaussian blur, as OpenCV's GaussianBlur. OUT keeps IN's dtype (unless --dtype) and\n"
    "channels; each channel is blurred independently. Formats by extension: .npy .png\n"
    ".jpg .jpeg .tif .tiff .webp .exr.\n"
    "\n"
    "Options:\n"
    "  --sigma S         horizontal sigma in pixels, 0-1000; 0 or absent derives it from\n"
    "                    --ksize as OpenCV does: 0.3*((K-1)/2-1)+0.8\n"
    "  --sigma-y S       vertical sigma, 0-1000 (default, and 0: --sigma; derived from KY\n"
    "                    when --sigma is too)\n"
    "  --ksize K[,KY]    odd kernel width[,height]; KY defaults to K; 0 derives the\n"
    "                    size from sigma (default: 0). --precision fast ignores it,\n"
    "                    except to derive sigma when --sigma is absent\n"
    "  --precision P     exact|fast (default: exact). exact applies OpenCV's kernel;\n"
    "                    fast is a recursive approximation whose cost does not grow\n"
    "                    with sigma, for big sigmas; its error bound is documented in\n"
    "                    docs/gaussian-fast.md\n"
    "  --method M        auto|separable|fft, for --precision exact only (default:\n"
    "                    auto: the cheaper of the two by the library's cost model;\n"
    "                    fft pays off for big kernels; -v shows the choice)\n"
    "  --border B        reflect|constant|replicate|reflect101|wrap (default: reflect)\n"
    "  --value V         pixel value outside the image for --border constant (default: 0)\n";

static const char examples[] =
    "\n"
    "Examples:\n"
    "  lumen blur photo.png soft.png --sigma 2.5 --border replicate -v\n"
    "  lumen blur photo.png haze.png --sigma 40 --precision fast -v\n"
    "  lumen blur shots/ --output-dir soft --sigma 2 --jobs 2 --json > run.json\n"
    "  lumen blur - - --sigma 2 --format png < in.png > soft.png\n";

enum { F_SIGMA = CLI_FLAG_CMD, F_SIGMA_Y, F_KSIZE, F_PRECISION, F_METHOD, F_BORDER, F_VALUE };

static const cli_flag flags[] = {
    {"sigma", 0, 1, F_SIGMA},         {"sigma-y", 0, 1, F_SIGMA_Y}, {"ksize", 0, 1, F_KSIZE},
    {"precision", 0, 1, F_PRECISION}, {"method", 0, 1, F_METHOD},   {"border", 0, 1, F_BORDER},
    {"value", 0, 1, F_VALUE},         CLI_COMMON_FLAGS,             CLI_FFT_FLAGS,
    CLI_BATCH_FLAGS,                  {NULL, 0, 0, 0}};

#define BLUR_METHODS                                                                        \
    (CLI_METHOD_BIT(LUMEN_METHOD_AUTO) | CLI_METHOD_BIT(LUMEN_METHOD_SEPARABLE) |           \
     CLI_METHOD_BIT(LUMEN_METHOD_FFT))

typedef struct blur_state {
    cli_common common;
    cli_batch_opts batch;
    lumen_gaussian_options p; /* ksize 0: derived from sigma; sigma 0: derived from ksize */
    int method_given;         /* --method seen: refused with --precision fast */
} blur_state;

static int parse_precision(const char *name, const char *value, lumen_precision *out)
{
    /* Order matches lumen_precision, so the index is the enum value. */
    static const char *const names[] = {"exact", "fast"};
    int i;
    if (cli_arg_choice(name, value, names, 2, &i)) return CLI_EXIT_USAGE;
    *out = i ? LUMEN_PRECISION_FAST : LUMEN_PRECISION_EXACT;
    return 0;
}

static int on_flag(void *state, int id, const char *name, const char *value)
{
    blur_state *st = state;
    lumen_gaussian_options *p = &st->p;
    switch (id) {
    /* 0 is OpenCV's and the Python API's "derive sigma from the kernel size". */
    case F_SIGMA: return cli_arg_real(name, value, 0, BLUR_MAX_SIGMA, &p->sigma_x);
    case F_SIGMA_Y: return cli_arg_real(name, value, 0, BLUR_MAX_SIGMA, &p->sigma_y);
    case F_KSIZE: return cli_arg_ksize(name, value, 1, 1, &p->ksize_x, &p->ksize_y);
    case F_PRECISION: return parse_precision(name, value, &p->precision);
    case F_METHOD:
        st->method_given = 1;
        return cli_arg_method(name, value, BLUR_METHODS, &p->method);
    case F_BORDER: return cli_arg_border(name, value, &p->border);
    case F_VALUE: return cli_arg_float(name, value, &p->border_value);
    default: return cli_image_flag(&st->common, &st->batch, id, name, value);
    }
}

/* The library derives a missing size from sigma and a missing sigma from the size, not both. */
static int check_params(const blur_state *st)
{
    const lumen_gaussian_options *p = &st->p;
    if ((p->ksize_x == 0) != (p->ksize_y == 0)) {
        cli_error("--ksize", "give both sizes or 0 for both, got %d,%d", p->ksize_x, p->ksize_y);
        return CLI_EXIT_USAGE;
    }
    if (p->sigma_x == 0 && p->ksize_x == 0) {
        cli_error("blur", "give --sigma S > 0 or --ksize K > 0 (see 'lumen blur --help')");
        return CLI_EXIT_USAGE;
    }
    if (st->method_given && p->precision == LUMEN_PRECISION_FAST) {
        cli_error("--method", "applies to --precision exact only; fast always runs the "
                              "recursive filter");
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static lumen_status run(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const void *params, lumen_run_info *info)
{
    return lumen_gaussian_blur_ex(ctx, src, dst, params, info);
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
    const lumen_gaussian_options *p = params;
    double sy = p->sigma_y > 0 ? p->sigma_y : p->sigma_x;
    char sx_text[32], sy_text[32];
    format_sigma(sx_text, sizeof sx_text, p->sigma_x);
    format_sigma(sy_text, sizeof sy_text, sy);
    if (p->precision == LUMEN_PRECISION_FAST) {
        snprintf(buf, size, "sigma %s,%s, precision fast, border %s", sx_text, sy_text,
                 lumen_border_name(p->border));
        return;
    }
    /* Show the sizes the library will derive, so -v tells the whole story. */
    int kx = p->ksize_x ? p->ksize_x : lumen_gaussian_ksize(p->sigma_x, src->dtype);
    int ky = p->ksize_y ? p->ksize_y : lumen_gaussian_ksize(sy, src->dtype);
    snprintf(buf, size, "sigma %s,%s, ksize %dx%d, precision exact, border %s", sx_text, sy_text,
             kx, ky, lumen_border_name(p->border));
}

int cmd_blur(int argc, char **argv)
{
    static const char *const names[] = {"IN", "OUT"};
    const cli_command cmd = {"blur", flags, on_flag, names, 2, 1};
    blur_state st = {{0}, cli_batch_opts_default(), lumen_gaussian_options_default(), 0};
    cli_batch b = {0};
    int rc = cli_image_parse(&cmd, argc, argv, &st, &st.batch, &b);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_FFT | CLI_HELP_BATCH, examples);
    if (!rc && !(rc = check_params(&st)) && !(rc = cli_batch_prepare(&b))) {
        const cli_op op = {"blur", run, describe, &st.p};
        rc = cli_run_image_op(&st.common, &b, &op);
    }
    cli_batch_free(&b);
    return rc;
}
