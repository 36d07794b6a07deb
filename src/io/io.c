/*
 * Image files: dispatch by extension, limits, orientation, metadata, shared
 * reader/writer helpers and atomic writes (a temporary file in the
 * destination's folder, then rename; tempfile.c). docs/io.md is the user's view.
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct io_format {
    const char *ext; /* with the dot, lower case */
    lumen_io_reader read;
    lumen_status (*check)(const char *path, const lumen_image *img, const lumen_write_options *opt);
    lumen_io_writer write;
} io_format;

#define IO_FORMAT(ext, fmt)                                                                        \
    {                                                                                              \
        ext, lumen_io_read_##fmt, lumen_io_check_##fmt, lumen_io_write_##fmt                       \
    }
static const io_format io_formats[] = {
    IO_FORMAT(".png", png),  IO_FORMAT(".jpg", jpeg),  IO_FORMAT(".jpeg", jpeg),
    IO_FORMAT(".tif", tiff), IO_FORMAT(".tiff", tiff), IO_FORMAT(".webp", webp),
    IO_FORMAT(".exr", exr),  IO_FORMAT(".npy", npy),
};
#undef IO_FORMAT

#define IO_SUPPORTED_LIST ".png, .jpg, .jpeg, .tif, .tiff, .webp, .exr, .npy"

/* The extension is taken from the last path component only ("a.d/b" has none). */
static const io_format *find_format(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    const char *dot = strrchr(name, '.');
    if (!dot) return NULL;
    for (size_t i = 0; i < sizeof io_formats / sizeof io_formats[0]; i++)
        if (strcasecmp(dot, io_formats[i].ext) == 0) return &io_formats[i];
    return NULL;
}

static lumen_status unsupported_extension(const char *path)
{
    return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                           "%s: unsupported file extension (supported: " IO_SUPPORTED_LIST ")",
                           path);
}

/* ---- the pixel limit ----------------------------------------------------- */

static atomic_bool limit_set;
static _Atomic uint64_t limit_value;

void lumen_set_max_image_pixels(uint64_t max_pixels)
{
    atomic_store(&limit_value, max_pixels);
    atomic_store(&limit_set, true);
}

/* $LUMEN_MAX_PIXELS as a decimal count; false if malformed. Unset: the default. */
static bool env_limit(uint64_t *out)
{
    const char *v = getenv("LUMEN_MAX_PIXELS");
    *out = LUMEN_DEFAULT_MAX_IMAGE_PIXELS;
    if (!v) return true;
    uint64_t x = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (x > (UINT64_MAX - 9) / 10) return false;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (p == v || *p) return false;
    *out = x;
    return true;
}

uint64_t lumen_get_max_image_pixels(void)
{
    if (atomic_load(&limit_set)) return atomic_load(&limit_value);
    uint64_t v;
    return env_limit(&v) ? v : LUMEN_DEFAULT_MAX_IMAGE_PIXELS;
}

/* The limit for one read: the option, else the process-wide one (0 in the result: none). */
static lumen_status read_limit(const char *path, const lumen_read_options *opt, uint64_t *out)
{
    if (opt && opt->max_pixels) {
        *out = opt->max_pixels == UINT64_MAX ? 0 : opt->max_pixels;
        return LUMEN_OK;
    }
    if (atomic_load(&limit_set)) {
        *out = atomic_load(&limit_value);
        return LUMEN_OK;
    }
    if (!env_limit(out))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: LUMEN_MAX_PIXELS='%s' is not a pixel count (a decimal "
                               "integer; 0 = no limit)",
                               path, getenv("LUMEN_MAX_PIXELS"));
    return LUMEN_OK;
}

/* ---- shared helpers ------------------------------------------------------ */

lumen_status lumen_io_check_dims(const lumen_io_src *src, const char *path, uint64_t h, uint64_t w,
                                 uint64_t c)
{
    if (h == 0 || w == 0 || c == 0)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: image has zero size (%llu x %llu x %llu)",
                               path, (unsigned long long)w, (unsigned long long)h,
                               (unsigned long long)c);
    /* Checked one factor at a time so the products callers form cannot overflow. */
    if (h > LUMEN_IO_MAX_PIXELS || w > LUMEN_IO_MAX_PIXELS / h)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: image too large (%llu x %llu pixels; the limit is 2^31)", path,
                               (unsigned long long)w, (unsigned long long)h);
    const uint64_t limit = src ? src->max_pixels : 0;
    if (limit && h * w > limit)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: image too large: %llu x %llu = %llu pixels, more than the "
                               "limit of %llu (a guard against decompression bombs: raise it "
                               "with LUMEN_MAX_PIXELS, lumen_set_max_image_pixels or the "
                               "max_pixels read option; 0 = no limit)",
                               path, (unsigned long long)w, (unsigned long long)h,
                               (unsigned long long)(h * w), (unsigned long long)limit);
    if (c > LUMEN_IO_MAX_CHANNELS)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: too many channels (%llu; at most %d)",
                               path, (unsigned long long)c, LUMEN_IO_MAX_CHANNELS);
    return LUMEN_OK;
}

lumen_status lumen_io_check_file_holds(const lumen_io_src *src, uint64_t raw_bytes, uint64_t ratio,
                                       const char *what)
{
    /* src->size <= 2^63 and ratio ~2^10: the product cannot overflow for real files. */
    const uint64_t most = src->size > UINT64_MAX / ratio ? UINT64_MAX : src->size * ratio;
    if (raw_bytes > most)
        return lumen_set_error(LUMEN_ERR_CORRUPT,
                               "%s: corrupt %s: the header declares %llu bytes of pixel data, "
                               "more than a %llu-byte file can hold",
                               src->path, what, (unsigned long long)raw_bytes,
                               (unsigned long long)src->size);
    return LUMEN_OK;
}

lumen_status lumen_io_alloc_image(const lumen_io_src *src, lumen_image *out, lumen_dtype dtype,
                                  uint64_t h, uint64_t w, uint64_t c)
{
    memset(out, 0, sizeof *out);
    lumen_status s = lumen_io_check_dims(src, src->path, h, w, c);
    if (s) return s;
    const uint64_t es = lumen_dtype_size(dtype);
    const uint64_t bytes = h * w * c * es; /* <= 2^31 * 2^12 * 4 = 2^45 */
    if (bytes > SIZE_MAX)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: image too large for this platform",
                               src->path);
    void *data = malloc((size_t)bytes);
    if (!data)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory allocating %llu bytes",
                               src->path, (unsigned long long)bytes);
    *out = lumen_image_nhwc(data, dtype, 1, (int64_t)h, (int64_t)w, (int64_t)c);
    return LUMEN_OK;
}

lumen_status lumen_io_store_blob(const char *path, unsigned char **dst, size_t *dst_size,
                                 const void *data, size_t n)
{
    free(*dst);
    *dst = NULL;
    *dst_size = 0;
    if (!data || n == 0) return LUMEN_OK;
    if (!(*dst = malloc(n)))
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory for metadata", path);
    memcpy(*dst, data, n);
    *dst_size = n;
    return LUMEN_OK;
}

lumen_status lumen_io_slurp(const lumen_io_src *src, unsigned char **out)
{
    *out = NULL;
    if (src->size > SIZE_MAX)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: file too large", src->path);
    unsigned char *buf = malloc((size_t)src->size);
    if (!buf) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", src->path);
    if (fread(buf, 1, (size_t)src->size, src->f) != (size_t)src->size) {
        free(buf);
        return lumen_io_short_read(src->path, src->f);
    }
    *out = buf;
    return LUMEN_OK;
}

size_t lumen_io_row_bytes(const lumen_image *img)
{
    return (size_t)img->w * (size_t)img->c * lumen_dtype_size(img->dtype);
}

/* Gathers one row element by element; only the element size matters here. */
#define IO_GATHER_ROW(T)                                                                           \
    do {                                                                                           \
        const T *src = (const T *)base;                                                            \
        T *dst = (T *)row;                                                                         \
        for (int64_t x = 0; x < img->w; x++)                                                       \
            for (int64_t ch = 0; ch < img->c; ch++)                                                \
                *dst++ = src[x * img->stride_w + ch * img->stride_c];                              \
    } while (0)

void lumen_io_pack_row(const lumen_image *img, int64_t y, void *row)
{
    const size_t es = lumen_dtype_size(img->dtype);
    const char *base = (const char *)img->data + y * img->stride_h * (int64_t)es;
    /* Interleaved rows (the common case) are a single copy. */
    if ((img->c == 1 || img->stride_c == 1) && img->stride_w == img->c) {
        memcpy(row, base, lumen_io_row_bytes(img));
        return;
    }
    switch (img->dtype) {
    case LUMEN_U8: IO_GATHER_ROW(uint8_t); break;
    case LUMEN_U16:
    case LUMEN_F16: /* halves are moved as their bits */
    case LUMEN_BF16: IO_GATHER_ROW(uint16_t); break;
    case LUMEN_F32: {
        /* memcpy, not a float copy: keeps NaN payloads bit-exact on any FPU. */
        unsigned char *dst = row;
        for (int64_t x = 0; x < img->w; x++)
            for (int64_t ch = 0; ch < img->c; ch++, dst += 4)
                memcpy(dst, base + (x * img->stride_w + ch * img->stride_c) * 4, 4);
        break;
    }
    }
}

bool lumen_io_host_is_le(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

void lumen_io_swap_bytes(void *data, size_t n, size_t size)
{
    unsigned char *p = data;
    for (size_t i = 0; i < n; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

lumen_status lumen_io_short_read(const char *path, FILE *f)
{
    if (ferror(f))
        return lumen_set_error(LUMEN_ERR_IO, "%s: read error: %s", path, strerror(errno));
    return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: truncated file", path);
}

/* ---- metadata ------------------------------------------------------------ */

void lumen_image_metadata_free(lumen_image_metadata *meta)
{
    if (!meta) return;
    free(meta->icc);
    free(meta->exif);
    free(meta->xmp);
    memset(meta, 0, sizeof *meta);
}

lumen_read_options lumen_read_options_default(void)
{
    return (lumen_read_options){.ignore_orientation = 0, .max_pixels = 0};
}

lumen_write_options lumen_write_options_default(void)
{
    return (lumen_write_options){.quality = 0, .lossless = 0, .half = 0};
}

/* Applies the orientation the reader found (unless asked not to) and records it as 1. */
static lumen_status orient(const char *path, const lumen_read_options *opt, lumen_image *img,
                           lumen_image_metadata *meta)
{
    if ((opt && opt->ignore_orientation) || meta->orientation < 2) return LUMEN_OK;
    lumen_status s = lumen_io_apply_orientation(path, img, meta->orientation);
    if (s) return s;
    meta->orientation = 1;
    lumen_io_exif_set_orientation(meta->exif, meta->exif_size, 1);
    return LUMEN_OK;
}

/* ---- reading ------------------------------------------------------------- */

/* Runs a reader on src, then orientation; hands meta to the caller or frees it. */
static lumen_status read_source(lumen_io_src *src, lumen_io_reader read,
                                const lumen_read_options *opt, lumen_image *out,
                                lumen_image_metadata *user_meta)
{
    lumen_image_metadata meta = {0};
    src->meta = &meta;
    lumen_status s = read(src, out);
    if (s == LUMEN_OK && (s = orient(src->path, opt, out, &meta))) lumen_image_free(out);
    if (s != LUMEN_OK) memset(out, 0, sizeof *out); /* readers already freed their buffers */
    if (s == LUMEN_OK && user_meta)
        *user_meta = meta;
    else
        lumen_image_metadata_free(&meta);
    return s;
}

/* A pipe or device (e.g. /dev/stdin) has no size: read it whole, then decode from memory. */
static lumen_status read_stream(const char *path, FILE *f, unsigned char **buf, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *bigger = cap <= SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
        if (!bigger) free(b);
        b = bigger;
        cap *= 2;
    }
    if (!b) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (ferror(f)) {
        free(b);
        return lumen_set_error(LUMEN_ERR_IO, "%s: read error: %s", path, strerror(errno));
    }
    *buf = b;
    *len = n;
    return LUMEN_OK;
}

static lumen_status read_fifo(const char *path, FILE *f, const io_format *fmt,
                              const lumen_read_options *opt, lumen_image *out,
                              lumen_image_metadata *meta)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    lumen_status s = read_stream(path, f, &buf, &len);
    if (s) return s;
    s = lumen_io_decode_memory(fmt->ext, buf, len, path, opt, out, meta);
    free(buf);
    return s;
}

lumen_status lumen_read_image_ex(const char *path, const lumen_read_options *opt, lumen_image *out,
                                 lumen_image_metadata *meta)
{
    lumen_clear_error();
    if (meta) memset(meta, 0, sizeof *meta);
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_image: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_image: path is NULL");
    const io_format *fmt = find_format(path);
    if (!fmt) return unsupported_extension(path);
    uint64_t limit;
    lumen_status s = read_limit(path, opt, &limit);
    if (s) return s;
    FILE *f = fopen(path, "rb");
    if (!f) return lumen_set_error(LUMEN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        s = lumen_set_error(LUMEN_ERR_IO, "%s: is a directory", path);
    else if (!S_ISREG(st.st_mode))
        s = read_fifo(path, f, fmt, opt, out, meta);
    else if (st.st_size == 0)
        s = lumen_set_error(LUMEN_ERR_CORRUPT, "%s: empty file", path);
    else {
        lumen_io_src src = {
            .path = path, .f = f, .size = (uint64_t)st.st_size, .max_pixels = limit};
        s = read_source(&src, fmt->read, opt, out, meta);
    }
    fclose(f);
    return s;
}

lumen_status lumen_read_image(const char *path, lumen_image *out)
{
    return lumen_read_image_ex(path, NULL, out, NULL);
}

lumen_status lumen_io_read_file(const char *path, lumen_io_reader read, uint64_t max_pixels,
                                lumen_image *out, lumen_image_metadata *meta)
{
    FILE *f = fopen(path, "rb");
    if (!f) return lumen_set_error(LUMEN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    lumen_status s = LUMEN_OK;
    struct stat st;
    lumen_image_metadata unused = {0};
    if (fstat(fileno(f), &st) != 0)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        s = lumen_set_error(LUMEN_ERR_IO, "%s: is a directory", path);
    else if (!S_ISREG(st.st_mode))
        s = lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: not a regular file", path);
    else if (st.st_size == 0)
        s = lumen_set_error(LUMEN_ERR_CORRUPT, "%s: empty file", path);
    else {
        lumen_io_src src = {.path = path,
                            .f = f,
                            .size = (uint64_t)st.st_size,
                            .max_pixels = max_pixels,
                            .meta = meta ? meta : &unused};
        s = read(&src, out);
    }
    fclose(f);
    lumen_image_metadata_free(&unused);
    if (s != LUMEN_OK) {
        memset(out, 0, sizeof *out);
        lumen_image_metadata_free(meta);
    }
    return s;
}

lumen_status lumen_io_decode_memory(const char *ext, const void *buf, size_t len, const char *name,
                                    const lumen_read_options *opt, lumen_image *out,
                                    lumen_image_metadata *meta)
{
    if (meta) memset(meta, 0, sizeof *meta);
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_image: out is NULL");
    memset(out, 0, sizeof *out);
    const char *path = name ? name : "<memory>";
    /* "png", ".png" and "x.png" all name PNG. */
    char probe[32];
    snprintf(probe, sizeof probe, "x%s%s", ext && ext[0] != '.' && !strchr(ext, '.') ? "." : "",
             ext ? ext : "");
    const io_format *fmt = ext ? find_format(probe) : NULL;
    if (!fmt) return unsupported_extension(ext ? ext : "(null format)");
    if (len == 0 || !buf) return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: empty file", path);
    uint64_t limit;
    lumen_status s = read_limit(path, opt, &limit);
    if (s) return s;
    FILE *f = fmemopen((void *)buf, len, "rb");
    if (!f) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: fmemopen failed", path);
    lumen_io_src src = {.path = path, .f = f, .size = len, .max_pixels = limit};
    s = read_source(&src, fmt->read, opt, out, meta);
    fclose(f);
    return s;
}

lumen_status lumen_read_image_memory(const void *buf, size_t len, const char *format,
                                     const lumen_read_options *opt, lumen_image *out,
                                     lumen_image_metadata *meta)
{
    lumen_clear_error();
    return lumen_io_decode_memory(format, buf, len, NULL, opt, out, meta);
}

void lumen_image_free(lumen_image *img)
{
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* ---- writing ------------------------------------------------------------- */

/* Flushes and closes the stream; fsync so the rename never exposes a hollow file. */
static lumen_status finish_stream(const char *path, FILE *f, lumen_status s)
{
    if (s == LUMEN_OK && (fflush(f) != 0 || ferror(f)))
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    /* Some file systems cannot sync; that is not a failed write. */
    if (s == LUMEN_OK && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS &&
        errno != ENOTSUP)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (fclose(f) != 0 && s == LUMEN_OK)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    return s;
}

static lumen_status check_options(const char *path, const lumen_write_options *opt)
{
    if (opt->quality < 0 || opt->quality > 100)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: quality %d out of range (1..100, 0 = the format's default)",
                               path, opt->quality);
    if (opt->lossless < 0 || opt->lossless > 1 || opt->half < 0 || opt->half > 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: lossless and half are 0 or 1 (got %d and %d)", path,
                               opt->lossless, opt->half);
    return LUMEN_OK;
}

lumen_status lumen_check_write_image(const char *path, lumen_dtype dtype, int64_t channels,
                                     const lumen_write_options *opt)
{
    lumen_clear_error();
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "write_image: path is NULL");
    const lumen_write_options defaults = lumen_write_options_default();
    if (!opt) opt = &defaults;
    lumen_status s = check_options(path, opt);
    if (s) return s;
    const io_format *fmt = find_format(path);
    if (!fmt) return unsupported_extension(path);
    if (lumen_dtype_size(dtype) == 0)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", path,
                               (int)dtype);
    if (channels < 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: %lld channels", path,
                               (long long)channels);
    /* The format checks look at dtype, channels and size only: a 1 x 1 view stands in. */
    const lumen_image probe = lumen_image_nhwc(NULL, dtype, 1, 1, 1, channels);
    return fmt->check(path, &probe, opt);
}

/* The metadata as written: the orientation field folded into a copy of the EXIF block. */
static lumen_status resolve_metadata(const char *path, const lumen_image_metadata *in,
                                     lumen_image_metadata *out, unsigned char **exif_copy)
{
    *exif_copy = NULL;
    *out = in ? *in : (lumen_image_metadata){0};
    const int o = out->orientation;
    if (o < 1 || o > 8 || !out->exif || lumen_io_exif_orientation(out->exif, out->exif_size) == o ||
        lumen_io_exif_orientation(out->exif, out->exif_size) == 0)
        return LUMEN_OK;
    size_t n = 0;
    lumen_status s = lumen_io_store_blob(path, exif_copy, &n, out->exif, out->exif_size);
    if (s) return s;
    lumen_io_exif_set_orientation(*exif_copy, n, o);
    out->exif = *exif_copy;
    return LUMEN_OK;
}

lumen_status lumen_write_image_ex(const char *path, const lumen_image *img,
                                  const lumen_write_options *opt, const lumen_image_metadata *meta)
{
    lumen_clear_error();
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "write_image: path is NULL");
    if (!img) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: image is NULL", path);
    const lumen_write_options defaults = lumen_write_options_default();
    if (!opt) opt = &defaults;
    lumen_status s = lumen_image_check(img, path);
    if (s || (s = check_options(path, opt))) return s;
    if (img->n != 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: can write only one image at a time (n = %lld)", path,
                               (long long)img->n);
    const io_format *fmt = find_format(path);
    if (!fmt) return unsupported_extension(path);
    /* Refuse unsupported dtype/channels before anything is created on disk. */
    if ((s = fmt->check(path, img, opt))) return s;
    lumen_image_metadata m;
    unsigned char *exif_copy;
    if ((s = resolve_metadata(path, meta, &m, &exif_copy))) return s;
    s = lumen_io_write_atomic(path, img, opt, &m, fmt->write);
    free(exif_copy);
    return s;
}

lumen_status lumen_write_image(const char *path, const lumen_image *img)
{
    return lumen_write_image_ex(path, img, NULL, NULL);
}

lumen_status lumen_io_write_atomic(const char *path, const lumen_image *img,
                                   const lumen_write_options *opt, const lumen_image_metadata *meta,
                                   lumen_io_writer write)
{
    const lumen_write_options defaults = lumen_write_options_default();
    const lumen_image_metadata none = {0};
    lumen_status s;
    char *tmp = NULL;
    int fd = -1;
    if ((s = lumen_io_temp_create(path, &tmp, &fd))) return s;
    FILE *f = fdopen(fd, "w+b");
    if (!f) {
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot open %s: %s", path, tmp, strerror(errno));
        close(fd);
    } else {
        const lumen_io_dst dst = {
            .path = path, .f = f, .opt = opt ? opt : &defaults, .meta = meta ? meta : &none};
        s = finish_stream(path, f, write(&dst, img));
    }
    if (s == LUMEN_OK && rename(tmp, path) != 0)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot replace: %s", path, strerror(errno));
    if (s != LUMEN_OK) unlink(tmp);
    lumen_io_temp_release(tmp);
    return s;
}
