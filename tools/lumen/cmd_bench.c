/* `lumen bench`: in-process timings of filter2d and Gaussian blur on a generated image. */
#include "args.h"
#include "cli.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: lumen bench [--json] [--size WxH] [--repeat N] [--case NAMES] [options]\n"
    "\n"
    "Times the ops in this process on a generated single-channel f32 image with\n"
    "deterministic pseudo-random pixels. Each case runs once cold (ms_cold: the\n"
    "first call, with one-time costs such as thread start-up and page faults), then\n"
    "N warm times (ms_min, ms_median). Cases:\n"
    "  filter2d_k3, filter2d_k7, filter2d_k15   filter2d, random k x k kernel\n"
    "                                           (fixed seed), method auto\n"
    "  gaussian_s1, gaussian_s3, gaussian_s10   Gaussian blur, sigma 1, 3, 10 with\n"
    "                                           ksize = 2*round(3*sigma)+1 = 7, 19, 61\n"
    "All cases use --border reflect.\n"
    "\n"
    "Options:\n"
    "  --json            print a JSON list of results instead of a table (default: table)\n"
    "  --size WxH        image width x height, up to 65536 each (default: 3000x2000)\n"
    "  --repeat N        warm runs per case, 5-1000 (default: 7)\n"
    "  --case NAMES      comma-separated case names or ops (filter2d, gaussian) to run\n"
    "                    (default: all)\n"
    "  --threads N       worker threads, 1-1024 (default: $LUMEN_NUM_THREADS, else all CPUs)\n"
    "  --no-simd         time the scalar reference path\n"
    "  -v, --verbose     print each case to stderr as it finishes\n"
    "  -h, --help        show this help\n"
    "\n"
    "Example:\n"
    "  lumen bench --size 1920x1080 --repeat 9 --case filter2d_k7,gaussian --json\n";

enum { F_JSON = CLI_FLAG_CMD, F_SIZE, F_REPEAT, F_CASE };

static const cli_flag flags[] = {
    {"json", 0, 0, F_JSON}, {"size", 0, 1, F_SIZE}, {"repeat", 0, 1, F_REPEAT},
    {"case", 0, 1, F_CASE}, CLI_COMMON_FLAGS,      {NULL, 0, 0, 0}};

#define BENCH_MAX_SIDE 65536
/* Two f32 buffers of this many pixels already take 2 GiB. */
#define BENCH_MAX_PIXELS ((int64_t)1 << 28)

typedef struct bench_case {
    const char *name;
    const char *op;  /* "filter2d" or "gaussian" */
    int ksize;       /* filter2d: k; gaussian: derived from sigma at run time */
    double sigma;    /* gaussian only */
} bench_case;

static const bench_case cases[] = {
    {"filter2d_k3", "filter2d", 3, 0.0},  {"filter2d_k7", "filter2d", 7, 0.0},
    {"filter2d_k15", "filter2d", 15, 0.0}, {"gaussian_s1", "gaussian", 0, 1.0},
    {"gaussian_s3", "gaussian", 0, 3.0},  {"gaussian_s10", "gaussian", 0, 10.0}};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct bench_result {
    const bench_case *c;
    int ksize;
    double ms_cold, ms_min, ms_median;
    lumen_run_info info;
} bench_result;

typedef struct bench_state {
    cli_common common;
    int json;
    int w, h, repeat;
    int selected[NCASES];
} bench_state;

/* ---- flags ------------------------------------------------------------ */

/* Marks the cases a comma-separated list of names or ops picks; unknown items are errors. */
static int select_cases(const char *name, const char *value, int *selected)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", value);
    memset(selected, 0, NCASES * sizeof *selected);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int hits = 0;
        for (int i = 0; i < NCASES; i++) {
            if (strcmp(tok, cases[i].name) && strcmp(tok, cases[i].op)) continue;
            selected[i] = 1;
            hits++;
        }
        if (!hits) {
            cli_error(name, "unknown case '%s' (valid: filter2d, gaussian, filter2d_k3, "
                            "filter2d_k7, filter2d_k15, gaussian_s1, gaussian_s3, gaussian_s10)",
                      tok);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

static int check_size(const char *name, const char *value, bench_state *st)
{
    if (cli_arg_size(name, value, BENCH_MAX_SIDE, &st->w, &st->h)) return CLI_EXIT_USAGE;
    if ((int64_t)st->w * st->h <= BENCH_MAX_PIXELS) return 0;
    cli_error(name, "%s has more than %lld pixels", value, (long long)BENCH_MAX_PIXELS);
    return CLI_EXIT_USAGE;
}

static int on_flag(void *state, int id, const char *name, const char *value)
{
    bench_state *st = state;
    switch (id) {
    case F_JSON: st->json = 1; return 0;
    case F_SIZE: return check_size(name, value, st);
    case F_REPEAT: return cli_arg_int(name, value, 5, 1000, &st->repeat);
    case F_CASE: return select_cases(name, value, st->selected);
    default: return cli_common_flag(&st->common, id, name, value);
    }
}

/* ---- data --------------------------------------------------------------- */

/* Fixed seeds: identical inputs on every run and machine. */

static float *random_floats(size_t n, uint64_t seed, float lo, float hi)
{
    float *v = malloc(n * sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * cli_lcg_unit(&seed);
    return v;
}

/* The Gaussian cases state their size: 2*round(3*sigma)+1, i.e. +-3 sigma. */
static int gaussian_case_ksize(double sigma) { return 2 * (int)lround(3.0 * sigma) + 1; }

/* ---- timing ------------------------------------------------------------- */

static lumen_status call_case(lumen_context *ctx, const bench_result *r, const lumen_image *src,
                              const lumen_image *dst, const float *kernel, lumen_run_info *info)
{
    if (kernel) {
        lumen_filter_options opt = lumen_filter_options_default();
        return lumen_filter2d(ctx, src, dst, kernel, r->ksize, r->ksize, &opt, info);
    }
    return lumen_gaussian_blur(ctx, src, dst, r->ksize, r->ksize, r->c->sigma, r->c->sigma,
                               LUMEN_BORDER_REFLECT, 0.0f, info);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts ms in place and fills min and median. */
static void summarize(double *ms, int n, bench_result *r)
{
    qsort(ms, (size_t)n, sizeof *ms, compare_double);
    r->ms_min = ms[0];
    r->ms_median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

/* One cold call, then `repeat` warm calls; returns a status from the library. */
static lumen_status time_case(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                              const float *kernel, int repeat, double *ms, bench_result *r)
{
    double t0 = cli_now_ms();
    lumen_status s = call_case(ctx, r, src, dst, kernel, &r->info);
    r->ms_cold = cli_now_ms() - t0;
    for (int i = 0; !s && i < repeat; i++) {
        t0 = cli_now_ms();
        s = call_case(ctx, r, src, dst, kernel, &r->info);
        ms[i] = cli_now_ms() - t0;
    }
    if (!s) summarize(ms, repeat, r);
    return s;
}

static int run_case(lumen_context *ctx, const bench_state *st, const lumen_image *src,
                    const lumen_image *dst, bench_result *r)
{
    int is_filter = !strcmp(r->c->op, "filter2d");
    r->ksize = is_filter ? r->c->ksize : gaussian_case_ksize(r->c->sigma);
    size_t taps = (size_t)r->ksize * (size_t)r->ksize;
    float *kernel = is_filter ? random_floats(taps, 1000u + (uint64_t)r->ksize, -1.0f, 1.0f) : NULL;
    double *ms = malloc((size_t)st->repeat * sizeof *ms);
    int rc = CLI_EXIT_OK;
    if (!ms || (is_filter && !kernel)) {
        cli_error(r->c->name, "out of memory");
        rc = CLI_EXIT_FAIL;
    } else {
        lumen_status s = time_case(ctx, src, dst, kernel, st->repeat, ms, r);
        if (s) rc = cli_lib_error(r->c->name, s);
    }
    free(ms);
    free(kernel);
    return rc;
}

/* ---- output ------------------------------------------------------------- */

static const char *or_unknown(const char *s) { return s ? s : "?"; }

static void print_table_header(const bench_state *st)
{
    printf("lumen %s bench: %dx%d f32, 1 channel, %d warm runs, border reflect\n",
           lumen_version(), st->w, st->h, st->repeat);
    printf("%-13s  %-8s  %5s  %5s  %-9s  %-6s  %-8s  %7s  %9s  %9s  %9s\n", "name", "op",
           "ksize", "sigma", "method", "device", "isa", "threads", "cold ms", "min ms",
           "median ms");
}

static void print_table_row(FILE *f, const bench_result *r)
{
    char sigma[16] = "-";
    if (r->c->sigma > 0) snprintf(sigma, sizeof sigma, "%g", r->c->sigma);
    fprintf(f, "%-13s  %-8s  %5d  %5s  %-9s  %-6s  %-8s  %7d  %9.3f  %9.3f  %9.3f\n", r->c->name,
            r->c->op, r->ksize, sigma, lumen_method_name(r->info.method),
            or_unknown(r->info.device), or_unknown(r->info.isa), r->info.threads, r->ms_cold,
            r->ms_min, r->ms_median);
}

static void print_json_result(const bench_state *st, const bench_result *r)
{
    fputs("  {\"name\": ", stdout);
    cli_json_string(stdout, r->c->name);
    fputs(", \"op\": ", stdout);
    cli_json_string(stdout, r->c->op);
    printf(", \"ksize\": %d, \"sigma\": ", r->ksize);
    if (r->c->sigma > 0)
        printf("%g", r->c->sigma);
    else
        fputs("null", stdout);
    printf(", \"width\": %d, \"height\": %d, \"dtype\": \"f32\", \"channels\": 1, \"method\": ",
           st->w, st->h);
    cli_json_string(stdout, lumen_method_name(r->info.method));
    fputs(", \"device\": ", stdout);
    cli_json_string(stdout, or_unknown(r->info.device));
    fputs(", \"isa\": ", stdout);
    cli_json_string(stdout, or_unknown(r->info.isa));
    printf(", \"threads\": %d, \"repeat\": %d, \"ms_cold\": %.4f, \"ms_min\": %.4f, "
           "\"ms_median\": %.4f}",
           r->info.threads, st->repeat, r->ms_cold, r->ms_min, r->ms_median);
}

static void print_json(const bench_state *st, const bench_result *results, int n)
{
    fputs("[\n", stdout);
    for (int i = 0; i < n; i++) {
        print_json_result(st, &results[i]);
        fputs(i + 1 < n ? ",\n" : "\n", stdout);
    }
    fputs("]\n", stdout);
}

/* ---- driver ------------------------------------------------------------- */

/* Runs the selected cases; the table is printed as it goes, JSON once all succeeded. */
static int run_all(lumen_context *ctx, const bench_state *st, const lumen_image *src,
                   const lumen_image *dst)
{
    bench_result results[NCASES];
    int n = 0, rc = 0;
    if (!st->json) print_table_header(st);
    for (int i = 0; i < NCASES; i++) {
        if (!st->selected[i]) continue;
        bench_result *r = &results[n];
        memset(r, 0, sizeof *r);
        r->c = &cases[i];
        if ((rc = run_case(ctx, st, src, dst, r))) break;
        n++;
        if (!st->json) print_table_row(stdout, r);
        fflush(stdout);
        if (st->common.verbose) print_table_row(stderr, r);
    }
    if (!rc && st->json) print_json(st, results, n);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    const cli_command cmd = {"bench", flags, on_flag, NULL, 0};
    bench_state st = {{0}, 0, 3000, 2000, 7, {0}};
    for (int i = 0; i < NCASES; i++) st.selected[i] = 1;
    int rc = cli_parse(&cmd, argc, argv, &st, NULL);
    if (rc == CLI_HELP) return cli_print_usage(usage);
    if (rc) return rc;
    lumen_context *ctx = NULL;
    if ((rc = cli_context_create(&st.common, &ctx))) return rc;
    size_t npix = (size_t)st.w * (size_t)st.h;
    float *in = random_floats(npix, 42, 0.0f, 1.0f);
    float *out = malloc(npix * sizeof *out);
    if (!in || !out) {
        rc = CLI_EXIT_FAIL;
        cli_error("bench", "out of memory for a %dx%d image", st.w, st.h);
    } else {
        lumen_image src = lumen_image_nhwc(in, LUMEN_F32, 1, st.h, st.w, 1);
        lumen_image dst = lumen_image_nhwc(out, LUMEN_F32, 1, st.h, st.w, 1);
        rc = run_all(ctx, &st, &src, &dst);
    }
    free(in);
    free(out);
    lumen_context_destroy(ctx);
    return rc;
}
