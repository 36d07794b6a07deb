/*
 * Image files: dispatch by extension, shared reader/writer helpers and
 * atomic writes (temporary file in the destination's folder, then rename).
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
#include <time.h>
#include <unistd.h>

typedef struct io_format {
    const char *ext; /* with the dot, lower case */
    lumen_status (*read)(const char *path, FILE *f, lumen_image *out);
    lumen_status (*check)(const char *path, const lumen_image *img);
    lumen_status (*write)(const char *path, FILE *f, const lumen_image *img);
} io_format;

static const io_format io_formats[] = {
    {".png", lumen_io_read_png, lumen_io_check_png, lumen_io_write_png},
    {".jpg", lumen_io_read_jpeg, lumen_io_check_jpeg, lumen_io_write_jpeg},
    {".jpeg", lumen_io_read_jpeg, lumen_io_check_jpeg, lumen_io_write_jpeg},
    {".tif", lumen_io_read_tiff, lumen_io_check_tiff, lumen_io_write_tiff},
    {".tiff", lumen_io_read_tiff, lumen_io_check_tiff, lumen_io_write_tiff},
    {".npy", lumen_io_read_npy, lumen_io_check_npy, lumen_io_write_npy},
};

#define IO_SUPPORTED_LIST ".png, .jpg, .jpeg, .tif, .tiff, .npy"

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

/* ---- shared helpers ------------------------------------------------------ */

lumen_status lumen_io_check_size(const char *path, uint64_t h, uint64_t w, uint64_t c)
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
    if (c > LUMEN_IO_MAX_CHANNELS)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: too many channels (%llu; at most %d)",
                               path, (unsigned long long)c, LUMEN_IO_MAX_CHANNELS);
    return LUMEN_OK;
}

lumen_status lumen_io_alloc_image(const char *path, lumen_image *out, lumen_dtype dtype, uint64_t h,
                                  uint64_t w, uint64_t c)
{
    memset(out, 0, sizeof *out);
    lumen_status s = lumen_io_check_size(path, h, w, c);
    if (s) return s;
    const uint64_t es = lumen_dtype_size(dtype);
    const uint64_t bytes = h * w * c * es; /* <= 2^31 * 2^12 * 4 = 2^45 */
    if (bytes > SIZE_MAX)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: image too large for this platform",
                               path);
    void *data = malloc((size_t)bytes);
    if (!data)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory allocating %llu bytes",
                               path, (unsigned long long)bytes);
    *out = lumen_image_nhwc(data, dtype, 1, (int64_t)h, (int64_t)w, (int64_t)c);
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
    case LUMEN_U16: IO_GATHER_ROW(uint16_t); break;
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

/* ---- reading ------------------------------------------------------------- */

lumen_status lumen_read_image(const char *path, lumen_image *out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_image: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_image: path is NULL");
    const io_format *fmt = find_format(path);
    if (!fmt) return unsupported_extension(path);
    return lumen_io_read_file(path, fmt->read, out);
}

lumen_status lumen_io_read_file(const char *path, lumen_io_reader read, lumen_image *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return lumen_set_error(LUMEN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    lumen_status s = LUMEN_OK;
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        s = lumen_set_error(LUMEN_ERR_IO, "%s: is a directory", path);
    else if (S_ISREG(st.st_mode) && st.st_size == 0)
        s = lumen_set_error(LUMEN_ERR_CORRUPT, "%s: empty file", path);
    else
        s = read(path, f, out);
    fclose(f);
    if (s != LUMEN_OK) memset(out, 0, sizeof *out); /* readers already freed their buffers */
    return s;
}

void lumen_image_free(lumen_image *img)
{
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* ---- atomic writing ------------------------------------------------------ */

/* Six characters that differ between processes, threads and attempts. */
static void temp_suffix(char out[7])
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
                 (atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ull);
    /* splitmix64 finaliser: spreads the bits so the suffix looks random. */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (int i = 0; i < 6; i++, z /= 62)
        out[i] = alphabet[z % 62];
    out[6] = '\0';
}

/*
 * Creates "<dir>/.<name>.XXXXXX" next to `path`. Not mkstemp: that creates
 * the file 0600, while open(..., 0666) gives the usual umask-based mode.
 * An existing destination's mode is kept.
 */
static lumen_status create_temp(const char *path, char **tmp_out, int *fd_out)
{
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *name = path + dir_len;
    /* Keeps the temp name within NAME_MAX for long destination names. */
    const size_t name_len = strlen(name) > 200 ? 200 : strlen(name);
    const size_t len = dir_len + name_len + 10;
    char *tmp = malloc(len);
    if (!tmp) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);

    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        temp_suffix(suffix);
        snprintf(tmp, len, "%.*s.%.*s.%s", (int)dir_len, path, (int)name_len, name, suffix);
        int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            struct stat st;
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
                (void)fchmod(fd, st.st_mode & 07777); /* best effort */
            *tmp_out = tmp;
            *fd_out = fd;
            return LUMEN_OK;
        }
        if (errno != EEXIST) {
            lumen_status s = lumen_set_error(
                LUMEN_ERR_IO, "%s: cannot create a temporary file in '%.*s': %s", path,
                dir_len ? (int)dir_len : 1, dir_len ? path : ".", strerror(errno));
            free(tmp);
            return s;
        }
    }
    free(tmp);
    return lumen_set_error(LUMEN_ERR_IO, "%s: cannot create a unique temporary file", path);
}

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

lumen_status lumen_write_image(const char *path, const lumen_image *img)
{
    lumen_clear_error();
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "write_image: path is NULL");
    if (!img) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: image is NULL", path);
    lumen_status s = lumen_image_check(img, path);
    if (s) return s;
    if (img->n != 1)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                               "%s: can write only one image at a time (n = %lld)", path,
                               (long long)img->n);
    const io_format *fmt = find_format(path);
    if (!fmt) return unsupported_extension(path);
    /* Refuse unsupported dtype/channels before anything is created on disk. */
    if ((s = fmt->check(path, img))) return s;
    return lumen_io_write_atomic(path, img, fmt->write);
}

lumen_status lumen_io_write_atomic(const char *path, const lumen_image *img, lumen_io_writer write)
{
    lumen_status s;
    char *tmp = NULL;
    int fd = -1;
    if ((s = create_temp(path, &tmp, &fd))) return s;
    FILE *f = fdopen(fd, "w+b");
    if (!f) {
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot open %s: %s", path, tmp, strerror(errno));
        close(fd);
    } else {
        s = finish_stream(path, f, write(path, f, img));
    }
    if (s == LUMEN_OK && rename(tmp, path) != 0)
        s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot replace: %s", path, strerror(errno));
    if (s != LUMEN_OK) unlink(tmp);
    free(tmp);
    return s;
}
