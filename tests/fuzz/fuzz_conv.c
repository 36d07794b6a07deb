/*
 * libFuzzer harness: conv2d and conv_transpose2d (and their _output_size and _alloc forms) with
 * parameters decoded from the input: shapes, stride, padding, dilation, groups, output
 * padding, bias, tensor layouts, dtypes, thread count and CPU kernel set. About one case in
 * four is hostile: one parameter or view from a list of invalid and extreme values (0, -1,
 * INT_MIN, INT_MAX, 2^20, groups that do not divide, a y of the wrong shape or dtype, NULL
 * data).
 *
 * A bug is a crash, an ASan/UBSan report, an error without a message, the fast path and the
 * scalar reference (the SIMD-off context) disagreeing on the status, or, where both succeed,
 * an element beyond tests/c/support/tolerances.h's conv bound (1e-6 of the sum of |x * w| and
 * |bias| over the element's taps, computed by the reference on |x|, |w|, |bias|).
 */
#include "fuzz_util.h"

#define MAX_OUT_ELEMS (1 << 15) /* larger outputs are not allocated: y gets a wrong shape */

static lumen_context *ref_ctx;
static lumen_context *fast_ctx[FZ_ISAS][2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("OMP_WAIT_POLICY", "passive", 0); /* see fuzz_ops.c */
    ref_ctx = fz_context(0, FZ_ISA_BEST, 1);
    return 0;
}

static lumen_context *fast_context(fz_isa isa, int threads)
{
    if (!fast_ctx[isa][threads - 1]) fast_ctx[isa][threads - 1] = fz_context(1, isa, threads);
    return fast_ctx[isa][threads - 1];
}

static int hostile_int(fz_in *in)
{
    static const int values[] = {0, -1, -7, INT_MIN, INT_MAX, 1 << 20, 65536, 3};
    return values[fz_pick(in, (int)(sizeof values / sizeof values[0]))];
}

typedef struct tensor {
    lumen_image v;
    void *buf;
} tensor;

/* A tensor of the given shape in layout l with values from rng in [-1, 1) (or their |.|). */
static tensor make(fz_in *in, fz_layout l, lumen_dtype t, int64_t n, int64_t c, int64_t h,
                   int64_t w)
{
    tensor r = {0};
    const int64_t count = n * c * h * w;
    r.buf = malloc((size_t)(count > 0 ? count : 1) * lumen_dtype_size(t));
    FUZZ_CHECK(r.buf, "out of memory");
    r.v = fz_view(r.buf, l, t, n, c, h, w);
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++)
                    fz_set(&r.v, b, ch, y, x,
                           t == LUMEN_F32 ? fz_rand(in) / 2147483648.0 - 1.0 : fz_rand(in) % 256);
    return r;
}

/* A copy of t holding |values| (contiguous NCHW). */
static tensor absolute(const tensor *t)
{
    tensor r = {0};
    const lumen_image *v = &t->v;
    r.buf = malloc((size_t)fz_count(v) * sizeof(float));
    FUZZ_CHECK(r.buf, "out of memory");
    r.v = fz_view(r.buf, FZ_NCHW, LUMEN_F32, v->n, v->c, v->h, v->w);
    for (int64_t b = 0; b < v->n; b++)
        for (int64_t c = 0; c < v->c; c++)
            for (int64_t y = 0; y < v->h; y++)
                for (int64_t x = 0; x < v->w; x++)
                    fz_set(&r.v, b, c, y, x, fabs(fz_get(v, b, c, y, x)));
    return r;
}

static lumen_status conv(lumen_context *ctx, int transposed, const lumen_image *x,
                         const lumen_image *w, const float *bias, const lumen_conv2d_params *p,
                         const lumen_image *y)
{
    return transposed ? lumen_conv_transpose2d(ctx, x, w, bias, p, y, NULL)
                      : lumen_conv2d(ctx, x, w, bias, p, y, NULL);
}

static void fail(const char *what, int transposed, const lumen_image *x, const lumen_image *w,
                 const lumen_conv2d_params *p, const char *detail)
{
    fprintf(stderr,
            "fuzz_conv: %s: %s x=(%lld,%lld,%lld,%lld) w=(%lld,%lld,%lld,%lld) stride(%d,%d) "
            "pad(%d,%d) dilation(%d,%d) groups %d output_pad(%d,%d): %s\n",
            what, transposed ? "conv_transpose2d" : "conv2d", (long long)x->n, (long long)x->c,
            (long long)x->h, (long long)x->w, (long long)w->n, (long long)w->c, (long long)w->h,
            (long long)w->w, p->stride_h, p->stride_w, p->pad_h, p->pad_w, p->dilation_h,
            p->dilation_w, p->groups, p->output_pad_h, p->output_pad_w, detail);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size, 0};
    for (size_t i = 0; i < size; i++)
        in.rng = in.rng * 1099511628211ull + data[i];

    const int transposed = fz_u8(&in) & 1;
    const int hostile = fz_pick(&in, 4) == 3; /* not 0: a short input reads zeros */
    const uint8_t ctxb = fz_u8(&in);
    lumen_context *ctx = fast_context((fz_isa)(ctxb % FZ_ISAS), 1 + (ctxb / 4) % 2);
    const uint8_t lay = fz_u8(&in);
    const fz_layout xl = (fz_layout)(lay % FZ_LAYOUTS), yl = (fz_layout)(lay / 4 % FZ_LAYOUTS);
    int64_t n = 1 + fz_pick(&in, 2), c = 1 + fz_pick(&in, 6), h = 1 + fz_pick(&in, 12);
    int64_t wd = 1 + fz_pick(&in, 12), k = 1 + fz_pick(&in, 6);
    int64_t r = 1 + fz_pick(&in, 5), s = 1 + fz_pick(&in, 5);
    lumen_conv2d_params p = lumen_conv2d_params_default();
    p.stride_h = 1 + fz_pick(&in, 3), p.stride_w = 1 + fz_pick(&in, 3);
    p.pad_h = fz_pick(&in, 4), p.pad_w = fz_pick(&in, 4);
    p.dilation_h = 1 + fz_pick(&in, 3), p.dilation_w = 1 + fz_pick(&in, 3);
    /* groups: usually a common divisor of c and k (c and k are then scaled to make one) */
    p.groups = 1 + fz_pick(&in, 3);
    if (!hostile) c = c * p.groups, k = k * p.groups;
    if (transposed) {
        const int mh = p.stride_h > p.dilation_h ? p.stride_h : p.dilation_h;
        const int mw = p.stride_w > p.dilation_w ? p.stride_w : p.dilation_w;
        p.output_pad_h = fz_pick(&in, mh), p.output_pad_w = fz_pick(&in, mw);
    }
    const int with_bias = fz_u8(&in) & 1;
    lumen_dtype xt = LUMEN_F32, yt = LUMEN_F32;
    int null_x = 0, y_off = 0;
    if (hostile) {
        int *fields[] = {&p.stride_h,   &p.stride_w, &p.pad_h,        &p.pad_w,       &p.dilation_h,
                         &p.dilation_w, &p.groups,   &p.output_pad_h, &p.output_pad_w};
        const int what = fz_pick(&in, 14);
        if (what < 9) *fields[what] = hostile_int(&in);
        if (what == 9) xt = (lumen_dtype)fz_pick(&in, 2); /* u8 or u16: conv is f32 only */
        if (what == 10) yt = (lumen_dtype)fz_pick(&in, 2);
        if (what == 11) null_x = 1;
        if (what == 12) y_off = 1 + fz_pick(&in, 2);        /* y one row or column too many */
        if (what == 13) r = hostile_int(&in) & 0xff, s = 0; /* empty or odd kernels */
    }

    tensor x = make(&in, xl, xt, n, c, h, wd);
    /* w = (K, C / groups, R, S) for conv2d, (C, K / groups, R, S) transposed */
    const int64_t g = p.groups > 0 ? p.groups : 1;
    tensor w = transposed ? make(&in, FZ_NCHW, LUMEN_F32, c, k / g, r, s)
                          : make(&in, FZ_NCHW, LUMEN_F32, k, c / g, r, s);
    float bias[64];
    for (int i = 0; i < 64; i++)
        bias[i] = fz_rand(&in) / 2147483648.0f - 1.0f;
    if (null_x) x.v.data = NULL;

    int64_t oh = 0, ow = 0;
    const lumen_status os = transposed
                                ? lumen_conv_transpose2d_output_size(&x.v, &w.v, &p, &oh, &ow)
                                : lumen_conv2d_output_size(&x.v, &w.v, &p, &oh, &ow);
    if (os != LUMEN_OK) FUZZ_CHECK(lumen_last_error()[0], "output_size failed without a message");
    if (os == LUMEN_OK)
        FUZZ_CHECK(oh >= 1 && ow >= 1, "output size %lld x %lld", (long long)oh, (long long)ow);
    const int small = os == LUMEN_OK && k <= 64 && n * k * oh * ow <= MAX_OUT_ELEMS;
    /* y of the output shape when it is small, else a 1 x 1 one (a wrong shape to refuse) */
    const int64_t yh = small ? oh + (y_off == 1) : 1, yw = small ? ow + (y_off == 2) : 1;
    tensor y = make(&in, yl, yt, n, k, yh, yw);
    const float *b = with_bias && k <= 64 ? bias : NULL;

    const lumen_status fs = conv(ctx, transposed, &x.v, &w.v, b, &p, &y.v);
    if (fs != LUMEN_OK) {
        FUZZ_CHECK(lumen_last_error()[0], "conv failed without a message");
        if (fs == LUMEN_ERR_INTERNAL)
            fail("internal error", transposed, &x.v, &w.v, &p, lumen_last_error());
    }
    /* the reference into a contiguous y of the same shape and dtype */
    tensor ry = make(&in, FZ_NCHW, yt, n, k, yh, yw);
    const lumen_status rs = conv(ref_ctx, transposed, &x.v, &w.v, b, &p, &ry.v);
    if (fs != rs) {
        char msg[512];
        snprintf(msg, sizeof msg, "fast %d, reference %d (%s)", (int)fs, (int)rs,
                 lumen_last_error());
        fail("the fast path and the reference disagree on the status", transposed, &x.v, &w.v, &p,
             msg);
    }
    if (fs == LUMEN_OK && !small)
        fail("accepted a y of the wrong shape", transposed, &x.v, &w.v, &p, "");

    if (fs == LUMEN_OK) {
        /* TERMS: the reference on |x|, |w|, |bias| is each element's sum of |terms| */
        tensor ax = absolute(&x), aw = absolute(&w);
        tensor terms = make(&in, FZ_NCHW, LUMEN_F32, n, k, yh, yw);
        float abias[64];
        for (int i = 0; i < 64; i++)
            abias[i] = fabsf(bias[i]);
        FUZZ_CHECK(conv(ref_ctx, transposed, &ax.v, &aw.v, b ? abias : NULL, &p, &terms.v) ==
                       LUMEN_OK,
                   "the reference on |x|, |w|: %s", lumen_last_error());
        const ts_tolerance *tol = ts_tolerance_of(TS_TOL_CONV, LUMEN_F32);
        for (int64_t bi = 0; bi < n; bi++)
            for (int64_t ki = 0; ki < k; ki++)
                for (int64_t yi = 0; yi < yh; yi++)
                    for (int64_t xi = 0; xi < yw; xi++) {
                        const double t = ts_tolerance_bound(tol, fz_get(&terms.v, bi, ki, yi, xi));
                        const double got = fz_get(&y.v, bi, ki, yi, xi);
                        const double want = fz_get(&ry.v, bi, ki, yi, xi);
                        if (fz_element_ok(got, want, t, LUMEN_F32)) continue;
                        char msg[512];
                        snprintf(msg, sizeof msg,
                                 "element (%lld, %lld, %lld, %lld): got %.9g, reference %.9g, "
                                 "tolerance %.3g; isa %s, threads %d, layouts %d->%d, bias %d",
                                 (long long)bi, (long long)ki, (long long)yi, (long long)xi, got,
                                 want, t, lumen_cpu_features(ctx), lumen_context_threads(ctx),
                                 (int)xl, (int)yl, b != NULL);
                        fail("result outside the tolerance", transposed, &x.v, &w.v, &p, msg);
                    }
        free(ax.buf), free(aw.buf), free(terms.buf);

        /* the allocating form gives the same answer */
        lumen_image ya;
        const lumen_status as =
            transposed ? lumen_conv_transpose2d_alloc(ctx, &x.v, &w.v, b, &p, &ya, NULL)
                       : lumen_conv2d_alloc(ctx, &x.v, &w.v, b, &p, &ya, NULL);
        FUZZ_CHECK(as == LUMEN_OK, "the _alloc form failed where the other ran: %s",
                   lumen_last_error());
        FUZZ_CHECK(ya.n == n && ya.c == k && ya.h == yh && ya.w == yw, "_alloc's shape");
        for (int64_t i = 0; i < fz_count(&ya); i++) {
            const double got = ((const float *)ya.data)[i];
            const double want = fz_get(&ry.v, 0, 0, 0, i);
            /* within twice the bound: both are within it of the reference's sum */
            FUZZ_CHECK(isfinite(got) && fabs(got - want) <= 1e-3 * (1 + fabs(want)),
                       "_alloc element %lld: %.9g vs %.9g", (long long)i, got, want);
        }
        lumen_image_free(&ya);
    }
    free(x.buf), free(w.buf), free(y.buf), free(ry.buf);
    return 0;
}
