/*
 * Tiled overlap-save FFT filtering with FFTW (single precision).
 *
 * The image is cut into tiles of T = N - k + 1 outputs per axis; each tile's
 * N x N input window (rows and columns mapped by the border rule, so every
 * border mode is exact and no padded copy of the image exists) is
 * transformed, multiplied by the conjugate kernel spectrum (correlation) and
 * transformed back; the first T x T samples are the tile's outputs. Sizes
 * are c * 2^a (c = 1, 3, 5, 7) chosen by cost, and the working set per thread
 * is three N x N buffers (N x N <= 2^21) whatever the image size. Where fewer, larger tiles
 * are cheaper (tiles fewer than threads, or a huge kernel's overlap), one tile at a time runs
 * on all threads instead: FFTW's OpenMP threads inside the transforms, rows in parallel for the
 * loads, the product and the stores (docs/large-kernels.md). Plans and kernel spectra live
 * in the context's plan cache; FFTW wisdom persists on disk.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "semantics.h"
#include "cpu.h"
#include "film_map.h"
#include "row_kernels.h"
#include "rows.h"

#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* FFTW's planner is not thread-safe: every plan/destroy/wisdom call holds this. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;
static bool planner_ready;
static bool fftw_threads_ok; /* fftwf_init_threads succeeded: plans may have several threads */

/* Largest tile (elements): bigger ones run FFTW far below its in-cache speed. */
#define MAX_TILE_ELEMS ((int64_t)1 << 21)
/* Largest tile all threads run together, per thread (2 threads: 2^23 elements, so that a
 * 3000 x 2000 image padded by a 301-tap kernel, 2304 x 3456, is one tile: 100 MB of buffers). */
#define MAX_SHARED_TILE_ELEMS_PER_THREAD ((int64_t)1 << 22)
#define WISDOM_FILE "fftw-wisdom-f32"
/* lumen_cpu_fft_tile_work's cost of a tile whatever its size (in its n log2 n units). */
#define TILE_FIXED_WORK 1.0e6

/* ---- sizes --------------------------------------------------------------- */

/*
 * FFT lengths we use: c * 2^a with c in {1, 3, 5, 7} and a >= 3. FFTW's
 * estimated plans run such lengths at full speed, while lengths rich in odd
 * factors (625 = 5^4, 729 = 3^6) measured 1.5-2x slower per n log n here.
 * Shared tiles (below) may also take the wide lengths: odd part 3^i 5^j 7^k up to 49 (2304 =
 * 9 x 256, 3456 = 27 x 128, 2240 = 35 x 64), as the FFT floor's pair does; on whole-image
 * transforms they ran at the narrow lengths' speed per n log n (2-core Zen 5, 2 threads).
 */
static bool is_fast_length(int n, bool wide)
{
    int a = 0;
    while (n % 2 == 0) n /= 2, a++;
    if (a < 3) return false;
    if (n == 1 || n == 3 || n == 5 || n == 7) return true;
    if (!wide || n > 49) return false;
    while (n % 3 == 0)
        n /= 3;
    while (n % 5 == 0)
        n /= 5;
    while (n % 7 == 0)
        n /= 7;
    return n == 1;
}

/* Smallest fast length >= n. */
static int next_length(int n, bool wide)
{
    while (!is_fast_length(n, wide))
        n++;
    return n;
}

/*
 * A shared tile's time x threads / one thread's time on the same tile, in
 * lumen_cpu_fft_tile_work's units (FFTW's OpenMP threads in the transforms, rows in parallel
 * elsewhere). Measured on the 2-core Zen 5 guest, 2 threads, at load 4-6 (min of 5-300 runs,
 * tilings alternated): 0.68 at 224 x 320 (the threads' fork and join weigh on a 0.3 ms tile),
 * 0.9-1.1 at 768 x 1024, and 1.15 (1.04-1.22) at 2304 x 3456 against the model's one-thread
 * cost of such a size (2.5x per n log n: each thread's share of a big transform fits the caches
 * better; sigma 50 on 3000 x 2000 ran 0.70-0.76x the time of 42 spread 640 x 768 tiles in three
 * of four alternated runs, 1.03x in one, where 1.05 would predict 0.86x). A shared tile's many
 * barriers (FFTW's loops and ours) cost it dearly whenever another process holds a core: each waits
 * for a descheduled thread, a scheduler tick (12 shared 720 x 800 tiles ran 20x slower at load 6, a
 * 112 x 128 one 400x). So tiles below MIN_SHARED_TILE_ELEMS never share (they take a few ms, and
 * their threads may idle), and up to MAX_TILE_ELEMS, where the same tile could run on one thread,
 * the efficiency is taken as 0.85: shared only where threads would otherwise idle.
 */
#define MIN_SHARED_TILE_ELEMS ((int64_t)1 << 18)

static double shared_efficiency(int64_t n)
{
    return n > MAX_TILE_ELEMS ? 1.15 : 0.85;
}

double lumen_cpu_fft_tile_work(int nh, int nw)
{
    double n = (double)nh * nw;
    /*
     * r2c + c2r ~ 2 x 2.5 n log2 n flops, plus loading, the product and
     * storing. Measured with FFTW 3.3.10 on the 2-core Zen 4 guest (one pair, one
     * thread, FFTW_ESTIMATE): 0.21-0.24 ns per n log2 n up to 768x768 (a tile's
     * buffers in the 1 MB L2 and L3), 1.4x that at 896x896-1024x1024, and ~2.2x
     * beyond (plus page faults on the big buffers); factors of 7 cost ~15% more.
     * (The Xeon this was first fitted on had its step at 640x640; an exact
     * Gaussian sigma = 50 then took 640x640 tiles of 340x340 outputs.)
     */
    double cache = n <= 800.0 * 800 ? 1.0 : n <= 1200.0 * 1200 ? 1.45 : 2.5;
    double prime7 = (nh % 7 == 0 || nw % 7 == 0) ? 1.15 : 1.0;
    /*
     * Plus a cost per tile, whatever its size: one thread's k = 31 calls (CPU time, 2026-11-27)
     * took 0.92 ms per 384x384 tile, 1.56 per 512x512, 2.29 per 640x640 and 2.9 per 768x768,
     * which n log n (with the +6) alone puts 1.4x too far apart. Without it a 2078x2078 image
     * (a Dask block of 2048 with its halo) took 36 tiles of 384x384; with 1e6 units per tile
     * it takes 9 of 768x768 and runs 0.78-0.81x the time (4126x4126: 0.80x), the other
     * benchmark sizes within 3 % (old and new builds alternated, docs/large-kernels.md).
     * It was fitted on tiles of 384^2 to 768^2; below 384^2 it is taken in proportion to the
     * tile's size (not measured: tiny images, where direct and FFT cost about the same, keep
     * the choice they had).
     */
    const double fixed = n >= 384.0 * 384 ? TILE_FIXED_WORK : TILE_FIXED_WORK * n / (384.0 * 384);
    return n * (log2(n) * cache * prime7 + 6.0) + fixed;
}

/* Candidate lengths for one axis: fast (or wide), >= k, up to the first fast one (not only the
 * first wide one) the whole axis fits. */
static int axis_candidates(int k, int64_t len, bool wide, int *out, int max)
{
    int hi = next_length((int)(len + k - 1 < 16384 ? len + k - 1 : 16384), false);
    int count = 0;
    for (int n = next_length(k > 8 ? k : 8, wide); n <= hi && count < max;
         n = next_length(n + 1, wide))
        out[count++] = n;
    return count;
}

bool lumen_cpu_fft_threads_linked(void)
{
#ifdef LUMEN_HAVE_FFTW_OMP
    return true;
#else
    return false;
#endif
}

/* Channels one tile item takes together when the source is interleaved (stride_c 1, stride_w
 * c): its window rows are then read as one contiguous run, not c strided ones. */
#define FFT_GROUP_MAX 4

static bool interleaved(const lumen_image *v)
{
    return v->c > 1 && v->stride_c == 1 && v->stride_w == v->c;
}

/* Channels per tile item: c when interleaved and c <= FFT_GROUP_MAX, else 1. */
static int fft_group(const lumen_filter_job *job)
{
    return interleaved(job->src) && job->src->c <= FFT_GROUP_MAX ? (int)job->src->c : 1;
}

/*
 * The cheapest of two ways to run nh x nw tiles, in per-thread work. A work item is a tile of a
 * group of channels (fft_group). Spread: each item on one thread, ceil(items / threads) rounds,
 * for tiles up to MAX_TILE_ELEMS. Shared: one item at a time on all threads, items / (threads x
 * efficiency), for tiles up to threads x MAX_SHARED_TILE_ELEMS_PER_THREAD x 3 / (2c + 1) (a
 * group of c channels has 2c + 1 buffers: the cap keeps them within the threads' 3-buffer
 * tiles).
 */
lumen_fft_tiling lumen_cpu_fft_tiling(const lumen_filter_job *job, int threads)
{
    const lumen_image *s = job->dst; /* tiles cover the outputs (a halo: fewer than src) */
    const int group = fft_group(job); /* channels per work item */
    const int64_t groups = s->n * (s->c / group);
    const bool share = threads > 1 && lumen_cpu_fft_threads_linked();
    const int64_t shared_cap =
        share ? threads * MAX_SHARED_TILE_ELEMS_PER_THREAD * 3 / (2 * group + 1) : 0;
    const int64_t cap = shared_cap > MAX_TILE_ELEMS ? shared_cap : MAX_TILE_ELEMS;
    int ch[1024], cw[1024];
    int nch = axis_candidates(job->kh, s->h, share, ch, 1024);
    int ncw = axis_candidates(job->kw, s->w, share, cw, 1024);
    lumen_fft_tiling best = {0, 0, 0, INFINITY, 1};
    for (int i = 0; i < nch; i++) {
        for (int j = 0; j < ncw; j++) {
            int nh = ch[i], nw = cw[j];
            const int64_t elems = (int64_t)nh * nw;
            if (elems > cap) break;
            int64_t ty = (s->h + nh - job->kh) / (nh - job->kh + 1);
            int64_t tx = (s->w + nw - job->kw) / (nw - job->kw + 1);
            int64_t items = groups * ty * tx, rounds = (items + threads - 1) / threads;
            const double item = group * lumen_cpu_fft_tile_work(nh, nw);
            /* the wide lengths for the big shared tiles only (where they were measured) */
            const bool narrow = is_fast_length(nh, false) && is_fast_length(nw, false);
            if (narrow && elems <= MAX_TILE_ELEMS && rounds * item < best.work)
                best = (lumen_fft_tiling){nh, nw, items * group, (double)rounds * item, 1};
            const double shared = (double)items * item / (threads * shared_efficiency(elems));
            if ((narrow || elems > MAX_TILE_ELEMS) && elems >= MIN_SHARED_TILE_ELEMS &&
                elems <= shared_cap && shared < best.work)
                best = (lumen_fft_tiling){nh, nw, items * group, shared, threads};
        }
    }
    return best;
}

/* ---- memory headroom ---------------------------------------------------------
 *
 * FFTW allocates inside the planner (plans, twiddle tables, its hash table), for wisdom, and
 * inside fftwf_execute: some plans allocate buffers as they run (FFTW 3.3.10 here: 650 of
 * the tile sizes we use, up to ~9.4 bytes per element, the largest block 0.5 MB). Those
 * allocations go through FFTW's malloc_plain, which asserts on failure (kernel/alloc.c,
 * "fftw: alloc.c:29: assertion failed: p") and aborts the process; FFTW has no allocator
 * hook. Buffers we hand to FFTW come from fftwf_alloc_* (kernel_malloc: NULL on failure,
 * checked). For FFTW's own allocations we check, just before each call that may make them,
 * that the memory they may need can be had now: it is mapped and unmapped again (no page
 * touched), which fails as the allocation would under an address-space limit (RLIMIT_AS,
 * ulimit -v) or strict overcommit. Then the call is refused with LUMEN_ERR_OUT_OF_MEMORY
 * instead of the process aborting. What remains (docs/faults.md): memory taken by another
 * thread between the check and FFTW's allocation. */

/* FFTW's internal allocations for one nh x nw plan pair, planning or executing: measured
 * at most 4.8 MB planning and 9.4 bytes per element executing; this bounds both. */
static size_t fftw_internal_bytes(int nh, int nw)
{
    return ((size_t)16 << 20) + (size_t)16 * (size_t)nh * (size_t)nw;
}

/* Whether `bytes` more memory can be had now (mapped, then unmapped again). */
static bool headroom(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    munmap(p, bytes);
    return true;
}

/* ---- plans and wisdom ----------------------------------------------------- */

typedef struct fft_plans {
    fftwf_plan fwd, inv;
    int threads; /* FFTW's threads in them */
} fft_plans;

static void plans_destroy(void *p)
{
    fft_plans *fp = p;
    pthread_mutex_lock(&planner_lock);
    if (fp->fwd) fftwf_destroy_plan(fp->fwd);
    if (fp->inv) fftwf_destroy_plan(fp->inv);
    pthread_mutex_unlock(&planner_lock);
    free(fp);
}

/* Writes wisdom to a temporary file and renames it, so readers never see half a file. */
static void save_wisdom(void)
{
    char path[4200], tmp[4300];
    if (!lumen_cache_path(WISDOM_FILE, path, sizeof path)) return;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (fftwf_export_wisdom_to_filename(tmp) && rename(tmp, path) == 0)
        lumen_log(LUMEN_LOG_DEBUG, "fft: saved wisdom to %s", path);
    else
        unlink(tmp);
}

/* Once, under planner_lock, before the first plan: FFTW's threads (their solvers must be in the
 * planner before it plans or reads wisdom that names them), then the wisdom. */
static void planner_init_once(void)
{
    char path[4200];
    if (planner_ready) return;
    planner_ready = true;
#ifdef LUMEN_HAVE_FFTW_OMP
    fftw_threads_ok = fftwf_init_threads() != 0;
#endif
    if (lumen_cache_path(WISDOM_FILE, path, sizeof path) && access(path, R_OK) == 0)
        lumen_log(LUMEN_LOG_DEBUG, "fft: wisdom %s %s", path,
                  fftwf_import_wisdom_from_filename(path) ? "loaded" : "unreadable, ignored");
}

/* The planner's thread count for the next plans (planner_lock held); 1 after each plan. */
static void plan_threads(int threads)
{
#ifdef LUMEN_HAVE_FFTW_OMP
    if (fftw_threads_ok) fftwf_plan_with_nthreads(threads);
#else
    (void)threads;
#endif
}

/* FFTW's OpenMP loops size their team by the calling thread's nthreads ICV, not by the plan: a
 * plan on n threads runs with the ICV set to n (returns the old value for team_end). */
static int team_begin(int n)
{
    const int old = omp_get_max_threads();
    if (n > 1 && n != old) omp_set_num_threads(n);
    return old;
}

static void team_end(int n, int old)
{
    if (n > 1 && n != old) omp_set_num_threads(old);
}

static fft_plans *make_plans(lumen_fft_planning policy, int nh, int nw, int threads)
{
    fft_plans *fp = calloc(1, sizeof *fp);
    float *in = fftwf_alloc_real((size_t)nh * nw);
    fftwf_complex *out = fftwf_alloc_complex((size_t)nh * (nw / 2 + 1));
    if (fp && in && out && headroom(fftw_internal_bytes(nh, nw))) {
        unsigned flags = policy == LUMEN_FFT_MEASURE ? FFTW_MEASURE : FFTW_ESTIMATE;
        pthread_mutex_lock(&planner_lock);
        planner_init_once();
        fp->threads = fftw_threads_ok ? threads : 1;
        plan_threads(fp->threads);
        const int old = team_begin(fp->threads); /* FFTW_MEASURE runs them */
        fp->fwd = fftwf_plan_dft_r2c_2d(nh, nw, in, out, flags);
        fp->inv = fftwf_plan_dft_c2r_2d(nh, nw, out, in, flags);
        team_end(fp->threads, old);
        plan_threads(1);
        if (policy == LUMEN_FFT_MEASURE) save_wisdom();
        pthread_mutex_unlock(&planner_lock);
    }
    fftwf_free(in);
    fftwf_free(out);
    if (fp && (!fp->fwd || !fp->inv)) {
        plans_destroy(fp);
        fp = NULL;
    }
    return fp;
}

static const fft_plans *get_plans(lumen_context *ctx, int nh, int nw, int threads)
{
    const int key[5] = {'P', nh, nw, (int)ctx->fft_planning, threads};
    fft_plans *fp = lumen_plan_cache_get(ctx->plans, key, sizeof key);
    if (fp) return fp;
    if (!(fp = make_plans(ctx->fft_planning, nh, nw, threads))) return NULL;
    return lumen_plan_cache_put(ctx->plans, key, sizeof key, fp, plans_destroy, sizeof *fp);
}

/* ---- kernel spectra -------------------------------------------------------- */

/* Key: sizes, the plan's threads (its transform may round otherwise), scale, and the kernel
 * itself, so equal kernels share a spectrum. */
static void *spectrum_key(const lumen_filter_job *job, int nh, int nw, int threads, size_t *len)
{
    const int sep = job->taps == LUMEN_TAPS_SEPARABLE;
    const size_t taps = sep ? (size_t)(job->kw + job->kh) : (size_t)job->kw * job->kh;
    const int head[7] = {'S', nh, nw, threads, job->kw, job->kh, sep};
    *len = sizeof head + sizeof(float) * (taps + 1);
    char *key = malloc(*len);
    if (!key) return NULL;
    memcpy(key, head, sizeof head);
    float *f = (float *)(key + sizeof head);
    f[0] = job->scale;
    if (sep) {
        memcpy(f + 1, job->kx, sizeof(float) * (size_t)job->kw);
        memcpy(f + 1 + job->kw, job->ky, sizeof(float) * (size_t)job->kh);
    } else {
        memcpy(f + 1, job->kernel, sizeof(float) * taps);
    }
    return key;
}

static float kernel_tap(const lumen_filter_job *job, int i, int j)
{
    if (job->taps == LUMEN_TAPS_2D) return job->kernel[(int64_t)i * job->kw + j];
    return job->ky[i] * job->kx[j] * job->scale;
}

/*
 * conj(FFT(k)) / (nh*nw): multiplying a tile's spectrum by it and
 * transforming back gives the correlation, already normalised.
 */
static fftwf_complex *make_spectrum(const fft_plans *fp, const lumen_filter_job *job, int nh, int nw)
{
    const size_t nc = (size_t)nh * (nw / 2 + 1);
    float *buf = fftwf_alloc_real((size_t)nh * nw);
    fftwf_complex *spec = fftwf_alloc_complex(nc);
    if (!buf || !spec || !headroom(fftw_internal_bytes(nh, nw))) {
        fftwf_free(buf), fftwf_free(spec);
        return NULL;
    }
    memset(buf, 0, sizeof(float) * (size_t)nh * nw);
    for (int i = 0; i < job->kh; i++)
        for (int j = 0; j < job->kw; j++) buf[(size_t)i * nw + j] = kernel_tap(job, i, j);
    const int old = team_begin(fp->threads);
    fftwf_execute_dft_r2c(fp->fwd, buf, spec);
    team_end(fp->threads, old);
    const float norm = 1.0f / ((float)nh * (float)nw);
    for (size_t i = 0; i < nc; i++) spec[i][0] *= norm, spec[i][1] *= -norm;
    fftwf_free(buf);
    return spec;
}

static void spectrum_free(void *p) { fftwf_free(p); }

/* The threads a tiling's plans get (1 without FFTW's threads). */
static int plan_thread_count(lumen_fft_tiling t)
{
    return lumen_cpu_fft_threads_linked() ? t.tile_threads : 1;
}

bool lumen_cpu_fft_spectrum_cached(lumen_context *ctx, const lumen_filter_job *job,
                                   lumen_fft_tiling t)
{
    size_t len;
    void *key = spectrum_key(job, t.nh, t.nw, plan_thread_count(t), &len);
    bool hit = key && lumen_plan_cache_get(ctx->plans, key, len) != NULL;
    free(key);
    return hit;
}

/*
 * Kernels that ran another way. Auto adds a kernel's transform to the estimate of an FFT call
 * whose spectrum is not cached (cost_model.c), which is right for one call; but the spectrum is
 * cached only when the FFT runs, so a kernel that lost once lost on every later call too, and
 * a loop of exact Gaussians sigma 50 stayed separable at 1.4x the FFT's time (Zen 5). A kernel
 * this context already ran (direct or separable) is therefore taken as one that repeats: its
 * transform is paid once and reused. The note is a marker in the plan cache, keyed like a
 * spectrum ('N' first) on the kernel, the output's size and the threads, as the FFT job has
 * them (the taps the FFT would take: the 2-D kernel where there is one).
 */
static void *noted_key(const lumen_filter_job *job, int threads, size_t *len)
{
    lumen_filter_job f = *job;
    f.taps = job->kernel ? LUMEN_TAPS_2D : LUMEN_TAPS_SEPARABLE;
    int *key = spectrum_key(&f, (int)job->dst->h, (int)job->dst->w, threads, len);
    if (key) key[0] = 'N';
    return key;
}

void lumen_cpu_fft_note_kernel(lumen_context *ctx, const lumen_filter_job *job)
{
    if ((int64_t)job->kw * job->kh < LUMEN_FFT_MIN_TAPS) return; /* auto never weighs the FFT */
    size_t len;
    void *key = noted_key(job, ctx->threads, &len);
    if (key && !lumen_plan_cache_get(ctx->plans, key, len)) {
        char *mark = malloc(1);
        if (mark) lumen_plan_cache_put(ctx->plans, key, len, mark, free, 1);
    }
    free(key);
}

bool lumen_cpu_fft_kernel_noted(lumen_context *ctx, const lumen_filter_job *job)
{
    size_t len;
    void *key = noted_key(job, ctx->threads, &len);
    const bool hit = key && lumen_plan_cache_get(ctx->plans, key, len) != NULL;
    free(key);
    return hit;
}

static const fftwf_complex *get_spectrum(lumen_context *ctx, const fft_plans *fp,
                                         const lumen_filter_job *job, int nh, int nw)
{
    size_t len;
    void *key = spectrum_key(job, nh, nw, fp->threads, &len);
    if (!key) return NULL;
    fftwf_complex *spec = lumen_plan_cache_get(ctx->plans, key, len);
    if (!spec && (spec = make_spectrum(fp, job, nh, nw)))
        spec = lumen_plan_cache_put(ctx->plans, key, len, spec, spectrum_free,
                                    sizeof(fftwf_complex) * (size_t)nh * (nw / 2 + 1));
    free(key);
    return spec;
}

/* ---- tiles ------------------------------------------------------------------ */

/* One thread's buffers: a window and an output per channel of a group, the spectrum, and two
 * rows of interleaved pixels (a shared tile's helper threads have the rows only). */
typedef struct tile_bufs {
    float *in[FFT_GROUP_MAX], *out[FFT_GROUP_MAX];
    fftwf_complex *freq;
    float *row, *row2;
} tile_bufs;

typedef struct fft_run {
    const lumen_filter_job *job;
    const lumen_row_kernels *rk;
    const fft_plans *plans;
    /* per channel (film maps with per-channel kernels), else [0] for all: a copy of the job with
     * that channel's kernel, and its spectrum */
    lumen_filter_job kjobs[FFT_GROUP_MAX];
    const fftwf_complex *spec[FFT_GROUP_MAX];
    int nh, nw;
    int group;  /* channels per item: c when interleaved and c <= FFT_GROUP_MAX, else 1 */
    bool per_channel; /* a film map's kernel per channel: kjobs[ch], spec[ch] */
    bool store_group; /* dst interleaved like src: outputs stored as one run per row */
    float sum_abs_k;
    bool exact_ties;          /* integer dst and a dyadic kernel: exact .5 ties can occur */
    int64_t th, tw;           /* outputs per tile */
    int64_t tiles_y, tiles_x; /* per plane */
    /* threads on one tile: 1, each thread runs its own tiles; > 1, they run one tile together,
     * its rows split between them, each with its own row buffers (rows[thread]) */
    int tile_threads;
    const tile_bufs *rows;
} fft_run;

static const lumen_filter_job *kjob(const fft_run *r, int64_t ch)
{
    return &r->kjobs[r->per_channel ? ch : 0];
}

/* The buffers this thread uses for tb's tile: tb's own, with its own row buffers when the tile
 * is shared (inside the tile's parallel region). */
static tile_bufs thread_bufs(const fft_run *r, const tile_bufs *tb)
{
    tile_bufs t = *tb;
    if (r->tile_threads > 1) {
        t.row = r->rows[omp_get_thread_num()].row;
        t.row2 = r->rows[omp_get_thread_num()].row2;
    }
    return t;
}

/* A film job's highlights of n loaded values of channel ch, in place (film_map.h). */
static void film_highlights_row(const lumen_film_map *m, int64_t ch, float *row, int64_t n)
{
    const float t = m->threshold, g = m->gain[ch];
    for (int64_t x = 0; x < n; x++)
        row[x] = lumen_film_highlight(row[x] * m->in_scale, t, g);
}

/* n pixels of g interleaved channels into g rows, and back. Literal strides for 3 and 4
 * channels let the compiler vectorise the shuffles (a runtime stride reads lane by lane). */
static void deinterleave(const float *in, int g, int64_t n, float *const *out)
{
    if (g == 3) {
        float *a = out[0], *b = out[1], *c = out[2];
        for (int64_t x = 0; x < n; x++)
            a[x] = in[3 * x], b[x] = in[3 * x + 1], c[x] = in[3 * x + 2];
    } else if (g == 4) {
        float *a = out[0], *b = out[1], *c = out[2], *d = out[3];
        for (int64_t x = 0; x < n; x++)
            a[x] = in[4 * x], b[x] = in[4 * x + 1], c[x] = in[4 * x + 2], d[x] = in[4 * x + 3];
    } else {
        for (int k = 0; k < g; k++)
            for (int64_t x = 0; x < n; x++)
                out[k][x] = in[x * g + k];
    }
}

static void interleave(float *const *in, int g, int64_t n, float *out)
{
    if (g == 3) {
        const float *a = in[0], *b = in[1], *c = in[2];
        for (int64_t x = 0; x < n; x++)
            out[3 * x] = a[x], out[3 * x + 1] = b[x], out[3 * x + 2] = c[x];
    } else if (g == 4) {
        const float *a = in[0], *b = in[1], *c = in[2], *d = in[3];
        for (int64_t x = 0; x < n; x++)
            out[4 * x] = a[x], out[4 * x + 1] = b[x], out[4 * x + 2] = c[x], out[4 * x + 3] = d[x];
    } else {
        for (int k = 0; k < g; k++)
            for (int64_t x = 0; x < n; x++)
                out[x * g + k] = in[k][x];
    }
}

/* Row i of the group's windows: source row yy (border-mapped) from column xs, cols values of
 * each of the group's channels ch0 ..; E of them for a film job. */
static void load_window_row(const fft_run *r, const tile_bufs *tb, int64_t b, int64_t ch0,
                            int64_t yy, int64_t xs, int64_t cols, int64_t i)
{
    const lumen_filter_job *job = r->job;
    const int g = r->group;
    float *rows[FFT_GROUP_MAX];
    for (int k = 0; k < g; k++)
        rows[k] = tb->in[k] + i * r->nw;
    if (g == 1) {
        lumen_rows_load(r->rk, job, 1, b, ch0, yy, xs, cols, rows[0]);
    } else {
        lumen_rows_load(r->rk, job, g, b, 0, yy, xs, cols, tb->row);
        deinterleave(tb->row, g, cols, rows);
    }
    for (int k = 0; job->map && k < g; k++)
        film_highlights_row(job->map, ch0 + k, rows[k], cols);
}

/* The group's input windows, rows and columns mapped by the border rule; zeros beyond. */
static void load_windows(const fft_run *r, const tile_bufs *tb, int64_t b, int64_t ch0,
                         int64_t y0, int64_t x0, int64_t rows, int64_t cols)
{
    const lumen_filter_job *job = r->job;
#pragma omp parallel num_threads(r->tile_threads) if (r->tile_threads > 1)
    {
        const tile_bufs t = thread_bufs(r, tb);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < r->nh; i++) {
            if (i < rows) {
                int64_t yy = lumen_border_index(y0 - job->ay + i, job->src->h, job->border);
                load_window_row(r, &t, b, ch0, yy, x0 - job->ax, cols, i);
            }
            for (int k = 0; k < r->group; k++) {
                float *row = t.in[k] + i * r->nw;
                const int64_t from = i < rows ? cols : 0;
                memset(row + from, 0, sizeof(float) * (size_t)(r->nw - from));
            }
        }
    }
}

/* Largest |value| of the window, or NaN when it holds NaN or Inf. */
static float window_max_abs(const fft_run *r, const float *in, int64_t rows, int64_t cols)
{
    float m = 0.0f;
    int nonfinite = 0;
#pragma omp parallel for num_threads(r->tile_threads) if (r->tile_threads > 1) schedule(static)    \
    reduction(max                                                                                  \
              : m) reduction(|                                                                     \
                             : nonfinite)
    for (int64_t i = 0; i < rows; i++) {
        float v = r->rk->max_abs(in + i * r->nw, cols);
        if (isnan(v))
            nonfinite = 1;
        else
            m = v > m ? v : m;
    }
    return nonfinite ? NAN : m;
}

/* Output (y, x) of the tile summed directly over its window, in double (job: the channel's
 * kernel). */
static double direct_at(const fft_run *r, const lumen_filter_job *job, const float *in, int64_t y,
                        int64_t x)
{
    double acc = 0.0;
    for (int i = 0; i < job->kh; i++)
        for (int j = 0; j < job->kw; j++)
            acc += (double)kernel_tap(job, i, j) * in[(y + i) * r->nw + x + j];
    return acc;
}

/*
 * A window holding NaN or Inf would smear it over the whole tile through the
 * transform; such tiles are summed directly instead, so results follow IEEE
 * as the other methods do. So are windows of finite values so large that the
 * transform's sums (up to nh * nw * max|x| * sum|k|) would overflow f32 into
 * Inf/NaN where the result is finite (|x| beyond about 1e30; no image gets there).
 */
/*
 * True when every tap has at most 12 significant bits (binomials / 2^m,
 * multiples of 1/64 ...): only then do integer images give exact sums that
 * can sit on a .5 tie. Other kernels' taps are f32 roundings of rationals,
 * whose exact sums essentially never tie, and every method rounds them alike
 * up to f32 accumulation.
 */
static bool kernel_is_dyadic(const lumen_filter_job *job)
{
    for (int i = 0; i < job->kh; i++)
        for (int j = 0; j < job->kw; j++) {
            int e;
            float m = frexpf(kernel_tap(job, i, j), &e) * 4096.0f;
            if (m != truncf(m)) return false;
        }
    return true;
}

static bool needs_direct(const fft_run *r, float amax)
{
    return isnan(amax) ||
           (double)amax * r->nh * r->nw * fmax(1.0, (double)r->sum_abs_k) > FLT_MAX / 64.0;
}

static void direct_tile(const fft_run *r, const lumen_filter_job *job, const float *in, int64_t th,
                        int64_t tw, float *out)
{
#pragma omp parallel for num_threads(r->tile_threads) if (r->tile_threads > 1) schedule(dynamic, 1)
    for (int64_t y = 0; y < th; y++)
        for (int64_t x = 0; x < tw; x++) out[y * r->nw + x] = (float)direct_at(r, job, in, y, x);
}

/*
 * Integer outputs round at .5; the transform's error (measured below
 * 1.2e-7 x sum|k| x max|x|) could flip a value that lies exactly on a tie,
 * which dyadic kernels on integer data produce often. Outputs within 10x that
 * bound of a tie are summed directly, so they round as the exact value does.
 */
static void fix_ties(const fft_run *r, const float *in, float amax, int64_t th, int64_t tw, float *out)
{
    const float eps = 1e-6f * r->sum_abs_k * amax;
#pragma omp parallel for num_threads(r->tile_threads) if (r->tile_threads > 1) schedule(static)
    for (int64_t y = 0; y < th; y++)
        for (int64_t x = 0; x < tw; x++) {
            float v = out[y * r->nw + x];
            if (fabsf(v - floorf(v) - 0.5f) <= eps)
                out[y * r->nw + x] = (float)direct_at(r, r->job, in, y, x);
        }
}

/* freq *= spec over the tile's spectrum, in equal parts of whole 16-value blocks per thread when
 * the tile is shared (so each value is computed as one thread would). */
static void multiply(const fft_run *r, fftwf_complex *freq, const fftwf_complex *spec)
{
    const int64_t n = (int64_t)r->nh * (r->nw / 2 + 1), parts = r->tile_threads;
    const int64_t part = ((n + parts - 1) / parts + 15) / 16 * 16;
#pragma omp parallel for num_threads(r->tile_threads) if (r->tile_threads > 1) schedule(static)
    for (int64_t p = 0; p < parts; p++) {
        const int64_t a = p * part, e = a + part < n ? a + part : n;
        if (a < e) r->rk->complex_mul((float *)(freq + a), (const float *)(spec + a), e - a);
    }
}

/* Channel k of the group: its window transformed, multiplied and transformed back into out[k]
 * (or summed directly, or zeros; see above). */
static void filter_window(const fft_run *r, const tile_bufs *tb, int k, int64_t ch, int64_t th,
                          int64_t tw)
{
    const lumen_filter_job *job = r->job;
    float *in = tb->in[k], *out = tb->out[k];
    float amax = window_max_abs(r, in, th + job->kh - 1, tw + job->kw - 1);
    if (amax == 0.0f) {
        /* an all-zero window (the highlights of a film effect are mostly zeros): its outputs
         * are exactly zero, without transforms */
#pragma omp parallel for num_threads(r->tile_threads) if (r->tile_threads > 1) schedule(static)
        for (int64_t y = 0; y < th; y++)
            memset(out + y * r->nw, 0, (size_t)tw * sizeof *out);
    } else if (needs_direct(r, amax)) {
        direct_tile(r, kjob(r, ch), in, th, tw, out);
    } else {
        fftwf_execute_dft_r2c(r->plans->fwd, in, tb->freq);
        multiply(r, tb->freq, r->spec[r->per_channel ? ch : 0]);
        fftwf_execute_dft_c2r(r->plans->inv, tb->freq, out);
        if (r->exact_ties) fix_ties(r, in, amax, th, tw, out);
    }
}

/* A film job's blend of n values of channel ch (film_map.h): src holds the source values,
 * layer the convolved ones, and gets the outputs (scaled to dst's units). */
static void film_blend(const lumen_film_map *m, int64_t ch, const float *src, float *layer,
                       int64_t n)
{
    const float t = m->threshold, g = m->gain[ch], lg = m->layer_gain[ch];
    const float in = m->in_scale, out = m->out_scale;
    for (int64_t x = 0; x < n; x++) {
        const float v = src[x] * in;
        layer[x] = lumen_film_blend(v, lumen_film_highlight(v, t, g), layer[x] * lg) * out;
    }
}

/* Row y of the group's outputs to dst (blended first for a film job). */
static void store_row(const fft_run *r, const tile_bufs *tb, int64_t b, int64_t ch0, int64_t y,
                      int64_t y0, int64_t x0, int64_t tw)
{
    const lumen_filter_job *job = r->job;
    const int g = r->group;
    float *outs[FFT_GROUP_MAX], *srcs[FFT_GROUP_MAX];
    for (int k = 0; k < g; k++)
        outs[k] = tb->out[k] + y * r->nw, srcs[k] = tb->row + k * r->nw;
    if (job->map) { /* the source values, channel by channel, into tb->row */
        if (g == 1) {
            lumen_rows_load(r->rk, job, 1, b, ch0, y0 + y, x0, tw, srcs[0]);
        } else {
            lumen_rows_load(r->rk, job, g, b, 0, y0 + y, x0, tw, tb->row2);
            deinterleave(tb->row2, g, tw, srcs);
        }
        for (int k = 0; k < g; k++)
            film_blend(job->map, ch0 + k, srcs[k], outs[k], tw);
    }
    if (g > 1 && r->store_group) { /* one interleaved run */
        interleave(outs, g, tw, tb->row2);
        lumen_rows_store(r->rk, job->dst, g, tb->row2,
                         lumen_px_addr(job->dst, b, 0, y0 + y, x0), tw * g);
        return;
    }
    for (int k = 0; k < g; k++)
        lumen_rows_store(r->rk, job->dst, 1, outs[k],
                         lumen_px_addr(job->dst, b, ch0 + k, y0 + y, x0), tw);
}

static void process_tile(const fft_run *r, int64_t item, const tile_bufs *tb)
{
    const lumen_filter_job *job = r->job;
    const lumen_image *s = job->dst; /* outputs; their windows map into src by the anchor */
    const int64_t groups = s->c / r->group;
    const int64_t per_plane = r->tiles_y * r->tiles_x, plane = item / per_plane;
    const int64_t b = plane / groups, ch0 = plane % groups * r->group;
    const int64_t y0 = (item % per_plane) / r->tiles_x * r->th, x0 = item % r->tiles_x * r->tw;
    const int64_t th = s->h - y0 < r->th ? s->h - y0 : r->th;
    const int64_t tw = s->w - x0 < r->tw ? s->w - x0 : r->tw;
    load_windows(r, tb, b, ch0, y0, x0, th + job->kh - 1, tw + job->kw - 1);
    for (int k = 0; k < r->group; k++)
        filter_window(r, tb, k, ch0 + k, th, tw);
#pragma omp parallel num_threads(r->tile_threads) if (r->tile_threads > 1)
    {
        const tile_bufs t = thread_bufs(r, tb);
#pragma omp for schedule(static)
        for (int64_t y = 0; y < th; y++)
            store_row(r, &t, b, ch0, y, y0, x0, tw);
    }
}

static void bufs_free(tile_bufs *tb)
{
    for (int k = 0; k < FFT_GROUP_MAX; k++)
        fftwf_free(tb->in[k]), fftwf_free(tb->out[k]);
    fftwf_free(tb->freq);
    free(tb->row);
}

/* A thread's row buffers, and the tile's buffers when `tile`. */
static bool bufs_alloc(const fft_run *r, tile_bufs *tb, bool tile)
{
    const size_t n = (size_t)r->nh * r->nw, row = (size_t)r->nw * (size_t)r->group;
    *tb = (tile_bufs){0};
    bool ok = (tb->row = malloc(2 * row * sizeof(float))) &&
              (!tile || (tb->freq = fftwf_alloc_complex((size_t)r->nh * (r->nw / 2 + 1))));
    for (int k = 0; k < r->group && ok && tile; k++)
        ok = (tb->in[k] = fftwf_alloc_real(n)) && (tb->out[k] = fftwf_alloc_real(n));
    if (ok) tb->row2 = tb->row + row;
    return ok;
}

/* Threads with a tile's buffers: all of them, or the first when they share one tile. */
static int tile_owners(const fft_run *r, int threads)
{
    return r->tile_threads > 1 ? 1 : threads;
}

/* Every thread's tile buffers, kept in the plan cache between calls: a large filter allocates
 * tens of MB of them, and fresh pages cost the kernel's zeroing on every call. */
typedef struct workspace {
    int threads;
    tile_bufs bufs[];
} workspace;

static void workspace_free(void *p)
{
    workspace *ws = p;
    for (int t = 0; t < ws->threads; t++)
        bufs_free(&ws->bufs[t]);
    free(ws);
}

static size_t workspace_bytes(const fft_run *r, int threads)
{
    return sizeof(float) * (size_t)r->nh * (size_t)(r->nw + 2) * (size_t)(2 * r->group + 1) *
               (size_t)tile_owners(r, threads) +
           2 * sizeof(float) * (size_t)r->nw * (size_t)r->group * (size_t)threads;
}

static void workspace_key(const fft_run *r, int threads, int key[6])
{
    key[0] = 'W', key[1] = r->nh, key[2] = r->nw, key[3] = r->group, key[4] = threads;
    key[5] = r->tile_threads > 1;
}

/* The cached workspace (taken out of the cache while in use), or a new one; NULL: no memory. */
static workspace *workspace_get(lumen_context *ctx, const fft_run *r)
{
    int key[6];
    workspace_key(r, ctx->threads, key);
    workspace *ws = lumen_plan_cache_take(ctx->plans, key, sizeof key);
    if (ws) return ws;
    if (!(ws = calloc(1, sizeof *ws + (size_t)ctx->threads * sizeof(tile_bufs)))) return NULL;
    const int owners = tile_owners(r, ctx->threads);
    for (ws->threads = 0; ws->threads < ctx->threads; ws->threads++)
        if (!bufs_alloc(r, &ws->bufs[ws->threads], ws->threads < owners)) {
            bufs_free(&ws->bufs[ws->threads]);
            workspace_free(ws);
            return NULL;
        }
    return ws;
}

static void workspace_put(lumen_context *ctx, const fft_run *r, workspace *ws)
{
    int key[6];
    workspace_key(r, ws->threads, key);
    lumen_plan_cache_put(ctx->plans, key, sizeof key, ws, workspace_free,
                         workspace_bytes(r, ws->threads));
}

static lumen_status run_tiles(lumen_context *ctx, fft_run *r)
{
    const lumen_image *s = r->job->src;
    const int64_t items = s->n * (s->c / r->group) * r->tiles_y * r->tiles_x;
    lumen_cpu_stop stop = lumen_cpu_stop_init(ctx); /* polled per tile (docs/faults.md) */
    /* What FFTW allocates in the threads that execute, and the tile buffers unless cached. */
    const int64_t busy = items < ctx->threads ? items : ctx->threads;
    const size_t need = workspace_bytes(r, ctx->threads) +
                        fftw_internal_bytes(r->nh, r->nw) * (size_t)busy;
    workspace *ws = headroom(need) ? workspace_get(ctx, r) : NULL;
    if (!ws)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "fft: out of memory: %d threads need %zu MB for %dx%d tiles",
                               ctx->threads, need >> 20, r->nh, r->nw);
    if (r->tile_threads > 1) {
        /* one tile at a time on all threads: FFTW's parallel regions and ours open here, on
         * the calling thread (inside a parallel region they would run on one thread) */
        r->rows = ws->bufs;
        const int old = team_begin(r->tile_threads);
        for (int64_t it = 0; it < items && !lumen_cpu_should_stop(&stop); it++)
            process_tile(r, it, &ws->bufs[0]);
        team_end(r->tile_threads, old);
    } else {
#pragma omp parallel num_threads(ctx->threads)
        {
            const tile_bufs *tb = &ws->bufs[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < items; it++)
                if (!lumen_cpu_should_stop(&stop)) process_tile(r, it, tb);
        }
    }
    workspace_put(ctx, r, ws);
    return lumen_cpu_stop_status(&stop, LUMEN_OK);
}

/* Each channel's kernel job and spectrum: one for all, or a film map's kernel per channel. */
static lumen_status channel_spectra(lumen_context *ctx, fft_run *r)
{
    const lumen_filter_job *job = r->job;
    r->per_channel = job->map && job->map->kernels;
    const int n = r->per_channel ? (int)job->src->c : 1;
    if (n > FFT_GROUP_MAX)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "fft: at most %d per-channel kernels",
                               FFT_GROUP_MAX);
    for (int c = 0; c < n; c++) {
        r->kjobs[c] = *job;
        if (r->per_channel) r->kjobs[c].kernel = job->map->kernels[c];
        float sum = 0.0f; /* the largest sum|k| bounds every channel's transform */
        for (int i = 0; i < job->kh; i++)
            for (int j = 0; j < job->kw; j++)
                sum += fabsf(kernel_tap(&r->kjobs[c], i, j));
        r->sum_abs_k = fmaxf(r->sum_abs_k, sum);
        if (!(r->spec[c] = get_spectrum(ctx, r->plans, &r->kjobs[c], r->nh, r->nw)))
            return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                                   "fft: out of memory for the kernel spectrum");
    }
    return LUMEN_OK;
}

lumen_status lumen_cpu_fft(lumen_context *ctx, const lumen_filter_job *job)
{
    lumen_fft_tiling t = lumen_cpu_fft_tiling(job, ctx->threads);
    if (t.nh == 0)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "fft: no FFT size fits a %dx%d kernel",
                               job->kw, job->kh);
    return lumen_cpu_fft_tiled(ctx, job, t);
}

lumen_status lumen_cpu_fft_tiled(lumen_context *ctx, const lumen_filter_job *job,
                                 lumen_fft_tiling t)
{
    const int tile_threads = t.tile_threads < ctx->threads ? t.tile_threads : ctx->threads;
    fft_run r = {.job = job,
                 .rk = lumen_cpu_row_kernels(ctx),
                 .nh = t.nh,
                 .nw = t.nw,
                 .group = fft_group(job),
                 .th = t.nh - job->kh + 1,
                 .tw = t.nw - job->kw + 1,
                 .tile_threads = tile_threads > 1 ? tile_threads : 1};
    if (r.th < 1 || r.tw < 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "fft: a %dx%d tile is smaller than "
                               "the %dx%d kernel",
                               t.nw, t.nh, job->kw, job->kh);
    r.store_group = r.group > 1 && interleaved(job->dst);
    /* a film job rounds its blend, not the convolution: no ties of the filter's own */
    r.exact_ties = !lumen_dtype_is_float(job->dst->dtype) && !job->map && kernel_is_dyadic(job);
    r.tiles_y = (job->dst->h + r.th - 1) / r.th;
    r.tiles_x = (job->dst->w + r.tw - 1) / r.tw;
    if (!(r.plans = get_plans(ctx, t.nh, t.nw, r.tile_threads)))
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "fft: out of memory planning a %dx%d transform", t.nh, t.nw);
    lumen_status s = channel_spectra(ctx, &r);
    if (s) return s;
    lumen_log(LUMEN_LOG_DEBUG,
              "fft: %dx%d tiles of %lldx%lld outputs, %lld tiles, %d channels each, %d thread(s) "
              "per tile",
              t.nh, t.nw, (long long)r.tw, (long long)r.th,
              (long long)(job->src->n * job->src->c * r.tiles_y * r.tiles_x), r.group,
              r.tile_threads);
    return run_tiles(ctx, &r);
}
