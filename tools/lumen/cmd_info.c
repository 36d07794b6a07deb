/* `lumen info`: version, CPU features, threads and devices, as text or JSON. */
#include "args.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "Usage: lumen info [--json] [options]\n"
    "\n"
    "Prints the library version, the CPU features the fast path uses, the number of\n"
    "worker threads, the devices and the image formats.\n"
    "\n"
    "Options:\n"
    "  --json            print one JSON object instead of text (default: text)\n"
    "  --threads N       report as if run with N threads, 1-1024 (default:\n"
    "                    $LUMEN_NUM_THREADS, else all CPUs)\n"
    "  --no-simd         report the scalar reference path\n"
    "  -v, --verbose     accepted for symmetry with the other commands; no effect\n"
    "  -h, --help        show this help\n"
    "\n"
    "Example:\n"
    "  LUMEN_NUM_THREADS=4 lumen info --json\n";

enum { F_JSON = CLI_FLAG_CMD };

static const cli_flag flags[] = {{"json", 0, 0, F_JSON}, CLI_COMMON_FLAGS, {NULL, 0, 0, 0}};

/* The CPU is the only device today; a list keeps the JSON shape stable when more arrive. */
static const char *const devices[] = {"cpu"};
static const char *const formats[] = {".npy", ".png", ".jpg", ".jpeg", ".tif", ".tiff"};
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

static void print_json(const lumen_context *ctx)
{
    fputs("{\"version\": ", stdout);
    cli_json_string(stdout, lumen_version());
    fputs(", \"cpu_features\": ", stdout);
    print_json_features(lumen_cpu_features(ctx));
    printf(", \"threads\": %d, \"devices\": ", lumen_context_threads(ctx));
    print_json_list(devices, COUNT(devices));
    fputs(", \"formats\": ", stdout);
    print_json_list(formats, COUNT(formats));
    fputs("}\n", stdout);
}

static void print_text_list(const char *label, const char *const *items, int n)
{
    printf("%-13s", label);
    for (int i = 0; i < n; i++) printf(" %s", items[i]);
    printf("\n");
}

static void print_text(const lumen_context *ctx)
{
    printf("lumen %s\n", lumen_version());
    printf("cpu features: %s\n", lumen_cpu_features(ctx));
    printf("threads:      %d\n", lumen_context_threads(ctx));
    print_text_list("devices:", devices, COUNT(devices));
    print_text_list("formats:", formats, COUNT(formats));
}

int cmd_info(int argc, char **argv)
{
    const cli_command cmd = {"info", flags, on_flag, NULL, 0};
    info_state st = {{0}, 0};
    int rc = cli_parse(&cmd, argc, argv, &st, NULL);
    if (rc == CLI_HELP) return cli_print_usage(usage);
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
