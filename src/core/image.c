/* Image views: constructors and checks. */
#include "internal.h"

#include <limits.h>

lumen_image lumen_image_nhwc(void *data, lumen_dtype dtype, int64_t n, int64_t h, int64_t w,
                             int64_t c)
{
    lumen_image im = {data, dtype, n, c, h, w, h * w * c, 1, w * c, c, 0};
    return im;
}

lumen_image lumen_image_nchw(void *data, lumen_dtype dtype, int64_t n, int64_t c, int64_t h,
                             int64_t w)
{
    lumen_image im = {data, dtype, n, c, h, w, c * h * w, h * w, w, 1, 0};
    return im;
}

size_t lumen_dtype_size(lumen_dtype dtype)
{
    return lumen_dtype_bytes(dtype);
}

const char *lumen_dtype_name(lumen_dtype dtype)
{
    switch (dtype) {
    case LUMEN_U8: return "u8";
    case LUMEN_U16: return "u16";
    case LUMEN_F32: return "f32";
    case LUMEN_F16: return "f16";
    case LUMEN_BF16: return "bf16";
    }
    return "?";
}

float lumen_element_get(const void *p, lumen_dtype dtype)
{
    return lumen_load_px(p, dtype);
}

void lumen_element_set(void *p, lumen_dtype dtype, float v)
{
    lumen_store_px(p, dtype, v);
}

/* Sizes are bounded so that index arithmetic in int64 never overflows. */
#define LUMEN_MAX_DIM ((int64_t)1 << 31)

lumen_status lumen_image_check(const lumen_image *img, const char *what)
{
    if (!img) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: image is NULL", what);
    if (lumen_dtype_size(img->dtype) == 0)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", what,
                               (int)img->dtype);
    const int64_t dims[4] = {img->n, img->c, img->h, img->w};
    const char *names[4] = {"n", "c", "h", "w"};
    for (int i = 0; i < 4; i++) {
        if (dims[i] <= 0)
            return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: %s must be positive, got %lld",
                                   what, names[i], (long long)dims[i]);
        if (dims[i] > LUMEN_MAX_DIM)
            return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: %s = %lld is too large", what,
                                   names[i], (long long)dims[i]);
    }
    if (!img->data) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: data is NULL", what);
    /* Strides count elements, so an aligned start aligns every pixel. */
    size_t es = lumen_dtype_size(img->dtype);
    if ((uintptr_t)img->data % es)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: data at %p is not aligned to its %zu-byte elements", what,
                               img->data, es);
    return LUMEN_OK;
}

lumen_status lumen_image_check_pair(const lumen_image *src, const lumen_image *dst)
{
    lumen_status s = lumen_image_check(src, "src");
    if (s) return s;
    if ((s = lumen_image_check(dst, "dst"))) return s;
    if (src->n != dst->n || src->c != dst->c || src->h != dst->h || src->w != dst->w)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "dst: shape (n=%lld, c=%lld, h=%lld, w=%lld) differs from src "
                               "(n=%lld, c=%lld, h=%lld, w=%lld)",
                               (long long)dst->n, (long long)dst->c, (long long)dst->h,
                               (long long)dst->w, (long long)src->n, (long long)src->c,
                               (long long)src->h, (long long)src->w);
    return LUMEN_OK;
}

void lumen_image_extent(const lumen_image *img, uintptr_t *lo, uintptr_t *hi)
{
    int64_t min_off, max_off;
    lumen_view_offsets(img, &min_off, &max_off);
    size_t es = lumen_dtype_size(img->dtype);
    *lo = (uintptr_t)img->data + (intptr_t)(min_off * (int64_t)es);
    *hi = (uintptr_t)img->data + (uintptr_t)((max_off + 1) * (int64_t)es);
}

lumen_status lumen_view_check_residence(const lumen_context *ctx, const lumen_image *img,
                                        const char *what)
{
    if (img->device == 0 || img->device == ctx->device) return LUMEN_OK;
    return lumen_set_error(
        LUMEN_ERR_INVALID_ARGUMENT, "%s: lives on device %d (%s) but the context runs on %s", what,
        img->device, lumen_device_name_static(img->device), lumen_device_name_static(ctx->device));
}

bool lumen_views_overlap(const lumen_image *a, const lumen_image *b)
{
    if (a->device != b->device) return false;
    uintptr_t alo, ahi, blo, bhi;
    lumen_image_extent(a, &alo, &ahi);
    lumen_image_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}
