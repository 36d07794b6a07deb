/* Flag parsing and strict number parsing for the `lumen` tool. */

#include "args.h"

#include "batch.h"
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_long(const char *s, long *out);

/* ---- structure: flags and positionals ---------------------------------- */

/* One flag occurrence found by the structural pass. */
typedef struct cli_token {
    const cli_flag *flag;
    const char *value;
} cli_token;

static const cli_flag *find_long(const cli_flag *flags, const char *name, size_t len)
{
    for (const cli_flag *f = flags; f->name; f++)
        if (strlen(f->name) == len && !strncmp(f->name, name, len)) return f;
    return NULL;
}

static const cli_flag *find_short(const cli_flag *flags, char c)
{
    for (const cli_flag *f = flags; f->name; f++)
        if (f->short_name && f->short_name == c) return f;
    return NULL;
}

static int is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

/* Help wins over any other mistake on the line, so look for it before complaining. */
static int help_requested(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (is_help(argv[i])) return 1;
    return 0;
}

/* Scans a flag at argv[*i]: fills tok and advances *i past a separate value. */
static int scan_flag(const cli_command *cmd, int argc, char **argv, int *i, cli_token *tok)
{
    const char *arg = argv[*i];
    const char *eq = NULL;
    const cli_flag *f;
    if (arg[1] == '-') {
        eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        f = find_long(cmd->flags, arg + 2, len);
    } else {
        f = arg[2] == '\0' ? find_short(cmd->flags, arg[1]) : NULL;
    }
    if (!f) {
        cli_error(arg, "unknown flag (see 'lumen %s --help')", cmd->name);
        return CLI_EXIT_USAGE;
    }
    tok->flag = f;
    tok->value = NULL;
    if (!f->takes_value) {
        if (eq) cli_error(arg, "flag takes no value");
        return eq ? CLI_EXIT_USAGE : 0;
    }
    if (eq) {
        tok->value = eq + 1;
        return 0;
    }
    /* "--sigma --verbose" is a forgotten value; "--value -5" is a negative number. */
    if (*i + 1 >= argc || !strncmp(argv[*i + 1], "--", 2)) {
        cli_error(arg, "missing value (see 'lumen %s --help')", cmd->name);
        return CLI_EXIT_USAGE;
    }
    tok->value = argv[++*i];
    return 0;
}

static int add_positional(const cli_command *cmd, const char *arg, const char **pos, int *npos)
{
    if (!cmd->variadic && *npos >= cmd->npositional) {
        cli_error(cmd->name, "unexpected argument '%s' (see 'lumen %s --help')", arg, cmd->name);
        return CLI_EXIT_USAGE;
    }
    pos[(*npos)++] = arg;
    return 0;
}

/* First pass: split argv into flag tokens and positionals without judging values. */
static int scan(const cli_command *cmd, int argc, char **argv, cli_token *toks, int *ntok,
                const char **pos, int *npos_out)
{
    int npos = 0, flags_done = 0, rc;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!flags_done && !strcmp(arg, "--")) {
            flags_done = 1;
            continue;
        }
        /* A lone "-" is a positional, as in most tools. */
        if (!flags_done && arg[0] == '-' && arg[1] != '\0')
            rc = scan_flag(cmd, argc, argv, &i, &toks[(*ntok)++]);
        else
            rc = add_positional(cmd, arg, pos, &npos);
        if (rc) return rc;
    }
    if (!cmd->variadic && npos < cmd->npositional) {
        cli_error(cmd->name, "missing %s (see 'lumen %s --help')",
                  cmd->positional_names[npos], cmd->name);
        return CLI_EXIT_USAGE;
    }
    *npos_out = npos;
    return 0;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, void *state, const char **pos)
{
    int npos;
    return cli_parse_n(cmd, argc, argv, state, pos, &npos);
}

int cli_parse_n(const cli_command *cmd, int argc, char **argv, void *state, const char **pos,
                int *npos)
{
    if (help_requested(argc, argv)) return CLI_HELP;
    cli_token *toks = calloc((size_t)(argc > 0 ? argc : 1), sizeof *toks);
    if (!toks) {
        cli_error(cmd->name, "out of memory");
        return CLI_EXIT_FAIL;
    }
    int ntok = 0;
    *npos = 0;
    int rc = scan(cmd, argc, argv, toks, &ntok, pos, npos);
    for (int i = 0; !rc && i < ntok; i++) {
        char spelled[64]; /* messages name flags as typed: "--sigma" */
        snprintf(spelled, sizeof spelled, "--%s", toks[i].flag->name);
        rc = cmd->on_flag(state, toks[i].flag->id, spelled, toks[i].value);
    }
    free(toks);
    return rc;
}

/* ---- common flags ------------------------------------------------------- */

int cli_common_flag(cli_common *co, int id, const char *name, const char *value)
{
    switch (id) {
    case CLI_FLAG_THREADS: return cli_arg_int(name, value, 1, CLI_MAX_THREADS, &co->threads);
    case CLI_FLAG_VERBOSE: co->verbose = 1; return 0;
    case CLI_FLAG_NO_SIMD: co->no_simd = 1; return 0;
    case CLI_FLAG_FFT_PLANNING: return cli_arg_fft_planning(name, value, &co->fft_planning);
    case CLI_FLAG_DEVICE: co->device = value; return 0;
    case CLI_FLAG_STRICT: co->strict = 1; return 0;
    default: return -1;
    }
}

void cli_print_common_help(unsigned which)
{
    printf("  --threads N       worker threads, 1-%d (default: $LUMEN_NUM_THREADS, else\n"
           "                    $OMP_NUM_THREADS, else the CPUs this process may use)\n",
           CLI_MAX_THREADS);
    if (which & CLI_HELP_FFT)
        fputs("  --fft-planning P  estimate|measure: how the FFT method plans its transforms\n"
              "                    (default: estimate, microseconds). measure times candidates\n"
              "                    once per size (seconds), then runs faster; the result is\n"
              "                    kept in ~/.cache/lumen for later runs\n",
              stdout);
    fputs("  --no-simd         run the scalar reference path only (for tests and timings)\n"
          "  --device D        auto|cpu|cuda[:N]|vulkan[:N]: where to run (default: $LUMEN_DEVICE,\n"
          "                    else auto: a discrete GPU, else an integrated one, else the CPU;\n"
          "                    never a software device such as lavapipe: name it)\n"
          "  --strict          fail instead of running on the CPU what the device cannot run\n"
          "                    (default: $LUMEN_STRICT; without it the CPU reruns such an op and\n"
          "                    one warning line says so)\n",
          stdout);
    if (!(which & CLI_HELP_OWN_VERBOSE))
        fputs("  -v, --verbose     print op, shape, device, isa, method, threads and time to "
              "stderr\n",
              stdout);
    fputs("  -h, --help        show this help\n", stdout);
}

int cli_print_help(const char *head, unsigned which, const char *tail)
{
    printf(head, LUMEN_MAX_KSIZE);
    cli_print_common_help(which);
    if (which & CLI_HELP_BATCH) cli_print_batch_help();
    if (tail) fputs(tail, stdout);
    return CLI_EXIT_OK;
}

void cli_print_wrapped(const char *text, int indent, int col)
{
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " \n");
        if (col > indent && col + 1 + (int)word > 80) {
            printf("\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            putchar(' ');
            col++;
        } else if (col < indent) {
            printf("%*s", indent - col, "");
            col = indent;
        }
        printf("%.*s", (int)word, p);
        col += (int)word;
        p += word;
        while (*p == ' ' || *p == '\n') p++;
    }
    putchar('\n');
}

/* "cpu, cuda:0": the specs of this machine's devices, as --device takes them. */
static void device_list(char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "auto");
    for (int i = 0; i < lumen_device_count() && len < size; i++) {
        char spec[64];
        if (lumen_device_spec(i, spec, sizeof spec) == LUMEN_OK)
            len += (size_t)snprintf(buf + len, size - len, ", %s", spec);
    }
}

/* An unknown device is a mistake on the command line (or in $LUMEN_DEVICE), not a failed
 * operation: exit 2, naming where the name came from and what this machine has. */
static int check_device(const char *what, const char *spec)
{
    int index;
    if (lumen_device_find(spec, &index) == LUMEN_OK) return 0;
    char have[512];
    device_list(have, sizeof have);
    cli_error(what, "no device '%s' on this machine (valid: %s)", spec, have);
    return CLI_EXIT_USAGE;
}

/* $LUMEN_NUM_THREADS as a thread count: 0 when unset, -1 when it is not one. */
static int env_num_threads(void)
{
    const char *v = getenv("LUMEN_NUM_THREADS");
    long n;
    if (!v || !*v) return 0;
    return parse_long(v, &n) == 0 && n >= 1 && n <= CLI_MAX_THREADS ? (int)n : -1;
}

/* The library only warns about a bad $LUMEN_NUM_THREADS and goes on to its next default; a
 * command line tool should not run with a setting other than the one asked for. */
static int env_threads(int *out)
{
    *out = env_num_threads();
    if (*out >= 0) return 0;
    *out = 0;
    cli_error("LUMEN_NUM_THREADS",
              "expected an integer from 1 to %d, got '%s' (unset it, or give "
              "--threads N)",
              CLI_MAX_THREADS, getenv("LUMEN_NUM_THREADS"));
    return CLI_EXIT_USAGE;
}

int cli_common_check(const cli_common *co)
{
    int n;
    if (co->threads == 0 && env_threads(&n)) return CLI_EXIT_USAGE;
    if (co->device) return check_device("--device", co->device);
    const char *env = getenv("LUMEN_DEVICE");
    if (env && *env) {
        char what[300];
        snprintf(what, sizeof what, "LUMEN_DEVICE='%.256s'", env);
        return check_device(what, env);
    }
    return 0;
}

int cli_common_threads(const cli_common *co)
{
    if (co->threads > 0) return co->threads;
    /* A bad $LUMEN_NUM_THREADS is the command's usage error (cli_common_check), reported
     * once by the tool, not also warned about by the library. */
    const int n = env_num_threads();
    return n > 0 ? n : n < 0 ? 1 : lumen_default_threads();
}

int cli_context_create(const cli_common *co, lumen_context **out)
{
    int rc = cli_common_check(co);
    if (rc) return rc;
    lumen_context *ctx = NULL;
    lumen_status s = lumen_context_create(&ctx);
    if (s) return cli_lib_error("context", s);
    if (co->threads > 0 && (s = lumen_context_set_threads(ctx, co->threads)))
        goto fail;
    if (co->no_simd && (s = lumen_context_set_simd(ctx, 0))) goto fail;
    if (co->device && (s = lumen_context_set_device(ctx, co->device))) goto fail;
    if (co->strict && (s = lumen_context_set_strict(ctx, 1))) goto fail;
    if ((s = lumen_context_set_fft_planning(ctx, co->fft_planning))) goto fail;
    *out = ctx;
    return 0;
fail:
    cli_lib_error("context", s);
    lumen_context_destroy(ctx);
    return CLI_EXIT_FAIL;
}

/* ---- numbers -------------------------------------------------------------- */

/* Base-10 integer, optional sign, nothing else (no spaces, no trailing text). */
static int parse_long(const char *s, long *out)
{
    if (!s || !*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9'))) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* Finite decimal number; hex, "inf", "nan" and trailing text are refused. */
static int parse_double(const char *s, double *out)
{
    if (!s || !*s || strspn(s, "0123456789+-.eE") != strlen(s)) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_arg_int(const char *name, const char *value, long lo, long hi, int *out)
{
    long v;
    if (parse_long(value, &v) || v < lo || v > hi) {
        cli_error(name, "expected an integer from %ld to %ld, got '%s'", lo, hi, value);
        return CLI_EXIT_USAGE;
    }
    *out = (int)v;
    return 0;
}

int cli_arg_float(const char *name, const char *value, float *out)
{
    double v;
    if (parse_double(value, &v) || fabs(v) > FLT_MAX) {
        cli_error(name, "expected a finite number, got '%s'", value);
        return CLI_EXIT_USAGE;
    }
    *out = (float)v;
    return 0;
}

int cli_arg_real(const char *name, const char *value, double lo, double hi, double *out)
{
    double v;
    if (parse_double(value, &v) || v < lo || v > hi) {
        if (lo <= -FLT_MAX && hi >= FLT_MAX)
            cli_error(name, "expected a finite number, got '%s'", value);
        else
            cli_error(name, "expected a number from %g to %g, got '%s'", lo, hi, value);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

int cli_arg_border(const char *name, const char *value, lumen_border *out)
{
    if (lumen_border_parse(value, out) == LUMEN_OK) return 0;
    cli_error(name, "unknown border '%s' (valid: reflect, constant, replicate, reflect101, wrap)",
              value);
    return CLI_EXIT_USAGE;
}

/* "auto, direct, separable, fft": the names of the allowed methods, from the library. */
static void method_list(unsigned allowed, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int m = LUMEN_METHOD_AUTO; m <= LUMEN_METHOD_FFT; m++) {
        if (!(allowed & CLI_METHOD_BIT(m))) continue;
        if (buf[0]) strncat(buf, ", ", size - strlen(buf) - 1);
        strncat(buf, lumen_method_name((lumen_method)m), size - strlen(buf) - 1);
    }
}

int cli_arg_method(const char *name, const char *value, unsigned allowed, lumen_method *out)
{
    lumen_method m;
    int known = lumen_method_parse(value, &m) == LUMEN_OK;
    if (known && (allowed & CLI_METHOD_BIT(m))) {
        *out = m;
        return 0;
    }
    char list[128];
    method_list(allowed, list, sizeof list);
    if (known)
        cli_error(name, "method '%s' does not apply here (valid: %s)", value, list);
    else
        cli_error(name, "unknown method '%s' (valid: %s)", value, list);
    return CLI_EXIT_USAGE;
}

int cli_arg_fft_planning(const char *name, const char *value, lumen_fft_planning *out)
{
    /* Order matches lumen_fft_planning, so the index is the enum value. */
    static const char *const names[] = {"estimate", "measure"};
    int i;
    if (cli_arg_choice(name, value, names, 2, &i)) return CLI_EXIT_USAGE;
    *out = i ? LUMEN_FFT_MEASURE : LUMEN_FFT_ESTIMATE;
    return 0;
}

int cli_arg_choice(const char *name, const char *value, const char *const *choices, int n,
                   int *out)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(value, choices[i])) {
            *out = i;
            return 0;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    cli_error(name, "unknown value '%s' (valid: %s)", value, list);
    return CLI_EXIT_USAGE;
}

/* ---- pairs: "K,KY", "X,Y", "WxH" ---------------------------------------- */

/* Splits "a<sep>b" into two strict integers; b is optional when b_optional. */
static int parse_pair(const char *s, char sep, int b_optional, long *a, long *b, int *has_b)
{
    char buf[64];
    if (!s || strlen(s) >= sizeof buf) return -1;
    strcpy(buf, s);
    char *mid = strchr(buf, sep);
    *has_b = mid != NULL;
    if (!mid) return b_optional ? parse_long(buf, a) : -1;
    *mid = '\0';
    return parse_long(buf, a) || parse_long(mid + 1, b) ? -1 : 0;
}

static int ksize_ok(long k, int lo, int odd_only)
{
    if (odd_only && k == 0) return 1;
    return k >= lo && k <= CLI_MAX_KSIZE && (!odd_only || k % 2 == 1);
}

int cli_arg_ksize(const char *name, const char *value, int lo, int odd_only, int *kx, int *ky)
{
    long a = 0, b = 0;
    int has_b;
    if (parse_pair(value, ',', 1, &a, &b, &has_b) == 0) {
        if (!has_b) b = a;
        if (ksize_ok(a, lo, odd_only) && ksize_ok(b, lo, odd_only)) {
            *kx = (int)a;
            *ky = (int)b;
            return 0;
        }
    }
    if (odd_only)
        cli_error(name, "expected K or K,KY with odd sizes up to %d (0: derive from sigma), got '%s'",
                  CLI_MAX_KSIZE, value);
    else
        cli_error(name, "expected K or K,KY with sizes from %d to %d, got '%s'", lo, CLI_MAX_KSIZE,
                  value);
    return CLI_EXIT_USAGE;
}

int cli_arg_xy(const char *name, const char *value, long lo, long hi, int *x, int *y)
{
    long a = 0, b = 0;
    int has_b;
    if (parse_pair(value, ',', 0, &a, &b, &has_b) || a < lo || a > hi || b < lo || b > hi) {
        cli_error(name, "expected X,Y with integers from %ld to %ld, got '%s'", lo, hi, value);
        return CLI_EXIT_USAGE;
    }
    *x = (int)a;
    *y = (int)b;
    return 0;
}

int cli_arg_pair(const char *name, const char *value, long lo, long hi, int both, int *a, int *b)
{
    long x = 0, y = 0;
    int has_b;
    /* "A,B", or "AxB" as sizes are written (lumen resize --size 640x360) */
    if (parse_pair(value, ',', !both, &x, &y, &has_b) == 0 ||
        (strchr(value, 'x') && parse_pair(value, 'x', 0, &x, &y, &has_b) == 0)) {
        if (!has_b) y = x;
        if (x >= lo && x <= hi && y >= lo && y <= hi) {
            *a = (int)x;
            *b = (int)y;
            return 0;
        }
    }
    cli_error(name, "expected %s with integers from %ld to %ld, got '%s'",
              both ? "A,B (or AxB)" : "A or A,B", lo, hi, value);
    return CLI_EXIT_USAGE;
}

int cli_arg_size(const char *name, const char *value, int max_side, int *w, int *h)
{
    long a = 0, b = 0;
    int has_b;
    if (parse_pair(value, 'x', 0, &a, &b, &has_b) || a < 1 || a > max_side || b < 1 ||
        b > max_side) {
        cli_error(name, "expected WxH with sizes from 1 to %d, got '%s'", max_side, value);
        return CLI_EXIT_USAGE;
    }
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int cli_arg_select(const char *name, const char *value, int n,
                   int (*matches)(int i, const char *token), const char *valid, int *selected)
{
    char buf[1024];
    if (strlen(value) >= sizeof buf) {
        cli_error(name, "list longer than %zu characters", sizeof buf - 1);
        return CLI_EXIT_USAGE;
    }
    snprintf(buf, sizeof buf, "%s", value);
    memset(selected, 0, (size_t)n * sizeof *selected);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int hits = 0;
        for (int i = 0; i < n; i++)
            if (matches(i, tok)) selected[i] = 1, hits++;
        if (!hits) {
            cli_error(name, "unknown case '%s' (valid: %s)", tok, valid);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

void cli_note_software_device(const lumen_context *ctx)
{
    static int noted; /* once per run: every case makes its own context */
    lumen_device_info d;
    char spec[32] = "";
    const int i = lumen_context_device(ctx);
    if (noted || lumen_device_get_info(i, &d) || d.kind != LUMEN_DEVICE_SOFTWARE) return;
    noted = 1;
    lumen_device_spec(i, spec, sizeof spec);
    fprintf(stderr,
            "lumen bench: note: %s (%s) is a software device, a driver that runs on the CPU: "
            "its times check the harness and say nothing about a GPU's speed\n",
            spec, d.name);
}
