/*
 * `lumen <op>`: every op of the descriptor table (include/lumen_ops.h) as a command, built from
 * its descriptor alone: positionals, flags, --help, range checks, reading the inputs, the output
 * shape, the call and the atomic write. docs/descriptors.md says how a descriptor becomes a
 * command; a new op needs no code here.
 */
#include "args.h"
#include "batch.h"
#include "cli.h"
#include "lumen_ops.h"

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_MAX_ARGS 32
#define OP_FLAG_LEN 48

/* One command line of one op: its flag table, what each argument was given, and its inputs. */
typedef struct op_cli {
    const lumen_op_desc *op;
    cli_flag flags[OP_MAX_ARGS + 16];
    char flag_names[OP_MAX_ARGS][OP_FLAG_LEN]; /* "border-value", "no-normalize" */
    const char *pos_names[OP_MAX_ARGS + 1];    /* "X", "WEIGHT", ..., "OUT" */
    char pos_text[OP_MAX_ARGS][OP_FLAG_LEN];
    int pos_arg[OP_MAX_ARGS]; /* the argument of each positional but OUT */
    int npos;                 /* positionals, OUT included */
    int img_pos;              /* the image input's positional, for a batch; -1: not an image op */
    cli_common common;
    cli_batch_opts batch;
    lumen_value values[OP_MAX_ARGS];
    const char *paths[OP_MAX_ARGS];  /* files of the array arguments */
    lumen_image images[OP_MAX_ARGS]; /* what was read, freed at the end */
    float *arrays[OP_MAX_ARGS];      /* kernels and vectors converted to float */
} op_cli;

static int is_array(lumen_arg_type t)
{
    return t == LUMEN_ARG_IMAGE || t == LUMEN_ARG_TENSOR || t == LUMEN_ARG_KERNEL ||
           t == LUMEN_ARG_VECTOR;
}

/* Required arrays are positionals, in the descriptor's order; everything else is a flag. */
static int is_positional(const lumen_arg_desc *a)
{
    return is_array(a->type) && (a->flags & LUMEN_ARG_REQUIRED);
}

/* A switch that turns a default-on bool off is spelled --no-NAME. */
static int is_negated_switch(const lumen_arg_desc *a)
{
    return a->type == LUMEN_ARG_BOOL && a->def[0] != 0;
}

static void spell_flag(const lumen_arg_desc *a, char *buf)
{
    snprintf(buf, OP_FLAG_LEN, "%s%s", is_negated_switch(a) ? "no-" : "", a->name);
    for (char *p = buf; *p; p++)
        if (*p == '_') *p = '-';
}

static void spell_positional(const lumen_arg_desc *a, char *buf)
{
    snprintf(buf, OP_FLAG_LEN, "%s", a->name);
    for (char *p = buf; *p; p++)
        *p = *p == '_' ? '-' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
}

/* An image op (one image in, an image out) runs as a batch: many files, --output-dir, stdin. */
static int image_positional(const op_cli *c)
{
    int img = -1, n = 0;
    for (int p = 0; p + 1 < c->npos; p++)
        if (c->op->args[c->pos_arg[p]].type == LUMEN_ARG_IMAGE) img = p, n++;
    return c->op->output == LUMEN_ARG_IMAGE && n == 1 ? img : -1;
}

/* Builds the flag table and the positionals from the descriptor. */
static void build_command(op_cli *c)
{
    const lumen_op_desc *op = c->op;
    static const cli_flag common[] = {CLI_COMMON_FLAGS, CLI_FFT_FLAGS};
    static const cli_flag batch[] = {CLI_BATCH_FLAGS};
    int nf = 0;
    lumen_op_values_init(op, c->values);
    c->batch = cli_batch_opts_default();
    for (int i = 0; i < op->n_args; i++) {
        const lumen_arg_desc *a = &op->args[i];
        if (is_positional(a)) {
            spell_positional(a, c->pos_text[c->npos]);
            c->pos_names[c->npos] = c->pos_text[c->npos];
            c->pos_arg[c->npos++] = i;
            continue;
        }
        spell_flag(a, c->flag_names[i]);
        c->flags[nf++] =
            (cli_flag){c->flag_names[i], 0, a->type != LUMEN_ARG_BOOL, CLI_FLAG_CMD + i};
    }
    c->pos_names[c->npos++] = "OUT";
    /* --fft-planning only where the FFT can run: the image filters. */
    const int ncommon = (int)(sizeof common / sizeof common[0]) - (op->output != LUMEN_ARG_IMAGE);
    for (int i = 0; i < ncommon; i++)
        c->flags[nf++] = common[i];
    c->img_pos = image_positional(c);
    for (size_t i = 0; c->img_pos >= 0 && i < sizeof batch / sizeof batch[0]; i++)
        c->flags[nf++] = batch[i];
    c->flags[nf] = (cli_flag){NULL, 0, 0, 0};
}

/* ---- values ---- */

static int parse_enum(const char *name, const char *value, const lumen_arg_desc *a, int64_t *out)
{
    const char *names[OP_MAX_ARGS];
    int n = 0;
    for (const lumen_choice *ch = a->choices; ch->name && n < OP_MAX_ARGS; ch++)
        names[n++] = ch->name;
    int i;
    if (cli_arg_choice(name, value, names, n, &i)) return CLI_EXIT_USAGE;
    *out = a->choices[i].value;
    return 0;
}

/* Parses one flag's value by its argument's type and range. */
static int parse_value(op_cli *c, int i, const char *name, const char *value)
{
    const lumen_arg_desc *a = &c->op->args[i];
    lumen_value *v = &c->values[i];
    int x, y, rc = 0;
    switch (a->type) {
    case LUMEN_ARG_INT:
        rc = cli_arg_int(name, value, (long)a->min, (long)a->max, &x);
        v->u.i = x;
        break;
    case LUMEN_ARG_INT_PAIR:
        rc = cli_arg_pair(name, value, (long)a->min, (long)a->max,
                          (a->flags & LUMEN_ARG_PAIR_BOTH) != 0, &x, &y);
        v->u.pair[0] = x, v->u.pair[1] = y;
        break;
    case LUMEN_ARG_REAL: rc = cli_arg_real(name, value, a->min, a->max, &v->u.real); break;
    case LUMEN_ARG_BOOL: v->u.i = !is_negated_switch(a); break;
    case LUMEN_ARG_ENUM: rc = parse_enum(name, value, a, &v->u.i); break;
    default: c->paths[i] = value; break; /* an optional array: its file */
    }
    v->given = !rc;
    return rc;
}

static int on_flag(void *state, int id, const char *name, const char *value)
{
    op_cli *c = state;
    if (id >= CLI_FLAG_CMD) return parse_value(c, id - CLI_FLAG_CMD, name, value);
    const int rc = cli_common_flag(&c->common, id, name, value);
    return rc == -1 ? cli_batch_flag(&c->batch, id, name, value) : rc;
}

/* ---- help ---- */

static const char *metavar(const lumen_arg_desc *a)
{
    switch (a->type) {
    case LUMEN_ARG_INT: return "N";
    case LUMEN_ARG_INT_PAIR:
        if (a->flags & LUMEN_ARG_PAIR_SIDES) return "BEFORE[,AFTER]";
        if (a->flags & LUMEN_ARG_PAIR_BOTH) return a->flags & LUMEN_ARG_PAIR_XY ? "X,Y" : "H,W";
        return a->flags & LUMEN_ARG_PAIR_XY ? "X[,Y]" : "H[,W]";
    case LUMEN_ARG_REAL: return "V";
    case LUMEN_ARG_ENUM: return "NAME";
    case LUMEN_ARG_BOOL: return "";
    default: return "FILE";
    }
}

static const char *choice_name(const lumen_arg_desc *a, int value)
{
    for (const lumen_choice *ch = a->choices; ch && ch->name; ch++)
        if (ch->value == value) return ch->name;
    return "?";
}

/* " (one of a, b, c; default: x)" and the like, after the help sentence. */
static void format_details(const lumen_arg_desc *a, char *buf, size_t size)
{
    char range[96] = "", def[96] = "";
    size_t len = 0;
    if (a->type == LUMEN_ARG_ENUM) {
        len = (size_t)snprintf(range, sizeof range, "one of ");
        for (const lumen_choice *ch = a->choices; ch->name && len < sizeof range; ch++)
            len += (size_t)snprintf(range + len, sizeof range - len, "%s%s",
                                    ch == a->choices ? "" : ", ", ch->name);
    } else if (a->type == LUMEN_ARG_INT || a->type == LUMEN_ARG_INT_PAIR ||
               (a->type == LUMEN_ARG_REAL && a->max < FLT_MAX)) {
        const char *kind = a->type == LUMEN_ARG_INT        ? "an integer"
                           : a->type == LUMEN_ARG_INT_PAIR ? "integers"
                                                           : "a number";
        if (a->max >= INT32_MAX)
            snprintf(range, sizeof range, "%s >= %g", kind, a->min);
        else
            snprintf(range, sizeof range, "%s from %g to %g", kind, a->min, a->max);
    }
    if (a->def_text)
        snprintf(def, sizeof def, "default: %s", a->def_text);
    else if (a->flags & LUMEN_ARG_REQUIRED)
        snprintf(def, sizeof def, "required");
    else if (a->type == LUMEN_ARG_ENUM)
        snprintf(def, sizeof def, "default: %s", choice_name(a, (int)a->def[0]));
    else if (a->type == LUMEN_ARG_INT_PAIR && a->def[0] != a->def[1])
        snprintf(def, sizeof def, "default: %g,%g", a->def[0], a->def[1]);
    else if (a->type != LUMEN_ARG_BOOL)
        snprintf(def, sizeof def, "default: %g", a->def[0]);
    snprintf(buf, size, "%s%s%s%s%s", range[0] || def[0] ? " (" : "", range,
             range[0] && def[0] ? "; " : "", def, range[0] || def[0] ? ")" : "");
}

/* "  --stride H[,W]    text..." with the text wrapped at column 20 (a long left part gets a
 * line of its own). */
static void print_entry(const char *left, const char *text)
{
    printf("  %-16s", left);
    cli_print_wrapped(text, 20, strlen(left) > 16 ? 99 : 18);
}

static int print_usage(const op_cli *c)
{
    const lumen_op_desc *op = c->op;
    printf("Usage: lumen %s", op->command);
    for (int i = 0; i < c->npos; i++)
        printf(" %s", c->pos_names[i]);
    printf(" [options]\n");
    if (c->img_pos >= 0) {
        printf("       lumen %s", op->command);
        for (int i = 0; i + 1 < c->npos; i++)
            printf(" %s%s", c->pos_names[i], i == c->img_pos ? "..." : "");
        printf(" --output-dir DIR [options]\n");
    }
    printf("\n");
    char text[2048];
    snprintf(text, sizeof text, "%s. %s (C: lumen_%s.)", op->summary, op->help, op->name);
    cli_print_wrapped(text, 0, 0);
    printf("\nArguments:\n");
    for (int p = 0; p + 1 < c->npos; p++) {
        const lumen_arg_desc *a = &op->args[c->pos_arg[p]];
        snprintf(text, sizeof text, "%s: %s",
                 a->type == LUMEN_ARG_IMAGE ? "image file" : ".npy file", a->help);
        print_entry(c->pos_names[p], text);
    }
    snprintf(text, sizeof text, "%s: %s",
             op->output == LUMEN_ARG_IMAGE ? "image file (by extension)" : ".npy file",
             op->output_help);
    print_entry("OUT", text);
    printf("\nOptions (the Python keywords of lumen.%s):\n", op->name);
    for (int i = 0; i < op->n_args; i++) {
        const lumen_arg_desc *a = &op->args[i];
        if (is_positional(a)) continue;
        char left[OP_FLAG_LEN + 16];
        snprintf(left, sizeof left, "--%s%s%s", c->flag_names[i],
                 a->type == LUMEN_ARG_BOOL ? "" : " ", metavar(a));
        char details[256];
        format_details(a, details, sizeof details);
        snprintf(text, sizeof text, "%s%s", a->help, details);
        print_entry(left, text);
    }
    cli_print_common_help(op->output == LUMEN_ARG_IMAGE ? CLI_HELP_FFT : 0);
    if (c->img_pos >= 0) cli_print_batch_help();
    return CLI_EXIT_OK;
}

/* ---- inputs ---- */

/* Element (b, c, y, x) of a view of any dtype, as float. */
static float element(const lumen_image *t, int64_t y, int64_t x)
{
    const int64_t off = y * t->stride_h + x * t->stride_w;
    return lumen_element_get((const char *)t->data + off * (int64_t)lumen_dtype_size(t->dtype),
                             t->dtype);
}

/* A kernel (at most 2-D) or vector (1-D) file as a new float array. */
static int read_array(op_cli *c, int i, const char *path)
{
    const lumen_arg_desc *a = &c->op->args[i];
    lumen_image *t = &c->images[i];
    lumen_status s = lumen_read_tensor(path, t);
    if (s) return cli_lib_error(path, s);
    const int vector = a->type == LUMEN_ARG_VECTOR;
    if (t->n != 1 || t->c != 1 || (vector && t->h != 1)) {
        char what[OP_FLAG_LEN + 2];
        snprintf(what, sizeof what, "%s%s", is_positional(a) ? "" : "--",
                 is_positional(a) ? a->name : c->flag_names[i]);
        cli_error(what, "%s: expected a %s array, got shape %lldx%lldx%lldx%lld", path,
                  vector ? "1-D" : "2-D", (long long)t->n, (long long)t->c, (long long)t->h,
                  (long long)t->w);
        return CLI_EXIT_FAIL;
    }
    float *f = malloc((size_t)(t->h * t->w) * sizeof *f);
    if (!f) {
        cli_error(path, "out of memory");
        return CLI_EXIT_FAIL;
    }
    for (int64_t y = 0; y < t->h; y++)
        for (int64_t x = 0; x < t->w; x++)
            f[y * t->w + x] = element(t, y, x);
    c->arrays[i] = f;
    lumen_value *v = &c->values[i];
    v->given = 1, v->u.array.data = f, v->u.array.w = t->w, v->u.array.h = t->h;
    return 0;
}

static int read_input(op_cli *c, int i, const char *path)
{
    const lumen_arg_type type = c->op->args[i].type;
    if (type == LUMEN_ARG_KERNEL || type == LUMEN_ARG_VECTOR) return read_array(c, i, path);
    lumen_status s = type == LUMEN_ARG_IMAGE ? lumen_read_image(path, &c->images[i])
                                             : lumen_read_tensor(path, &c->images[i]);
    if (s) return cli_lib_error(path, s);
    c->values[i].given = 1;
    c->values[i].u.image = &c->images[i];
    return 0;
}

/* The inputs but a batch's images (pos[img_pos] is not read when img_pos >= 0). */
static int read_inputs(op_cli *c, const char **pos)
{
    int rc = 0;
    for (int p = 0; !rc && p + 1 < c->npos; p++)
        if (p != c->img_pos) rc = read_input(c, c->pos_arg[p], pos[p]);
    for (int i = 0; !rc && i < c->op->n_args; i++)
        if (c->paths[i]) rc = read_input(c, i, c->paths[i]);
    return rc;
}

/* ---- the call ---- */

/* Library messages name arguments as the descriptor does; the CLI's names are flags. Any
 * failure of output_shape is a mistake on the command line: the caller exits 2. */
static void shape_message(const op_cli *c, lumen_status s, char *buf, size_t size)
{
    const char *msg = lumen_last_error();
    const char *colon = msg ? strchr(msg, ':') : NULL;
    for (int i = 0; colon && i < c->op->n_args; i++) {
        const lumen_arg_desc *a = &c->op->args[i];
        if (!is_positional(a) && strlen(a->name) == (size_t)(colon - msg) &&
            !strncmp(msg, a->name, (size_t)(colon - msg))) {
            snprintf(buf, size, "--%s%s", c->flag_names[i], colon);
            return;
        }
    }
    cli_lib_message(c->op->command, s, buf, size);
}

/* image: the batch's current image, shown in place of the image positional (NULL: none). */
static void print_verbose(const op_cli *c, const lumen_image *image, const lumen_image *out,
                          const lumen_run_info *info, double ms)
{
    fprintf(stderr, "lumen: %s:", c->op->command);
    for (int p = 0; p + 1 < c->npos; p++) {
        const lumen_image *t = p == c->img_pos && image ? image : &c->images[c->pos_arg[p]];
        fprintf(stderr, " %s %lldx%lldx%lldx%lld %s,", c->op->args[c->pos_arg[p]].name,
                (long long)t->n, (long long)t->c, (long long)t->h, (long long)t->w,
                lumen_dtype_name(t->dtype));
    }
    /* Filters report a method, convolutions an algorithm. */
    const char *how = info->algo ? info->algo : lumen_method_name(info->method);
    fprintf(stderr, " out %lldx%lldx%lldx%lld %s, device %s, isa %s, %s %s, threads %d, %.3f ms\n",
            (long long)out->n, (long long)out->c, (long long)out->h, (long long)out->w,
            lumen_dtype_name(out->dtype), info->device ? info->device : "?",
            info->isa ? info->isa : "?", info->algo ? "algo" : "method", how, info->threads, ms);
}

/* Allocates OUT by the descriptor's shape rule (images keep their interleaved layout). */
static int alloc_output(const op_cli *c, const lumen_out_shape *sh, lumen_image *out)
{
    const uint64_t count = (uint64_t)sh->n * (uint64_t)sh->c * (uint64_t)sh->h * (uint64_t)sh->w;
    void *data = count <= SIZE_MAX / 4 ? malloc((size_t)count * lumen_dtype_size(sh->dtype)) : NULL;
    if (!data) {
        cli_error(c->op->command, "out of memory for a %lldx%lldx%lldx%lld output",
                  (long long)sh->n, (long long)sh->c, (long long)sh->h, (long long)sh->w);
        return CLI_EXIT_FAIL;
    }
    *out = sh->type == LUMEN_ARG_IMAGE
               ? lumen_image_nhwc(data, sh->dtype, sh->n, sh->h, sh->w, sh->c)
               : lumen_image_nchw(data, sh->dtype, sh->n, sh->c, sh->h, sh->w);
    return 0;
}

/* The tensor ops (conv): one call on the inputs read, OUT written by its extension. */
static int run_and_write(op_cli *c, lumen_context *ctx, const char *out_path)
{
    lumen_out_shape sh;
    lumen_status s = lumen_op_output_shape(c->op, c->values, &sh);
    if (s) {
        char msg[1024];
        shape_message(c, s, msg, sizeof msg);
        fprintf(stderr, "lumen: %s\n", msg);
        return CLI_EXIT_USAGE;
    }
    lumen_image out;
    int rc = alloc_output(c, &sh, &out);
    if (rc) return rc;
    lumen_run_info info = {LUMEN_METHOD_AUTO, NULL, NULL, 0, NULL};
    const double t0 = cli_now_ms();
    s = lumen_op_invoke(c->op, ctx, c->values, &out, &info);
    const double ms = cli_now_ms() - t0;
    if (s) {
        rc = cli_lib_error(c->op->command, s);
    } else {
        if (c->common.verbose) print_verbose(c, NULL, &out, &info, ms);
        s = sh.type == LUMEN_ARG_IMAGE ? lumen_write_image(out_path, &out)
                                       : lumen_write_tensor(out_path, &out);
        if (s) rc = cli_lib_error(out_path, s);
    }
    free(out.data);
    return rc;
}

/* ---- the image ops as a batch (batch.h); called from its worker threads ---- */

/* The values with this file's image: a copy, since the workers share c. */
static void values_with(const op_cli *c, const lumen_image *src, lumen_value *v)
{
    memcpy(v, c->values, (size_t)c->op->n_args * sizeof *v);
    lumen_value *img = &v[c->pos_arg[c->img_pos]];
    img->given = 1;
    img->u.image = src;
}

static int image_shape(const void *state, const lumen_image *src, lumen_image *shape, char *msg,
                       size_t size)
{
    const op_cli *c = state;
    lumen_value v[OP_MAX_ARGS];
    values_with(c, src, v);
    lumen_out_shape sh;
    lumen_status s = lumen_op_output_shape(c->op, v, &sh);
    if (s) {
        shape_message(c, s, msg, size);
        return CLI_EXIT_USAGE;
    }
    *shape = lumen_image_nhwc(NULL, sh.dtype, sh.n, sh.h, sh.w, sh.c);
    return 0;
}

static lumen_status image_run(const void *state, lumen_context *ctx, const lumen_image *src,
                              const lumen_image *dst, lumen_run_info *info)
{
    const op_cli *c = state;
    lumen_value v[OP_MAX_ARGS];
    values_with(c, src, v);
    return lumen_op_invoke(c->op, ctx, v, dst, info);
}

static void image_verbose(const void *state, const cli_common *co, const lumen_image *src,
                          const lumen_image *dst, const lumen_run_info *info, double ms)
{
    (void)co;
    print_verbose(state, src, dst, info, ms);
}

/* Positionals split, outputs checked, then the other inputs read once and the files run. */
static int run_image_op(op_cli *c, const char **pos, int npos)
{
    const char *other[OP_MAX_ARGS + 1];
    cli_batch b = {0};
    b.opt = c->batch;
    int rc = cli_batch_positionals(&b, c->op->command, c->pos_names, c->npos, c->img_pos, pos,
                                   npos, other);
    if (!rc) rc = cli_batch_prepare(&b);
    if (!rc) rc = cli_common_check(&c->common);
    if (!rc) rc = read_inputs(c, other);
    if (!rc) {
        const cli_image_op op = {c->op->command, image_shape, image_run, image_verbose, c};
        rc = cli_batch_run(&b, &c->common, &op);
    }
    cli_batch_free(&b);
    return rc;
}

static int run_tensor_op(op_cli *c, const char **pos)
{
    lumen_context *ctx = NULL;
    int rc = cli_context_create(&c->common, &ctx);
    if (!rc) rc = read_inputs(c, pos);
    if (!rc) rc = run_and_write(c, ctx, pos[c->npos - 1]);
    lumen_context_destroy(ctx);
    return rc;
}

static void release(op_cli *c)
{
    for (int i = 0; i < OP_MAX_ARGS; i++) {
        lumen_image_free(&c->images[i]);
        free(c->arrays[i]);
    }
}

static int parse_and_run(op_cli *c, int argc, char **argv)
{
    const cli_command cmd = {c->op->command, c->flags, on_flag, c->pos_names, c->npos,
                             c->img_pos >= 0};
    const char **pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof *pos);
    if (!pos) {
        cli_error(c->op->command, "out of memory");
        return CLI_EXIT_FAIL;
    }
    int npos = 0;
    int rc = cli_parse_n(&cmd, argc, argv, c, pos, &npos);
    if (rc == CLI_HELP)
        rc = print_usage(c);
    else if (!rc)
        rc = c->img_pos >= 0 ? run_image_op(c, pos, npos) : run_tensor_op(c, pos);
    free(pos);
    return rc;
}

int cmd_op(const lumen_op_desc *op, int argc, char **argv)
{
    if (op->n_args > OP_MAX_ARGS) {
        cli_error(op->command, "the descriptor has more than %d arguments", OP_MAX_ARGS);
        return CLI_EXIT_FAIL;
    }
    op_cli *c = calloc(1, sizeof *c);
    if (!c) {
        cli_error(op->command, "out of memory");
        return CLI_EXIT_FAIL;
    }
    c->op = op;
    build_command(c);
    int rc = parse_and_run(c, argc, argv);
    release(c);
    free(c);
    return rc;
}
