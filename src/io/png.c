/*
 * PNG via libpng: 8/16-bit gray, gray+alpha, RGB, RGBA. Palette, low-bit
 * gray and tRNS are expanded on read. Metadata: iCCP (ICC profile), eXIf
 * (EXIF) and the iTXt "XML:com.adobe.xmp" (XMP). libpng reports errors by longjmp, so
 * everything that must survive one lives in a struct outside the function
 * that calls setjmp (no non-volatile locals are modified after setjmp).
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <errno.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

typedef struct png_state {
    const char *path;
    FILE *f;
    lumen_status status; /* set by the I/O callbacks before png_error */
    char msg[256];
    void *row; /* writer's row buffer */
    char *xmp; /* writer's NUL-terminated XMP (libpng takes iTXt text by strlen) */
} png_state;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_state *st = png_get_error_ptr(png);
    if (st->status == LUMEN_OK) st->status = LUMEN_ERR_CORRUPT;
    if (!st->msg[0]) snprintf(st->msg, sizeof st->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* Warnings (bad ancillary CRCs, odd gamma...) are not failures; keep them off stderr. On
 * write they say metadata was left out (a profile libpng finds malformed): worth a line. */
static void on_png_warning(png_structp png, png_const_charp msg)
{
    png_state *st = png_get_error_ptr(png);
    lumen_log(st->row ? LUMEN_LOG_WARN : LUMEN_LOG_DEBUG, "%s: libpng warning: %s", st->path, msg);
}

/* Own read callback: tells a truncated file from a read error (libpng says "Read Error"). */
static void on_png_read(png_structp png, png_bytep data, size_t len)
{
    png_state *st = png_get_io_ptr(png);
    if (fread(data, 1, len, st->f) == len) return;
    if (ferror(st->f)) {
        st->status = LUMEN_ERR_IO;
        snprintf(st->msg, sizeof st->msg, "read error: %s", strerror(errno));
    } else {
        st->status = LUMEN_ERR_CORRUPT;
        snprintf(st->msg, sizeof st->msg, "truncated file");
    }
    png_error(png, st->msg);
}

static void on_png_write(png_structp png, png_bytep data, size_t len)
{
    png_state *st = png_get_io_ptr(png);
    if (fwrite(data, 1, len, st->f) == len) return;
    st->status = LUMEN_ERR_IO;
    snprintf(st->msg, sizeof st->msg, "cannot write: %s", strerror(errno));
    png_error(png, st->msg);
}

static void on_png_flush(png_structp png)
{
    png_state *st = png_get_io_ptr(png);
    fflush(st->f);
}

/* The message for a failed libpng call, naming the path. */
static lumen_status png_failure(const png_state *st, const char *what)
{
    if (st->status == LUMEN_ERR_CORRUPT && strcmp(st->msg, "truncated file") == 0)
        return lumen_set_error(st->status, "%s: truncated file", st->path);
    if (st->status == LUMEN_ERR_IO) return lumen_set_error(st->status, "%s: %s", st->path, st->msg);
    return lumen_set_error(st->status, "%s: %s: %s", st->path, what, st->msg);
}

/* ---- reading ------------------------------------------------------------- */

#define PNG_XMP_KEY "XML:com.adobe.xmp"

/* Stores ICC, EXIF and XMP from info (chunks before and after the image data). */
static lumen_status png_metadata(const lumen_io_src *src, png_structp png, png_infop info)
{
    lumen_image_metadata *m = src->meta;
    lumen_status s = LUMEN_OK;
    png_charp name;
    int comp;
    png_bytep data;
    png_uint_32 len;
    if (!m->icc && png_get_iCCP(png, info, &name, &comp, &data, &len))
        s = lumen_io_store_blob(src->path, &m->icc, &m->icc_size, data, len);
    if (!s && !m->exif && png_get_eXIf_1(png, info, &len, &data))
        s = lumen_io_store_blob(src->path, &m->exif, &m->exif_size, data, len);
    png_textp text;
    int n_text = 0;
    png_get_text(png, info, &text, &n_text);
    for (int i = 0; i < n_text && !s && !m->xmp; i++)
        if (strcmp(text[i].key, PNG_XMP_KEY) == 0)
            s = lumen_io_store_blob(src->path, &m->xmp, &m->xmp_size, text[i].text,
                                    text[i].itxt_length ? text[i].itxt_length
                                                        : text[i].text_length);
    m->orientation = lumen_io_exif_orientation(m->exif, m->exif_size);
    return s;
}

/*
 * The image data as stored (rows at the file's bit depth, one filter byte each) must come from
 * the file's bytes, which deflate expands at most ~1032 times: a 68-byte file cannot hold a
 * 2 GB row. Checked before anything that size is allocated.
 */
static lumen_status png_check_file(const lumen_io_src *src, png_structp png, png_infop info)
{
    const uint64_t h = png_get_image_height(png, info);
    const uint64_t row = ((uint64_t)png_get_image_width(png, info) * png_get_channels(png, info) *
                              png_get_bit_depth(png, info) +
                          7) /
                         8;
    return lumen_io_check_file_holds(src, h * (row + 1), LUMEN_IO_DEFLATE_RATIO, "PNG");
}

/*
 * Sets up expansions, checks the size, allocates `out` and decodes into it.
 * Returns OK, or CORRUPT after a longjmp (st->status/msg say why), or a
 * status already recorded with lumen_set_error (st->status stays OK then).
 */
static lumen_status png_decode(png_state *st, const lumen_io_src *src, png_structp png,
                               png_infop info, lumen_image *out)
{
    if (setjmp(png_jmpbuf(png))) return st->status ? st->status : LUMEN_ERR_CORRUPT;

    png_set_read_fn(png, st, on_png_read);
    png_set_sig_bytes(png, 8);
    /* libpng's default 1e6-pixel side limit would call large images corrupt;
       lumen_io_alloc_image applies our own limit with a clear message. */
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_read_info(png, info);
    lumen_status s = lumen_io_check_dims(src, src->path, png_get_image_height(png, info),
                                         png_get_image_width(png, info), 1);
    if (s || (s = png_check_file(src, png, info))) return s;
    const int color = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    /* PNG stores 16-bit samples big-endian; images are native. */
    if (depth == 16 && lumen_io_host_is_le()) png_set_swap(png);
    const int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);

    const uint64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    const int c = png_get_channels(png, info);
    const int out_depth = png_get_bit_depth(png, info);
    if ((out_depth != 8 && out_depth != 16) || c < 1 || c > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: unsupported PNG layout (%d-bit, %d channels)", st->path,
                               out_depth, c);
    s = lumen_io_alloc_image(src, out, out_depth == 16 ? LUMEN_U16 : LUMEN_U8, h, w, (uint64_t)c);
    if (s) return s;
    const size_t row_bytes = lumen_io_row_bytes(out);
    if (png_get_rowbytes(png, info) != row_bytes) {
        return lumen_set_error(LUMEN_ERR_INTERNAL, "%s: unexpected PNG row size %zu (wanted %zu)",
                               st->path, (size_t)png_get_rowbytes(png, info), row_bytes);
    }
    /* Row by row into the image: no row-pointer array (h can be huge). Each
       interlace pass refines rows already in the buffer. */
    for (int pass = 0; pass < passes; pass++)
        for (uint64_t y = 0; y < h; y++)
            png_read_row(png, (png_bytep)out->data + y * row_bytes, NULL);
    /* Reads up to IEND, so a file cut after the pixel data is still caught; chunks after
       the image data (eXIf, iTXt may be there) land in the same info. */
    png_read_end(png, info);
    return png_metadata(src, png, info);
}

lumen_status lumen_io_read_png(const lumen_io_src *src, lumen_image *out)
{
    const char *path = src->path;
    FILE *f = src->f;
    unsigned char sig[8];
    const size_t got = fread(sig, 1, sizeof sig, f);
    if (got > 0 && png_sig_cmp(sig, 0, got) != 0)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: not a PNG file (bad signature)", path);
    if (got < sizeof sig) return lumen_io_short_read(path, f);

    png_state st = {.path = path, .f = f, .status = LUMEN_OK};
    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    lumen_status s = png_decode(&st, src, png, info, out);
    png_destroy_read_struct(&png, &info, NULL);
    if (s != LUMEN_OK) {
        free(out->data);
        memset(out, 0, sizeof *out);
        if (st.status != LUMEN_OK) return png_failure(&st, "corrupt PNG");
    }
    return s;
}

/* ---- writing ------------------------------------------------------------- */

lumen_status lumen_io_check_png(const char *path, const lumen_image *img,
                                const lumen_write_options *opt)
{
    (void)opt;
    if (img->dtype == LUMEN_F32)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: PNG cannot store f32 pixels; write .tif or .npy instead, or "
                               "convert to u8/u16",
                               path);
    if (img->dtype == LUMEN_F16 || img->dtype == LUMEN_BF16)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: PNG cannot store %s pixels; write .npy or .exr instead, or "
                               "convert to u8/u16",
                               path, lumen_dtype_name(img->dtype));
    if (img->dtype != LUMEN_U8 && img->dtype != LUMEN_U16)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: PNG cannot store %s pixels", path,
                               lumen_dtype_name(img->dtype));
    if (img->c < 1 || img->c > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: PNG holds 1 to 4 channels, the image has %lld", path,
                               (long long)img->c);
    /* PNG dimensions are 31-bit. */
    if (img->w > 0x7fffffff || img->h > 0x7fffffff)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: image too large for PNG", path);
    return LUMEN_OK;
}

/* The metadata chunks, before the image data (where readers that stop early see them). */
static void png_set_metadata(png_state *st, png_structp png, png_infop info,
                             const lumen_image_metadata *m)
{
    if (m->icc && m->icc_size && m->icc_size <= PNG_UINT_31_MAX)
        png_set_iCCP(png, info, "ICC Profile", PNG_COMPRESSION_TYPE_BASE, m->icc,
                     (png_uint_32)m->icc_size);
    if (m->exif && m->exif_size && m->exif_size <= PNG_UINT_31_MAX)
        png_set_eXIf_1(png, info, (png_uint_32)m->exif_size, m->exif);
    if (st->xmp) {
        png_text t = {.compression = PNG_ITXT_COMPRESSION_NONE,
                      .key = PNG_XMP_KEY,
                      .text = st->xmp,
                      .itxt_length = strlen(st->xmp),
                      .lang = "",
                      .lang_key = ""};
        png_set_text(png, info, &t, 1);
    }
}

static lumen_status png_encode(png_state *st, png_structp png, png_infop info,
                               const lumen_io_dst *dst, const lumen_image *img)
{
    if (setjmp(png_jmpbuf(png))) return st->status ? st->status : LUMEN_ERR_INTERNAL;

    static const int color_types[4] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                       PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    const int depth = img->dtype == LUMEN_U16 ? 16 : 8;
    png_set_write_fn(png, st, on_png_write, on_png_flush);
    /* A profile libpng judges malformed (or unfit for gray/RGB) is left out with a warning
     * instead of failing the write: the pixels matter more than the metadata. */
    png_set_benign_errors(png, 1);
    png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, depth,
                 color_types[img->c - 1], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_metadata(st, png, info, dst->meta);
    /* As OpenCV's default: fast deflate with the cheap SUB filter. The default
     * (level 6, adaptive filters) takes ~5x longer on large photos for ~10% smaller files. */
    png_set_compression_level(png, 1);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
    png_write_info(png, info);
    if (depth == 16 && lumen_io_host_is_le()) png_set_swap(png);
    for (int64_t y = 0; y < img->h; y++) {
        lumen_io_pack_row(img, y, st->row);
        png_write_row(png, st->row);
    }
    png_write_end(png, NULL);
    return LUMEN_OK;
}

lumen_status lumen_io_write_png(const lumen_io_dst *dst, const lumen_image *img)
{
    const char *path = dst->path;
    FILE *f = dst->f;
    png_state st = {.path = path, .f = f, .status = LUMEN_OK};
    const lumen_image_metadata *m = dst->meta;
    bool ok = (st.row = malloc(lumen_io_row_bytes(img))) != NULL;
    if (ok && m->xmp && m->xmp_size && (ok = (st.xmp = malloc(m->xmp_size + 1)) != NULL)) {
        memcpy(st.xmp, m->xmp, m->xmp_size);
        st.xmp[m->xmp_size] = '\0';
    }
    png_structp png =
        ok ? png_create_write_struct(PNG_LIBPNG_VER_STRING, &st, on_png_error, on_png_warning)
           : NULL;
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        free(st.row);
        free(st.xmp);
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    lumen_status s = png_encode(&st, png, info, dst, img);
    png_destroy_write_struct(&png, &info);
    free(st.row);
    free(st.xmp);
    if (s != LUMEN_OK) return png_failure(&st, "cannot write PNG");
    return LUMEN_OK;
}
