/*
 * Image file IO: round trips for every format x dtype x channel count,
 * strided writes, NPY variants written byte by byte, files made directly
 * with libpng/libtiff/libjpeg (palette, interlace, planar...), and bad
 * inputs: every failure must give the exact status, name the path, leave
 * no temporary file and never touch an existing destination.
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs stdarg, stddef, stdint and setjmp first. */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>
#include <tiffio.h>

#include "lumen.h"
#include "test_tmpdir.h"
#include "lumen_ops.h"

/* ---- fixtures and helpers ------------------------------------------------ */

static int group_setup(void **state)
{
    (void)state;
    return ts_tmpdir_make("lumen-test-io");
}

static int group_teardown(void **state)
{
    (void)state;
    return ts_tmpdir_remove();
}

/* A path inside the temp dir; a few rotating buffers so several can be live. */

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Temporary files are named ".<name>.lumen-tmp-<pid>-XXXXXX"; none may survive a call. */
static int count_hidden_files(void)
{
    DIR *d = opendir(ts_tmpdir());
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Deterministic pixels (HWC); f32 includes specials that must survive bit-exactly. */
static void *make_pixels(lumen_dtype dt, int64_t h, int64_t w, int64_t c, uint32_t seed)
{
    const size_t n = (size_t)(h * w * c);
    void *buf = malloc(n * lumen_dtype_size(dt));
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = lcg(&seed);
        if (dt == LUMEN_U8)
            ((uint8_t *)buf)[i] = (uint8_t)r;
        else if (dt == LUMEN_U16)
            ((uint16_t *)buf)[i] = (uint16_t)r;
        else
            ((float *)buf)[i] = ((float)(r % 200001) - 100000.0f) / 64.0f;
    }
    if (dt == LUMEN_F32 && n >= 4) {
        float *f = buf;
        f[0] = -0.0f;
        f[1] = INFINITY;
        f[2] = 1e-40f; /* subnormal */
        f[3] = NAN;
    }
    return buf;
}

/* Smooth content (no edges) so JPEG errors stay small. */
static uint8_t *make_gradient(int64_t h, int64_t w, int64_t c)
{
    uint8_t *buf = malloc((size_t)(h * w * c));
    assert_non_null(buf);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int64_t ch = 0; ch < c; ch++)
                buf[(y * w + x) * c + ch] = (uint8_t)(30 + x * 100 / w + y * 60 / h + ch * 20);
    return buf;
}

/* A read result must be a contiguous n=1 HWC image with these contents. */
static void assert_image(const lumen_image *im, lumen_dtype dt, int64_t h, int64_t w, int64_t c,
                         const void *expected)
{
    assert_non_null(im->data);
    assert_int_equal(im->dtype, dt);
    assert_int_equal(im->n, 1);
    assert_int_equal(im->h, h);
    assert_int_equal(im->w, w);
    assert_int_equal(im->c, c);
    assert_int_equal(im->stride_c, 1);
    assert_int_equal(im->stride_w, c);
    assert_int_equal(im->stride_h, w * c);
    assert_int_equal(im->stride_n, h * w * c);
    if (expected)
        assert_memory_equal(im->data, expected, (size_t)(h * w * c) * lumen_dtype_size(dt));
}

/* Writes buf (HWC) to path, reads it back, compares exactly. */
static void round_trip(const char *path, lumen_dtype dt, int64_t h, int64_t w, int64_t c,
                       const void *buf)
{
    lumen_image src = lumen_image_nhwc((void *)buf, dt, 1, h, w, c);
    TS_CHECK_STATUS(lumen_write_image(path, &src), LUMEN_OK);
    assert_string_equal(lumen_last_error(), "");
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, dt, h, w, c, buf);
    lumen_image_free(&got);
    assert_null(got.data);
}

/* ---- round trips ----------------------------------------------------------- */

static void test_png_round_trip(void **state)
{
    (void)state;
    const lumen_dtype dts[] = {LUMEN_U8, LUMEN_U16};
    for (int d = 0; d < 2; d++)
        for (int64_t c = 1; c <= 4; c++) {
            void *buf = make_pixels(dts[d], 13, 17, c, (uint32_t)(d * 10 + c));
            round_trip(ts_tpath("rt_%d_%lld.png", d, (long long)c), dts[d], 13, 17, c, buf);
            free(buf);
        }
    /* 1 x 1 and a single row/column. */
    uint16_t one = 0xBEEF;
    round_trip(ts_tpath("one.png"), LUMEN_U16, 1, 1, 1, &one);
    void *row = make_pixels(LUMEN_U8, 1, 300, 3, 7);
    round_trip(ts_tpath("row.png"), LUMEN_U8, 1, 300, 3, row);
    round_trip(ts_tpath("col.png"), LUMEN_U8, 300, 1, 3, row);
    free(row);
}

static void test_tiff_round_trip(void **state)
{
    (void)state;
    const lumen_dtype dts[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};
    for (int d = 0; d < 3; d++)
        for (int64_t c = 1; c <= 4; c++) {
            void *buf = make_pixels(dts[d], 31, 19, c, (uint32_t)(d * 10 + c));
            round_trip(ts_tpath("rt_%d_%lld.tif", d, (long long)c), dts[d], 31, 19, c, buf);
            round_trip(ts_tpath("rt_%d_%lld.tiff", d, (long long)c), dts[d], 31, 19, c, buf);
            free(buf);
        }
}

static void test_npy_round_trip(void **state)
{
    (void)state;
    const lumen_dtype dts[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};
    const int64_t cs[] = {1, 2, 3, 4, 7, 64};
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 6; i++) {
            void *buf = make_pixels(dts[d], 9, 11, cs[i], (uint32_t)(d * 100 + i));
            round_trip(ts_tpath("rt_%d_%lld.npy", d, (long long)cs[i]), dts[d], 9, 11, cs[i], buf);
            free(buf);
        }
}

/* JPEG is lossy: mean error small, no pixel far off (q95 on a gradient: ~0.1 / 1). */
static void assert_close_u8(const uint8_t *a, const uint8_t *b, size_t n, double max_mean,
                            int max_abs)
{
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        sum += d;
        if (d > worst) worst = d;
    }
    if (sum / (double)n > max_mean || worst > max_abs)
        print_error("mean error %.3f (max %.3f), worst %d (max %d)\n", sum / (double)n, max_mean,
                    worst, max_abs);
    assert_true(sum / (double)n <= max_mean);
    assert_true(worst <= max_abs);
}

static void test_jpeg_round_trip(void **state)
{
    (void)state;
    const char *exts[] = {"jpg", "jpeg", "JPG"};
    for (int64_t c = 1; c <= 3; c += 2)
        for (int e = 0; e < 3; e++) {
            const int64_t h = 37, w = 53;
            uint8_t *buf = make_gradient(h, w, c);
            lumen_image src = lumen_image_nhwc(buf, LUMEN_U8, 1, h, w, c);
            const char *path = ts_tpath("rt_%lld.%s", (long long)c, exts[e]);
            TS_CHECK_STATUS(lumen_write_image(path, &src), LUMEN_OK);
            lumen_image got;
            TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
            assert_image(&got, LUMEN_U8, h, w, c, NULL);
            assert_close_u8(got.data, buf, (size_t)(h * w * c), 1.0, 8);
            lumen_image_free(&got);
            free(buf);
        }
}

static void test_extension_case_insensitive(void **state)
{
    (void)state;
    void *buf = make_pixels(LUMEN_U8, 4, 5, 3, 1);
    round_trip(ts_tpath("upper.PNG"), LUMEN_U8, 4, 5, 3, buf);
    round_trip(ts_tpath("upper.TiF"), LUMEN_U8, 4, 5, 3, buf);
    round_trip(ts_tpath("upper.NPY"), LUMEN_U8, 4, 5, 3, buf);
    /* Only the last component's extension counts. */
    assert_int_equal(mkdir(ts_tpath("dir.npy.d"), 0755), 0);
    round_trip(ts_tpath("dir.npy.d/inner.png"), LUMEN_U8, 4, 5, 3, buf);
    free(buf);
}

static void test_overwrite_and_modes(void **state)
{
    (void)state;
    const char *path = ts_tpath("over.png");
    void *a = make_pixels(LUMEN_U8, 6, 6, 1, 1), *b = make_pixels(LUMEN_U8, 6, 6, 1, 2);
    mode_t old = umask(022);
    round_trip(path, LUMEN_U8, 6, 6, 1, a);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644); /* umask-based, not mkstemp's 0600 */
    /* Overwriting keeps an existing file's mode. */
    assert_int_equal(chmod(path, 0640), 0);
    round_trip(path, LUMEN_U8, 6, 6, 1, b);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    umask(old);
    assert_int_equal(count_hidden_files(), 0);
    free(a);
    free(b);
}

/* ---- strided writes --------------------------------------------------------- */

/* Element (y, x, ch) of a view as raw bits (so NaN compares equal to itself). */
static uint32_t view_at(const lumen_image *v, int64_t y, int64_t x, int64_t ch)
{
    const int64_t off = y * v->stride_h + x * v->stride_w + ch * v->stride_c;
    switch (v->dtype) {
    case LUMEN_U8: return ((const uint8_t *)v->data)[off];
    case LUMEN_U16: return ((const uint16_t *)v->data)[off];
    default: {
        uint32_t bits;
        memcpy(&bits, (const float *)v->data + off, sizeof bits);
        return bits;
    }
    }
}

/* Writes a strided view and checks the file holds its logical pixels. */
static void check_view_write(const char *path, const lumen_image *v)
{
    TS_CHECK_STATUS(lumen_write_image(path, v), LUMEN_OK);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, v->dtype, v->h, v->w, v->c, NULL);
    for (int64_t y = 0; y < v->h; y++)
        for (int64_t x = 0; x < v->w; x++)
            for (int64_t ch = 0; ch < v->c; ch++)
                if (view_at(&got, y, x, ch) != view_at(v, y, x, ch)) {
                    print_error("%s: pixel (%lld, %lld, %lld) differs\n", path, (long long)y,
                                (long long)x, (long long)ch);
                    fail();
                }
    lumen_image_free(&got);
}

static void test_strided_writes(void **state)
{
    (void)state;
    const int64_t h = 11, w = 7, c = 3;
    const lumen_dtype dts[] = {LUMEN_U8, LUMEN_U16, LUMEN_F32};
    for (int d = 0; d < 3; d++) {
        const lumen_dtype dt = dts[d];
        const size_t es = lumen_dtype_size(dt);
        /* Stored twice as wide so a crop has row padding. */
        unsigned char *buf = make_pixels(dt, h, 2 * w, c, (uint32_t)(d + 5));
        lumen_image views[5];
        /* Planar CHW over the same buffer. */
        views[0] = lumen_image_nchw(buf, dt, 1, c, h, w);
        /* Crop: rows padded to 2w pixels. */
        views[1] = lumen_image_nhwc(buf, dt, 1, h, w, c);
        views[1].stride_h = 2 * w * c;
        /* Flipped both ways: data points at the last pixel, negative strides. */
        views[2] = views[1];
        views[2].data = buf + (size_t)(((h - 1) * 2 * w * c + (w - 1) * c) * (int64_t)es);
        views[2].stride_h = -2 * w * c;
        views[2].stride_w = -c;
        /* Channels reversed (BGR <-> RGB). */
        views[3] = views[1];
        views[3].data = buf + (size_t)(c - 1) * es;
        views[3].stride_c = -1;
        /* Transposed: x and y swapped (w and h too). */
        views[4] = views[1];
        views[4].h = w;
        views[4].w = h;
        views[4].stride_h = c;
        views[4].stride_w = 2 * w * c;
        for (int i = 0; i < 5; i++) {
            check_view_write(ts_tpath("view_%d_%d.tif", d, i), &views[i]);
            check_view_write(ts_tpath("view_%d_%d.npy", d, i), &views[i]);
            if (dt != LUMEN_F32) check_view_write(ts_tpath("view_%d_%d.png", d, i), &views[i]);
        }
        /* One channel of a strided view (c = 1 with stride_c irrelevant). */
        lumen_image one = views[2];
        one.c = 1;
        check_view_write(ts_tpath("view_%d_one.npy", d), &one);
        check_view_write(ts_tpath("view_%d_one.tif", d), &one);
        free(buf);
    }
    assert_int_equal(count_hidden_files(), 0);
}

static void test_strided_jpeg(void **state)
{
    (void)state;
    const int64_t h = 24, w = 40, c = 3;
    uint8_t *buf = make_gradient(h, w, c);
    lumen_image flip = lumen_image_nhwc(buf + (h - 1) * w * c, LUMEN_U8, 1, h, w, c);
    flip.stride_h = -w * c;
    const char *path = ts_tpath("flip.jpg");
    TS_CHECK_STATUS(lumen_write_image(path, &flip), LUMEN_OK);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, h, w, c, NULL);
    uint8_t *expected = malloc((size_t)(h * w * c));
    for (int64_t y = 0; y < h; y++)
        memcpy(expected + y * w * c, buf + (h - 1 - y) * w * c, (size_t)(w * c));
    assert_close_u8(got.data, expected, (size_t)(h * w * c), 1.0, 8);
    lumen_image_free(&got);
    free(expected);
    free(buf);
}

/* ---- NPY files written by hand ---------------------------------------------- */

/* magic + version + header length + dict padded like numpy, then the data. */
static void write_npy_raw(const char *path, int major, const char *dict, const void *data, size_t n)
{
    const size_t len_bytes = major == 1 ? 2 : 4;
    const size_t prefix = 8 + len_bytes;
    size_t hlen = strlen(dict) + 1;
    hlen += (64 - (prefix + hlen) % 64) % 64;
    unsigned char *buf = calloc(1, prefix + hlen + n);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < len_bytes; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memset(buf + prefix, ' ', hlen);
    memcpy(buf + prefix, dict, strlen(dict));
    buf[prefix + hlen - 1] = '\n';
    if (n) memcpy(buf + prefix + hlen, data, n);
    ts_write_bytes(path, buf, prefix + hlen + n);
    free(buf);
}

/* Issue 12 item 7: bytes after the array (a concatenation, an appended payload) are refused,
 * as are arrays the file is too short for; the exact size is accepted. */
static void test_npy_trailing_data(void **state)
{
    (void)state;
    const uint8_t data[7] = {1, 2, 3, 4, 5, 6, 0xee};
    const char *path = ts_tpath("trailing.npy");
    lumen_image got;
    write_npy_raw(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", data, 6);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    lumen_image_free(&got);
    write_npy_raw(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", data, 7);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("1 bytes of trailing data");
    assert_null(got.data);
    /* Tensors (lumen_read_tensor) share the rule. */
    TS_CHECK_STATUS(lumen_read_tensor(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("trailing data");
    /* A second array appended (np.save twice into one file). */
    write_npy_raw(ts_tpath("one.npy"), 1,
                  "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", data, 6);
    size_t n;
    unsigned char *one = ts_read_bytes(ts_tpath("one.npy"), &n);
    unsigned char *two = malloc(2 * n);
    memcpy(two, one, n);
    memcpy(two + n, one, n);
    ts_write_bytes(path, two, 2 * n);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("trailing data");
    free(one);
    free(two);
}

static void test_npy_header_layout(void **state)
{
    (void)state;
    uint8_t px[5 * 7 * 3];
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (uint8_t)i;
    lumen_image g = lumen_image_nhwc(px, LUMEN_U8, 1, 5, 7, 1);
    const char *path = ts_tpath("layout.npy");
    TS_CHECK_STATUS(lumen_write_image(path, &g), LUMEN_OK);
    size_t n;
    unsigned char *b = ts_read_bytes(path, &n);
    assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
    const size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
    assert_int_equal((10 + hlen) % 64, 0);
    assert_int_equal(n, 10 + hlen + 35);
    const char *dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (5, 7), }";
    assert_memory_equal(b + 10, dict, strlen(dict));
    assert_int_equal(b[10 + hlen - 1], '\n');
    for (size_t i = 10 + strlen(dict); i < 10 + hlen - 1; i++)
        assert_int_equal(b[i], ' ');
    assert_memory_equal(b + 10 + hlen, px, 35);
    free(b);

    float f[5 * 7 * 3] = {1.0f};
    lumen_image rgb = lumen_image_nhwc(f, LUMEN_F32, 1, 5, 7, 3);
    TS_CHECK_STATUS(lumen_write_image(path, &rgb), LUMEN_OK);
    b = ts_read_bytes(path, &n);
    dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 7, 3), }";
    assert_memory_equal(b + 10, dict, strlen(dict));
    assert_int_equal(n % 64, (5 * 7 * 3 * 4) % 64);
    free(b);

    uint16_t u[2] = {1, 2};
    lumen_image u16 = lumen_image_nhwc(u, LUMEN_U16, 1, 1, 2, 1);
    TS_CHECK_STATUS(lumen_write_image(path, &u16), LUMEN_OK);
    b = ts_read_bytes(path, &n);
    dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (1, 2), }";
    assert_memory_equal(b + 10, dict, strlen(dict));
    assert_memory_equal(b + n - 4, "\x01\x00\x02\x00", 4); /* little-endian on disk */
    free(b);
}

static void test_npy_fortran_order(void **state)
{
    (void)state;
    /* 2-D u2, a[i][j] = 10 i + j, stored column by column. */
    uint16_t col2[6], want2[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            col2[j * 2 + i] = (uint16_t)(1000 + 10 * i + j);
            want2[i * 3 + j] = (uint16_t)(1000 + 10 * i + j);
        }
    const char *path = ts_tpath("fortran2.npy");
    write_npy_raw(path, 1, "{'descr': '<u2', 'fortran_order': True, 'shape': (2, 3), }", col2,
                  sizeof col2);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U16, 2, 3, 1, want2);
    lumen_image_free(&got);

    /* 3-D u1 (H=2, W=3, C=4): the first index varies fastest on disk. */
    uint8_t col3[24], want3[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                col3[i + 2 * (j + 3 * k)] = (uint8_t)(100 * (k % 2) + 10 * i + j + k);
                want3[(i * 3 + j) * 4 + k] = (uint8_t)(100 * (k % 2) + 10 * i + j + k);
            }
    path = ts_tpath("fortran3.npy");
    write_npy_raw(path, 1, "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3, 4), }", col3,
                  sizeof col3);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, 2, 3, 4, want3);
    lumen_image_free(&got);
}

static void test_npy_f64(void **state)
{
    (void)state;
    const double vals[6] = {1.5, -2.25, 1e10, 3.14159265358979, 1e300, -0.0};
    float want[6];
    for (int i = 0; i < 6; i++)
        want[i] = (float)vals[i];
    const char *path = ts_tpath("f64.npy");
    write_npy_raw(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", vals,
                  sizeof vals);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_F32, 2, 3, 1, want);
    assert_true(isinf(((float *)got.data)[4]));
    lumen_image_free(&got);

    /* f64 in Fortran order, 3-D (2 x 1 x 3). */
    double col[6];
    float want3[6];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            col[i + 2 * k] = 0.5 * (10 * i + k);
            want3[i * 3 + k] = (float)(0.5 * (10 * i + k));
        }
    path = ts_tpath("f64f.npy");
    write_npy_raw(path, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1, 3), }", col,
                  sizeof col);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_F32, 2, 1, 3, want3);
    lumen_image_free(&got);
}

static void test_npy_versions_and_header_styles(void **state)
{
    (void)state;
    const uint8_t px[6] = {1, 2, 3, 4, 5, 6};
    lumen_image got;
    for (int major = 1; major <= 3; major++) {
        const char *path = ts_tpath("v%d.npy", major);
        write_npy_raw(path, major, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }",
                      px, sizeof px);
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
        assert_image(&got, LUMEN_U8, 2, 3, 1, px);
        lumen_image_free(&got);
    }
    /* Keys in another order, double quotes, Python 2 longs, no trailing comma. */
    const char *path = ts_tpath("style.npy");
    write_npy_raw(path, 1, "{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"|u1\"}",
                  px, sizeof px);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, 2, 3, 1, px);
    lumen_image_free(&got);
    /* Trailing data after the array is refused: test_npy_trailing_data. */
}

/* Each bad header gives `want` and a message naming the file and `reason`. */
static void expect_npy_failure(const char *dict, const void *data, size_t n, lumen_status want,
                               const char *reason)
{
    const char *path = ts_tpath("bad.npy");
    write_npy_raw(path, 1, dict, data, n);
    lumen_image got;
    memset(&got, 0x5a, sizeof got);
    TS_CHECK_STATUS(lumen_read_image(path, &got), want);
    assert_null(got.data);
    ts_assert_error_mentions(path);
    if (reason) ts_assert_error_mentions(reason);
}

static void test_npy_bad_headers(void **state)
{
    (void)state;
    const uint8_t px[64] = {0};
    expect_npy_failure("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", px, 16,
                       LUMEN_ERR_UNSUPPORTED, "'<i4'");
    expect_npy_failure("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", px, 16,
                       LUMEN_ERR_UNSUPPORTED, "'>f4'");
    /* <f2 is read (f16; test_half.c), big-endian halves are not */
    expect_npy_failure("{'descr': '>f2', 'fortran_order': False, 'shape': (2, 2), }", px, 8,
                       LUMEN_ERR_UNSUPPORTED, "'>f2'");
    expect_npy_failure("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }", px, 4,
                       LUMEN_ERR_UNSUPPORTED, "'|b1'");
    expect_npy_failure("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", px, 8,
                       LUMEN_ERR_UNSUPPORTED, "structured");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", px, 4,
                       LUMEN_ERR_UNSUPPORTED, "1-D");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 2, 2), }", px, 16,
                       LUMEN_ERR_UNSUPPORTED, "4-D");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (0, 2), }", px, 0,
                       LUMEN_ERR_UNSUPPORTED, "empty");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 5000), }", px, 64,
                       LUMEN_ERR_UNSUPPORTED, "channels");
    /* Absurd sizes are refused before allocating anything. */
    expect_npy_failure("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", px,
                       16, LUMEN_ERR_UNSUPPORTED, "too large");
    expect_npy_failure("{'descr': '<f8', 'fortran_order': False, "
                       "'shape': (99999999999999999999999, 2), }",
                       px, 16, LUMEN_ERR_CORRUPT, "shape");
    /* Data shorter than the header promises. */
    expect_npy_failure("{'descr': '<u2', 'fortran_order': False, 'shape': (1000, 1000), }", px, 64,
                       LUMEN_ERR_CORRUPT, "truncated");
    expect_npy_failure("[1, 2, 3]", px, 4, LUMEN_ERR_CORRUPT, "header");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False}", px, 4, LUMEN_ERR_CORRUPT,
                       "'shape'");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': Maybe, 'shape': (2, 2)}", px, 4,
                       LUMEN_ERR_CORRUPT, "fortran_order");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), 'x': 1}", px, 4,
                       LUMEN_ERR_CORRUPT, "'x'");
    expect_npy_failure("{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (2, 2)}",
                       px, 4, LUMEN_ERR_CORRUPT, "descr");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), } junk", px, 4,
                       LUMEN_ERR_CORRUPT, "header");
    expect_npy_failure("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2", px, 4,
                       LUMEN_ERR_CORRUPT, "shape");

    /* Bad magic, unknown version, header length past the end of the file. */
    const char *path = ts_tpath("bad.npy");
    lumen_image got;
    ts_write_bytes(path, "\x93NUMPX\x01\x00\x10\x00{}", 12);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("magic");
    ts_write_bytes(path, "\x93NUMPY\x04\x00\x10\x00{}", 12);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("4.0");
    ts_write_bytes(path, "\x93NUMPY\x01\x00\x00\x10{'descr'", 17);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("truncated");
    ts_write_bytes(path, "\x93NUMPY\x02\x00\xff\xff\xff\x7f{}", 14);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
    ts_write_bytes(path, "\x93NUM", 4);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("truncated");
}

/* ---- files made with the libraries directly ---------------------------------- */

/* Writes rows (already in PNG byte order) with libpng; plte/trns optional. */
static void write_png_direct(const char *path, int w, int h, int depth, int color, int interlace,
                             const unsigned char *rows, size_t row_bytes, const png_color *plte,
                             int nplte, const png_byte *trns, int ntrns, const png_color_16 *trns_c)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed writing %s", path);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color, interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (plte) png_set_PLTE(png, info, plte, nplte);
    if (trns || trns_c) png_set_tRNS(png, info, trns, ntrns, trns_c);
    png_write_info(png, info);
    const int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++)
            png_write_row(png, rows + (size_t)y * row_bytes);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

static void test_png_expansions(void **state)
{
    (void)state;
    lumen_image got;
    /* Palette with transparency -> RGBA. */
    const png_color plte[3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    const png_byte trns[3] = {255, 128, 0};
    const unsigned char idx[2 * 3] = {0, 1, 2, 2, 1, 0};
    const char *path = ts_tpath("palette.png");
    write_png_direct(path, 3, 2, 8, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, idx, 3, plte, 3,
                     trns, 3, NULL);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    const uint8_t want_pal[2 * 3 * 4] = {255, 0, 0,   255, 0, 255, 0, 128, 0,   0, 255, 0,
                                         0,   0, 255, 0,   0, 255, 0, 128, 255, 0, 0,   255};
    assert_image(&got, LUMEN_U8, 2, 3, 4, want_pal);
    lumen_image_free(&got);

    /* Palette without transparency -> RGB. */
    write_png_direct(path, 3, 2, 8, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, idx, 3, plte, 3,
                     NULL, 0, NULL);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, 2, 3, 3, NULL);
    assert_memory_equal(got.data, "\xff\x00\x00\x00\xff\x00\x00\x00\xff", 9);
    lumen_image_free(&got);

    /* 1-bit gray -> 8-bit 0/255. */
    const unsigned char bits[2] = {0xA0, 0x40}; /* 1010 / 0100 */
    path = ts_tpath("gray1.png");
    write_png_direct(path, 4, 2, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, bits, 1, NULL, 0, NULL,
                     0, NULL);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    const uint8_t want_bits[8] = {255, 0, 255, 0, 0, 255, 0, 0};
    assert_image(&got, LUMEN_U8, 2, 4, 1, want_bits);
    lumen_image_free(&got);

    /* 16-bit gray is big-endian on disk; read as native values. Interlaced too. */
    const unsigned char be[2 * 2 * 2] = {0x01, 0x02, 0xA0, 0xB0, 0xFF, 0x00, 0x00, 0x01};
    const uint16_t want16[4] = {0x0102, 0xA0B0, 0xFF00, 0x0001};
    path = ts_tpath("be16.png");
    for (int il = 0; il < 2; il++) {
        write_png_direct(path, 2, 2, 16, PNG_COLOR_TYPE_GRAY,
                         il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, be, 4, NULL, 0, NULL, 0,
                         NULL);
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
        assert_image(&got, LUMEN_U16, 2, 2, 1, want16);
        lumen_image_free(&got);
    }

    /* Interlaced RGB large enough to use all 7 passes. */
    uint8_t *rgb = make_pixels(LUMEN_U8, 19, 23, 3, 3);
    path = ts_tpath("adam7.png");
    write_png_direct(path, 23, 19, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, rgb, 23 * 3, NULL, 0,
                     NULL, 0, NULL);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, 19, 23, 3, rgb);
    lumen_image_free(&got);
    free(rgb);

    /* Gray with a tRNS colour -> gray + alpha. */
    const png_color_16 key = {.gray = 7};
    const unsigned char g[3] = {7, 8, 9};
    path = ts_tpath("graytrns.png");
    write_png_direct(path, 3, 1, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, g, 3, NULL, 0, NULL, 0,
                     &key);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    const uint8_t want_ga[6] = {7, 0, 8, 255, 9, 255};
    assert_image(&got, LUMEN_U8, 1, 3, 2, want_ga);
    lumen_image_free(&got);
}

/* lumen's 16-bit PNG must be big-endian on disk: check with libpng directly. */
static void test_png_u16_on_disk(void **state)
{
    (void)state;
    uint16_t px[2] = {0x0102, 0xA0B0};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U16, 1, 1, 2, 1);
    const char *path = ts_tpath("disk16.png");
    TS_CHECK_STATUS(lumen_write_image(path, &im), LUMEN_OK);
    FILE *f = fopen(path, "rb");
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng failed");
    png_init_io(png, f);
    png_read_info(png, info);
    assert_int_equal(png_get_bit_depth(png, info), 16);
    assert_int_equal(png_get_color_type(png, info), PNG_COLOR_TYPE_GRAY);
    unsigned char row[4];
    png_read_row(png, row, NULL);
    assert_memory_equal(row, "\x01\x02\xa0\xb0", 4);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
}

static void test_tiff_tags_and_variants(void **state)
{
    (void)state;
    /* Tags lumen writes. */
    float px[2 * 3 * 4];
    for (int i = 0; i < 24; i++)
        px[i] = (float)i * 0.25f;
    lumen_image im = lumen_image_nhwc(px, LUMEN_F32, 1, 2, 3, 4);
    const char *path = ts_tpath("tags.tif");
    TS_CHECK_STATUS(lumen_write_image(path, &im), LUMEN_OK);
    TIFF *tif = TIFFOpen(path, "r");
    assert_non_null(tif);
    uint16_t spp = 0, bps = 0, fmt = 0, photo = 0, planar = 0;
    TIFFGetField(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetField(tif, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo);
    TIFFGetField(tif, TIFFTAG_PLANARCONFIG, &planar);
    assert_int_equal(spp, 4);
    assert_int_equal(bps, 32);
    assert_int_equal(fmt, SAMPLEFORMAT_IEEEFP);
    assert_int_equal(photo, PHOTOMETRIC_RGB);
    assert_int_equal(planar, PLANARCONFIG_CONTIG);
    TIFFClose(tif);

    /* Separate planes, LZW-compressed, written with libtiff: read interleaved. */
    const int w = 5, h = 4, c = 3;
    uint16_t *planes = make_pixels(LUMEN_U16, c, h, w, 9); /* c planes of h x w */
    path = ts_tpath("planar.tif");
    tif = TIFFOpen(path, "w");
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, c);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_SEPARATE);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 3);
    for (int s = 0; s < c; s++)
        for (int y = 0; y < h; y++)
            assert_true(
                TIFFWriteScanline(tif, planes + (s * h + y) * w, (uint32_t)y, (uint16_t)s) >= 0);
    TIFFClose(tif);
    uint16_t want[5 * 4 * 3];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int s = 0; s < c; s++)
                want[(y * w + x) * c + s] = planes[(s * h + y) * w + x];
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U16, h, w, c, want);
    lumen_image_free(&got);
    free(planes);

    /* Min-is-white gray is inverted to min-is-black. */
    path = ts_tpath("miniswhite.tif");
    tif = TIFFOpen(path, "w");
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 3);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 1);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISWHITE);
    uint8_t mw[3] = {0, 100, 255};
    TIFFWriteScanline(tif, mw, 0, 0);
    TIFFClose(tif);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, 1, 3, 1, "\xff\x9b\x00");
    lumen_image_free(&got);

    /* Signed integers, tiles and palettes are refused with a reason. */
    path = ts_tpath("int16.tif");
    tif = TIFFOpen(path, "w");
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 2);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 1);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_INT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    int16_t s16[2] = {-1, 1};
    TIFFWriteScanline(tif, s16, 0, 0);
    TIFFClose(tif);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("signed");
    assert_null(got.data);

    path = ts_tpath("tiled.tif");
    tif = TIFFOpen(path, "w");
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 16);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 16);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, 16);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, 16);
    uint8_t tile[256] = {0};
    TIFFWriteTile(tif, tile, 0, 0, 0, 0);
    TIFFClose(tif);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("tiled");

    path = ts_tpath("palette.tif");
    tif = TIFFOpen(path, "w");
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 2);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 1);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_PALETTE);
    static uint16_t cmap[256];
    TIFFSetField(tif, TIFFTAG_COLORMAP, cmap, cmap, cmap);
    uint8_t pal[2] = {0, 1};
    TIFFWriteScanline(tif, pal, 0, 0);
    TIFFClose(tif);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("palette");
}

/* JPEG-compressed YCbCr TIFF: libtiff's codec converts to RGB for us. */
static void test_tiff_jpeg_ycbcr(void **state)
{
    (void)state;
    const int w = 32, h = 32;
    uint8_t *rgb = make_gradient(h, w, 3);
    const char *path = ts_tpath("ycbcr.tif");
    TIFF *tif = TIFFOpen(path, "w");
    assert_non_null(tif);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_JPEG);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
    TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    TIFFSetField(tif, TIFFTAG_JPEGQUALITY, 95);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 16);
    for (int y = 0; y < h; y++)
        assert_true(TIFFWriteScanline(tif, rgb + y * w * 3, (uint32_t)y, 0) >= 0);
    TIFFClose(tif);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, h, w, 3, NULL);
    assert_close_u8(got.data, rgb, (size_t)(h * w * 3), 1.5, 12);
    lumen_image_free(&got);
    free(rgb);
}

static void test_jpeg_cmyk_unsupported(void **state)
{
    (void)state;
    const char *path = ts_tpath("cmyk.jpg");
    FILE *f = fopen(path, "wb");
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = 8;
    cinfo.image_height = 8;
    cinfo.input_components = 4;
    cinfo.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    unsigned char row[8 * 4] = {0};
    JSAMPROW rp = row;
    for (int y = 0; y < 8; y++)
        jpeg_write_scanlines(&cinfo, &rp, 1);
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    fclose(f);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("CMYK");
}

/* ---- bad inputs ---------------------------------------------------------------- */

static void test_null_arguments(void **state)
{
    (void)state;
    lumen_image got;
    uint8_t px[4] = {0};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 1);
    TS_CHECK_STATUS(lumen_read_image(NULL, &got), LUMEN_ERR_INVALID_ARGUMENT);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("x.png"), NULL), LUMEN_ERR_INVALID_ARGUMENT);
    TS_CHECK_STATUS(lumen_write_image(NULL, &im), LUMEN_ERR_INVALID_ARGUMENT);
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("x.png"), NULL), LUMEN_ERR_INVALID_ARGUMENT);
    lumen_image nodata = im;
    nodata.data = NULL;
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("x.png"), &nodata), LUMEN_ERR_INVALID_ARGUMENT);
    lumen_image two = lumen_image_nhwc(px, LUMEN_U8, 2, 1, 2, 1);
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("x.png"), &two), LUMEN_ERR_INVALID_ARGUMENT);
    ts_assert_error_mentions("n = 2");
    lumen_image zero = im;
    zero.w = 0;
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("x.npy"), &zero), LUMEN_ERR_INVALID_ARGUMENT);
    assert_false(file_exists(ts_tpath("x.png")));
    assert_false(file_exists(ts_tpath("x.npy")));
    /* Freeing NULL or a zeroed image is harmless; a success clears the error. */
    lumen_image_free(NULL);
    memset(&got, 0, sizeof got);
    lumen_image_free(&got);
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("ok.npy"), &im), LUMEN_OK);
    assert_string_equal(lumen_last_error(), "");
}

static void test_unknown_extension(void **state)
{
    (void)state;
    uint8_t px[4] = {0};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 1);
    const char *names[] = {"x.bmp", "noext", "png", "dir.png/file"};
    for (int i = 0; i < 4; i++) {
        const char *path = ts_tpath("%s", names[i]);
        lumen_image got;
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
        ts_assert_error_mentions(path);
        ts_assert_error_mentions(".png, .jpg, .jpeg, .tif, .tiff, .webp, .exr, .npy");
        TS_CHECK_STATUS(lumen_write_image(path, &im), LUMEN_ERR_UNSUPPORTED);
        ts_assert_error_mentions(path);
        assert_false(file_exists(path));
    }
}

static void test_nonexistent_and_directory(void **state)
{
    (void)state;
    const char *exts[] = {"png", "jpg", "tif", "npy"};
    lumen_image got;
    for (int i = 0; i < 4; i++) {
        const char *path = ts_tpath("missing.%s", exts[i]);
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_IO);
        ts_assert_error_mentions(path);
        ts_assert_error_mentions(strerror(ENOENT));
        assert_null(got.data);
    }
    const char *dir = ts_tpath("adir.png");
    assert_int_equal(mkdir(dir, 0755), 0);
    TS_CHECK_STATUS(lumen_read_image(dir, &got), LUMEN_ERR_IO);
    ts_assert_error_mentions(dir);
}

static void test_empty_and_garbage_files(void **state)
{
    (void)state;
    const char *exts[] = {"png", "jpg", "jpeg", "tif", "tiff", "npy"};
    uint8_t junk[300];
    uint32_t seed = 1;
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)lcg(&seed);
    lumen_image got;
    for (int i = 0; i < 6; i++) {
        const char *path = ts_tpath("empty.%s", exts[i]);
        ts_write_bytes(path, "", 0);
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
        ts_assert_error_mentions(path);
        ts_assert_error_mentions("empty");
        path = ts_tpath("junk.%s", exts[i]);
        ts_write_bytes(path, junk, sizeof junk);
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
        ts_assert_error_mentions(path);
        assert_null(got.data);
        /* Short junk (shorter than any signature). */
        ts_write_bytes(path, "ab", 2);
        TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
        ts_assert_error_mentions(path);
    }
    const char *path = ts_tpath("junk.png");
    ts_write_bytes(path, junk, sizeof junk);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("not a PNG");
    /* A text file named .png. */
    ts_write_bytes(path, "hello, world\n", 13);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("not a PNG");
}

/* Writes a good file, cuts it to `keep` bytes (or half when 0), expects CORRUPT. */
static void check_truncated(const char *path, const lumen_image *im, off_t keep, const char *reason)
{
    TS_CHECK_STATUS(lumen_write_image(path, im), LUMEN_OK);
    const off_t size = ts_file_size(path);
    assert_int_equal(truncate(path, keep ? keep : size / 2), 0);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
    if (reason) ts_assert_error_mentions(reason);
    assert_null(got.data);
    /* Just one byte short. */
    TS_CHECK_STATUS(lumen_write_image(path, im), LUMEN_OK);
    assert_int_equal(truncate(path, size - 1), 0);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
}

static void test_truncated_files(void **state)
{
    (void)state;
    const int64_t h = 64, w = 64, c = 3;
    uint8_t *noise = make_pixels(LUMEN_U8, h, w, c, 11);
    uint8_t *smooth = make_gradient(h, w, c);
    lumen_image in = lumen_image_nhwc(noise, LUMEN_U8, 1, h, w, c);
    lumen_image is = lumen_image_nhwc(smooth, LUMEN_U8, 1, h, w, c);
    check_truncated(ts_tpath("trunc.png"), &in, 0, "truncated");
    check_truncated(ts_tpath("trunc.png"), &in, 20, "truncated"); /* inside IHDR */
    check_truncated(ts_tpath("trunc.jpg"), &is, 0, "truncated");
    check_truncated(ts_tpath("trunc.jpg"), &is, 300, "truncated");
    check_truncated(ts_tpath("trunc.tif"), &in, 0, "truncated");
    check_truncated(ts_tpath("trunc.tif"), &in, 5, "truncated");
    check_truncated(ts_tpath("trunc.npy"), &in, 0, "truncated");
    check_truncated(ts_tpath("trunc.npy"), &in, 40, "truncated"); /* inside the header */
    free(noise);
    free(smooth);
}

/* Damaged compressed strips (directory intact) fail while decoding rows. */
static void test_tiff_corrupt_strip(void **state)
{
    (void)state;
    const int w = 64, h = 64;
    uint8_t *px = make_gradient(h, w, 1);
    const char *path = ts_tpath("deflate.tif");
    TIFF *tif = TIFFOpen(path, "w");
    assert_non_null(tif);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, h);
    for (int y = 0; y < h; y++)
        assert_true(TIFFWriteScanline(tif, px + y * w, (uint32_t)y, 0) >= 0);
    TIFFClose(tif);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_OK);
    assert_image(&got, LUMEN_U8, h, w, 1, px);
    lumen_image_free(&got);
    /* The strip follows the 8-byte header; the directory is at the end. */
    size_t n;
    unsigned char *b = ts_read_bytes(path, &n);
    memset(b + 10, 0xff, 16);
    ts_write_bytes(path, b, n);
    free(b);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("corrupt");
    assert_null(got.data);
    free(px);
}

static uint32_t crc32_bytes(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xffffffffu;
}

static size_t put_chunk(unsigned char *out, const char *type, const unsigned char *data,
                        uint32_t len)
{
    out[0] = (unsigned char)(len >> 24), out[1] = (unsigned char)(len >> 16);
    out[2] = (unsigned char)(len >> 8), out[3] = (unsigned char)len;
    memcpy(out + 4, type, 4);
    if (len) memcpy(out + 8, data, len);
    const uint32_t crc = crc32_bytes(out + 4, len + 4);
    unsigned char *c = out + 8 + len;
    c[0] = (unsigned char)(crc >> 24), c[1] = (unsigned char)(crc >> 16);
    c[2] = (unsigned char)(crc >> 8), c[3] = (unsigned char)crc;
    return 12 + len;
}

static void test_png_absurd_size(void **state)
{
    (void)state;
    /* A valid-looking 100000 x 100000 RGB header with a tiny IDAT. */
    unsigned char file[128];
    memcpy(file, "\x89PNG\r\n\x1a\n", 8);
    const unsigned char ihdr[13] = {0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0, 8, 2, 0, 0, 0};
    size_t n = 8 + put_chunk(file + 8, "IHDR", ihdr, 13);
    n += put_chunk(file + n, "IDAT", (const unsigned char *)"\x78\x9c\x03\x00", 4);
    n += put_chunk(file + n, "IEND", NULL, 0);
    const char *path = ts_tpath("huge.png");
    ts_write_bytes(path, file, n);
    lumen_image got;
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("too large");
    assert_null(got.data);
    /* Same file with a broken IHDR CRC. */
    file[8 + 8 + 13] ^= 0xff;
    ts_write_bytes(path, file, n);
    TS_CHECK_STATUS(lumen_read_image(path, &got), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
}

/* Asserts the destination still has `content` and no temp file was left. */
static void assert_untouched(const char *path, const char *content)
{
    size_t n;
    unsigned char *b = ts_read_bytes(path, &n);
    assert_int_equal(n, strlen(content));
    assert_memory_equal(b, content, n);
    free(b);
    assert_int_equal(count_hidden_files(), 0);
}

static void test_unsupported_writes(void **state)
{
    (void)state;
    float f[12] = {0};
    uint16_t u16[12] = {0};
    uint8_t u8[4 * 4 * 5] = {0};
    lumen_image f32 = lumen_image_nhwc(f, LUMEN_F32, 1, 2, 2, 3);
    lumen_image w16 = lumen_image_nhwc(u16, LUMEN_U16, 1, 2, 2, 3);
    lumen_image ga = lumen_image_nhwc(u8, LUMEN_U8, 1, 2, 2, 2);
    lumen_image c5 = lumen_image_nhwc(u8, LUMEN_U8, 1, 4, 4, 5);
    struct {
        const char *name;
        const lumen_image *im;
        const char *reason;
    } cases[] = {
        {"f32.png", &f32, ".tif"},   {"u16.jpg", &w16, "u8"},     {"f32.jpeg", &f32, "u8"},
        {"ga.jpg", &ga, "channels"}, {"c5.png", &c5, "channels"}, {"c5.tif", &c5, "channels"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = ts_tpath("%s", cases[i].name);
        TS_CHECK_STATUS(lumen_write_image(path, cases[i].im), LUMEN_ERR_UNSUPPORTED);
        ts_assert_error_mentions(path);
        ts_assert_error_mentions(cases[i].reason);
        assert_false(file_exists(path));
        /* An existing file under that name is left alone. */
        ts_write_bytes(path, "ORIGINAL", 8);
        TS_CHECK_STATUS(lumen_write_image(path, cases[i].im), LUMEN_ERR_UNSUPPORTED);
        assert_untouched(path, "ORIGINAL");
    }
    /* NPY takes 5 channels. */
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("c5.npy"), &c5), LUMEN_OK);
}

static void test_write_into_missing_directory(void **state)
{
    (void)state;
    uint8_t px[4] = {0};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 1);
    const char *exts[] = {"png", "jpg", "tif", "npy"};
    for (int i = 0; i < 4; i++) {
        const char *path = ts_tpath("no/such/dir/x.%s", exts[i]);
        TS_CHECK_STATUS(lumen_write_image(path, &im), LUMEN_ERR_IO);
        ts_assert_error_mentions(path);
        ts_assert_error_mentions(strerror(ENOENT));
        assert_false(file_exists(path));
    }
}

/* rename() fails when the destination is a non-empty directory: temp file removed. */
static void test_failed_rename(void **state)
{
    (void)state;
    uint8_t px[4] = {1, 2, 3, 4};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 1);
    const char *dir = ts_tpath("isdir.npy");
    assert_int_equal(mkdir(dir, 0755), 0);
    ts_write_bytes(ts_tpath("isdir.npy/keep"), "x", 1);
    TS_CHECK_STATUS(lumen_write_image(dir, &im), LUMEN_ERR_IO);
    ts_assert_error_mentions(dir);
    assert_int_equal(count_hidden_files(), 0);
    assert_true(file_exists(ts_tpath("isdir.npy/keep")));
}

/*
 * A file-size limit makes the writes fail part way (EFBIG): every writer must
 * report IO, remove its temporary file and leave the old destination as it was.
 */
static void test_failed_write_keeps_destination(void **state)
{
    (void)state;
    const int64_t h = 256, w = 256, c = 3;
    uint8_t *px = make_pixels(LUMEN_U8, h, w, c, 4);
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, h, w, c);
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    const char *exts[] = {"png", "jpg", "tif", "npy"};
    for (int i = 0; i < 4; i++) {
        const char *path = ts_tpath("keep.%s", exts[i]);
        const char *fresh = ts_tpath("fresh.%s", exts[i]);
        ts_write_bytes(path, "ORIGINAL", 8);
        struct rlimit lim = old;
        lim.rlim_cur = 4096;
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        const lumen_status s1 = lumen_write_image(path, &im);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", lumen_last_error());
        const lumen_status s2 = lumen_write_image(fresh, &im);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        if (s1 != LUMEN_ERR_IO) print_error("%s: status %d, \"%s\"\n", path, (int)s1, msg);
        assert_int_equal(s1, LUMEN_ERR_IO);
        assert_non_null(strstr(msg, path));
        assert_int_equal(s2, LUMEN_ERR_IO);
        assert_untouched(path, "ORIGINAL");
        assert_false(file_exists(fresh));
    }
    signal(SIGXFSZ, old_handler);
    free(px);
}

/* libtiff's handlers are process-wide: each thread must still get its own message. */
typedef struct reader_job {
    const char *path;
    int wrong; /* iterations whose status or message did not match */
} reader_job;

static void *read_bad_tiff(void *arg)
{
    reader_job *job = arg;
    for (int i = 0; i < 200; i++) {
        lumen_image got;
        if (lumen_read_image(job->path, &got) != LUMEN_ERR_CORRUPT ||
            !strstr(lumen_last_error(), job->path))
            job->wrong++;
    }
    return NULL;
}

static void test_tiff_errors_per_thread(void **state)
{
    (void)state;
    uint8_t px[64 * 64] = {0};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 64, 64, 1);
    enum { N = 4 };
    char paths[N][256];
    reader_job jobs[N];
    pthread_t threads[N];
    for (int t = 0; t < N; t++) {
        snprintf(paths[t], sizeof paths[t], "%s", ts_tpath("thread%d.tif", t));
        TS_CHECK_STATUS(lumen_write_image(paths[t], &im), LUMEN_OK);
        assert_int_equal(truncate(paths[t], 1000 + 500 * t), 0);
        jobs[t] = (reader_job){paths[t], 0};
    }
    for (int t = 0; t < N; t++)
        assert_int_equal(pthread_create(&threads[t], NULL, read_bad_tiff, &jobs[t]), 0);
    for (int t = 0; t < N; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_int_equal(jobs[t].wrong, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_round_trip),
        cmocka_unit_test(test_tiff_round_trip),
        cmocka_unit_test(test_npy_round_trip),
        cmocka_unit_test(test_jpeg_round_trip),
        cmocka_unit_test(test_extension_case_insensitive),
        cmocka_unit_test(test_overwrite_and_modes),
        cmocka_unit_test(test_strided_writes),
        cmocka_unit_test(test_strided_jpeg),
        cmocka_unit_test(test_npy_header_layout),
        cmocka_unit_test(test_npy_trailing_data),
        cmocka_unit_test(test_npy_fortran_order),
        cmocka_unit_test(test_npy_f64),
        cmocka_unit_test(test_npy_versions_and_header_styles),
        cmocka_unit_test(test_npy_bad_headers),
        cmocka_unit_test(test_png_expansions),
        cmocka_unit_test(test_png_u16_on_disk),
        cmocka_unit_test(test_tiff_tags_and_variants),
        cmocka_unit_test(test_tiff_jpeg_ycbcr),
        cmocka_unit_test(test_tiff_errors_per_thread),
        cmocka_unit_test(test_jpeg_cmyk_unsupported),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_unknown_extension),
        cmocka_unit_test(test_nonexistent_and_directory),
        cmocka_unit_test(test_empty_and_garbage_files),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_tiff_corrupt_strip),
        cmocka_unit_test(test_png_absurd_size),
        cmocka_unit_test(test_unsupported_writes),
        cmocka_unit_test(test_write_into_missing_directory),
        cmocka_unit_test(test_failed_rename),
        cmocka_unit_test(test_failed_write_keeps_destination),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
