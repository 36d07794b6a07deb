/* Border and method names. The border rule itself lives in core/semantics.h. */
#include "internal.h"

#include <string.h>

static const char *const border_names[] = {"reflect", "constant", "replicate", "reflect101", "wrap"};

lumen_status lumen_border_parse(const char *name, lumen_border *out)
{
    lumen_clear_error();
    if (!name) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "border: name is NULL");
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: pointer is NULL");
    for (int i = 0; i < 5; i++) {
        if (!strcmp(name, border_names[i])) {
            *out = (lumen_border)i;
            return LUMEN_OK;
        }
    }
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                           "border: unknown mode '%s' (expected reflect, constant, replicate, "
                           "reflect101 or wrap)",
                           name);
}

const char *lumen_border_name(lumen_border b)
{
    return (unsigned)b < 5 ? border_names[b] : "?";
}

static const char *const method_names[] = {"auto", "direct", "separable", "fft", "recursive"};

const char *lumen_method_name(lumen_method m)
{
    return (unsigned)m <= LUMEN_METHOD_RECURSIVE ? method_names[m] : "?";
}

lumen_status lumen_method_parse(const char *name, lumen_method *out)
{
    lumen_clear_error();
    if (!name) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "method: name is NULL");
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: pointer is NULL");
    for (int i = 0; i <= LUMEN_METHOD_FFT; i++) {
        if (!strcmp(name, method_names[i])) {
            *out = (lumen_method)i;
            return LUMEN_OK;
        }
    }
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                           "method: unknown method '%s' (expected auto, direct, separable or fft)",
                           name);
}
