/* Internal runtime interface shared by ops, backends and io. Not installed. */
#ifndef LUMEN_INTERNAL_H
#define LUMEN_INTERNAL_H

#include "lumen.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LUMEN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LUMEN_PRINTF(a, b)
#endif

/* Records a formatted message for lumen_last_error() and returns s. */
lumen_status lumen_set_error(lumen_status s, const char *fmt, ...) LUMEN_PRINTF(2, 3);
/* Clears the message (called at the start of public entry points). */
void lumen_clear_error(void);

/* Debug/info logging controlled by $LUMEN_LOG (error|warn|info|debug). */
typedef enum { LUMEN_LOG_ERROR = 0, LUMEN_LOG_WARN, LUMEN_LOG_INFO, LUMEN_LOG_DEBUG } lumen_log_level;
void lumen_log(lumen_log_level level, const char *fmt, ...) LUMEN_PRINTF(2, 3);

struct lumen_context {
    int threads;      /* >= 1 */
    bool simd;        /* user allows SIMD */
    bool cpu_avx2;    /* CPU has AVX2 + FMA and the OS saves YMM state */
};

/* True when the fast AVX2+FMA kernels may run in this context. */
static inline bool lumen_ctx_use_avx2(const lumen_context *ctx) { return ctx->simd && ctx->cpu_avx2; }

/* Checks a view: data, positive sizes, dtype; `what` names it in messages. */
lumen_status lumen_image_check(const lumen_image *img, const char *what);
/* Checks dst has src's shape. */
lumen_status lumen_image_check_pair(const lumen_image *src, const lumen_image *dst);
/* Byte range [lo, hi) a view touches. */
void lumen_image_extent(const lumen_image *img, uintptr_t *lo, uintptr_t *hi);

#endif
