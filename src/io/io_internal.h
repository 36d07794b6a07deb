/*
 * Internal interface between io.c (dispatch, limits, orientation, atomic
 * writes), tempfile.c (temporaries and their clean-up), exif.c and the
 * per-format readers and writers. Not installed. docs/io.md is the user's view.
 *
 * Contract for every format:
 *   - readers get a lumen_io_src: a stream positioned at offset 0 of a
 *     non-empty file or memory buffer, its size, the pixel limit and a
 *     metadata struct to fill (ICC, EXIF, XMP, orientation: whatever the
 *     format holds). On success they fill `out` with a new contiguous n=1 HWC
 *     image (see lumen_io_alloc_image), pixels as stored: io.c applies the
 *     orientation. On failure they free whatever they allocated in `out`,
 *     leave it zeroed and return the status from lumen_set_error(); io.c
 *     frees the metadata;
 *   - they check the declared size against the pixel limit and, where the
 *     format bounds its compression, against the stream's size, before
 *     allocating for the pixels (lumen_io_alloc_image does the first);
 *   - `check` functions validate dtype/channels/size/options for a format
 *     before any file is created, so an unsupported write never touches disk;
 *   - writers get an already checked n=1 image, the options, the metadata to
 *     store (never NULL, possibly empty) and a stream on a temporary file;
 *     io.c flushes, closes and renames it, or unlinks it on failure.
 * `path` is only used in messages (the user's path, not the temp one).
 */
#ifndef LUMEN_IO_INTERNAL_H
#define LUMEN_IO_INTERNAL_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Hard cap whatever the configured limit (int64 products below stay far from overflow). */
#define LUMEN_IO_MAX_PIXELS ((uint64_t)1 << 31)
/* Largest channel count any reader accepts (NPY may carry many channels). */
#define LUMEN_IO_MAX_CHANNELS 4096
/* The most a DEFLATE stream can expand: 258 bytes per 2 bits at best is 1032:1; the margin
 * covers headers. PNG and deflated TIFF/EXR cannot hold more raw bytes than this x file size. */
#define LUMEN_IO_DEFLATE_RATIO 1040u

typedef struct lumen_io_src {
    const char *path;           /* for messages */
    FILE *f;                    /* at offset 0 */
    uint64_t size;              /* bytes in the stream */
    uint64_t max_pixels;        /* the limit for this read; 0: only LUMEN_IO_MAX_PIXELS */
    lumen_image_metadata *meta; /* never NULL; zeroed on entry */
} lumen_io_src;

typedef struct lumen_io_dst {
    const char *path;                 /* for messages */
    FILE *f;                          /* the temporary file */
    const lumen_write_options *opt;   /* never NULL */
    const lumen_image_metadata *meta; /* never NULL; orientation already folded into exif */
} lumen_io_dst;

/* h, w, c > 0, h*w within the hard cap and src->max_pixels, c <= LUMEN_IO_MAX_CHANNELS
 * (CORRUPT for zero, UNSUPPORTED over a limit, naming the file and the limit). src may be
 * NULL (then only the hard cap applies: tensors). */
lumen_status lumen_io_check_dims(const lumen_io_src *src, const char *path, uint64_t h, uint64_t w,
                                 uint64_t c);
/* CORRUPT when `raw_bytes` of image data cannot come from a stream of src->size bytes that
 * expands at most `ratio` times (1: stored as is; LUMEN_IO_DEFLATE_RATIO: deflate). */
lumen_status lumen_io_check_file_holds(const lumen_io_src *src, uint64_t raw_bytes, uint64_t ratio,
                                       const char *what);

/*
 * lumen_io_check_dims, then mallocs a contiguous n=1 HWC image into `out`.
 * Fails with CORRUPT (zero size), UNSUPPORTED (too large) or OUT_OF_MEMORY.
 */
lumen_status lumen_io_alloc_image(const lumen_io_src *src, lumen_image *out, lumen_dtype dtype,
                                  uint64_t h, uint64_t w, uint64_t c);

/* Copies n bytes into a new buffer at *dst (freeing what was there); OUT_OF_MEMORY names path. */
lumen_status lumen_io_store_blob(const char *path, unsigned char **dst, size_t *dst_size,
                                 const void *data, size_t n);

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

/* Reads the whole stream (src->size bytes) into a new buffer, for whole-buffer decoders. */
lumen_status lumen_io_slurp(const lumen_io_src *src, unsigned char **out);

/* ---- EXIF and orientation (exif.c) ---- */

/* The Orientation (0x0112) of IFD0 of a TIFF-structured EXIF block, 1..8, or 0 if absent or
 * malformed. Bounds-checked: the block comes from the file. */
int lumen_io_exif_orientation(const unsigned char *exif, size_t n);
/* Rewrites that Orientation in place; false if the block has none. */
bool lumen_io_exif_set_orientation(unsigned char *exif, size_t n, int orientation);
/* Replaces img's pixels by their displayed form for an EXIF orientation 2..8 (5..8 swap h and
 * w); 0 and 1 leave it as is. OUT_OF_MEMORY leaves img untouched. */
lumen_status lumen_io_apply_orientation(const char *path, lumen_image *img, int orientation);

/* ---- temporaries (tempfile.c) ---- */

/* Creates "<dir>/.<name>.lumen-tmp-<pid>-XXXXXX" next to path (mode from the umask, or an
 * existing destination's), registers it for removal on SIGINT/SIGTERM/SIGHUP (handlers are
 * installed while any temporary exists) and, once per folder and process, removes stale
 * temporaries whose process is gone (a SIGKILL's debris). */
lumen_status lumen_io_temp_create(const char *path, char **tmp_out, int *fd_out);
/* Unregisters tmp (after rename or unlink) and frees it. */
void lumen_io_temp_release(char *tmp);

typedef lumen_status (*lumen_io_reader)(const lumen_io_src *src, lumen_image *out);
typedef lumen_status (*lumen_io_writer)(const lumen_io_dst *dst, const lumen_image *img);
/* Opens path (refusing folders and empty files) and runs `read` on it; `out` is zeroed and
 * `meta` freed on failure. meta may be NULL (tensors). */
lumen_status lumen_io_read_file(const char *path, lumen_io_reader read, uint64_t max_pixels,
                                lumen_image *out, lumen_image_metadata *meta);
/* Runs `write` on a temporary file next to path, then renames it over path (unlinked on
 * failure): lumen_write_image(_ex) and lumen_write_tensor share it. */
lumen_status lumen_io_write_atomic(const char *path, const lumen_image *img,
                                   const lumen_write_options *opt, const lumen_image_metadata *meta,
                                   lumen_io_writer write);

/*
 * Decodes an in-memory file as lumen_read_image_ex would a file named "x<ext>" (".png",
 * ".jpg", ".tif", ".npy", ".webp", ".exr"...): the fuzzers' entry point. opt and meta may be
 * NULL. `name` is used in messages (NULL: "<memory>").
 */
lumen_status lumen_io_decode_memory(const char *ext, const void *buf, size_t len, const char *name,
                                    const lumen_read_options *opt, lumen_image *out,
                                    lumen_image_metadata *meta);

#define LUMEN_IO_FORMAT(fmt)                                                                       \
    lumen_status lumen_io_read_##fmt(const lumen_io_src *src, lumen_image *out);                   \
    lumen_status lumen_io_check_##fmt(const char *path, const lumen_image *img,                    \
                                      const lumen_write_options *opt);                             \
    lumen_status lumen_io_write_##fmt(const lumen_io_dst *dst, const lumen_image *img)
LUMEN_IO_FORMAT(png);
LUMEN_IO_FORMAT(jpeg);
LUMEN_IO_FORMAT(tiff);
LUMEN_IO_FORMAT(npy);
LUMEN_IO_FORMAT(webp);
LUMEN_IO_FORMAT(exr);
#undef LUMEN_IO_FORMAT

#endif
