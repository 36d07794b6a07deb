/* Messages, clock, bench data and JSON helpers for the `lumen` tool. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c17 */

#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cli_error(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lumen: %s: ", what);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_lib_message(const char *what, lumen_status s, char *buf, size_t size)
{
    const char *msg = lumen_last_error();
    size_t len = strlen(what);
    /* Some failures (e.g. allocation) may leave no message; the status name still helps. */
    if (!msg || !*msg)
        snprintf(buf, size, "%s: %s", what, lumen_status_string(s));
    else if (!strncmp(msg, what, len) && msg[len] == ':')
        snprintf(buf, size, "%s", msg); /* the library already named the file */
    else
        snprintf(buf, size, "%s: %s", what, msg);
}

int cli_lib_error(const char *what, lumen_status s)
{
    char msg[1024];
    cli_lib_message(what, s, msg, sizeof msg);
    fprintf(stderr, "lumen: %s\n", msg);
    return CLI_EXIT_FAIL;
}

int cli_print_usage(const char *text)
{
    fputs(text, stdout);
    return CLI_EXIT_OK;
}

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Knuth's MMIX LCG; the top 24 bits fill a float mantissa exactly. */
float cli_lcg_unit(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(*state >> 40) / (float)(1 << 24);
}

float *cli_random_floats(size_t n, uint64_t seed, float lo, float hi)
{
    float *v = malloc(n * sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * cli_lcg_unit(&seed);
    return v;
}

static int compare_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cli_min_median(double *ms, int n, double *min, double *median)
{
    qsort(ms, (size_t)n, sizeof *ms, compare_double);
    *min = ms[0];
    *median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
