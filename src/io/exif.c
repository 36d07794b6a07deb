/*
 * The one EXIF field lumen interprets, Orientation (tag 0x0112 in IFD0), and
 * the transform it asks for. A reader of ~40 lines instead of libexif: lumen
 * needs one tag read and rewritten in place, and libexif would re-serialise
 * the whole block on write (reordering it, dropping what it does not know,
 * maker notes included). Everything is bounds-checked: the block comes from
 * the file (docs/io.md, "Orientation").
 */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>

#define EXIF_TAG_ORIENTATION 0x0112
#define EXIF_TYPE_SHORT 3

static unsigned get16(const unsigned char *p, bool le)
{
    return le ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static uint32_t get32(const unsigned char *p, bool le)
{
    return le ? (uint32_t)get16(p, true) | (uint32_t)get16(p + 2, true) << 16
              : (uint32_t)get16(p, false) << 16 | (uint32_t)get16(p + 2, false);
}

/* The Orientation entry's value field (2 bytes), or NULL; *le says the byte order. */
static unsigned char *find_orientation(unsigned char *exif, size_t n, bool *le)
{
    if (!exif || n < 8) return NULL;
    if (memcmp(exif, "II*\0", 4) == 0)
        *le = true;
    else if (memcmp(exif, "MM\0*", 4) == 0)
        *le = false;
    else
        return NULL;
    const uint32_t ifd = get32(exif + 4, *le);
    if (ifd < 8 || ifd > n - 2) return NULL;
    const unsigned count = get16(exif + ifd, *le);
    if ((n - ifd - 2) / 12 < count) return NULL;
    for (unsigned i = 0; i < count; i++) {
        unsigned char *e = exif + ifd + 2 + 12 * (size_t)i;
        if (get16(e, *le) == EXIF_TAG_ORIENTATION && get16(e + 2, *le) == EXIF_TYPE_SHORT &&
            get32(e + 4, *le) == 1)
            return e + 8; /* a single SHORT sits in the entry's value field */
    }
    return NULL;
}

int lumen_io_exif_orientation(const unsigned char *exif, size_t n)
{
    bool le;
    const unsigned char *v = find_orientation((unsigned char *)exif, n, &le);
    const unsigned o = v ? get16(v, le) : 0;
    return o >= 1 && o <= 8 ? (int)o : 0;
}

bool lumen_io_exif_set_orientation(unsigned char *exif, size_t n, int orientation)
{
    bool le;
    unsigned char *v = find_orientation(exif, n, &le);
    if (!v) return false;
    v[le ? 0 : 1] = (unsigned char)orientation;
    v[le ? 1 : 0] = 0;
    return true;
}

/*
 * Where displayed pixel (x, y) of a dw x dh result comes from in the stored w x h image, for
 * each EXIF orientation (the row is how the stored image must be turned to display it):
 * 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse,
 * 8 rotate 90 counter-clockwise.
 */
static void source_of(int o, int64_t x, int64_t y, int64_t w, int64_t h, int64_t *sx, int64_t *sy)
{
    switch (o) {
    case 2: *sx = w - 1 - x, *sy = y; break;
    case 3: *sx = w - 1 - x, *sy = h - 1 - y; break;
    case 4: *sx = x, *sy = h - 1 - y; break;
    case 5: *sx = y, *sy = x; break;
    case 6: *sx = y, *sy = h - 1 - x; break;
    case 7: *sx = w - 1 - y, *sy = h - 1 - x; break;
    default: *sx = w - 1 - y, *sy = x; break; /* 8 */
    }
}

lumen_status lumen_io_apply_orientation(const char *path, lumen_image *img, int orientation)
{
    if (orientation < 2 || orientation > 8) return LUMEN_OK;
    const int64_t w = img->w, h = img->h;
    const bool swap = orientation >= 5;
    const int64_t dw = swap ? h : w, dh = swap ? w : h;
    const size_t px = (size_t)img->c * lumen_dtype_size(img->dtype);
    unsigned char *dst = malloc((size_t)(w * h) * px);
    if (!dst)
        return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory applying orientation",
                               path);
    const unsigned char *src = img->data;
    unsigned char *d = dst;
    for (int64_t y = 0; y < dh; y++)
        for (int64_t x = 0; x < dw; x++, d += px) {
            int64_t sx, sy;
            source_of(orientation, x, y, w, h, &sx, &sy);
            memcpy(d, src + (size_t)(sy * w + sx) * px, px);
        }
    free(img->data);
    *img = lumen_image_nhwc(dst, img->dtype, 1, dh, dw, img->c);
    return LUMEN_OK;
}
