/* Border index arithmetic, exact for any offset (kernels larger than the image). */
#ifndef LUMEN_CPU_BORDER_H
#define LUMEN_CPU_BORDER_H

#include "lumen.h"

#include <stdint.h>

static inline int64_t lumen_mod(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* Maps i (any integer) into [0, n) for the mode; -1 means "the constant value". */
static inline int64_t lumen_border_index(int64_t i, int64_t n, lumen_border b)
{
    if (i >= 0 && i < n) return i;
    switch (b) {
    case LUMEN_BORDER_CONSTANT: return -1;
    case LUMEN_BORDER_REPLICATE: return i < 0 ? 0 : n - 1;
    case LUMEN_BORDER_REFLECT: {
        int64_t p = lumen_mod(i, 2 * n); /* cba|abc: period 2n */
        return p < n ? p : 2 * n - 1 - p;
    }
    case LUMEN_BORDER_REFLECT101: {
        if (n == 1) return 0; /* as OpenCV: a single pixel reflects onto itself */
        int64_t p = lumen_mod(i, 2 * n - 2); /* dcb|abcd: period 2n-2 */
        return p < n ? p : 2 * n - 2 - p;
    }
    case LUMEN_BORDER_WRAP: return lumen_mod(i, n);
    }
    return -1;
}

#endif
