/* Host <-> device staging of views and the index math around it (see cuda_views.h). */
#include "cuda_views.h"

#include <cstring>

cu_view cu_view_of(const lumen_image *img)
{
    cu_view v;
    v.data = static_cast<char *>(img->data);
    v.dtype = (int)img->dtype;
    v.es = (int)lumen_dtype_bytes(img->dtype);
    v.n = img->n, v.c = img->c, v.h = img->h, v.w = img->w;
    v.sn = img->stride_n, v.sc = img->stride_c, v.sh = img->stride_h, v.sw = img->stride_w;
    return v;
}

size_t cu_pixel_bytes(const lumen_image *img)
{
    return (size_t)(img->n * img->c * img->h * img->w) * (size_t)cu_view_of(img).es;
}

/* The view's byte extent: its lowest element's offset (elements, <= 0) and the extent's bytes
 * (the rule of core/semantics.h, as lumen_image_extent). */
static void extent(const lumen_image *img, int64_t *min_off, size_t *bytes)
{
    int64_t lo, hi;
    lumen_view_offsets(img, &lo, &hi);
    *min_off = lo;
    *bytes = (size_t)(hi - lo + 1) * (size_t)cu_view_of(img).es;
}

/* A src is copied by extent up to this many bytes beyond twice its pixels' bytes. */
#define EXTENT_SLACK ((size_t)64 << 10)

/* ---- compact layouts ---------------------------------------------------------------- */

/* The compact layout of a view and how to copy between the two (see cuda_views.h). */
struct compact_plan {
    int order[4];      /* axes (0 n, 1 c, 2 h, 3 w), innermost first */
    int64_t dims[4];   /* by axis */
    int64_t vs[4];     /* the view's strides, by axis */
    int64_t cs[4];     /* the compact strides, by axis */
    int64_t base;      /* compact offset of element (0, 0, 0, 0) */
    int inner;         /* axes order[0 .. inner) are dense in the view: one block */
    int64_t block;     /* elements per block */
    int64_t block_lo;  /* offset of a block's lowest element from its (0..) element */
};

static compact_plan compact_of(const lumen_image *img)
{
    compact_plan p;
    const int64_t dims[4] = {img->n, img->c, img->h, img->w};
    const int64_t vs[4] = {img->stride_n, img->stride_c, img->stride_h, img->stride_w};
    for (int i = 0; i < 4; i++) p.dims[i] = dims[i], p.vs[i] = vs[i], p.order[i] = 3 - i;
    /* innermost first: size-1 axes (no stride matters), then by |stride| (stable: w, h, c, n) */
    auto key = [&](int ax) { return dims[ax] == 1 ? -1 : (vs[ax] < 0 ? -vs[ax] : vs[ax]); };
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && key(p.order[j]) < key(p.order[j - 1]); j--) {
            int t = p.order[j];
            p.order[j] = p.order[j - 1], p.order[j - 1] = t;
        }
    int64_t size = 1;
    p.base = 0;
    for (int k = 0; k < 4; k++) {
        const int ax = p.order[k];
        p.cs[ax] = vs[ax] < 0 ? -size : size;
        if (vs[ax] < 0) p.base += (dims[ax] - 1) * size;
        size *= dims[ax];
    }
    p.inner = 0;
    p.block = 1;
    p.block_lo = 0;
    while (p.inner < 4) {
        const int ax = p.order[p.inner];
        if (dims[ax] != 1 && vs[ax] != p.cs[ax]) break;
        if (dims[ax] != 1 && vs[ax] < 0) p.block_lo += (dims[ax] - 1) * vs[ax];
        p.block *= dims[ax];
        p.inner++;
    }
    return p;
}

/* Copies every block between the view (at view_data) and its compact layout (at compact + base). */
static void compact_copy(const compact_plan &p, char *view_data, char *compact, size_t es,
                         bool to_view)
{
    int64_t idx[4] = {0, 0, 0, 0}; /* indices of the outer axes order[inner ..] */
    const size_t bytes = (size_t)p.block * es;
    for (;;) {
        int64_t vo = p.block_lo, co = p.base + p.block_lo;
        for (int k = p.inner; k < 4; k++) {
            const int ax = p.order[k];
            vo += idx[k] * p.vs[ax];
            co += idx[k] * p.cs[ax];
        }
        char *v = view_data + vo * (int64_t)es, *c = compact + co * (int64_t)es;
        if (to_view) std::memcpy(v, c, bytes);
        else std::memcpy(c, v, bytes);
        int k = p.inner;
        while (k < 4 && ++idx[k] == p.dims[p.order[k]]) idx[k++] = 0;
        if (k == 4) return;
    }
}

/* The compact layout as a device view at dev. */
static cu_view compact_view(const lumen_image *img, const compact_plan &p, void *dev)
{
    cu_view v = cu_view_of(img);
    v.data = static_cast<char *>(dev) + p.base * v.es;
    v.sn = p.cs[0], v.sc = p.cs[1], v.sh = p.cs[2], v.sw = p.cs[3];
    return v;
}

/* ---- binding -------------------------------------------------------------------------- */

/* Binds a view; src: upload a host view; dst: allocate the device buffer of a host view. */
static lumen_status bind(cu_op &op, const lumen_image *img, bool is_dst, cu_binding *b)
{
    b->img = img;
    if (img->device != 0) { /* device memory of the context's device: used in place */
        b->v = cu_view_of(img);
        return LUMEN_OK;
    }
    b->host = true;
    const size_t pixels = cu_pixel_bytes(img), es = (size_t)cu_view_of(img).es;
    int64_t min_off;
    size_t ext;
    extent(img, &min_off, &ext);
    const char *what = is_dst ? "dst copy" : "src copy";
    lumen_status s;
    const bool by_extent = is_dst ? ext == pixels : ext <= 2 * pixels + EXTENT_SLACK;
    if (by_extent) {
        b->lo = static_cast<char *>(img->data) + min_off * (int64_t)es;
        b->bytes = ext;
        if ((s = op.temps.alloc(op.ctx, ext, &b->dev, what))) return s;
        b->v = cu_view_of(img);
        b->v.data = static_cast<char *>(b->dev) - min_off * (int64_t)es;
        return is_dst ? LUMEN_OK : cu_upload_staged(op.st, b->dev, b->lo, ext);
    }
    b->compact = true;
    b->bytes = pixels;
    if ((s = op.temps.alloc(op.ctx, pixels, &b->dev, what))) return s;
    const compact_plan plan = compact_of(img);
    b->v = compact_view(img, plan, b->dev);
    if (is_dst) return LUMEN_OK;
    char *stage;
    if ((s = cu_stage_take(op.st, pixels, &stage))) return s;
    compact_copy(plan, static_cast<char *>(img->data), stage, es, false);
    return cu_stage_send(op.st, b->dev, stage, pixels);
}

lumen_status cu_op_start(cu_op &op, const lumen_image *src, const lumen_image *dst)
{
    lumen_status s = cu_stage_begin(op.st);
    if (s || (s = bind(op, src, false, &op.src))) return s;
    return bind(op, dst, true, &op.dst);
}

lumen_status cu_op_bind_input(cu_op &op, const lumen_image *img, cu_binding *b)
{
    return bind(op, img, false, b);
}

lumen_status cu_op_upload_floats(cu_op &op, const float *host, size_t n, const float **dev)
{
    void *p;
    lumen_status s = op.temps.alloc(op.ctx, n * sizeof(float), &p, "kernel taps");
    if (s || (s = cu_upload_staged(op.st, p, host, n * sizeof(float)))) return s;
    *dev = static_cast<const float *>(p);
    return LUMEN_OK;
}

lumen_status cu_op_scratch(cu_op &op, size_t bytes, void **out, const char *what)
{
    return op.temps.alloc(op.ctx, bytes, out, what);
}

lumen_status cu_op_finish(cu_op &op)
{
    const cu_binding &d = op.dst;
    if (!d.host) return LUMEN_OK; /* device dst: the result is ready in stream order */
    if (!d.compact) return cu_download_staged(op.st, d.lo, d.dev, d.bytes);
    const char *stage;
    lumen_status s = cu_stage_fetch(op.st, d.dev, d.bytes, &stage);
    if (s) return s;
    compact_copy(compact_of(d.img), static_cast<char *>(d.img->data), const_cast<char *>(stage),
                 (size_t)d.v.es, true);
    return LUMEN_OK;
}
