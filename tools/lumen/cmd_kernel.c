/* `lumen kernel`: writes a named f32 kernel for `lumen filter` (a utility for demos and tests). */
#include "args.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: lumen kernel OUT [--kind K] [--ksize N]\n"
    "\n"
    "Utility: writes a single-channel f32 kernel to OUT for 'lumen filter --kernel'.\n"
    "Use .npy (or .tif); PNG and JPEG cannot hold f32.\n"
    "Kinds:\n"
    "  sharpen   3x3, 5 at the centre, -1 at the 4 neighbours (sum 1)\n"
    "  edge      3x3 Laplacian, 8 at the centre, -1 around (sum 0)\n"
    "  emboss    3x3, diagonal relief (sum 1)\n"
    "  motion    N x N, 1/N along the main diagonal\n"
    "  gaussian  N x N outer product of getGaussianKernel(N, sigma from N):\n"
    "            rank 1, so --method auto may run it separably\n"
    "\n"
    "Options:\n"
    "  --kind K          sharpen|edge|emboss|motion|gaussian (default: sharpen)\n"
    "  --ksize N         size of motion (default 9) and gaussian (default 7), 1-%d\n"
    "  -h, --help        show this help\n"
    "\n"
    "Example:\n"
    "  lumen kernel out/motion.npy --kind motion --ksize 15\n";

/* N x N kernels: the largest square the library's area limit takes. */
#define KERNEL_MAX_SIDE 4096
_Static_assert(KERNEL_MAX_SIDE * KERNEL_MAX_SIDE == LUMEN_MAX_KAREA, "square of LUMEN_MAX_KAREA");

enum { F_KIND = CLI_FLAG_CMD, F_KSIZE };

static const cli_flag flags[] = {
    {"kind", 0, 1, F_KIND}, {"ksize", 0, 1, F_KSIZE}, {NULL, 0, 0, 0}};

enum { K_SHARPEN, K_EDGE, K_EMBOSS, K_MOTION, K_GAUSSIAN, K_COUNT };
static const char *const kind_names[] = {"sharpen", "edge", "emboss", "motion", "gaussian"};

static const float fixed_taps[3][9] = {{0, -1, 0, -1, 5, -1, 0, -1, 0},
                                       {-1, -1, -1, -1, 8, -1, -1, -1, -1},
                                       {-2, -1, 0, -1, 1, 1, 0, 1, 2}};

typedef struct kernel_spec {
    int kind;
    int ksize;  /* 0 until --ksize is seen */
} kernel_spec;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    kernel_spec *k = state;
    if (id == F_KIND) return cli_arg_choice(name, value, kind_names, K_COUNT, &k->kind);
    if (id == F_KSIZE) return cli_arg_int(name, value, 1, KERNEL_MAX_SIDE, &k->ksize);
    return CLI_EXIT_USAGE;
}

/* Rank 1 on purpose: the outer product of OpenCV's 1-D Gaussian with itself. */
static int fill_gaussian(float *t, int n)
{
    float *g = malloc((size_t)n * sizeof *g);
    if (!g) {
        cli_error("kernel", "out of memory");
        return CLI_EXIT_FAIL;
    }
    lumen_status s = lumen_gaussian_kernel(n, 0.0, g);
    for (int i = 0; !s && i < n * n; i++) t[i] = g[i / n] * g[i % n];
    free(g);
    return s ? cli_lib_error("kernel", s) : 0;
}

/* Fills the zeroed n x n kernel t. */
static int fill_taps(const kernel_spec *k, int n, float *t)
{
    switch (k->kind) {
    case K_MOTION:
        for (int i = 0; i < n; i++) t[i * n + i] = 1.0f / (float)n;
        return 0;
    case K_GAUSSIAN: return fill_gaussian(t, n);
    default: memcpy(t, fixed_taps[k->kind], sizeof fixed_taps[0]); return 0;
    }
}

static int kernel_size(const kernel_spec *k)
{
    if (k->kind < K_MOTION) return 3;
    if (k->ksize) return k->ksize;
    return k->kind == K_MOTION ? 9 : 7;
}

int cmd_kernel(int argc, char **argv)
{
    static const char *const names[] = {"OUT"};
    const cli_command cmd = {"kernel", flags, on_flag, names, 1, 0};
    kernel_spec k = {K_SHARPEN, 0};
    const char *pos[1];
    int rc = cli_parse(&cmd, argc, argv, &k, pos);
    if (rc == CLI_HELP) return printf(usage, KERNEL_MAX_SIDE) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    if (rc) return rc;
    if (k.kind < K_MOTION && k.ksize && k.ksize != 3) {
        cli_error("--ksize", "%s is always 3x3", kind_names[k.kind]);
        return CLI_EXIT_USAGE;
    }
    int n = kernel_size(&k);
    float *taps = calloc((size_t)n * (size_t)n, sizeof *taps);
    if (!taps) {
        cli_error("kernel", "out of memory");
        return CLI_EXIT_FAIL;
    }
    rc = fill_taps(&k, n, taps);
    if (!rc) {
        lumen_image img = lumen_image_nhwc(taps, LUMEN_F32, 1, n, n, 1);
        lumen_status s = lumen_write_image(pos[0], &img);
        if (s) rc = cli_lib_error(pos[0], s);
    }
    free(taps);
    return rc;
}
