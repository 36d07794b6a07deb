/* `lumen film`: a film look from a stock preset (lumen_film: spectral response, bloom,
 * halation, tone curve, grain; Phos's formulas, docs/film.md) on one image or many, with a
 * before | after picture on request (--compare). */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include "args.h"
#include "batch.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Strengths scale the stock's effects: 0 turns one off, 1 is the stock's, 10 a lot. */
#define FILM_MAX_STRENGTH 10.0

static const char usage[] =
    "Usage: lumen film IN OUT --stock NAME [options]\n"
    "       lumen film IN... --output-dir DIR --stock NAME [options]\n"
    "       lumen film --list-stocks          (or --stock list)\n"
    "\n"
    "The look of a film stock, with Phos's formulas (docs/film.md): the stock's spectral\n"
    "response, bloom (light scattered in the emulsion), halation (light reflected from the\n"
    "film base: red glows around highlights), its tone curve and seeded grain. u8 and u16\n"
    "images are taken as sRGB (decoded to linear light and encoded back), f32 ones (.exr,\n"
    ".npy, .tif) as linear. 1 or 3 channels; an alpha channel (2 or 4) is kept as it is.\n"
    "OUT keeps IN's dtype and channels. Formats by extension: .npy .png .jpg .jpeg .tif\n"
    ".tiff .webp .exr.\n"
    "\n"
    "Options:\n"
    "  --stock NAME      the film stock (required): portra400, hp5plus400, ...;\n"
    "                    'list' prints them\n"
    "  --list-stocks     print the stocks, their titles, ISO and kind, and exit\n"
    "  --halation S      halation strength, 0-10 (default: 1, the stock's; 0: off)\n"
    "  --bloom S         bloom strength, 0-10 (default: 1; 0: off)\n"
    "  --grain S         grain strength, 0-10 (default: 1; 0: off)\n"
    "  --seed N          the grain's seed, 0-18446744073709551615 (default: 0): a seed\n"
    "                    gives the same grain on every device and thread count, and the\n"
    "                    same bytes on every run\n"
    "  --compare         also write OUT's name without its extension + '-compare.png':\n"
    "                    IN | OUT side by side, 8-bit sRGB (f32 values encoded to sRGB)\n";

static const char examples[] =
    "\n"
    "At the end (unless --quiet) a line gives the files, their megapixels, the film time per\n"
    "megapixel and the device; without a progress bar, a line per file comes before it.\n"
    "\n"
    "Examples:\n"
    "  lumen film --list-stocks\n"
    "  lumen film photo.jpg portra.jpg --stock portra400 --compare\n"
    "  lumen film shots/ --output-dir glow --stock portra400 --halation 3 --grain 0.5\n"
    "  lumen film scan.exr bw.exr --stock hp5plus400 --seed 7 --device vulkan:0 -v\n";

enum { F_STOCK = CLI_FLAG_CMD, F_HALATION, F_BLOOM, F_GRAIN, F_SEED, F_COMPARE, F_LIST };

static const cli_flag flags[] = {{"stock", 0, 1, F_STOCK},
                                 {"halation", 0, 1, F_HALATION},
                                 {"bloom", 0, 1, F_BLOOM},
                                 {"grain", 0, 1, F_GRAIN},
                                 {"seed", 0, 1, F_SEED},
                                 {"compare", 0, 0, F_COMPARE},
                                 {"list-stocks", 0, 0, F_LIST},
                                 CLI_COMMON_FLAGS,
                                 CLI_FFT_FLAGS,
                                 CLI_BATCH_FLAGS,
                                 {NULL, 0, 0, 0}};

typedef struct film_state {
    cli_common common;
    cli_batch_opts batch;
    const char *stock_name; /* NULL: not given */
    lumen_film_stock stock;
    lumen_film_options opt;
    int compare, list;
} film_state;

/* ---- flags ------------------------------------------------------------------------------ */

/* A decimal uint64 (strtoull alone would take "-1" and " 7"). */
static int parse_seed(const char *name, const char *value, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (!*value || strspn(value, "0123456789") != strlen(value) || errno || *end) {
        cli_error(name, "expected a whole number from 0 to 18446744073709551615, got '%s'", value);
        return CLI_EXIT_USAGE;
    }
    *out = (uint64_t)v;
    return 0;
}

static int on_flag(void *state, int id, const char *name, const char *value)
{
    film_state *st = state;
    switch (id) {
    case F_STOCK:
        st->stock_name = value;
        st->list |= !strcmp(value, "list");
        return 0;
    case F_HALATION: return cli_arg_real(name, value, 0, FILM_MAX_STRENGTH, &st->opt.halation);
    case F_BLOOM: return cli_arg_real(name, value, 0, FILM_MAX_STRENGTH, &st->opt.bloom);
    case F_GRAIN: return cli_arg_real(name, value, 0, FILM_MAX_STRENGTH, &st->opt.grain);
    case F_SEED: return parse_seed(name, value, &st->opt.seed);
    case F_COMPARE: st->compare = 1; return 0;
    case F_LIST: st->list = 1; return 0;
    case CLI_FLAG_DTYPE:
        /* u8/u16 hold sRGB and f32 linear light: a cast would mean neither. */
        cli_error(name, "film keeps the input's dtype (u8/u16 are sRGB, f32/f16/bf16 linear light); "
                        "--compare writes an 8-bit picture of any input");
        return CLI_EXIT_USAGE;
    default: {
        int rc = cli_common_flag(&st->common, id, name, value);
        return rc == -1 ? cli_batch_flag(&st->batch, id, name, value) : rc;
    }
    }
}

/* ---- stocks ----------------------------------------------------------------------------- */

/* The names of lumen_film_stock_names(), one at a time: 0 at the end. */
static int next_name(const char **p, char *name, size_t size)
{
    while (**p == ',' || **p == ' ')
        (*p)++;
    size_t len = strcspn(*p, ",");
    if (!len) return 0;
    snprintf(name, size, "%.*s", (int)len, *p);
    *p += len;
    return 1;
}

static int list_stocks(void)
{
    char name[64];
    for (const char *p = lumen_film_stock_names(); next_name(&p, name, sizeof name);) {
        lumen_film_stock s;
        if (lumen_film_stock_get(name, &s)) return cli_lib_error(name, LUMEN_ERR_INTERNAL);
        printf("%-16s %s (%s, ISO %d%s)\n", s.name, s.title, s.color ? "colour" : "black and white",
               s.iso, s.halation_enabled ? "" : ", no halation");
    }
    return CLI_EXIT_OK;
}

/* "portra400, cinestill800t": the names for a message. */
static void stock_names(char *buf, size_t size)
{
    char name[64];
    size_t len = 0;
    buf[0] = '\0';
    for (const char *p = lumen_film_stock_names(); next_name(&p, name, sizeof name) && len < size;)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", name);
}

static int get_stock(film_state *st)
{
    char names[1024];
    stock_names(names, sizeof names);
    if (!st->stock_name) {
        cli_error("film", "missing --stock NAME (stocks: %s; see 'lumen film --list-stocks')",
                  names);
        return CLI_EXIT_USAGE;
    }
    if (lumen_film_stock_get(st->stock_name, &st->stock) == LUMEN_OK) return 0;
    cli_error("--stock", "unknown stock '%s' (stocks: %s; see 'lumen film --list-stocks')",
              st->stock_name, names);
    return CLI_EXIT_USAGE;
}

/* ---- the op ------------------------------------------------------------------------------ */

static size_t offset(const lumen_image *im, int64_t y, int64_t x, int64_t c)
{
    return (size_t)(y * im->stride_h + x * im->stride_w + c * im->stride_c);
}

/* Channel c - 1 of src into dst, element by element: the alpha channel the film leaves. */
static void copy_alpha(const lumen_image *src, const lumen_image *dst)
{
    const size_t es = lumen_dtype_size(src->dtype);
    const int64_t a = src->c - 1;
    for (int64_t y = 0; y < src->h; y++)
        for (int64_t x = 0; x < src->w; x++)
            memcpy((char *)dst->data + offset(dst, y, x, a) * es,
                   (const char *)src->data + offset(src, y, x, a) * es, es);
}

static lumen_status run(const void *state, lumen_context *ctx, const lumen_image *src,
                        const lumen_image *dst, lumen_run_info *info)
{
    const film_state *st = state;
    if (src->c != 2 && src->c != 4) return lumen_film(ctx, src, dst, &st->stock, &st->opt, info);
    /* Grey + alpha or RGBA: the film runs on a view of the colour channels. */
    lumen_image colour_src = *src, colour_dst = *dst;
    colour_src.c = colour_dst.c = src->c - 1;
    lumen_status s = lumen_film(ctx, &colour_src, &colour_dst, &st->stock, &st->opt, info);
    if (!s) copy_alpha(src, dst);
    return s;
}

static void print_verbose(const void *state, const cli_common *co, const lumen_image *src,
                          const lumen_image *dst, const lumen_run_info *info, double ms)
{
    const film_state *st = state;
    (void)co, (void)dst;
    fprintf(stderr,
            "lumen: film: %lldx%lld %lldch %s, stock %s, halation %g, bloom %g, grain %g, seed "
            "%llu, device %s, isa %s, threads %d, %.3f ms\n",
            (long long)src->w, (long long)src->h, (long long)src->c, lumen_dtype_name(src->dtype),
            st->stock.name, st->opt.halation, st->opt.bloom, st->opt.grain,
            (unsigned long long)st->opt.seed, info->device ? info->device : "?",
            info->isa ? info->isa : "?", info->threads, ms);
}

/* ---- the compare picture ----------------------------------------------------------------- */

/* sRGB encoding of linear [0, 1] as 8-bit levels, in 65536 steps: at the curve's steepest
 * slope (12.92, near black) one step is 0.05 of a level. */
#define SRGB_STEPS 65536
static unsigned char srgb_table[SRGB_STEPS];

static void make_srgb_table(void)
{
    for (int i = 0; i < SRGB_STEPS; i++) {
        const double v = (double)i / (SRGB_STEPS - 1);
        const double e = v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1 / 2.4) - 0.055;
        srgb_table[i] = (unsigned char)lrint(e * 255);
    }
}

/* One element as an 8-bit sRGB level: u8 as is, u16 scaled (both hold sRGB), f32 encoded. */
static unsigned char level(const lumen_image *im, int64_t y, int64_t x, int64_t c)
{
    const size_t i = offset(im, y, x, c);
    switch (im->dtype) {
    case LUMEN_U8: return ((const unsigned char *)im->data)[i];
    case LUMEN_U16:
        return (unsigned char)((((const uint16_t *)im->data)[i] * 255u + 32767u) / 65535u);
    default: { /* f32, f16, bf16: linear light */
        const float v =
            lumen_element_get((const char *)im->data + i * lumen_dtype_size(im->dtype), im->dtype);
        if (!(v > 0)) return 0; /* NaN too */
        return srgb_table[v >= 1 ? SRGB_STEPS - 1 : (int)lrintf(v * (SRGB_STEPS - 1))];
    }
    }
}

/* OUT without its extension, then "-compare.png": out/a.jpg gives out/a-compare.png. */
static char *compare_path(const char *output)
{
    const char *slash = strrchr(output, '/');
    const char *base = slash ? slash + 1 : output;
    const char *dot = strrchr(base, '.');
    const size_t stem = dot && dot != base ? (size_t)(dot - output) : strlen(output);
    const size_t size = stem + sizeof "-compare.png";
    char *path = malloc(size);
    if (path) snprintf(path, size, "%.*s-compare.png", (int)stem, output);
    return path;
}

/* IN | OUT, 8-bit sRGB, the colour channels (1 or 3; alpha left out), written atomically. */
static int write_compare(const void *state, const cli_batch *b, cli_batch_file *f,
                         const lumen_image *src, const lumen_image *dst)
{
    (void)state, (void)b;
    const int64_t w = src->w, h = src->h, c = src->c >= 3 ? 3 : 1;
    char *path = compare_path(f->output);
    unsigned char *pix = malloc((size_t)(2 * w * h * c));
    if (!path || !pix) {
        snprintf(f->error, sizeof f->error, "%s: out of memory for the compare picture", f->output);
        free(path), free(pix);
        return CLI_EXIT_FAIL;
    }
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int64_t k = 0; k < c; k++) {
                pix[(y * 2 * w + x) * c + k] = level(src, y, x, k);
                pix[(y * 2 * w + w + x) * c + k] = level(dst, y, x, k);
            }
    const lumen_image img = lumen_image_nhwc(pix, LUMEN_U8, 1, h, 2 * w, c);
    lumen_status s = lumen_write_image_ex(path, &img, NULL, NULL);
    int rc = 0;
    if (s) {
        cli_lib_message(path, s, f->error, sizeof f->error);
        rc = CLI_EXIT_FAIL;
    }
    free(path), free(pix);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every compare picture: a PNG the writer takes, never an input, nor another file's output or
 * compare picture (out/a.png and out/a.jpg would share out/a-compare.png). */
static int check_compare(const cli_batch *b)
{
    if (b->to_stdout) {
        cli_error("--compare", "needs OUT to be a file (its picture is named after it), not '-'");
        return CLI_EXIT_USAGE;
    }
    const int n = b->nfiles;
    char **paths = calloc((size_t)(2 * n), sizeof *paths);
    int rc = paths ? 0 : CLI_EXIT_FAIL;
    for (int i = 0; i < n && !rc; i++) {
        paths[2 * i] = strdup(b->files[i].output);
        paths[2 * i + 1] = compare_path(b->files[i].output);
        if (!paths[2 * i] || !paths[2 * i + 1]) {
            rc = CLI_EXIT_FAIL;
            break;
        }
        lumen_status s = lumen_check_write_image(paths[2 * i + 1], LUMEN_U8, 3, NULL);
        if (s) {
            cli_lib_error(paths[2 * i + 1], s);
            rc = CLI_EXIT_USAGE;
        } else if (same_file(b->files[i].input, paths[2 * i + 1])) {
            cli_error(paths[2 * i + 1], "would replace an input (choose another output name)");
            rc = CLI_EXIT_USAGE;
        }
    }
    if (rc == CLI_EXIT_FAIL) cli_error("film", "out of memory");
    if (!rc) {
        qsort(paths, (size_t)(2 * n), sizeof *paths, compare_strings);
        for (int i = 1; i < 2 * n && !rc; i++) {
            if (strcmp(paths[i - 1], paths[i])) continue;
            cli_error(paths[i], "would be written twice, as an output and as a compare picture "
                                "(use --name)");
            rc = CLI_EXIT_USAGE;
        }
    }
    for (int i = 0; paths && i < 2 * n; i++)
        free(paths[i]);
    free(paths);
    return rc;
}

/* ---- the run ------------------------------------------------------------------------------- */

/* Files, megapixels, time per megapixel (of the film alone and of the whole run: reading,
 * filming, writing), device. */
static void print_summary(const film_state *st, const cli_batch *b, double ms)
{
    int ok = 0, threads = 0;
    double mp = 0, op_ms = 0;
    const char *device = NULL;
    for (int i = 0; i < b->nfiles; i++) {
        const cli_batch_file *f = &b->files[i];
        if (f->rc || !f->info.device) continue;
        ok++;
        mp += (double)f->w * (double)f->h / 1e6;
        op_ms += f->op_ms;
        if (!device) device = f->info.device, threads = f->info.threads;
    }
    if (!ok || mp <= 0) return;
    fprintf(stderr,
            "lumen: film: %d file%s%s, %.2f MP, stock %s, device %s (%d thread%s): film %.1f "
            "ms/MP; with reading and writing %.1f ms/MP (%.0f ms in all)\n",
            ok, ok == 1 ? "" : "s",
            !st->compare ? ""
            : ok == 1    ? " and its compare picture"
                         : " and their compare pictures",
            mp, st->stock.name, device, threads, threads == 1 ? "" : "s", op_ms / mp, ms / mp, ms);
}

/* IN OUT or IN... --output-dir DIR; the stock list needs neither. */
static int parse(film_state *st, int argc, char **argv, cli_batch *b)
{
    static const char *const cmd_names[] = {"IN", "OUT"};
    const cli_command cmd = {"film", flags, on_flag, cmd_names, 2, 1};
    const char **pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof *pos);
    if (!pos) {
        cli_error("film", "out of memory");
        return CLI_EXIT_FAIL;
    }
    int npos = 0;
    int rc = cli_parse_n(&cmd, argc, argv, st, pos, &npos);
    if (!rc && !st->list) rc = get_stock(st);
    if (!rc && !st->list) {
        b->opt = st->batch;
        rc = cli_batch_positionals(b, "film", cmd_names, 2, 0, pos, npos, NULL);
    }
    free(pos);
    return rc;
}

int cmd_film(int argc, char **argv)
{
    film_state st = {.batch = cli_batch_opts_default(), .opt = lumen_film_options_default()};
    cli_batch b = {0};
    int rc = parse(&st, argc, argv, &b);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_FFT | CLI_HELP_BATCH, examples);
    if (!rc && st.list) return list_stocks();
    /* A folder made by prepare is removed again when a compare picture is refused. */
    struct stat dir_st;
    const int dir_existed = st.batch.output_dir && stat(st.batch.output_dir, &dir_st) == 0;
    if (!rc) rc = cli_batch_prepare(&b);
    if (!rc && st.compare && (rc = check_compare(&b)) && st.batch.output_dir && !dir_existed)
        rmdir(st.batch.output_dir);
    if (!rc) {
        if (st.compare) make_srgb_table();
        const cli_image_op op = {"film", NULL, run, print_verbose, &st};
        const cli_batch_hooks hooks = {st.compare ? write_compare : NULL, 1, &st};
        const double t0 = cli_now_ms();
        rc = cli_batch_run_hooks(&b, &st.common, &op, &hooks);
        if (!st.batch.quiet) print_summary(&st, &b, cli_now_ms() - t0);
    }
    cli_batch_free(&b);
    return rc;
}
