/*
 * lumen — fast image convolution and filtering.
 *
 * Public C API. Every call returns a lumen_status; on failure
 * lumen_last_error() returns a message (thread-local) naming the argument
 * and the reason. Semantics (borders, anchors, Gaussian kernels, rounding)
 * are documented in docs/semantics.md.
 */
#ifndef LUMEN_H
#define LUMEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API. The shared library is built with hidden visibility
 * (-fvisibility=hidden), so exactly the declarations carrying LUMEN_API are
 * exported from liblumen.so; everything else stays internal to it. */
#if defined(__GNUC__) || defined(__clang__)
#define LUMEN_API __attribute__((visibility("default")))
#else
#define LUMEN_API
#endif

#define LUMEN_VERSION_MAJOR 0
#define LUMEN_VERSION_MINOR 1
#define LUMEN_VERSION_PATCH 0

/* ---- limits (the one place they are stated; the CLI and Python take them from here) ---- */

#define LUMEN_MAX_KSIZE (1 << 16)  /* largest kernel side */
#define LUMEN_MAX_KAREA (1 << 24)  /* largest kernel area (kw * kh taps) */
#define LUMEN_MAX_THREADS 4096     /* largest thread count of a context */

/* ---- status ------------------------------------------------------------ */

typedef enum lumen_status {
    LUMEN_OK = 0,
    LUMEN_ERR_INVALID_ARGUMENT = 1, /* bad shape, size, kernel, option ... */
    LUMEN_ERR_UNSUPPORTED = 2,      /* valid but not supported (dtype, format) */
    LUMEN_ERR_OUT_OF_MEMORY = 3,
    LUMEN_ERR_IO = 4,               /* file cannot be opened, read or written */
    LUMEN_ERR_CORRUPT = 5,          /* file is truncated or malformed */
    LUMEN_ERR_INTERNAL = 6,
    LUMEN_ERR_INTERRUPTED = 7       /* the context's interrupt hook stopped the call */
} lumen_status;

/* Message for the last failed call on this thread ("" if none). */
LUMEN_API const char *lumen_last_error(void);
/* Short constant name of a status, e.g. "invalid argument". */
LUMEN_API const char *lumen_status_string(lumen_status s);
/* "MAJOR.MINOR.PATCH" */
LUMEN_API const char *lumen_version(void);

/* ---- images ------------------------------------------------------------ */

typedef enum lumen_dtype {
    LUMEN_U8 = 0,
    LUMEN_U16 = 1,
    LUMEN_F32 = 2,
    LUMEN_F16 = 3, /* IEEE 754 binary16 (half): storage only, ops compute in f32 */
    LUMEN_BF16 = 4 /* bfloat16 (the top half of an f32): storage only, ops compute in f32 */
} lumen_dtype;

/* f16 and bf16 are storage types: an op loads them exactly into f32, accumulates in f32 and
 * rounds its result once, to nearest even, on store (NaN stays NaN; f16 overflows to +-Inf,
 * as IEEE does). docs/semantics.md, "Half precision". */

/*
 * A view of n images with c channels of h x w pixels. Strides are in
 * elements (not bytes) and may be negative; element (b, ch, y, x) lives at
 * data + b*stride_n + ch*stride_c + y*stride_h + x*stride_w.
 * Interleaved HWC:  stride_w = c, stride_c = 1, stride_h = w*c.
 * Planar CHW:       stride_w = 1, stride_h = w, stride_c = h*w.
 * Views never own their data (except those returned by lumen_read_image).
 */
typedef struct lumen_image {
    void *data;
    lumen_dtype dtype;
    int64_t n, c, h, w;
    int64_t stride_n, stride_c, stride_h, stride_w;
    int device; /* where data lives: 0 = host memory (the CPU), else a device index whose
                 * memory it is (lumen_device_alloc); zero-initialised views are host views */
} lumen_image;

/* Contiguous interleaved view: n x h x w x c. */
LUMEN_API lumen_image lumen_image_nhwc(void *data, lumen_dtype dtype, int64_t n, int64_t h,
                                       int64_t w, int64_t c);
/* Contiguous planar view: n x c x h x w. */
LUMEN_API lumen_image lumen_image_nchw(void *data, lumen_dtype dtype, int64_t n, int64_t c,
                                       int64_t h, int64_t w);
/* Size of one element of dtype in bytes (0 for an unknown dtype). */
LUMEN_API size_t lumen_dtype_size(lumen_dtype dtype);
/* "u8", "u16", "f32", "f16", "bf16" (or "?"). */
LUMEN_API const char *lumen_dtype_name(lumen_dtype dtype);
/* One element of dtype at p as float (exact: halves widen without rounding), and v stored as
 * dtype at p the way ops store results: u8/u16 rounded to nearest even and saturated, f16/bf16
 * rounded to nearest even (docs/semantics.md). For programs that read elements one by one. */
LUMEN_API float lumen_element_get(const void *p, lumen_dtype dtype);
LUMEN_API void lumen_element_set(void *p, lumen_dtype dtype, float v);

/* ---- context ----------------------------------------------------------- */

typedef struct lumen_context lumen_context;

/*
 * Creates a context on the CPU, with lumen_default_threads() threads.
 */
LUMEN_API lumen_status lumen_context_create(lumen_context **out);
/* The thread count a new context gets: $LUMEN_NUM_THREADS, else $OMP_NUM_THREADS (its first
 * count, as launchers such as Dask or MPI set it per worker), else the number of CPUs this
 * process may run on (its affinity mask: taskset, cgroup cpusets), or fewer where its cgroup's
 * CPU quota allows fewer (cpu.max, a container's --cpus), capped at LUMEN_MAX_THREADS. An
 * unusable value is ignored with a warning. */
LUMEN_API int lumen_default_threads(void);
/*
 * Sharing the CPU with the program (README, "Sharing the CPU with your program"). OpenMP's
 * idle threads spin for milliseconds after each parallel region unless told otherwise, taking
 * cores the program's own work needs. lumen_share_cpu_preinit(envp) gives libgomp a spin of a
 * few microseconds (GOMP_SPINCOUNT) unless $OMP_WAIT_POLICY or $GOMP_SPINCOUNT is set (the
 * user's choice stands). libgomp reads its environment once, as it is loaded, and a setenv
 * even in a .preinit_array function is undone by libc's initialiser; so this must be called
 * from the executable's .preinit_array with the envp that function receives, which
 * LUMEN_SHARE_CPU_AT_START (at file scope in one source file of an executable, not a shared
 * library) does. The environment is as the user gave it again once OpenMP has read it.
 * Returns 1: set, 0: the user's setting stands, -1: too late or an empty environment, nothing
 * changed (libgomp's default stands; set OMP_WAIT_POLICY before starting the program).
 */
LUMEN_API int lumen_share_cpu_preinit(char **envp);
/* The wait policy OpenMP started with, as text: "GOMP_SPINCOUNT=100 (lumen's default)",
 * "OMP_WAIT_POLICY=passive (the environment)" or "libgomp's default (...)". */
LUMEN_API const char *lumen_cpu_wait_policy(void);
#if defined(__GNUC__) && defined(__ELF__)
#define LUMEN_SHARE_CPU_AT_START                                                                   \
    static void lumen_share_cpu_at_start_(int argc, char **argv, char **envp)                      \
    {                                                                                              \
        (void)argc, (void)argv;                                                                    \
        lumen_share_cpu_preinit(envp);                                                             \
    }                                                                                              \
    __attribute__((used, section(".preinit_array"))) static void (*const lumen_share_cpu_entry_)(  \
        int, char **, char **) = lumen_share_cpu_at_start_
#else
#define LUMEN_SHARE_CPU_AT_START /* no .preinit_array: set OMP_WAIT_POLICY before starting */
#endif
LUMEN_API void lumen_context_destroy(lumen_context *ctx);
/* n >= 1; n == 0 restores the default. */
LUMEN_API lumen_status lumen_context_set_threads(lumen_context *ctx, int n);
LUMEN_API int lumen_context_threads(const lumen_context *ctx);
/*
 * Interruption (docs/faults.md). poll(arg) is called by a running op between tiles, bands or
 * blocks of rows (every few milliseconds of work at most), possibly from several of its
 * threads at once: it must be thread-safe, cheap and async-free (no lumen calls). When it
 * returns nonzero the op stops at the next such point and returns LUMEN_ERR_INTERRUPTED; its
 * output is then unspecified (partly written), everything else is as before the call. poll
 * NULL removes the hook. A cancel flag another thread sets: poll reads an atomic int.
 */
LUMEN_API lumen_status lumen_context_set_interrupt(lumen_context *ctx, int (*poll)(void *arg),
                                                   void *arg);
/* Disable (0) or re-enable (1) the SIMD fast paths (scalar reference only). */
LUMEN_API lumen_status lumen_context_set_simd(lumen_context *ctx, int enabled);
/* Comma-separated CPU features the fast path uses now, e.g. "avx2,fma" or "scalar". */
LUMEN_API const char *lumen_cpu_features(const lumen_context *ctx);

/*
 * FFT planning policy. ESTIMATE (default) plans in microseconds; MEASURE times
 * candidate algorithms once per size (seconds) and is faster afterwards. FFTW
 * wisdom persists in $XDG_CACHE_HOME/lumen/ (or ~/.cache/lumen/), so a later
 * process does not plan again.
 */
typedef enum lumen_fft_planning {
    LUMEN_FFT_ESTIMATE = 0,
    LUMEN_FFT_MEASURE = 1
} lumen_fft_planning;
LUMEN_API lumen_status lumen_context_set_fft_planning(lumen_context *ctx, lumen_fft_planning p);
/* Drops cached plans and kernel spectra (they are also freed with the context). */
LUMEN_API void lumen_context_clear_plans(lumen_context *ctx);

/* ---- devices -----------------------------------------------------------
 * Backends register their devices when the library is first used. Today: the CPU (index 0);
 * the CUDA module adds GPUs. A context runs on one device, chosen by a spec string. */

typedef enum lumen_device_kind {
    LUMEN_DEVICE_CPU = 0,
    LUMEN_DEVICE_DISCRETE_GPU = 1,
    LUMEN_DEVICE_INTEGRATED_GPU = 2,
    LUMEN_DEVICE_SOFTWARE = 3 /* an emulated device (lavapipe, pocl): never chosen by "auto" */
} lumen_device_kind;

typedef struct lumen_device_info {
    int index;                   /* 0 .. lumen_device_count() - 1 */
    char name[128];              /* "Intel(R) Xeon(R) ...", "NVIDIA H100 ..." */
    char backend[16];            /* "cpu", "cuda" */
    lumen_device_kind kind;
    uint64_t memory_total;       /* bytes */
    uint64_t memory_free;        /* bytes, at the time of the call */
    char compute_capability[16]; /* "9.0" on CUDA, "" on the CPU */
    int fp16, bf16;              /* 1 if the device computes in that storage type */
} lumen_device_info;

LUMEN_API int lumen_device_count(void);
LUMEN_API lumen_status lumen_device_get_info(int index, lumen_device_info *out);
/* The driver behind device `index`, as its backend describes it ("Vulkan 1.3.230, llvmpipe
 * Mesa 22.3.6 (LLVM 15.0.6)"), into buf; "" where the backend has nothing to say (the CPU). */
LUMEN_API lumen_status lumen_device_get_driver(int index, char *buf, size_t size);
/* The spec that names device `index` ("cpu", "cuda:0"), as lumen_device_find takes it. */
LUMEN_API lumen_status lumen_device_spec(int index, char *buf, size_t size);
/* "cpu", "discrete", "integrated", "software". */
LUMEN_API const char *lumen_device_kind_name(lumen_device_kind kind);
/* Resolves "auto", "cpu", "cuda" (the first CUDA device) or "cuda:N" to a device index;
 * "auto" prefers a discrete GPU, then an integrated one, then the CPU. */
LUMEN_API lumen_status lumen_device_find(const char *spec, int *index);
/* Runs the context's ops on the device that spec names (see lumen_device_find). */
LUMEN_API lumen_status lumen_context_set_device(lumen_context *ctx, const char *spec);
LUMEN_API int lumen_context_device(const lumen_context *ctx);
/* Strict mode: an op the device cannot run fails instead of falling back to the CPU. */
LUMEN_API lumen_status lumen_context_set_strict(lumen_context *ctx, int strict);
LUMEN_API int lumen_context_strict(const lumen_context *ctx);
/* Caps the device memory the context's device may allocate (bytes; 0 = no cap). An op that
 * would exceed it runs out of memory, and falls back to the CPU unless strict. */
LUMEN_API lumen_status lumen_context_set_memory_limit(lumen_context *ctx, uint64_t bytes);
/* TF32 tensor-core math for f32 conv2d / conv_transpose2d on GPUs that have it (NVIDIA
 * Ampere and later): faster, with products rounded to a 10-bit mantissa (relative error near
 * 1e-3). Off by default: FP32 with FMA, as on the CPU. $LUMEN_TF32=1 turns it on for new
 * contexts. Filters never use it; the CPU ignores it. */
LUMEN_API lumen_status lumen_context_set_tf32(lumen_context *ctx, int enabled);
LUMEN_API int lumen_context_tf32(const lumen_context *ctx);
/* The device of the context ("cpu", "cuda:0"), its name and memory: lumen_device_get_info. */

/* Device memory for device-resident views (img.device = the context's device). On the CPU
 * these are plain host allocations. Freed memory returns to the context's pool. */
LUMEN_API lumen_status lumen_device_alloc(lumen_context *ctx, size_t bytes, void **out);
LUMEN_API void lumen_device_free(lumen_context *ctx, void *p);
LUMEN_API lumen_status lumen_device_upload(lumen_context *ctx, void *dst, const void *src,
                                           size_t bytes);
LUMEN_API lumen_status lumen_device_download(lumen_context *ctx, void *dst, const void *src,
                                             size_t bytes);
/* Waits until every op queued on the context's device has finished. */
LUMEN_API lumen_status lumen_context_synchronize(lumen_context *ctx);

/* ---- options ----------------------------------------------------------- */

typedef enum lumen_border {
    LUMEN_BORDER_REFLECT = 0,    /* cba|abcdefgh|hgf  (OpenCV BORDER_REFLECT) default */
    LUMEN_BORDER_CONSTANT = 1,   /* vvv|abcdefgh|vvv */
    LUMEN_BORDER_REPLICATE = 2,  /* aaa|abcdefgh|hhh */
    LUMEN_BORDER_REFLECT101 = 3, /* dcb|abcdefgh|gfe  (OpenCV BORDER_REFLECT_101) */
    LUMEN_BORDER_WRAP = 4        /* fgh|abcdefgh|abc */
} lumen_border;

/* Parses "reflect", "constant", "replicate", "reflect101", "wrap". */
LUMEN_API lumen_status lumen_border_parse(const char *name, lumen_border *out);
LUMEN_API const char *lumen_border_name(lumen_border b);

typedef enum lumen_method {
    LUMEN_METHOD_AUTO = 0,      /* cheapest by the machine's calibrated cost model */
    LUMEN_METHOD_DIRECT = 1,    /* sum over every tap */
    LUMEN_METHOD_SEPARABLE = 2, /* row pass then column pass (rank-1 kernels) */
    LUMEN_METHOD_FFT = 3,       /* tiled overlap-save FFT (FFTW), cost independent of k */
    LUMEN_METHOD_RECURSIVE = 4  /* reported only: the fast Gaussian's recursive filter */
} lumen_method;

LUMEN_API const char *lumen_method_name(lumen_method m);
/* Parses "auto", "direct", "separable", "fft". */
LUMEN_API lumen_status lumen_method_parse(const char *name, lumen_method *out);

/*
 * Context margins of src: its first `top` and last `bottom` rows and its first `left` and last
 * `right` columns are read as the neighbours of the pixels inside them but are not filtered
 * themselves; dst then has src's shape less the margins (OpenCV's filtering of a region of
 * interest with its surroundings, and how a block of a larger image is filtered with its
 * neighbours' pixels: lumen.dask). The border rule applies at src's outer edges only, so dst
 * equals the matching region of src filtered whole. All zero (the default): dst has src's shape.
 * Filters and the exact Gaussian take them; the CPU runs them (other devices fall back to it).
 */
typedef struct lumen_halo {
    int top, bottom, left, right;
} lumen_halo;

typedef struct lumen_filter_options {
    lumen_border border;  /* default LUMEN_BORDER_REFLECT */
    float border_value;   /* for LUMEN_BORDER_CONSTANT, in pixel units */
    int anchor_x;         /* -1: kw/2 */
    int anchor_y;         /* -1: kh/2 */
    int convolve;         /* 0: correlation (cv2.filter2D), 1: true convolution */
    lumen_method method;  /* filter2d only */
    lumen_halo halo;      /* src's context margins (lumen_halo); default none */
} lumen_filter_options;

LUMEN_API lumen_filter_options lumen_filter_options_default(void);

/* What an op actually did: filled when the `info` argument is non-NULL. */
typedef struct lumen_run_info {
    lumen_method method; /* DIRECT, SEPARABLE, FFT or RECURSIVE */
    const char *device;  /* "cpu" */
    const char *isa;     /* "avx2+fma" or "scalar" */
    int threads;
    const char *algo; /* conv2d: "reference", "im2col+sgemm", ...; filters: NULL */
} lumen_run_info;

/* ---- operations ---------------------------------------------------------
 * src and dst must have the same n, c, h, w (less a halo where the options
 * give one) and may differ in dtype and strides. dst may alias src exactly (in place costs a copy
 * of src). Each channel of each image is filtered independently.
 */

/* dst(x,y) = sum_ij k[i*kw+j] * src(x+j-ax, y+i-ay); kernel is kh x kw row-major. */
LUMEN_API lumen_status lumen_filter2d(lumen_context *ctx, const lumen_image *src,
                                      const lumen_image *dst, const float *kernel, int kw, int kh,
                                      const lumen_filter_options *opt, lumen_run_info *info);

/* Row kernel kx (length kw) then column kernel ky (length kh), anchors as filter2d;
 * opt->method may be AUTO, SEPARABLE or FFT. */
LUMEN_API lumen_status lumen_sep_filter2d(lumen_context *ctx, const lumen_image *src,
                                          const lumen_image *dst, const float *kx, int kw,
                                          const float *ky, int kh, const lumen_filter_options *opt,
                                          lumen_run_info *info);

/*
 * OpenCV's GaussianBlur. sigma_y <= 0 means sigma_y = sigma_x. A ksize <= 0
 * is derived from its sigma (round(sigma*8+1)|1, or *6 for u8 data); a
 * sigma <= 0 is derived from its ksize (0.3*((k-1)/2-1)+0.8). Sizes must be
 * odd and positive once derived.
 */
LUMEN_API lumen_status lumen_gaussian_blur(lumen_context *ctx, const lumen_image *src,
                                           const lumen_image *dst, int ksize_x, int ksize_y,
                                           double sigma_x, double sigma_y, lumen_border border,
                                           float border_value, lumen_run_info *info);

typedef enum lumen_precision {
    LUMEN_PRECISION_EXACT = 0, /* OpenCV's kernel, by the fastest exact route */
    LUMEN_PRECISION_FAST = 1   /* recursive approximation, cost independent of sigma */
} lumen_precision;

typedef struct lumen_gaussian_options {
    int ksize_x, ksize_y;      /* as lumen_gaussian_blur; FAST ignores them */
    double sigma_x, sigma_y;
    lumen_border border;
    float border_value;
    lumen_precision precision;
    lumen_method method;       /* EXACT: AUTO, SEPARABLE or FFT */
    lumen_halo halo;           /* EXACT only: src's context margins (lumen_halo) */
} lumen_gaussian_options;

LUMEN_API lumen_gaussian_options lumen_gaussian_options_default(void);
/* Gaussian blur with every option; FAST's error bound is in docs/gaussian-fast.md. */
LUMEN_API lumen_status lumen_gaussian_blur_ex(lumen_context *ctx, const lumen_image *src,
                                              const lumen_image *dst,
                                              const lumen_gaussian_options *opt,
                                              lumen_run_info *info);

/* kw x kh box; normalize != 0 divides by kw*kh (cv2.blur), else plain sums (cv2.boxFilter). */
LUMEN_API lumen_status lumen_box_blur(lumen_context *ctx, const lumen_image *src,
                                      const lumen_image *dst, int kw, int kh, int normalize,
                                      lumen_border border, float border_value,
                                      lumen_run_info *info);

/*
 * Method queries: the method (DIRECT, SEPARABLE, FFT or RECURSIVE) the op of the same name
 * would run with these arguments, chosen as the op chooses it (the same checks, the rank-1
 * test, the context's cost model) without running it: what run_info->method would say.
 * Only the views' shapes, dtypes and devices are read, so their data may be NULL: ask about a
 * whole image that is not in memory (lumen.dask chooses once, for every block of an image, so
 * that blocks cannot disagree). The FFT's cost counts the kernel's transform unless the
 * context has it already, as a real call's does.
 */
LUMEN_API lumen_status lumen_filter2d_method(lumen_context *ctx, const lumen_image *src,
                                             const lumen_image *dst, const float *kernel, int kw,
                                             int kh, const lumen_filter_options *opt,
                                             lumen_method *method);
LUMEN_API lumen_status lumen_sep_filter2d_method(lumen_context *ctx, const lumen_image *src,
                                                 const lumen_image *dst, const float *kx, int kw,
                                                 const float *ky, int kh,
                                                 const lumen_filter_options *opt,
                                                 lumen_method *method);
LUMEN_API lumen_status lumen_gaussian_blur_method(lumen_context *ctx, const lumen_image *src,
                                                  const lumen_image *dst,
                                                  const lumen_gaussian_options *opt,
                                                  lumen_method *method);
/* A box always runs SEPARABLE; this checks the arguments as lumen_box_blur does. */
LUMEN_API lumen_status lumen_box_blur_method(lumen_context *ctx, const lumen_image *src,
                                             const lumen_image *dst, int kw, int kh,
                                             lumen_border border, float border_value,
                                             lumen_method *method);

/* OpenCV getGaussianKernel(n, sigma, CV_32F) into out[n]. */
LUMEN_API lumen_status lumen_gaussian_kernel(int n, double sigma, float *out);
/* The kernel size GaussianBlur derives from sigma for this dtype. */
LUMEN_API int lumen_gaussian_ksize(double sigma, lumen_dtype dtype);

/* ---- resize (docs/resize.md) ------------------------------------------------
 * Resamples each channel of each image of src to dst's height and width. src and dst have
 * the same n and c and may differ in dtype, strides and size; dst must not overlap src. Every
 * rule's coefficients are computed once per call, per output row and column. */

/* Whose conventions: pixel centres, edges, kernels, rounding of sizes (docs/resize.md). */
typedef enum lumen_resize_rule {
    LUMEN_RESIZE_OPENCV = 0, /* cv2.resize (default) */
    LUMEN_RESIZE_PILLOW = 1, /* PIL.Image.resize: supports widen when shrinking */
    LUMEN_RESIZE_TORCH = 2   /* torch.nn.functional.interpolate */
} lumen_resize_rule;

typedef enum lumen_interpolation {
    LUMEN_INTER_NEAREST = 0,       /* cv2 INTER_NEAREST, torch "nearest", Pillow NEAREST */
    LUMEN_INTER_NEAREST_EXACT = 1, /* cv2 INTER_NEAREST_EXACT, torch "nearest-exact" */
    LUMEN_INTER_LINEAR = 2,        /* default */
    LUMEN_INTER_CUBIC = 3,         /* OpenCV and torch a = -0.75, Pillow and antialias -0.5 */
    LUMEN_INTER_AREA = 4,          /* cv2 INTER_AREA, torch "area" (adaptive average pooling) */
    LUMEN_INTER_LANCZOS = 5,       /* OpenCV 8 taps (a = 4), Pillow a = 3 */
    LUMEN_INTER_BOX = 6,           /* Pillow BOX */
    LUMEN_INTER_HAMMING = 7        /* Pillow HAMMING */
} lumen_interpolation;

/* A window of a larger resize (lumen.dask's blocks): src holds rows src_y.. and columns src_x..
 * of an image of whole_h x whole_w, and dst is rows dst_y.. and columns dst_x.. of that image's
 * result of out_h x out_w. dst then equals that part of the whole result: the coefficients are
 * the whole resize's (factors 0 mean out over whole), and the CPU sums in the order it would
 * for the whole image, so the bits are the same. src must hold every pixel those outputs read
 * (an error names the rows or columns otherwise). whole_h = 0: no window (src and dst whole). */
typedef struct lumen_resize_window {
    int64_t whole_h, whole_w, out_h, out_w;
    int64_t src_y, src_x, dst_y, dst_x;
} lumen_resize_window;

typedef struct lumen_resize_options {
    lumen_resize_rule rule;            /* LUMEN_RESIZE_OPENCV */
    lumen_interpolation interpolation; /* LUMEN_INTER_LINEAR */
    /* The scale factors the output size came from (cv2's fx, fy; torch's scale_factor), which
     * the OpenCV and torch rules use to map coordinates; 0: dst's size over src's. */
    double fx, fy;
    int antialias;     /* torch: linear and cubic widen when shrinking (Pillow's coefficients) */
    int align_corners; /* torch: linear and cubic map corner pixel centres onto each other */
    lumen_resize_window window; /* default none: src and dst are whole */
} lumen_resize_options;

/* opencv, linear, no factors, no antialias, no align_corners. */
LUMEN_API lumen_resize_options lumen_resize_options_default(void);
/* The output size scale factors give for this rule: round(h * fy), round(w * fx) for OpenCV
 * and Pillow (ties to even, as cv2's saturate_cast), floor for torch; at least 1. */
LUMEN_API lumen_status lumen_resize_output_size(int64_t h, int64_t w, double fx, double fy,
                                                lumen_resize_rule rule, int64_t *out_h,
                                                int64_t *out_w);
/* src resampled into dst by opt (NULL: defaults). */
LUMEN_API lumen_status lumen_resize(lumen_context *ctx, const lumen_image *src,
                                    const lumen_image *dst, const lumen_resize_options *opt,
                                    lumen_run_info *info);
/* "opencv", "pillow", "torch"; "nearest", "nearest-exact", "linear", ... ("?" if unknown). */
LUMEN_API const char *lumen_resize_rule_name(lumen_resize_rule rule);
LUMEN_API const char *lumen_interpolation_name(lumen_interpolation interpolation);

/* ---- film effects (docs/film.md) -------------------------------------------
 * Phos's formulas (latteine1217/Phos), on images of 1 or 3 channels in linear light: values
 * are taken as x / 255 (u8), x / 65535 (u16) or x (f32), and stored back so (rounded and
 * saturated for u8/u16). Per-channel parameters are indexed by channel (R, G, B); a 1-channel
 * image uses index 1 (green). Results are clipped to [0, 1] as Phos clips them. dst may be
 * src (in place). Everything else runs through the one dispatch path: the convolutions run
 * on the context's device. */

/* Bloom (Phos apply_wavelength_bloom): per channel E = max(x - threshold, 0) * eta[c];
 * out = clip(x - E + E (*) K_c, 0, 1), K_c(r) = rho·exp(-r^2 / 2 sigma^2) + (1 - rho)·exp(-r /
 * kappa) over a (2 radius + 1)^2 square normalised to sum 1, border reflect (cv2's
 * BORDER_REFLECT). radius 0: int(4 max sigma) (one radius for all channels, as Phos). */
typedef struct lumen_bloom_params {
    double threshold; /* 0.8 */
    double eta[3];    /* scattered fraction per channel */
    double sigma[3], kappa[3], rho[3];
    int radius;
} lumen_bloom_params;
LUMEN_API lumen_bloom_params lumen_bloom_params_default(void);
LUMEN_API lumen_status lumen_bloom(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const lumen_bloom_params *p,
                                   lumen_run_info *info);

/* Halation (Phos apply_halation): E = max(x - threshold, 0) * f[c] * energy_fraction; layer =
 * 0.5 G(61, s) + 0.3 G(121, 2s) + 0.2 G(151, 4s) of E, G(k, sigma) OpenCV's k x k Gaussian
 * (border reflect101), s = 0.2 psf_radius; the layer rescaled per channel to sum(E); out =
 * clip(x - E + layer, 0, 1). */
typedef struct lumen_halation_params {
    double threshold;       /* 0.5 */
    double f[3];            /* (T_e T_b T_AH)^2 R_bp per channel */
    double energy_fraction; /* 0.03 */
    double psf_radius;      /* 80 */
} lumen_halation_params;
LUMEN_API lumen_halation_params lumen_halation_params_default(void);
LUMEN_API lumen_status lumen_halation(lumen_context *ctx, const lumen_image *src,
                                      const lumen_image *dst, const lumen_halation_params *p,
                                      lumen_run_info *info);

/* Grain (Phos's Poisson mode): per pixel, photons ~ N(m, sqrt m) with m = max(x * exposure, 1),
 * at least 0; relative noise (photons - m) / m, blurred by OpenCV's Gaussian of sigma size
 * (ksize int(4 size) | 1 clamped to [3, 15]; none when size <= 0.5), divided by 3x its standard
 * deviation over the image, times density x intensity, clipped to [-1, 1]; out = clip(x + noise
 * x amount, 0, 1) (docs/film.md). The random field depends only on (seed, channel, pixel
 * position, image size): the same on every device and thread count. */
typedef struct lumen_grain_params {
    double intensity; /* 0.15 */
    double size;      /* sigma of the blur, pixels */
    double density;   /* 1 */
    double exposure;  /* photons at x = 1: 1000 */
    double amount;    /* how the noise is added (see docs/film.md) */
    uint64_t seed;
} lumen_grain_params;
LUMEN_API lumen_grain_params lumen_grain_params_default(void);
LUMEN_API lumen_status lumen_grain(lumen_context *ctx, const lumen_image *src,
                                   const lumen_image *dst, const lumen_grain_params *p,
                                   lumen_run_info *info);
/* The standard-normal draws lumen_grain uses for channel `channel` of image `image` of an h x w
 * batch with this seed, into out[h * w] (row-major): for reference implementations and tests. */
LUMEN_API lumen_status lumen_grain_normals(uint64_t seed, int64_t h, int64_t w, int64_t image,
                                          int64_t channel, float *out);

/* A film stock: everything the chain uses (data/film_stocks.ini, embedded in the library;
 * docs/film.md gives each number's source in Phos). */
typedef struct lumen_film_stock {
    char name[32];  /* "portra400" */
    char title[64]; /* "Kodak Portra 400" */
    int color;      /* 0: black and white (matrix[0..2] are the panchromatic weights) */
    int iso;
    double matrix[9]; /* spectral response: rows R, G, B of the emulsion from linear RGB */
    int tone;         /* 0: filmic (A..F below, on 10 x the light), 1: Phos's Reinhard */
    double filmic[6]; /* A, B, C, D, E, F */
    int bloom_artistic;  /* black and white: Phos's image-adaptive artistic bloom */
    double sensitivity;  /* its sensitivity factor */
    lumen_bloom_params bloom;
    lumen_halation_params halation;
    int halation_enabled;
    double diffuse[3], direct[3]; /* weights of the scattered and the direct light per layer */
    lumen_grain_params grain;
    double grain_layer[3]; /* the layers' grain weights (colour) */
    double grain_pan;      /* the panchromatic grain weight */
} lumen_film_stock;

/* Names of the stocks, "portra400,cinestill800t,...". */
LUMEN_API const char *lumen_film_stock_names(void);
/* The stock named `name`; LUMEN_ERR_INVALID_ARGUMENT naming the stocks that exist. */
LUMEN_API lumen_status lumen_film_stock_get(const char *name, lumen_film_stock *out);

/* The whole chain (docs/film.md, Phos's optical_processing): u8/u16 sRGB-decoded (f32 taken
 * as linear), the stock's spectral response, grain noise from the response, bloom then halation
 * (black and white: Phos's image-adaptive artistic bloom), the blend of scattered and direct
 * light plus the grain, the tone curve, clipped, sRGB-encoded for u8/u16 (rounded to nearest:
 * Phos truncates, one level at most apart). Strengths scale the effects (0 turns one off, 1 is
 * the stock's; grain 1 is Phos's default grain style). */
typedef struct lumen_film_options {
    double halation, bloom, grain; /* 1 */
    uint64_t seed;                 /* 0 */
} lumen_film_options;
LUMEN_API lumen_film_options lumen_film_options_default(void);
LUMEN_API lumen_status lumen_film(lumen_context *ctx, const lumen_image *src,
                                  const lumen_image *dst, const lumen_film_stock *stock,
                                  const lumen_film_options *opt, lumen_run_info *info);

/* ---- crop to a mask (docs/crop.md) ----------------------------------------------
 * MONAI's CropForeground for the parts it has (margin, allow_smaller, k_divisible), plus a
 * minimum size, a target aspect ratio and a choice of what lies outside the image. The ops run
 * on host views on the CPU whatever the context's device (a copy and a scan: nothing for a
 * device to win); device-resident views are a clear error. */

/* Pixels x0 <= x < x1, y0 <= y < y1 (half-open). Empty when x1 <= x0 or y1 <= y0; a mask with
 * no foreground gives 0, 0, 0, 0 (as MONAI's generate_spatial_bounding_box). Boxes may reach
 * outside an image (negative starts, ends past its size): a crop pads there. */
typedef struct lumen_box {
    int64_t x0, y0, x1, y1;
} lumen_box;

/* 1 if the box holds no pixel. */
LUMEN_API int lumen_box_empty(const lumen_box *box);

/* The bounding box of the pixels of each image of mask where any channel is > threshold, into
 * boxes[0 .. mask->n): one per image, empty (all 0) for an image with none. u8, u16 and f32,
 * any layout and strides; NaN is never foreground. */
LUMEN_API lumen_status lumen_mask_bbox(lumen_context *ctx, const lumen_image *mask,
                                       double threshold, lumen_box *boxes, lumen_run_info *info);

typedef enum lumen_crop_outside {
    LUMEN_CROP_PAD = 0, /* the window keeps its size; pixels outside come from the border rule */
    LUMEN_CROP_CLIP = 1 /* the window is cut to the image (the output may be smaller) */
} lumen_crop_outside;

typedef enum lumen_crop_empty {
    LUMEN_CROP_EMPTY_ERROR = 0, /* an image with an empty mask is an error naming it */
    LUMEN_CROP_EMPTY_WHOLE = 1  /* its box is the whole image (as a full mask would give) */
} lumen_crop_empty;

/* How a box becomes the window that is cut, in this order (docs/crop.md): the box grows by
 * margin on each side; allow_smaller clips it to the image (MONAI's allow_smaller); the
 * shorter side grows around the centre to the aspect ratio; each side grows around the centre
 * to its minimum; each side grows around the centre to a multiple of k (MONAI's k_divisible:
 * the start moves back by floor(growth / 2)); outside says what happens beyond the image. */
typedef struct lumen_crop_options {
    double threshold;           /* mask > threshold is foreground: 0 (MONAI's is_positive) */
    int margin_y, margin_x;     /* >= 0: 0 */
    int allow_smaller;          /* 0 (MONAI >= 1.5's default) */
    double aspect;              /* width / height of the window, > 0; 0: any */
    int64_t min_h, min_w;       /* >= 0: 0 */
    int k_h, k_w;               /* >= 1: 1 */
    lumen_crop_outside outside; /* LUMEN_CROP_PAD (as MONAI, which always pads) */
    lumen_border border;        /* of the pad: LUMEN_BORDER_CONSTANT (MONAI's default) */
    float border_value;         /* 0 */
    lumen_crop_empty empty;     /* LUMEN_CROP_EMPTY_ERROR */
} lumen_crop_options;

LUMEN_API lumen_crop_options lumen_crop_options_default(void);

/* The window the rules above give for box in an image of h x w; an empty box is an error
 * (or, with LUMEN_CROP_EMPTY_WHOLE, the whole image). */
LUMEN_API lumen_status lumen_crop_window(const lumen_box *box, int64_t h, int64_t w,
                                         const lumen_crop_options *opt, lumen_box *window);

/* Copies window windows[b] of image b of src into image b of dst (windows[0] for every image
 * when n_windows is 1, else n_windows = src->n). Every window has dst's h x w; pixels outside
 * src come from border (the rule of lumen's filters, semantics.h; the constant value saturated
 * to dst's dtype). dst has src's n and c, any dtype (converted as the filters store) and must
 * not overlap src. */
LUMEN_API lumen_status lumen_crop_box(lumen_context *ctx, const lumen_image *src,
                                      const lumen_box *windows, int64_t n_windows,
                                      const lumen_image *dst, lumen_border border,
                                      float border_value, lumen_run_info *info);

/* The size of lumen_crop's output: the windows of every image (mask->n is 1 or src->n; mask
 * NULL: src is its own mask, as MONAI's default) must share one h x w, else an error naming
 * two that differ. The mask must be a host view (its values decide the size). */
LUMEN_API lumen_status lumen_crop_size(const lumen_image *src, const lumen_image *mask,
                                       const lumen_crop_options *opt, int64_t *h, int64_t *w);
/* Crops src to its mask's foreground into dst (of lumen_crop_size's size). */
LUMEN_API lumen_status lumen_crop(lumen_context *ctx, const lumen_image *src,
                                  const lumen_image *mask, const lumen_image *dst,
                                  const lumen_crop_options *opt, lumen_run_info *info);

/* ---- neural-network convolution (NCHW) ------------------------------------
 * Tensors are lumen_image views read as N x C x H x W: x = (N, C, H, W), weights
 * w = (K, C / groups, R, S) for conv2d and (C, K / groups, R, S) for conv_transpose2d,
 * y = (N, K, P, Q). Shapes and every rule are PyTorch's Conv2d / ConvTranspose2d: zero padding
 * on both sides, cross-correlation, bias optional (K floats or NULL). f32, f16 or bf16 (each
 * tensor its own; halves are widened exactly, the sums are f32 and y is rounded once). */

typedef struct lumen_conv2d_params {
    int stride_h, stride_w;             /* >= 1 */
    int pad_h, pad_w;                   /* >= 0 */
    int dilation_h, dilation_w;         /* >= 1 */
    int groups;                         /* >= 1, divides C and K */
    int output_pad_h, output_pad_w;     /* conv_transpose2d only: 0 <= op < max(stride, dilation) */
} lumen_conv2d_params;

/* stride 1, padding 0, dilation 1, groups 1, output padding 0. */
LUMEN_API lumen_conv2d_params lumen_conv2d_params_default(void);

/* Output height and width of conv2d: (H + 2p - d(R-1) - 1) / s + 1 per axis. */
LUMEN_API lumen_status lumen_conv2d_output_size(const lumen_image *x, const lumen_image *w,
                                                const lumen_conv2d_params *p, int64_t *out_h,
                                                int64_t *out_w);
/* y = conv2d(x, w) + bias into a preallocated y of the output size (the conv_into form). */
LUMEN_API lumen_status lumen_conv2d(lumen_context *ctx, const lumen_image *x, const lumen_image *w,
                                    const float *bias, const lumen_conv2d_params *p,
                                    const lumen_image *y, lumen_run_info *info);

/* Output size of conv_transpose2d: (H - 1)s - 2p + d(R-1) + op + 1 per axis. */
LUMEN_API lumen_status lumen_conv_transpose2d_output_size(const lumen_image *x,
                                                          const lumen_image *w,
                                                          const lumen_conv2d_params *p,
                                                          int64_t *out_h, int64_t *out_w);
LUMEN_API lumen_status lumen_conv_transpose2d(lumen_context *ctx, const lumen_image *x,
                                              const lumen_image *w, const float *bias,
                                              const lumen_conv2d_params *p, const lumen_image *y,
                                              lumen_run_info *info);

/* The same, allocating y as a contiguous NCHW tensor of x's dtype (free it with
 * lumen_image_free). */
LUMEN_API lumen_status lumen_conv2d_alloc(lumen_context *ctx, const lumen_image *x,
                                          const lumen_image *w, const float *bias,
                                          const lumen_conv2d_params *p, lumen_image *y,
                                          lumen_run_info *info);
LUMEN_API lumen_status lumen_conv_transpose2d_alloc(lumen_context *ctx, const lumen_image *x,
                                                    const lumen_image *w, const float *bias,
                                                    const lumen_conv2d_params *p, lumen_image *y,
                                                    lumen_run_info *info);

/*
 * Prepacked conv2d weights: the CPU transforms a layer's weights once (Winograd U, the
 * SGEMM's A slivers) for the algorithm it picks for that layer, and lumen_conv2d_packed reuses
 * them on every call, bit for bit what lumen_conv2d gives. The handle is made for one x shape
 * x_shape = {N, C, H, W} and one p (any strides of x are fine); a call with another x shape or
 * p fails with LUMEN_ERR_INVALID_ARGUMENT naming the argument. It keeps the view w (not a
 * copy): w must stay valid and unchanged while the handle lives. Device contexts (Vulkan,
 * CUDA) ignore the pack and run on w; a CPU context whose ISA differs from the packing one
 * (LUMEN_CPU_ISA) transforms w per call as lumen_conv2d does. docs/conv2d.md.
 */
typedef struct lumen_conv2d_weights lumen_conv2d_weights;
LUMEN_API lumen_status lumen_conv2d_weights_pack(lumen_context *ctx, const int64_t x_shape[4],
                                                 const lumen_image *w,
                                                 const lumen_conv2d_params *p,
                                                 lumen_conv2d_weights **out);
/* p: NULL for the handle's parameters, else it must equal them. */
LUMEN_API lumen_status lumen_conv2d_packed(lumen_context *ctx, const lumen_image *x,
                                           const lumen_conv2d_weights *wp, const float *bias,
                                           const lumen_conv2d_params *p, const lumen_image *y,
                                           lumen_run_info *info);
/* The packed algorithm ("winograd-f4x4", "winograd-f2x2", "im2col+sgemm", "depthwise",
 * "direct", "reference": the last three keep no transformed copy; "none": w lives in device
 * memory) and
 * the bytes of transformed weights the handle holds. */
LUMEN_API const char *lumen_conv2d_weights_algo(const lumen_conv2d_weights *wp, size_t *bytes);
LUMEN_API void lumen_conv2d_weights_free(lumen_conv2d_weights *wp);

/* ---- image files --------------------------------------------------------
 * By extension: .png (u8/u16, 1..4 channels (2 = gray+alpha)), .jpg/.jpeg
 * (u8, 1/3 channels), .tif/.tiff (u8/u16/f32, 1..4 channels), .webp (u8,
 * 3/4 channels), .exr (f32 in memory; float or half on disk; 1..4 channels),
 * .npy (u8/u16/f32/f16; H x W or H x W x C; f64 converted to f32 on read).
 * docs/io.md: formats, metadata, orientation, limits.
 */

/* Reads into a new contiguous n=1 HWC image; free with lumen_image_free. As
 * lumen_read_image_ex with default options: EXIF orientation applied, default pixel limit. */
LUMEN_API lumen_status lumen_read_image(const char *path, lumen_image *out);
/* Writes atomically: to a temporary file in the same folder, then renamed. */
LUMEN_API lumen_status lumen_write_image(const char *path, const lumen_image *img);
/* Frees the data of an image returned by lumen_read_image and zeroes it. */
LUMEN_API void lumen_image_free(lumen_image *img);

/* Metadata carried from a file to another. Blobs are malloc'd by lumen_read_image_ex (free
 * them with lumen_image_metadata_free); a caller filling one for lumen_write_image_ex owns it. */
typedef struct lumen_image_metadata {
    unsigned char *icc;  /* ICC colour profile, or NULL */
    size_t icc_size;
    unsigned char *exif; /* EXIF as a TIFF structure ("II*\0" / "MM\0*"), no "Exif\0\0" */
    size_t exif_size;
    unsigned char *xmp; /* XMP packet (UTF-8 XML, not NUL-terminated), or NULL */
    size_t xmp_size;
    /* The EXIF/TIFF orientation (1..8) of the pixels returned, 0 if the file states none: 1
     * once applied on read. On write, 1..8 is stored in the EXIF block (and TIFF's tag). */
    int orientation;
} lumen_image_metadata;

/* Frees the blobs of metadata filled by lumen_read_image_ex and zeroes it (NULL: no-op). */
LUMEN_API void lumen_image_metadata_free(lumen_image_metadata *meta);

typedef struct lumen_read_options {
    /* 0 (default): rotate/flip the pixels as the EXIF (TIFF) orientation says, as cv2.imread
     * does, and reset it to 1 in the metadata; 1: the pixels as stored (cv2's
     * IMREAD_IGNORE_ORIENTATION), the metadata keeping the orientation. */
    int ignore_orientation;
    /* Refuse images with more pixels (w x h) than this; 0: the process-wide limit
     * (lumen_get_max_image_pixels); UINT64_MAX: no limit but the hard 2^31. */
    uint64_t max_pixels;
} lumen_read_options;

typedef struct lumen_write_options {
    int quality;  /* JPEG and WebP, 1..100; 0: the default (JPEG 95, WebP 90) */
    int lossless; /* WebP: lossless (quality then trades speed for size) */
    int half;     /* EXR: store f32 pixels as 16-bit half floats (default: 32-bit float) */
} lumen_write_options;

/* All zero: the defaults above. */
LUMEN_API lumen_read_options lumen_read_options_default(void);
LUMEN_API lumen_write_options lumen_write_options_default(void);

/* lumen_read_image with options (NULL: defaults); meta (NULL: not wanted) receives the file's
 * ICC profile, EXIF, XMP and orientation where the format holds them. On failure out and meta
 * are zeroed. */
LUMEN_API lumen_status lumen_read_image_ex(const char *path, const lumen_read_options *opt,
                                           lumen_image *out, lumen_image_metadata *meta);
/* lumen_read_image_ex on a file held in memory (stdin, a network buffer, fuzzers): format is
 * an extension ("png", ".jpg", "exr"...). */
LUMEN_API lumen_status lumen_read_image_memory(const void *buf, size_t len, const char *format,
                                               const lumen_read_options *opt, lumen_image *out,
                                               lumen_image_metadata *meta);
/* lumen_write_image with options (NULL: defaults) and metadata to store (NULL: none); blobs a
 * format cannot hold are left out (docs/io.md). */
LUMEN_API lumen_status lumen_write_image_ex(const char *path, const lumen_image *img,
                                            const lumen_write_options *opt,
                                            const lumen_image_metadata *meta);
/* Whether lumen_write_image_ex(path, ...) would accept an image of this dtype and channel
 * count (extension, dtype, channels, options), without touching the disk: check outputs
 * before reading and filtering inputs. */
LUMEN_API lumen_status lumen_check_write_image(const char *path, lumen_dtype dtype,
                                               int64_t channels, const lumen_write_options *opt);

/* The default pixel limit, as Pillow's MAX_IMAGE_PIXELS guards against decompression bombs:
 * 2^28 (16384 x 16384; a 200-megapixel photo passes, a 30000 x 30000 bomb does not). */
#define LUMEN_DEFAULT_MAX_IMAGE_PIXELS ((uint64_t)1 << 28)
/* Sets the process-wide pixel limit for reads (0: no limit but the hard 2^31); it overrides
 * $LUMEN_MAX_PIXELS. Thread-safe. */
LUMEN_API void lumen_set_max_image_pixels(uint64_t max_pixels);
/* The limit in force: the one set above, else $LUMEN_MAX_PIXELS (a decimal count, 0: no
 * limit; reads fail naming it if it is malformed), else LUMEN_DEFAULT_MAX_IMAGE_PIXELS. */
LUMEN_API uint64_t lumen_get_max_image_pixels(void);

#ifdef __cplusplus
}
#endif
#endif /* LUMEN_H */
