/*
 * JPEG via libjpeg(-turbo): u8 gray or RGB, written at quality 95.
 * libjpeg reports errors by calling error_exit, which must not return: it
 * longjmps back to the function that called setjmp. Everything that must
 * survive the jump is held by the caller (decompress/compress structs,
 * output buffer), never in non-volatile locals modified after setjmp.
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <errno.h>
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

static lumen_status jpeg_decode(jpeg_err *e, struct jpeg_decompress_struct *cinfo, FILE *f,
                                lumen_image *out)
{
    if (setjmp(e->jmp)) return e->status;

    jpeg_create_decompress(cinfo);
    jpeg_stdio_src(cinfo, f);
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
    lumen_status s = lumen_io_alloc_image(e->path, out, LUMEN_U8, cinfo->image_height,
                                          cinfo->image_width, (uint64_t)c);
    if (s) return s;
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

lumen_status lumen_io_read_jpeg(const char *path, FILE *f, lumen_image *out)
{
    jpeg_err e;
    struct jpeg_decompress_struct cinfo;
    jpeg_err_init(&e, path);
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &e.pub;
    lumen_status s = jpeg_decode(&e, &cinfo, f, out);
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

lumen_status lumen_io_check_jpeg(const char *path, const lumen_image *img)
{
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

static lumen_status jpeg_encode(jpeg_write_state *ws, FILE *f, const lumen_image *img)
{
    if (setjmp(ws->e.jmp)) return LUMEN_ERR_IO;

    struct jpeg_compress_struct *cinfo = &ws->cinfo;
    jpeg_create_compress(cinfo);
    jpeg_stdio_dest(cinfo, f);
    cinfo->image_width = (JDIMENSION)img->w;
    cinfo->image_height = (JDIMENSION)img->h;
    cinfo->input_components = (int)img->c;
    cinfo->in_color_space = img->c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, 95, TRUE);
    jpeg_start_compress(cinfo, TRUE);
    for (int64_t y = 0; y < img->h; y++) {
        lumen_io_pack_row(img, y, ws->row);
        jpeg_write_scanlines(cinfo, &ws->row, 1);
    }
    jpeg_finish_compress(cinfo);
    return LUMEN_OK;
}

lumen_status lumen_io_write_jpeg(const char *path, FILE *f, const lumen_image *img)
{
    jpeg_write_state *ws = calloc(1, sizeof *ws);
    if (ws) ws->row = malloc(lumen_io_row_bytes(img));
    if (!ws || !ws->row) {
        free(ws);
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    jpeg_err_init(&ws->e, path);
    ws->cinfo.err = &ws->e.pub;
    errno = 0;
    lumen_status s = jpeg_encode(ws, f, img);
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
