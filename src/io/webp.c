/*
 * WebP via libwebp: u8 RGB or RGBA, lossy (quality, default 90) or lossless.
 * Metadata through libwebp's (de)muxer: ICCP, EXIF and "XMP " chunks.
 * Animated files are refused: lumen reads one image. WebP has no grayscale,
 * so 1/2-channel images are refused on write rather than silently expanded.
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

#define WEBP_DEFAULT_QUALITY 90
#define WEBP_MAX_SIDE 16383

static const char *vp8_status_text(VP8StatusCode st)
{
    switch (st) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated file";
    default: return "error";
    }
}

static lumen_status vp8_failure(const char *path, VP8StatusCode st)
{
    if (st == VP8_STATUS_OUT_OF_MEMORY)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory decoding WebP", path);
    if (st == VP8_STATUS_NOT_ENOUGH_DATA)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: truncated file", path);
    if (st == VP8_STATUS_UNSUPPORTED_FEATURE)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: unsupported WebP feature", path);
    return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: corrupt WebP: %s", path, vp8_status_text(st));
}

/* ---- reading ------------------------------------------------------------- */

static lumen_status webp_chunk(const lumen_io_src *src, WebPDemuxer *dmx, const char *fourcc,
                               unsigned char **dst, size_t *dst_size)
{
    WebPChunkIterator it;
    lumen_status s = LUMEN_OK;
    if (WebPDemuxGetChunk(dmx, fourcc, 1, &it)) {
        const uint8_t *p = it.chunk.bytes;
        size_t n = it.chunk.size;
        /* Some writers keep JPEG's "Exif\0\0" in the EXIF chunk; the block starts after it. */
        if (!strcmp(fourcc, "EXIF") && n > 6 && !memcmp(p, "Exif\0\0", 6)) p += 6, n -= 6;
        s = lumen_io_store_blob(src->path, dst, dst_size, p, n);
    }
    WebPDemuxReleaseChunkIterator(&it);
    return s;
}

static lumen_status webp_metadata(const lumen_io_src *src, const unsigned char *buf, size_t len)
{
    const WebPData data = {buf, len};
    WebPDemuxer *dmx = WebPDemux(&data);
    if (!dmx) return LUMEN_OK; /* a bare VP8/VP8L stream has no chunks; the decoder judges it */
    lumen_image_metadata *m = src->meta;
    lumen_status s = webp_chunk(src, dmx, "ICCP", &m->icc, &m->icc_size);
    if (!s) s = webp_chunk(src, dmx, "EXIF", &m->exif, &m->exif_size);
    if (!s) s = webp_chunk(src, dmx, "XMP ", &m->xmp, &m->xmp_size);
    WebPDemuxDelete(dmx);
    m->orientation = lumen_io_exif_orientation(m->exif, m->exif_size);
    return s;
}

static lumen_status webp_decode(const lumen_io_src *src, const unsigned char *buf, size_t len,
                                lumen_image *out)
{
    WebPDecoderConfig cfg;
    if (!WebPInitDecoderConfig(&cfg))
        return lumen_set_error(LUMEN_ERR_INTERNAL, "%s: libwebp version mismatch", src->path);
    VP8StatusCode st = WebPGetFeatures(buf, len, &cfg.input);
    if (st != VP8_STATUS_OK) return vp8_failure(src->path, st);
    if (cfg.input.has_animation)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: animated WebP is not supported (lumen reads one image)",
                               src->path);
    const int c = cfg.input.has_alpha ? 4 : 3;
    lumen_status s = webp_metadata(src, buf, len);
    if (s || (s = lumen_io_alloc_image(src, out, LUMEN_U8, (uint64_t)cfg.input.height,
                                       (uint64_t)cfg.input.width, (uint64_t)c)))
        return s;
    cfg.output.colorspace = c == 4 ? MODE_RGBA : MODE_RGB;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = out->data;
    cfg.output.u.RGBA.stride = (int)lumen_io_row_bytes(out);
    cfg.output.u.RGBA.size = lumen_io_row_bytes(out) * (size_t)out->h;
    st = WebPDecode(buf, len, &cfg);
    WebPFreeDecBuffer(&cfg.output);
    if (st != VP8_STATUS_OK) {
        lumen_image_free(out);
        return vp8_failure(src->path, st);
    }
    return LUMEN_OK;
}

lumen_status lumen_io_read_webp(const lumen_io_src *src, lumen_image *out)
{
    unsigned char head[12];
    const size_t got = fread(head, 1, sizeof head, src->f);
    if ((got >= 4 && memcmp(head, "RIFF", 4)) || (got >= 12 && memcmp(head + 8, "WEBP", 4)))
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: not a WebP file (bad RIFF header)",
                               src->path);
    if (got < sizeof head) return lumen_io_short_read(src->path, src->f);
    if (fseek(src->f, 0, SEEK_SET) != 0)
        return lumen_set_error(LUMEN_ERR_IO, "%s: cannot seek", src->path);
    unsigned char *buf;
    lumen_status s = lumen_io_slurp(src, &buf);
    if (s) return s;
    s = webp_decode(src, buf, (size_t)src->size, out);
    free(buf);
    return s;
}

/* ---- writing ------------------------------------------------------------- */

lumen_status lumen_io_check_webp(const char *path, const lumen_image *img,
                                 const lumen_write_options *opt)
{
    (void)opt;
    if (img->dtype != LUMEN_U8)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: WebP stores only u8 pixels, the image is %s; write .png "
                               "(u8/u16), .tif or .exr instead",
                               path, lumen_dtype_name(img->dtype));
    if (img->c != 3 && img->c != 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: WebP stores RGB or RGBA (3 or 4 channels), the image has %lld",
                               path, (long long)img->c);
    if (img->w > WEBP_MAX_SIDE || img->h > WEBP_MAX_SIDE)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: WebP images are at most %d pixels wide and high", path,
                               WEBP_MAX_SIDE);
    return LUMEN_OK;
}

/* Encodes img into mem (a WebPMemoryWriter the caller clears). */
static lumen_status webp_encode(const lumen_io_dst *dst, const lumen_image *img,
                                WebPMemoryWriter *mem)
{
    const size_t row = lumen_io_row_bytes(img);
    unsigned char *packed = malloc(row * (size_t)img->h);
    if (!packed) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", dst->path);
    for (int64_t y = 0; y < img->h; y++)
        lumen_io_pack_row(img, y, packed + (size_t)y * row);
    WebPConfig cfg;
    WebPPicture pic;
    const int q = dst->opt->quality ? dst->opt->quality : WEBP_DEFAULT_QUALITY;
    lumen_status s = LUMEN_OK;
    if (!WebPConfigInit(&cfg) || !WebPPictureInit(&pic)) {
        free(packed);
        return lumen_set_error(LUMEN_ERR_INTERNAL, "%s: libwebp version mismatch", dst->path);
    }
    cfg.quality = (float)q;
    cfg.lossless = dst->opt->lossless;
    cfg.exact = dst->opt->lossless; /* lossless keeps RGB under alpha 0 too */
    pic.use_argb = cfg.lossless;
    pic.width = (int)img->w;
    pic.height = (int)img->h;
    pic.writer = WebPMemoryWrite;
    pic.custom_ptr = mem;
    const int imported = img->c == 4 ? WebPPictureImportRGBA(&pic, packed, (int)row)
                                     : WebPPictureImportRGB(&pic, packed, (int)row);
    free(packed);
    if (!imported || !WebPEncode(&cfg, &pic))
        s = lumen_set_error(
            pic.error_code == VP8_ENC_ERROR_OUT_OF_MEMORY ? LUMEN_ERR_OUT_OF_MEMORY : LUMEN_ERR_IO,
            "%s: cannot encode WebP (libwebp error %d)", dst->path, (int)pic.error_code);
    WebPPictureFree(&pic);
    return s;
}

/* The bitstream wrapped with the metadata chunks (VP8X container), into out. */
static lumen_status webp_mux(const lumen_io_dst *dst, const WebPMemoryWriter *mem, WebPData *out)
{
    const lumen_image_metadata *m = dst->meta;
    WebPMux *mux = WebPMuxNew();
    if (!mux) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", dst->path);
    const WebPData image = {mem->mem, mem->size};
    const WebPData icc = {m->icc, m->icc_size}, exif = {m->exif, m->exif_size},
                   xmp = {m->xmp, m->xmp_size};
    WebPMuxError e = WebPMuxSetImage(mux, &image, 0);
    if (e == WEBP_MUX_OK && m->icc && m->icc_size) e = WebPMuxSetChunk(mux, "ICCP", &icc, 0);
    if (e == WEBP_MUX_OK && m->exif && m->exif_size) e = WebPMuxSetChunk(mux, "EXIF", &exif, 0);
    if (e == WEBP_MUX_OK && m->xmp && m->xmp_size) e = WebPMuxSetChunk(mux, "XMP ", &xmp, 0);
    if (e == WEBP_MUX_OK) e = WebPMuxAssemble(mux, out);
    WebPMuxDelete(mux);
    if (e != WEBP_MUX_OK)
        return lumen_set_error(e == WEBP_MUX_MEMORY_ERROR ? LUMEN_ERR_OUT_OF_MEMORY : LUMEN_ERR_IO,
                               "%s: cannot add metadata to WebP (libwebpmux error %d)", dst->path,
                               (int)e);
    return LUMEN_OK;
}

static void put_le24(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
}

/* A lossless bitstream says whether its alpha is used (bit 28 after the signature byte), and
 * readers believe it over the container: set it in the file's VP8L chunk, if any. */
static void set_vp8l_alpha(uint8_t *o, size_t n)
{
    for (size_t off = 12; off + 8 <= n;) {
        const size_t size = (size_t)o[off + 4] | (size_t)o[off + 5] << 8 |
                            (size_t)o[off + 6] << 16 | (size_t)o[off + 7] << 24;
        if (!memcmp(o + off, "VP8L", 4) && size >= 5 && off + 13 <= n) o[off + 12] |= 0x10;
        off += 8 + size + (size & 1);
    }
}

/*
 * libwebp leaves out an alpha channel that is opaque everywhere, so RGBA came back as RGB. The
 * container can still say "this image has alpha" (the VP8X chunk's alpha flag, which readers
 * take as RGBA, alpha 255 where no alpha data is stored): set it, adding a VP8X chunk to a
 * simple-format file, and the lossless bitstream's own alpha bit. *out is a new buffer (free it), or NULL when bytes already say alpha.
 */
static lumen_status webp_keep_alpha(const lumen_io_dst *dst, const uint8_t *bytes, size_t n,
                                    int64_t w, int64_t h, uint8_t **out, size_t *out_n)
{
    *out = NULL;
    WebPBitstreamFeatures f;
    if (WebPGetFeatures(bytes, n, &f) != VP8_STATUS_OK || f.has_alpha || n < 20) return LUMEN_OK;
    const int vp8x = !memcmp(bytes + 12, "VP8X", 4);
    *out_n = vp8x ? n : n + 18;
    if (!(*out = malloc(*out_n)))
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", dst->path);
    uint8_t *o = *out;
    if (vp8x) {
        memcpy(o, bytes, n);
        o[20] |= 0x10; /* the alpha flag */
        set_vp8l_alpha(o, n);
        return LUMEN_OK;
    }
    memcpy(o, bytes, 12);
    const uint32_t riff = (uint32_t)(*out_n - 8);
    o[4] = (uint8_t)riff, o[5] = (uint8_t)(riff >> 8), o[6] = (uint8_t)(riff >> 16);
    o[7] = (uint8_t)(riff >> 24);
    memcpy(o + 12, "VP8X", 4);
    o[16] = 10, o[17] = o[18] = o[19] = 0;
    o[20] = 0x10, o[21] = o[22] = o[23] = 0;
    put_le24(o + 24, (uint32_t)(w - 1));
    put_le24(o + 27, (uint32_t)(h - 1));
    memcpy(o + 30, bytes + 12, n - 12);
    set_vp8l_alpha(o, *out_n);
    return LUMEN_OK;
}

lumen_status lumen_io_write_webp(const lumen_io_dst *dst, const lumen_image *img)
{
    WebPMemoryWriter mem;
    WebPMemoryWriterInit(&mem);
    lumen_status s = webp_encode(dst, img, &mem);
    const lumen_image_metadata *m = dst->meta;
    WebPData muxed = {NULL, 0};
    const bool has_meta =
        (m->icc && m->icc_size) || (m->exif && m->exif_size) || (m->xmp && m->xmp_size);
    if (!s && has_meta) s = webp_mux(dst, &mem, &muxed);
    const uint8_t *bytes = has_meta ? muxed.bytes : mem.mem;
    size_t n = has_meta ? muxed.size : mem.size;
    uint8_t *alpha = NULL;
    if (!s && img->c == 4) s = webp_keep_alpha(dst, bytes, n, img->w, img->h, &alpha, &n);
    if (alpha) bytes = alpha;
    if (!s && fwrite(bytes, 1, n, dst->f) != n)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", dst->path, strerror(errno));
    free(alpha);
    WebPDataClear(&muxed);
    WebPMemoryWriterClear(&mem);
    return s;
}
