/*
 * LUMEN_OP_GAUSSIAN_FAST (docs/gaussian-fast.md, docs/vulkan-gaussian.md): the CPU's design
 * (core/gaussian_fast_coeffs.h: per axis, OpenCV's exact kernel below sigma 2, else Deriche's
 * 4th-order recursion as two complex one-pole sections in f32, with exact border starts) in two
 * passes of one submission, u8/u16/f32 in and out, any strides, every plane of a batch at once:
 *   1. rows: src -> T, an f32 scratch of n x c x h x w (planar);
 *   2. columns: T -> dst, one invocation per column, so neighbouring invocations read and write
 *      neighbouring pixels.
 * Both passes are shaders/gauss_fast_line.comp, one invocation per line. A recursive axis keeps
 * its anticausal part in the pass's output while the causal part runs, when that output is f32
 * (T, or an f32 dst), else in a second scratch plane U.
 */
#include "vk_internal.h"

#include "gaussian_fast_coeffs.h"

#include <limits.h>

static const uint32_t gauss_fast_line_spv[] = {
#include <gauss_fast_line.spv.inc>
};

#define GROUP 64 /* local_size_x of shaders/gauss_fast_line.comp */
/* Coefficient floats of a recursive axis: lumen_gf_iir's six complex pairs, in its order
 * (pr[2], pi[2], ar[2], ai[2] ...), as the shader's cf() reads them. */
#define IIR_COEFS 24

/* The shader's push constants, in their order (std430: 4-byte scalars, no padding). */
typedef struct vk_gf_push {
    int32_t c, h, w;
    vk_pview s, d, a;
    int32_t border;
    float border_value;
    int32_t pad, periodic, coef;
} vk_gf_push;
_Static_assert(sizeof(vk_gf_push) == 92, "vk_gf_push: gauss_fast_line.comp's push");

/* One axis: its design and where its coefficients (IIR_COEFS floats, or taps) start. */
typedef struct gf_axis {
    lumen_gf_axis_design d;
    int32_t coef;
} gf_axis;

/* The sigma the design accepts (the CPU refuses others with LUMEN_ERR_INVALID_ARGUMENT). */
static bool sigma_ok(double s)
{
    return s > 0 && isfinite(s);
}

/* The scratch planes (T, and U for a non-f32 dst) must be indexable with 32-bit ints and fit
 * one binding. */
static bool plane_fits(const vk_state *st, const lumen_image *s)
{
    const uint64_t bytes = (uint64_t)s->n * (uint64_t)s->c * (uint64_t)s->h * (uint64_t)s->w * 4;
    return bytes <= (uint64_t)INT32_MAX && bytes <= st->max_range;
}

/* Whether the op runs as one submission: its views and planes in one binding each, its grids
 * in the limits. */
static bool gauss_fits(lumen_context *ctx, const lumen_op *op)
{
    const lumen_gauss_job *j = op->job;
    const lumen_image *s = j->src;
    const vk_state *st = vk_host->state(ctx);
    const uint64_t planes = (uint64_t)s->n * (uint64_t)s->c;
    return vk_view_fits_range(ctx, s) && vk_view_fits_range(ctx, j->dst) && plane_fits(st, s) &&
           vk_grid_fits(st, vk_groups(s->h, GROUP), 1, planes) &&
           vk_grid_fits(st, vk_groups(s->w, GROUP), 1, planes);
}

/* Images larger than a binding run image by image, or plane by plane (vk_pieces.c): each
 * line of the recursion stays whole. */
static bool gauss_supports(lumen_context *ctx, const lumen_op *op)
{
    const lumen_gauss_job *j = op->job;
    /* a bad sigma goes to the CPU, which reports it */
    return sigma_ok(j->sigma_x) && sigma_ok(j->sigma_y) &&
           vk_op_fits_in_planes(ctx, op, gauss_fits);
}

/* Flattens a recursive axis's coefficients in lumen_gf_iir's order (after `periodic`). */
static void iir_coefs(const lumen_gf_iir *c, float *out)
{
    const float *parts[12] = {c->pr, c->pi, c->ar, c->ai, c->br, c->bi,
                              c->gr, c->gi, c->hr, c->hi, c->qr, c->qi};
    for (int i = 0; i < 12; i++)
        out[2 * i] = parts[i][0], out[2 * i + 1] = parts[i][1];
}

/* Designs an axis and appends its coefficients to coef (at *used). */
static void plan_axis(gf_axis *a, double sigma, int64_t n, lumen_border b, float *coef, int *used)
{
    lumen_gf_design_axis(sigma, n, b, &a->d);
    a->coef = *used;
    if (a->d.fir) {
        vk_host->gaussian_kernel(a->d.taps, sigma, coef + *used);
        *used += a->d.taps;
    } else {
        iir_coefs(&a->d.iir, coef + *used);
        *used += IIR_COEFS;
    }
}

/* The planar f32 view of a scratch plane of the image's shape. */
static vk_pview planar(const lumen_image *s)
{
    return (vk_pview){.off = 0,
                      .sn = (int32_t)(s->c * s->h * s->w),
                      .sc = (int32_t)(s->h * s->w),
                      .sh = (int32_t)s->w,
                      .sw = 1};
}

/* One pass along `axis` (0: rows, 1: columns) from (in, iv) to (out, ov). A recursive axis
 * keeps its anticausal part in out when that is f32, else in aux (planar f32); an exact axis
 * needs no aux (AUX_IN_OUT = 1 only keeps its pipelines few). */
static lumen_status record_pass(vk_state *st, const lumen_gauss_job *j, const gf_axis *a, int axis,
                                VkBuffer in, vk_pview iv, lumen_dtype in_dt, VkBuffer out,
                                vk_pview ov, lumen_dtype out_dt, VkBuffer aux, VkBuffer coef)
{
    const lumen_image *s = j->src;
    const uint32_t planes = (uint32_t)(s->n * s->c);
    const bool aux_in_out = out_dt == LUMEN_F32 || a->d.fir;
    const vk_gf_push pc = {.c = (int32_t)s->c,
                           .h = (int32_t)s->h,
                           .w = (int32_t)s->w,
                           .s = iv,
                           .d = ov,
                           .a = planar(s),
                           .border = (int32_t)j->border,
                           .border_value = j->border_value,
                           .pad = (int32_t)a->d.pad,
                           .periodic = !a->d.fir && a->d.iir.periodic,
                           .coef = a->coef};
    const vk_kernel k = VK_KERNEL(gauss_fast_line_spv, axis, in_dt, out_dt, aux_in_out, a->d.fir);
    const VkBuffer bufs[] = {in, out, aux_in_out ? out : aux, coef};
    return vk_rec_dispatch(st, &k, bufs, 4, &pc, sizeof pc,
                           vk_groups(axis == 0 ? s->h : s->w, GROUP), 1, planes);
}

static lumen_status gauss_piece(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    const lumen_gauss_job *j = op->job;
    vk_state *st = vk_host->state(ctx);
    const lumen_image *s = j->src, *d = j->dst;
    if (!sigma_ok(j->sigma_x) || !sigma_ok(j->sigma_y))
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED, "vulkan: gaussian fast: bad sigma");
    gf_axis ax, ay;
    float coef[2 * IIR_COEFS];
    int used = 0;
    plan_axis(&ax, j->sigma_x, s->w, j->border, coef, &used);
    plan_axis(&ay, j->sigma_y, s->h, j->border, coef, &used);
    /* pads (at most two periods of the rule, or 5 sigma below it) and lines in 32-bit ints */
    if (s->w + 2 * ax.d.pad > INT32_MAX || s->h + 2 * ay.d.pad > INT32_MAX)
        return vk_host->set_error(LUMEN_ERR_UNSUPPORTED, "vulkan: gaussian fast: image too long");
    const size_t plane = (size_t)(s->n * s->c * s->h * s->w) * sizeof(float);
    vk_view src, dst;
    vk_buf *t, *u = NULL;
    VkBuffer cbuf;
    lumen_status status;
    if ((status = vk_view_bind(ctx, st, s, false, &src)) ||
        (status = vk_view_bind(ctx, st, d, true, &dst)) ||
        (status = vk_scratch(ctx, st, plane, VK_MEM_DEVICE, &t)) ||
        (d->dtype != LUMEN_F32 && !ay.d.fir &&
         (status = vk_scratch(ctx, st, plane, VK_MEM_DEVICE, &u))) ||
        (status = vk_upload_floats(ctx, st, coef, (size_t)used, &cbuf)))
        return status;
    const vk_pview tv = planar(s);
    const VkBuffer ubuf = u ? u->buf : t->buf; /* unused unless allocated */
    if ((status = vk_rec_begin(st)) ||
        (status = record_pass(st, j, &ax, 0, src.buf, src.pv, s->dtype, t->buf, tv, LUMEN_F32,
                              t->buf, cbuf)) ||
        (status = record_pass(st, j, &ay, 1, t->buf, tv, LUMEN_F32, dst.buf, dst.pv, d->dtype, ubuf,
                              cbuf)) ||
        (status = vk_rec_submit(st)))
        return status;
    vk_view_finish(&dst);
    vk_ran(info, LUMEN_METHOD_RECURSIVE, "vulkan:gauss-deriche");
    return LUMEN_OK;
}

static lumen_status gauss_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    return vk_op_in_planes(ctx, op, gauss_fits, gauss_piece, info);
}

const vk_op_impl vk_op_gauss_fast = {.supports = gauss_supports, .run = gauss_run, .pieces = true};
