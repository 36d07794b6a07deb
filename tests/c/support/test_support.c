/* Shared helpers of lumen's C tests; see test_support.h for the tolerance table. */
#include "test_support.h"

#include "internal.h"
#include "semantics.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_LEN 1024
#define EDGE_GUARD 16 /* guard elements before and after every buffer */

/* ---- engines ------------------------------------------------------------ */

const char *ts_engine_name(ts_engine e)
{
    static const char *names[] = {"reference", "generic", "avx2", "avx512"};
    return (unsigned)e < TS_ENGINE_COUNT ? names[e] : "?";
}

const char *ts_engine_isa(ts_engine e)
{
    static const char *isas[] = {"scalar", "generic", "avx2+fma", "avx512"};
    return (unsigned)e < TS_ENGINE_COUNT ? isas[e] : "?";
}

lumen_context *ts_context(ts_engine e, int threads)
{
    lumen_context *ctx = NULL;
    assert_int_equal(lumen_context_create(&ctx), LUMEN_OK);
    assert_int_equal(lumen_context_set_threads(ctx, threads), LUMEN_OK);
    assert_int_equal(lumen_context_set_simd(ctx, e != TS_REF), LUMEN_OK);
    if (e == TS_GENERIC) ctx->cpu_avx2 = false;
    if (e == TS_AVX2) ctx->cpu_avx512 = false;
    static bool told[TS_ENGINE_COUNT];
    if ((e == TS_AVX2 && !ctx->cpu_avx2) || (e == TS_AVX512 && !ctx->cpu_avx512)) {
        if (!told[e])
            print_message("note: this CPU lacks %s; the %s engine is not tested\n",
                          ts_engine_isa(e), ts_engine_name(e));
        told[e] = true;
        lumen_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- deterministic data ------------------------------------------------- */

ts_rng ts_rng_make(uint64_t seed)
{
    ts_rng r = {seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull};
    ts_rng_u32(&r);
    return r;
}

uint32_t ts_rng_u32(ts_rng *r)
{
    /* Knuth's MMIX LCG; the high half is the output. */
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 32);
}

double ts_rng_uniform(ts_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (ts_rng_u32(r) / 4294967296.0);
}

void ts_random_kernel(float *k, int n, uint64_t seed)
{
    ts_rng r = ts_rng_make(seed);
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        k[i] = (float)ts_rng_uniform(&r, -0.5, 1.0);
        sum += k[i];
    }
    if (fabs(sum) < 0.25) sum = sum < 0 ? -0.25 : 0.25;
    for (int i = 0; i < n; i++)
        k[i] = (float)(k[i] / sum);
}

/* ---- images ------------------------------------------------------------- */

const char *ts_layout_name(ts_layout l)
{
    static const char *names[] = {"planar", "interleaved", "strided",    "flipped",
                                  "batch",  "strided-hwc", "flipped-hwc"};
    return (unsigned)l < TS_LAYOUT_COUNT ? names[l] : "?";
}

void ts_layout_shape(ts_layout l, int64_t *n, int64_t *c)
{
    static const int64_t shapes[TS_LAYOUT_COUNT][2] = {{1, 1}, {1, 3}, {1, 2}, {1, 2},
                                                       {2, 2}, {2, 4}, {1, 2}};
    *n = shapes[l][0], *c = shapes[l][1];
}

/* Strides of layout l and the offset of element (0,0,0,0); returns the buffer's elements. */
static int64_t layout_strides(ts_layout l, lumen_image *v, int64_t *base)
{
    const int64_t n = v->n, c = v->c, h = v->h, w = v->w;
    int64_t s[4] = {c * h * w, h * w, w, 1}, elems = n * c * h * w;
    *base = 0;
    if (l == TS_INTERLEAVED) {
        s[0] = h * w * c, s[1] = 1, s[2] = w * c, s[3] = c;
    } else if (l == TS_STRIDED) {
        const int64_t W = w + 9, H = h + 5; /* 2 rows above, 5 columns left */
        s[1] = H * W + 3, s[0] = c * s[1] + 11, s[2] = W;
        *base = 2 * W + 5, elems = n * s[0];
    } else if (l == TS_FLIPPED) {
        s[1] = -h * w, s[2] = -w, s[3] = -1;
        *base = (c - 1) * h * w + (h - 1) * w + (w - 1);
    } else if (l == TS_BATCH) {
        s[0] = c * h * w + 13, elems = n * s[0];
    } else if (l == TS_STRIDED_HWC) {
        const int64_t row = (w + 7) * c + 2; /* 3 rows above, 4 pixels left */
        s[0] = (h + 5) * row + 9, s[1] = 1, s[2] = row, s[3] = c;
        *base = 3 * row + 4 * c, elems = n * s[0];
    } else if (l == TS_FLIPPED_HWC) {
        s[0] = h * w * c, s[1] = 1, s[2] = -w * c, s[3] = c;
        *base = (h - 1) * w * c;
    }
    v->stride_n = s[0], v->stride_c = s[1], v->stride_h = s[2], v->stride_w = s[3];
    return elems;
}

static int64_t view_offset(const lumen_image *v, int64_t b, int64_t c, int64_t y, int64_t x)
{
    return b * v->stride_n + c * v->stride_c + y * v->stride_h + x * v->stride_w;
}

void ts_image_alloc(ts_image *im, ts_layout l, lumen_dtype t, int64_t n, int64_t c, int64_t h,
                    int64_t w)
{
    lumen_image v = {NULL, t, n, c, h, w, 0, 0, 0, 0, 0};
    int64_t base;
    const int64_t elems = layout_strides(l, &v, &base) + 2 * EDGE_GUARD;
    base += EDGE_GUARD;
    im->es = lumen_dtype_size(t);
    im->elems = (size_t)elems;
    im->buf = malloc(im->elems * im->es);
    im->inside = calloc(im->elems, 1);
    assert_non_null(im->buf);
    assert_non_null(im->inside);
    memset(im->buf, TS_GUARD_BYTE, im->elems * im->es);
    v.data = im->buf + base * (int64_t)im->es;
    im->v = v;
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++) {
                    const int64_t off = base + view_offset(&v, b, ch, y, x);
                    assert_true(off >= 0 && off < elems && !im->inside[off]);
                    im->inside[off] = 1;
                }
}

void ts_image_free(ts_image *im)
{
    free(im->buf);
    free(im->inside);
    memset(im, 0, sizeof *im);
}

static char *elem_addr(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x)
{
    return (char *)im->data + view_offset(im, b, c, y, x) * (int64_t)lumen_dtype_size(im->dtype);
}

double ts_get(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x)
{
    const char *p = elem_addr(im, b, c, y, x);
    switch (im->dtype) {
    case LUMEN_U8: return *(const uint8_t *)p;
    case LUMEN_U16: return *(const uint16_t *)p;
    case LUMEN_F32: return *(const float *)p;
    case LUMEN_F16:
    case LUMEN_BF16: return lumen_load_px(p, im->dtype);
    }
    return NAN;
}

void ts_set(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x, double v)
{
    char *p = elem_addr(im, b, c, y, x);
    switch (im->dtype) {
    case LUMEN_U8: *(uint8_t *)p = (uint8_t)v; break;
    case LUMEN_U16: *(uint16_t *)p = (uint16_t)v; break;
    case LUMEN_F32: *(float *)p = (float)v; break;
    case LUMEN_F16:
    case LUMEN_BF16: lumen_store_px(p, im->dtype, (float)v); break; /* rounded to nearest even */
    }
}

#define TS_FOR_EACH(im, b, c, y, x)                                                                \
    for (int64_t b = 0; b < (im)->n; b++)                                                          \
        for (int64_t c = 0; c < (im)->c; c++)                                                      \
            for (int64_t y = 0; y < (im)->h; y++)                                                  \
                for (int64_t x = 0; x < (im)->w; x++)

static double random_value(ts_rng *r, lumen_dtype t)
{
    switch (t) {
    case LUMEN_U8: return ts_rng_u32(r) >> 24;
    case LUMEN_U16: return ts_rng_u32(r) >> 16;
    case LUMEN_F32:
    case LUMEN_F16: /* rounded by ts_set: f16 keeps 11 bits, bf16 8 */
    case LUMEN_BF16: return ts_rng_uniform(r, -64.0, 192.0);
    }
    return 0.0;
}

void ts_image_fill_random(ts_image *im, uint64_t seed)
{
    ts_rng r = ts_rng_make(seed);
    TS_FOR_EACH(&im->v, b, c, y, x) ts_set(&im->v, b, c, y, x, random_value(&r, im->v.dtype));
}

void ts_image_fill_bytes(ts_image *im, unsigned char byte)
{
    TS_FOR_EACH(&im->v, b, c, y, x) memset(elem_addr(&im->v, b, c, y, x), byte, im->es);
}

bool ts_guards_intact(const ts_image *im, char *msg, size_t len)
{
    for (size_t i = 0; i < im->elems; i++) {
        if (im->inside[i]) continue;
        for (size_t k = 0; k < im->es; k++)
            if (im->buf[i * im->es + k] != TS_GUARD_BYTE) {
                snprintf(msg, len, "buffer element %zu (outside the view) was written", i);
                return false;
            }
    }
    return true;
}

double ts_absmax(const lumen_image *im)
{
    double m = 0.0;
    TS_FOR_EACH(im, b, c, y, x)
    {
        const double v = fabs(ts_get(im, b, c, y, x));
        if (isfinite(v) && v > m) m = v;
    }
    return m;
}

/* ---- tolerance and comparison ------------------------------------------- */

double ts_f32_tol(double ksum, double range)
{
    return TS_F32_REL * ksum * range + TS_F32_ABS;
}

double ts_quantize(double v, lumen_dtype t)
{
    if (t == LUMEN_F32) return v;
    /* halves: to f32, then to nearest even (both monotonic, so Q is) */
    if (t == LUMEN_F16) return lumen_f16_to_f32(lumen_f32_to_f16((float)v));
    if (t == LUMEN_BF16) return lumen_bf16_to_f32(lumen_f32_to_bf16((float)v));
    const double hi = t == LUMEN_U8 ? 255.0 : 65535.0;
    if (!(v > 0.0)) return 0.0;
    return v >= hi ? hi : nearbyint(v);
}

static bool f32_ok(double got, double want, double tol)
{
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= tol;
}

/* A rounded (integer or half) result: in [Q(r - tol), Q(r + tol)]. NaN: 0 for integers, NaN
 * for halves. */
static bool int_ok(double got, double r, lumen_dtype t, double tol)
{
    if (isnan(r)) return lumen_dtype_is_float(t) ? isnan(got) : got == 0.0;
    return got >= ts_quantize(r - tol, t) && got <= ts_quantize(r + tol, t);
}

int64_t ts_compare(const lumen_image *got, const lumen_image *want, const lumen_image *exact,
                   double tol, char *msg, size_t len)
{
    int64_t bad = 0;
    const bool integer = got->dtype != LUMEN_F32;
    assert_true(!integer || exact != NULL);
    TS_FOR_EACH(got, b, c, y, x)
    {
        const double g = ts_get(got, b, c, y, x), w = ts_get(want, b, c, y, x);
        const double r = integer ? ts_get(exact, b, c, y, x) : w;
        if (integer ? int_ok(g, r, got->dtype, tol) : f32_ok(g, w, tol)) continue;
        if (bad++ == 0)
            snprintf(msg, len,
                     "first bad element (b=%lld, c=%lld, y=%lld, x=%lld): got %.9g, want %.9g "
                     "(unrounded reference %.9g), tolerance %.3g",
                     (long long)b, (long long)c, (long long)y, (long long)x, g, w, r, tol);
    }
    if (bad) {
        const size_t used = strlen(msg);
        snprintf(msg + used, len - used, "; %lld of %lld elements bad", (long long)bad,
                 (long long)(got->n * got->c * got->h * got->w));
    }
    return bad;
}

int64_t ts_compare_exact(const lumen_image *got, const lumen_image *want, char *msg, size_t len)
{
    int64_t bad = 0;
    TS_FOR_EACH(got, b, c, y, x)
    {
        const double g = ts_get(got, b, c, y, x), w = ts_get(want, b, c, y, x);
        if (g == w || (isnan(g) && isnan(w))) continue;
        if (bad++ == 0)
            snprintf(msg, len,
                     "first bad element (b=%lld, c=%lld, y=%lld, x=%lld): got %.9g, want %.9g",
                     (long long)b, (long long)c, (long long)y, (long long)x, g, w);
    }
    return bad;
}

void ts_assert_equal_images(const lumen_image *got, const lumen_image *want, const char *label)
{
    char msg[MSG_LEN];
    if (ts_compare_exact(got, want, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
}

/* ---- ops ---------------------------------------------------------------- */

static ts_op op_base(ts_op_kind kind, int kw, int kh)
{
    ts_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind, op.kw = kw, op.kh = kh;
    op.opt = lumen_filter_options_default();
    return op;
}

ts_op ts_op_filter2d(const float *k, int kw, int kh)
{
    ts_op op = op_base(TS_OP_FILTER2D, kw, kh);
    op.kernel = k;
    return op;
}

ts_op ts_op_sep(const float *kx, int kw, const float *ky, int kh)
{
    ts_op op = op_base(TS_OP_SEP, kw, kh);
    op.kx = kx, op.ky = ky;
    return op;
}

ts_op ts_op_gaussian(int ksize_x, int ksize_y, double sigma_x, double sigma_y)
{
    ts_op op = op_base(TS_OP_GAUSSIAN, ksize_x, ksize_y);
    op.sigma_x = sigma_x, op.sigma_y = sigma_y;
    return op;
}

ts_op ts_op_box(int kw, int kh, int normalize)
{
    ts_op op = op_base(TS_OP_BOX, kw, kh);
    op.normalize = normalize;
    return op;
}

ts_op ts_with_border(ts_op op, lumen_border b, float v)
{
    op.opt.border = b;
    op.opt.border_value = v;
    return op;
}

lumen_status ts_op_run(lumen_context *ctx, const ts_op *op, const lumen_image *src,
                       const lumen_image *dst, lumen_run_info *info)
{
    const lumen_filter_options *o = &op->opt;
    switch (op->kind) {
    case TS_OP_FILTER2D: return lumen_filter2d(ctx, src, dst, op->kernel, op->kw, op->kh, o, info);
    case TS_OP_SEP:
        return lumen_sep_filter2d(ctx, src, dst, op->kx, op->kw, op->ky, op->kh, o, info);
    case TS_OP_GAUSSIAN:
        if (o->method != LUMEN_METHOD_AUTO) {
            lumen_gaussian_options g = lumen_gaussian_options_default();
            g.ksize_x = op->kw, g.ksize_y = op->kh, g.sigma_x = op->sigma_x;
            g.sigma_y = op->sigma_y, g.border = o->border, g.border_value = o->border_value;
            g.method = o->method;
            return lumen_gaussian_blur_ex(ctx, src, dst, &g, info);
        }
        return lumen_gaussian_blur(ctx, src, dst, op->kw, op->kh, op->sigma_x, op->sigma_y,
                                   o->border, o->border_value, info);
    case TS_OP_BOX:
        return lumen_box_blur(ctx, src, dst, op->kw, op->kh, op->normalize, o->border,
                              o->border_value, info);
    }
    return LUMEN_ERR_INTERNAL;
}

static double abs_sum(const float *k, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += fabs(k[i]);
    return s;
}

double ts_op_ksum(const ts_op *op, lumen_dtype t)
{
    (void)t;
    switch (op->kind) {
    case TS_OP_FILTER2D: return abs_sum(op->kernel, op->kw * op->kh);
    case TS_OP_SEP: return abs_sum(op->kx, op->kw) * abs_sum(op->ky, op->kh);
    case TS_OP_GAUSSIAN: return 1.0;
    case TS_OP_BOX: return op->normalize ? 1.0 : (double)op->kw * op->kh;
    }
    return 0.0;
}

const char *ts_op_describe(const ts_op *op, char *buf, size_t len)
{
    static const char *kinds[] = {"filter2d", "sep_filter2d", "gaussian_blur", "box_blur"};
    const lumen_filter_options *o = &op->opt;
    int n = snprintf(buf, len, "%s %dx%d", kinds[op->kind], op->kw, op->kh);
    if (op->kind == TS_OP_FILTER2D || op->kind == TS_OP_SEP)
        n += snprintf(buf + n, len - (size_t)n, " anchor(%d,%d)%s method=%s", o->anchor_x,
                      o->anchor_y, o->convolve ? " convolve" : "", lumen_method_name(o->method));
    if (op->kind == TS_OP_GAUSSIAN)
        n += snprintf(buf + n, len - (size_t)n, " sigma(%g,%g) method=%s", op->sigma_x, op->sigma_y,
                      lumen_method_name(o->method));
    if (op->kind == TS_OP_BOX)
        n += snprintf(buf + n, len - (size_t)n, " normalize=%d", op->normalize);
    snprintf(buf + n, len - (size_t)n, " border=%s value=%g", lumen_border_name(o->border),
             (double)o->border_value);
    return buf;
}

/* ---- the oracle --------------------------------------------------------- */

int64_t ts_border_interp(int64_t p, int64_t len, lumen_border b)
{
    if (p >= 0 && p < len) return p;
    switch (b) {
    case LUMEN_BORDER_CONSTANT: return -1;
    case LUMEN_BORDER_REPLICATE: return p < 0 ? 0 : len - 1;
    case LUMEN_BORDER_REFLECT:
    case LUMEN_BORDER_REFLECT101: {
        const int64_t delta = b == LUMEN_BORDER_REFLECT101;
        if (len == 1) return 0;
        do {
            p = p < 0 ? -p - 1 + delta : len - 1 - (p - len) - delta;
        } while (p < 0 || p >= len);
        return p;
    }
    case LUMEN_BORDER_WRAP:
        while (p < 0)
            p += len;
        while (p >= len)
            p -= len;
        return p;
    }
    return -1;
}

/* The dense correlation kernel (kh x kw, row-major) with its anchor, as doubles. */
typedef struct dense {
    double *k;
    int kw, kh, ax, ay;
} dense;

static void gaussian_axes(const ts_op *op, lumen_dtype t, int *kx, int *ky, double *sx, double *sy)
{
    *sx = op->sigma_x, *sy = op->sigma_y > 0 ? op->sigma_y : op->sigma_x;
    *kx = op->kw > 0 ? op->kw : lumen_gaussian_ksize(*sx, t);
    *ky = op->kh > 0 ? op->kh : lumen_gaussian_ksize(*sy, t);
}

static void outer(dense *d, const float *kx, const float *ky, double scale)
{
    for (int i = 0; i < d->kh; i++)
        for (int j = 0; j < d->kw; j++)
            d->k[i * d->kw + j] = (double)ky[i] * kx[j] * scale;
}

static void dense_separable(const ts_op *op, lumen_dtype t, dense *d)
{
    float *fx, *fy;
    if (op->kind == TS_OP_SEP) {
        outer(d, op->kx, op->ky, 1.0);
        return;
    }
    fx = malloc(sizeof(float) * (size_t)(d->kw + d->kh));
    assert_non_null(fx);
    fy = fx + d->kw;
    if (op->kind == TS_OP_BOX) {
        for (int i = 0; i < d->kw + d->kh; i++)
            fx[i] = 1.0f;
        outer(d, fx, fy, op->normalize ? 1.0 / ((double)d->kw * d->kh) : 1.0);
    } else {
        int kx, ky;
        double sx, sy;
        gaussian_axes(op, t, &kx, &ky, &sx, &sy);
        assert_int_equal(lumen_gaussian_kernel(kx, sx, fx), LUMEN_OK);
        assert_int_equal(lumen_gaussian_kernel(ky, sy, fy), LUMEN_OK);
        outer(d, fx, fy, 1.0);
    }
    free(fx);
}

static dense make_dense(const ts_op *op, lumen_dtype t)
{
    dense d = {NULL, op->kw, op->kh, 0, 0};
    if (op->kind == TS_OP_GAUSSIAN) {
        double sx, sy;
        gaussian_axes(op, t, &d.kw, &d.kh, &sx, &sy);
    }
    d.k = malloc(sizeof(double) * (size_t)d.kw * (size_t)d.kh);
    assert_non_null(d.k);
    if (op->kind == TS_OP_FILTER2D)
        for (int i = 0; i < d.kw * d.kh; i++)
            d.k[i] = op->kernel[i];
    else
        dense_separable(op, t, &d);
    const bool anchored = op->kind == TS_OP_FILTER2D || op->kind == TS_OP_SEP;
    d.ax = anchored && op->opt.anchor_x >= 0 ? op->opt.anchor_x : d.kw / 2;
    d.ay = anchored && op->opt.anchor_y >= 0 ? op->opt.anchor_y : d.kh / 2;
    if (anchored && op->opt.convolve) {
        const int n = d.kw * d.kh;
        for (int i = 0; i < n / 2; i++) {
            const double tmp = d.k[i];
            d.k[i] = d.k[n - 1 - i], d.k[n - 1 - i] = tmp;
        }
        d.ax = d.kw - 1 - d.ax, d.ay = d.kh - 1 - d.ay;
    }
    return d;
}

static double oracle_at(const dense *d, const ts_op *op, const lumen_image *s, int64_t b, int64_t c,
                        int64_t y, int64_t x)
{
    double acc = 0.0;
    for (int i = 0; i < d->kh; i++) {
        const int64_t yy = ts_border_interp(y + i - d->ay, s->h, op->opt.border);
        for (int j = 0; j < d->kw; j++) {
            const int64_t xx = ts_border_interp(x + j - d->ax, s->w, op->opt.border);
            const double v = yy < 0 || xx < 0 ? op->opt.border_value : ts_get(s, b, c, yy, xx);
            acc += d->k[i * d->kw + j] * v;
        }
    }
    return acc;
}

double *ts_oracle(const ts_op *op, const lumen_image *src)
{
    dense d = make_dense(op, src->dtype);
    double *out = malloc(sizeof(double) * (size_t)(src->n * src->c * src->h * src->w));
    assert_non_null(out);
    int64_t i = 0;
    TS_FOR_EACH(src, b, c, y, x) out[i++] = oracle_at(&d, op, src, b, c, y, x);
    free(d.k);
    return out;
}

/* ---- ts_check ----------------------------------------------------------- */

ts_case ts_case_make(ts_layout l, lumen_dtype src, lumen_dtype dst, int64_t h, int64_t w,
                     int threads, uint64_t seed)
{
    ts_case cs;
    memset(&cs, 0, sizeof cs);
    cs.src_layout = cs.dst_layout = l;
    cs.src_dtype = src, cs.dst_dtype = dst;
    ts_layout_shape(l, &cs.n, &cs.c);
    cs.h = h, cs.w = w, cs.threads = threads, cs.seed = seed;
    return cs;
}

static const char *describe(const ts_op *op, const ts_case *cs, ts_engine e, char *buf, size_t len)
{
    char o[256];
    snprintf(buf, len, "[%s | %s->%s %s->%s n=%lld c=%lld h=%lld w=%lld threads=%d seed=%llu | %s]",
             ts_op_describe(op, o, sizeof o), lumen_dtype_name(cs->src_dtype),
             lumen_dtype_name(cs->dst_dtype), ts_layout_name(cs->src_layout),
             ts_layout_name(cs->dst_layout), (long long)cs->n, (long long)cs->c, (long long)cs->h,
             (long long)cs->w, cs->threads, (unsigned long long)cs->seed, ts_engine_name(e));
    return buf;
}

typedef struct check_state {
    const ts_op *op;
    const ts_case *cs;
    ts_image src, ref, exact; /* exact: the reference into f32 (integer dsts only) */
    double tol;
    unsigned char *src_copy;
} check_state;

/* Runs op on engine e into dst (prefilled with `fill` bytes) and checks status, info, guards. */
static void run_into(check_state *st, ts_engine e, lumen_context *ctx, ts_image *dst,
                     unsigned char fill)
{
    char label[512], msg[MSG_LEN];
    lumen_run_info info;
    memset(&info, 0, sizeof info);
    ts_image_fill_bytes(dst, fill);
    describe(st->op, st->cs, e, label, sizeof label);
    const lumen_status s = ts_op_run(ctx, st->op, &st->src.v, &dst->v, &info);
    if (s != LUMEN_OK) fail_msg("%s: status %d (%s)", label, (int)s, lumen_last_error());
    if (strcmp(info.isa, ts_engine_isa(e)) || strcmp(info.device, "cpu") ||
        info.threads != st->cs->threads ||
        (st->cs->want_method != LUMEN_METHOD_AUTO && info.method != st->cs->want_method))
        fail_msg("%s: run_info isa=%s device=%s threads=%d method=%s", label, info.isa, info.device,
                 info.threads, lumen_method_name(info.method));
    if (!ts_guards_intact(dst, msg, sizeof msg)) fail_msg("%s: %s", label, msg);
}

static void check_oracle(check_state *st)
{
    char label[512], msg[MSG_LEN];
    const lumen_image *r = st->cs->dst_dtype == LUMEN_F32 ? &st->ref.v : &st->exact.v;
    double *want = ts_oracle(st->op, &st->src.v);
    int64_t i = 0, bad = 0;
    TS_FOR_EACH(r, b, c, y, x)
    {
        const double g = ts_get(r, b, c, y, x), w = want[i++];
        if (f32_ok(g, (float)w, st->tol)) continue;
        if (bad++ == 0)
            snprintf(msg, sizeof msg,
                     "reference vs oracle: first bad element (b=%lld, c=%lld, "
                     "y=%lld, x=%lld): reference %.9g, oracle %.9g, tolerance %.3g",
                     (long long)b, (long long)c, (long long)y, (long long)x, g, w, st->tol);
    }
    free(want);
    if (bad)
        fail_msg("%s: %s (%lld bad)", describe(st->op, st->cs, TS_REF, label, sizeof label), msg,
                 (long long)bad);
}

static void run_reference(check_state *st)
{
    char label[512], msg[MSG_LEN];
    const ts_case *cs = st->cs;
    lumen_context *ctx = ts_context(TS_REF, cs->threads);
    ts_image_alloc(&st->ref, cs->dst_layout, cs->dst_dtype, cs->n, cs->c, cs->h, cs->w);
    run_into(st, TS_REF, ctx, &st->ref, 0x5A);
    if (cs->dst_dtype != LUMEN_F32) {
        ts_image_alloc(&st->exact, TS_PLANAR, LUMEN_F32, cs->n, cs->c, cs->h, cs->w);
        run_into(st, TS_REF, ctx, &st->exact, 0x5A);
        /* The reference's integer output is Q(its unrounded value), exactly. */
        if (ts_compare(&st->ref.v, &st->ref.v, &st->exact.v, 0.0, msg, sizeof msg))
            fail_msg("%s: reference rounding: %s",
                     describe(st->op, cs, TS_REF, label, sizeof label), msg);
    }
    lumen_context_destroy(ctx);
    if (!cs->no_oracle) check_oracle(st);
}

static void run_fast(check_state *st, ts_engine e)
{
    char label[512], msg[MSG_LEN];
    lumen_context *ctx = ts_context(e, st->cs->threads);
    if (!ctx) return;
    ts_image fast;
    ts_image_alloc(&fast, st->cs->dst_layout, st->cs->dst_dtype, st->cs->n, st->cs->c, st->cs->h,
                   st->cs->w);
    run_into(st, e, ctx, &fast, 0x3C);
    const lumen_image *exact = st->cs->dst_dtype == LUMEN_F32 ? NULL : &st->exact.v;
    if (ts_compare(&fast.v, &st->ref.v, exact, st->tol, msg, sizeof msg))
        fail_msg("%s: fast vs reference: %s", describe(st->op, st->cs, e, label, sizeof label),
                 msg);
    ts_image_free(&fast);
    lumen_context_destroy(ctx);
}

void ts_check(const ts_op *op, const ts_case *cs)
{
    check_state st;
    memset(&st, 0, sizeof st);
    st.op = op, st.cs = cs;
    ts_image_alloc(&st.src, cs->src_layout, cs->src_dtype, cs->n, cs->c, cs->h, cs->w);
    if (cs->fill)
        cs->fill(&st.src, cs->seed);
    else
        ts_image_fill_random(&st.src, cs->seed);
    double range = ts_absmax(&st.src.v);
    if (op->opt.border == LUMEN_BORDER_CONSTANT && fabs(op->opt.border_value) > range)
        range = fabs(op->opt.border_value);
    st.tol = ts_f32_tol(ts_op_ksum(op, cs->src_dtype), range);
    const size_t bytes = st.src.elems * st.src.es;
    st.src_copy = malloc(bytes);
    assert_non_null(st.src_copy);
    memcpy(st.src_copy, st.src.buf, bytes);
    run_reference(&st);
    run_fast(&st, TS_GENERIC);
    run_fast(&st, TS_AVX2);
    run_fast(&st, TS_AVX512); /* its own kernels (wider blocks, fixed-size instances) */
    if (memcmp(st.src_copy, st.src.buf, bytes)) fail_msg("the op wrote into its source buffer");
    free(st.src_copy);
    ts_image_free(&st.src);
    ts_image_free(&st.ref);
    if (st.exact.buf) ts_image_free(&st.exact);
}

/* ---- hand-computed expectations ----------------------------------------- */

static void expect_on(const ts_op *op, ts_engine e, int threads, const ts_image *src,
                      const double *want, double tol, const char *what)
{
    lumen_context *ctx = ts_context(e, threads);
    if (!ctx) return;
    const lumen_image *s = &src->v;
    ts_image dst;
    ts_image_alloc(&dst, TS_PLANAR, LUMEN_F32, 1, 1, s->h, s->w);
    ts_image_fill_bytes(&dst, 0x5A);
    const lumen_status st = ts_op_run(ctx, op, s, &dst.v, NULL);
    if (st != LUMEN_OK)
        fail_msg("%s [%s]: status %d (%s)", what, ts_engine_name(e), (int)st, lumen_last_error());
    for (int64_t y = 0; y < s->h; y++)
        for (int64_t x = 0; x < s->w; x++) {
            const double g = ts_get(&dst.v, 0, 0, y, x), w = want[y * s->w + x];
            if (!f32_ok(g, w, tol))
                fail_msg("%s [%s, %s, threads=%d]: at (y=%lld, x=%lld) got %.9g, want %.9g", what,
                         lumen_dtype_name(s->dtype), ts_engine_name(e), threads, (long long)y,
                         (long long)x, g, w);
        }
    ts_image_free(&dst);
    lumen_context_destroy(ctx);
}

void ts_expect(const ts_op *op, lumen_dtype t, int64_t h, int64_t w, const double *src,
               const double *want, double tol, const char *what)
{
    ts_image s;
    ts_image_alloc(&s, TS_PLANAR, t, 1, 1, h, w);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            ts_set(&s.v, 0, 0, y, x, src[y * w + x]);
    for (int e = 0; e < TS_ENGINE_COUNT; e++)
        for (int threads = 1; threads <= 2; threads++)
            expect_on(op, (ts_engine)e, threads, &s, want, tol, what);
    ts_image_free(&s);
}

bool ts_names(const char *msg, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = strstr(msg, word); p; p = strstr(p + 1, word)) {
        const bool left = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        const bool right = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (left && right) return true;
    }
    return false;
}
