/* `lumen info`: version, CPU features, threads and devices, as text or JSON. */
#include "args.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "Usage: lumen info [--json] [options]\n"
    "\n"
    "Prints the library version, the CPU features the fast path uses, the number of\n"
    "worker threads and how idle ones wait (omp wait), every device (the one ops would\n"
    "run on is marked) and the image formats. Devices come from backend modules found\n"
    "at start-up (liblumen_cuda.so next to the program, or on $LUMEN_MODULE_PATH);\n"
    "LUMEN_LOG=info says which were loaded.\n"
    "\n"
    "Options:\n"
    "  --json            print one JSON object instead of text (default: text)\n"
    "  -v, --verbose     accepted for symmetry with the other commands; no effect\n";

static const char examples[] = "\n"
                               "Example:\n"
                               "  LUMEN_NUM_THREADS=4 lumen info --json\n";

enum { F_JSON = CLI_FLAG_CMD };

static const cli_flag flags[] = {{"json", 0, 0, F_JSON}, CLI_COMMON_FLAGS, {NULL, 0, 0, 0}};

static const char *const formats[] = {".npy", ".png",  ".jpg",  ".jpeg",
                                      ".tif", ".tiff", ".webp", ".exr"};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct info_state {
    cli_common common;
    int json;
} info_state;

static int on_flag(void *state, int id, const char *name, const char *value)
{
    info_state *st = state;
    if (id == F_JSON) {
        st->json = 1;
        return 0;
    }
    return cli_common_flag(&st->common, id, name, value);
}

static void print_json_list(const char *const *items, int n)
{
    fputc('[', stdout);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", stdout);
        cli_json_string(stdout, items[i]);
    }
    fputc(']', stdout);
}

/* "avx2,fma" -> ["avx2", "fma"]: a list is easier to test against than a joined string. */
static void print_json_features(const char *features)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", features ? features : "");
    const char *items[32];
    int n = 0;
    for (char *tok = strtok(buf, ","); tok && n < COUNT(items); tok = strtok(NULL, ","))
        items[n++] = tok;
    print_json_list(items, n);
}

static void print_json_device(const lumen_device_info *d)
{
    printf("{\"index\": %d, \"name\": ", d->index);
    cli_json_string(stdout, d->name);
    printf(", \"backend\": ");
    cli_json_string(stdout, d->backend);
    printf(", \"kind\": \"%s\", \"memory_total\": %llu, \"memory_free\": %llu, "
           "\"compute_capability\": ",
           lumen_device_kind_name(d->kind), (unsigned long long)d->memory_total,
           (unsigned long long)d->memory_free);
    cli_json_string(stdout, d->compute_capability);
    char driver[256] = "";
    lumen_device_get_driver(d->index, driver, sizeof driver);
    fputs(", \"driver\": ", stdout);
    cli_json_string(stdout, driver);
    printf(", \"fp16\": %s, \"bf16\": %s}", d->fp16 ? "true" : "false", d->bf16 ? "true" : "false");
}

static void print_json_devices(void)
{
    fputc('[', stdout);
    for (int i = 0; i < lumen_device_count(); i++) {
        lumen_device_info d;
        if (lumen_device_get_info(i, &d)) continue;
        if (i) fputs(", ", stdout);
        print_json_device(&d);
    }
    fputc(']', stdout);
}

static void print_json(const lumen_context *ctx)
{
    fputs("{\"version\": ", stdout);
    cli_json_string(stdout, lumen_version());
    fputs(", \"cpu_features\": ", stdout);
    print_json_features(lumen_cpu_features(ctx));
    printf(", \"threads\": %d, \"omp_wait\": ", lumen_context_threads(ctx));
    cli_json_string(stdout, lumen_cpu_wait_policy());
    printf(", \"device\": %d, \"strict\": %s, \"devices\": ", lumen_context_device(ctx),
           lumen_context_strict(ctx) ? "true" : "false");
    print_json_devices();
    fputs(", \"formats\": ", stdout);
    print_json_list(formats, COUNT(formats));
    fputs("}\n", stdout);
}

static void print_text_list(const char *label, const char *const *items, int n)
{
    printf("%-13s", label);
    for (int i = 0; i < n; i++)
        printf(" %s", items[i]);
    printf("\n");
}

/* "  0  cpu     Intel(R) Xeon(R) ...  cpu, 23.5 GiB (22.9 free)  <- in use" */
static void print_text_devices(const lumen_context *ctx)
{
    printf("devices:\n");
    for (int i = 0; i < lumen_device_count(); i++) {
        lumen_device_info d;
        if (lumen_device_get_info(i, &d)) continue;
        char spec[32] = "";
        lumen_device_spec(i, spec, sizeof spec);
        printf("  %d  %-8s %s  (%s", i, spec, d.name, lumen_device_kind_name(d.kind));
        if (d.compute_capability[0]) printf(", compute %s", d.compute_capability);
        printf(", %.1f GiB, %.1f free)%s\n", (double)d.memory_total / (1 << 30),
               (double)d.memory_free / (1 << 30),
               i == lumen_context_device(ctx) ? "  <- in use" : "");
        char driver[256] = "";
        if (lumen_device_get_driver(i, driver, sizeof driver) == LUMEN_OK && driver[0])
            printf("     driver: %s\n", driver);
    }
}

static void print_text(const lumen_context *ctx)
{
    printf("lumen %s\n", lumen_version());
    printf("cpu features: %s\n", lumen_cpu_features(ctx));
    printf("threads:      %d\n", lumen_context_threads(ctx));
    printf("omp wait:     %s\n", lumen_cpu_wait_policy());
    printf("strict:       %s\n", lumen_context_strict(ctx) ? "yes" : "no");
    print_text_devices(ctx);
    print_text_list("formats:", formats, COUNT(formats));
}

int cmd_info(int argc, char **argv)
{
    const cli_command cmd = {"info", flags, on_flag, NULL, 0, 0};
    info_state st = {{0}, 0};
    int rc = cli_parse(&cmd, argc, argv, &st, NULL);
    if (rc == CLI_HELP) return cli_print_help(usage, CLI_HELP_OWN_VERBOSE, examples);
    if (rc) return rc;
    lumen_context *ctx = NULL;
    if ((rc = cli_context_create(&st.common, &ctx))) return rc;
    if (st.json)
        print_json(ctx);
    else
        print_text(ctx);
    lumen_context_destroy(ctx);
    return CLI_EXIT_OK;
}
