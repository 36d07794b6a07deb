/*
 * OpenEXR through its C API (OpenEXRCore, libopenexr-dev 3.1's openexr.h):
 * scanline images, any compression the library decodes. Pixels are f32 in
 * memory; on disk float (default) or half (write option `half`), ZIP-compressed.
 * Channels: Y, Y+A, R+G+B, R+G+B+A map to 1..4 channels in that order; any
 * other set of up to 4 full-resolution channels is read in the file's
 * (alphabetical) order. Tiled, deep, multi-part-only and subsampled images
 * are refused. EXR has no slot lumen carries for ICC/EXIF/XMP (docs/io.md).
 *
 * The library reads and writes through our callbacks on io.c's stream, and
 * reports errors through a callback that keeps the first message of the call
 * in a thread-local buffer (as tiff.c does).
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"
#include "semantics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <openexr.h>

static _Thread_local char exr_msg[256];

static void on_exr_error(exr_const_context_t ctx, exr_result_t code, const char *msg)
{
    (void)ctx;
    if (!exr_msg[0])
        snprintf(exr_msg, sizeof exr_msg, "%s", msg ? msg : exr_get_default_error_message(code));
}

static lumen_status exr_failure(const char *path, exr_result_t rv, const char *what)
{
    const lumen_status s = rv == EXR_ERR_OUT_OF_MEMORY ? LUMEN_ERR_OUT_OF_MEMORY
                           : rv == EXR_ERR_READ_IO || rv == EXR_ERR_WRITE_IO ? LUMEN_ERR_IO
                                                                             : LUMEN_ERR_CORRUPT;
    const char *msg = exr_msg[0] ? exr_msg : exr_get_default_error_message(rv);
    return lumen_set_error(s, "%s: %s: %s", path, what, msg);
}

/* ---- stream callbacks ---------------------------------------------------- */

static int64_t exr_read_proc(exr_const_context_t ctx, void *ud, void *buf, uint64_t n,
                             uint64_t offset, exr_stream_error_func_ptr_t error_cb)
{
    const lumen_io_src *src = ud;
    if (offset > (uint64_t)INT64_MAX || fseeko(src->f, (off_t)offset, SEEK_SET) != 0) {
        error_cb(ctx, EXR_ERR_READ_IO, "cannot seek to %llu", (unsigned long long)offset);
        return -1;
    }
    const size_t got = fread(buf, 1, (size_t)n, src->f);
    if (got < n && ferror(src->f)) {
        error_cb(ctx, EXR_ERR_READ_IO, "read error: %s", strerror(errno));
        return -1;
    }
    return (int64_t)got;
}

static int64_t exr_size_proc(exr_const_context_t ctx, void *ud)
{
    (void)ctx;
    return (int64_t)((const lumen_io_src *)ud)->size;
}

static int64_t exr_write_proc(exr_const_context_t ctx, void *ud, const void *buf, uint64_t n,
                              uint64_t offset, exr_stream_error_func_ptr_t error_cb)
{
    FILE *f = ud;
    if (offset > (uint64_t)INT64_MAX || fseeko(f, (off_t)offset, SEEK_SET) != 0 ||
        fwrite(buf, 1, (size_t)n, f) != n) {
        error_cb(ctx, EXR_ERR_WRITE_IO, "cannot write: %s", strerror(errno));
        return -1;
    }
    return (int64_t)n;
}

/* Ours, so the library never treats the stream as its own file (it unlinks its own files on a
 * failed write; io.c owns this one). */
static void exr_destroy_proc(exr_const_context_t ctx, void *ud, int failed)
{
    (void)ctx, (void)ud, (void)failed;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct exr_layout {
    int64_t x0, y0, w, h;
    int c;
    int order[4]; /* order[k]: index in the file's channel list of output channel k */
    int lines;    /* scanlines per chunk */
    int bytes_px; /* bytes per pixel on disk, for the uncompressed size check */
    exr_compression_t compression;
} exr_layout;

/* Y, YA, RGB, RGBA by name; otherwise the file's order. */
static void exr_channel_order(const exr_attr_chlist_t *ch, exr_layout *L)
{
    static const char *const sets[4][4] = {
        {"Y"}, {"Y", "A"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};
    const char *const *want = sets[L->c - 1];
    int found = 0;
    for (int k = 0; k < L->c; k++)
        for (int i = 0; i < ch->num_channels; i++)
            if (strcmp(ch->entries[i].name.str, want[k]) == 0) L->order[k] = i, found++;
    if (found != L->c)
        for (int k = 0; k < L->c; k++)
            L->order[k] = k;
}

static lumen_status exr_get_layout(const char *path, exr_context_t ctx, exr_layout *L)
{
    exr_storage_t storage;
    const exr_attr_chlist_t *ch = NULL;
    exr_attr_box2i_t dw;
    exr_result_t rv;
    if ((rv = exr_get_storage(ctx, 0, &storage)) || (rv = exr_get_channels(ctx, 0, &ch)) ||
        (rv = exr_get_data_window(ctx, 0, &dw)) ||
        (rv = exr_get_compression(ctx, 0, &L->compression)))
        return exr_failure(path, rv, "corrupt EXR header");
    if (storage != EXR_STORAGE_SCANLINE)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: %s EXR is not supported (scanline images only)", path,
                               storage == EXR_STORAGE_TILED ? "tiled" : "deep");
    if (!ch || ch->num_channels < 1 || ch->num_channels > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: EXR with %d channels (supported: 1 to 4)", path,
                               ch ? ch->num_channels : 0);
    L->c = ch->num_channels;
    L->bytes_px = 0;
    for (int i = 0; i < ch->num_channels; i++) {
        if (ch->entries[i].x_sampling != 1 || ch->entries[i].y_sampling != 1)
            return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                                   "%s: subsampled EXR channel '%s' is not supported", path,
                                   ch->entries[i].name.str);
        L->bytes_px += ch->entries[i].pixel_type == EXR_PIXEL_HALF ? 2 : 4;
    }
    exr_channel_order(ch, L);
    L->x0 = dw.min.x, L->y0 = dw.min.y;
    L->w = (int64_t)dw.max.x - dw.min.x + 1;
    L->h = (int64_t)dw.max.y - dw.min.y + 1;
    if (L->w <= 0 || L->h <= 0)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: EXR data window is empty", path);
    if ((rv = exr_get_scanlines_per_chunk(ctx, 0, &L->lines)) || L->lines < 1)
        return exr_failure(path, rv ? rv : EXR_ERR_CORRUPT_CHUNK, "corrupt EXR header");
    return LUMEN_OK;
}

/*
 * Each channel decodes into its own plane of `planes` (one chunk's rows), then the planes are
 * interleaved into the image. Not straight into the interleaved image: OpenEXRCore 3.1.5's
 * specialised unpacker for four interleaved half channels mixes the channels up (R gets A's
 * values from the third pixel on); the per-channel path is right for every layout.
 */
static void exr_bind_planes(exr_decode_pipeline_t *dec, const exr_layout *L, float *planes)
{
    const size_t plane = (size_t)L->w * (size_t)L->lines;
    for (int k = 0; k < L->c; k++) {
        exr_coding_channel_info_t *ci = &dec->channels[L->order[k]];
        ci->decode_to_ptr = (uint8_t *)(planes + (size_t)k * plane);
        ci->user_pixel_stride = 4;
        ci->user_line_stride = (int32_t)(L->w * 4);
        ci->user_bytes_per_element = 4;
        ci->user_data_type = EXR_PIXEL_FLOAT;
    }
}

static void exr_interleave(const exr_layout *L, const float *planes, int rows, lumen_image *out,
                           int64_t y)
{
    const size_t plane = (size_t)L->w * (size_t)L->lines, n = (size_t)rows * (size_t)L->w;
    float *dst = (float *)out->data + (size_t)(y - L->y0) * (size_t)L->w * (size_t)L->c;
    for (int k = 0; k < L->c; k++)
        for (size_t i = 0; i < n; i++)
            dst[i * (size_t)L->c + (size_t)k] = planes[(size_t)k * plane + i];
}

static lumen_status exr_read_chunks(const char *path, exr_context_t ctx, const exr_layout *L,
                                    lumen_image *out)
{
    float *planes = malloc((size_t)L->w * (size_t)L->lines * (size_t)L->c * sizeof *planes);
    if (!planes) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    exr_decode_pipeline_t dec = EXR_DECODE_PIPELINE_INITIALIZER;
    exr_result_t rv = EXR_ERR_SUCCESS;
    bool started = false;
    for (int64_t y = L->y0; y < L->y0 + L->h && !rv; y += L->lines) {
        exr_chunk_info_t ci;
        if ((rv = exr_read_scanline_chunk_info(ctx, 0, (int)y, &ci))) break;
        if (ci.start_y != y || ci.height < 1 || ci.height > L->lines ||
            y + ci.height > L->y0 + L->h) {
            rv = EXR_ERR_CORRUPT_CHUNK;
            break;
        }
        rv = started ? exr_decoding_update(ctx, 0, &ci, &dec)
                     : exr_decoding_initialize(ctx, 0, &ci, &dec);
        if (rv) break;
        exr_bind_planes(&dec, L, planes);
        if (!started && (rv = exr_decoding_choose_default_routines(ctx, 0, &dec))) break;
        started = true;
        if (!(rv = exr_decoding_run(ctx, 0, &dec))) exr_interleave(L, planes, ci.height, out, y);
    }
    if (started) exr_decoding_destroy(ctx, &dec);
    free(planes);
    return rv ? exr_failure(path, rv, "corrupt or truncated EXR") : LUMEN_OK;
}

static lumen_status exr_decode(const lumen_io_src *src, exr_context_t ctx, lumen_image *out)
{
    exr_layout L;
    lumen_status s = exr_get_layout(src->path, ctx, &L);
    if (s || (s = lumen_io_check_dims(src, src->path, (uint64_t)L.h, (uint64_t)L.w, 1))) return s;
    if (L.compression == EXR_COMPRESSION_NONE &&
        (s = lumen_io_check_file_holds(src, (uint64_t)(L.w * L.h) * (uint64_t)L.bytes_px, 1,
                                       "EXR")))
        return s;
    if ((s = lumen_io_alloc_image(src, out, LUMEN_F32, (uint64_t)L.h, (uint64_t)L.w,
                                  (uint64_t)L.c)))
        return s;
    if ((s = exr_read_chunks(src->path, ctx, &L, out))) lumen_image_free(out);
    return s;
}

lumen_status lumen_io_read_exr(const lumen_io_src *src, lumen_image *out)
{
    unsigned char magic[4];
    const size_t got = fread(magic, 1, sizeof magic, src->f);
    if (memcmp(magic, "\x76\x2f\x31\x01", got))
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: not an OpenEXR file (bad magic)", src->path);
    if (got < sizeof magic) return lumen_io_short_read(src->path, src->f);
    exr_context_initializer_t init = EXR_DEFAULT_CONTEXT_INITIALIZER;
    init.error_handler_fn = on_exr_error;
    init.user_data = (void *)src;
    init.read_fn = exr_read_proc;
    init.size_fn = exr_size_proc;
    init.destroy_fn = exr_destroy_proc;
    exr_msg[0] = '\0';
    exr_context_t ctx = NULL;
    exr_result_t rv = exr_start_read(&ctx, src->path, &init);
    lumen_status s = rv ? exr_failure(src->path, rv, "corrupt EXR") : exr_decode(src, ctx, out);
    exr_finish(&ctx);
    return s;
}

/* ---- writing ------------------------------------------------------------- */

lumen_status lumen_io_check_exr(const char *path, const lumen_image *img,
                                const lumen_write_options *opt)
{
    (void)opt;
    if (!lumen_dtype_is_float(img->dtype))
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: EXR stores float pixels (f32, f16 or bf16 in memory; float or "
                               "half on disk), the image is %s; convert it first, or write "
                               ".png/.tif",
                               path, lumen_dtype_name(img->dtype));
    if (img->c < 1 || img->c > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: EXR output holds 1 to 4 channels (Y, YA, RGB, RGBA), the "
                               "image has %lld",
                               path, (long long)img->c);
    if (img->w > INT32_MAX || img->h > INT32_MAX)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: image too large for EXR", path);
    return LUMEN_OK;
}

typedef struct exr_writer {
    const lumen_io_dst *dst;
    const lumen_image *img;
    exr_context_t ctx;
    unsigned char *buf; /* one chunk of packed rows: f32 or half */
    unsigned char *row; /* one row in the image's dtype, when it differs from the file's */
    int lines;
} exr_writer;

/* Half on disk when asked, and for f16 images (lossless); f32 and bf16 (exact in float) are
 * stored as float otherwise. */
static bool exr_disk_half(const exr_writer *w)
{
    return w->dst->opt->half || w->img->dtype == LUMEN_F16;
}

static const char *const exr_names[4][4] = {
    {"Y"}, {"Y", "A"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};

static exr_result_t exr_write_header_for(exr_writer *w)
{
    const int c = (int)w->img->c;
    const exr_pixel_type_t type = exr_disk_half(w) ? EXR_PIXEL_HALF : EXR_PIXEL_FLOAT;
    int part = 0;
    exr_result_t rv = exr_add_part(w->ctx, "main", EXR_STORAGE_SCANLINE, &part);
    if (!rv)
        rv = exr_initialize_required_attr_simple(w->ctx, part, (int32_t)w->img->w,
                                                 (int32_t)w->img->h, EXR_COMPRESSION_ZIP);
    for (int k = 0; k < c && !rv; k++)
        rv =
            exr_add_channel(w->ctx, part, exr_names[c - 1][k], type, EXR_PERCEPTUALLY_LINEAR, 1, 1);
    if (!rv) rv = exr_write_header(w->ctx);
    if (!rv) rv = exr_get_scanlines_per_chunk(w->ctx, part, &w->lines);
    return rv;
}

/* Rows y0..y0+n-1 packed into w->buf as interleaved f32 or half: copied when the image's
 * dtype is the file's, else converted (f32 -> half rounds to nearest even). */
static void exr_pack_rows(exr_writer *w, int64_t y0, int n)
{
    const lumen_dtype t = w->img->dtype;
    const bool half = exr_disk_half(w);
    const size_t elems = (size_t)(w->img->w * w->img->c), des = half ? 2 : 4;
    const size_t es = lumen_dtype_size(t);
    for (int i = 0; i < n; i++) {
        unsigned char *out = w->buf + (size_t)i * elems * des;
        if (t == (half ? LUMEN_F16 : LUMEN_F32)) {
            lumen_io_pack_row(w->img, y0 + i, out);
            continue;
        }
        lumen_io_pack_row(w->img, y0 + i, w->row);
        for (size_t k = 0; k < elems; k++) {
            const float v = lumen_load_px(w->row + k * es, t);
            if (half)
                lumen_store_px(out + k * 2, LUMEN_F16, v);
            else
                memcpy(out + k * 4, &v, 4);
        }
    }
}

static exr_result_t exr_write_chunks(exr_writer *w)
{
    const int c = (int)w->img->c;
    const int es = exr_disk_half(w) ? 2 : 4;
    exr_result_t rv = EXR_ERR_SUCCESS;
    for (int64_t y = 0; y < w->img->h && !rv; y += w->lines) {
        exr_chunk_info_t ci;
        exr_encode_pipeline_t enc = EXR_ENCODE_PIPELINE_INITIALIZER;
        if ((rv = exr_write_scanline_chunk_info(w->ctx, 0, (int)y, &ci)) ||
            (rv = exr_encoding_initialize(w->ctx, 0, &ci, &enc)))
            break;
        exr_pack_rows(w, y, ci.height);
        /* The encoder's channels are in the file's (alphabetical) order: match by name. */
        for (int i = 0; i < enc.channel_count; i++)
            for (int k = 0; k < c; k++)
                if (!strcmp(enc.channels[i].channel_name, exr_names[c - 1][k])) {
                    enc.channels[i].encode_from_ptr = w->buf + (size_t)k * (size_t)es;
                    enc.channels[i].user_pixel_stride = c * es;
                    enc.channels[i].user_line_stride = (int32_t)(w->img->w * c * es);
                    enc.channels[i].user_bytes_per_element = (int16_t)es;
                    enc.channels[i].user_data_type = es == 2 ? EXR_PIXEL_HALF : EXR_PIXEL_FLOAT;
                }
        rv = exr_encoding_choose_default_routines(w->ctx, 0, &enc);
        if (!rv) rv = exr_encoding_run(w->ctx, 0, &enc);
        exr_encoding_destroy(w->ctx, &enc);
    }
    return rv;
}

lumen_status lumen_io_write_exr(const lumen_io_dst *dst, const lumen_image *img)
{
    exr_context_initializer_t init = EXR_DEFAULT_CONTEXT_INITIALIZER;
    init.error_handler_fn = on_exr_error;
    init.user_data = dst->f;
    init.write_fn = exr_write_proc;
    init.destroy_fn = exr_destroy_proc;
    exr_msg[0] = '\0';
    exr_writer w = {.dst = dst, .img = img};
    exr_result_t rv = exr_start_write(&w.ctx, dst->path, EXR_WRITE_FILE_DIRECTLY, &init);
    if (!rv) rv = exr_write_header_for(&w);
    if (!rv) {
        /* a chunk of the file's rows, and one row of the image's for the conversion */
        const size_t elems = (size_t)(img->w * img->c);
        const size_t n = elems * (exr_disk_half(&w) ? 2 : 4) * (size_t)w.lines;
        if (!(w.buf = malloc(n)) || !(w.row = malloc(lumen_io_row_bytes(img))))
            rv = EXR_ERR_OUT_OF_MEMORY;
    }
    if (!rv) rv = exr_write_chunks(&w);
    const exr_result_t fin = exr_finish(&w.ctx); /* writes the chunk offset table */
    if (!rv) rv = fin;
    free(w.buf), free(w.row);
    return rv ? exr_failure(dst->path, rv, "cannot write EXR") : LUMEN_OK;
}
