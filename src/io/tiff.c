/*
 * TIFF via libtiff: u8, u16 and f32 (IEEE float), 1..4 channels. Reads
 * strips of interleaved (contiguous) or separate planes, writes contiguous
 * uncompressed strips. Metadata: ICC profile, XMP packet and the Orientation
 * tag (EXIF lives in a private sub-directory that is not carried). libtiff works on our FILE*
 * through client callbacks so that io.c owns the stream (temp file, flush, fsync, rename).
 *
 * libtiff reports errors through process-wide handlers; ours store the
 * first message of the current call in a thread-local buffer, so nothing
 * reaches stderr and concurrent calls on other threads do not mix.
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <tiffio.h>

static _Thread_local char tiff_msg[256];
static _Thread_local const char *tiff_path; /* the file of the current call, for messages */
static _Thread_local int tiff_write_errno;  /* errno of the first failed write */

/* libtiff passes the file name as `module` for most errors; it is already in our prefix. */
static void on_tiff_error(const char *module, const char *fmt, va_list ap)
{
    if (tiff_msg[0]) return; /* the first error is the cause, later ones are fallout */
    int n = 0;
    if (module && (!tiff_path || strcmp(module, tiff_path) != 0))
        n = snprintf(tiff_msg, sizeof tiff_msg, "%s: ", module);
    if (n < 0 || (size_t)n >= sizeof tiff_msg) n = 0;
    vsnprintf(tiff_msg + n, sizeof tiff_msg - (size_t)n, fmt, ap);
    /* Some messages embed "<path>: " too; our prefix names the file already. */
    const size_t plen = tiff_path ? strlen(tiff_path) : 0;
    char *hit = plen ? strstr(tiff_msg, tiff_path) : NULL;
    if (hit && hit[plen] == ':' && hit[plen + 1] == ' ')
        memmove(hit, hit + plen + 2, strlen(hit + plen + 2) + 1);
}

static void on_tiff_warning(const char *module, const char *fmt, va_list ap)
{
    char buf[256];
    vsnprintf(buf, sizeof buf, fmt, ap);
    lumen_log(LUMEN_LOG_DEBUG, "libtiff warning: %s: %s", module ? module : "", buf);
}

static pthread_once_t tiff_handlers_once = PTHREAD_ONCE_INIT;

static void install_tiff_handlers(void)
{
    TIFFSetErrorHandler(on_tiff_error);
    TIFFSetWarningHandler(on_tiff_warning);
}

/* ---- FILE* client callbacks ---------------------------------------------- */

static tmsize_t tiff_read_proc(thandle_t h, void *buf, tmsize_t n)
{
    return (tmsize_t)fread(buf, 1, (size_t)n, (FILE *)h);
}

static tmsize_t tiff_write_proc(thandle_t h, void *buf, tmsize_t n)
{
    size_t done = fwrite(buf, 1, (size_t)n, (FILE *)h);
    if (done != (size_t)n && !tiff_write_errno) tiff_write_errno = errno ? errno : EIO;
    return (tmsize_t)done;
}

static toff_t tiff_seek_proc(thandle_t h, toff_t off, int whence)
{
    if (off > (toff_t)INT64_MAX || fseeko((FILE *)h, (off_t)off, whence) != 0) return (toff_t)-1;
    return (toff_t)ftello((FILE *)h);
}

static int tiff_close_proc(thandle_t h)
{
    (void)h; /* io.c closes the stream */
    return 0;
}

/* Seeks to the end rather than fstat: a write stream may hold unflushed bytes. */
static toff_t tiff_size_proc(thandle_t h)
{
    FILE *f = h;
    const off_t pos = ftello(f);
    if (pos < 0 || fseeko(f, 0, SEEK_END) != 0) return 0;
    const off_t end = ftello(f);
    fseeko(f, pos, SEEK_SET);
    return end < 0 ? 0 : (toff_t)end;
}

static int tiff_map_proc(thandle_t h, void **base, toff_t *size)
{
    (void)h, (void)base, (void)size;
    return 0; /* no memory mapping: libtiff falls back to reads */
}

static void tiff_unmap_proc(thandle_t h, void *base, toff_t size)
{
    (void)h, (void)base, (void)size;
}

static TIFF *tiff_open(const char *path, FILE *f, const char *mode)
{
    pthread_once(&tiff_handlers_once, install_tiff_handlers);
    tiff_msg[0] = '\0';
    tiff_path = path;
    tiff_write_errno = 0;
    return TIFFClientOpen(path, mode, (thandle_t)f, tiff_read_proc, tiff_write_proc, tiff_seek_proc,
                          tiff_close_proc, tiff_size_proc, tiff_map_proc, tiff_unmap_proc);
}

/* "<path>: <what>: <libtiff's message>", or an I/O error if the stream failed. */
static lumen_status tiff_failure(const char *path, FILE *f, lumen_status s, const char *what)
{
    if (tiff_write_errno)
        return lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path,
                               strerror(tiff_write_errno));
    if (ferror(f)) return lumen_set_error(LUMEN_ERR_IO, "%s: read error", path);
    if (tiff_msg[0]) return lumen_set_error(s, "%s: %s: %s", path, what, tiff_msg);
    return lumen_set_error(s, "%s: %s", path, what);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct tiff_layout {
    uint32_t w, h;
    uint16_t spp, bps, format, planar, photometric, compression;
} tiff_layout;

static lumen_status tiff_get_layout(const char *path, TIFF *tif, tiff_layout *L)
{
    memset(L, 0, sizeof *L);
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &L->w) ||
        !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &L->h))
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: TIFF has no image size", path);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &L->spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &L->bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &L->format);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &L->planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &L->compression);
    if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &L->photometric))
        L->photometric = L->spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
    return LUMEN_OK;
}

static lumen_status tiff_dtype(const char *path, const tiff_layout *L, lumen_dtype *dtype)
{
    const bool is_uint = L->format == SAMPLEFORMAT_UINT || L->format == SAMPLEFORMAT_VOID;
    if (is_uint && L->bps == 8)
        *dtype = LUMEN_U8;
    else if (is_uint && L->bps == 16)
        *dtype = LUMEN_U16;
    else if (L->format == SAMPLEFORMAT_IEEEFP && L->bps == 32)
        *dtype = LUMEN_F32;
    else
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: unsupported TIFF samples: %u-bit %s (expected 8/16-bit "
                               "unsigned or 32-bit float)",
                               path, (unsigned)L->bps,
                               L->format == SAMPLEFORMAT_INT      ? "signed integer"
                               : L->format == SAMPLEFORMAT_IEEEFP ? "float"
                               : is_uint                          ? "unsigned integer"
                                                                  : "complex");
    return LUMEN_OK;
}

/* Colour models that map to gray/RGB samples as stored (or decoded by libtiff). */
static lumen_status tiff_check_photometric(const char *path, TIFF *tif, const tiff_layout *L,
                                           lumen_dtype dtype)
{
    switch (L->photometric) {
    case PHOTOMETRIC_MINISBLACK:
    case PHOTOMETRIC_RGB: return LUMEN_OK;
    case PHOTOMETRIC_MINISWHITE:
        if (dtype == LUMEN_F32) break;
        return LUMEN_OK; /* inverted after reading */
    case PHOTOMETRIC_YCBCR:
        /* JPEG-in-TIFF: let the codec convert to RGB; other YCbCr is subsampled. */
        if (L->compression == COMPRESSION_JPEG && dtype == LUMEN_U8) {
            TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
            return LUMEN_OK;
        }
        break;
    default: break;
    }
    static const char *names[] = {"min-is-white", "min-is-black", "RGB",   "palette", "mask",
                                  "CMYK",         "other",        "other", "CIELab"};
    const char *name = L->photometric < sizeof names / sizeof names[0] ? names[L->photometric]
                       : L->photometric == PHOTOMETRIC_YCBCR           ? "YCbCr"
                                                                       : "other";
    return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                           "%s: unsupported TIFF colour model %s (photometric %u) for %s samples",
                           path, name, (unsigned)L->photometric, lumen_dtype_name(dtype));
}

/* Scatters one plane's row (w samples) into channel `ch` of an interleaved row. */
static void scatter_plane_row(const void *src, void *dst, size_t w, size_t c, size_t ch, size_t es)
{
    const unsigned char *s = src;
    unsigned char *d = (unsigned char *)dst + ch * es;
    for (size_t x = 0; x < w; x++, s += es, d += c * es)
        memcpy(d, s, es);
}

static lumen_status tiff_read_rows(const char *path, FILE *f, TIFF *tif, const tiff_layout *L,
                                   lumen_image *out)
{
    const size_t row_bytes = lumen_io_row_bytes(out);
    const size_t es = lumen_dtype_size(out->dtype);
    unsigned char *data = out->data;
    if (L->planar != PLANARCONFIG_SEPARATE) {
        if ((uint64_t)TIFFScanlineSize64(tif) != row_bytes)
            return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                                   "%s: unsupported TIFF layout (scanline of %llu bytes, "
                                   "expected %zu)",
                                   path, (unsigned long long)TIFFScanlineSize64(tif), row_bytes);
        for (uint32_t y = 0; y < L->h; y++)
            if (TIFFReadScanline(tif, data + (size_t)y * row_bytes, y, 0) < 0)
                return tiff_failure(path, f, LUMEN_ERR_CORRUPT, "corrupt or truncated TIFF");
        return LUMEN_OK;
    }
    /* Separate planes: all rows of sample 0, then sample 1, ... (the strip order). */
    const size_t plane_row = (size_t)L->w * es;
    if ((uint64_t)TIFFScanlineSize64(tif) != plane_row)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: unsupported planar TIFF layout", path);
    void *tmp = malloc(plane_row);
    if (!tmp) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    lumen_status s = LUMEN_OK;
    for (uint16_t ch = 0; ch < L->spp && !s; ch++)
        for (uint32_t y = 0; y < L->h && !s; y++) {
            if (TIFFReadScanline(tif, tmp, y, ch) < 0)
                s = tiff_failure(path, f, LUMEN_ERR_CORRUPT, "corrupt or truncated TIFF");
            else
                scatter_plane_row(tmp, data + (size_t)y * row_bytes, L->w, L->spp, ch, es);
        }
    free(tmp);
    return s;
}

/* Min-is-white stores 0 as white; images here are min-is-black. */
static void invert_samples(lumen_image *img)
{
    const size_t n = (size_t)(img->h * img->w * img->c);
    if (img->dtype == LUMEN_U8) {
        uint8_t *p = img->data;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(UINT8_MAX - p[i]);
    } else {
        uint16_t *p = img->data;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint16_t)(UINT16_MAX - p[i]);
    }
}

/* ICC, XMP and orientation; malformed ones are skipped (libtiff validates the counts). */
static lumen_status tiff_metadata(const lumen_io_src *src, TIFF *tif)
{
    lumen_image_metadata *m = src->meta;
    uint32_t n = 0;
    void *data = NULL;
    uint16_t orientation = 0;
    lumen_status s = LUMEN_OK;
    if (TIFFGetField(tif, TIFFTAG_ICCPROFILE, &n, &data) && data)
        s = lumen_io_store_blob(src->path, &m->icc, &m->icc_size, data, n);
    if (!s && TIFFGetField(tif, TIFFTAG_XMLPACKET, &n, &data) && data)
        s = lumen_io_store_blob(src->path, &m->xmp, &m->xmp_size, data, n);
    if (TIFFGetField(tif, TIFFTAG_ORIENTATION, &orientation) && orientation >= 1 &&
        orientation <= 8)
        m->orientation = orientation;
    return s;
}

/* Uncompressed strips must fit in the file; compressed ones are bounded by the pixel limit. */
static lumen_status tiff_check_file(const lumen_io_src *src, const tiff_layout *L)
{
    const uint64_t raw = (uint64_t)L->w * L->h * L->spp * (L->bps / 8);
    if (L->compression == COMPRESSION_NONE) return lumen_io_check_file_holds(src, raw, 1, "TIFF");
    if (L->compression == COMPRESSION_ADOBE_DEFLATE || L->compression == COMPRESSION_DEFLATE)
        return lumen_io_check_file_holds(src, raw, LUMEN_IO_DEFLATE_RATIO, "TIFF");
    return LUMEN_OK;
}

static lumen_status tiff_decode(const lumen_io_src *src, TIFF *tif, lumen_image *out)
{
    const char *path = src->path;
    FILE *f = src->f;
    tiff_layout L;
    lumen_dtype dtype = LUMEN_U8;
    lumen_status s = tiff_get_layout(path, tif, &L);
    if (s || (s = tiff_dtype(path, &L, &dtype))) return s;
    if (L.spp < 1 || L.spp > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: TIFF with %u samples per pixel (supported: 1 to 4)", path,
                               (unsigned)L.spp);
    if (TIFFIsTiled(tif))
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: tiled TIFF is not supported", path);
    if ((s = tiff_check_photometric(path, tif, &L, dtype))) return s;
    if ((s = lumen_io_check_dims(src, path, L.h, L.w, L.spp)) || (s = tiff_check_file(src, &L)) ||
        (s = tiff_metadata(src, tif)))
        return s;
    if ((s = lumen_io_alloc_image(src, out, dtype, L.h, L.w, L.spp))) return s;
    if ((s = tiff_read_rows(path, f, tif, &L, out))) return s;
    if (L.photometric == PHOTOMETRIC_MINISWHITE) invert_samples(out);
    return LUMEN_OK;
}

/* Classic ("II*\0", "MM\0*") or BigTIFF ('+' for '*'), checked here so junk gets a plain reason. */
static lumen_status check_magic(const char *path, FILE *f)
{
    unsigned char m[4];
    const size_t got = fread(m, 1, sizeof m, f);
    const bool ok = got >= 1 && (m[0] == 'I' || m[0] == 'M') && (got < 2 || m[1] == m[0]) &&
                    (got < 4 || (m[0] == 'I' ? m[3] == 0 && (m[2] == 42 || m[2] == 43)
                                             : m[2] == 0 && (m[3] == 42 || m[3] == 43)));
    if (!ok) return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: not a TIFF file (bad magic)", path);
    if (got < sizeof m) return lumen_io_short_read(path, f);
    if (fseeko(f, 0, SEEK_SET) != 0)
        return lumen_set_error(LUMEN_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
    return LUMEN_OK;
}

lumen_status lumen_io_read_tiff(const lumen_io_src *src, lumen_image *out)
{
    const char *path = src->path;
    FILE *f = src->f;
    lumen_status s = check_magic(path, f);
    if (s) return s;
    TIFF *tif = tiff_open(path, f, "rm");
    if (!tif) return tiff_failure(path, f, LUMEN_ERR_CORRUPT, "corrupt or truncated TIFF");
    s = tiff_decode(src, tif, out);
    TIFFClose(tif);
    tiff_path = NULL;
    if (s != LUMEN_OK) {
        free(out->data);
        memset(out, 0, sizeof *out);
    }
    return s;
}

/* ---- writing ------------------------------------------------------------- */

lumen_status lumen_io_check_tiff(const char *path, const lumen_image *img,
                                 const lumen_write_options *opt)
{
    (void)opt;
    if (img->dtype == LUMEN_F16 || img->dtype == LUMEN_BF16)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: TIFF output holds u8, u16 or f32 pixels, the image is %s; "
                               "write .npy or .exr instead, or convert to f32",
                               path, lumen_dtype_name(img->dtype));
    if (img->c < 1 || img->c > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: TIFF output holds 1 to 4 channels, the image has %lld", path,
                               (long long)img->c);
    if (img->w > UINT32_MAX || img->h > UINT32_MAX)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: image too large for TIFF", path);
    return LUMEN_OK;
}

/* ICC, XMP and orientation from the metadata (EXIF is not written: see the header). */
static bool tiff_set_metadata(TIFF *tif, const lumen_image_metadata *m)
{
    return (!m->icc || !m->icc_size || m->icc_size > UINT32_MAX ||
            TIFFSetField(tif, TIFFTAG_ICCPROFILE, (uint32_t)m->icc_size, m->icc)) &&
           (!m->xmp || !m->xmp_size || m->xmp_size > UINT32_MAX ||
            TIFFSetField(tif, TIFFTAG_XMLPACKET, (uint32_t)m->xmp_size, m->xmp)) &&
           (m->orientation < 2 || m->orientation > 8 ||
            TIFFSetField(tif, TIFFTAG_ORIENTATION, m->orientation));
}

static lumen_status tiff_set_tags(const char *path, FILE *f, TIFF *tif, const lumen_image *img,
                                  const lumen_image_metadata *meta)
{
    static const uint16_t alpha[1] = {EXTRASAMPLE_UNASSALPHA};
    const size_t es = lumen_dtype_size(img->dtype);
    const int ok =
        TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)img->w) &&
        TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)img->h) &&
        TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (int)img->c) &&
        TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (int)(8 * es)) &&
        TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT,
                     img->dtype == LUMEN_F32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
        TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
        TIFFSetField(tif, TIFFTAG_PHOTOMETRIC,
                     img->c >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
        TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE) &&
        /* c = 2 is gray + alpha, c = 4 is RGB + alpha (as in PNG). */
        (img->c % 2 == 1 || TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, alpha)) &&
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tif, 0)) &&
        tiff_set_metadata(tif, meta);
    return ok ? LUMEN_OK : tiff_failure(path, f, LUMEN_ERR_INTERNAL, "cannot set TIFF tags");
}

lumen_status lumen_io_write_tiff(const lumen_io_dst *dst, const lumen_image *img)
{
    const char *path = dst->path;
    FILE *f = dst->f;
    const size_t row_bytes = lumen_io_row_bytes(img);
    /* Classic TIFF offsets are 32-bit; leave room for the directory. */
    const bool big = (uint64_t)row_bytes * (uint64_t)img->h > ((uint64_t)3 << 30);
    void *row = malloc(row_bytes);
    if (!row) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    TIFF *tif = tiff_open(path, f, big ? "w8" : "w");
    lumen_status s = LUMEN_OK;
    if (!tif)
        s = tiff_failure(path, f, LUMEN_ERR_IO, "cannot start TIFF");
    else
        s = tiff_set_tags(path, f, tif, img, dst->meta);
    for (int64_t y = 0; s == LUMEN_OK && y < img->h; y++) {
        lumen_io_pack_row(img, y, row);
        if (TIFFWriteScanline(tif, row, (uint32_t)y, 0) < 0)
            s = tiff_failure(path, f, LUMEN_ERR_IO, "cannot write TIFF");
    }
    /* TIFFClose cannot report failure; flushing first writes the directory. */
    if (s == LUMEN_OK && !TIFFFlush(tif))
        s = tiff_failure(path, f, LUMEN_ERR_IO, "cannot write TIFF");
    if (tif) TIFFClose(tif);
    if (s == LUMEN_OK && tiff_write_errno)
        s = tiff_failure(path, f, LUMEN_ERR_IO, "cannot write TIFF");
    tiff_path = NULL;
    free(row);
    return s;
}
