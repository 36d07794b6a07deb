/* `lumen`: command-line front end of the lumen library. Dispatches to one subcommand. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* A bounded OpenMP spin unless the user chose a wait policy: set before libgomp reads its
 * environment (include/lumen.h, README "Sharing the CPU with your program"). */
LUMEN_SHARE_CPU_AT_START;

static const char usage_head[] =
    "Usage: lumen COMMAND [ARGS] [--help]\n"
    "\n"
    "Fast image convolution and filtering. Images are read and written by extension\n"
    "(.npy .png .jpg .jpeg .tif .tiff .webp .exr); outputs keep the input's dtype (unless\n"
    "--dtype) and channels. The image commands (filter, blur, box, film and the image ops\n"
    "below) also run on many files: lumen CMD IN... --output-dir DIR, where IN may be a\n"
    "folder; '-' is stdin or stdout (see 'lumen blur --help').\n"
    "\n"
    "Commands:\n"
    "  info      version, CPU features, threads and devices (--json)\n"
    "  filter    filter IN with a kernel file (cv2.filter2D)\n"
    "  blur      Gaussian blur (cv2.GaussianBlur)\n"
    "  box       box blur or box sum (cv2.blur, cv2.boxFilter)\n"
    "  film      a film stock's look: bloom, halation, tone, grain (Phos's formulas);\n"
    "            --compare writes before | after\n"
    "  studio    the film studio: a local web page with sliders and a device switch\n"
    "            (python3 -m lumen.studio)\n"
    "  bench     time the ops in-process on a generated image (--json);\n"
    "            'bench conv' times NCHW conv2d layers (GFLOP/s)\n"
    "\n"
    "Utilities:\n"
    "  scene     write a deterministic synthetic test image\n"
    "  kernel    write a named f32 kernel (sharpen, edge, emboss, motion, gaussian)\n"
    "  mask-bbox print the box of each mask's foreground (lumen crop cuts to it)\n";

/* After the op commands, which come from the descriptor table. */
static const char usage_tail[] =
    "\n"
    "Options:\n"
    "  -h, --help      show this help; 'lumen COMMAND --help' shows a command's flags\n"
    "  -V, --version   print the version\n"
    "\n"
    "Environment:\n"
    "  LUMEN_NUM_THREADS   default worker threads (--threads wins; a bad value is bad usage)\n"
    "  LUMEN_DEVICE        default device (--device wins)\n"
    "  LUMEN_MAX_PIXELS    largest input in pixels, 0: no limit (--max-pixels wins)\n"
    "  LUMEN_LOG           library log level: error|warn|info|debug (default: warn)\n"
    "  OMP_WAIT_POLICY     passive|active; unset (and no GOMP_SPINCOUNT): idle threads\n"
    "                      spin a few microseconds, then sleep ('lumen info' shows it)\n"
    "\n"
    "Exit status: 0 success, 1 a read, write or operation failed (in a batch: any file),\n"
    "2 bad usage (flags, an unknown device, an output path no writer takes).\n"
    "\n"
    "Examples:\n"
    "  lumen scene scene.png && lumen blur scene.png soft.png --sigma 3 -v\n"
    "  lumen blur photos/ --output-dir soft --sigma 3 --json\n";

/* The op commands: one per descriptor (include/lumen_ops.h), flags named as the Python keywords. */
static void print_op_commands(void)
{
    printf("\nOps (from the op descriptors; flags named as the Python keywords):\n");
    for (int i = 0; i < lumen_op_count(); i++) {
        const lumen_op_desc *op = lumen_op_at(i);
        printf("  %-15s", op->command);
        cli_print_wrapped(op->summary, 17, 17);
    }
}

static int print_usage(void)
{
    fputs(usage_head, stdout);
    print_op_commands();
    fputs(usage_tail, stdout);
    return CLI_EXIT_OK;
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {{"info", cmd_info},
                                   {"filter", cmd_filter},
                                   {"blur", cmd_blur},
                                   {"box", cmd_box},
                                   {"film", cmd_film},
                                   {"studio", cmd_studio},
                                   {"bench", cmd_bench},
                                   {"scene", cmd_scene},
                                   {"kernel", cmd_kernel},
                                   {"mask-bbox", cmd_mask_bbox},
                                   {NULL, NULL}};

static const command *find_command(const char *name)
{
    for (const command *c = commands; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}

/* A hand-written command, else an op of the descriptor table (its command or op name). */
static int run_command(const char *name, int argc, char **argv)
{
    const command *c = find_command(name);
    if (c) return c->run(argc, argv);
    const lumen_op_desc *op = lumen_op_find(name);
    if (op) return cmd_op(op, argc, argv);
    cli_error(name, "unknown command (see 'lumen --help')");
    return CLI_EXIT_USAGE;
}

/* "lumen help CMD" is the same as "lumen CMD --help". */
static int help_command(int argc, char **argv)
{
    if (argc < 2) return print_usage();
    char help_flag[] = "--help";
    char *sub_argv[] = {argv[1], help_flag, NULL};
    return run_command(argv[1], 2, sub_argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("usage", "missing command (see 'lumen --help')");
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) return print_usage();
    if (!strcmp(name, "-V") || !strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("lumen %s\n", lumen_version());
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "help")) return help_command(argc - 1, argv + 1);
    return run_command(name, argc - 1, argv + 1);
}
