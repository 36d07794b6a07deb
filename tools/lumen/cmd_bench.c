/* `lumen bench`: in-process timings of filter2d and Gaussian blur on a generated image. */
#include "args.h"
#include "bench_floors.h"
#include "bench_photo.h"
#include "cli.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: lumen bench [--json] [--size WxH] [--photo-size WxH] [--repeat N]\n"
    "                   [--case NAMES] [options]\n"
    "       lumen bench conv [--json] [--case NAMES] [--repeat N] [--batch N] [options]\n"
    "       lumen bench floors [--json] [--size WxH] [--repeat N] [options]\n"
    "\n"

    "Times the ops in this process on a generated single-channel f32 image with\n"
    "deterministic pseudo-random pixels. Each case gets a fresh context and runs\n"
    "once cold (ms_cold: the first call with its one-time costs: FFT plans, which\n"
    "FFTW wisdom from earlier runs makes cheaper, the kernel's spectrum, thread\n"
    "start-up, page faults, and the cost model's calibration the first time auto\n"
    "runs on a machine), then N warm times on the same context (ms_min, ms_median).\n"
    "Cases (all run by default, about 10 s at 3000x2000 on 2 cores):\n"
    "  filter2d_k3 .. filter2d_k201   filter2d, random non-separable k x k kernel\n"
    "                                 (fixed seed), k = 3, 7, 15, 31, 61, 121, 201,\n"
    "                                 method auto (big kernels pick the FFT)\n"
    "  filter2d_k61_batch10           filter2d_k61 in one call on a batch of 10\n"
    "                                 images (n = 10), one kernel\n"
    "  gaussian_s1 .. gaussian_s50    exact Gaussian blur, sigma 1, 3, 10, 30, 50 with\n"
    "                                 ksize = 2*round(3*sigma)+1 = 7 .. 301, method auto\n"
    "  gaussian_fast_s30, _s50        Gaussian blur, --precision fast (recursive,\n"
    "                                 no ksize)\n"
    "  photo_u8_*, photo_u16_*        issue 30's photo cases: a w x h x 3 interleaved\n"
    "                                 u8 or u16 RGB image (--photo-size, 4000x3000),\n"
    "                                 border reflect101: filter2d_k3 (sharpen),\n"
    "                                 _k5, _k7 (positive, normalised), gauss_s1, _s2,\n"
    "                                 _s3, _s5 (ksize as OpenCV derives it),\n"
    "                                 box_k5, _k15, resize_half, _quarter (linear,\n"
    "                                 OpenCV's rule; u8 also _pil: Pillow's),\n"
    "                                 crop_resize (centre half, then 1/2; u8 also\n"
    "                                 _pil), film (portra400); each with its memory\n"
    "                                 floor: a memcpy of the photo on the same\n"
    "                                 threads, scaled to the bytes the case reads and\n"
    "                                 writes (as 'lumen bench floors'), and lumen /\n"
    "                                 floor. 'photo', 'photo_u8', 'photo_u16' pick them\n"
    "The f32 cases use --border reflect. A case the library answers 'unsupported' is\n"
    "listed as skipped (JSON: \"status\": \"unsupported\"), not as a failure.\n"
    "'lumen bench conv' times NCHW conv2d and conv_transpose2d layers instead, with\n"
    "GFLOP/s (see 'lumen bench conv --help'); 'lumen bench floors' measures the\n"
    "machine's floors (memcpy, FMA peak, FFTW pair) and each case's floor.\n"
    "\n"
    "Options:\n"
    "  --json            print a JSON list of results instead of a table (default: table)\n"
    "  --size WxH        image width x height, up to 65536 each (default: 3000x2000;\n"
    "                    also the photo cases' unless --photo-size is given)\n"
    "  --photo-size WxH  the photo cases' image (default: --size when given, else\n"
    "                    4000x3000)\n"
    "  --repeat N        warm runs per case, 5-1000 (default: 7)\n"
    "  --case NAMES      comma-separated case names, ops (filter2d, gaussian) or photo\n"
    "                    groups (photo, photo_u8, photo_u16, photo_u8_gauss, ...) to run\n"
    "                    (default: all)\n"
    "  -v, --verbose     print each case to stderr as it finishes\n";

static const char examples[] =
    "\n"
    "Example:\n"
    "  lumen bench --size 1920x1080 --repeat 9 --case filter2d_k61,gaussian --json\n"
    "  lumen bench --case photo_u8 --repeat 5\n";

enum { F_JSON = CLI_FLAG_CMD, F_SIZE, F_REPEAT, F_CASE, F_PHOTO_SIZE };

static const cli_flag flags[] = {
    {"json", 0, 0, F_JSON}, {"size", 0, 1, F_SIZE}, {"repeat", 0, 1, F_REPEAT},
    {"case", 0, 1, F_CASE}, {"photo-size", 0, 1, F_PHOTO_SIZE}, CLI_COMMON_FLAGS,
    CLI_FFT_FLAGS,          {NULL, 0, 0, 0}};

#define BENCH_MAX_SIDE 65536
/* Two f32 buffers of this many pixels (all images of a batch) already take 2 GiB. */
#define BENCH_MAX_PIXELS ((int64_t)1 << 28)

#define EXACT LUMEN_PRECISION_EXACT
#define FAST LUMEN_PRECISION_FAST

typedef struct bench_case {
    const char *name;
    const char *op;            /* "filter2d" or "gaussian" */
    int ksize;                 /* filter2d: k; gaussian: derived from sigma at run time */
    double sigma;              /* gaussian only */
    lumen_precision precision; /* gaussian only; filter2d is always exact */
    int batch;                 /* images per call */
} bench_case;

static const bench_case cases[] = {
    {"filter2d_k3", "filter2d", 3, 0.0, EXACT, 1},
    {"filter2d_k7", "filter2d", 7, 0.0, EXACT, 1},
    {"filter2d_k15", "filter2d", 15, 0.0, EXACT, 1},
    {"filter2d_k31", "filter2d", 31, 0.0, EXACT, 1},
    {"filter2d_k61", "filter2d", 61, 0.0, EXACT, 1},
    {"filter2d_k121", "filter2d", 121, 0.0, EXACT, 1},
    {"filter2d_k201", "filter2d", 201, 0.0, EXACT, 1},
    {"filter2d_k61_batch10", "filter2d", 61, 0.0, EXACT, 10},
    {"gaussian_s1", "gaussian", 0, 1.0, EXACT, 1},
    {"gaussian_s3", "gaussian", 0, 3.0, EXACT, 1},
    {"gaussian_s10", "gaussian", 0, 10.0, EXACT, 1},
    {"gaussian_s30", "gaussian", 0, 30.0, EXACT, 1},
    {"gaussian_s50", "gaussian", 0, 50.0, EXACT, 1},
    {"gaussian_fast_s30", "gaussian", 0, 30.0, FAST, 1},
    {"gaussian_fast_s50", "gaussian", 0, 50.0, FAST, 1}};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct bench_result {
    const bench_case *c;
    int ksize;           /* 0 for the fast Gaussian, which has none */
    lumen_status status; /* LUMEN_OK, or LUMEN_ERR_UNSUPPORTED for a skipped case */
    char skipped[200];   /* the library's reason when skipped */
    double ms_cold, ms_min, ms_median;
    lumen_run_info info;
} bench_result;

/* Room for the photo cases (bench_photo.c) after the f32 ones in the selection. */
#define PHOTO_MAX 64
#define NALL (NCASES + photo_ncases)

typedef struct bench_state {
    cli_common common;
    int json;
    int w, h, repeat;
    int selected[NCASES + PHOTO_MAX]; /* the f32 cases, then photo_cases */
    int size_given, photo_w, photo_h;
} bench_state;

/* The input and output of every case: room for the largest batch selected. */
typedef struct bench_buffers {
    float *in, *out;
    int batch;
} bench_buffers;

static const char *precision_name(lumen_precision p) { return p == FAST ? "fast" : "exact"; }

/* ---- flags ------------------------------------------------------------ */

/* "filter2d, gaussian, filter2d_k3, ...": what --case accepts. */
static void case_list(char *buf, size_t size)
{
    snprintf(buf, size, "filter2d, gaussian, photo, photo_u8, photo_u16");
    for (int i = 0; i < NCASES; i++) {
        strncat(buf, ", ", size - strlen(buf) - 1);
        strncat(buf, cases[i].name, size - strlen(buf) - 1);
    }
    strncat(buf, ", photo_u8_filter2d_k3 .. photo_u16_film (lumen bench --help)",
            size - strlen(buf) - 1);
}

static int case_matches(int i, const char *token)
{
    if (i < NCASES) return !strcmp(token, cases[i].name) || !strcmp(token, cases[i].op);
    /* a photo case by name, or by a group: a prefix of its name ending before a '_' that is
     * not itself a case's name (photo_u8_resize_half is one case, not a group of two) */
    const char *name = photo_cases[i - NCASES].name;
    const size_t n = strlen(token);
    if (!strcmp(token, name)) return 1;
    for (int j = 0; j < photo_ncases; j++)
        if (!strcmp(token, photo_cases[j].name)) return 0;
    return !strncmp(token, "photo", 5) && !strncmp(name, token, n) && name[n] == '_';
}

/* Marks the cases a comma-separated list of names or ops picks; unknown items are errors. */
static int select_cases(const char *name, const char *value, int *selected)
{
    char valid[768];
    case_list(valid, sizeof valid);
    return cli_arg_select(name, value, NALL, case_matches, valid, selected);
}

static int on_flag(void *state, int id, const char *name, const char *value)
{
    bench_state *st = state;
    switch (id) {
    case F_JSON: st->json = 1; return 0;
    case F_SIZE:
        st->size_given = 1;
        return cli_arg_size(name, value, BENCH_MAX_SIDE, &st->w, &st->h);
    case F_PHOTO_SIZE:
        return cli_arg_size(name, value, BENCH_MAX_SIDE, &st->photo_w, &st->photo_h);
    case F_REPEAT: return cli_arg_int(name, value, 5, 1000, &st->repeat);
    case F_CASE: return select_cases(name, value, st->selected);
    default: return cli_common_flag(&st->common, id, name, value);
    }
}

/* Images per call of the largest batch selected. */
static int max_batch(const bench_state *st)
{
    int b = 1;
    for (int i = 0; i < NCASES; i++)
        if (st->selected[i] && cases[i].batch > b) b = cases[i].batch;
    return b;
}

/* --size and --case together: all images of the largest selected batch must fit the limit. */
static int check_size(const bench_state *st)
{
    if ((int64_t)st->photo_w * st->photo_h > BENCH_MAX_PIXELS) {
        cli_error("--photo-size", "%dx%d has more than %lld pixels", st->photo_w, st->photo_h,
                  (long long)BENCH_MAX_PIXELS);
        return CLI_EXIT_USAGE;
    }
    int batch = max_batch(st);
    if ((int64_t)st->w * st->h * batch <= BENCH_MAX_PIXELS) return 0;
    if (batch == 1)
        cli_error("--size", "%dx%d has more than %lld pixels", st->w, st->h,
                  (long long)BENCH_MAX_PIXELS);
    else
        cli_error("--size", "%dx%d x %d images (the batch case) is more than %lld pixels; pick a "
                            "smaller --size or leave the batch case out with --case",
                  st->w, st->h, batch, (long long)BENCH_MAX_PIXELS);
    return CLI_EXIT_USAGE;
}

/* ---- data --------------------------------------------------------------- */

/* Fixed seeds: identical inputs on every run and machine. */

/* One random image (seed 42), repeated for every image of the largest batch; a zeroed output. */
static int alloc_buffers(const bench_state *st, bench_buffers *b)
{
    size_t npix = (size_t)st->w * (size_t)st->h;
    b->batch = max_batch(st);
    b->in = malloc(npix * (size_t)b->batch * sizeof *b->in);
    b->out = malloc(npix * (size_t)b->batch * sizeof *b->out);
    float *first = cli_random_floats(npix, 42, 0.0f, 1.0f);
    int ok = b->in && b->out && first;
    for (int i = 0; ok && i < b->batch; i++) memcpy(b->in + npix * (size_t)i, first, npix * 4);
    /* Touched now, so no cold call pays the page faults of the bench's own output buffer. */
    if (ok) memset(b->out, 0, npix * (size_t)b->batch * sizeof *b->out);
    free(first);
    if (ok) return 0;
    cli_error("bench", "out of memory for %d image(s) of %dx%d", b->batch, st->w, st->h);
    return CLI_EXIT_FAIL;
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
    lumen_gaussian_options o = lumen_gaussian_options_default();
    o.ksize_x = o.ksize_y = r->ksize; /* 0 for fast, which ignores it */
    o.sigma_x = o.sigma_y = r->c->sigma;
    o.precision = r->c->precision;
    return lumen_gaussian_blur_ex(ctx, src, dst, &o, info);
}

/* Sorts ms in place and fills min and median. */
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
    if (!s) cli_min_median(ms, repeat, &r->ms_min, &r->ms_median);
    return s;
}

/* Times r on a context of its own, so the cold call pays every one-time cost. */
static int time_on_fresh_context(const bench_state *st, const bench_buffers *b,
                                 const float *kernel, double *ms, bench_result *r)
{
    lumen_context *ctx = NULL;
    int rc = cli_context_create(&st->common, &ctx);
    if (rc) return rc;
    cli_note_software_device(ctx);
    int n = r->c->batch;
    lumen_image src = lumen_image_nhwc(b->in, LUMEN_F32, n, st->h, st->w, 1);
    lumen_image dst = lumen_image_nhwc(b->out, LUMEN_F32, n, st->h, st->w, 1);
    r->status = time_case(ctx, &src, &dst, kernel, st->repeat, ms, r);
    if (r->status == LUMEN_ERR_UNSUPPORTED) /* reported as skipped, not a failure */
        snprintf(r->skipped, sizeof r->skipped, "%s", lumen_last_error());
    else if (r->status)
        rc = cli_lib_error(r->c->name, r->status);
    lumen_context_destroy(ctx);
    return rc;
}

static int run_case(const bench_state *st, const bench_buffers *b, bench_result *r)
{
    int is_filter = !strcmp(r->c->op, "filter2d");
    if (is_filter)
        r->ksize = r->c->ksize;
    else
        r->ksize = r->c->precision == FAST ? 0 : gaussian_case_ksize(r->c->sigma);
    size_t taps = (size_t)r->ksize * (size_t)r->ksize;
    float *kernel =
        is_filter ? cli_random_floats(taps, 1000u + (uint64_t)r->ksize, -1.0f, 1.0f) : NULL;
    double *ms = malloc((size_t)st->repeat * sizeof *ms);
    int rc = CLI_EXIT_OK;
    if (!ms || (is_filter && !kernel)) {
        cli_error(r->c->name, "out of memory");
        rc = CLI_EXIT_FAIL;
    } else {
        rc = time_on_fresh_context(st, b, kernel, ms, r);
    }
    free(ms);
    free(kernel);
    return rc;
}

/* ---- output ------------------------------------------------------------- */

static const char *or_unknown(const char *s) { return s ? s : "?"; }

static void print_table_header(const bench_state *st)
{
    printf("lumen %s bench: %dx%d f32, 1 channel, %d warm runs, border reflect, "
           "fft planning %s\n",
           lumen_version(), st->w, st->h, st->repeat,
           st->common.fft_planning == LUMEN_FFT_MEASURE ? "measure" : "estimate");
    printf("%-20s  %-8s  %5s  %5s  %-9s  %5s  %-9s  %-6s  %-8s  %7s  %9s  %9s  %9s\n", "name",
           "op", "ksize", "sigma", "precision", "batch", "method", "device", "isa", "threads",
           "cold ms", "min ms", "median ms");
}

static void print_table_row(FILE *f, const bench_result *r)
{
    char sigma[16] = "-", ksize[16] = "-";
    if (r->c->sigma > 0) snprintf(sigma, sizeof sigma, "%g", r->c->sigma);
    if (r->ksize > 0) snprintf(ksize, sizeof ksize, "%d", r->ksize);
    fprintf(f, "%-20s  %-8s  %5s  %5s  %-9s  %5d  ", r->c->name, r->c->op, ksize, sigma,
            precision_name(r->c->precision), r->c->batch);
    if (r->status) {
        fprintf(f, "skipped: %s\n", r->skipped);
        return;
    }
    fprintf(f, "%-9s  %-6s  %-8s  %7d  %9.3f  %9.3f  %9.3f\n", lumen_method_name(r->info.method),
            or_unknown(r->info.device), or_unknown(r->info.isa), r->info.threads, r->ms_cold,
            r->ms_min, r->ms_median);
}

/* , "key": v, or null where v is not positive (no ksize, no sigma). */
static void print_json_opt(const char *key, double v)
{
    printf(", \"%s\": ", key);
    if (v > 0)
        printf("%g", v);
    else
        fputs("null", stdout);
}

/* The fields every row has: what was asked for. */
static void print_json_case(const bench_state *st, const bench_result *r)
{
    fputs("  {\"name\": ", stdout);
    cli_json_string(stdout, r->c->name);
    fputs(", \"op\": ", stdout);
    cli_json_string(stdout, r->c->op);
    print_json_opt("ksize", r->ksize);
    print_json_opt("sigma", r->c->sigma);
    printf(", \"precision\": \"%s\", \"batch\": %d, \"width\": %d, \"height\": %d, "
           "\"dtype\": \"f32\", \"channels\": 1, \"repeat\": %d, \"fft_planning\": \"%s\"",
           precision_name(r->c->precision), r->c->batch, st->w, st->h, st->repeat,
           st->common.fft_planning == LUMEN_FFT_MEASURE ? "measure" : "estimate");
}

/* What happened: timings and the library's choices, or why the case was skipped; with a
 * floor (floor_ms > 0, the photo cases) also lumen's ratio to it. Closes the case's object. */
static void print_json_timing(lumen_status status, const char *skipped, const lumen_run_info *info,
                              double ms_cold, double ms_min, double ms_median, double floor_ms)
{
    const char *ratio_null = floor_ms > 0 ? ", \"floor_ratio\": null" : "";
    if (status) {
        fputs(", \"status\": \"unsupported\", \"error\": ", stdout);
        cli_json_string(stdout, skipped);
        printf(", \"method\": null, \"device\": null, \"isa\": null, \"threads\": null, "
               "\"ms_cold\": null, \"ms_min\": null, \"ms_median\": null%s}",
               ratio_null);
        return;
    }
    fputs(", \"status\": \"ok\", \"method\": ", stdout);
    cli_json_string(stdout, lumen_method_name(info->method));
    fputs(", \"device\": ", stdout);
    cli_json_string(stdout, or_unknown(info->device));
    fputs(", \"isa\": ", stdout);
    cli_json_string(stdout, or_unknown(info->isa));
    printf(", \"threads\": %d, \"ms_cold\": %.4f, \"ms_min\": %.4f, \"ms_median\": %.4f",
           info->threads, ms_cold, ms_min, ms_median);
    if (floor_ms > 0) printf(", \"floor_ratio\": %.4f", ms_min / floor_ms);
    fputs("}", stdout);
}

static void print_json_outcome(const bench_result *r)
{
    print_json_timing(r->status, r->skipped, &r->info, r->ms_cold, r->ms_min, r->ms_median, 0.0);
}



/* ---- photo cases (issue 30; bench_photo.c) ------------------------------ */

typedef struct photo_result {
    const photo_case *c;
    lumen_status status;
    char skipped[200];
    int out_w, out_h;
    double ms_cold, ms_min, ms_median, floor_ms;
    lumen_run_info info;
} photo_result;

/* The photo image of one dtype, a zeroed output as large, and its memcpy floor. */
typedef struct photo_buffers {
    void *in, *out;
    double memcpy_ms;
} photo_buffers;

static int any_photo(const bench_state *st, lumen_dtype dtype)
{
    for (int i = 0; i < photo_ncases; i++)
        if (st->selected[NCASES + i] && photo_cases[i].dtype == dtype) return 1;
    return 0;
}

static int photo_alloc(const bench_state *st, lumen_dtype dtype, photo_buffers *b)
{
    const size_t bytes = photo_image_bytes(dtype, st->photo_w, st->photo_h);
    b->in = photo_image(dtype, st->photo_w, st->photo_h);
    b->out = malloc(bytes);
    if (!b->in || !b->out) {
        cli_error("bench", "out of memory for a %dx%d %s RGB image", st->photo_w, st->photo_h,
                  lumen_dtype_name(dtype));
        return CLI_EXIT_FAIL;
    }
    memset(b->out, 0, bytes); /* touched now: no cold call pays the bench's page faults */
    double median;
    /* the floor: a memcpy of the image on the context's threads, as lumen bench floors */
    if (floors_memcpy(bytes, cli_common_threads(&st->common), 8 * st->repeat, &b->memcpy_ms,
                      &median)) {
        cli_error("bench", "out of memory for the memcpy floor");
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

static lumen_status photo_time(lumen_context *ctx, const bench_state *st, const photo_buffers *b,
                               const float *kernel, const lumen_film_stock *stock, double *ms,
                               photo_result *r)
{
    double t0 = cli_now_ms();
    lumen_status s = photo_case_run(ctx, r->c, b->in, st->photo_w, st->photo_h, b->out, kernel,
                                    stock, &r->info);
    r->ms_cold = cli_now_ms() - t0;
    for (int i = 0; !s && i < st->repeat; i++) {
        t0 = cli_now_ms();
        s = photo_case_run(ctx, r->c, b->in, st->photo_w, st->photo_h, b->out, kernel, stock,
                           &r->info);
        ms[i] = cli_now_ms() - t0;
    }
    if (!s) cli_min_median(ms, st->repeat, &r->ms_min, &r->ms_median);
    return s;
}

/* One photo case on a fresh context: a cold call, then --repeat warm ones. */
static int photo_run(const bench_state *st, const photo_buffers *b, photo_result *r)
{
    float kernel[49];
    lumen_film_stock stock;
    if (r->c->op == PHOTO_FILTER2D) photo_kernel(r->c->k, kernel);
    if (r->c->op == PHOTO_FILM && lumen_film_stock_get("portra400", &stock))
        return cli_lib_error(r->c->name, LUMEN_ERR_INVALID_ARGUMENT);
    photo_out_size(r->c, st->photo_w, st->photo_h, &r->out_w, &r->out_h);
    r->floor_ms = b->memcpy_ms * photo_traffic_bytes(r->c, st->photo_w, st->photo_h) /
                  (2.0 * (double)photo_image_bytes(r->c->dtype, st->photo_w, st->photo_h));
    double *ms = malloc((size_t)st->repeat * sizeof *ms);
    lumen_context *ctx = NULL;
    int rc = ms ? cli_context_create(&st->common, &ctx) : CLI_EXIT_FAIL;
    if (!ms) cli_error(r->c->name, "out of memory");
    if (!rc) {
        r->status = photo_time(ctx, st, b, kernel, &stock, ms, r);
        if (r->status == LUMEN_ERR_UNSUPPORTED)
            snprintf(r->skipped, sizeof r->skipped, "%s", lumen_last_error());
        else if (r->status)
            rc = cli_lib_error(r->c->name, r->status);
        lumen_context_destroy(ctx);
    }
    free(ms);
    return rc;
}

static void photo_table_header(const bench_state *st)
{
    printf("\nphoto cases: %dx%d interleaved RGB, border reflect101, %d warm runs; floor = "
           "memcpy of the photo (same threads) scaled to the case's read + write bytes\n",
           st->photo_w, st->photo_h, st->repeat);
    printf("%-28s  %-11s  %-5s  %5s  %-11s  %-9s  %-8s  %7s  %9s  %9s  %9s  %9s  %7s  %s\n",
           "name", "op", "dtype", "ksize", "out", "method", "isa", "threads", "cold ms",
           "min ms", "median ms", "floor ms", "l/floor", "target");
}

static void photo_table_row(FILE *f, const photo_result *r)
{
    char ksize[16] = "-", out[32], target[16] = "-";
    if (photo_case_ksize(r->c)) snprintf(ksize, sizeof ksize, "%d", photo_case_ksize(r->c));
    snprintf(out, sizeof out, "%dx%d", r->out_w, r->out_h);
    fprintf(f, "%-28s  %-11s  %-5s  %5s  %-11s  ", r->c->name, photo_op_name(r->c->op),
            lumen_dtype_name(r->c->dtype), ksize, out);
    if (r->status) {
        fprintf(f, "skipped: %s\n", r->skipped);
        return;
    }
    const double ratio = r->ms_min / r->floor_ms;
    if (r->c->floor_limit > 0)
        snprintf(target, sizeof target, "<=%.1f %s", r->c->floor_limit,
                 ratio <= r->c->floor_limit ? "met" : "MISSED");
    fprintf(f, "%-9s  %-8s  %7d  %9.3f  %9.3f  %9.3f  %9.3f  %7.2f  %s\n",
            lumen_method_name(r->info.method), or_unknown(r->info.isa), r->info.threads,
            r->ms_cold, r->ms_min, r->ms_median, r->floor_ms, ratio, target);
}

static void photo_json_row(const bench_state *st, const photo_result *r)
{
    fputs("  {\"name\": ", stdout);
    cli_json_string(stdout, r->c->name);
    printf(", \"op\": \"%s\"", photo_op_name(r->c->op));
    print_json_opt("ksize", photo_case_ksize(r->c));
    print_json_opt("sigma", r->c->sigma);
    printf(", \"rule\": ");
    if (r->c->op == PHOTO_RESIZE || r->c->op == PHOTO_CROP_RESIZE)
        printf("\"%s\"", lumen_resize_rule_name(r->c->rule));
    else
        fputs("null", stdout);
    printf(", \"batch\": 1, \"width\": %d, \"height\": %d, \"dtype\": \"%s\", "
           "\"channels\": 3, \"out_width\": %d, \"out_height\": %d, \"border\": "
           "\"reflect101\", \"repeat\": %d",
           st->photo_w, st->photo_h, lumen_dtype_name(r->c->dtype), r->out_w, r->out_h,
           st->repeat);
    printf(", \"bytes\": %.0f, \"floor_ms\": %.6f, \"floor_target\": ",
           photo_traffic_bytes(r->c, st->photo_w, st->photo_h), r->floor_ms);
    if (r->c->floor_limit > 0)
        printf("%g", r->c->floor_limit);
    else
        fputs("null", stdout);
    print_json_timing(r->status, r->skipped, &r->info, r->ms_cold, r->ms_min, r->ms_median,
                      r->floor_ms);
}

/* Runs the selected photo cases, dtype by dtype (one image of each at a time). */
static int run_photo(const bench_state *st, photo_result *results, int *n)
{
    static const lumen_dtype dtypes[] = {LUMEN_U8, LUMEN_U16};
    int rc = 0, header = 0;
    for (int d = 0; !rc && d < 2; d++) {
        if (!any_photo(st, dtypes[d])) continue;
        photo_buffers b = {NULL, NULL, 0.0};
        rc = photo_alloc(st, dtypes[d], &b);
        if (!rc && !st->json && !header) photo_table_header(st), header = 1;
        for (int i = 0; !rc && i < photo_ncases; i++) {
            if (!st->selected[NCASES + i] || photo_cases[i].dtype != dtypes[d]) continue;
            photo_result *r = &results[(*n)];
            memset(r, 0, sizeof *r);
            r->c = &photo_cases[i];
            if ((rc = photo_run(st, &b, r))) break;
            (*n)++;
            if (!st->json) photo_table_row(stdout, r);
            fflush(stdout);
            if (st->common.verbose) photo_table_row(stderr, r);
        }
        free(b.in);
        free(b.out);
    }
    return rc;
}

/* One list: the f32 rows, then the photo rows (those have "dtype" u8/u16, "channels" 3). */
static void print_json(const bench_state *st, const bench_result *results, int n,
                       const photo_result *photo, int nphoto)
{
    fputs("[\n", stdout);
    for (int i = 0; i < n; i++) {
        print_json_case(st, &results[i]);
        print_json_outcome(&results[i]);
        fputs(i + 1 < n + nphoto ? ",\n" : "\n", stdout);
    }
    for (int i = 0; i < nphoto; i++) {
        photo_json_row(st, &photo[i]);
        fputs(i + 1 < nphoto ? ",\n" : "\n", stdout);
    }
    fputs("]\n", stdout);
}

/* ---- driver ------------------------------------------------------------- */

/* Runs the selected cases; the table is printed as it goes, JSON once all succeeded. */
static int run_all(const bench_state *st, const bench_buffers *b)
{
    bench_result results[NCASES];
    photo_result photo[PHOTO_MAX];
    int n = 0, nphoto = 0, rc = 0, any = 0;
    for (int i = 0; i < NCASES; i++) any |= st->selected[i];
    if (!st->json && any) print_table_header(st);
    for (int i = 0; i < NCASES; i++) {
        if (!st->selected[i]) continue;
        bench_result *r = &results[n];
        memset(r, 0, sizeof *r);
        r->c = &cases[i];
        if ((rc = run_case(st, b, r))) break;
        n++;
        if (!st->json) print_table_row(stdout, r);
        fflush(stdout);
        if (st->common.verbose) print_table_row(stderr, r);
        if (r->status && st->json && !st->common.verbose)
            cli_error(r->c->name, "skipped: %s", r->skipped);
    }
    if (!rc) rc = run_photo(st, photo, &nphoto);
    if (!rc && st->json) print_json(st, results, n, photo, nphoto);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    /* "conv" and "floors" name commands of their own (cmd_bench_conv.c, bench_floors.c);
     * bench itself takes no positional argument, so the word cannot be anything else. */
    if (argc > 1 && !strcmp(argv[1], "conv")) return cmd_bench_conv(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "floors")) return cmd_bench_floors(argc - 1, argv + 1);
    const cli_command cmd = {"bench", flags, on_flag, NULL, 0, 0};
    if (photo_ncases > PHOTO_MAX) /* bench_photo.c's table outgrew the selection */
        return cli_lib_error("bench: PHOTO_MAX", LUMEN_ERR_INVALID_ARGUMENT);
    bench_state st = {{0}, 0, 3000, 2000, 7, {0}, 0, 0, 0};
    for (int i = 0; i < NALL; i++) st.selected[i] = 1;
    int rc = cli_parse(&cmd, argc, argv, &st, NULL);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_FFT | CLI_HELP_OWN_VERBOSE, examples);
    if (!st.photo_w) { /* the photo cases' size: --size when given, else 4000x3000 */
        st.photo_w = st.size_given ? st.w : PHOTO_DEFAULT_W;
        st.photo_h = st.size_given ? st.h : PHOTO_DEFAULT_H;
    }
    if (rc || (rc = check_size(&st))) return rc;
    bench_buffers b = {NULL, NULL, 1};
    int any_f32 = 0; /* no f32 image to make for a run of photo cases alone */
    for (int i = 0; i < NCASES; i++) any_f32 |= st.selected[i];
    if (!any_f32 || !(rc = alloc_buffers(&st, &b))) rc = run_all(&st, &b);
    free(b.in);
    free(b.out);
    return rc;
}
