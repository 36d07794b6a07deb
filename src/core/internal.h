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

/* ---- filtering jobs: what ops hand to a backend ------------------------ */

/*
 * A normalised job: always correlation (ops flip kernels for convolution),
 * effective anchor in range, validated views. `kernel` is kh x kw row-major
 * for direct; kx (kw) and ky (kh) for separable, whose result is multiplied
 * by `scale` (box blur keeps exact integer sums and scales at the end).
 */
typedef struct lumen_filter_job {
    const lumen_image *src;
    const lumen_image *dst;
    lumen_border border;
    float border_value;
    int kw, kh, ax, ay;
    const float *kernel;
    const float *kx, *ky;
    float scale;
} lumen_filter_job;

/* A backend: a table of kernel entries (NULL = not supported). */
typedef struct lumen_backend {
    const char *name;
    lumen_status (*filter2d)(const lumen_context *ctx, const lumen_filter_job *job);
    lumen_status (*sep_filter)(const lumen_context *ctx, const lumen_filter_job *job);
} lumen_backend;

/* The scalar oracle, kept forever; computes in double. */
extern const lumen_backend lumen_cpu_reference_backend;
/* The fast CPU path: AVX2/FMA or portable C, threads, tiles. */
extern const lumen_backend lumen_cpu_fast_backend;

/* Runs job on the context's device with method DIRECT or SEPARABLE, fills info. */
lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info);

#endif
