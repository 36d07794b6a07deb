/*
 * Running a batch (batch.h): worker threads, each with its own lumen context and its share of
 * the threads, take the files in turn; a failed file is reported and the others go on. Then
 * the --json records, the summary and the exit status.
 */
#define _POSIX_C_SOURCE 200809L /* fileno */

#include "batch.h"

#include "cli.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BAR_WIDTH 30

typedef struct batch_run {
    cli_batch *b;
    const cli_common *co;
    const cli_image_op *op;
    cli_batch_hooks hooks; /* all zero: none */
    pthread_mutex_t lock; /* next, done, failed and everything written to stderr */
    int next, done, failed;
    int bar; /* a progress bar is on stderr */
} batch_run;

typedef struct worker {
    batch_run *run;
    lumen_context *ctx;
    pthread_t thread;
} worker;

/* ---- messages --------------------------------------------------------------------- */

/* Messages name stdin (read from memory) and stdout's temporary file as what they stand for. */
static void name_streams(const cli_batch *b, cli_batch_file *f)
{
    size_t size = sizeof f->error;
    char *at;
    const char *paths[2] = {b->from_stdin ? "<memory>" : NULL, b->to_stdout ? f->output : NULL};
    const char *names[2] = {"<stdin>", "<stdout>"};
    for (int i = 0; i < 2; i++) {
        if (!paths[i] || !(at = strstr(f->error, paths[i]))) continue;
        char tail[sizeof f->error];
        snprintf(tail, sizeof tail, "%s", at + strlen(paths[i]));
        snprintf(at, size - (size_t)(at - f->error), "%s%s", names[i], tail);
    }
}

static void fail(cli_batch_file *f, int rc, const char *what, lumen_status s)
{
    cli_lib_message(what, s, f->error, sizeof f->error);
    f->rc = rc;
}

static void bar_clear(const batch_run *r)
{
    if (r->bar) fputs("\r\033[K", stderr);
}

static void bar_draw(const batch_run *r)
{
    if (!r->bar) return;
    const int n = r->b->nfiles, filled = n ? r->done * BAR_WIDTH / n : BAR_WIDTH;
    char cells[BAR_WIDTH + 1];
    memset(cells, '#', (size_t)filled);
    memset(cells + filled, '.', (size_t)(BAR_WIDTH - filled));
    cells[BAR_WIDTH] = '\0';
    fprintf(stderr, "\rlumen %s [%s] %d/%d", r->b->command, cells, r->done, n);
    if (r->failed) fprintf(stderr, ", %d failed", r->failed);
    fflush(stderr);
}

/* A file is done: its error (if any) above the bar, then the bar. Under the lock. */
static void report(batch_run *r, cli_batch_file *f)
{
    r->done++;
    if (f->rc) {
        r->failed++;
        name_streams(r->b, f);
        bar_clear(r);
        fprintf(stderr, "lumen: %s\n", f->error);
    } else if (r->hooks.file_lines && !r->bar && !r->b->opt.quiet) {
        fprintf(stderr, "lumen: %s: %s -> %s, %lldx%lld, %.0f ms\n", r->b->command,
                r->b->from_stdin ? "<stdin>" : f->input, r->b->to_stdout ? "<stdout>" : f->output,
                (long long)f->w, (long long)f->h, f->ms);
    }
    bar_draw(r);
}

/* ---- one file ------------------------------------------------------------------------ */

static int alloc_image(const lumen_image *shape, lumen_dtype dtype, lumen_image *out)
{
    const uint64_t count =
        (uint64_t)shape->n * (uint64_t)shape->c * (uint64_t)shape->h * (uint64_t)shape->w;
    void *data = count <= SIZE_MAX / 4 ? malloc((size_t)count * lumen_dtype_size(dtype)) : NULL;
    if (!data) return -1;
    *out = lumen_image_nhwc(data, dtype, shape->n, shape->h, shape->w, shape->c);
    return 0;
}

/* The output's shape and dtype, and whether the writer takes them (before the op runs). */
static int plan_output(batch_run *r, cli_batch_file *f, const lumen_image *src, lumen_image *dst)
{
    const cli_image_op *op = r->op;
    lumen_image shape = *src;
    int rc = op->shape ? op->shape(op->state, src, &shape, f->error, sizeof f->error) : 0;
    if (rc) return f->rc = rc;
    const lumen_dtype dtype = r->b->opt.dtype >= 0 ? (lumen_dtype)r->b->opt.dtype : shape.dtype;
    if ((rc = cli_batch_check_pixels(r->b, f->output, dtype, shape.c, f->error, sizeof f->error)))
        return f->rc = rc;
    if (alloc_image(&shape, dtype, dst)) {
        snprintf(f->error, sizeof f->error, "%s: out of memory for a %lldx%lldx%lld output",
                 op->name, (long long)shape.w, (long long)shape.h, (long long)shape.c);
        return f->rc = CLI_EXIT_FAIL;
    }
    f->w = shape.w, f->h = shape.h, f->c = shape.c, f->dtype = dtype;
    return 0;
}

static void run_op(batch_run *r, lumen_context *ctx, cli_batch_file *f, const lumen_image *src,
                   const lumen_image *dst)
{
    const cli_image_op *op = r->op;
    const double t0 = cli_now_ms();
    lumen_status s = op->run(op->state, ctx, src, dst, &f->info);
    f->op_ms = cli_now_ms() - t0;
    if (s) return fail(f, CLI_EXIT_FAIL, op->name, s);
    if (!r->co->verbose || !op->verbose) return;
    pthread_mutex_lock(&r->lock);
    bar_clear(r);
    op->verbose(op->state, r->co, src, dst, &f->info, f->op_ms);
    bar_draw(r);
    pthread_mutex_unlock(&r->lock);
}

/* The input with its metadata (ICC profile, EXIF, XMP: carried to the output), upright. */
static lumen_status read_input(const cli_batch *b, const cli_batch_file *f, lumen_image *src,
                               lumen_image_metadata *meta)
{
    if (b->from_stdin)
        return lumen_read_image_memory(b->stdin_data, b->stdin_len, b->stdin_format, &b->opt.read,
                                       src, meta);
    return lumen_read_image_ex(f->input, &b->opt.read, src, meta);
}

/* Read, check the output, filter, write: nothing is written unless all went well. */
static void process(batch_run *r, lumen_context *ctx, cli_batch_file *f)
{
    const cli_batch *b = r->b;
    const double t0 = cli_now_ms();
    lumen_image src = {0}, dst = {0};
    lumen_image_metadata meta = {0};
    lumen_status s = read_input(b, f, &src, &meta);
    if (s)
        fail(f, CLI_EXIT_FAIL, b->from_stdin ? "<stdin>" : f->input, s);
    else if (!plan_output(r, f, &src, &dst))
        run_op(r, ctx, f, &src, &dst);
    if (!f->rc && (s = lumen_write_image_ex(f->output, &dst, &b->opt.write, &meta)))
        fail(f, CLI_EXIT_FAIL, f->output, s);
    if (!f->rc && r->hooks.written) f->rc = r->hooks.written(r->hooks.state, b, f, &src, &dst);
    free(dst.data);
    lumen_image_free(&src);
    lumen_image_metadata_free(&meta);
    f->ms = cli_now_ms() - t0;
}

static void *work(void *arg)
{
    worker *w = arg;
    batch_run *r = w->run;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        const int i = r->next < r->b->nfiles ? r->next++ : -1;
        pthread_mutex_unlock(&r->lock);
        if (i < 0) return NULL;
        process(r, w->ctx, &r->b->files[i]);
        pthread_mutex_lock(&r->lock);
        report(r, &r->b->files[i]);
        pthread_mutex_unlock(&r->lock);
    }
}

/* ---- workers -------------------------------------------------------------------------- */

/* One context per worker, made before any file is read (a bad --device stops the run here),
 * each with an equal share of the threads one context would have had. */
static int make_workers(batch_run *r, worker *w, int jobs)
{
    cli_common co = *r->co;
    if (jobs > 1) {
        const int share = cli_common_threads(r->co) / jobs;
        co.threads = share > 1 ? share : 1;
    }
    for (int i = 0; i < jobs; i++) {
        w[i].run = r;
        int rc = cli_context_create(&co, &w[i].ctx);
        if (rc) return rc;
    }
    return 0;
}

static void run_workers(worker *w, int jobs)
{
    if (jobs == 1) {
        work(&w[0]); /* no thread for the common case: plain stacks in a debugger */
        return;
    }
    int started = 0;
    for (; started < jobs; started++)
        if (pthread_create(&w[started].thread, NULL, work, &w[started])) break;
    if (started == 0) work(&w[0]); /* no thread could start: do it all here */
    for (int i = 0; i < started; i++)
        pthread_join(w[i].thread, NULL);
}

/* ---- after the run ----------------------------------------------------------------------- */

static void json_record(const cli_batch *b, const cli_batch_file *f, int last)
{
    const int ran = f->info.device != NULL;
    printf("    {\"input\": ");
    cli_json_string(stdout, b->from_stdin ? "-" : f->input);
    printf(", \"output\": ");
    cli_json_string(stdout, b->to_stdout ? "-" : f->output);
    printf(", \"status\": \"%s\", \"ms\": %.3f, \"op_ms\": %.3f", f->rc ? "failed" : "ok", f->ms,
           f->op_ms);
    if (ran && !f->rc) {
        printf(", \"width\": %lld, \"height\": %lld, \"channels\": %lld, \"dtype\": \"%s\"",
               (long long)f->w, (long long)f->h, (long long)f->c, lumen_dtype_name(f->dtype));
        printf(", \"method\": ");
        cli_json_string(stdout, lumen_method_name(f->info.method));
        printf(", \"algo\": ");
        if (f->info.algo)
            cli_json_string(stdout, f->info.algo);
        else
            printf("null");
        printf(", \"device\": ");
        cli_json_string(stdout, f->info.device);
        printf(", \"isa\": ");
        cli_json_string(stdout, f->info.isa);
        printf(", \"threads\": %d", f->info.threads);
    }
    printf(", \"error\": ");
    if (f->rc)
        cli_json_string(stdout, f->error);
    else
        printf("null");
    printf("}%s\n", last ? "" : ",");
}

static void print_json(const batch_run *r)
{
    const cli_batch *b = r->b;
    printf("{\n  \"command\": ");
    cli_json_string(stdout, b->command);
    printf(",\n  \"ok\": %d,\n  \"failed\": %d,\n  \"files\": [\n", b->nfiles - r->failed,
           r->failed);
    for (int i = 0; i < b->nfiles; i++)
        json_record(b, &b->files[i], i == b->nfiles - 1);
    printf("  ]\n}\n");
}

/* OUT '-': the finished file, copied to stdout. */
static int copy_to_stdout(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        cli_error("<stdout>", "cannot reopen the result: %s", path);
        return CLI_EXIT_FAIL;
    }
    char buf[65536];
    size_t n;
    int bad = 0;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
        bad = fwrite(buf, 1, n, stdout) != n;
    bad |= ferror(in) || fflush(stdout) != 0;
    fclose(in);
    if (bad) cli_error("<stdout>", "cannot write the image to stdout");
    return bad ? CLI_EXIT_FAIL : 0;
}

/* One file: its own exit status. Several: 1 if any failed, after a summary line. */
static int finish(const batch_run *r)
{
    const cli_batch *b = r->b;
    if (b->opt.json) print_json(r);
    bar_clear(r);
    if (b->single) {
        const int rc = b->files[0].rc;
        return !rc && b->to_stdout ? copy_to_stdout(b->files[0].output) : rc;
    }
    if (r->failed)
        fprintf(stderr, "lumen: %s: %d of %d files failed, %d written to %s\n", b->command,
                r->failed, b->nfiles, b->nfiles - r->failed, b->opt.output_dir);
    else if (!b->opt.quiet && r->bar)
        fprintf(stderr, "lumen: %s: %d files written to %s\n", b->command, b->nfiles,
                b->opt.output_dir);
    return r->failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_batch_run(cli_batch *b, const cli_common *co, const cli_image_op *op)
{
    return cli_batch_run_hooks(b, co, op, NULL);
}

int cli_batch_run_hooks(cli_batch *b, const cli_common *co, const cli_image_op *op,
                        const cli_batch_hooks *hooks)
{
    batch_run r = {.b = b, .co = co, .op = op};
    if (hooks) r.hooks = *hooks;
    /* Default: a file per thread, as many at once as a context would have threads. Codecs run
     * serially and a small image's op is short, so whole files in parallel beat the op's own
     * threads on small images and match them on big ones (README, "Batches": measured). */
    int jobs = b->opt.jobs > 0 ? b->opt.jobs : cli_common_threads(co);
    if (jobs > CLI_MAX_JOBS) jobs = CLI_MAX_JOBS;
    if (jobs > b->nfiles) jobs = b->nfiles;
    r.bar = !b->single && !b->opt.quiet && b->nfiles > 1 && isatty(fileno(stderr));
    worker *w = calloc((size_t)jobs, sizeof *w);
    if (!w) {
        cli_error(b->command, "out of memory");
        return CLI_EXIT_FAIL;
    }
    pthread_mutex_init(&r.lock, NULL);
    int rc = make_workers(&r, w, jobs);
    if (!rc) {
        bar_draw(&r);
        run_workers(w, jobs);
        rc = finish(&r);
    }
    for (int i = 0; i < jobs; i++)
        lumen_context_destroy(w[i].ctx);
    pthread_mutex_destroy(&r.lock);
    free(w);
    return rc;
}
