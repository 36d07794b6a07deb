/* Shared pieces of the `lumen` command-line tool: exit codes, messages, commands. */
#ifndef LUMEN_CLI_H
#define LUMEN_CLI_H

#include "lumen.h"
#include "lumen_ops.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Exit statuses: the contract scripts rely on. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,  /* a read, write or operation failed */
    CLI_EXIT_USAGE = 2  /* bad command line */
};

/* Prints "lumen: <what>: <reason>" to stderr. */
void cli_error(const char *what, const char *fmt, ...) CLI_PRINTF(2, 3);
/* Reports a failed library call: "lumen: <what>: <lumen_last_error()>", returns CLI_EXIT_FAIL. */
int cli_lib_error(const char *what, lumen_status s);
/* The same message without "lumen: ", into buf (for a batch's per-file records). */
void cli_lib_message(const char *what, lumen_status s, char *buf, size_t size);

/* Prints a subcommand's usage to stdout; returns CLI_EXIT_OK. */
int cli_print_usage(const char *text);

/* Prints text wrapped at 80 columns, continuation lines indented by indent; the first line
 * starts at column col (where the cursor is). */
void cli_print_wrapped(const char *text, int indent, int col);

/* Milliseconds from a monotonic clock. */
double cli_now_ms(void);

/* Next number in [0, 1) of a fixed-seed LCG: the same sequence on every machine. */
float cli_lcg_unit(uint64_t *state);

/* n floats lo + (hi - lo) * cli_lcg_unit(seed), malloc'ed (NULL when out of memory): the bench
 * data, the same on every machine and in the Python bench. */
float *cli_random_floats(size_t n, uint64_t seed, float lo, float hi);

/* Sorts the n > 0 timings ms and gives their minimum and median. */
void cli_min_median(double *ms, int n, double *min, double *median);

/* Writes s as a JSON string literal (quoted and escaped). */
void cli_json_string(FILE *f, const char *s);

/* Subcommands: argv[0] is the subcommand name; return an exit status. */
int cmd_info(int argc, char **argv);
int cmd_filter(int argc, char **argv);
int cmd_blur(int argc, char **argv);
int cmd_box(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_conv(int argc, char **argv); /* `lumen bench conv`, from cmd_bench */
int cmd_bench_floors(int argc, char **argv); /* `lumen bench floors`, from cmd_bench */
int cmd_scene(int argc, char **argv);
int cmd_kernel(int argc, char **argv);
int cmd_mask_bbox(int argc, char **argv);
int cmd_film(int argc, char **argv);
int cmd_studio(int argc, char **argv); /* execs python3 -m lumen.studio */
/* Any op of the descriptor table, by its descriptor alone (cmd_op.c). */
int cmd_op(const lumen_op_desc *op, int argc, char **argv);

#endif
