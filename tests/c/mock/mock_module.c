/* A test double of a GPU backend module: one "software" device whose memory is host memory
 * under a byte budget, running only the direct filter and conv2d (not conv_transpose2d) on
 * f32, through the op interface (supports/run). With it the runtime's module
 * loading, device choice, fallback, strict mode, memory cap and staging of device-resident
 * views are tested on machines without a GPU. Like a real module it calls no core function:
 * only the host table it is given. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const lumen_module_host *host;

typedef struct mock_state {
    uint64_t used; /* bytes allocated now */
} mock_state;

static int mock_count(void) { return 1; }

static lumen_status mock_info(int i, lumen_device_info *info)
{
    (void)i;
    memset(info, 0, sizeof *info);
    strcpy(info->name, "lumen mock device");
    strcpy(info->backend, "mock");
    info->kind = LUMEN_DEVICE_SOFTWARE;
    info->memory_total = info->memory_free = (uint64_t)64 << 20;
    return LUMEN_OK;
}

static lumen_status mock_state_create(int device, void **state)
{
    (void)device;
    *state = calloc(1, sizeof(mock_state));
    return *state ? LUMEN_OK : host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "mock: state");
}

static void mock_state_destroy(void *state) { free(state); }

/* Each block remembers its size in front of the pointer, for the budget. */
static lumen_status mock_alloc(lumen_context *ctx, size_t bytes, void **out)
{
    mock_state *st = host->state(ctx);
    uint64_t limit = host->memory_limit(ctx);
    if (limit && st->used + bytes > limit)
        return host->set_error(LUMEN_ERR_OUT_OF_MEMORY,
                               "mock: %zu bytes would pass the memory limit of %llu", bytes,
                               (unsigned long long)limit);
    uint64_t *p = malloc(bytes + 16);
    if (!p) return host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "mock: out of memory");
    p[0] = bytes;
    st->used += bytes;
    *out = p + 2;
    return LUMEN_OK;
}

static void mock_release(lumen_context *ctx, void *p)
{
    if (!p) return;
    uint64_t *b = (uint64_t *)p - 2;
    ((mock_state *)host->state(ctx))->used -= b[0];
    free(b);
}

static lumen_status mock_copy(lumen_context *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
    return LUMEN_OK;
}

static lumen_status mock_sync(lumen_context *ctx)
{
    (void)ctx;
    return LUMEN_OK;
}

static float *mock_px(const lumen_image *im, int64_t b, int64_t c, int64_t y, int64_t x)
{
    return (float *)im->data + b * im->stride_n + c * im->stride_c + y * im->stride_h +
           x * im->stride_w;
}

static double mock_tap_sum(const lumen_filter_job *j, int64_t b, int64_t c, int64_t y, int64_t x)
{
    const lumen_image *s = j->src;
    double acc = 0.0;
    for (int i = 0; i < j->kh; i++)
        for (int t = 0; t < j->kw; t++) {
            int64_t sy = lumen_border_index(y + i - j->ay, s->h, j->border);
            int64_t sx = lumen_border_index(x + t - j->ax, s->w, j->border);
            double v = sy < 0 || sx < 0 ? j->border_value : *mock_px(s, b, c, sy, sx);
            acc += (double)j->kernel[i * j->kw + t] * v;
        }
    return acc;
}

/* Direct correlation in double; a device-sized scratch buffer makes the memory cap bite. */
static lumen_status mock_filter2d(lumen_context *ctx, const lumen_filter_job *j)
{
    const lumen_image *s = j->src;
    size_t bytes = (size_t)(s->n * s->c * s->h * s->w) * sizeof(float);
    float *scratch;
    lumen_status st = mock_alloc(ctx, bytes, (void **)&scratch);
    if (st) return st;
    float *o = scratch;
    for (int64_t b = 0; b < s->n; b++)
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t y = 0; y < s->h; y++)
                for (int64_t x = 0; x < s->w; x++) *o++ = (float)mock_tap_sum(j, b, c, y, x);
    o = scratch;
    for (int64_t b = 0; b < s->n; b++)
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t y = 0; y < s->h; y++)
                for (int64_t x = 0; x < s->w; x++) *mock_px(j->dst, b, c, y, x) = *o++;
    mock_release(ctx, scratch);
    return LUMEN_OK;
}

/* x(n, c, i, j), 0 outside the image (the zero padding). */
static double mock_x(const lumen_image *x, int64_t n, int64_t c, int64_t i, int64_t j)
{
    return i < 0 || j < 0 || i >= x->h || j >= x->w ? 0.0 : *mock_px(x, n, c, i, j);
}

/* y(n, k, p, q) of conv2d, in double: PyTorch's definition. */
static double mock_conv_at(const lumen_conv_job *job, int64_t n, int64_t k, int64_t p, int64_t q)
{
    const lumen_image *x = job->x, *w = job->w;
    const lumen_conv2d_params *cp = &job->p;
    const int64_t cg = w->c, kg = w->n / cp->groups, c0 = k / kg * cg;
    double acc = job->bias ? job->bias[k] : 0.0;
    for (int64_t c = 0; c < cg; c++)
        for (int64_t r = 0; r < w->h; r++)
            for (int64_t t = 0; t < w->w; t++)
                acc += (double)*mock_px(w, k, c, r, t) *
                       mock_x(x, n, c0 + c, p * cp->stride_h - cp->pad_h + r * cp->dilation_h,
                              q * cp->stride_w - cp->pad_w + t * cp->dilation_w);
    return acc;
}

/* conv2d only (conv_transpose2d is not supported, so the runtime's fallback runs it). A
 * y-sized scratch buffer makes the memory cap bite, and keeps y untouched on failure. */
static lumen_status mock_conv2d(lumen_context *ctx, const lumen_conv_job *job, lumen_run_info *info)
{
    const lumen_image *y = job->y;
    float *scratch;
    lumen_status st = mock_alloc(ctx, (size_t)(y->n * y->c * y->h * y->w) * sizeof(float),
                                 (void **)&scratch);
    if (st) return st;
    float *o = scratch;
    for (int64_t n = 0; n < y->n; n++)
        for (int64_t k = 0; k < y->c; k++)
            for (int64_t p = 0; p < y->h; p++)
                for (int64_t q = 0; q < y->w; q++) *o++ = (float)mock_conv_at(job, n, k, p, q);
    o = scratch;
    for (int64_t n = 0; n < y->n; n++)
        for (int64_t k = 0; k < y->c; k++)
            for (int64_t p = 0; p < y->h; p++)
                for (int64_t q = 0; q < y->w; q++) *mock_px(y, n, k, p, q) = *o++;
    mock_release(ctx, scratch);
    info->algo = "mock:direct";
    return LUMEN_OK;
}

/* The direct filter and conv2d, with every view f32: the rest falls back to the CPU. */
static bool mock_supports(lumen_context *ctx, const lumen_op *op)
{
    (void)ctx;
    if (op->kind != LUMEN_OP_FILTER_DIRECT && op->kind != LUMEN_OP_CONV2D) return false;
    const lumen_image *const *v = lumen_op_views(op);
    for (int i = 0; i < op->n_views; i++)
        if (v[i]->dtype != LUMEN_F32) return false;
    return true;
}

static lumen_status mock_run(lumen_context *ctx, const lumen_op *op, lumen_run_info *info)
{
    if (op->kind == LUMEN_OP_CONV2D) return mock_conv2d(ctx, op->job, info);
    info->algo = "mock:direct";
    return mock_filter2d(ctx, op->job);
}

static const lumen_backend mock_backend = {
    .name = "mock",
    .supports = mock_supports,
    .run = mock_run,
    .device_count = mock_count,
    .device_info = mock_info,
    .state_create = mock_state_create,
    .state_destroy = mock_state_destroy,
    .alloc = mock_alloc,
    .release = mock_release,
    .upload = mock_copy,
    .download = mock_copy,
    .synchronize = mock_sync,
};

__attribute__((visibility("default"))) lumen_status
lumen_module_init(int abi, const lumen_module_host *h, const lumen_backend **out)
{
    if (abi != LUMEN_MODULE_ABI) return LUMEN_ERR_UNSUPPORTED;
    host = h;
    *out = &mock_backend;
    return LUMEN_OK;
}
