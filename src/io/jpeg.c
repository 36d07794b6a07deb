/*
 * JPEG via libjpeg(-turbo): u8 gray or RGB, written at quality 95 unless asked
 * otherwise. Metadata: the ICC profile (APP2, libjpeg-turbo's own reader and
 * writer, which split and join large profiles), EXIF and XMP (APP1).
 * libjpeg reports errors by calling error_exit, which must not return: it
 * longjmps back to the function that called setjmp. Everything that must
 * survive the jump is held by the caller (decompress/compress structs,
 * output buffer), never in non-volatile locals modified after setjmp.
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
/* After jpeglib.h, which it extends. */
#include <jerror.h>

typedef struct jpeg_err {
    struct jpeg_error_mgr pub; /* first: libjpeg casts cinfo->err to this */
    jmp_buf jmp;
    const char *path;
    lumen_status status;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void on_jpeg_error(j_common_ptr cinfo)
{
    jpeg_err *e = (jpeg_err *)cinfo->err;
    if (e->status == LUMEN_OK) e->status = LUMEN_ERR_CORRUPT;
    cinfo->err->format_message(cinfo, e->msg);
    longjmp(e->jmp, 1);
}

/*
 * libjpeg treats running out of data as a warning and pads the image with
 * grey; a truncated file must be an error here. Other warnings (e.g. stray
 * bytes before a marker) are common in camera files and are tolerated.
 */
static void on_jpeg_message(j_common_ptr cinfo, int level)
{
    jpeg_err *e = (jpeg_err *)cinfo->err;
    if (level >= 0) return; /* trace messages */
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        e->status = LUMEN_ERR_CORRUPT;
        snprintf(e->msg, sizeof e->msg, "truncated file");
        longjmp(e->jmp, 1);
    }
    char buf[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, buf);
    lumen_log(LUMEN_LOG_DEBUG, "%s: libjpeg warning: %s", e->path, buf);
    cinfo->err->num_warnings++;
}

/* libjpeg's default prints to stderr; messages are formatted where needed instead. */
static void on_jpeg_output(j_common_ptr cinfo)
{
    (void)cinfo;
}

static void jpeg_err_init(jpeg_err *e, const char *path)
{
    memset(e, 0, sizeof *e);
    jpeg_std_error(&e->pub);
    e->pub.error_exit = on_jpeg_error;
    e->pub.emit_message = on_jpeg_message;
    e->pub.output_message = on_jpeg_output;
    e->path = path;
    e->status = LUMEN_OK;
}

/* ---- reading ------------------------------------------------------------- */

#define EXIF_ID "Exif\0\0"
#define EXIF_ID_LEN 6
#define XMP_ID "http://ns.adobe.com/xap/1.0/"
#define XMP_ID_LEN 29 /* with its NUL */

/* EXIF and XMP from the saved APP1 markers (the first of each), the ICC profile from APP2. */
static lumen_status jpeg_metadata(const lumen_io_src *src, struct jpeg_decompress_struct *cinfo)
{
    lumen_image_metadata *m = src->meta;
    lumen_status s = LUMEN_OK;
    for (jpeg_saved_marker_ptr mk = cinfo->marker_list; mk && !s; mk = mk->next) {
        if (mk->marker != JPEG_APP0 + 1) continue;
        if (!m->exif && mk->data_length > EXIF_ID_LEN && !memcmp(mk->data, EXIF_ID, EXIF_ID_LEN))
            s = lumen_io_store_blob(src->path, &m->exif, &m->exif_size, mk->data + EXIF_ID_LEN,
                                    mk->data_length - EXIF_ID_LEN);
        else if (!m->xmp && mk->data_length > XMP_ID_LEN && !memcmp(mk->data, XMP_ID, XMP_ID_LEN))
            s = lumen_io_store_blob(src->path, &m->xmp, &m->xmp_size, mk->data + XMP_ID_LEN,
                                    mk->data_length - XMP_ID_LEN);
    }
    JOCTET *icc = NULL;
    unsigned int icc_len = 0;
    /* FALSE for no profile or a malformed one (then a warning): the pixels are still fine. */
    if (!s && jpeg_read_icc_profile(cinfo, &icc, &icc_len))
        s = lumen_io_store_blob(src->path, &m->icc, &m->icc_size, icc, icc_len);
    free(icc);
    m->orientation = lumen_io_exif_orientation(m->exif, m->exif_size);
    return s;
}

static lumen_status jpeg_decode(jpeg_err *e, struct jpeg_decompress_struct *cinfo,
                                const lumen_io_src *src, lumen_image *out)
{
    if (setjmp(e->jmp)) return e->status;

    jpeg_create_decompress(cinfo);
    jpeg_stdio_src(cinfo, src->f);
    jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xffff);
    jpeg_read_header(cinfo, TRUE);
    if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: CMYK JPEG is not supported", e->path);
    if (cinfo->num_components == 1) {
        cinfo->out_color_space = JCS_GRAYSCALE;
    } else if (cinfo->num_components == 3) {
        cinfo->out_color_space = JCS_RGB;
    } else {
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: JPEG with %d components is not supported", e->path,
                               cinfo->num_components);
    }
    const int c = cinfo->num_components;
    lumen_status s = jpeg_metadata(src, cinfo);
    if (s || (s = lumen_io_alloc_image(src, out, LUMEN_U8, cinfo->image_height, cinfo->image_width,
                                       (uint64_t)c)))
        return s;
    jpeg_start_decompress(cinfo);
    if (cinfo->output_components != c || cinfo->output_width != cinfo->image_width ||
        cinfo->output_height != cinfo->image_height)
        return lumen_set_error(LUMEN_ERR_INTERNAL, "%s: unexpected JPEG output layout", e->path);
    const size_t row_bytes = lumen_io_row_bytes(out);
    while (cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW row = (JSAMPROW)out->data + (size_t)cinfo->output_scanline * row_bytes;
        jpeg_read_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_decompress(cinfo);
    return LUMEN_OK;
}

lumen_status lumen_io_read_jpeg(const lumen_io_src *src, lumen_image *out)
{
    const char *path = src->path;
    jpeg_err e;
    struct jpeg_decompress_struct cinfo;
    jpeg_err_init(&e, path);
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &e.pub;
    lumen_status s = jpeg_decode(&e, &cinfo, src, out);
    jpeg_destroy_decompress(&cinfo); /* safe on a partly created struct */
    if (s != LUMEN_OK) {
        free(out->data);
        memset(out, 0, sizeof *out);
        if (e.status == LUMEN_ERR_CORRUPT && strcmp(e.msg, "truncated file") == 0)
            return lumen_set_error(s, "%s: truncated file", path);
        if (e.status != LUMEN_OK) return lumen_set_error(s, "%s: corrupt JPEG: %s", path, e.msg);
    }
    return s;
}

/* ---- writing ------------------------------------------------------------- */

lumen_status lumen_io_check_jpeg(const char *path, const lumen_image *img,
                                 const lumen_write_options *opt)
{
    (void)opt; /* quality's range is checked for every format by io.c */
    if (img->dtype != LUMEN_U8)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: JPEG stores only u8 pixels, the image is %s; write .png "
                               "(u8/u16) or .tif instead",
                               path, lumen_dtype_name(img->dtype));
    if (img->c != 1 && img->c != 3)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: JPEG stores 1 (gray) or 3 (RGB) channels, the image has %lld",
                               path, (long long)img->c);
    if (img->w > JPEG_MAX_DIMENSION || img->h > JPEG_MAX_DIMENSION)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: JPEG images are at most %d pixels wide and high", path,
                               (int)JPEG_MAX_DIMENSION);
    return LUMEN_OK;
}

typedef struct jpeg_write_state {
    jpeg_err e;
    struct jpeg_compress_struct cinfo;
    JSAMPROW row;
} jpeg_write_state;

/* APP1 "<id><blob>", if it fits one marker (64 KiB; larger EXIF/XMP would need extended XMP
 * or be malformed, so it is left out with a note). */
static void write_app1(j_compress_ptr cinfo, const char *path, const char *id, size_t id_len,
                       const unsigned char *blob, size_t n)
{
    if (!blob || n == 0) return;
    if (n > 65533 - id_len) {
        lumen_log(LUMEN_LOG_WARN, "%s: %s block of %zu bytes does not fit a JPEG marker; left out",
                  path, id_len == EXIF_ID_LEN ? "EXIF" : "XMP", n);
        return;
    }
    jpeg_write_m_header(cinfo, JPEG_APP0 + 1, (unsigned)(id_len + n));
    for (size_t i = 0; i < id_len; i++)
        jpeg_write_m_byte(cinfo, (unsigned char)id[i]);
    for (size_t i = 0; i < n; i++)
        jpeg_write_m_byte(cinfo, blob[i]);
}

static lumen_status jpeg_encode(jpeg_write_state *ws, const lumen_io_dst *dst,
                                const lumen_image *img)
{
    if (setjmp(ws->e.jmp)) return LUMEN_ERR_IO;

    struct jpeg_compress_struct *cinfo = &ws->cinfo;
    const lumen_image_metadata *m = dst->meta;
    jpeg_create_compress(cinfo);
    jpeg_stdio_dest(cinfo, dst->f);
    cinfo->image_width = (JDIMENSION)img->w;
    cinfo->image_height = (JDIMENSION)img->h;
    cinfo->input_components = (int)img->c;
    cinfo->in_color_space = img->c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, dst->opt->quality ? dst->opt->quality : 95, TRUE);
    jpeg_start_compress(cinfo, TRUE);
    /* After SOI and JFIF's APP0, before the frame: where readers look for them. */
    write_app1(cinfo, dst->path, EXIF_ID, EXIF_ID_LEN, m->exif, m->exif_size);
    write_app1(cinfo, dst->path, XMP_ID, XMP_ID_LEN, m->xmp, m->xmp_size);
    if (m->icc && m->icc_size && m->icc_size <= UINT_MAX)
        jpeg_write_icc_profile(cinfo, m->icc, (unsigned)m->icc_size);
    for (int64_t y = 0; y < img->h; y++) {
        lumen_io_pack_row(img, y, ws->row);
        jpeg_write_scanlines(cinfo, &ws->row, 1);
    }
    jpeg_finish_compress(cinfo);
    return LUMEN_OK;
}

lumen_status lumen_io_write_jpeg(const lumen_io_dst *dst, const lumen_image *img)
{
    const char *path = dst->path;
    jpeg_write_state *ws = calloc(1, sizeof *ws);
    if (ws) ws->row = malloc(lumen_io_row_bytes(img));
    if (!ws || !ws->row) {
        free(ws);
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    jpeg_err_init(&ws->e, path);
    ws->cinfo.err = &ws->e.pub;
    errno = 0;
    lumen_status s = jpeg_encode(ws, dst, img);
    const int err = errno;
    jpeg_destroy_compress(&ws->cinfo);
    if (s != LUMEN_OK) {
        /* libjpeg's write failures say only "Output file write error". */
        if (ws->e.pub.msg_code == JERR_FILE_WRITE && err != 0)
            s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(err));
        else
            s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write JPEG: %s", path, ws->e.msg);
    }
    free(ws->row);
    free(ws);
    return s;
}
