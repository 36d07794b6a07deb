/*
 * Batches for the image op commands (filter, blur, box and the descriptor-made image ops): one
 * or many inputs (files or folders), outputs by name or into --output-dir, '-' for stdin and
 * stdout, worker threads (--jobs) with one lumen context each, a progress bar, a --json record
 * per file, and a summary. Every output path is checked before any input is read.
 *
 * A command parses its flags (handing the batch flags to cli_batch_flag), splits its
 * positionals with cli_batch_positionals, calls cli_batch_prepare, reads what it needs once
 * (a kernel), then cli_batch_run with its op; cli_batch_free at the end.
 */
#ifndef LUMEN_CLI_BATCH_H
#define LUMEN_CLI_BATCH_H

#include "args.h"
#include "lumen.h"

#include <stddef.h>

/* Ids of the batch flags (below the commands' CLI_FLAG_CMD, above the common ones). */
enum {
    CLI_FLAG_OUTPUT_DIR = 50,
    CLI_FLAG_NAME,
    CLI_FLAG_FORMAT,
    CLI_FLAG_JOBS,
    CLI_FLAG_JSON,
    CLI_FLAG_QUIET,
    CLI_FLAG_DTYPE,
    CLI_FLAG_QUALITY,
    CLI_FLAG_MAX_PIXELS,
    CLI_FLAG_IGNORE_ORIENTATION
};

/* clang-format off */
#define CLI_BATCH_FLAGS                                                                    \
    {"output-dir", 0, 1, CLI_FLAG_OUTPUT_DIR}, {"name", 0, 1, CLI_FLAG_NAME},              \
    {"format", 0, 1, CLI_FLAG_FORMAT},         {"jobs", 'j', 1, CLI_FLAG_JOBS},            \
    {"json", 0, 0, CLI_FLAG_JSON},             {"quiet", 'q', 0, CLI_FLAG_QUIET},          \
    {"dtype", 0, 1, CLI_FLAG_DTYPE},           {"quality", 0, 1, CLI_FLAG_QUALITY},        \
    {"max-pixels", 0, 1, CLI_FLAG_MAX_PIXELS},                                             \
    {"ignore-orientation", 0, 0, CLI_FLAG_IGNORE_ORIENTATION}
/* clang-format on */

/* Upper bound of --jobs: more workers than this only multiplies memory. */
#define CLI_MAX_JOBS 256

typedef struct cli_batch_opts {
    const char *output_dir; /* NULL: the single form IN OUT */
    const char *name;       /* output name pattern ({stem}, {ext}, {n}); NULL: "{stem}.{ext}" */
    const char *format;     /* extension without the dot, for '-' and {ext}; NULL: none */
    int jobs;               /* 0: one file per thread (--threads' count), at most all files */
    int json, quiet;
    int dtype;                 /* a lumen_dtype for the result, or -1: the op's (the input's) */
    lumen_read_options read;   /* --max-pixels (0: $LUMEN_MAX_PIXELS), --ignore-orientation */
    lumen_write_options write; /* quality from --quality */
} cli_batch_opts;

/* The options' defaults: no --dtype, the library's read and write defaults. */
cli_batch_opts cli_batch_opts_default(void);

/* One input and what became of it. */
typedef struct cli_batch_file {
    char *input;  /* path read ("-": stdin, read into the batch's memory) */
    char *output; /* path written (for stdout: a file in the temporary folder) */
    int rc;       /* CLI_EXIT_OK, or the failure's exit status */
    double ms, op_ms;
    lumen_run_info info;
    int64_t w, h, c;
    lumen_dtype dtype; /* of the output */
    char error[512];   /* "" or the message printed */
} cli_batch_file;

typedef struct cli_batch {
    const char *command; /* "blur" */
    cli_batch_opts opt;
    cli_batch_file *files;
    int nfiles;
    int single;                /* the IN OUT form (one file, exit status its own) */
    int from_stdin;            /* IN is '-' */
    int to_stdout;             /* OUT is '-' */
    unsigned char *stdin_data; /* IN '-': all of stdin, decoded from memory */
    size_t stdin_len;
    const char *stdin_format; /* its extension, told by its first bytes */
    char tmpdir[4096];        /* "" or the folder holding stdout's file until it is copied */
} cli_batch;

/* What a command runs on each image. The functions are called from worker threads at once, so
 * `state` is only read. */
typedef struct cli_image_op {
    const char *name; /* "blur": in messages */
    /* The output's shape for src before --dtype (NULL: src's shape and dtype). Returns 0, or an
     * exit status after writing the message into msg. */
    int (*shape)(const void *state, const lumen_image *src, lumen_image *shape, char *msg,
                 size_t size);
    lumen_status (*run)(const void *state, lumen_context *ctx, const lumen_image *src,
                        const lumen_image *dst, lumen_run_info *info);
    /* The --verbose line (to stderr, under the batch's lock); NULL: none. */
    void (*verbose)(const void *state, const cli_common *co, const lumen_image *src,
                    const lumen_image *dst, const lumen_run_info *info, double ms);
    const void *state;
} cli_image_op;

/* Handles a batch flag id: 0 or CLI_EXIT_USAGE; -1 when id is not a batch flag. */
int cli_batch_flag(cli_batch_opts *o, int id, const char *name, const char *value);
/* The batch flags' help lines, written once for every image op command. */
void cli_print_batch_help(void);

/*
 * Splits positionals of a command whose single form is names[0..nfixed) (the last is OUT and
 * names[img] the image input). Single form: exactly nfixed. With --output-dir, no OUT and the
 * image input takes every positional the others do not. Fills b's inputs (and OUT) and
 * other[i] (i != img, i < nfixed - 1) with the other positionals. 0 or CLI_EXIT_USAGE.
 */
int cli_batch_positionals(cli_batch *b, const char *command, const char *const *names, int nfixed,
                          int img, const char **pos, int npos, const char **other);
/* Expands folders, names the outputs and checks them (extension, --dtype, duplicates,
 * overwriting an input) before any input is read; then reads stdin into memory. 0, or
 * CLI_EXIT_USAGE / CLI_EXIT_FAIL after a message. */
int cli_batch_prepare(cli_batch *b);
/* Whether the writer takes the output path with --dtype (any channel count; any dtype without
 * it): 0, or CLI_EXIT_USAGE with the writer's reason, naming path, in msg. */
int cli_batch_check_output(const cli_batch *b, const char *path, char *msg, size_t size);
/* Whether the writer takes an image of dtype and c channels at path: 0, or CLI_EXIT_FAIL with
 * the reason in msg. */
int cli_batch_check_pixels(const cli_batch *b, const char *path, lumen_dtype dtype, int64_t c,
                           char *msg, size_t size);
/* Runs op on every file; the exit status of the whole run (see cli_print_batch_help). */
int cli_batch_run(cli_batch *b, const cli_common *co, const cli_image_op *op);

/* What a command adds to a batch beyond its op (`lumen film`). */
typedef struct cli_batch_hooks {
    /* After a file's output was written (from a worker thread, not under the lock): more files
     * made from the same input and result, as film's --compare picture. Returns 0, or an exit
     * status after writing the message into f->error (the file then counts as failed; its
     * output, complete, stays). NULL: none. */
    int (*written)(const void *state, const cli_batch *b, cli_batch_file *f, const lumen_image *src,
                   const lumen_image *dst);
    /* Nonzero: a line per finished file on stderr when no progress bar is drawn (stderr not a
     * terminal, or a single file) and no --quiet: "lumen: CMD: IN -> OUT, WxH, N ms". */
    int file_lines;
    const void *state;
} cli_batch_hooks;

/* cli_batch_run with hooks (NULL: none, as cli_batch_run). */
int cli_batch_run_hooks(cli_batch *b, const cli_common *co, const cli_image_op *op,
                        const cli_batch_hooks *hooks);
void cli_batch_free(cli_batch *b);

#endif
