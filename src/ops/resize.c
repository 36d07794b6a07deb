/* resize: cv2.resize, PIL.Image.resize and torch.nn.functional.interpolate, by rule
 * (docs/resize.md). The op checks the call, builds both axes' coefficient tables once
 * (resize_taps.c) and hands them to the backend in one job. */
#include "resize_taps.h"

#include <math.h>
#include <stdlib.h>

lumen_resize_options lumen_resize_options_default(void)
{
    return (lumen_resize_options){.rule = LUMEN_RESIZE_OPENCV,
                                  .interpolation = LUMEN_INTER_LINEAR,
                                  .fx = 0,
                                  .fy = 0,
                                  .antialias = 0,
                                  .align_corners = 0};
}

const char *lumen_resize_rule_name(lumen_resize_rule rule)
{
    static const char *const names[] = {"opencv", "pillow", "torch"};
    return (unsigned)rule < 3 ? names[rule] : "?";
}

const char *lumen_interpolation_name(lumen_interpolation ip)
{
    static const char *const names[] = {"nearest", "nearest-exact", "linear", "cubic",
                                        "area",    "lanczos",       "box",    "hamming"};
    return (unsigned)ip < 8 ? names[ip] : "?";
}

static lumen_status check_factor(double f, const char *what)
{
    if (!(f >= 0) || !isfinite(f) || (f > 0 && f < 1e-9))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: expected a finite scale factor > 0 (0: from the sizes), got %g",
                               what, f);
    return LUMEN_OK;
}

/* One axis's output size for a factor: OpenCV's saturate_cast (round, ties to even), torch's
 * floor; at least 1 (a size of 0 is an error in both peers; here it is never reached). */
static lumen_status size_of(int64_t in, double f, lumen_resize_rule rule, const char *what,
                            int64_t *out)
{
    const double v = (double)in * f;
    const double r = rule == LUMEN_RESIZE_TORCH ? floor(v) : nearbyint(v);
    if (!(r >= 1) || r > (double)INT32_MAX)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: %g x %lld gives an output size of %.0f, outside 1..%d", what, f,
                               (long long)in, r, INT32_MAX);
    *out = (int64_t)r;
    return LUMEN_OK;
}

lumen_status lumen_resize_output_size(int64_t h, int64_t w, double fx, double fy,
                                      lumen_resize_rule rule, int64_t *out_h, int64_t *out_w)
{
    lumen_clear_error();
    lumen_status s;
    if (!out_h || !out_w)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out_h: output pointer is NULL");
    if (h < 1 || w < 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "src: size %lldx%lld is empty",
                               (long long)w, (long long)h);
    if ((unsigned)rule > LUMEN_RESIZE_TORCH)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "rule: unknown rule %d", (int)rule);
    if ((s = check_factor(fx, "fx")) || (s = check_factor(fy, "fy"))) return s;
    if (fx == 0 || fy == 0)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "fx: both factors are needed");
    if ((s = size_of(h, fy, rule, "fy", out_h))) return s;
    return size_of(w, fx, rule, "fx", out_w);
}

/* Which interpolations a rule has, and its flags: the peers' own errors, said here. */
static lumen_status check_rule(const lumen_resize_options *o)
{
    const lumen_interpolation ip = o->interpolation;
    if ((unsigned)o->rule > LUMEN_RESIZE_TORCH)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "rule: unknown rule %d", (int)o->rule);
    if ((unsigned)ip > LUMEN_INTER_HAMMING)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "interpolation: unknown value %d",
                               (int)ip);
    const char *rule = lumen_resize_rule_name(o->rule), *name = lumen_interpolation_name(ip);
    const bool pillow_only = ip == LUMEN_INTER_BOX || ip == LUMEN_INTER_HAMMING;
    if ((o->rule == LUMEN_RESIZE_OPENCV && pillow_only) ||
        (o->rule == LUMEN_RESIZE_PILLOW && ip == LUMEN_INTER_AREA) ||
        (o->rule == LUMEN_RESIZE_TORCH && (pillow_only || ip == LUMEN_INTER_LANCZOS)))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "interpolation: %s has no %s (docs/resize.md lists each rule's)",
                               rule, name);
    const bool smooth = ip == LUMEN_INTER_LINEAR || ip == LUMEN_INTER_CUBIC;
    if (o->antialias && !(o->rule == LUMEN_RESIZE_TORCH && smooth) &&
        o->rule != LUMEN_RESIZE_PILLOW)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "antialias: the %s rule has none for %s (torch: linear and cubic; "
                               "pillow always antialiases)",
                               rule, name);
    if (o->align_corners && !(o->rule == LUMEN_RESIZE_TORCH && smooth))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "align_corners: only the torch rule's linear and cubic have it");
    lumen_status s = check_factor(o->fx, "fx");
    return s ? s : check_factor(o->fy, "fy");
}

static lumen_status check_views(const lumen_context *ctx, const lumen_image *src,
                                const lumen_image *dst)
{
    lumen_status s;
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    if ((s = lumen_image_check(src, "src")) || (s = lumen_image_check(dst, "dst"))) return s;
    if (src->n != dst->n || src->c != dst->c)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "dst: n=%lld, c=%lld differ from src's n=%lld, c=%lld (resize "
                               "changes only h and w)",
                               (long long)dst->n, (long long)dst->c, (long long)src->n,
                               (long long)src->c);
    if ((s = lumen_view_check_residence(ctx, src, "src")) ||
        (s = lumen_view_check_residence(ctx, dst, "dst")))
        return s;
    if (lumen_views_overlap(src, dst))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "dst: overlaps src; resize cannot run in place");
    return LUMEN_OK;
}

static bool has_window(const lumen_resize_window *w)
{
    return w->whole_h || w->whole_w || w->out_h || w->out_w || w->src_y || w->src_x || w->dst_y ||
           w->dst_x;
}

/* A window's sizes, and src and dst inside the whole image and the whole result. */
static lumen_status check_window(const lumen_resize_window *w, const lumen_image *src,
                                 const lumen_image *dst)
{
    if (!has_window(w)) return LUMEN_OK;
    if (w->whole_h < 1 || w->whole_w < 1 || w->out_h < 1 || w->out_w < 1 ||
        w->whole_h > INT32_MAX || w->whole_w > INT32_MAX || w->out_h > INT32_MAX ||
        w->out_w > INT32_MAX)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "window: the whole image (%lld x %lld) and result (%lld x %lld) "
                               "need sides in 1..%d",
                               (long long)w->whole_h, (long long)w->whole_w, (long long)w->out_h,
                               (long long)w->out_w, INT32_MAX);
    const struct {
        const char *what;
        const lumen_image *v;
        int64_t y, x, h, w;
    } part[2] = {{"src", src, w->src_y, w->src_x, w->whole_h, w->whole_w},
                 {"dst", dst, w->dst_y, w->dst_x, w->out_h, w->out_w}};
    for (int i = 0; i < 2; i++)
        if (part[i].y < 0 || part[i].x < 0 || part[i].y > part[i].h - part[i].v->h ||
            part[i].x > part[i].w - part[i].v->w)
            return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                                   "window: %s (%lld x %lld at y=%lld, x=%lld) lies outside the "
                                   "whole %s (%lld x %lld)",
                                   part[i].what, (long long)part[i].v->h, (long long)part[i].v->w,
                                   (long long)part[i].y, (long long)part[i].x,
                                   i ? "result" : "image", (long long)part[i].h,
                                   (long long)part[i].w);
    return LUMEN_OK;
}

/* The window's part of a whole axis's table: outputs d0 .. d0 + n - 1, reading src, which holds
 * the whole axis's pixels s0 .. s0 + have - 1. The weights are the whole table's rows; the
 * starts move by s0, or (narrow) by the first pixel read, *skip pixels into src: src is then
 * narrowed to what is read, so that a block's tables look like the whole's where they can (the
 * 2:1 fast paths need output o to start at 2 o). *mem: free() it. */
static lumen_status window_axis(const lumen_resize_axis *whole, int64_t d0, int64_t n, int64_t s0,
                                int64_t have, bool narrow, const char *what, lumen_resize_axis *out,
                                int32_t **mem, int64_t *skip)
{
    int32_t *first = *mem = malloc(sizeof(int32_t) * (size_t)n);
    if (!first) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "resize: out of memory");
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t o = 0; o < n; o++) {
        const int64_t f = whole->first[d0 + o];
        lo = f < lo ? f : lo, hi = f + whole->taps > hi ? f + whole->taps : hi;
        first[o] = (int32_t)(f - s0);
    }
    if (lo < s0 || hi > s0 + have)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "src: the window's outputs read %s %lld..%lld of the whole image; "
                               "src holds %lld..%lld",
                               what, (long long)lo, (long long)hi - 1, (long long)s0,
                               (long long)(s0 + have - 1));
    *skip = narrow ? lo - s0 : 0;
    for (int64_t o = 0; o < n; o++)
        first[o] -= (int32_t)*skip;
    const int64_t row = d0 * whole->taps;
    *out = (lumen_resize_axis){narrow ? hi - lo : have,
                               n,
                               whole->taps,
                               first,
                               whole->weights + row,
                               whole->iweights ? whole->iweights + row : NULL};
    return LUMEN_OK;
}

/* A window's job: the whole tables (job->x, job->y on entry) sliced to the block (*wx, *wy:
 * free() them), and src narrowed to the pixels they read where it is a host view (*part). */
static lumen_status window_job(const lumen_resize_window *win, const lumen_image *src,
                               const lumen_image *dst, lumen_resize_job *job, lumen_image *part,
                               int32_t **wx, int32_t **wy)
{
    const bool narrow = src->device == 0;
    int64_t sx0 = 0, sy0 = 0;
    lumen_status s = window_axis(job->whole_x, win->dst_x, dst->w, win->src_x, src->w, narrow,
                                 "columns", &job->x, wx, &sx0);
    if (s || (s = window_axis(job->whole_y, win->dst_y, dst->h, win->src_y, src->h, narrow, "rows",
                              &job->y, wy, &sy0)))
        return s;
    *part = *src;
    part->data = (char *)src->data + (sy0 * src->stride_h + sx0 * src->stride_w) *
                                         (int64_t)lumen_dtype_size(src->dtype);
    part->h = job->y.in, part->w = job->x.in;
    job->src = part;
    return LUMEN_OK;
}

/* Same size, and (torch) no factor that moves the sample points: every rule copies. */
static bool is_copy(const lumen_image *src, const lumen_image *dst, const lumen_resize_options *o)
{
    if (src->h != dst->h || src->w != dst->w) return false;
    if (o->rule != LUMEN_RESIZE_TORCH || o->align_corners) return true;
    return (o->fx == 0 || o->fx == 1) && (o->fy == 0 || o->fy == 1);
}

lumen_status lumen_resize(lumen_context *ctx, const lumen_image *src, const lumen_image *dst,
                          const lumen_resize_options *opt, lumen_run_info *info)
{
    lumen_clear_error();
    const lumen_resize_options o = opt ? *opt : lumen_resize_options_default();
    lumen_status s = check_views(ctx, src, dst);
    if (s || (s = check_rule(&o)) || (s = check_window(&o.window, src, dst))) return s;
    /* With a window the tables are the whole resize's: its sizes stand in for src's and dst's */
    const lumen_resize_window *win = &o.window;
    const bool windowed = has_window(win);
    const lumen_image whole_src = {.h = windowed ? win->whole_h : src->h,
                                   .w = windowed ? win->whole_w : src->w};
    const lumen_image whole_dst = {.h = windowed ? win->out_h : dst->h,
                                   .w = windowed ? win->out_w : dst->w};
    lumen_resize_options ax = o;
    const bool copy = is_copy(&whole_src, &whole_dst, &o);
    if (copy)
        ax.rule = LUMEN_RESIZE_OPENCV, ax.interpolation = LUMEN_INTER_NEAREST, ax.fx = ax.fy = 0;
    const bool nearest =
        ax.interpolation == LUMEN_INTER_NEAREST || ax.interpolation == LUMEN_INTER_NEAREST_EXACT;
    lumen_resize_axis_spec sx = {ax.rule, ax.interpolation, whole_src.w,      whole_dst.w,
                                 ax.fx,   ax.antialias,     ax.align_corners, 0,
                                 0};
    lumen_resize_axis_spec sy = sx;
    sy.in = whole_src.h, sy.out = whole_dst.h, sy.factor = ax.fy;
    sx.area_shrinks = sy.area_shrinks =
        lumen_resize_cv_scale(&sx) >= 1 && lumen_resize_cv_scale(&sy) >= 1;
    const int pillow_u8 =
        ax.rule == LUMEN_RESIZE_PILLOW && src->dtype == LUMEN_U8 && dst->dtype == LUMEN_U8;
    sx.pillow_u8 = sy.pillow_u8 = pillow_u8 && !nearest;
    lumen_resize_job job = {
        .src = src, .dst = dst, .nearest = nearest, .pillow_rounding = pillow_u8 && !nearest};
    void *mx = NULL, *my = NULL;
    int32_t *wx = NULL, *wy = NULL;
    lumen_resize_axis whole_x, whole_y;
    if (!(s = lumen_resize_taps(&sx, &whole_x, &mx)) &&
        !(s = lumen_resize_taps(&sy, &whole_y, &my))) {
        job.x = whole_x, job.y = whole_y;
        lumen_image part;
        if (windowed) {
            job.whole_x = &whole_x, job.whole_y = &whole_y;
            s = window_job(win, src, dst, &job, &part, &wx, &wy);
        }
        if (!s) {
            const lumen_op op = lumen_op_resize(&job);
            s = lumen_run(ctx, &op, info);
        }
    }
    free(mx), free(my), free(wx), free(wy);
    return s;
}

/* ---- descriptor (include/lumen_ops.h, docs/descriptors.md) ---- */

#include "op_desc.h"

enum {
    RS_SRC,
    RS_SIZE,
    RS_FX,
    RS_FY,
    RS_INTERP,
    RS_RULE,
    RS_ANTIALIAS,
    RS_ALIGN,
    RS_WHOLE_SRC,
    RS_WHOLE_DST,
    RS_SRC_ORIGIN,
    RS_DST_ORIGIN,
    RS_N
};

static const lumen_choice interp_choices[] = {{"nearest", LUMEN_INTER_NEAREST},
                                              {"nearest-exact", LUMEN_INTER_NEAREST_EXACT},
                                              {"linear", LUMEN_INTER_LINEAR},
                                              {"cubic", LUMEN_INTER_CUBIC},
                                              {"area", LUMEN_INTER_AREA},
                                              {"lanczos", LUMEN_INTER_LANCZOS},
                                              {"box", LUMEN_INTER_BOX},
                                              {"hamming", LUMEN_INTER_HAMMING},
                                              {NULL, 0}};
static const lumen_choice rule_choices[] = {{"opencv", LUMEN_RESIZE_OPENCV},
                                            {"pillow", LUMEN_RESIZE_PILLOW},
                                            {"torch", LUMEN_RESIZE_TORCH},
                                            {NULL, 0}};

static const lumen_arg_desc resize_args[RS_N] = {
    [RS_SRC] = {.name = "src",
                .type = LUMEN_ARG_IMAGE,
                .flags = LUMEN_ARG_REQUIRED,
                .help = "the image (or N frames) to resample"},
    [RS_SIZE] = {.name = "size",
                 .type = LUMEN_ARG_INT_PAIR,
                 .flags = LUMEN_ARG_POSITIONAL | LUMEN_ARG_NULLABLE | LUMEN_ARG_PAIR_XY |
                          LUMEN_ARG_PAIR_BOTH,
                 .def_text = "from fx and fy",
                 .min = 1,
                 .max = INT32_MAX,
                 .help = "output width and height (cv2's dsize; PIL's size)"},
    [RS_FX] = {.name = "fx",
               .type = LUMEN_ARG_REAL,
               .flags = LUMEN_ARG_NULLABLE,
               .def_text = "width ratio of size",
               .min = 1e-9,
               .max = 1e9,
               .help = "horizontal scale factor (cv2's fx, torch's scale_factor): sets the width "
                       "when size is absent (rounded: opencv, pillow; floored: torch) and, for "
                       "opencv and torch, where output pixels sample the input"},
    [RS_FY] = {.name = "fy",
               .type = LUMEN_ARG_REAL,
               .flags = LUMEN_ARG_NULLABLE,
               .def_text = "fx",
               .min = 1e-9,
               .max = 1e9,
               .help = "vertical scale factor, as fx"},
    [RS_INTERP] = {.name = "interpolation",
                   .type = LUMEN_ARG_ENUM,
                   .def = {LUMEN_INTER_LINEAR, 0},
                   .choices = interp_choices,
                   .help = "the kernel; opencv: nearest, nearest-exact, linear, cubic, area, "
                           "lanczos; pillow: nearest, linear, cubic, lanczos, box, hamming; "
                           "torch: nearest, nearest-exact, linear, cubic, area"},
    [RS_RULE] = {.name = "rule",
                 .type = LUMEN_ARG_ENUM,
                 .def = {LUMEN_RESIZE_OPENCV, 0},
                 .choices = rule_choices,
                 .help = "whose conventions: cv2.resize, PIL.Image.resize or "
                         "torch.nn.functional.interpolate (docs/resize.md)"},
    [RS_ANTIALIAS] = {.name = "antialias",
                      .type = LUMEN_ARG_BOOL,
                      .max = 1,
                      .help = "torch: widen linear and cubic when shrinking, as "
                              "F.interpolate(antialias=True)"},
    [RS_ALIGN] = {.name = "align_corners",
                  .type = LUMEN_ARG_BOOL,
                  .max = 1,
                  .help = "torch: map the corner pixels' centres onto each other"},
    /* the window (lumen_resize_window) */
    [RS_WHOLE_SRC] = {.name = "whole_src",
                      .type = LUMEN_ARG_INT_PAIR,
                      .flags = LUMEN_ARG_NULLABLE | LUMEN_ARG_PAIR_XY | LUMEN_ARG_PAIR_BOTH,
                      .def_text = "src is whole",
                      .min = 1,
                      .max = INT32_MAX,
                      .help = "a window of a larger resize (lumen.dask's blocks): the width and "
                              "height of the whole image src is a part of; size is then the "
                              "part of the whole result to compute, and it equals that part"},
    [RS_WHOLE_DST] = {.name = "whole_dst",
                      .type = LUMEN_ARG_INT_PAIR,
                      .flags = LUMEN_ARG_NULLABLE | LUMEN_ARG_PAIR_XY | LUMEN_ARG_PAIR_BOTH,
                      .def_text = "with whole_src: required",
                      .min = 1,
                      .max = INT32_MAX,
                      .help = "the window's whole result: its width and height"},
    [RS_SRC_ORIGIN] = {.name = "src_origin",
                       .type = LUMEN_ARG_INT_PAIR,
                       .flags = LUMEN_ARG_PAIR_XY | LUMEN_ARG_PAIR_BOTH,
                       .def = {0, 0},
                       .min = 0,
                       .max = INT32_MAX,
                       .help = "the window: x and y of src's first pixel in the whole image"},
    [RS_DST_ORIGIN] = {.name = "dst_origin",
                       .type = LUMEN_ARG_INT_PAIR,
                       .flags = LUMEN_ARG_PAIR_XY | LUMEN_ARG_PAIR_BOTH,
                       .def = {0, 0},
                       .min = 0,
                       .max = INT32_MAX,
                       .help = "the window: x and y of the output's first pixel in the whole "
                               "result"},
};

static lumen_resize_options resize_opts(const lumen_value *v)
{
    const lumen_op_desc *d = &lumen_resize_desc;
    lumen_resize_options o = lumen_resize_options_default();
    o.interpolation = (lumen_interpolation)lumen_value_int(d, v, RS_INTERP);
    o.rule = (lumen_resize_rule)lumen_value_int(d, v, RS_RULE);
    o.antialias = (int)lumen_value_int(d, v, RS_ANTIALIAS);
    o.align_corners = (int)lumen_value_int(d, v, RS_ALIGN);
    o.fx = v[RS_FX].given ? v[RS_FX].u.real : 0;
    o.fy = v[RS_FY].given ? v[RS_FY].u.real : o.fx;
    if (v[RS_WHOLE_SRC].given) {
        const int64_t *ws = v[RS_WHOLE_SRC].u.pair, *wd = v[RS_WHOLE_DST].u.pair;
        int sx, sy, dx, dy; /* (x, y), default (0, 0) */
        lumen_value_pair(d, v, RS_SRC_ORIGIN, &sx, &sy);
        lumen_value_pair(d, v, RS_DST_ORIGIN, &dx, &dy);
        o.window = (lumen_resize_window){ws[1], ws[0], wd[1], wd[0], sy, sx, dy, dx};
    }
    return o;
}

/* The window's arguments come together: whole_src and whole_dst, and the block's size. */
static lumen_status check_window_args(const lumen_value *v)
{
    const bool any = v[RS_WHOLE_SRC].given || v[RS_WHOLE_DST].given || v[RS_SRC_ORIGIN].given ||
                     v[RS_DST_ORIGIN].given;
    if (!any) return LUMEN_OK;
    if (!v[RS_WHOLE_SRC].given || !v[RS_WHOLE_DST].given)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: a window needs both whole_src and whole_dst",
                               v[RS_WHOLE_SRC].given ? "whole_dst" : "whole_src");
    if (!v[RS_SIZE].given)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "size: a window needs the size of its part of the result");
    return LUMEN_OK;
}

static lumen_status resize_shape(const lumen_value *v, lumen_out_shape *out)
{
    const lumen_image *src = v[RS_SRC].u.image;
    const lumen_resize_options o = resize_opts(v);
    int64_t h, w;
    /* a combination the rule lacks: a usage error (CLI: 2) */
    lumen_status s = check_rule(&o);
    if (s || (s = check_window_args(v))) return s;
    if (v[RS_SIZE].given) {
        w = v[RS_SIZE].u.pair[0], h = v[RS_SIZE].u.pair[1];
    } else if (!v[RS_FX].given) {
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "size: give the size or fx (and fy)");
    } else if ((s = lumen_resize_output_size(src->h, src->w, o.fx, o.fy, o.rule, &h, &w))) {
        return s;
    }
    /* the window's place in the whole image and result: a usage error too */
    const lumen_image dst = {.h = h, .w = w};
    if ((s = check_window(&o.window, src, &dst))) return s;
    *out = (lumen_out_shape){LUMEN_ARG_IMAGE, src->dtype, src->n, src->c, h, w};
    return LUMEN_OK;
}

static lumen_status resize_invoke(lumen_context *ctx, const lumen_value *v, const lumen_image *out,
                                  lumen_run_info *info)
{
    const lumen_resize_options o = resize_opts(v);
    return lumen_resize(ctx, v[RS_SRC].u.image, out, &o, info);
}

const lumen_op_desc lumen_resize_desc = {
    .name = "resize",
    .command = "resize",
    .summary = "resample to a size or by factors (cv2.resize, PIL.Image.resize, F.interpolate)",
    .help = "Each channel of each image resampled to the size, or by the factors, with the "
            "conventions of the rule: pixel centres, edges, kernel widths and constants "
            "(docs/resize.md). The output keeps src's dtype unless asked otherwise.",
    .args = resize_args,
    .n_args = RS_N,
    .output = LUMEN_ARG_IMAGE,
    .output_help = "the resampled image: src's n and c, the size's height and width",
    .output_shape = resize_shape,
    .invoke = resize_invoke,
};
