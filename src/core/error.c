/* Status codes and the per-thread error message. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

lumen_status lumen_set_error(lumen_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    lumen_log(LUMEN_LOG_DEBUG, "error: %s", last_error);
    return s;
}

void lumen_clear_error(void) { last_error[0] = '\0'; }

const char *lumen_last_error(void) { return last_error; }

const char *lumen_status_string(lumen_status s)
{
    switch (s) {
    case LUMEN_OK: return "ok";
    case LUMEN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case LUMEN_ERR_UNSUPPORTED: return "unsupported";
    case LUMEN_ERR_OUT_OF_MEMORY: return "out of memory";
    case LUMEN_ERR_IO: return "i/o error";
    case LUMEN_ERR_CORRUPT: return "corrupt file";
    case LUMEN_ERR_INTERNAL: return "internal error";
    case LUMEN_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}

const char *lumen_version(void) { return "0.1.0"; }
