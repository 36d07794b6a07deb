/* Internal runtime interface shared by ops, backends and io (docs/architecture.md). Not
 * installed; backend modules include it for the op interface and the module ABI. */
#ifndef LUMEN_INTERNAL_H
#define LUMEN_INTERNAL_H

#include "lumen.h"
#include "semantics.h"

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
    /* The CPU kernels the context may use: what lumen_cpu_detect_isa found at creation
     * (tests lower them to reach the AVX2 and portable kernels on any machine). */
    bool cpu_avx2;    /* AVX2 + FMA */
    bool cpu_avx512;  /* AVX-512 F/BW/DQ/VL */
    lumen_fft_planning fft_planning;
    struct lumen_plan_cache *plans; /* FFT plans, kernel spectra (one thread at a time) */
    int device;  /* index into the device list (lumen_device_find) */
    bool strict; /* no fallback to the CPU */
    bool tf32;   /* f32 conv may use TF32 tensor cores (lumen_context_set_tf32, $LUMEN_TF32) */
    uint64_t memory_limit;             /* device bytes the context may allocate; 0: no cap */
    const struct lumen_backend *be;    /* the device's backend (the CPU's too) */
    int be_device;                     /* the device's index within its backend */
    void *be_state;                    /* the backend's per-context state (streams, pool) */
    /* lumen_context_set_interrupt: polled by running ops between tiles (docs/faults.md) */
    int (*interrupt_poll)(void *arg);
    void *interrupt_arg;
};

/* Whether the context's interrupt hook asks the running op to stop. Cheap when there is no
 * hook (one load); backends call it between tiles or bands, never per pixel. */
static inline bool lumen_interrupt_requested(const lumen_context *ctx)
{
    return ctx->interrupt_poll && ctx->interrupt_poll(ctx->interrupt_arg) != 0;
}
/* Records the message of an interrupted call and returns LUMEN_ERR_INTERRUPTED. */
lumen_status lumen_interrupted_error(void);

/* ---- plan cache: expensive set-up kept per context, keyed by bytes ----- */

typedef struct lumen_plan_cache lumen_plan_cache;
lumen_plan_cache *lumen_plan_cache_create(size_t budget_bytes);
void lumen_plan_cache_destroy(lumen_plan_cache *c);
void lumen_plan_cache_clear(lumen_plan_cache *c);
/* The value cached under key, or NULL; a hit makes the entry most recently used. */
void *lumen_plan_cache_get(lumen_plan_cache *c, const void *key, size_t len);
/* The value cached under key, removed from the cache and handed to the caller (who puts it
 * back when done: nothing else can drop it meanwhile), or NULL. */
void *lumen_plan_cache_take(lumen_plan_cache *c, const void *key, size_t len);
/*
 * Caches value under key, taking ownership (destroy frees it, also on
 * failure, when NULL is returned). Least recently used entries beyond the
 * budget are destroyed, never the one just added.
 */
void *lumen_plan_cache_put(lumen_plan_cache *c, const void *key, size_t len, void *value,
                           void (*destroy)(void *), size_t bytes);

/* The bounded spin lumen asks libgomp for (cpu_share.c): about 3 us here (one spin measured
 * 29 ns on the 2-core Zen 5 guest), enough to catch a partner arriving at a barrier, short
 * enough that an idle worker charges ~0 CPU after a call (libgomp's default, 300000, spun 4-8
 * ms after each region, and a 512 x 600 Gaussian on 2 threads took 16 ms instead of 1.2 beside
 * two busy processes; docs/architecture.md, "CPU teams"). python/lumen/_cpu_share.py repeats it. */
#define LUMEN_OMP_SPINCOUNT "100"

/* The CPUs the CPU quota of this process's cgroups allows (cgroup v2 cpu.max, v1
 * cpu.cfs_quota_us over cpu.cfs_period_us; the smallest on the path to the hierarchy's root),
 * rounded up; 0: no quota. root prefixes /proc and /sys: "" on a real system, a fake tree in
 * tests (cpu_share.c). */
int lumen_cgroup_cpus(const char *root);

/* $XDG_CACHE_HOME/lumen/<name> or ~/.cache/lumen/<name> into buf; creates the folder. */
bool lumen_cache_path(const char *name, char *buf, size_t size);

/* Checks a view: data, positive sizes, dtype; `what` names it in messages. */
lumen_status lumen_image_check(const lumen_image *img, const char *what);
/* Checks dst has src's shape. */
lumen_status lumen_image_check_pair(const lumen_image *src, const lumen_image *dst);
/* Byte range [lo, hi) a view touches. */
void lumen_image_extent(const lumen_image *img, uintptr_t *lo, uintptr_t *hi);

/* ---- the op interface: what ops hand to a backend (docs/architecture.md) ----
 *
 * An op is a kind plus a job struct of that kind. A backend implements supports() and run()
 * over ops, so a new op adds a kind and a job struct and never changes lumen_backend (nor the
 * module ABI's layout). Every job struct begins with its views, inputs first and the output
 * last, in a `views` array that the named members (src, dst ...) alias: the runtime checks,
 * stages and rebinds them without knowing the kind. Jobs are filled with designated
 * initialisers. Kinds are numbered for the module ABI: append, never renumber. */

#define LUMEN_OP_MAX_VIEWS 4

typedef enum lumen_op_kind {
    LUMEN_OP_FILTER_DIRECT = 0,    /* lumen_filter_job, taps = LUMEN_TAPS_2D */
    LUMEN_OP_FILTER_SEPARABLE = 1, /* lumen_filter_job, taps = LUMEN_TAPS_SEPARABLE */
    LUMEN_OP_FILTER_FFT = 2,       /* lumen_filter_job, either taps */
    LUMEN_OP_GAUSSIAN_FAST = 3,    /* lumen_gauss_job */
    LUMEN_OP_CONV2D = 4,           /* lumen_conv_job */
    LUMEN_OP_CONV_TRANSPOSE2D = 5, /* lumen_conv_job */
    LUMEN_OP_RESIZE = 6,           /* lumen_resize_job */
    LUMEN_OP_KIND_COUNT
} lumen_op_kind;

/* Which taps define a filter job's result (the other form may be present too: a rank-1 2-D
 * kernel carries both, so that the cost of every method can be weighed). */
typedef enum lumen_taps { LUMEN_TAPS_2D = 0, LUMEN_TAPS_SEPARABLE = 1 } lumen_taps;

/*
 * A normalised filter job: always correlation (ops flip kernels for convolution), effective
 * anchor in range, validated views. `kernel` is kh x kw row-major; kx (kw taps) and ky (kh
 * taps) are the separable form, whose result is multiplied by `scale` (box blur keeps exact
 * integer sums and scales at the end).
 */
typedef struct lumen_filter_job {
    union {
        struct {
            const lumen_image *src, *dst;
        };
        const lumen_image *views[2];
    };
    lumen_taps taps;
    lumen_border border;
    float border_value;
    int kw, kh, ax, ay;
    const float *kernel;
    const float *kx, *ky;
    float scale;
    /* NULL but in the film ops' fused jobs (film_map.h): only the CPU's FFT path runs those;
     * every other path refuses them with LUMEN_ERR_UNSUPPORTED, and the op runs its own
     * passes instead. The op layer sends them to the CPU only. */
    const struct lumen_film_map *map;
} lumen_filter_job;

/* The fast Gaussian: an approximation whose cost does not grow with sigma. */
typedef struct lumen_gauss_job {
    union {
        struct {
            const lumen_image *src, *dst;
        };
        const lumen_image *views[2];
    };
    double sigma_x, sigma_y;
    lumen_border border;
    float border_value;
} lumen_gauss_job;

/*
 * A validated NCHW conv job (LUMEN_OP_CONV2D or LUMEN_OP_CONV_TRANSPOSE2D): x (N, C, H, W), w
 * (K, C/g, R, S) for conv2d or (C, K/g, R, S) for conv_transpose2d, y (N, K, P, Q) already of
 * the right shape, all f32, y disjoint from x, w and bias. bias is NULL or K floats, always in
 * host memory: it is small, and a device backend uploads it (and may cache it by value).
 */
typedef struct lumen_conv_job {
    union {
        struct {
            const lumen_image *x, *w, *y;
        };
        const lumen_image *views[3];
    };
    const float *bias;
    lumen_conv2d_params p;
    /* conv2d only: the CPU's prepacked weights of w (lumen_conv2d_weights_pack), or NULL.
     * Backends that do not know it run on w, which it was packed from. */
    const struct lumen_conv_pack *pack;
} lumen_conv_job;

/* The CPU's transformed weights of a conv2d job's w (src/backends/cpu/conv_pack.c); job->x and
 * job->y give shapes only (their data is not read). */
typedef struct lumen_conv_pack lumen_conv_pack;
lumen_status lumen_cpu_conv2d_pack(lumen_context *ctx, const lumen_conv_job *job,
                                   lumen_conv_pack **out);
void lumen_cpu_conv2d_pack_free(lumen_conv_pack *pack);
const char *lumen_cpu_conv2d_pack_algo(const lumen_conv_pack *pack, size_t *bytes);

/*
 * One axis of a resize: output o is sum_k weights[o * taps + k] * in(first[o] + k), every
 * window [first[o], first[o] + taps) inside [0, in) (taps <= in): the rule's edge handling
 * (replicate, or truncate and renormalise) is already folded into the weights, so a kernel
 * needs no border code. Built once per call by the op (src/ops/resize_taps.c), in host memory.
 */
typedef struct lumen_resize_axis {
    int64_t in, out;
    int taps;
    const int32_t *first; /* out entries */
    const float *weights; /* out * taps */
    /* Pillow's 8-bit rule only (else NULL): the weights as Pillow quantises them, round(w *
     * 2^22) from its double weights; its sums are then integers, exactly Pillow's. */
    const int32_t *iweights;
} lumen_resize_axis;

/* A resize (LUMEN_OP_RESIZE): src (n, c, h, w) to dst (n, c, y.out, x.out), x.in = w and
 * y.in = h, dst disjoint from src. nearest: taps = 1 and every weight 1; the pixel is copied
 * (exact for every dtype, NaN payloads included). pillow_rounding: Pillow's 8-bit path (src
 * and dst u8), in integers as Pillow: each pass sums bytes times the axis's iweights plus
 * 2^21, shifts right by 22 and clips to 0..255, the horizontal pass's bytes feeding the
 * vertical one (docs/resize.md). */
typedef struct lumen_resize_job {
    union {
        struct {
            const lumen_image *src, *dst;
        };
        const lumen_image *views[2];
    };
    lumen_resize_axis x, y;
    int nearest;
    int pillow_rounding;
    /* A window (lumen_resize_window): the whole resize's tables, which x and y are slices of
     * (choices that depend on the sizes, such as the CPU's pass order, are made on them, so
     * that every window sums as the whole would); NULL: x and y are whole. */
    const lumen_resize_axis *whole_x, *whole_y;
} lumen_resize_job;

typedef struct lumen_op {
    lumen_op_kind kind;
    int n_views;     /* the job's views; views[n_views - 1] is the output */
    size_t job_size; /* bytes of *job: the runtime copies a job to rebind its views */
    const void *job; /* the kind's job struct */
} lumen_op;

static inline lumen_op lumen_op_filter(lumen_op_kind kind, const lumen_filter_job *job)
{
    return (lumen_op){.kind = kind, .n_views = 2, .job_size = sizeof *job, .job = job};
}
static inline lumen_op lumen_op_gauss(const lumen_gauss_job *job)
{
    return (lumen_op){
        .kind = LUMEN_OP_GAUSSIAN_FAST, .n_views = 2, .job_size = sizeof *job, .job = job};
}
static inline lumen_op lumen_op_conv(lumen_op_kind kind, const lumen_conv_job *job)
{
    return (lumen_op){.kind = kind, .n_views = 3, .job_size = sizeof *job, .job = job};
}
static inline lumen_op lumen_op_resize(const lumen_resize_job *job)
{
    return (lumen_op){.kind = LUMEN_OP_RESIZE, .n_views = 2, .job_size = sizeof *job, .job = job};
}
/* The job's views (its first member, whatever the kind). */
static inline const lumen_image *const *lumen_op_views(const lumen_op *op)
{
    return (const lumen_image *const *)op->job;
}
/* Whether every view of the op has a dtype in `mask` (bit 1 << dtype): a module's supports()
 * refuses dtypes its kernels do not read, and the runtime runs those ops on the CPU. */
static inline bool lumen_op_dtypes_in(const lumen_op *op, unsigned mask)
{
    const lumen_image *const *v = lumen_op_views(op);
    for (int i = 0; i < op->n_views; i++)
        if (!((mask >> (unsigned)v[i]->dtype) & 1u)) return false;
    return true;
}
#define LUMEN_DTYPES_CLASSIC ((1u << LUMEN_U8) | (1u << LUMEN_U16) | (1u << LUMEN_F32))

/* "direct filter", "conv2d" ...: names an op kind in messages. */
const char *lumen_op_kind_name(lumen_op_kind kind);
/* The method an op kind reports in lumen_run_info (conv: DIRECT). */
lumen_method lumen_op_kind_method(lumen_op_kind kind);

/*
 * A backend: devices, memory, and the op interface. supports() says whether run() takes the
 * op on the context's device (kind, dtypes, shape: cheap, no side effects); run() fills
 * info->method, isa and algo as it really ran (the runtime adds device and threads), and
 * returns LUMEN_ERR_UNSUPPORTED or LUMEN_ERR_OUT_OF_MEMORY before the output is written when
 * the runtime may fall back to the CPU. The CPU is a backend like the others, and supports
 * every op.
 */
typedef struct lumen_backend {
    const char *name;
    bool (*supports)(lumen_context *ctx, const lumen_op *op);
    lumen_status (*run)(lumen_context *ctx, const lumen_op *op, lumen_run_info *info);
    /* Estimated seconds of a filter op (its kind is the method); < 0 when not estimable. */
    double (*cost)(lumen_context *ctx, const lumen_op *op);
    /* Devices this backend drives; info->index is filled in by the runtime. */
    int (*device_count)(void);
    lumen_status (*device_info)(int i, lumen_device_info *info);
    /* Per-context state on device i (streams, memory pool, plans); NULL entries: none. */
    lumen_status (*state_create)(int device, void **state);
    void (*state_destroy)(void *state);
    /* Device memory, for device-resident views and for copies around a CPU fallback. NULL
     * entries: the device's memory is the host's (the CPU). */
    lumen_status (*alloc)(lumen_context *ctx, size_t bytes, void **out);
    void (*release)(lumen_context *ctx, void *p);
    lumen_status (*upload)(lumen_context *ctx, void *dst, const void *src, size_t bytes);
    lumen_status (*download)(lumen_context *ctx, void *dst, const void *src, size_t bytes);
    lumen_status (*synchronize)(lumen_context *ctx);
    /* "Mesa 22.3.6 (llvmpipe), Vulkan 1.3.230": the driver behind device i, for lumen info;
     * NULL entry or "" : nothing to say. */
    void (*device_driver)(int i, char *buf, size_t size);
} lumen_backend;

/* ---- backend modules: shared objects loaded at run time (module.c) -----
 * A module exports `lumen_module_init`; the core hands it these services, so a module never
 * links the core (whose copy of the error state, logs and caches would not be the caller's). */
/* 3: the op interface (supports/run), no per-op entries; 4: device_driver, host cache_path and
 * interrupted; 5: views may be f16 or bf16 (a module built before would misread them, so it
 * must not load; a module that does not compute a dtype refuses it in supports) */
#define LUMEN_MODULE_ABI 5
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
    /* lumen_cache_path: a file in lumen's cache folder (created); false when there is none */
    bool (*cache_path)(const char *name, char *buf, size_t size);
    /* 1 when the context's interrupt hook asks the running op to stop (poll between pieces) */
    int (*interrupted)(const lumen_context *ctx);
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

/* The CPU backend (src/backends/cpu), device 0 of every process. With SIMD off in a context it
 * runs the scalar oracle for every op; that is the one way to reach the reference. */
extern const lumen_backend lumen_cpu_backend;
/* What the CPU offers, found once per process (CPUID, XGETBV) and capped by $LUMEN_CPU_ISA. */
void lumen_cpu_detect_isa(bool *avx2, bool *avx512);

/* ---- the one dispatch path (dispatch.c) ----------------------------------- */

/* Runs op on the context's device; falls back to the CPU with one warning line when the
 * device does not support it or runs out of memory (an error in strict mode); fills info. */
lumen_status lumen_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info);
/* The cheapest of the allowed filter methods (bit mask of 1 << lumen_method) for job. */
lumen_method lumen_choose_method(lumen_context *ctx, const lumen_filter_job *job, unsigned allowed);
/* Runs a filter job by method DIRECT, SEPARABLE or FFT (taps set to match): lumen_run. */
lumen_status lumen_run_filter(lumen_context *ctx, const lumen_filter_job *job, lumen_method method,
                              lumen_run_info *info);

/* ---- shared checks of every op's views (image.c) --------------------------- */

/* A view's memory must be the host's or the context's device's; `what` names it. */
lumen_status lumen_view_check_residence(const lumen_context *ctx, const lumen_image *img,
                                        const char *what);
/* Whether two views' byte ranges overlap; views in different memories never do. */
bool lumen_views_overlap(const lumen_image *a, const lumen_image *b);
/* Whether the context runs ops on the CPU backend itself (not a device). */
bool lumen_context_on_cpu(const lumen_context *ctx);

/* Address of element (b, ch, y, x) of a host view. */
static inline char *lumen_px_addr(const lumen_image *im, int64_t b, int64_t ch, int64_t y, int64_t x)
{
    int64_t off = b * im->stride_n + ch * im->stride_c + y * im->stride_h + x * im->stride_w;
    return (char *)im->data + off * (int64_t)lumen_dtype_size(im->dtype);
}

/* OpenCV's getGaussianKernel(n, sigma) taps into out[n] (n >= 1, sigma not NaN). The ops'
 * lumen_gaussian_kernel checks arguments and calls it; modules get it through the host table. */
void lumen_gaussian_taps(int n, double sigma, float *out);

#endif
