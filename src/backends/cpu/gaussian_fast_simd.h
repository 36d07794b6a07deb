/*
 * The fast Gaussian's inner loops, written once for every vector width (gaussian_fast.c has
 * the design). A kernel file includes this after defining:
 *   VF, VW                          the float vector type and its lanes (8 or 16)
 *   V_SET1, V_ADD, V_MUL,           broadcast, add, multiply,
 *   V_FMADD, V_FNMADD               a*b + c and -(a*b) + c, fused
 *   load_n(p, m), store_n(p, v, m)  the first min(m, VW) lanes (masked when m < VW)
 *   GF_IIR, GF_FIR                  the names of the two kernels it defines
 * Each step updates all lanes of a row, VW per vector; the lanes are independent, so the
 * vectors of one step overlap in the pipeline and hide the FMA latency of the recursion. Every
 * lane runs the same operations in the same order whatever VW is, so every width gives the
 * same bits (test_gaussian_fast.c's test_same_bits_avx2_avx512).
 */
/*
 * Rows PREFETCH steps ahead are requested early: in the column pass each row
 * is a new page of T, beyond the reach of the hardware prefetchers, so
 * without this every step waits for memory.
 */
#define PREFETCH 8

static inline void prefetch_row(const float *p, int64_t m)
{
    for (int64_t j = 0; j < m; j += 16)
        _mm_prefetch((const char *)(p + j), _MM_HINT_T0);
}

/* The coefficients of one direction, broadcast once per call. */
typedef struct coefs {
    VF pr0, pi0, pr1, pi1; /* poles */
    VF ar0, ai0, ar1, ai1; /* input weights */
} coefs;

static coefs make_coefs(const lumen_gf_iir *c, bool causal)
{
    coefs k;
    k.pr0 = V_SET1(c->pr[0]), k.pi0 = V_SET1(c->pi[0]);
    k.pr1 = V_SET1(c->pr[1]), k.pi1 = V_SET1(c->pi[1]);
    k.ar0 = V_SET1(causal ? c->ar[0] : c->br[0]);
    k.ai0 = V_SET1(causal ? c->ai[0] : c->bi[0]);
    k.ar1 = V_SET1(causal ? c->ar[1] : c->br[1]);
    k.ai1 = V_SET1(causal ? c->ai[1] : c->bi[1]);
    return k;
}

/* re + i im = (pr + i pi)(re + i im) + (ar + i ai) x for one section, in registers. */
#define SECTION(pr, pi, ar, ai, xv, re, im)                                                        \
    do {                                                                                           \
        VF re_ = V_FMADD(pr, re, V_FNMADD(pi, im, V_MUL(ar, xv)));                                 \
        VF im_ = V_FMADD(pr, im, V_FMADD(pi, re, V_MUL(ai, xv)));                                  \
        re = re_, im = im_;                                                                        \
    } while (0)

/* s = p s + v x for both sections (complex). */
#define UPDATE(k, xv, zr0, zi0, zr1, zi1)                                                          \
    do {                                                                                           \
        SECTION((k)->pr0, (k)->pi0, (k)->ar0, (k)->ai0, xv, zr0, zi0);                             \
        SECTION((k)->pr1, (k)->pi1, (k)->ar1, (k)->ai1, xv, zr1, zi1);                             \
    } while (0)

/*
 * u steps (u = 1, STEPS or STEPS_ONE) over all lanes: for step t the input x[t] + off
 * and, unless out is NULL, the output out[t] = Re(s0 + s1) (+ add[t] unless
 * add is NULL). The state stays in registers across the u steps: loading and
 * storing it once per step made the loop bound by memory operations.
 * Inlined with constant u and NULLs, so each use compiles to its own loop.
 */
static inline void steps(const coefs *k, const float *const *x, float *s, int64_t m, int u,
                         const float *const *add, float *const *out)
{
    for (int64_t j = 0; j < m; j += VW) {
        const int64_t r = m - j;
        float *s0 = s + j, *s1 = s + m + j, *s2 = s + 2 * m + j, *s3 = s + 3 * m + j;
        VF zr0 = load_n(s0, r), zi0 = load_n(s1, r), zr1 = load_n(s2, r), zi1 = load_n(s3, r);
        for (int t = 0; t < u; t++) {
            UPDATE(k, load_n(x[t] + j, r), zr0, zi0, zr1, zi1);
            if (!out) continue;
            VF v = V_ADD(zr0, zr1);
            store_n(out[t] + j, add ? V_ADD(v, load_n(add[t] + j, r)) : v, r);
        }
        store_n(s0, zr0, r), store_n(s1, zi0, r), store_n(s2, zr1, r), store_n(s3, zi1, r);
    }
}

/*
 * Steps per block of the recursion (see steps()). Many lanes (the column pass) run STEPS per
 * block: their vectors of one step overlap, and longer blocks only add register pressure.
 * Lanes of one vector (the row pass, 16 rows at AVX-512) have nothing to overlap with: each
 * step waits on the previous one (two FMAs), and the store and reload of the state between
 * blocks lengthen that chain, so they run STEPS_ONE per block (Zen 5: 0.43 -> 0.35 ns per
 * pixel for the recursion alone; docs/gaussian-fast.md).
 */
#define STEPS 4
#define STEPS_ONE 16
#define STEPS_MAX (STEPS > STEPS_ONE ? STEPS : STEPS_ONE)

/* Rows i, i+d, ..., i+(u-1)d of x, offset by off. */
static inline void gather(const float *const *x, int64_t off, int64_t i, int64_t d, int u,
                          const float **out)
{
    for (int t = 0; t < u; t++)
        out[t] = x[i + t * d] + off;
}

/* Feeds input samples [need, *fed) in aligned chunks of LUMEN_GF_FEED, highest first. */
static inline void feed_down(const lumen_gf_feed *f, int64_t need, int64_t *fed)
{
    need = need > 0 ? need : 0;
    while (*fed > need) {
        const int64_t lo =
            *fed % LUMEN_GF_FEED ? *fed - *fed % LUMEN_GF_FEED : *fed - LUMEN_GF_FEED;
        f->in(f->ctx, lo, *fed);
        *fed = lo;
    }
}

/* Hands over output samples [*done, upto) in aligned chunks of LUMEN_GF_FEED (all when last). */
static inline void feed_up(const lumen_gf_feed *f, int64_t upto, bool last, int64_t *done)
{
    while (upto - *done >= LUMEN_GF_FEED || (last && upto > *done)) {
        const int64_t hi = upto - *done >= LUMEN_GF_FEED ? *done + LUMEN_GF_FEED : upto;
        f->out(f->ctx, *done, hi);
        *done = hi;
    }
}

/*
 * Anticausal over positions hi down to lo (inclusive), input x[i+1]; outputs to y rows when y.
 * With f, input samples (x[pad + j]) are fed one chunk ahead of the step that reads them, and
 * all of [0, n) by the end (the causal pass reads sample 0, which this pass does not).
 */
static void anticausal(const coefs *k, const float *const *x, int64_t off, int64_t hi, int64_t lo,
                       int64_t pad, float *y, int64_t ys, float *s, int64_t m,
                       const lumen_gf_feed *f, int u)
{
    const float *xs[STEPS_MAX];
    float *os[STEPS_MAX];
    int64_t i = hi, fed = hi + 2 - pad; /* samples above the first one read need no feed */
    for (; i - u + 1 >= lo; i -= u) {
        if (f) feed_down(f, i + 1 - (u - 1) - pad - LUMEN_GF_FEED, &fed);
        for (int t = 0; t < u && i - t - PREFETCH >= 0; t++)
            prefetch_row(x[i - t - PREFETCH] + off, m);
        gather(x, off, i + 1, -1, u, xs);
        for (int t = 0; t < u && y; t++)
            os[t] = y + (i - t - pad) * ys;
        steps(k, xs, s, m, u, NULL, y ? os : NULL);
    }
    for (; i >= lo; i--) {
        if (f) feed_down(f, i + 1 - pad - LUMEN_GF_FEED, &fed);
        gather(x, off, i + 1, -1, 1, xs);
        os[0] = y ? y + (i - pad) * ys : NULL;
        steps(k, xs, s, m, 1, NULL, y ? os : NULL);
    }
    if (f) feed_down(f, 0, &fed);
}

/*
 * Causal over positions lo .. hi-1; when y, output row i-pad = Re(s) + y row, to o or y. With
 * f, finished outputs are handed over a chunk at a time, one chunk behind the step that stores
 * them (so their stores have reached the cache: loads right after them wait, unforwarded).
 */
static void causal(const coefs *k, const float *const *x, int64_t off, int64_t lo, int64_t hi,
                   int64_t pad, float *y, int64_t ys, float *const *o, float *s, int64_t m,
                   const lumen_gf_feed *f, int u)
{
    const int64_t xlen = hi; /* rows past hi are not read by this pass */
    const float *xs[STEPS_MAX], *as[STEPS_MAX];
    float *os[STEPS_MAX];
    int64_t i = lo, done = 0;
    for (; i + u <= hi; i += u) {
        for (int t = 0; t < u && i + t + PREFETCH < xlen; t++)
            prefetch_row(x[i + t + PREFETCH] + off, m);
        gather(x, off, i, 1, u, xs);
        for (int t = 0; t < u && y; t++) {
            as[t] = y + (i + t - pad) * ys;
            os[t] = o ? o[i + t - pad] + off : y + (i + t - pad) * ys;
        }
        steps(k, xs, s, m, u, y ? as : NULL, y ? os : NULL);
        if (f) feed_up(f, i + u - pad - LUMEN_GF_FEED, false, &done);
    }
    for (; i < hi; i++) {
        gather(x, off, i, 1, 1, xs);
        if (y) as[0] = y + (i - pad) * ys, os[0] = o ? o[i - pad] + off : y + (i - pad) * ys;
        steps(k, xs, s, m, 1, y ? as : NULL, y ? os : NULL);
    }
    if (f) feed_up(f, hi - pad, true, &done);
}

/*
 * GF_IIR with u steps per block (u = STEPS or STEPS_ONE, a constant in each clone the compiler
 * makes). Not forced inline: compiled into one function with both lengths, the many-lane loops
 * ran 15 % slower (the column pass, Zen 5).
 */
static void iir_run(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad,
                    int64_t n, int64_t m, float *y, int64_t ys, float *const *o, float *s,
                    const lumen_gf_feed *feed, int u)
{
    const int64_t len = n + 2 * pad;
    const coefs kc = make_coefs(c, true), ka = make_coefs(c, false);
    lumen_gf_state_init(c->hr, c->hi, c->periodic ? NULL : x[len - 1] + off, s, m);
    anticausal(&ka, x, off, len - 2, pad + n - 1, pad, NULL, 0, s, m, NULL, u);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    for (int64_t j = 0; j < m; j++)
        y[(n - 1) * ys + j] = s[j] + s[2 * m + j];
    anticausal(&ka, x, off, pad + n - 2, pad, pad, y, ys, s, m, feed, u);

    lumen_gf_state_init(c->gr, c->gi, c->periodic ? NULL : x[0] + off, s, m);
    causal(&kc, x, off, 0, pad, pad, NULL, 0, NULL, s, m, NULL, u);
    if (c->periodic) lumen_gf_state_scale(c, s, m);
    causal(&kc, x, off, pad, pad + n, pad, y, ys, o, s, m, feed, u);
}

/* As iir_generic (gaussian_fast.c): anticausal into y, then causal + y into the output. The
 * blocks' length changes only where the state lives between steps, not the bits. */
static void GF_IIR(const lumen_gf_iir *c, const float *const *x, int64_t off, int64_t pad,
                   int64_t n, int64_t m, float *y, int64_t ys, float *const *o, float *s,
                   const lumen_gf_feed *feed)
{
    if (m <= VW) iir_run(c, x, off, pad, n, m, y, ys, o, s, feed, STEPS_ONE);
    else
        iir_run(c, x, off, pad, n, m, y, ys, o, s, feed, STEPS);
}

/*
 * nv vectors (nv constant after inlining, so the accumulators stay in
 * registers) of one output row from lane j, r of them valid: the kernel is
 * symmetric, so mirrored rows are added first (half the FMAs), and the taps
 * are the outer loop so each row pointer is loaded once.
 */
static inline __attribute__((always_inline)) void
fir_chunk(const VF *kv, int taps, const float *const *xi, int64_t j, int64_t r, float *out, int nv)
{
    const int c = taps / 2;
    VF acc[4];
    const float *mid = xi[c] + j;
    for (int q = 0; q < nv; q++)
        acc[q] = V_MUL(kv[c], load_n(mid + VW * q, r - VW * q));
    for (int t = 0; t < c; t++) {
        const float *lo = xi[t] + j, *hi = xi[taps - 1 - t] + j;
        for (int q = 0; q < nv; q++) {
            VF pair = V_ADD(load_n(lo + VW * q, r - VW * q), load_n(hi + VW * q, r - VW * q));
            acc[q] = V_FMADD(kv[t], pair, acc[q]);
        }
    }
    for (int q = 0; q < nv; q++)
        store_n(out + VW * q, acc[q], r - VW * q);
}

/* The taps are OpenCV's Gaussian: symmetric, odd length (fir_chunk relies on both). */
static void GF_FIR(const float *k, int taps, const float *const *x, int64_t off, int64_t n,
                   int64_t m, float *y, int64_t ys)
{
    VF kv[LUMEN_GF_FIR_MAX_TAPS];
    const float *xi[LUMEN_GF_FIR_MAX_TAPS];
    for (int t = 0; t < taps; t++)
        kv[t] = V_SET1(k[t]);
    for (int64_t i = 0; i < n; i++) {
        for (int t = 0; t < taps; t++)
            xi[t] = x[i + t] + off;
        if (i + PREFETCH < n) prefetch_row(x[i + taps - 1 + PREFETCH] + off, m);
        float *out = y + i * ys;
        int64_t j = 0;
        for (; j + 4 * VW <= m; j += 4 * VW)
            fir_chunk(kv, taps, xi, j, 4 * VW, out + j, 4);
        for (; j + 2 * VW <= m; j += 2 * VW)
            fir_chunk(kv, taps, xi, j, 2 * VW, out + j, 2);
        for (; j < m; j += VW)
            fir_chunk(kv, taps, xi, j, m - j, out + j, 1);
    }
}
