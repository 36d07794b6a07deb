/*
 * Image IO, issue 12: EXIF orientation applied on read (as cv2.imread), ICC/EXIF/XMP carried
 * from file to file (JPEG, PNG, TIFF, WebP), JPEG/WebP quality, WebP and OpenEXR (float and
 * half) round trips, and the limits: the pixel limit (API, option, $LUMEN_MAX_PIXELS) and
 * headers that promise more data than the file can hold. Source files are made with the
 * format libraries directly, so a lumen writer bug cannot hide a reader bug.
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs stdarg, stddef, stdint and setjmp first. */
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "lumen.h"
#include "test_tmpdir.h"

static int group_setup(void **state)
{
    (void)state;
    unsetenv("LUMEN_MAX_PIXELS");
    return ts_tmpdir_make("lumen-test-io-meta");
}

static int group_teardown(void **state)
{
    (void)state;
    return ts_tmpdir_remove();
}

/* ---- fixtures: EXIF, ICC, XMP --------------------------------------------- */

/* A little-endian EXIF block: IFD0 with Orientation (and Make, so it is not the only tag). */
#define EXIF_LEN 46
static void make_exif(unsigned char out[EXIF_LEN], int orientation, bool big_endian)
{
    static const unsigned char le[EXIF_LEN] = {
        'I',  'I',  42,  0,   8,   0, 0, 0,              /* header, IFD0 at 8 */
        2,    0,                                         /* two entries */
        0x0f, 0x01, 2,   0,   6,   0, 0, 0, 38, 0, 0, 0, /* Make, ASCII x6 at 38 */
        0x12, 0x01, 3,   0,   1,   0, 0, 0, 0,  0, 0, 0, /* Orientation, SHORT x1 (set below) */
        0,    0,    0,   0,                              /* no next IFD */
        'l',  'u',  'm', 'e', 'n', 0, 0, 0};
    static const unsigned char be[EXIF_LEN] = {
        'M', 'M', 0, 42, 0, 0,  0,    8,    0,   2,   0x01, 0x0f, 0, 2, 0, 0,
        0,   6,   0, 0,  0, 38, 0x01, 0x12, 0,   3,   0,    0,    0, 1, 0, 0,
        0,   0,   0, 0,  0, 0,  'l',  'u',  'm', 'e', 'n',  0,    0, 0};
    memcpy(out, big_endian ? be : le, EXIF_LEN);
    out[big_endian ? 31 : 30] = (unsigned char)orientation;
}

static int exif_orientation_at(const unsigned char *exif)
{
    return exif[0] == 'I' ? exif[30] | exif[31] << 8 : exif[31] | exif[30] << 8;
}

/* A profile with a valid header (what libpng checks before storing one: size, 'acsp', a
 * gray data colour space, XYZ PCS, D50, no tags) and recognisable filler: lumen carries
 * profiles, it does not interpret them. */
static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static unsigned char *make_icc(size_t n)
{
    unsigned char *p = malloc(n);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + 3);
    memset(p, 0, 132);
    put_be32(p, (uint32_t)n);
    p[8] = 4; /* version 4.0 */
    memcpy(p + 12, "mntr", 4);
    memcpy(p + 16, "GRAY", 4);
    memcpy(p + 20, "XYZ ", 4);
    memcpy(p + 36, "acsp", 4);
    put_be32(p + 68, 0xf6d6), put_be32(p + 72, 0x10000), put_be32(p + 76, 0xd32d); /* D50 */
    return p;
}

static const char XMP[] = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF/></x:xmpmeta>";

/* ---- fixtures: images with four flat quadrants --------------------------- */

/* Gray w x h with quadrants TL=A, TR=B, BL=C, BR=D (16-pixel blocks survive JPEG). */
static const uint8_t QA = 20, QB = 90, QC = 160, QD = 230;

static uint8_t *quadrants(int w, int h)
{
    uint8_t *p = malloc((size_t)w * h);
    assert_non_null(p);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            p[y * w + x] = y < h / 2 ? (x < w / 2 ? QA : QB) : (x < w / 2 ? QC : QD);
    return p;
}

/* The quadrant values of a read image, sampled at the quadrant centres. */
static void sample_quadrants(const lumen_image *im, uint8_t q[4])
{
    const uint8_t *p = im->data;
    const int64_t w = im->w, h = im->h;
    const int64_t xs[2] = {w / 4, 3 * w / 4}, ys[2] = {h / 4, 3 * h / 4};
    for (int i = 0; i < 4; i++) {
        const int v = p[(ys[i / 2] * w + xs[i % 2]) * im->c];
        /* JPEG blurs a little: snap to the nearest of the four levels. */
        const uint8_t levels[4] = {QA, QB, QC, QD};
        int best = 0;
        for (int k = 1; k < 4; k++)
            if (abs(v - levels[k]) < abs(v - levels[best])) best = k;
        q[i] = levels[best];
    }
}

/* A gray JPEG made with libjpeg, with optional EXIF, XMP and ICC markers. */
static void write_jpeg_direct(const char *path, const uint8_t *px, int w, int h,
                              const unsigned char *exif, size_t exif_n, const unsigned char *icc,
                              size_t icc_n, const char *xmp)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
    c.input_components = 1, c.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    jpeg_start_compress(&c, TRUE);
    if (exif) {
        unsigned char *m = malloc(6 + exif_n);
        memcpy(m, "Exif\0\0", 6);
        memcpy(m + 6, exif, exif_n);
        jpeg_write_marker(&c, JPEG_APP0 + 1, m, (unsigned)(6 + exif_n));
        free(m);
    }
    if (xmp) {
        const size_t id = 29, n = strlen(xmp);
        unsigned char *m = malloc(id + n);
        memcpy(m, "http://ns.adobe.com/xap/1.0/", id);
        memcpy(m + id, xmp, n);
        jpeg_write_marker(&c, JPEG_APP0 + 1, m, (unsigned)(id + n));
        free(m);
    }
    if (icc) jpeg_write_icc_profile(&c, icc, (unsigned)icc_n);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)y * w);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
}

/* ---- orientation --------------------------------------------------------- */

/* The displayed quadrants [TL, TR, BL, BR] of stored [A, B, C, D] for orientations 1..8, as
 * the EXIF specification draws them (and cv2.imread returns them). */
static const uint8_t *expected_quadrants(int o)
{
    static uint8_t e[9][4];
    const uint8_t A = QA, B = QB, C = QC, D = QD;
    const uint8_t table[9][4] = {{0},          {A, B, C, D}, {B, A, D, C},
                                 {D, C, B, A}, {C, D, A, B}, {A, C, B, D},
                                 {C, A, D, B}, {D, B, C, A}, {B, D, A, C}};
    memcpy(e, table, sizeof e);
    return e[o];
}

static void test_orientation_applied(void **state)
{
    (void)state;
    const int w = 64, h = 32;
    uint8_t *px = quadrants(w, h);
    for (int be = 0; be < 2; be++)
        for (int o = 1; o <= 8; o++) {
            unsigned char exif[EXIF_LEN];
            make_exif(exif, o, be);
            const char *path = ts_tpath("orient%d%s.jpg", o, be ? "be" : "le");
            write_jpeg_direct(path, px, w, h, exif, EXIF_LEN, NULL, 0, NULL);
            lumen_image im;
            lumen_image_metadata meta;
            TS_CHECK_STATUS(lumen_read_image_ex(path, NULL, &im, &meta), LUMEN_OK);
            const bool swapped = o >= 5;
            assert_int_equal(im.w, swapped ? h : w);
            assert_int_equal(im.h, swapped ? w : h);
            uint8_t q[4];
            sample_quadrants(&im, q);
            assert_memory_equal(q, expected_quadrants(o), 4);
            /* Applied: the metadata says 1 now, in the field and inside the EXIF block. */
            assert_int_equal(meta.orientation, 1);
            assert_int_equal(meta.exif_size, EXIF_LEN);
            assert_int_equal(exif_orientation_at(meta.exif), 1);
            lumen_image_metadata_free(&meta);
            lumen_image_free(&im);
            /* lumen_read_image applies it too (the default). */
            TS_CHECK_STATUS(lumen_read_image(path, &im), LUMEN_OK);
            assert_int_equal(im.w, swapped ? h : w);
            lumen_image_free(&im);
            /* ignore_orientation: the pixels as stored, the orientation kept. */
            lumen_read_options opt = lumen_read_options_default();
            opt.ignore_orientation = 1;
            TS_CHECK_STATUS(lumen_read_image_ex(path, &opt, &im, &meta), LUMEN_OK);
            assert_int_equal(im.w, w);
            sample_quadrants(&im, q);
            assert_memory_equal(q, expected_quadrants(1), 4);
            assert_int_equal(meta.orientation, o);
            assert_int_equal(exif_orientation_at(meta.exif), o);
            lumen_image_metadata_free(&meta);
            lumen_image_free(&im);
        }
    free(px);
}

/* Malformed EXIF never breaks a read: no orientation is applied. */
static void test_orientation_malformed_exif(void **state)
{
    (void)state;
    uint8_t *px = quadrants(32, 32);
    unsigned char exif[EXIF_LEN];
    const struct {
        int at;
        unsigned char v;
    } breaks[] = {{4, 200}, {8, 0xff}, {30, 9}, {24, 4}, {0, 'X'}};
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        make_exif(exif, 6, false);
        exif[breaks[i].at] = breaks[i].v;
        const char *path = ts_tpath("badexif%zu.jpg", i);
        write_jpeg_direct(path, px, 32, 32, exif, EXIF_LEN, NULL, 0, NULL);
        lumen_image im;
        lumen_image_metadata meta;
        TS_CHECK_STATUS(lumen_read_image_ex(path, NULL, &im, &meta), LUMEN_OK);
        uint8_t q[4];
        sample_quadrants(&im, q);
        assert_memory_equal(q, expected_quadrants(1), 4);
        assert_int_equal(meta.orientation, 0);
        lumen_image_metadata_free(&meta);
        lumen_image_free(&im);
    }
    free(px);
}

/* ---- metadata carried ---------------------------------------------------- */

static void assert_blob(const unsigned char *got, size_t got_n, const void *want, size_t want_n)
{
    assert_int_equal(got_n, want_n);
    assert_non_null(got);
    assert_memory_equal(got, want, want_n);
}

/* The photo: orientation 6 and an ICC profile. Read, then written to every format
 * that can hold them: upright pixels, the profile, EXIF (orientation 1) and XMP carried. */
static void test_photo_metadata_carried(void **state)
{
    (void)state;
    const int w = 64, h = 32;
    const size_t icc_n = 70000; /* more than one JPEG marker: split over several APP2s */
    uint8_t *px = quadrants(w, h);
    unsigned char exif[EXIF_LEN];
    make_exif(exif, 6, false);
    unsigned char *icc = make_icc(icc_n);
    const char *src = ts_tpath("photo.jpg");
    write_jpeg_direct(src, px, w, h, exif, EXIF_LEN, icc, icc_n, XMP);

    lumen_image im;
    lumen_image_metadata meta;
    TS_CHECK_STATUS(lumen_read_image_ex(src, NULL, &im, &meta), LUMEN_OK);
    assert_blob(meta.icc, meta.icc_size, icc, icc_n);
    assert_blob(meta.xmp, meta.xmp_size, XMP, strlen(XMP));
    assert_int_equal(im.w, h); /* upright */
    /* RGB for WebP, which has no gray. */
    lumen_image rgb = {0};
    uint8_t *rgbp = malloc((size_t)(im.w * im.h * 3));
    for (int64_t i = 0; i < im.w * im.h; i++)
        memset(rgbp + 3 * i, ((uint8_t *)im.data)[i], 3);
    rgb = lumen_image_nhwc(rgbp, LUMEN_U8, 1, im.h, im.w, 3);

    const char *outs[] = {"out.jpg", "out.png", "out.tif", "out.webp"};
    for (size_t i = 0; i < 4; i++) {
        const char *path = ts_tpath("%s", outs[i]);
        const bool webp = strstr(outs[i], ".webp") != NULL;
        TS_CHECK_STATUS(lumen_write_image_ex(path, webp ? &rgb : &im, NULL, &meta), LUMEN_OK);
        lumen_image back;
        lumen_image_metadata m2;
        TS_CHECK_STATUS(lumen_read_image_ex(path, NULL, &back, &m2), LUMEN_OK);
        /* Upright, and not turned again. */
        assert_int_equal(back.w, h);
        assert_int_equal(back.h, w);
        uint8_t q[4];
        sample_quadrants(&back, q);
        assert_memory_equal(q, expected_quadrants(6), 4);
        assert_blob(m2.icc, m2.icc_size, icc, icc_n);
        assert_blob(m2.xmp, m2.xmp_size, XMP, strlen(XMP));
        if (!strstr(outs[i], ".tif")) { /* TIFF does not carry EXIF (docs/io.md) */
            assert_int_equal(m2.exif_size, EXIF_LEN);
            assert_int_equal(exif_orientation_at(m2.exif), 1);
        }
        lumen_image_metadata_free(&m2);
        lumen_image_free(&back);
    }
    /* The JPEG's profile, read by libjpeg itself. */
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr err;
    d.err = jpeg_std_error(&err);
    jpeg_create_decompress(&d);
    FILE *f = fopen(ts_tpath("out.jpg"), "rb");
    jpeg_stdio_src(&d, f);
    jpeg_save_markers(&d, JPEG_APP0 + 2, 0xffff);
    jpeg_read_header(&d, TRUE);
    JOCTET *got = NULL;
    unsigned got_n = 0;
    assert_true(jpeg_read_icc_profile(&d, &got, &got_n));
    assert_blob(got, got_n, icc, icc_n);
    free(got);
    jpeg_destroy_decompress(&d);
    fclose(f);

    /* Raw pixels + orientation 6 carried: still displayed upright by the next reader. */
    lumen_read_options raw = lumen_read_options_default();
    raw.ignore_orientation = 1;
    lumen_image_metadata_free(&meta);
    lumen_image_free(&im);
    TS_CHECK_STATUS(lumen_read_image_ex(src, &raw, &im, &meta), LUMEN_OK);
    TS_CHECK_STATUS(lumen_write_image_ex(ts_tpath("raw.png"), &im, NULL, &meta), LUMEN_OK);
    lumen_image back;
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("raw.png"), &back), LUMEN_OK);
    assert_int_equal(back.w, h);
    lumen_image_free(&back);
    /* The orientation field wins over the block's: set 1 and the pixels stay as they are. */
    meta.orientation = 1;
    TS_CHECK_STATUS(lumen_write_image_ex(ts_tpath("raw1.png"), &im, NULL, &meta), LUMEN_OK);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("raw1.png"), &back), LUMEN_OK);
    assert_int_equal(back.w, w);
    lumen_image_free(&back);
    /* TIFF stores the orientation as its own tag. */
    meta.orientation = 6;
    TS_CHECK_STATUS(lumen_write_image_ex(ts_tpath("raw.tif"), &im, NULL, &meta), LUMEN_OK);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("raw.tif"), &back), LUMEN_OK);
    assert_int_equal(back.w, h);
    lumen_image_free(&back);

    lumen_image_metadata_free(&meta);
    lumen_image_free(&im);
    free(rgbp);
    free(icc);
    free(px);
}

/* lumen_read_image_ex with meta NULL, and lumen_write_image_ex with NULL options/meta. */
static void test_ex_null_arguments(void **state)
{
    (void)state;
    uint8_t px[12] = {0};
    lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 3);
    TS_CHECK_STATUS(lumen_write_image_ex(ts_tpath("n.png"), &im, NULL, NULL), LUMEN_OK);
    lumen_image back;
    TS_CHECK_STATUS(lumen_read_image_ex(ts_tpath("n.png"), NULL, &back, NULL), LUMEN_OK);
    lumen_image_free(&back);
    lumen_image_metadata meta = {.orientation = 3};
    TS_CHECK_STATUS(lumen_read_image_ex(NULL, NULL, &back, &meta), LUMEN_ERR_INVALID_ARGUMENT);
    assert_int_equal(meta.orientation, 0); /* zeroed on failure */
    TS_CHECK_STATUS(lumen_read_image_ex(ts_tpath("missing.png"), NULL, &back, &meta), LUMEN_ERR_IO);
    assert_null(back.data);
    lumen_image_metadata_free(NULL);
}

/* ---- quality, WebP, EXR -------------------------------------------------- */

static uint8_t *noise_rgb(int w, int h, int c)
{
    uint8_t *p = malloc((size_t)w * h * c);
    uint32_t s = 12345;
    for (int i = 0; i < w * h * c; i++) {
        s = s * 1664525u + 1013904223u;
        /* smooth + noise: lossy coders have something to trade */
        p[i] = (uint8_t)(((i / c) % w) * 2 + (s >> 28));
    }
    return p;
}

static void test_quality(void **state)
{
    (void)state;
    uint8_t *px = noise_rgb(96, 64, 3);
    const lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 64, 96, 3);
    lumen_write_options opt = lumen_write_options_default();
    const char *exts[] = {"jpg", "webp"};
    for (int e = 0; e < 2; e++) {
        off_t sizes[3];
        const int qs[3] = {10, 0, 100};
        for (int i = 0; i < 3; i++) {
            opt.quality = qs[i];
            TS_CHECK_STATUS(lumen_write_image_ex(ts_tpath("q%d.%s", i, exts[e]), &im, &opt, NULL),
                         LUMEN_OK);
            sizes[i] = ts_file_size(ts_tpath("q%d.%s", i, exts[e]));
        }
        /* 10 < default (95 JPEG, 90 WebP) < 100 */
        assert_true(sizes[0] < sizes[1]);
        assert_true(sizes[1] < sizes[2]);
        for (int bad = 0; bad < 2; bad++) {
            opt.quality = bad ? 101 : -1;
            const char *path = ts_tpath("bad.%s", exts[e]);
            TS_CHECK_STATUS(lumen_write_image_ex(path, &im, &opt, NULL), LUMEN_ERR_INVALID_ARGUMENT);
            ts_assert_error_mentions("quality");
            assert_int_equal(access(path, F_OK), -1);
        }
        opt.quality = 0;
    }
    free(px);
}

static void test_webp(void **state)
{
    (void)state;
    for (int c = 3; c <= 4; c++) {
        uint8_t *px = noise_rgb(33, 17, c);
        const lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 17, 33, c);
        lumen_write_options opt = {.lossless = 1};
        const char *path = ts_tpath("l%d.webp", c);
        TS_CHECK_STATUS(lumen_write_image_ex(path, &im, &opt, NULL), LUMEN_OK);
        lumen_image back;
        TS_CHECK_STATUS(lumen_read_image(path, &back), LUMEN_OK);
        assert_int_equal(back.c, c);
        assert_int_equal(back.w, 33);
        assert_int_equal(back.h, 17);
        assert_memory_equal(back.data, px, (size_t)33 * 17 * c);
        lumen_image_free(&back);
        /* Lossy: close. */
        TS_CHECK_STATUS(lumen_write_image(ts_tpath("y%d.webp", c), &im), LUMEN_OK);
        TS_CHECK_STATUS(lumen_read_image(ts_tpath("y%d.webp", c), &back), LUMEN_OK);
        double err = 0;
        for (int i = 0; i < 33 * 17 * c; i++)
            err += fabs((double)((uint8_t *)back.data)[i] - px[i]);
        assert_true(err / (33 * 17 * c) < 8.0);
        lumen_image_free(&back);
        /* From memory, as the fuzzers and stdin readers call it. */
        size_t n;
        unsigned char *bytes = ts_read_bytes(path, &n);
        TS_CHECK_STATUS(lumen_read_image_memory(bytes, n, "webp", NULL, &back, NULL), LUMEN_OK);
        assert_memory_equal(back.data, px, (size_t)33 * 17 * c);
        lumen_image_free(&back);
        /* Truncated. */
        ts_write_bytes(ts_tpath("t.webp"), bytes, n - 10);
        TS_CHECK_STATUS(lumen_read_image(ts_tpath("t.webp"), &back), LUMEN_ERR_CORRUPT);
        ts_assert_error_mentions("t.webp");
        free(bytes);
        free(px);
    }
    uint8_t gray[4] = {0};
    const lumen_image g = lumen_image_nhwc(gray, LUMEN_U8, 1, 2, 2, 1);
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("g.webp"), &g), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("RGB or RGBA");
    TS_CHECK_STATUS(lumen_check_write_image(ts_tpath("g.webp"), LUMEN_U16, 3, NULL),
                 LUMEN_ERR_UNSUPPORTED);
    TS_CHECK_STATUS(lumen_check_write_image(ts_tpath("g.webp"), LUMEN_U8, 4, NULL), LUMEN_OK);
    ts_write_bytes(ts_tpath("junk.webp"), "RIFF\x10\0\0\0WEBPjunkjunkjunk", 20);
    lumen_image back;
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("junk.webp"), &back), LUMEN_ERR_CORRUPT);
}

static float *float_pixels(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((double)i * 0.37 - 11.0) * 1.7e-2f;
    return p;
}

static void test_exr(void **state)
{
    (void)state;
    const int w = 37, h = 41; /* more rows than one ZIP chunk (16), not a multiple */
    for (int c = 1; c <= 4; c++) {
        float *px = float_pixels((int64_t)w * h * c);
        px[0] = INFINITY;
        px[1 % (w * h * c)] = -0.0f;
        const lumen_image im = lumen_image_nhwc(px, LUMEN_F32, 1, h, w, c);
        const char *path = ts_tpath("f%d.exr", c);
        TS_CHECK_STATUS(lumen_write_image(path, &im), LUMEN_OK);
        lumen_image back;
        TS_CHECK_STATUS(lumen_read_image(path, &back), LUMEN_OK);
        assert_int_equal(back.dtype, LUMEN_F32);
        assert_int_equal(back.c, c);
        assert_int_equal(back.w, w);
        assert_int_equal(back.h, h);
        assert_memory_equal(back.data, px, (size_t)w * h * c * 4); /* float: bit-exact */
        lumen_image_free(&back);
        /* Half on request: half the size (about), values rounded to half precision. */
        lumen_write_options opt = {.half = 1};
        const char *hpath = ts_tpath("h%d.exr", c);
        TS_CHECK_STATUS(lumen_write_image_ex(hpath, &im, &opt, NULL), LUMEN_OK);
        TS_CHECK_STATUS(lumen_read_image(hpath, &back), LUMEN_OK);
        const float *b = back.data;
        assert_true(isinf(b[0]) && b[0] > 0);
        for (int i = 1; i < w * h * c; i++)
            assert_true(fabsf(b[i] - px[i]) <= fabsf(px[i]) * (1.0f / 1024) + 6e-8f);
        lumen_image_free(&back);
        assert_true(ts_file_size(hpath) < ts_file_size(path));
        free(px);
    }
    /* Values that half holds exactly come back exactly, NaN stays NaN, overflow is inf. */
    float v[8] = {1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f, NAN, 1e6f, 0.1f};
    const lumen_image im = lumen_image_nhwc(v, LUMEN_F32, 1, 1, 8, 1);
    lumen_write_options opt = {.half = 1};
    TS_CHECK_STATUS(lumen_write_image_ex(ts_tpath("v.exr"), &im, &opt, NULL), LUMEN_OK);
    lumen_image back;
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("v.exr"), &back), LUMEN_OK);
    const float *b = back.data;
    assert_memory_equal(b, v, 5 * sizeof(float));
    assert_true(isnan(b[5]));
    assert_true(isinf(b[6]));
    assert_true(fabsf(b[7] - 0.1f) < 1e-4f && b[7] != 0.1f);
    lumen_image_free(&back);
    /* u8 is refused before anything is written. */
    uint8_t u[4] = {0};
    const lumen_image u8 = lumen_image_nhwc(u, LUMEN_U8, 1, 2, 2, 1);
    TS_CHECK_STATUS(lumen_write_image(ts_tpath("u.exr"), &u8), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("f32");
    assert_int_equal(access(ts_tpath("u.exr"), F_OK), -1);
    /* Truncated and junk files. */
    size_t n;
    unsigned char *bytes = ts_read_bytes(ts_tpath("f3.exr"), &n);
    ts_write_bytes(ts_tpath("t.exr"), bytes, n / 2);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("t.exr"), &back), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("t.exr");
    assert_null(back.data);
    ts_write_bytes(ts_tpath("j.exr"), "not an exr", 10);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("j.exr"), &back), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions("not an OpenEXR file");
    free(bytes);
}

/* ---- limits -------------------------------------------------------------- */

static uint32_t crc32_bytes(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

static size_t put_chunk(unsigned char *out, const char *type, const unsigned char *data, size_t len)
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

/* The 68-byte PNG: 2147483647 x 1 gray, a valid header and a tiny IDAT. */
static size_t make_tall_png(unsigned char file[128])
{
    memcpy(file, "\x89PNG\r\n\x1a\n", 8);
    const unsigned char ihdr[13] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, 8, 0, 0, 0, 0};
    size_t n = 8 + put_chunk(file + 8, "IHDR", ihdr, 13);
    n += put_chunk(file + n, "IDAT", (const unsigned char *)"\x78\x9c\x03\x00", 4);
    n += put_chunk(file + n, "IEND", NULL, 0);
    return n;
}

static void test_header_larger_than_file(void **state)
{
    (void)state;
    unsigned char file[128];
    const size_t n = make_tall_png(file);
    const char *path = ts_tpath("tall.png");
    ts_write_bytes(path, file, n);
    lumen_image im;
    /* The pixel limit refuses it first... */
    TS_CHECK_STATUS(lumen_read_image(path, &im), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("limit of 268435456");
    /* ...and without a limit the file size does, before any allocation of that size. */
    lumen_read_options opt = {.max_pixels = UINT64_MAX};
    TS_CHECK_STATUS(lumen_read_image_ex(path, &opt, &im, NULL), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(path);
    char msg[64];
    snprintf(msg, sizeof msg, "more than a %zu-byte file can hold", n);
    ts_assert_error_mentions(msg);
    assert_null(im.data);
    /* The same from memory. */
    TS_CHECK_STATUS(lumen_read_image_memory(file, n, ".png", &opt, &im, NULL), LUMEN_ERR_CORRUPT);
    ts_assert_error_mentions(msg);
}

/* A real decompression bomb: a 30000 x 30000 1-bit PNG of ~100 KB (a 900-Mpixel image). */
static void write_bomb_png(const char *path, int side)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)side, (png_uint_32)side, 1, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 9);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    png_bytep row = calloc(1, (size_t)(side + 7) / 8);
    for (int y = 0; y < side; y++)
        png_write_row(png, row);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    fclose(f);
}

static void test_decompression_bomb(void **state)
{
    (void)state;
    const char *path = ts_tpath("bomb.png");
    write_bomb_png(path, 30000);
    assert_true(ts_file_size(path) < 200000);
    lumen_image im;
    TS_CHECK_STATUS(lumen_read_image(path, &im), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions(path);
    ts_assert_error_mentions("30000 x 30000 = 900000000 pixels");
    ts_assert_error_mentions("LUMEN_MAX_PIXELS");
    assert_null(im.data);
}

/* $LUMEN_MAX_PIXELS, the read option, then lumen_set_max_image_pixels (which is sticky, so it
 * comes last). Every format applies the limit before allocating. */
static void test_pixel_limit_sources(void **state)
{
    (void)state;
    uint8_t *px = noise_rgb(20, 20, 3);
    float *fx = float_pixels(20 * 20 * 3);
    const lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 20, 20, 3);
    const lumen_image fm = lumen_image_nhwc(fx, LUMEN_F32, 1, 20, 20, 3);
    const char *names[] = {"p.png", "p.jpg", "p.tif", "p.webp", "p.npy", "p.exr"};
    for (int i = 0; i < 6; i++)
        TS_CHECK_STATUS(lumen_write_image(ts_tpath("%s", names[i]), i == 5 ? &fm : &im), LUMEN_OK);
    assert_int_equal(lumen_get_max_image_pixels(), LUMEN_DEFAULT_MAX_IMAGE_PIXELS);
    lumen_image back;
    setenv("LUMEN_MAX_PIXELS", "399", 1);
    assert_int_equal(lumen_get_max_image_pixels(), 399);
    for (int i = 0; i < 6; i++) {
        TS_CHECK_STATUS(lumen_read_image(ts_tpath("%s", names[i]), &back), LUMEN_ERR_UNSUPPORTED);
        ts_assert_error_mentions(names[i]);
        ts_assert_error_mentions("limit of 399");
        assert_null(back.data);
    }
    setenv("LUMEN_MAX_PIXELS", "400", 1);
    for (int i = 0; i < 6; i++) {
        TS_CHECK_STATUS(lumen_read_image(ts_tpath("%s", names[i]), &back), LUMEN_OK);
        lumen_image_free(&back);
    }
    /* The option overrides the environment, per call. */
    lumen_read_options opt = {.max_pixels = 100};
    TS_CHECK_STATUS(lumen_read_image_ex(ts_tpath("p.png"), &opt, &back, NULL), LUMEN_ERR_UNSUPPORTED);
    setenv("LUMEN_MAX_PIXELS", "0", 1); /* 0: no limit */
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("p.png"), &back), LUMEN_OK);
    lumen_image_free(&back);
    const char *bad[] = {"abc", "", "-5", "12k", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("LUMEN_MAX_PIXELS", bad[i], 1);
        TS_CHECK_STATUS(lumen_read_image(ts_tpath("p.png"), &back), LUMEN_ERR_INVALID_ARGUMENT);
        ts_assert_error_mentions("LUMEN_MAX_PIXELS");
        ts_assert_error_mentions("p.png");
    }
    /* The API overrides the environment from then on. */
    lumen_set_max_image_pixels(10);
    assert_int_equal(lumen_get_max_image_pixels(), 10);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("p.png"), &back), LUMEN_ERR_UNSUPPORTED);
    ts_assert_error_mentions("limit of 10 ");
    lumen_set_max_image_pixels(0);
    TS_CHECK_STATUS(lumen_read_image(ts_tpath("p.png"), &back), LUMEN_OK);
    lumen_image_free(&back);
    lumen_set_max_image_pixels(LUMEN_DEFAULT_MAX_IMAGE_PIXELS);
    unsetenv("LUMEN_MAX_PIXELS");
    free(px);
    free(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orientation_applied),
        cmocka_unit_test(test_orientation_malformed_exif),
        cmocka_unit_test(test_photo_metadata_carried),
        cmocka_unit_test(test_ex_null_arguments),
        cmocka_unit_test(test_quality),
        cmocka_unit_test(test_webp),
        cmocka_unit_test(test_exr),
        cmocka_unit_test(test_header_larger_than_file),
        cmocka_unit_test(test_decompression_bomb),
        cmocka_unit_test(test_pixel_limit_sources),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
