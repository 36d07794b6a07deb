/* `lumen bench conv`: in-process timings and GFLOP/s of NCHW conv2d and conv_transpose2d on
 * the layers of the conv issue, each with a float64 spot check of a few outputs. */
#include "args.h"
#include "cli.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: lumen bench conv [--json] [--case NAMES] [--repeat N] [--batch N] [options]\n"
    "\n"
    "Times lumen_conv2d and lumen_conv_transpose2d in this process on f32 NCHW tensors\n"
    "with deterministic pseudo-random values in [-1, 1) (x: seed 42, weights: seed 43; no\n"
    "bias). Each case gets a fresh context and runs once cold (ms_cold: the warm-up call,\n"
    "with thread start-up and first-touch costs; not in min/median), then N warm times\n"
    "(ms_min, ms_median). GFLOP/s = 2*N*K*P*Q*(C/groups)*R*S / time for conv2d and\n"
    "2*N*C*H*W*(K/groups)*R*S / time for conv_transpose2d, on the min (and the median).\n"
    "Cases (all run by default; x is N x C x H x W, w as the API takes it):\n"
    "  l1_512x7x7_k3        32x512x7x7   * 512x512x3x3  pad 1      (the issue's layers,\n"
    "  l2_64x56x56_k3       8x64x56x56   * 64x64x3x3    pad 1       target >= 1.0x torch\n"
    "  l3_256x14x14_k3      8x256x14x14  * 256x256x3x3  pad 1       in python3 -m\n"
    "  l4_3x224x224_k7s2    8x3x224x224  * 64x3x7x7     stride 2 pad 3   lumen.bench)\n"
    "  pw_256x28x28_k1      8x256x28x28  * 128x256x1x1  (1x1, pointwise)\n"
    "  dw_128x56x56_k3      8x128x56x56  * 128x1x3x3    pad 1, groups 128 (depthwise)\n"
    "  s2_128x28x28_k3s2    8x128x28x28  * 256x128x3x3  stride 2 pad 1\n"
    "  tr_256x14x14_k4s2    conv_transpose2d 8x256x14x14 * 256x128x4x4 stride 2 pad 1\n"
    "                       -> 8x128x28x28\n"
    "  tr_64x56x56_k3s2     conv_transpose2d 8x64x56x56 * 64x32x3x3 stride 2 pad 1\n"
    "                       output_padding 1 -> 8x32x112x112\n"
    "Spot check: after timing, 32 outputs (the first, the last and 30 at fixed random\n"
    "places) are recomputed in float64; check_max_abs_err is the largest |lumen - float64|.\n"
    "An output off by more than 1e-5 * sum|x*w| of its terms fails the check: the case\n"
    "is marked 'FAILED' (JSON: \"check\": \"failed\"), an error line names it and the exit\n"
    "status is 1. A case the library answers 'unsupported' is listed as skipped (JSON:\n"
    "\"status\": \"unsupported\"), not as a failure.\n"
    "\n"
    "Options:\n"
    "  --json            print a JSON list of results instead of a table (default: table)\n"
    "  --case NAMES      comma-separated case names or ops (conv2d, conv_transpose2d) to\n"
    "                    run (default: all)\n"
    "  --repeat N        warm runs per case, 5-1000 (default: 7)\n"
    "  --batch N         N of every case instead of its own, 1-1024 (--batch 1: a quick run)\n"
    "  -v, --verbose     print each case to stderr as it finishes\n";

static const char examples[] =
    "\n"
    "Example:\n"
    "  lumen bench conv --case l1_512x7x7_k3,conv_transpose2d --threads 2 --json\n";

enum { F_JSON = CLI_FLAG_CMD, F_CASE, F_REPEAT, F_BATCH };

static const cli_flag flags[] = {{"json", 0, 0, F_JSON},     {"case", 0, 1, F_CASE},
                                 {"repeat", 0, 1, F_REPEAT}, {"batch", 0, 1, F_BATCH},
                                 CLI_COMMON_FLAGS,           {NULL, 0, 0, 0}};

#define MAX_BATCH 1024
/* One f32 tensor of this many elements is 1 GiB; --batch may not go past it. */
#define MAX_ELEMS ((int64_t)1 << 28)
#define NCHECK 32
/* f32 accumulation of sum|x*w| in blocks stays well inside this; a wrong result is O(1). */
#define CHECK_REL 1e-5

typedef struct conv_case {
    const char *name;
    int transposed; /* 0: conv2d, 1: conv_transpose2d */
    int n, c, h, w; /* x */
    int k, r, s;    /* output channels, kernel height and width */
    int stride, pad, output_pad, groups;
} conv_case;

static const conv_case cases[] = {{"l1_512x7x7_k3", 0, 32, 512, 7, 7, 512, 3, 3, 1, 1, 0, 1},
                                  {"l2_64x56x56_k3", 0, 8, 64, 56, 56, 64, 3, 3, 1, 1, 0, 1},
                                  {"l3_256x14x14_k3", 0, 8, 256, 14, 14, 256, 3, 3, 1, 1, 0, 1},
                                  {"l4_3x224x224_k7s2", 0, 8, 3, 224, 224, 64, 7, 7, 2, 3, 0, 1},
                                  {"pw_256x28x28_k1", 0, 8, 256, 28, 28, 128, 1, 1, 1, 0, 0, 1},
                                  {"dw_128x56x56_k3", 0, 8, 128, 56, 56, 128, 3, 3, 1, 1, 0, 128},
                                  {"s2_128x28x28_k3s2", 0, 8, 128, 28, 28, 256, 3, 3, 2, 1, 0, 1},
                                  {"tr_256x14x14_k4s2", 1, 8, 256, 14, 14, 128, 4, 4, 2, 1, 0, 1},
                                  {"tr_64x56x56_k3s2", 1, 8, 64, 56, 56, 32, 3, 3, 2, 1, 1, 1}};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct conv_result {
    const conv_case *c;
    int n;               /* images per call: --batch, else the case's own */
    int64_t p, q;        /* output height and width */
    double gflop;        /* work of one call */
    lumen_status status; /* LUMEN_OK, or LUMEN_ERR_UNSUPPORTED for a skipped case */
    char skipped[200];
    double ms_cold, ms_min, ms_median;
    double check_err; /* max |lumen - float64| over the spot-checked outputs */
    int check_ok;
    lumen_run_info info;
} conv_result;

typedef struct conv_state {
    cli_common common;
    int json, repeat, batch; /* batch 0: each case's own */
    int selected[NCASES];
} conv_state;

/* One case's tensors, as the API takes them. */
typedef struct conv_tensors {
    float *x, *w, *y;
    lumen_image xi, wi, yi;
    lumen_conv2d_params params;
} conv_tensors;

static const char *op_name(const conv_case *c)
{
    return c->transposed ? "conv_transpose2d" : "conv2d";
}

static int case_batch(const conv_state *st, const conv_case *c)
{
    return st->batch ? st->batch : c->n;
}

/* Weight shape: (K, C/g, R, S) for conv2d, (C, K/g, R, S) for the transposed op. */
static void weight_dims(const conv_case *c, int64_t *w0, int64_t *w1)
{
    *w0 = c->transposed ? c->c : c->k;
    *w1 = c->transposed ? c->k / c->groups : c->c / c->groups;
}

/* PyTorch's output size (dilation 1) along an axis of size n. */
static int64_t out_size(const conv_case *c, int64_t n, int ksize)
{
    if (c->transposed) return (n - 1) * c->stride - 2 * c->pad + ksize - 1 + c->output_pad + 1;
    return (n + 2 * c->pad - ksize) / c->stride + 1;
}

/* ---- flags ------------------------------------------------------------ */

static void case_list(char *buf, size_t size)
{
    snprintf(buf, size, "conv2d, conv_transpose2d");
    for (int i = 0; i < NCASES; i++) {
        strncat(buf, ", ", size - strlen(buf) - 1);
        strncat(buf, cases[i].name, size - strlen(buf) - 1);
    }
}

static int case_matches(int i, const char *token)
{
    return !strcmp(token, cases[i].name) || !strcmp(token, op_name(&cases[i]));
}

/* Marks the cases a comma-separated list of names or ops picks; unknown items are errors. */
static int select_cases(const char *name, const char *value, int *selected)
{
    char valid[512];
    case_list(valid, sizeof valid);
    return cli_arg_select(name, value, NCASES, case_matches, valid, selected);
}

static int on_flag(void *state, int id, const char *name, const char *value)
{
    conv_state *st = state;
    switch (id) {
    case F_JSON: st->json = 1; return 0;
    case F_CASE: return select_cases(name, value, st->selected);
    case F_REPEAT: return cli_arg_int(name, value, 5, 1000, &st->repeat);
    case F_BATCH: return cli_arg_int(name, value, 1, MAX_BATCH, &st->batch);
    default: return cli_common_flag(&st->common, id, name, value);
    }
}

/* --batch and --case together: every tensor of every selected case must fit MAX_ELEMS. */
static int check_batch(const conv_state *st)
{
    for (int i = 0; i < NCASES; i++) {
        const conv_case *c = &cases[i];
        if (!st->selected[i]) continue;
        int64_t n = case_batch(st, c);
        int64_t x = n * c->c * c->h * c->w;
        int64_t y = n * c->k * out_size(c, c->h, c->r) * out_size(c, c->w, c->s);
        if (x <= MAX_ELEMS && y <= MAX_ELEMS) continue;
        cli_error("--batch", "%lld makes a tensor of %s larger than %lld elements", (long long)n,
                  c->name, (long long)MAX_ELEMS);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* ---- data --------------------------------------------------------------- */

/* Fixed seeds, values in [-1, 1): identical inputs on every run and machine. */
static void free_tensors(conv_tensors *t)
{
    free(t->x);
    free(t->w);
    free(t->y);
}

static int alloc_tensors(const conv_result *r, conv_tensors *t)
{
    const conv_case *c = r->c;
    int64_t w0, w1;
    weight_dims(c, &w0, &w1);
    size_t nx = (size_t)r->n * c->c * c->h * c->w, nw = (size_t)(w0 * w1) * c->r * c->s;
    size_t ny = (size_t)r->n * c->k * (size_t)(r->p * r->q);
    t->x = cli_random_floats(nx, 42, -1.0f, 1.0f);
    t->w = cli_random_floats(nw, 43, -1.0f, 1.0f);
    t->y = malloc(ny * sizeof *t->y);
    if (!t->x || !t->w || !t->y) {
        free_tensors(t);
        cli_error(c->name, "out of memory");
        return CLI_EXIT_FAIL;
    }
    /* Touched now, so the cold call does not pay the page faults of the bench's own output. */
    memset(t->y, 0, ny * sizeof *t->y);
    t->xi = lumen_image_nchw(t->x, LUMEN_F32, r->n, c->c, c->h, c->w);
    t->wi = lumen_image_nchw(t->w, LUMEN_F32, w0, w1, c->r, c->s);
    t->yi = lumen_image_nchw(t->y, LUMEN_F32, r->n, c->k, r->p, r->q);
    t->params = lumen_conv2d_params_default();
    t->params.stride_h = t->params.stride_w = c->stride;
    t->params.pad_h = t->params.pad_w = c->pad;
    t->params.output_pad_h = t->params.output_pad_w = c->output_pad;
    t->params.groups = c->groups;
    return 0;
}

/* ---- spot check: a few outputs in float64 ------------------------------- */

typedef struct conv_sums {
    double sum, abs_sum; /* sum of x*w and of |x*w|: the value and the scale of its error */
} conv_sums;

static void add_term(conv_sums *acc, float x, float w)
{
    double t = (double)x * (double)w;
    acc->sum += t;
    acc->abs_sum += fabs(t);
}

/* y[n][k][p][q] of conv2d: sum over c in k's group, r, s of x[n][c][p*st-pad+r][q*st-pad+s]. */
static conv_sums conv2d_at(const conv_case *c, const conv_tensors *t, int64_t n, int64_t k,
                           int64_t p, int64_t q)
{
    conv_sums acc = {0, 0};
    int64_t cg = c->c / c->groups, c0 = k / (c->k / c->groups) * cg;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int r = 0; r < c->r; r++)
            for (int s = 0; s < c->s; s++) {
                int64_t h = p * c->stride - c->pad + r, w = q * c->stride - c->pad + s;
                if (h < 0 || h >= c->h || w < 0 || w >= c->w) continue;
                float xv = t->x[((n * c->c + c0 + ci) * c->h + h) * c->w + w];
                add_term(&acc, xv, t->w[((k * cg + ci) * c->r + r) * c->s + s]);
            }
    return acc;
}

/* y[n][k][p][q] of conv_transpose2d: every x[n][c][h][w] with h*st-pad+r == p (same for q)
 * of k's group, times w[c][k - group start][r][s]. */
static conv_sums transposed_at(const conv_case *c, const conv_tensors *t, int64_t n, int64_t k,
                               int64_t p, int64_t q)
{
    conv_sums acc = {0, 0};
    int64_t kg = c->k / c->groups, cg = c->c / c->groups, g = k / kg;
    for (int64_t ci = g * cg; ci < (g + 1) * cg; ci++)
        for (int r = 0; r < c->r; r++)
            for (int s = 0; s < c->s; s++) {
                int64_t hs = p + c->pad - r, ws = q + c->pad - s;
                if (hs < 0 || ws < 0 || hs % c->stride || ws % c->stride) continue;
                int64_t h = hs / c->stride, w = ws / c->stride;
                if (h >= c->h || w >= c->w) continue;
                float xv = t->x[((n * c->c + ci) * c->h + h) * c->w + w];
                add_term(&acc, xv, t->w[((ci * kg + k % kg) * c->r + r) * c->s + s]);
            }
    return acc;
}

/* The i-th checked output: the first and the last (corners, where padding counts),
 * then places drawn by a fixed-seed LCG. */
static int64_t check_index(int i, int64_t total, uint64_t *seed)
{
    if (i == 0) return 0;
    if (i == 1) return total - 1;
    int64_t idx = (int64_t)(cli_lcg_unit(seed) * (double)total);
    return idx < total ? idx : total - 1;
}

/* Compares NCHECK outputs with float64 sums of their terms. */
static void spot_check(const conv_tensors *t, conv_result *r)
{
    const conv_case *c = r->c;
    int64_t total = (int64_t)r->n * c->k * r->p * r->q;
    uint64_t seed = 7;
    r->check_err = 0;
    r->check_ok = 1;
    for (int i = 0; i < NCHECK; i++) {
        int64_t idx = check_index(i, total, &seed);
        int64_t q = idx % r->q, p = idx / r->q % r->p, k = idx / (r->q * r->p) % c->k,
                n = idx / (r->q * r->p * c->k);
        conv_sums want =
            c->transposed ? transposed_at(c, t, n, k, p, q) : conv2d_at(c, t, n, k, p, q);
        double err = fabs((double)t->y[idx] - want.sum);
        if (!(err <= CHECK_REL * want.abs_sum + FLT_MIN)) r->check_ok = 0; /* NaN fails too */
        if (!(err <= r->check_err)) r->check_err = err;
    }
}

/* ---- timing ------------------------------------------------------------- */

static lumen_status call_case(lumen_context *ctx, const conv_result *r, const conv_tensors *t,
                              lumen_run_info *info)
{
    if (r->c->transposed)
        return lumen_conv_transpose2d(ctx, &t->xi, &t->wi, NULL, &t->params, &t->yi, info);
    return lumen_conv2d(ctx, &t->xi, &t->wi, NULL, &t->params, &t->yi, info);
}

/* One cold (warm-up) call, then `repeat` timed calls; returns a status from the library. */
static lumen_status time_case(lumen_context *ctx, const conv_tensors *t, int repeat, double *ms,
                              conv_result *r)
{
    double t0 = cli_now_ms();
    lumen_status s = call_case(ctx, r, t, &r->info);
    r->ms_cold = cli_now_ms() - t0;
    for (int i = 0; !s && i < repeat; i++) {
        t0 = cli_now_ms();
        s = call_case(ctx, r, t, &r->info);
        ms[i] = cli_now_ms() - t0;
    }
    if (!s) cli_min_median(ms, repeat, &r->ms_min, &r->ms_median);
    return s;
}

/* Times r on a context of its own, so the cold call pays every one-time cost. */
static int time_on_fresh_context(const conv_state *st, const conv_tensors *t, double *ms,
                                 conv_result *r)
{
    lumen_context *ctx = NULL;
    int rc = cli_context_create(&st->common, &ctx);
    if (rc) return rc;
    cli_note_software_device(ctx);
    r->status = time_case(ctx, t, st->repeat, ms, r);
    if (r->status == LUMEN_ERR_UNSUPPORTED) /* reported as skipped, not a failure */
        snprintf(r->skipped, sizeof r->skipped, "%s", lumen_last_error());
    else if (r->status)
        rc = cli_lib_error(r->c->name, r->status);
    else
        spot_check(t, r);
    lumen_context_destroy(ctx);
    return rc;
}

static int run_case(const conv_state *st, conv_result *r)
{
    const conv_case *c = r->c;
    r->n = case_batch(st, c);
    r->p = out_size(c, c->h, c->r);
    r->q = out_size(c, c->w, c->s);
    /* conv2d: every output sums C/g*R*S terms; transposed: every input feeds K/g*R*S. */
    double terms = c->transposed ? (double)c->c * c->h * c->w * (c->k / c->groups)
                                 : (double)c->k * r->p * r->q * (c->c / c->groups);
    r->gflop = 2.0 * r->n * terms * c->r * c->s * 1e-9;
    conv_tensors t = {0};
    int rc = alloc_tensors(r, &t);
    if (rc) return rc;
    double *ms = malloc((size_t)st->repeat * sizeof *ms);
    if (!ms) {
        cli_error(c->name, "out of memory");
        rc = CLI_EXIT_FAIL;
    } else {
        rc = time_on_fresh_context(st, &t, ms, r);
    }
    free(ms);
    free_tensors(&t);
    return rc;
}

/* ---- output ------------------------------------------------------------- */

static const char *or_unknown(const char *s)
{
    return s ? s : "?";
}

static double gflops(const conv_result *r, double ms)
{
    return ms > 0 ? r->gflop / ms * 1e3 : 0;
}

/* "32x512x7x7 * 512x512x3x3 p1", "8x64x56x56 *T 64x32x3x3 s2 p1 op1", "... g128". */
static void shape_text(const conv_result *r, char *buf, size_t size)
{
    const conv_case *c = r->c;
    int64_t w0, w1;
    weight_dims(c, &w0, &w1);
    int len = snprintf(buf, size, "%dx%dx%dx%d %s %lldx%lldx%dx%d", r->n, c->c, c->h, c->w,
                       c->transposed ? "*T" : "*", (long long)w0, (long long)w1, c->r, c->s);
    if (c->stride > 1) len += snprintf(buf + len, size - (size_t)len, " s%d", c->stride);
    if (c->pad > 0) len += snprintf(buf + len, size - (size_t)len, " p%d", c->pad);
    if (c->output_pad > 0) len += snprintf(buf + len, size - (size_t)len, " op%d", c->output_pad);
    if (c->groups > 1) snprintf(buf + len, size - (size_t)len, " g%d", c->groups);
}

static void print_table_header(const conv_state *st)
{
    printf("lumen %s bench conv: f32 NCHW, 1 cold + %d warm runs, GFLOP/s on the min; "
           "check: %d outputs against float64\n",
           lumen_version(), st->repeat, NCHECK);
    printf("%-18s  %-16s  %-36s  %-16s  %-14s  %-8s  %7s  %9s  %9s  %9s  %8s  %s\n", "name", "op",
           "shape (x * w)", "out", "algo", "isa", "threads", "cold ms", "min ms", "median ms",
           "GFLOP/s", "check (max abs err)");
}

static void print_table_row(FILE *f, const conv_result *r)
{
    char shape[96], out[48];
    shape_text(r, shape, sizeof shape);
    snprintf(out, sizeof out, "%dx%dx%lldx%lld", r->n, r->c->k, (long long)r->p, (long long)r->q);
    fprintf(f, "%-18s  %-16s  %-36s  %-16s  ", r->c->name, op_name(r->c), shape, out);
    if (r->status) {
        fprintf(f, "skipped: %s\n", r->skipped);
        return;
    }
    fprintf(f, "%-14s  %-8s  %7d  %9.3f  %9.3f  %9.3f  %8.1f  %s %.2g\n", or_unknown(r->info.algo),
            or_unknown(r->info.isa), r->info.threads, r->ms_cold, r->ms_min, r->ms_median,
            gflops(r, r->ms_min), r->check_ok ? "ok" : "FAILED", r->check_err);
}

/* The fields every row has: what was asked for. */
static void print_json_case(const conv_state *st, const conv_result *r)
{
    const conv_case *c = r->c;
    char shape[96];
    shape_text(r, shape, sizeof shape);
    fputs("  {\"name\": ", stdout);
    cli_json_string(stdout, c->name);
    printf(", \"op\": \"%s\", \"shape\": ", op_name(c));
    cli_json_string(stdout, shape);
    printf(", \"n\": %d, \"c\": %d, \"h\": %d, \"w\": %d, \"k\": %d, \"r\": %d, \"s\": %d, "
           "\"stride\": %d, \"pad\": %d, \"dilation\": 1, \"groups\": %d, \"output_pad\": %d, "
           "\"out_h\": %lld, \"out_w\": %lld, \"dtype\": \"f32\", \"gflop\": %.9g, "
           "\"repeat\": %d",
           r->n, c->c, c->h, c->w, c->k, c->r, c->s, c->stride, c->pad, c->groups, c->output_pad,
           (long long)r->p, (long long)r->q, r->gflop, st->repeat);
}

/* What happened: timings, rates and the library's choices, or why the case was skipped. */
static void print_json_outcome(const conv_result *r)
{
    if (r->status) {
        fputs(", \"status\": \"unsupported\", \"error\": ", stdout);
        cli_json_string(stdout, r->skipped);
        fputs(", \"algo\": null, \"device\": null, \"isa\": null, \"threads\": null, "
              "\"ms_cold\": null, \"ms_min\": null, \"ms_median\": null, \"gflops\": null, "
              "\"gflops_median\": null, \"check\": null, \"check_max_abs_err\": null}",
              stdout);
        return;
    }
    fputs(", \"status\": \"ok\", \"algo\": ", stdout);
    cli_json_string(stdout, or_unknown(r->info.algo));
    fputs(", \"device\": ", stdout);
    cli_json_string(stdout, or_unknown(r->info.device));
    fputs(", \"isa\": ", stdout);
    cli_json_string(stdout, or_unknown(r->info.isa));
    printf(", \"threads\": %d, \"ms_cold\": %.4f, \"ms_min\": %.4f, \"ms_median\": %.4f, "
           "\"gflops\": %.6g, \"gflops_median\": %.6g, \"check\": \"%s\", "
           "\"check_points\": %d, \"check_max_abs_err\": %.3g}",
           r->info.threads, r->ms_cold, r->ms_min, r->ms_median, gflops(r, r->ms_min),
           gflops(r, r->ms_median), r->check_ok ? "ok" : "failed", NCHECK, r->check_err);
}

static void print_json(const conv_state *st, const conv_result *results, int n)
{
    fputs("[\n", stdout);
    for (int i = 0; i < n; i++) {
        print_json_case(st, &results[i]);
        print_json_outcome(&results[i]);
        fputs(i + 1 < n ? ",\n" : "\n", stdout);
    }
    fputs("]\n", stdout);
}

/* ---- driver ------------------------------------------------------------- */

/* Runs the selected cases; the table is printed as it goes, JSON once all ran. A failed spot
 * check is reported and makes the exit status 1, but the timings are still printed. */
static int run_all(const conv_state *st)
{
    conv_result results[NCASES];
    int n = 0, rc = 0, failed = 0;
    if (!st->json) print_table_header(st);
    for (int i = 0; i < NCASES; i++) {
        if (!st->selected[i]) continue;
        conv_result *r = &results[n];
        memset(r, 0, sizeof *r);
        r->c = &cases[i];
        if ((rc = run_case(st, r))) break;
        n++;
        if (!st->json) print_table_row(stdout, r);
        fflush(stdout);
        if (st->common.verbose) print_table_row(stderr, r);
        if (r->status && st->json && !st->common.verbose)
            cli_error(r->c->name, "skipped: %s", r->skipped);
        if (!r->status && !r->check_ok) {
            cli_error(r->c->name,
                      "spot check failed: max |lumen - float64| = %.3g over %d "
                      "outputs (limit %g * sum|x*w| per output)",
                      r->check_err, NCHECK, CHECK_REL);
            failed = 1;
        }
    }
    if (!rc && st->json) print_json(st, results, n);
    return rc ? rc : failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cmd_bench_conv(int argc, char **argv)
{
    const cli_command cmd = {"bench conv", flags, on_flag, NULL, 0, 0};
    conv_state st = {{0}, 0, 7, 0, {0}};
    for (int i = 0; i < NCASES; i++)
        st.selected[i] = 1;
    int rc = cli_parse(&cmd, argc, argv, &st, NULL);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_OWN_VERBOSE, examples);
    if (rc || (rc = check_batch(&st))) return rc;
    return run_all(&st);
}
