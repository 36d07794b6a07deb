/* The photo cases shared by `lumen bench` and `lumen bench floors` (bench_photo.h). */
#include "bench_photo.h"
#include "cli.h"

#include <stdlib.h>

#define U8 LUMEN_U8
#define U16 LUMEN_U16
#define OCV LUMEN_RESIZE_OPENCV
#define PIL LUMEN_RESIZE_PILLOW

/* Issue 30: u8 RGB k <= 5 within 1.5x of the memory floor. */
#define FLOOR_LIMIT 1.5

const photo_case photo_cases[] = {
    {"photo_u8_filter2d_k3", U8, PHOTO_FILTER2D, 3, 0, 0, OCV, FLOOR_LIMIT},
    {"photo_u8_filter2d_k5", U8, PHOTO_FILTER2D, 5, 0, 0, OCV, FLOOR_LIMIT},
    {"photo_u8_filter2d_k7", U8, PHOTO_FILTER2D, 7, 0, 0, OCV, 0},
    {"photo_u8_gauss_s1", U8, PHOTO_GAUSSIAN, 0, 1.0, 0, OCV, 0},
    {"photo_u8_gauss_s2", U8, PHOTO_GAUSSIAN, 0, 2.0, 0, OCV, 0},
    {"photo_u8_gauss_s3", U8, PHOTO_GAUSSIAN, 0, 3.0, 0, OCV, 0},
    {"photo_u8_gauss_s5", U8, PHOTO_GAUSSIAN, 0, 5.0, 0, OCV, 0},
    {"photo_u8_box_k5", U8, PHOTO_BOX, 5, 0, 0, OCV, FLOOR_LIMIT},
    {"photo_u8_box_k15", U8, PHOTO_BOX, 15, 0, 0, OCV, 0},
    {"photo_u8_resize_half", U8, PHOTO_RESIZE, 0, 0, 2, OCV, 0},
    {"photo_u8_resize_half_pil", U8, PHOTO_RESIZE, 0, 0, 2, PIL, 0},
    {"photo_u8_resize_quarter", U8, PHOTO_RESIZE, 0, 0, 4, OCV, 0},
    {"photo_u8_resize_quarter_pil", U8, PHOTO_RESIZE, 0, 0, 4, PIL, 0},
    {"photo_u8_crop_resize", U8, PHOTO_CROP_RESIZE, 0, 0, 2, OCV, 0},
    {"photo_u8_crop_resize_pil", U8, PHOTO_CROP_RESIZE, 0, 0, 2, PIL, 0},
    {"photo_u8_film", U8, PHOTO_FILM, 0, 0, 0, OCV, 0},
    {"photo_u16_filter2d_k3", U16, PHOTO_FILTER2D, 3, 0, 0, OCV, 0},
    {"photo_u16_filter2d_k5", U16, PHOTO_FILTER2D, 5, 0, 0, OCV, 0},
    {"photo_u16_filter2d_k7", U16, PHOTO_FILTER2D, 7, 0, 0, OCV, 0},
    {"photo_u16_gauss_s1", U16, PHOTO_GAUSSIAN, 0, 1.0, 0, OCV, 0},
    {"photo_u16_gauss_s2", U16, PHOTO_GAUSSIAN, 0, 2.0, 0, OCV, 0},
    {"photo_u16_gauss_s3", U16, PHOTO_GAUSSIAN, 0, 3.0, 0, OCV, 0},
    {"photo_u16_gauss_s5", U16, PHOTO_GAUSSIAN, 0, 5.0, 0, OCV, 0},
    {"photo_u16_box_k5", U16, PHOTO_BOX, 5, 0, 0, OCV, 0},
    {"photo_u16_box_k15", U16, PHOTO_BOX, 15, 0, 0, OCV, 0},
    {"photo_u16_resize_half", U16, PHOTO_RESIZE, 0, 0, 2, OCV, 0},
    {"photo_u16_resize_quarter", U16, PHOTO_RESIZE, 0, 0, 4, OCV, 0},
    {"photo_u16_crop_resize", U16, PHOTO_CROP_RESIZE, 0, 0, 2, OCV, 0},
    {"photo_u16_film", U16, PHOTO_FILM, 0, 0, 0, OCV, 0}};
const int photo_ncases = (int)(sizeof photo_cases / sizeof photo_cases[0]);

const char *photo_op_name(photo_op op)
{
    static const char *const names[] = {"filter2d", "gaussian",    "box",
                                        "resize",   "crop_resize", "film"};
    return names[op];
}

int photo_case_ksize(const photo_case *c)
{
    if (c->op == PHOTO_GAUSSIAN) return lumen_gaussian_ksize(c->sigma, c->dtype);
    return c->op == PHOTO_FILTER2D || c->op == PHOTO_BOX ? c->k : 0;
}

void photo_crop_box(int w, int h, int *x0, int *y0, int *x1, int *y1)
{
    const int cw = w / 2 > 1 ? w / 2 : 1, ch = h / 2 > 1 ? h / 2 : 1;
    *x0 = (w - cw) / 2, *y0 = (h - ch) / 2;
    *x1 = *x0 + cw, *y1 = *y0 + ch;
}

static int divided(int n, int div)
{
    const int q = (n + div / 2) / div;
    return q > 1 ? q : 1;
}

void photo_out_size(const photo_case *c, int w, int h, int *ow, int *oh)
{
    if (c->op == PHOTO_CROP_RESIZE) {
        int x0, y0, x1, y1;
        photo_crop_box(w, h, &x0, &y0, &x1, &y1);
        w = x1 - x0, h = y1 - y0;
    }
    if (c->op == PHOTO_RESIZE || c->op == PHOTO_CROP_RESIZE)
        w = divided(w, c->div), h = divided(h, c->div);
    *ow = w, *oh = h;
}

size_t photo_image_bytes(lumen_dtype dtype, int w, int h)
{
    return (size_t)w * (size_t)h * 3 * lumen_dtype_size(dtype);
}

double photo_traffic_bytes(const photo_case *c, int w, int h)
{
    int ow, oh, x0 = 0, y0 = 0, x1 = w, y1 = h;
    if (c->op == PHOTO_CROP_RESIZE) photo_crop_box(w, h, &x0, &y0, &x1, &y1);
    photo_out_size(c, w, h, &ow, &oh);
    return (double)photo_image_bytes(c->dtype, x1 - x0, y1 - y0) +
           (double)photo_image_bytes(c->dtype, ow, oh);
}

void photo_kernel(int k, float *out)
{
    static const float sharpen[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
    if (k == 3) {
        for (int i = 0; i < 9; i++)
            out[i] = sharpen[i];
        return;
    }
    uint64_t seed = 2000u + (uint64_t)k;
    double sum = 0.0;
    for (int i = 0; i < k * k; i++) {
        out[i] = cli_lcg_unit(&seed); /* cli_random_floats(.., 0, 1): lo + (hi - lo) * u */
        sum += out[i];
    }
    for (int i = 0; i < k * k; i++)
        out[i] = out[i] / (float)sum;
}

void *photo_image(lumen_dtype dtype, int w, int h)
{
    const size_t n = (size_t)w * (size_t)h * 3;
    void *p = malloc(photo_image_bytes(dtype, w, h));
    if (!p) return NULL;
    uint64_t seed = 42;
    const float top = dtype == LUMEN_U8 ? 256.0f : 65536.0f;
    for (size_t i = 0; i < n; i++) {
        float v = cli_lcg_unit(&seed) * top;
        if (dtype == LUMEN_U8)
            ((uint8_t *)p)[i] = (uint8_t)(v < 255.0f ? v : 255.0f);
        else
            ((uint16_t *)p)[i] = (uint16_t)(v < 65535.0f ? v : 65535.0f);
    }
    return p;
}

lumen_status photo_case_run(lumen_context *ctx, const photo_case *c, void *src, int w, int h,
                            void *dst, const float *kernel, const lumen_film_stock *stock,
                            lumen_run_info *info)
{
    int ow, oh;
    photo_out_size(c, w, h, &ow, &oh);
    lumen_image s = lumen_image_nhwc(src, c->dtype, 1, h, w, 3);
    lumen_image d = lumen_image_nhwc(dst, c->dtype, 1, oh, ow, 3);
    const lumen_border b = LUMEN_BORDER_REFLECT101;
    switch (c->op) {
    case PHOTO_FILTER2D: {
        lumen_filter_options o = lumen_filter_options_default();
        o.border = b;
        return lumen_filter2d(ctx, &s, &d, kernel, c->k, c->k, &o, info);
    }
    case PHOTO_GAUSSIAN: return lumen_gaussian_blur(ctx, &s, &d, 0, 0, c->sigma, 0.0, b, 0, info);
    case PHOTO_BOX: return lumen_box_blur(ctx, &s, &d, c->k, c->k, 1, b, 0, info);
    case PHOTO_CROP_RESIZE: {
        int x0, y0, x1, y1;
        photo_crop_box(w, h, &x0, &y0, &x1, &y1);
        s.data =
            (char *)src + ((size_t)y0 * (size_t)w + (size_t)x0) * 3 * lumen_dtype_size(c->dtype);
        s.h = y1 - y0, s.w = x1 - x0; /* a view of the crop: the strides stay the image's */
    }
        /* fall through */
    case PHOTO_RESIZE: {
        lumen_resize_options o = lumen_resize_options_default();
        o.rule = c->rule;
        o.interpolation = LUMEN_INTER_LINEAR;
        return lumen_resize(ctx, &s, &d, &o, info);
    }
    case PHOTO_FILM: {
        lumen_film_options o = lumen_film_options_default();
        return lumen_film(ctx, &s, &d, stock, &o, info);
    }
    }
    return LUMEN_ERR_INVALID_ARGUMENT;
}
