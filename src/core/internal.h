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
    bool cpu_avx512;  /* CPU has AVX-512 F/BW/DQ/VL and the OS saves opmask and ZMM state */
    lumen_fft_planning fft_planning;
    struct lumen_plan_cache *plans; /* FFT plans, kernel spectra (one thread at a time) */
    int device;  /* index into the device list (lumen_device_find) */
    bool strict; /* no fallback to the CPU */
    bool tf32;   /* f32 conv may use TF32 tensor cores (lumen_context_set_tf32, $LUMEN_TF32) */
    uint64_t memory_limit;             /* device bytes the context may allocate; 0: no cap */
    const struct lumen_backend *be;    /* the device's backend (NULL: the CPU) */
    int be_device;                     /* the device's index within its backend */
    void *be_state;                    /* the backend's per-context state (streams, pool) */
};

/* ---- plan cache: expensive set-up kept per context, keyed by bytes ----- */

typedef struct lumen_plan_cache lumen_plan_cache;
lumen_plan_cache *lumen_plan_cache_create(size_t budget_bytes);
void lumen_plan_cache_destroy(lumen_plan_cache *c);
void lumen_plan_cache_clear(lumen_plan_cache *c);
/* The value cached under key, or NULL; a hit makes the entry most recently used. */
void *lumen_plan_cache_get(lumen_plan_cache *c, const void *key, size_t len);
/*
 * Caches value under key, taking ownership (destroy frees it, also on
 * failure, when NULL is returned). Least recently used entries beyond the
 * budget are destroyed, never the one just added.
 */
void *lumen_plan_cache_put(lumen_plan_cache *c, const void *key, size_t len, void *value,
                           void (*destroy)(void *), size_t bytes);

/* $XDG_CACHE_HOME/lumen/<name> or ~/.cache/lumen/<name> into buf; creates the folder. */
bool lumen_cache_path(const char *name, char *buf, size_t size);

/* True when the fast AVX2+FMA kernels may run in this context. */
static inline bool lumen_ctx_use_avx2(const lumen_context *ctx) { return ctx->simd && ctx->cpu_avx2; }
/* True when the AVX-512 kernels may run (they assume AVX2 + FMA too, so clearing cpu_avx2
 * turns them off as well). */
static inline bool lumen_ctx_use_avx512(const lumen_context *ctx)
{
    return lumen_ctx_use_avx2(ctx) && ctx->cpu_avx512;
}

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

/* The fast Gaussian: an approximation whose cost does not grow with sigma. */
typedef struct lumen_gauss_job {
    const lumen_image *src;
    const lumen_image *dst;
    double sigma_x, sigma_y;
    lumen_border border;
    float border_value;
} lumen_gauss_job;

/* ---- NCHW convolution jobs (conv2d, conv_transpose2d) ------------------ */

typedef enum { LUMEN_CONV_FORWARD = 0, LUMEN_CONV_TRANSPOSED = 1 } lumen_conv_kind;

/*
 * A validated conv job: x (N, C, H, W), w (K, C/g, R, S) for conv2d or (C, K/g, R, S) for
 * conv_transpose2d, y (N, K, P, Q) already of the right shape, all f32, y disjoint from x, w
 * and bias. The views are host views or views in the memory of the context's device (a
 * backend stages host views itself, as for filters). bias is NULL or K floats, always in
 * host memory: it is small, and a device backend uploads it (and may cache it by value).
 */
typedef struct lumen_conv_job {
    const lumen_image *x, *w, *y;
    const float *bias;
    lumen_conv2d_params p;
} lumen_conv_job;

/* A backend: a table of kernel entries (NULL = not supported). */
typedef struct lumen_backend {
    const char *name;
    /* direct: job->kernel */
    lumen_status (*filter2d)(lumen_context *ctx, const lumen_filter_job *job);
    /* separable: job->kx, job->ky, job->scale */
    lumen_status (*sep_filter)(lumen_context *ctx, const lumen_filter_job *job);
    /* FFT: job->kernel, or kx (x) ky * scale when kernel is NULL */
    lumen_status (*fft_filter)(lumen_context *ctx, const lumen_filter_job *job);
    lumen_status (*gaussian_fast)(lumen_context *ctx, const lumen_gauss_job *job);
    /* NCHW conv of either kind on f32. Sets info->algo (a static string: "cudnn:...",
     * "im2col+sgemm"); the runtime fills the rest of info for device backends. Returns
     * LUMEN_ERR_UNSUPPORTED (a kind or shape it lacks) or LUMEN_ERR_OUT_OF_MEMORY before y is
     * written, so that the runtime can fall back. */
    lumen_status (*conv2d)(lumen_context *ctx, lumen_conv_kind kind, const lumen_conv_job *job,
                           lumen_run_info *info);
    /* Estimated seconds for job by method; < 0 when the method is not available. */
    double (*cost)(lumen_context *ctx, const lumen_filter_job *job, lumen_method method);
    /* Devices this backend drives; info->index is filled in by the runtime. */
    int (*device_count)(void);
    lumen_status (*device_info)(int i, lumen_device_info *info);
    /* dtypes the entries take, as bits 1 << lumen_dtype (src and dst); 0 means all. */
    unsigned dtypes;
    /* Per-context state on device i (streams, memory pool, plans); NULL entries: none. */
    lumen_status (*state_create)(int device, void **state);
    void (*state_destroy)(void *state);
    /* Device memory, for device-resident views and for copies around a CPU fallback. */
    lumen_status (*alloc)(lumen_context *ctx, size_t bytes, void **out);
    void (*release)(lumen_context *ctx, void *p);
    lumen_status (*upload)(lumen_context *ctx, void *dst, const void *src, size_t bytes);
    lumen_status (*download)(lumen_context *ctx, void *dst, const void *src, size_t bytes);
    lumen_status (*synchronize)(lumen_context *ctx);
} lumen_backend;

/* ---- backend modules: shared objects loaded at run time (module.c) -----
 * A module exports `lumen_module_init`; the core hands it these services, so a module never
 * links the core (whose copy of the error state, logs and caches would not be the caller's). */
#define LUMEN_MODULE_ABI 2 /* 2: lumen_backend.conv2d; host tf32, last_error */
#define LUMEN_MODULE_INIT_SYMBOL "lumen_module_init"
typedef struct lumen_module_host {
    int abi;
    lumen_status (*set_error)(lumen_status s, const char *fmt, ...) LUMEN_PRINTF(2, 3);
    void (*log)(lumen_log_level level, const char *fmt, ...) LUMEN_PRINTF(2, 3);
    void *(*plan_get)(lumen_context *ctx, const void *key, size_t len);
    void *(*plan_put)(lumen_context *ctx, const void *key, size_t len, void *value,
                      void (*destroy)(void *), size_t bytes);
    void *(*state)(const lumen_context *ctx);        /* from state_create */
    int (*device)(const lumen_context *ctx);         /* index within the backend */
    uint64_t (*memory_limit)(const lumen_context *ctx); /* bytes, 0: no cap */
    void (*gaussian_kernel)(int n, double sigma, float *out); /* OpenCV's taps */
    int (*tf32)(const lumen_context *ctx); /* 1: f32 conv may use TF32 (default 0) */
    const char *(*last_error)(void);       /* the message set_error recorded last */
} lumen_module_host;
typedef lumen_status (*lumen_module_init_fn)(int abi, const lumen_module_host *host,
                                             const lumen_backend **out);

/* Backends that own devices, the CPU first; loads the modules on first use. */
int lumen_backend_count(void);
const lumen_backend *lumen_backend_at(int i);
/* The backend of device `index` and the device's index within it; NULL if none. */
const lumen_backend *lumen_device_backend(int index, int *local);
/* Drops the context's device state (and plans); the context is on the CPU after. */
void lumen_context_release_device(lumen_context *ctx);
/* "cpu" or "cuda:0" for device index i (the spec lumen_device_find takes). */
void lumen_device_label(int i, char *buf, size_t size);
/* The same, as a string that lives as long as the process (for lumen_run_info.device). */
const char *lumen_device_name_static(int i);

/* The scalar oracle, kept forever; computes in double. */
extern const lumen_backend lumen_cpu_reference_backend;
/* The fast CPU path: AVX2/FMA or portable C, threads, tiles. */
extern const lumen_backend lumen_cpu_fast_backend;

/* Runs job on the context's device with method DIRECT, SEPARABLE or FFT, fills info. */
lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info);
/* The cheapest of the allowed methods (bit mask of 1 << method) for job on this context. */
lumen_method lumen_choose_method(lumen_context *ctx, const lumen_filter_job *job, unsigned allowed);
/* Runs the fast Gaussian on the context's device, fills info. */
lumen_status lumen_run_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job,
                                     lumen_run_info *info);
/* Runs a conv job on the context's device (its backend's conv2d entry), else on the CPU
 * (lumen_cpu_fast_backend.conv2d) with the fallback rules of every op; fills info. */
lumen_status lumen_run_conv(lumen_context *ctx, lumen_conv_kind kind, const lumen_conv_job *job,
                            lumen_run_info *info);

#endif
