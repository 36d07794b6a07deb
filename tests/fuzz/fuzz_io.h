/*
 * What every decoder harness shares (docs/fuzzing.md). One harness per format, each a few
 * lines: fuzz_png.c, fuzz_jpeg.c ... define FUZZ_EXT and FUZZ_LOSSLESS and include this.
 *
 * The input reaches the decoder through a file: lumen reads images by path (lumen_read_image
 * dispatches on the extension), and src/io has no memory-buffer entry point yet. The file lives
 * in a private folder on tmpfs (/dev/shm when it exists), so the cost is two syscalls' worth of
 * copying per input, small against any decode. Switch to lumen_io_decode_* when they exist.
 *
 * The checks, beyond "no crash, no sanitizer report, no leak, no hang":
 *   - failure: a status that is an error, a message, and `out` zeroed;
 *   - success: a contiguous n=1 HWC view of a known dtype, within the pixel limit set below,
 *     every byte readable (a short allocation shows as an ASan report);
 *   - lossless formats: what was read is written back and read again, bit for bit the same
 *     (the writer is fuzzed by the decoder's variety of images for free).
 */
#ifndef LUMEN_FUZZ_IO_H
#define LUMEN_FUZZ_IO_H

#define _GNU_SOURCE /* mkdtemp */

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
#define FUZZ_MAX_PIXELS "4194304"
/* Round trips (write + read) only for images up to this many elements: they cost time. */
#define FUZZ_ROUNDTRIP_ELEMS (1 << 16)

static char fuzz_dir[256];
static char fuzz_in[300], fuzz_out[300];

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed: %s: ", #cond);                                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void fuzz_io_cleanup(void)
{
    unlink(fuzz_in);
    unlink(fuzz_out);
    rmdir(fuzz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* The limit src/io applies (issue 12, LUMEN_MAX_PIXELS); 0: do not overwrite one the user
     * set for a run. */
    setenv("LUMEN_MAX_PIXELS", FUZZ_MAX_PIXELS, 0);
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

static void fuzz_write_input(const uint8_t *data, size_t size)
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
    FUZZ_CHECK(img->dtype == LUMEN_U8 || img->dtype == LUMEN_U16 || img->dtype == LUMEN_F32,
               "dtype %d", (int)img->dtype);
    FUZZ_CHECK(img->n >= 1 && img->n <= max_n && img->c >= 1 && img->h >= 1 && img->w >= 1,
               "shape %lld x %lld x %lld x %lld", (long long)img->n, (long long)img->c,
               (long long)img->h, (long long)img->w);
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

/* Writes img back in the same format and reads it again: lossless formats must give the same
 * bytes, lossy ones at least the same shape. A write may refuse (a layout the writer lacks),
 * with a message. */
static void fuzz_roundtrip(const lumen_image *img, int lossless)
{
    if (img->n * img->c * img->h * img->w > FUZZ_ROUNDTRIP_ELEMS) return;
    const lumen_status ws = lumen_write_image(fuzz_out, img);
    if (ws != LUMEN_OK) {
        FUZZ_CHECK(ws != LUMEN_ERR_INTERNAL && lumen_last_error()[0], "write: status %d: %s",
                   (int)ws, lumen_last_error());
        return;
    }
    lumen_image back;
    const lumen_status rs = lumen_read_image(fuzz_out, &back);
    FUZZ_CHECK(rs == LUMEN_OK, "cannot read back what was written: %s", lumen_last_error());
    FUZZ_CHECK(back.c == img->c && back.h == img->h && back.w == img->w,
               "round trip changed the shape");
    if (lossless) {
        FUZZ_CHECK(back.dtype == img->dtype, "round trip changed the dtype");
        const size_t bytes = (size_t)(img->c * img->h * img->w) * lumen_dtype_size(img->dtype);
        FUZZ_CHECK(memcmp(back.data, img->data, bytes) == 0, "round trip changed the pixels");
    }
    lumen_image_free(&back);
}

/* The body of a decoder harness: read the input as an image, check, round trip. */
static int fuzz_decode_image(const uint8_t *data, size_t size, int lossless)
{
    fuzz_write_input(data, size);
    lumen_image img;
    const lumen_status s = lumen_read_image(fuzz_in, &img);
    if (s != LUMEN_OK) {
        fuzz_check_failure(s, &img);
        return 0;
    }
    fuzz_check_image(&img, 1);
    fuzz_check_hwc(&img);
    fuzz_roundtrip(&img, lossless);
    lumen_image_free(&img);
    return 0;
}

#endif
