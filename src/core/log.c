/* One-line logging to stderr, level from $LUMEN_LOG (default: warn). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_threshold(void)
{
    const char *v = getenv("LUMEN_LOG");
    if (!v || !*v) return LUMEN_LOG_WARN;
    if (!strcmp(v, "error")) return LUMEN_LOG_ERROR;
    if (!strcmp(v, "info")) return LUMEN_LOG_INFO;
    if (!strcmp(v, "debug")) return LUMEN_LOG_DEBUG;
    return LUMEN_LOG_WARN;
}

void lumen_log(lumen_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if ((int)level > log_threshold()) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lumen %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
