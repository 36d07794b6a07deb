/* Command-line parsing for `lumen`: a small table-driven flag parser and strict value parsers. */
#ifndef LUMEN_CLI_ARGS_H
#define LUMEN_CLI_ARGS_H

#include "lumen.h"

/* Limits are the library's (lumen.h), never the CLI's own. */
#define CLI_MAX_KSIZE LUMEN_MAX_KSIZE
#define CLI_MAX_THREADS LUMEN_MAX_THREADS

/* Returned by cli_parse when -h/--help was given (print usage, exit 0). */
#define CLI_HELP (-1)

typedef struct cli_flag {
    const char *name;  /* long form without the leading "--"; NULL ends a table */
    char short_name;   /* one-letter alias, 0 if none */
    int takes_value;
    int id;
} cli_flag;

/* Ids of the flags every op subcommand shares; commands number theirs from CLI_FLAG_CMD. */
enum {
    CLI_FLAG_THREADS = 1,
    CLI_FLAG_VERBOSE,
    CLI_FLAG_NO_SIMD,
    CLI_FLAG_FFT_PLANNING,
    CLI_FLAG_DEVICE,
    CLI_FLAG_STRICT,
    CLI_FLAG_CMD = 100
};

#define CLI_COMMON_FLAGS                                                   \
    {"threads", 0, 1, CLI_FLAG_THREADS}, {"verbose", 'v', 0, CLI_FLAG_VERBOSE}, \
    {"no-simd", 0, 0, CLI_FLAG_NO_SIMD}, {"device", 0, 1, CLI_FLAG_DEVICE},     \
    {"strict", 0, 0, CLI_FLAG_STRICT}

/* --fft-planning: shared by the subcommands that filter (filter, blur, box, bench). */
#define CLI_FFT_FLAGS {"fft-planning", 0, 1, CLI_FLAG_FFT_PLANNING}

/* Which common help lines cli_print_common_help prints (CLI_COMMON_FLAGS' lines always). */
enum {
    CLI_HELP_FFT = 1u << 0,        /* --fft-planning */
    CLI_HELP_OWN_VERBOSE = 1u << 1, /* the command's head says what -v does */
    CLI_HELP_BATCH = 1u << 2        /* the batch flags (cli_print_batch_help), after the rest */
};
/* The help lines of the common flags, written once for every subcommand: --threads (with the
 * library's cap), --fft-planning when asked, --no-simd, --device, --strict, -v, -h. */
void cli_print_common_help(unsigned which);
/* Prints a subcommand's help: head (a printf format given the library's LUMEN_MAX_KSIZE as its
 * only, optional, %d), the common lines, then tail (examples, or NULL); returns CLI_EXIT_OK. */
int cli_print_help(const char *head, unsigned which, const char *tail);

/*
 * Called once per flag, in command-line order, after the whole line was
 * checked for structure. `name` is spelled "--name"; value is NULL for switches.
 * Returns 0, or CLI_EXIT_USAGE after printing why.
 */
typedef int (*cli_flag_handler)(void *state, int id, const char *name, const char *value);

typedef struct cli_command {
    const char *name;                     /* "blur": used in messages */
    const cli_flag *flags;                /* ends with {NULL} */
    cli_flag_handler on_flag;
    const char *const *positional_names;  /* e.g. {"IN", "OUT"}: all are required */
    int npositional;
    int variadic; /* any number of positionals (a batch): the command checks the count */
} cli_command;

/*
 * Parses argv[1..argc) (argv[0] is the subcommand). "--name value",
 * "--name=value", "-x", and "--" (end of flags) are understood; flags and
 * positionals may be mixed. Fills pos[0..npositional). Returns 0, CLI_HELP,
 * or CLI_EXIT_USAGE after printing why.
 */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *state, const char **pos);
/* cli_parse for a variadic command: pos has room for argc entries; *npos gets their count. */
int cli_parse_n(const cli_command *cmd, int argc, char **argv, void *state, const char **pos,
                int *npos);

/* Flags shared by op subcommands. */
typedef struct cli_common {
    int threads; /* 0: the library's default (lumen_default_threads) */
    int verbose;
    int no_simd;
    lumen_fft_planning fft_planning; /* 0: LUMEN_FFT_ESTIMATE */
    const char *device;              /* NULL: $LUMEN_DEVICE or auto */
    int strict;
} cli_common;

/* Handles a common flag id: 0 or CLI_EXIT_USAGE; -1 when id is not a common flag. */
int cli_common_flag(cli_common *co, int id, const char *name, const char *value);
/* Checks what the command line and the environment ask of a context before any work: --device
 * (or $LUMEN_DEVICE) names a device of this machine, $LUMEN_NUM_THREADS is a thread count when
 * no --threads is given. Returns 0, or CLI_EXIT_USAGE after a message naming the flag or
 * variable and listing what is valid. */
int cli_common_check(const cli_common *co);
/* The thread count a context of co gets: --threads, else the library's default
 * (lumen_default_threads: $LUMEN_NUM_THREADS, $OMP_NUM_THREADS, the CPUs this process may use). */
int cli_common_threads(const cli_common *co);
/* cli_common_check, then creates a context configured by co; prints the reason and returns
 * CLI_EXIT_USAGE or CLI_EXIT_FAIL on failure. */
int cli_context_create(const cli_common *co, lumen_context **out);

/* For the benchmarks: a note on stderr when the context's device is a software one (lavapipe:
 * a Vulkan driver on the CPU), whose times say nothing about a GPU. */
void cli_note_software_device(const lumen_context *ctx);

/* Value parsers: 0 on success, else CLI_EXIT_USAGE after "lumen: --name: expected ..., got 'v'". */
int cli_arg_int(const char *name, const char *value, long lo, long hi, int *out);
/* Marks in selected[0..n) the items a comma-separated list picks (item i is picked by a token
 * when matches(i, token)); a token that picks nothing is a usage error naming the flag and
 * listing `valid`. Returns 0 or CLI_EXIT_USAGE. */
int cli_arg_select(const char *name, const char *value, int n,
                   int (*matches)(int i, const char *token), const char *valid, int *selected);
int cli_arg_float(const char *name, const char *value, float *out);
int cli_arg_border(const char *name, const char *value, lumen_border *out);
#define CLI_METHOD_BIT(m) (1u << (m))
/* A method lumen_method_parse knows that is also in `allowed` (bits 1u << LUMEN_METHOD_x). */
int cli_arg_method(const char *name, const char *value, unsigned allowed, lumen_method *out);
/* "estimate" or "measure". */
int cli_arg_fft_planning(const char *name, const char *value, lumen_fft_planning *out);
/* A finite number in [lo, hi]. */
int cli_arg_real(const char *name, const char *value, double lo, double hi, double *out);
/* "A" or "A,B" integers in [lo, hi]; B = A when absent unless both is set. */
int cli_arg_pair(const char *name, const char *value, long lo, long hi, int both, int *a, int *b);
/* "K" or "K,KY" (KY = K when absent), each in [lo, CLI_MAX_KSIZE]; odd_only also allows 0. */
int cli_arg_ksize(const char *name, const char *value, int lo, int odd_only, int *kx, int *ky);
/* "X,Y" integers, each in [lo, hi]. */
int cli_arg_xy(const char *name, const char *value, long lo, long hi, int *x, int *y);
/* "WxH" positive sizes up to max_side each. */
int cli_arg_size(const char *name, const char *value, int max_side, int *w, int *h);
/* One of choices[0..n) exactly: index into *out. */
int cli_arg_choice(const char *name, const char *value, const char *const *choices, int n,
                   int *out);

#endif
