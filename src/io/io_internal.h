/*
 * Internal interface between io.c (dispatch, atomic writes) and the
 * per-format readers and writers. Not installed.
 *
 * Contract for every format:
 *   - readers get an open stream positioned at offset 0 of a non-empty
 *     regular file; on success they fill `out` with a new contiguous n=1 HWC
 *     image (see lumen_io_alloc_image); on failure they free whatever they
 *     allocated, leave `out` zeroed and return the status from
 *     lumen_set_error();
 *   - `check` functions validate dtype/channels/size for a format before any
 *     file is created, so an unsupported write never touches the disk;
 *   - writers get an already checked n=1 image and a stream on a temporary
 *     file; io.c flushes, closes and renames it, or unlinks it on failure.
 * `path` is only used in messages (it is the user's path, not the temp one).
 */
#ifndef LUMEN_IO_INTERNAL_H
#define LUMEN_IO_INTERNAL_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Readers refuse images with more pixels than this before allocating. */
#define LUMEN_IO_MAX_PIXELS ((uint64_t)1 << 31)
/* Largest channel count any reader accepts (NPY may carry many channels). */
#define LUMEN_IO_MAX_CHANNELS 4096

/* h, w, c > 0, h*w <= LUMEN_IO_MAX_PIXELS, c <= LUMEN_IO_MAX_CHANNELS (CORRUPT/UNSUPPORTED). */
lumen_status lumen_io_check_size(const char *path, uint64_t h, uint64_t w, uint64_t c);

/*
 * Validates h, w, c (all > 0, h*w <= LUMEN_IO_MAX_PIXELS, c <= LUMEN_IO_MAX_CHANNELS, byte
 * size fits size_t) and mallocs a contiguous n=1 HWC image into `out`.
 * Fails with CORRUPT (zero size), UNSUPPORTED (too large) or OUT_OF_MEMORY.
 */
lumen_status lumen_io_alloc_image(const char *path, lumen_image *out, lumen_dtype dtype, uint64_t h,
                                  uint64_t w, uint64_t c);

/* Copies row y of a strided n=1 view into `row` as w*c interleaved elements. */
void lumen_io_pack_row(const lumen_image *img, int64_t y, void *row);

/* Bytes of one packed row (w*c elements); the image has passed lumen_image_check. */
size_t lumen_io_row_bytes(const lumen_image *img);

/* True on little-endian hosts (every on-disk format here fixes its byte order). */
bool lumen_io_host_is_le(void);

/* Reverses the bytes of each of n elements of `size` bytes (2, 4 or 8) in place. */
void lumen_io_swap_bytes(void *data, size_t n, size_t size);

/* Stream-level helper: "truncated file" (EOF) vs. an I/O error after a short fread. */
lumen_status lumen_io_short_read(const char *path, FILE *f);

typedef lumen_status (*lumen_io_reader)(const char *path, FILE *f, lumen_image *out);
typedef lumen_status (*lumen_io_writer)(const char *path, FILE *f, const lumen_image *img);
/* Opens path (refusing folders and empty files) and runs `read` on it; `out` is zeroed on
 * failure. lumen_read_image and lumen_read_tensor share it. */
lumen_status lumen_io_read_file(const char *path, lumen_io_reader read, lumen_image *out);
/* Runs `write` on a temporary file next to path, then renames it over path (unlinked on
 * failure): lumen_write_image and lumen_write_tensor share it. */
lumen_status lumen_io_write_atomic(const char *path, const lumen_image *img, lumen_io_writer write);

lumen_status lumen_io_read_png(const char *path, FILE *f, lumen_image *out);
lumen_status lumen_io_check_png(const char *path, const lumen_image *img);
lumen_status lumen_io_write_png(const char *path, FILE *f, const lumen_image *img);

lumen_status lumen_io_read_jpeg(const char *path, FILE *f, lumen_image *out);
lumen_status lumen_io_check_jpeg(const char *path, const lumen_image *img);
lumen_status lumen_io_write_jpeg(const char *path, FILE *f, const lumen_image *img);

lumen_status lumen_io_read_tiff(const char *path, FILE *f, lumen_image *out);
lumen_status lumen_io_check_tiff(const char *path, const lumen_image *img);
lumen_status lumen_io_write_tiff(const char *path, FILE *f, const lumen_image *img);

lumen_status lumen_io_read_npy(const char *path, FILE *f, lumen_image *out);
lumen_status lumen_io_check_npy(const char *path, const lumen_image *img);
lumen_status lumen_io_write_npy(const char *path, FILE *f, const lumen_image *img);

#endif
