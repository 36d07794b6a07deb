/*
 * NumPy .npy files (format 1.0, 2.0, 3.0): reads |u1, <u2, <f4 and <f8
 * (converted to f32), 2-D (H x W) or 3-D (H x W x C), C or Fortran order;
 * writes |u1, <u2, <f4 in C order, format 1.0, header padded so the data
 * starts on a 64-byte boundary as numpy does.
 * The header is a Python dict literal; a small parser accepts what numpy
 * writes ('descr', 'fortran_order', 'shape' in any order, either quote).
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"
#include "semantics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (1u << 20) /* numpy itself refuses > 10000 by default */
#define NPY_MAX_NDIM 32
#define NPY_CHUNK 65536 /* elements converted at a time */

typedef enum { NPY_U1, NPY_U2, NPY_F4, NPY_F8, NPY_F2 } npy_kind;

typedef struct npy_header {
    char descr[32];
    bool has_descr, has_order, has_shape, fortran;
    int ndim;
    uint64_t shape[NPY_MAX_NDIM];
} npy_header;

/* ---- header parsing ------------------------------------------------------ */

static void skip_ws(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

static bool accept(const char **p, char ch)
{
    skip_ws(p);
    if (**p != ch) return false;
    (*p)++;
    return true;
}

/* A quoted string without escapes (numpy never writes any in these fields). */
static bool parse_string(const char **p, char *buf, size_t size)
{
    skip_ws(p);
    const char quote = **p;
    if (quote != '\'' && quote != '"') return false;
    const char *end = strchr(*p + 1, quote);
    if (!end) return false;
    const size_t len = (size_t)(end - (*p + 1));
    snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), *p + 1);
    *p = end + 1;
    return true;
}

static bool parse_bool(const char **p, bool *v)
{
    skip_ws(p);
    if (strncmp(*p, "True", 4) == 0) {
        *v = true;
        *p += 4;
        return true;
    }
    if (strncmp(*p, "False", 5) == 0) {
        *v = false;
        *p += 5;
        return true;
    }
    return false;
}

/* A non-negative integer, optionally with Python 2's 'L' suffix. */
static bool parse_dim(const char **p, uint64_t *v)
{
    skip_ws(p);
    if (**p < '0' || **p > '9') return false;
    uint64_t x = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (x > (UINT64_MAX - 9) / 10) return false;
        x = x * 10 + (uint64_t)(**p - '0');
    }
    if (**p == 'L') (*p)++;
    *v = x;
    return true;
}

/* "()", "(5,)", "(3, 4)", "(3, 4, 2)" with an optional trailing comma. */
static bool parse_shape(const char **p, npy_header *h)
{
    if (!accept(p, '(')) return false;
    h->ndim = 0;
    while (!accept(p, ')')) {
        if (h->ndim == NPY_MAX_NDIM || !parse_dim(p, &h->shape[h->ndim])) return false;
        h->ndim++;
        if (!accept(p, ',')) return accept(p, ')');
    }
    return true;
}

/* Parses one "'key': value" pair; unknown or repeated keys are corrupt. */
static lumen_status parse_item(const char *path, const char **p, npy_header *h)
{
    char key[32];
    if (!parse_string(p, key, sizeof key) || !accept(p, ':'))
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: malformed NPY header", path);
    bool ok;
    if (strcmp(key, "descr") == 0 && !h->has_descr) {
        skip_ws(p);
        if (**p == '[' || **p == '{')
            return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                                   "%s: structured NPY dtypes are not supported", path);
        ok = h->has_descr = parse_string(p, h->descr, sizeof h->descr);
    } else if (strcmp(key, "fortran_order") == 0 && !h->has_order) {
        ok = h->has_order = parse_bool(p, &h->fortran);
    } else if (strcmp(key, "shape") == 0 && !h->has_shape) {
        ok = h->has_shape = parse_shape(p, h);
    } else {
        return lumen_set_error(LUMEN_ERR_CORRUPT,
                               "%s: unexpected or repeated key '%s' in NPY header", path, key);
    }
    if (!ok)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: malformed value for '%s' in NPY header",
                               path, key);
    return LUMEN_OK;
}

static lumen_status parse_header(const char *path, const char *text, npy_header *h)
{
    memset(h, 0, sizeof *h);
    const char *p = text;
    if (!accept(&p, '{'))
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: malformed NPY header (not a dict)", path);
    while (!accept(&p, '}')) {
        lumen_status s = parse_item(path, &p, h);
        if (s) return s;
        if (!accept(&p, ',') && !accept(&p, '}'))
            return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: malformed NPY header", path);
        if (p[-1] == '}') break;
    }
    skip_ws(&p);
    if (*p != '\0')
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: malformed NPY header (trailing data)", path);
    const char *missing = !h->has_descr   ? "descr"
                          : !h->has_order ? "fortran_order"
                          : !h->has_shape ? "shape"
                                          : NULL;
    if (missing)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: NPY header lacks '%s'", path, missing);
    return LUMEN_OK;
}

/* ---- reading ------------------------------------------------------------- */

static lumen_status parse_descr(const char *path, const char *descr, npy_kind *kind)
{
    static const struct {
        const char *descr;
        npy_kind kind;
    } known[] = {
        {"|u1", NPY_U1}, {"<u2", NPY_U2}, {"<f4", NPY_F4}, {"<f8", NPY_F8}, {"<f2", NPY_F2}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(descr, known[i].descr) == 0) {
            *kind = known[i].kind;
            return LUMEN_OK;
        }
    return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                           "%s: unsupported dtype '%s' (expected |u1, <u2, <f2, <f4 or <f8)", path,
                           descr);
}

static size_t kind_size(npy_kind k)
{
    return k == NPY_U1 ? 1 : k == NPY_U2 || k == NPY_F2 ? 2 : k == NPY_F4 ? 4 : 8;
}

/* The dtype an array of kind k is read into (f8 narrows to f32). */
static lumen_dtype kind_dtype(npy_kind k)
{
    return k == NPY_U1 ? LUMEN_U8 : k == NPY_U2 ? LUMEN_U16 : k == NPY_F2 ? LUMEN_F16 : LUMEN_F32;
}

/* What a dtype is written as. numpy has no bfloat16: bf16 is written widened to <f4, which is
 * exact (every bf16 is an f32), so the file holds the very values. */
static const char *dtype_descr(lumen_dtype t)
{
    return t == LUMEN_U8 ? "|u1" : t == LUMEN_U16 ? "<u2" : t == LUMEN_F16 ? "<f2" : "<f4";
}

/* Bytes of one file element of dtype t. */
static size_t file_es(lumen_dtype t)
{
    return t == LUMEN_BF16 ? 4 : lumen_dtype_size(t);
}

/* A packed row of n bf16 values widened in place to f32 (the buffer holds 4n bytes); back to
 * front, so no value is overwritten before it is read. */
static void widen_bf16_row(void *row, size_t n)
{
    const uint16_t *in = row;
    for (size_t i = n; i-- > 0;) {
        const float v = lumen_bf16_to_f32(in[i]);
        memcpy((unsigned char *)row + i * 4, &v, 4);
    }
}

/* Reads the magic, version and header text (malloc'd, NUL-terminated). */
static lumen_status read_header_text(const char *path, FILE *f, char **text)
{
    unsigned char pre[12];
    const size_t got = fread(pre, 1, 8, f);
    if (memcmp(pre, NPY_MAGIC, got < NPY_MAGIC_LEN ? got : NPY_MAGIC_LEN) != 0)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: not a NPY file (bad magic)", path);
    if (got < 8) return lumen_io_short_read(path, f);
    const unsigned major = pre[6], minor = pre[7];
    if (major < 1 || major > 3)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: unsupported NPY format version %u.%u",
                               path, major, minor);
    /* Version 1.0 has a 2-byte header length, 2.0 and 3.0 (UTF-8) a 4-byte one. */
    const size_t len_bytes = major == 1 ? 2 : 4;
    if (fread(pre + 8, 1, len_bytes, f) != len_bytes) return lumen_io_short_read(path, f);
    uint32_t len = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    if (len_bytes == 4) len |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    if (len > NPY_MAX_HEADER)
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: NPY header too long (%u bytes)", path,
                               (unsigned)len);
    char *buf = malloc((size_t)len + 1);
    if (!buf) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (fread(buf, 1, len, f) != len) {
        free(buf);
        return lumen_io_short_read(path, f);
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return lumen_set_error(LUMEN_ERR_CORRUPT, "%s: malformed NPY header (NUL byte)", path);
    }
    *text = buf;
    return LUMEN_OK;
}

/* Shape to (h, w, c): H x W is one channel, H x W x C has C channels. */
static lumen_status shape_to_hwc(const char *path, const npy_header *h, uint64_t hwc[3])
{
    if (h->ndim != 2 && h->ndim != 3)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: NPY array is %d-D (expected 2-D H x W or 3-D H x W x C)", path,
                               h->ndim);
    hwc[0] = h->shape[0];
    hwc[1] = h->shape[1];
    hwc[2] = h->ndim == 3 ? h->shape[2] : 1;
    if (hwc[0] == 0 || hwc[1] == 0 || hwc[2] == 0)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: NPY array is empty", path);
    return LUMEN_OK;
}

/* Stores n file elements (little-endian) at dst[start + i*stride], converting f8 to f32. */
static void convert_run(void *src, npy_kind kind, size_t n, void *dst, size_t start, size_t stride)
{
    const size_t fes = kind_size(kind);
    if (fes > 1 && !lumen_io_host_is_le()) lumen_io_swap_bytes(src, n, fes);
    const unsigned char *s = src;
    if (kind == NPY_F8) {
        float *d = (float *)dst + start;
        for (size_t i = 0; i < n; i++, s += 8) {
            double v;
            memcpy(&v, s, sizeof v);
            d[i * stride] = (float)v; /* rounds to nearest; out of range -> inf */
        }
        return;
    }
    unsigned char *d = (unsigned char *)dst + start * fes;
    for (size_t i = 0; i < n; i++, s += fes)
        memcpy(d + i * stride * fes, s, fes);
}

/*
 * Reads `n` consecutive file elements to dst[start + i*stride], in chunks so
 * no temporary larger than NPY_CHUNK elements is needed.
 */
static lumen_status read_run(const char *path, FILE *f, npy_kind kind, void *buf, size_t n,
                             void *dst, size_t start, size_t stride)
{
    const size_t fes = kind_size(kind);
    while (n > 0) {
        const size_t k = n < NPY_CHUNK ? n : NPY_CHUNK;
        if (fread(buf, fes, k, f) != k) return lumen_io_short_read(path, f);
        convert_run(buf, kind, k, dst, start, stride);
        start += k * stride;
        n -= k;
    }
    return LUMEN_OK;
}

static lumen_status read_data(const char *path, FILE *f, npy_kind kind, bool fortran,
                              lumen_image *out)
{
    const size_t h = (size_t)out->h, w = (size_t)out->w, c = (size_t)out->c;
    const size_t fes = kind_size(kind);
    /* Same layout and element size: straight into the image. */
    if (!fortran && kind != NPY_F8) {
        const size_t n = h * w * c;
        if (fread(out->data, fes, n, f) != n) return lumen_io_short_read(path, f);
        if (fes > 1 && !lumen_io_host_is_le()) lumen_io_swap_bytes(out->data, n, fes);
        return LUMEN_OK;
    }
    void *buf = malloc(NPY_CHUNK * fes);
    if (!buf) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    lumen_status s = LUMEN_OK;
    if (!fortran) {
        s = read_run(path, f, kind, buf, h * w * c, out->data, 0, 1);
    } else {
        /* Fortran order: the first index varies fastest, so the file is a
           sequence of columns (all y for one x and channel). */
        for (size_t ch = 0; ch < c && !s; ch++)
            for (size_t x = 0; x < w && !s; x++)
                s = read_run(path, f, kind, buf, h, out->data, x * c + ch, w * c);
    }
    free(buf);
    return s;
}

/* The data must fill the rest of the file exactly: a header whose data cannot fit is refused
 * before allocating for it, and bytes after the array (a concatenation, a bad copy, an
 * appended payload) are refused too, as numpy.load would leave them unread. */
static lumen_status check_data_size(const lumen_io_src *src, const uint64_t hwc[3], npy_kind kind)
{
    const off_t pos = ftello(src->f);
    if (pos < 0) return LUMEN_OK;
    /* hwc passed lumen_io_check_dims: at most 2^43 elements of 8 bytes. */
    const uint64_t need = hwc[0] * hwc[1] * hwc[2] * kind_size(kind);
    const uint64_t have = src->size > (uint64_t)pos ? src->size - (uint64_t)pos : 0;
    if (have < need)
        return lumen_set_error(LUMEN_ERR_CORRUPT,
                               "%s: truncated file (header promises %llu data bytes, %llu present)",
                               src->path, (unsigned long long)need, (unsigned long long)have);
    if (have > need)
        return lumen_set_error(LUMEN_ERR_CORRUPT,
                               "%s: %llu bytes of trailing data after the array (the header "
                               "promises %llu data bytes, the file holds %llu)",
                               src->path, (unsigned long long)(have - need),
                               (unsigned long long)need, (unsigned long long)have);
    return LUMEN_OK;
}

lumen_status lumen_io_read_npy(const lumen_io_src *src, lumen_image *out)
{
    const char *path = src->path;
    FILE *f = src->f;
    char *text = NULL;
    npy_header h;
    npy_kind kind = NPY_U1;
    uint64_t hwc[3] = {0, 0, 0};
    lumen_status s = read_header_text(path, f, &text);
    if (s) return s;
    s = parse_header(path, text, &h);
    free(text);
    if (s || (s = parse_descr(path, h.descr, &kind)) || (s = shape_to_hwc(path, &h, hwc))) return s;
    const lumen_dtype dtype = kind_dtype(kind);
    /* Absurd shapes first, then the file must hold the data exactly, then allocate. */
    if ((s = lumen_io_check_dims(src, path, hwc[0], hwc[1], hwc[2]))) return s;
    if ((s = check_data_size(src, hwc, kind))) return s;
    if ((s = lumen_io_alloc_image(src, out, dtype, hwc[0], hwc[1], hwc[2]))) return s;
    if ((s = read_data(path, f, kind, h.fortran, out))) {
        free(out->data);
        memset(out, 0, sizeof *out);
    }
    return s;
}

/* ---- writing ------------------------------------------------------------- */

lumen_status lumen_io_check_npy(const char *path, const lumen_image *img,
                                const lumen_write_options *opt)
{
    (void)opt;
    if (lumen_dtype_size(img->dtype) == 0)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: unknown dtype", path);
    return LUMEN_OK;
}

/* The dict numpy 1.x writes, padded with spaces and '\n' to a multiple of 64 bytes. */
static size_t format_header(const lumen_image *img, char *buf, size_t size)
{
    const char *descr = dtype_descr(img->dtype);
    char shape[96];
    if (img->c == 1)
        snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)img->h, (long long)img->w);
    else
        snprintf(shape, sizeof shape, "(%lld, %lld, %lld)", (long long)img->h, (long long)img->w,
                 (long long)img->c);
    int n = snprintf(buf + 10, size - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
    size_t len = (size_t)n + 1; /* + '\n' */
    /* As numpy's _wrap_header: 1..64 spaces, never zero. */
    const size_t pad = 64 - (10 + len) % 64;
    memset(buf + 10 + n, ' ', pad);
    len += pad;
    buf[10 + len - 1] = '\n';
    memcpy(buf, NPY_MAGIC "\x01\x00", 8);
    buf[8] = (char)(len & 0xff);
    buf[9] = (char)(len >> 8);
    return 10 + len;
}

lumen_status lumen_io_write_npy(const lumen_io_dst *dst, const lumen_image *img)
{
    const char *path = dst->path;
    FILE *f = dst->f;
    char header[256]; /* dict <= ~120 bytes + 64 padding */
    const size_t header_len = format_header(img, header, sizeof header);
    if (fwrite(header, 1, header_len, f) != header_len)
        return lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    const size_t elems = (size_t)(img->w * img->c), es = file_es(img->dtype);
    const size_t row_bytes = elems * es;
    void *row = malloc(row_bytes);
    if (!row) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    lumen_status s = LUMEN_OK;
    for (int64_t y = 0; y < img->h && !s; y++) {
        lumen_io_pack_row(img, y, row);
        if (img->dtype == LUMEN_BF16) widen_bf16_row(row, elems);
        if (es > 1 && !lumen_io_host_is_le()) lumen_io_swap_bytes(row, elems, es);
        if (fwrite(row, 1, row_bytes, f) != row_bytes)
            s = lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    }
    free(row);
    return s;
}

/* ---- tensors (include/lumen_ops.h): 1-D to 4-D arrays as N x C x H x W ------ */

#include "lumen_ops.h"

#include <strings.h>

/* Shape to (n, c, h, w), the missing leading axes being 1. */
static lumen_status shape_to_nchw(const char *path, const npy_header *h, uint64_t d[4])
{
    if (h->ndim < 1 || h->ndim > 4)
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED,
                               "%s: NPY array is %d-D (a tensor has 1 to 4 dimensions)", path,
                               h->ndim);
    uint64_t count = 1;
    for (int i = 0; i < 4; i++) {
        d[i] = i < 4 - h->ndim ? 1 : h->shape[i - (4 - h->ndim)];
        if (d[i] == 0)
            return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: NPY array is empty", path);
        /* Images have the same cap: 2^31 pixels of up to 4096 channels. */
        if (d[i] > LUMEN_IO_MAX_PIXELS * LUMEN_IO_MAX_CHANNELS / count)
            return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: NPY tensor too large", path);
        count *= d[i];
    }
    return LUMEN_OK;
}

/* Fortran order: the first real axis varies fastest in the file; each run of it is one strided
 * read into the C-order tensor, the later axes counting up as a little-endian odometer. */
static lumen_status read_fortran_tensor(const char *path, FILE *f, npy_kind kind, void *buf,
                                        const uint64_t d[4], int ndim, void *dst)
{
    const int a0 = 4 - ndim;
    const uint64_t st[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
    uint64_t idx[4] = {0, 0, 0, 0}, runs = 1;
    for (int a = a0 + 1; a < 4; a++)
        runs *= d[a];
    lumen_status s = LUMEN_OK;
    for (uint64_t r = 0; r < runs && !s; r++) {
        uint64_t start = 0;
        for (int a = a0 + 1; a < 4; a++)
            start += idx[a] * st[a];
        s = read_run(path, f, kind, buf, d[a0], dst, start, st[a0]);
        for (int a = a0 + 1; a < 4 && ++idx[a] == d[a]; a++)
            idx[a] = 0;
    }
    return s;
}

static lumen_status read_tensor_data(const char *path, FILE *f, npy_kind kind, const npy_header *h,
                                     const uint64_t d[4], lumen_image *out)
{
    void *buf = malloc(NPY_CHUNK * kind_size(kind));
    if (!buf) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    lumen_status s;
    if (h->fortran && h->ndim > 1)
        s = read_fortran_tensor(path, f, kind, buf, d, h->ndim, out->data);
    else
        s = read_run(path, f, kind, buf, d[0] * d[1] * d[2] * d[3], out->data, 0, 1);
    free(buf);
    return s;
}

static lumen_status read_npy_tensor(const lumen_io_src *src, lumen_image *out)
{
    const char *path = src->path;
    FILE *f = src->f;
    char *text = NULL;
    npy_header h;
    npy_kind kind = NPY_U1;
    uint64_t d[4];
    lumen_status s = read_header_text(path, f, &text);
    if (s) return s;
    s = parse_header(path, text, &h);
    free(text);
    if (s || (s = parse_descr(path, h.descr, &kind)) || (s = shape_to_nchw(path, &h, d))) return s;
    const uint64_t hwc[3] = {d[0] * d[1], d[2], d[3]}; /* the same byte count, for the check */
    if ((s = check_data_size(src, hwc, kind))) return s;
    const lumen_dtype dtype = kind_dtype(kind);
    const uint64_t bytes = d[0] * d[1] * d[2] * d[3] * lumen_dtype_size(dtype);
    void *data = bytes <= SIZE_MAX ? malloc((size_t)bytes) : NULL;
    if (!data)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory allocating %llu bytes",
                               path, (unsigned long long)bytes);
    *out =
        lumen_image_nchw(data, dtype, (int64_t)d[0], (int64_t)d[1], (int64_t)d[2], (int64_t)d[3]);
    if ((s = read_tensor_data(path, f, kind, &h, d, out))) {
        free(data);
        memset(out, 0, sizeof *out);
    }
    return s;
}

static bool is_npy_path(const char *path)
{
    const size_t n = strlen(path);
    return n >= 4 && !strcasecmp(path + n - 4, ".npy");
}

lumen_status lumen_read_tensor(const char *path, lumen_image *out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_tensor: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "read_tensor: path is NULL");
    if (!is_npy_path(path))
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: tensors are .npy files", path);
    return lumen_io_read_file(path, read_npy_tensor, 0, out, NULL);
}

/* The tensor in C order, one row (w elements) at a time; strides may be anything. */
static lumen_status write_npy_tensor(const lumen_io_dst *dst, const lumen_image *t)
{
    const char *path = dst->path;
    FILE *f = dst->f;
    char header[256];
    const char *descr = dtype_descr(t->dtype);
    int n = snprintf(header + 10, sizeof header - 10,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %lld, %lld, %lld), }",
                     descr, (long long)t->n, (long long)t->c, (long long)t->h, (long long)t->w);
    size_t len = (size_t)n + 1;
    const size_t pad = 64 - (10 + len) % 64;
    memset(header + 10 + n, ' ', pad);
    len += pad;
    header[10 + len - 1] = '\n';
    memcpy(header, NPY_MAGIC "\x01\x00", 8);
    header[8] = (char)(len & 0xff), header[9] = (char)(len >> 8);
    const size_t es = lumen_dtype_size(t->dtype), fes = file_es(t->dtype);
    const size_t row_bytes = (size_t)t->w * fes;
    unsigned char *row = malloc(row_bytes);
    if (!row) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    bool ok = fwrite(header, 1, 10 + len, f) == 10 + len;
    for (int64_t b = 0; b < t->n && ok; b++)
        for (int64_t c = 0; c < t->c && ok; c++)
            for (int64_t y = 0; y < t->h && ok; y++) {
                const char *base =
                    (const char *)t->data +
                    (b * t->stride_n + c * t->stride_c + y * t->stride_h) * (int64_t)es;
                for (int64_t x = 0; x < t->w; x++)
                    memcpy(row + (size_t)x * es, base + x * t->stride_w * (int64_t)es, es);
                if (t->dtype == LUMEN_BF16) widen_bf16_row(row, (size_t)t->w);
                if (fes > 1 && !lumen_io_host_is_le()) lumen_io_swap_bytes(row, (size_t)t->w, fes);
                ok = fwrite(row, 1, row_bytes, f) == row_bytes;
            }
    free(row);
    return ok ? LUMEN_OK
              : lumen_set_error(LUMEN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
}

lumen_status lumen_write_tensor(const char *path, const lumen_image *t)
{
    lumen_clear_error();
    if (!path) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "write_tensor: path is NULL");
    if (!t) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: tensor is NULL", path);
    lumen_status s = lumen_image_check(t, path);
    if (s) return s;
    if (t->device)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "%s: tensor lives in device memory",
                               path);
    if (!is_npy_path(path))
        return lumen_set_error(LUMEN_ERR_UNSUPPORTED, "%s: tensors are written as .npy files",
                               path);
    return lumen_io_write_atomic(path, t, NULL, NULL, write_npy_tensor);
}
