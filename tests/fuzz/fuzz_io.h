/*
 * What every decoder harness shares (docs/fuzzing.md). One harness per format, each a few
 * lines: fuzz_png.c, fuzz_jpeg.c ... define FUZZ_EXT and FUZZ_LOSSLESS and include this.
 *
 * The input is decoded from memory by lumen_read_image_memory (the same readers as
 * lumen_read_image_ex, on a buffer: no file per input), with metadata wanted (ICC, EXIF, XMP,
 * orientation: the EXIF parser is fuzzed with every format that carries it), once applying the
 * orientation and, when the file states one that moves pixels, once more ignoring it. Writes,
 * and lumen_read_tensor (which reads by path only), go through files in a private folder on
 * tmpfs (/dev/shm when it exists).
 *
 * The checks, beyond "no crash, no sanitizer report, no leak, no hang":
 *   - failure: an error status other than INTERNAL, a message, `out` and `meta` zeroed;
 *   - success: a contiguous n=1 HWC view of a known dtype, within the pixel limit set below,
 *     every byte readable (a short allocation shows as an ASan report); orientations 5..8
 *     swap h and w against the raw read;
 *   - lossless formats: what was read is written back with its metadata and read again, bit
 *     for bit the same (the writers are fuzzed by the decoders' variety of images for free).
 */
#ifndef LUMEN_FUZZ_IO_H
#define LUMEN_FUZZ_IO_H

#define _GNU_SOURCE /* mkdtemp */

#include "fuzz_check.h"
#include <lumen.h>
#include <lumen_ops.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pixel limit the harness asks for: 4 Mpixel (f32 x 4 channels = 64 MiB, far below the
 * 2048 MiB RSS limit make fuzz runs with). A header that promises more must be refused before
 * anything that size is allocated; libFuzzer reports a larger malloc as a crash. */
#define FUZZ_MAX_PIXELS ((uint64_t)1 << 22)
/* Round trips (write + read) only for images up to this many elements: they cost time. */
#define FUZZ_ROUNDTRIP_ELEMS (1 << 16)

static char fuzz_dir[256];
static char fuzz_in[300], fuzz_out[300];

static void fuzz_io_cleanup(void)
{
    unlink(fuzz_in);
    unlink(fuzz_out);
    rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* A header that promises more pixels must be refused before anything that size is
     * allocated (docs/io.md, "Limits"). */
    lumen_set_max_image_pixels(FUZZ_MAX_PIXELS);
    setenv("OMP_WAIT_POLICY", "passive", 0);
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/lumen-fuzz-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(fuzz_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    snprintf(fuzz_in, sizeof fuzz_in, "%s/in%s", fuzz_dir, FUZZ_EXT);
    snprintf(fuzz_out, sizeof fuzz_out, "%s/out%s", fuzz_dir, FUZZ_EXT);
    atexit(fuzz_io_cleanup);
    return 0;
}

static inline void fuzz_write_input(const uint8_t *data, size_t size)
{
    FILE *f = fopen(fuzz_in, "wb");
    FUZZ_CHECK(f, "cannot create %s", fuzz_in);
    FUZZ_CHECK(fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", fuzz_in);
}

/* A failed read: an error status, a message naming the reason, nothing left allocated. */
static void fuzz_check_failure(lumen_status s, const lumen_image *img)
{
    FUZZ_CHECK(s > LUMEN_OK && s <= LUMEN_ERR_INTERNAL, "status %d", (int)s);
    FUZZ_CHECK(s != LUMEN_ERR_INTERNAL, "internal error on a hostile file: %s", lumen_last_error());
    FUZZ_CHECK(lumen_last_error()[0] != '\0', "failed with status %d and no message", (int)s);
    const lumen_image zero = {0};
    FUZZ_CHECK(memcmp(img, &zero, sizeof zero) == 0, "out not zeroed after a failure");
}

/* A successful read: a well-formed contiguous view; returns the sum of its bytes so every one
 * is read (and the compiler cannot drop the loop). */
static unsigned fuzz_check_image(const lumen_image *img, int64_t max_n)
{
    FUZZ_CHECK(img->data, "no data");
    /* f16 from NPY's <f2; no file format gives bf16 */
    FUZZ_CHECK(img->dtype == LUMEN_U8 || img->dtype == LUMEN_U16 || img->dtype == LUMEN_F32 ||
                   img->dtype == LUMEN_F16,
               "dtype %d", (int)img->dtype);
    FUZZ_CHECK(img->n >= 1 && img->n <= max_n && img->c >= 1 && img->h >= 1 && img->w >= 1,
               "shape %lld x %lld x %lld x %lld", (long long)img->n, (long long)img->c,
               (long long)img->h, (long long)img->w);
    if (max_n == 1) /* images; tensors have no pixel limit */
        FUZZ_CHECK((uint64_t)(img->h * img->w) <= FUZZ_MAX_PIXELS,
                   "%lld x %lld pixels passed the limit", (long long)img->w, (long long)img->h);
    const size_t bytes = (size_t)(img->n * img->c * img->h * img->w) * lumen_dtype_size(img->dtype);
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++)
        sum += ((const unsigned char *)img->data)[i];
    return sum;
}

static void fuzz_check_hwc(const lumen_image *img)
{
    FUZZ_CHECK(img->stride_c == 1 && img->stride_w == img->c && img->stride_h == img->w * img->c &&
                   img->stride_n == img->h * img->w * img->c && img->device == 0,
               "not a contiguous host HWC view");
}

/* Writes img back in the same format, with its metadata, and reads it again: lossless formats
 * must give the same bytes, lossy ones at least the same shape. A write may refuse (a layout
 * the writer lacks), with a message. */
static void fuzz_roundtrip(const lumen_image *img, const lumen_image_metadata *meta, int lossless)
{
    if (img->n * img->c * img->h * img->w > FUZZ_ROUNDTRIP_ELEMS) return;
    const lumen_status ws = lumen_write_image_ex(fuzz_out, img, NULL, meta);
    if (ws != LUMEN_OK) {
        FUZZ_CHECK(ws != LUMEN_ERR_INTERNAL && lumen_last_error()[0], "write: status %d: %s",
                   (int)ws, lumen_last_error());
        return;
    }
    /* The orientation was applied on the first read and is 1 in meta: read back as stored. */
    lumen_read_options ro = lumen_read_options_default();
    ro.ignore_orientation = 1;
    lumen_image back;
    lumen_image_metadata bm;
    const lumen_status rs = lumen_read_image_ex(fuzz_out, &ro, &back, &bm);
    FUZZ_CHECK(rs == LUMEN_OK, "cannot read back what was written: %s", lumen_last_error());
    FUZZ_CHECK(back.c == img->c && back.h == img->h && back.w == img->w,
               "round trip changed the shape");
    if (lossless) {
        FUZZ_CHECK(back.dtype == img->dtype, "round trip changed the dtype");
        const size_t bytes = (size_t)(img->c * img->h * img->w) * lumen_dtype_size(img->dtype);
        FUZZ_CHECK(memcmp(back.data, img->data, bytes) == 0, "round trip changed the pixels");
    }
    lumen_image_free(&back);
    lumen_image_metadata_free(&bm);
}

static void fuzz_check_meta_zeroed(const lumen_image_metadata *meta)
{
    const lumen_image_metadata zero = {0};
    FUZZ_CHECK(memcmp(meta, &zero, sizeof zero) == 0, "metadata not zeroed after a failure");
}

/* The body of a decoder harness: decode the input from memory, check, round trip. */
static int fuzz_decode_image(const uint8_t *data, size_t size, int lossless)
{
    lumen_image img;
    lumen_image_metadata meta;
    const lumen_status s = lumen_read_image_memory(data, size, FUZZ_EXT, NULL, &img, &meta);
    if (s != LUMEN_OK) {
        fuzz_check_failure(s, &img);
        fuzz_check_meta_zeroed(&meta);
        return 0;
    }
    fuzz_check_image(&img, 1);
    fuzz_check_hwc(&img);
    FUZZ_CHECK(meta.orientation == 0 || meta.orientation == 1, "orientation %d after applying it",
               meta.orientation);
    FUZZ_CHECK((meta.icc == NULL) == (meta.icc_size == 0) &&
                   (meta.exif == NULL) == (meta.exif_size == 0) &&
                   (meta.xmp == NULL) == (meta.xmp_size == 0),
               "a metadata blob and its size disagree");

    /* As stored: the same pixels count, h and w swapped for orientations 5..8. */
    lumen_read_options raw_opt = lumen_read_options_default();
    raw_opt.ignore_orientation = 1;
    lumen_image raw;
    lumen_image_metadata raw_meta;
    const lumen_status rs =
        lumen_read_image_memory(data, size, FUZZ_EXT, &raw_opt, &raw, &raw_meta);
    FUZZ_CHECK(rs == LUMEN_OK, "reads with orientation applied but not without: %s",
               lumen_last_error());
    const int o = raw_meta.orientation;
    FUZZ_CHECK(o >= 0 && o <= 8, "orientation %d", o);
    const int swap = o >= 5;
    FUZZ_CHECK(raw.c == img.c && raw.dtype == img.dtype &&
                   (swap ? raw.h == img.w && raw.w == img.h : raw.h == img.h && raw.w == img.w),
               "orientation %d: %lld x %lld as stored, %lld x %lld applied", o, (long long)raw.w,
               (long long)raw.h, (long long)img.w, (long long)img.h);
    if (o <= 1) {
        const size_t bytes = (size_t)(img.c * img.h * img.w) * lumen_dtype_size(img.dtype);
        FUZZ_CHECK(memcmp(raw.data, img.data, bytes) == 0, "orientation %d changed pixels", o);
    }
    lumen_image_free(&raw);
    lumen_image_metadata_free(&raw_meta);

    fuzz_roundtrip(&img, &meta, lossless);
    lumen_image_free(&img);
    lumen_image_metadata_free(&meta);
    return 0;
}

#endif
