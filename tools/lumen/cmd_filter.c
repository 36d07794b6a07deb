/* `lumen filter`: 2-D correlation/convolution with a kernel from a file (lumen_filter2d). */
#include "args.h"
#include "cli.h"
#include "op.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
    "Usage: lumen filter IN OUT --kernel K.npy [options]\n"
    "       lumen filter IN... --output-dir DIR --kernel K.npy [options]\n"
    "\n"
    "Filters IN with an arbitrary kernel, as OpenCV's filter2D: correlation by\n"
    "default, dst(x,y) = sum k(i,j) * src(x+j-ax, y+i-ay). OUT keeps IN's dtype\n"
    "(unless --dtype) and channels; each channel is filtered independently. Formats by\n"
    "extension: .npy .png .jpg .jpeg .tif .tiff .webp .exr.\n"
    "\n"
    "Options:\n"
    "  --kernel FILE     kernel image, 2-D with one channel (an H x W .npy of u8, u16,\n"
    "                    f32 or f64), at most %d on a side (required)\n"
    "  --anchor X,Y      kernel point over the output pixel, 0-based; -1 on an axis is\n"
    "                    the centre of that axis, W/2 or H/2, as OpenCV's (-1,-1)\n"
    "                    (default: -1,-1)\n"
    "  --convolve        true convolution: flip the kernel (default: correlation)\n"
    "  --method M        auto|direct|separable|fft (default: auto). direct sums every\n"
    "                    tap; separable runs a row then a column pass (rank-1 kernels\n"
    "                    only); fft is a tiled FFT whose cost hardly grows with the\n"
    "                    kernel, for big kernels; auto picks the cheapest by a cost\n"
    "                    model calibrated once per machine (-v shows its choice)\n"
    "  --border B        reflect|constant|replicate|reflect101|wrap (default: reflect)\n"
    "  --value V         pixel value outside the image for --border constant (default: 0)\n";

static const char examples[] =
    "\n"
    "Examples:\n"
    "  lumen kernel sharpen.npy --kind sharpen\n"
    "  lumen filter photo.png sharp.png --kernel sharpen.npy --border replicate -v\n"
    "  lumen kernel streak.npy --kind motion --ksize 61\n"
    "  lumen filter photo.png streak.png --kernel streak.npy --method fft -v\n";

enum { F_KERNEL = CLI_FLAG_CMD, F_ANCHOR, F_CONVOLVE, F_METHOD, F_BORDER, F_VALUE };

static const cli_flag flags[] = {
    {"kernel", 0, 1, F_KERNEL}, {"anchor", 0, 1, F_ANCHOR}, {"convolve", 0, 0, F_CONVOLVE},
    {"method", 0, 1, F_METHOD}, {"border", 0, 1, F_BORDER}, {"value", 0, 1, F_VALUE},
    CLI_COMMON_FLAGS,           CLI_FFT_FLAGS,            CLI_BATCH_FLAGS,
    {NULL, 0, 0, 0}};

#define FILTER_METHODS                                                                      \
    (CLI_METHOD_BIT(LUMEN_METHOD_AUTO) | CLI_METHOD_BIT(LUMEN_METHOD_DIRECT) |              \
     CLI_METHOD_BIT(LUMEN_METHOD_SEPARABLE) | CLI_METHOD_BIT(LUMEN_METHOD_FFT))

typedef struct filter_params {
    float *kernel;  /* kh x kw row-major, owned */
    int kw, kh;
    lumen_filter_options opt;
} filter_params;

typedef struct filter_state {
    cli_common common;
    cli_batch_opts batch;
    const char *kernel_path;
    filter_params p;
} filter_state;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    filter_state *st = state;
    lumen_filter_options *o = &st->p.opt;
    switch (id) {
    case F_KERNEL: st->kernel_path = value; return 0;
    /* -1 per axis is the centre, as in OpenCV, the C API and the anchor descriptor. */
    case F_ANCHOR:
        return cli_arg_xy(name, value, -1, CLI_MAX_KSIZE - 1, &o->anchor_x, &o->anchor_y);
    case F_CONVOLVE: o->convolve = 1; return 0;
    case F_METHOD: return cli_arg_method(name, value, FILTER_METHODS, &o->method);
    case F_BORDER: return cli_arg_border(name, value, &o->border);
    case F_VALUE: return cli_arg_float(name, value, &o->border_value);
    default: return cli_image_flag(&st->common, &st->batch, id, name, value);
    }
}

/* Tap (y, x) of a single-channel kernel image of any dtype and strides, as float. */
static float kernel_at(const lumen_image *k, int64_t y, int64_t x)
{
    const int64_t off = y * k->stride_h + x * k->stride_w;
    return lumen_element_get((const char *)k->data + off * (int64_t)lumen_dtype_size(k->dtype),
                             k->dtype);
}

/* Rejects shapes the op cannot take, with a message naming the file. */
static int check_kernel_shape(const char *path, const lumen_image *k)
{
    if (k->c != 1) {
        cli_error(path, "kernel must be 2-D with one channel, got %lldx%lld with %lld channels",
                  (long long)k->w, (long long)k->h, (long long)k->c);
        return CLI_EXIT_FAIL;
    }
    if (k->w > CLI_MAX_KSIZE || k->h > CLI_MAX_KSIZE) {
        cli_error(path, "kernel is %lldx%lld, larger than the limit of %d on a side",
                  (long long)k->w, (long long)k->h, CLI_MAX_KSIZE);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* Converts k to a new row-major float array; NaN or inf taps are refused. */
static int kernel_to_float(const char *path, const lumen_image *k, float **out)
{
    float *f = malloc((size_t)(k->w * k->h) * sizeof *f);
    if (!f) {
        cli_error(path, "out of memory");
        return CLI_EXIT_FAIL;
    }
    for (int64_t y = 0; y < k->h; y++) {
        for (int64_t x = 0; x < k->w; x++) {
            float v = kernel_at(k, y, x);
            if (!isfinite(v)) {
                cli_error(path, "kernel has a non-finite value at row %lld, column %lld",
                          (long long)y, (long long)x);
                free(f);
                return CLI_EXIT_FAIL;
            }
            f[y * k->w + x] = v;
        }
    }
    *out = f;
    return 0;
}

static int read_kernel(const char *path, filter_params *p)
{
    lumen_image k = {0};
    lumen_status s = lumen_read_image(path, &k);
    if (s) return cli_lib_error(path, s);
    int rc = check_kernel_shape(path, &k);
    if (!rc) rc = kernel_to_float(path, &k, &p->kernel);
    if (!rc) {
        p->kw = (int)k.w;
        p->kh = (int)k.h;
    }
    lumen_image_free(&k);
    return rc;
}

/* An anchor outside the kernel is a command-line mistake, so it is caught before any work. */
static int check_anchor(const filter_params *p)
{
    const lumen_filter_options *o = &p->opt;
    if (o->anchor_x < p->kw && o->anchor_y < p->kh) return 0;
    cli_error("--anchor", "%d,%d is outside the %dx%d kernel (X < %d, Y < %d)", o->anchor_x,
              o->anchor_y, p->kw, p->kh, p->kw, p->kh);
    return CLI_EXIT_USAGE;
}

static lumen_status run(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                        const void *params, lumen_run_info *info)
{
    const filter_params *p = params;
    return lumen_filter2d(ctx, src, dst, p->kernel, p->kw, p->kh, &p->opt, info);
}

static void describe(const void *params, const lumen_image *src, char *buf, size_t size)
{
    const filter_params *p = params;
    const lumen_filter_options *o = &p->opt;
    (void)src;
    int ax = o->anchor_x < 0 ? p->kw / 2 : o->anchor_x;
    int ay = o->anchor_y < 0 ? p->kh / 2 : o->anchor_y;
    snprintf(buf, size, "kernel %dx%d, anchor %d,%d, %s, border %s", p->kw, p->kh, ax, ay,
             o->convolve ? "convolution" : "correlation", lumen_border_name(o->border));
}

int cmd_filter(int argc, char **argv)
{
    static const char *const names[] = {"IN", "OUT"};
    const cli_command cmd = {"filter", flags, on_flag, names, 2, 1};
    filter_state st = {{0}, cli_batch_opts_default(), NULL,
                       {NULL, 0, 0, lumen_filter_options_default()}};
    cli_batch b = {0};
    int rc = cli_image_parse(&cmd, argc, argv, &st, &st.batch, &b);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_FFT | CLI_HELP_BATCH, examples);
    if (!rc && !st.kernel_path) {
        cli_error("filter", "missing --kernel (see 'lumen filter --help')");
        rc = CLI_EXIT_USAGE;
    }
    /* Outputs and the device are checked before the kernel or any image is read. */
    if (!rc) rc = cli_batch_prepare(&b);
    if (!rc) rc = cli_common_check(&st.common);
    if (!rc) rc = read_kernel(st.kernel_path, &st.p);
    if (!rc) rc = check_anchor(&st.p);
    if (!rc) {
        const cli_op op = {"filter", run, describe, &st.p};
        rc = cli_run_image_op(&st.common, &b, &op);
    }
    free(st.p.kernel);
    cli_batch_free(&b);
    return rc;
}
