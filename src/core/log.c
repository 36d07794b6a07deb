/* One-line logging to stderr, level from $LUMEN_LOG (default: warn), read at the first message
 * of the process: every call logs at debug level, and getenv's scan of the environment took
 * a tenth of a small image's call. */
#include "internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_threshold(void)
{
    const char *v = getenv("LUMEN_LOG");
    if (!v || !*v) return LUMEN_LOG_WARN;
    if (!strcmp(v, "error")) return LUMEN_LOG_ERROR;
    if (!strcmp(v, "info")) return LUMEN_LOG_INFO;
    if (!strcmp(v, "debug")) return LUMEN_LOG_DEBUG;
    return LUMEN_LOG_WARN;
}

static int log_threshold(void)
{
    static atomic_int cached = -1; /* racing first reads compute the same value */
    int t = atomic_load_explicit(&cached, memory_order_relaxed);
    if (t < 0) atomic_store_explicit(&cached, t = read_threshold(), memory_order_relaxed);
    return t;
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
