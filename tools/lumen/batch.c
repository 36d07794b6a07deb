/*
 * The plan of a batch: its flags, its inputs (files, folders, stdin), the output each one gets,
 * and every check that needs no pixel read. Running it is batch_run.c.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, strdup, fileno */

#include "batch.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_NAME "{stem}.{ext}"

/* ---- flags ------------------------------------------------------------------ */

/* A pattern makes a file name in the output folder: no '/', only the known fields. */
static int check_name_pattern(const char *name, const char *value)
{
    static const char *const fields[] = {"{stem}", "{ext}", "{n}"};
    if (!*value || strchr(value, '/')) {
        cli_error(name, "expected a file name pattern without '/', got '%s'", value);
        return CLI_EXIT_USAGE;
    }
    for (const char *p = strchr(value, '{'); p; p = strchr(p + 1, '{')) {
        int known = 0;
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            known |= !strncmp(p, fields[i], strlen(fields[i]));
        if (!known) {
            cli_error(name, "unknown field in '%s' (valid: {stem}, {ext}, {n})", value);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

static int parse_dtype(const char *name, const char *value, int *out)
{
    /* Order matches lumen_dtype, so the index is the enum value. */
    static const char *const names[] = {"u8", "u16", "f32", "f16", "bf16"};
    return cli_arg_choice(name, value, names, 5, out);
}

cli_batch_opts cli_batch_opts_default(void)
{
    return (cli_batch_opts){
        .dtype = -1, .read = lumen_read_options_default(), .write = lumen_write_options_default()};
}

/* A pixel count, strictly decimal; 0 is "no limit" (the library's UINT64_MAX for a read). */
static int cli_arg_pixels(const char *name, const char *value, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(value, &end, 10);
    if (!*value || strspn(value, "0123456789") != strlen(value) || errno || *end) {
        cli_error(name, "expected a pixel count (0: no limit), got '%s'", value);
        return CLI_EXIT_USAGE;
    }
    *out = n ? (uint64_t)n : UINT64_MAX;
    return 0;
}

int cli_batch_flag(cli_batch_opts *o, int id, const char *name, const char *value)
{
    switch (id) {
    case CLI_FLAG_OUTPUT_DIR:
        o->output_dir = value;
        if (*value) return 0;
        cli_error(name, "expected a folder, got ''");
        return CLI_EXIT_USAGE;
    case CLI_FLAG_NAME: o->name = value; return check_name_pattern(name, value);
    case CLI_FLAG_FORMAT: o->format = value[0] == '.' ? value + 1 : value; return 0;
    case CLI_FLAG_JOBS: return cli_arg_int(name, value, 1, CLI_MAX_JOBS, &o->jobs);
    case CLI_FLAG_JSON: o->json = 1; return 0;
    case CLI_FLAG_QUIET: o->quiet = 1; return 0;
    case CLI_FLAG_DTYPE: return parse_dtype(name, value, &o->dtype);
    case CLI_FLAG_QUALITY: return cli_arg_int(name, value, 1, 100, &o->write.quality);
    case CLI_FLAG_MAX_PIXELS: return cli_arg_pixels(name, value, &o->read.max_pixels);
    case CLI_FLAG_IGNORE_ORIENTATION: o->read.ignore_orientation = 1; return 0;
    default: return -1;
    }
}

void cli_print_batch_help(void)
{
    printf("\nInputs and outputs (IN may be a file, a folder or '-'; see README, CLI):\n");
    fputs("  --output-dir DIR  many inputs in one run: lumen CMD IN... --output-dir DIR; a\n"
          "                    folder IN gives its image files (not its subfolders). DIR is\n"
          "                    made if missing; an output never replaces its own input\n"
          "  --name PATTERN    output file names in DIR: {stem} the input's name without its\n"
          "                    extension, {ext} the --format or the input's extension, {n}\n"
          "                    the input's number from 1 (default: {stem}.{ext})\n"
          "  --format EXT      png|jpg|tif|npy...: the format of OUT '-' (stdout) and of\n"
          "                    {ext}. IN '-' reads stdin, its format told by its first bytes\n"
          "  --dtype T         u8|u16|f32|f16|bf16: the result's element type (default: the\n"
          "                    input's; f16/bf16 round to nearest even, f16 overflows to inf).\n"
          "                    Values are kept, rounded and saturated, as OpenCV's convertTo\n"
          "                    and vips cast (and lumen's dtype= in Python): f32 0..255 gives\n"
          "                    u8 0..255; f32 data in 0..1 must be scaled first\n"
          "  --quality Q       JPEG and WebP quality, 1-100 (default: JPEG 95, WebP 90);\n"
          "                    other formats ignore it\n"
          "  --max-pixels N    refuse inputs of more than N pixels (w x h), a guard against\n"
          "                    decompression bombs; 0: no limit but 2^31 (default:\n"
          "                    $LUMEN_MAX_PIXELS, else 2^28 = 16384 x 16384)\n"
          "  --ignore-orientation\n"
          "                    filter the pixels as stored and keep the EXIF orientation\n"
          "                    for viewers (default: turn them upright on read, as\n"
          "                    cv2.imread does; this is its IMREAD_IGNORE_ORIENTATION)\n"
          "  -j, --jobs N      files filtered at once, 1-256, each with its share of the\n"
          "                    --threads (default: as many as threads, at most one per file:\n"
          "                    whole files in parallel; --jobs 1 filters one file at a time\n"
          "                    with every thread, and holds one image in memory)\n"
          "  --json            one JSON record per file on stdout: input, output, status,\n"
          "                    ms, method, device, error\n"
          "  -q, --quiet       no progress bar and no summary when every file succeeded\n"
          "                    (the bar is drawn only when stderr is a terminal)\n",
          stdout);
}

/* ---- positionals ------------------------------------------------------------ */

static int out_of_memory(const cli_batch *b)
{
    cli_error(b->command, "out of memory");
    return CLI_EXIT_FAIL;
}

static int add_file(cli_batch *b, const char *input)
{
    cli_batch_file *f = realloc(b->files, (size_t)(b->nfiles + 1) * sizeof *f);
    if (!f) return out_of_memory(b);
    b->files = f;
    f = &b->files[b->nfiles];
    memset(f, 0, sizeof *f);
    f->input = strdup(input);
    if (!f->input) return out_of_memory(b);
    b->nfiles++;
    return 0;
}

static int positional_count_error(const char *command, const char *const *names, int nfixed,
                                  int npos, int batch)
{
    const int need = batch ? nfixed - 1 : nfixed;
    if (npos < need)
        cli_error(command, "missing %s (see 'lumen %s --help')", names[npos], command);
    else
        cli_error(command,
                  "unexpected argument (several inputs need --output-dir DIR; see "
                  "'lumen %s --help')",
                  command);
    return CLI_EXIT_USAGE;
}

int cli_batch_positionals(cli_batch *b, const char *command, const char *const *names, int nfixed,
                          int img, const char **pos, int npos, const char **other)
{
    const int batch = b->opt.output_dir != NULL;
    /* Batch: the image input takes what the other inputs (and no OUT) leave. */
    const int nimg = batch ? npos - (nfixed - 2) : 1;
    if (batch ? nimg < 1 : npos != nfixed)
        return positional_count_error(command, names, nfixed, npos, batch);
    b->command = command;
    for (int i = 0, p = 0; i < nfixed - 1; i++) {
        if (i != img) {
            other[i] = pos[p++];
            continue;
        }
        for (int k = 0; k < nimg; k++)
            if (add_file(b, pos[p++])) return CLI_EXIT_FAIL;
    }
    b->single = !batch;
    if (!batch) b->files[0].output = strdup(pos[nfixed - 1]);
    if (!batch && !b->files[0].output) return out_of_memory(b);
    return 0;
}

/* ---- what the writer takes -------------------------------------------------- */

/* Whether the writer takes an image of dtype and c channels at path with the batch's write
 * options (lumen_check_write_image: nothing is touched on disk); else its reason in msg. */
static int writer_takes(const cli_batch_opts *o, const char *path, lumen_dtype dtype, int64_t c,
                        char *msg, size_t size)
{
    lumen_status s = lumen_check_write_image(path, dtype, c, &o->write);
    if (s == LUMEN_OK) return 1;
    cli_lib_message(path, s, msg, size);
    return 0;
}

/* An output path the writer refuses for every channel count (and every dtype unless --dtype
 * fixes it) is refused before anything is read: exit 2 with the writer's reason. */
int cli_batch_check_output(const cli_batch *b, const char *path, char *msg, size_t size)
{
    const int lo = b->opt.dtype >= 0 ? b->opt.dtype : LUMEN_U8;
    const int hi = b->opt.dtype >= 0 ? b->opt.dtype : LUMEN_BF16;
    char first[1024] = "";
    for (int d = lo; d <= hi; d++)
        for (int c = 1; c <= 4; c++)
            if (writer_takes(&b->opt, path, (lumen_dtype)d, c, first[0] ? msg : first,
                             first[0] ? size : sizeof first))
                return 0;
    snprintf(msg, size, "%s", first);
    return CLI_EXIT_USAGE;
}

int cli_batch_check_pixels(const cli_batch *b, const char *path, lumen_dtype dtype, int64_t c,
                           char *msg, size_t size)
{
    return writer_takes(&b->opt, path, dtype, c, msg, size) ? 0 : CLI_EXIT_FAIL;
}

/* ---- folders ------------------------------------------------------------------ */

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether some image (any dtype, 1 to 4 channels) could be written under this name. */
static int writer_knows(const char *name)
{
    const cli_batch_opts defaults = cli_batch_opts_default();
    char msg[1024];
    for (int d = LUMEN_U8; d <= LUMEN_BF16; d++)
        for (int c = 1; c <= 4; c++)
            if (writer_takes(&defaults, name, (lumen_dtype)d, c, msg, sizeof msg)) return 1;
    return 0;
}

/* A folder's entry is an input when it is a visible file with an image extension: hidden
 * files (an interrupted write's temporaries), subfolders and other files are left out. */
static char *folder_entry(const char *dir, const char *name)
{
    if (name[0] == '.' || !writer_knows(name)) return NULL;
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);
    if (!path) return NULL;
    snprintf(path, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    if (!is_dir(path)) return path;
    free(path);
    return NULL;
}

/* A folder's image files, sorted by name. */
static int list_folder(const char *dir, char ***names, int *n)
{
    DIR *d = opendir(dir);
    if (!d) {
        cli_error(dir, "cannot read the folder: %s", strerror(errno));
        return CLI_EXIT_FAIL;
    }
    int rc = 0;
    for (struct dirent *e = readdir(d); e && !rc; e = readdir(d)) {
        char *path = folder_entry(dir, e->d_name);
        if (!path) continue;
        char **grown = realloc(*names, (size_t)(*n + 1) * sizeof *grown);
        if (grown) {
            *names = grown;
            (*names)[(*n)++] = path;
        } else {
            free(path);
            cli_error(dir, "out of memory");
            rc = CLI_EXIT_FAIL;
        }
    }
    closedir(d);
    if (*n) qsort(*names, (size_t)*n, sizeof **names, compare_names);
    return rc;
}

/* Replaces every folder among the inputs by its image files (a regular file stays). */
static int expand_folders(cli_batch *b)
{
    cli_batch_file *old = b->files;
    const int nold = b->nfiles;
    b->files = NULL, b->nfiles = 0;
    int rc = 0;
    for (int i = 0; i < nold && !rc; i++) {
        if (!is_dir(old[i].input)) {
            rc = add_file(b, old[i].input);
            continue;
        }
        char **names = NULL;
        int n = 0;
        if (!(rc = list_folder(old[i].input, &names, &n))) {
            for (int k = 0; k < n && !rc; k++)
                rc = add_file(b, names[k]);
            if (!rc && n == 0) cli_error(old[i].input, "no image files in this folder");
        }
        for (int k = 0; k < n; k++)
            free(names[k]);
        free(names);
    }
    for (int i = 0; i < nold; i++)
        free(old[i].input);
    free(old);
    /* An empty folder among other inputs is only reported; nothing at all to do is a mistake. */
    if (!rc && b->nfiles == 0) {
        cli_error(b->command, "no input images (see 'lumen %s --help')", b->command);
        rc = CLI_EXIT_USAGE;
    }
    return rc;
}

/* ---- output names ------------------------------------------------------------- */

/* {stem}, {ext} and {n} of one input in the pattern, into a new path under the output folder. */
static char *expand_name(const cli_batch *b, const char *input, int number)
{
    const char *slash = strrchr(input, '/');
    const char *base = slash ? slash + 1 : input;
    const char *dot = strrchr(base, '.');
    const int stem_len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    const char *ext = b->opt.format ? b->opt.format : dot && dot != base ? dot + 1 : "";
    char name[4096] = "";
    size_t len = 0;
    for (const char *p = b->opt.name ? b->opt.name : DEFAULT_NAME; *p && len < sizeof name;) {
        if (!strncmp(p, "{stem}", 6))
            len += (size_t)snprintf(name + len, sizeof name - len, "%.*s", stem_len, base), p += 6;
        else if (!strncmp(p, "{ext}", 5))
            len += (size_t)snprintf(name + len, sizeof name - len, "%s", ext), p += 5;
        else if (!strncmp(p, "{n}", 3))
            len += (size_t)snprintf(name + len, sizeof name - len, "%d", number), p += 3;
        else
            name[len++] = *p++, name[len] = '\0';
    }
    const char *dir = b->opt.output_dir;
    size_t size = strlen(dir) + strlen(name) + 2;
    char *path = malloc(size);
    if (path) snprintf(path, size, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    return path;
}

static int compare_outputs(const void *a, const void *b)
{
    return strcmp((*(cli_batch_file *const *)a)->output, (*(cli_batch_file *const *)b)->output);
}

/* Two inputs with the same stem in different folders would overwrite each other's result. */
static int check_duplicates(const cli_batch *b)
{
    cli_batch_file **by = malloc((size_t)b->nfiles * sizeof *by);
    if (!by) return out_of_memory(b);
    for (int i = 0; i < b->nfiles; i++)
        by[i] = &b->files[i];
    qsort(by, (size_t)b->nfiles, sizeof *by, compare_outputs);
    int rc = 0;
    for (int i = 1; i < b->nfiles && !rc; i++) {
        if (strcmp(by[i - 1]->output, by[i]->output)) continue;
        cli_error(by[i]->output, "is the output of both %s and %s (use --name with {n})",
                  by[i - 1]->input, by[i]->input);
        rc = CLI_EXIT_USAGE;
    }
    free(by);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Each output: a name the writer takes, never the input it comes from. */
static int check_outputs(const cli_batch *b)
{
    char msg[1024];
    for (int i = 0; i < b->nfiles; i++) {
        const cli_batch_file *f = &b->files[i];
        if (b->to_stdout) continue;
        if (cli_batch_check_output(b, f->output, msg, sizeof msg)) {
            fprintf(stderr, "lumen: %s\n", msg);
            return CLI_EXIT_USAGE;
        }
        if (same_file(f->input, f->output)) {
            cli_error(f->output, "would replace its own input (choose another output)");
            return CLI_EXIT_USAGE;
        }
    }
    return b->single ? 0 : check_duplicates(b);
}

static int name_outputs(cli_batch *b)
{
    for (int i = 0; i < b->nfiles; i++) {
        b->files[i].output = expand_name(b, b->files[i].input, i + 1);
        if (!b->files[i].output) return out_of_memory(b);
    }
    return 0;
}

/* ---- stdin and stdout ----------------------------------------------------------- */

/* The extension of an image by its first bytes (what each format's specification puts there). */
static const char *sniff_format(const unsigned char *p, size_t n)
{
    static const struct {
        const char *magic;
        size_t len;
        const char *ext;
    } magics[] = {
        {"\x89PNG\r\n\x1a\n", 8, "png"},
        {"\xff\xd8\xff", 3, "jpg"},
        {"II*\0", 4, "tif"},
        {"MM\0*", 4, "tif"},
        {"\x93NUMPY", 6, "npy"},
        {"v/1\x01", 4, "exr"},
    };
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++)
        if (n >= magics[i].len && !memcmp(p, magics[i].magic, magics[i].len)) return magics[i].ext;
    if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) return "webp";
    return NULL;
}

static int make_tmpdir(cli_batch *b)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(b->tmpdir, sizeof b->tmpdir, "%s/lumen-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(b->tmpdir)) return 0;
    cli_error(b->tmpdir, "cannot make a temporary folder: %s", strerror(errno));
    b->tmpdir[0] = '\0';
    return CLI_EXIT_FAIL;
}

/* IN '-': all of stdin in memory, its format told by its first bytes, for
 * lumen_read_image_memory. */
static int read_stdin(cli_batch *b)
{
    size_t cap = 1 << 16, len = 0, n;
    unsigned char *data = malloc(cap);
    while (data && (n = fread(data + len, 1, cap - len, stdin)) > 0) {
        len += n;
        unsigned char *grown = len == cap ? realloc(data, cap *= 2) : data;
        if (!grown) free(data);
        data = grown;
    }
    if (!data) {
        cli_error("<stdin>", "out of memory after %zu bytes", len);
        return CLI_EXIT_FAIL;
    }
    if (ferror(stdin)) {
        cli_error("<stdin>", "read error: %s", strerror(errno));
        free(data);
        return CLI_EXIT_FAIL;
    }
    b->stdin_data = data, b->stdin_len = len;
    b->stdin_format = sniff_format(data, len);
    if (b->stdin_format) return 0;
    cli_error("<stdin>", len ? "not an image lumen can tell (PNG, JPEG, TIFF, WebP, EXR, NPY)"
                             : "empty input");
    return CLI_EXIT_FAIL;
}

/* OUT '-': written to the temporary folder in --format, then copied to stdout. */
static int plan_stdout(cli_batch *b)
{
    char probe[64];
    snprintf(probe, sizeof probe, "stdout.%.40s", b->opt.format);
    char msg[1024];
    if (cli_batch_check_output(b, probe, msg, sizeof msg)) {
        const char *reason = strstr(msg, ": ");
        cli_error("--format", "'%s'%s", b->opt.format, reason ? reason : "");
        return CLI_EXIT_USAGE;
    }
    int rc = b->tmpdir[0] ? 0 : make_tmpdir(b);
    if (rc) return rc;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", b->tmpdir, probe);
    free(b->files[0].output);
    b->files[0].output = strdup(path);
    return b->files[0].output ? 0 : out_of_memory(b);
}

/* ---- prepare --------------------------------------------------------------------- */

/* What the flags say together, before any file is looked at. */
static int check_forms(const cli_batch *b)
{
    const cli_batch_opts *o = &b->opt;
    const char *why = NULL, *flag = NULL;
    if (b->single && o->name)
        flag = "--name", why = "names the outputs of --output-dir";
    else if (b->single && o->format && !b->to_stdout)
        flag = "--format", why = "applies to OUT '-' and --output-dir; OUT names its format by "
                                 "its extension";
    else if (b->to_stdout && !o->format)
        flag = "-", why = "OUT '-' (stdout) needs --format EXT";
    else if (b->to_stdout && o->json)
        flag = "--json", why = "writes to stdout, where OUT '-' goes";
    else if (!b->single && b->from_stdin)
        flag = "-", why = "stdin is the input of the single form IN OUT only";
    else if (b->single && !b->from_stdin && is_dir(b->files[0].input))
        flag = b->files[0].input, why = "is a folder: give --output-dir DIR to filter its images";
    else if (b->single && !b->to_stdout && is_dir(b->files[0].output))
        flag = b->files[0].output, why = "is a folder: use --output-dir DIR to write into it";
    if (!why) return 0;
    cli_error(flag, "%s", why);
    return CLI_EXIT_USAGE;
}

/* The library fails every read, naming it, when $LUMEN_MAX_PIXELS is malformed; a command line
 * tool says so once, before any work, as for $LUMEN_NUM_THREADS. */
static int check_env_max_pixels(const cli_batch *b)
{
    const char *v = getenv("LUMEN_MAX_PIXELS");
    uint64_t n;
    if (b->opt.read.max_pixels || !v) return 0;
    return cli_arg_pixels("LUMEN_MAX_PIXELS", v, &n);
}

static int make_output_dir(const cli_batch *b)
{
    const char *dir = b->opt.output_dir;
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        cli_error("--output-dir", "'%s' exists and is not a folder", dir);
        return CLI_EXIT_USAGE;
    }
    if (mkdir(dir, 0777) == 0) return 0;
    cli_error("--output-dir", "cannot make '%s': %s", dir, strerror(errno));
    return CLI_EXIT_FAIL;
}

int cli_batch_prepare(cli_batch *b)
{
    b->from_stdin = b->single && !strcmp(b->files[0].input, "-");
    b->to_stdout = b->single && !strcmp(b->files[0].output, "-");
    for (int i = 0; i < b->nfiles; i++)
        b->from_stdin |= !strcmp(b->files[i].input, "-");
    int rc = check_forms(b);
    if (!rc) rc = check_env_max_pixels(b);
    if (!rc && !b->single) rc = expand_folders(b);
    if (!rc && !b->single) rc = name_outputs(b);
    if (!rc) rc = check_outputs(b);
    if (!rc && !b->single) rc = make_output_dir(b);
    if (!rc && b->to_stdout) rc = plan_stdout(b);
    if (!rc && b->from_stdin && isatty(fileno(stdin))) {
        cli_error("-", "stdin is a terminal: pipe an image in");
        rc = CLI_EXIT_USAGE;
    }
    if (!rc && b->from_stdin) rc = read_stdin(b);
    return rc;
}

void cli_batch_free(cli_batch *b)
{
    for (int i = 0; i < b->nfiles; i++) {
        if (b->tmpdir[0] && b->to_stdout) remove(b->files[i].output);
        free(b->files[i].input);
        free(b->files[i].output);
    }
    free(b->files);
    free(b->stdin_data);
    b->stdin_data = NULL;
    if (b->tmpdir[0]) rmdir(b->tmpdir);
    b->files = NULL, b->nfiles = 0, b->tmpdir[0] = '\0';
}
