/* Device list and device specs ("auto", "cpu", "cuda:1"). Each backend reports its devices;
 * indices are assigned in backend order, the CPU first. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backends that own devices. The CUDA module will be appended when it is loaded. */
static const lumen_backend *const device_backends[] = {&lumen_cpu_fast_backend};
#define N_BACKENDS (int)(sizeof device_backends / sizeof device_backends[0])

int lumen_device_count(void)
{
    int n = 0;
    for (int b = 0; b < N_BACKENDS; b++) n += device_backends[b]->device_count();
    return n;
}

lumen_status lumen_device_get_info(int index, lumen_device_info *out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: pointer is NULL");
    int first = 0;
    for (int b = 0; b < N_BACKENDS && index >= 0; b++) {
        int n = device_backends[b]->device_count();
        if (index < first + n) {
            lumen_status s = device_backends[b]->device_info(index - first, out);
            out->index = index;
            return s;
        }
        first += n;
    }
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: index %d is not in 0..%d", index,
                           lumen_device_count() - 1);
}

const char *lumen_device_kind_name(lumen_device_kind kind)
{
    static const char *const names[] = {"cpu", "discrete", "integrated", "software"};
    return (unsigned)kind <= LUMEN_DEVICE_SOFTWARE ? names[kind] : "?";
}

/* "auto": the best kind present, in this order; software devices only when named. */
static int auto_device(void)
{
    static const lumen_device_kind order[] = {LUMEN_DEVICE_DISCRETE_GPU,
                                              LUMEN_DEVICE_INTEGRATED_GPU, LUMEN_DEVICE_CPU};
    lumen_device_info info;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < lumen_device_count(); i++)
            if (lumen_device_get_info(i, &info) == LUMEN_OK && info.kind == order[k]) return i;
    return 0;
}

/* Comma-separated "cpu, cuda:0, ..." for error messages. */
static void list_devices(char *buf, size_t size)
{
    lumen_device_info info;
    size_t used = 0;
    buf[0] = '\0';
    int per_backend = 0;
    char last[16] = "";
    for (int i = 0; i < lumen_device_count() && used < size; i++) {
        if (lumen_device_get_info(i, &info)) continue;
        per_backend = strcmp(last, info.backend) ? 0 : per_backend + 1;
        snprintf(last, sizeof last, "%s", info.backend);
        if (!strcmp(info.backend, "cpu"))
            used += (size_t)snprintf(buf + used, size - used, "%scpu", i ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%s:%d", i ? ", " : "",
                                     info.backend, per_backend);
    }
}

/* The n-th device of backend, or -1. */
static int backend_device(const char *backend, size_t len, long n)
{
    lumen_device_info info;
    for (int i = 0; i < lumen_device_count(); i++) {
        if (lumen_device_get_info(i, &info)) continue;
        if (strlen(info.backend) == len && !strncmp(info.backend, backend, len) && n-- == 0)
            return i;
    }
    return -1;
}

lumen_status lumen_device_find(const char *spec, int *index)
{
    lumen_clear_error();
    if (!spec) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: spec is NULL");
    if (!index) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "index: pointer is NULL");
    if (!strcmp(spec, "auto")) {
        *index = auto_device();
        return LUMEN_OK;
    }
    size_t len = strcspn(spec, ":");
    long n = 0;
    if (spec[len] == ':') {
        char *end;
        n = strtol(spec + len + 1, &end, 10);
        if (end == spec + len + 1 || *end || n < 0)
            return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                                   "device: '%s' is not auto, cpu, cuda or cuda:N", spec);
    }
    int i = len ? backend_device(spec, len, n) : -1;
    if (i >= 0) {
        *index = i;
        return LUMEN_OK;
    }
    char have[256];
    list_devices(have, sizeof have);
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT,
                           "device: no device '%s' (this machine has: %s)", spec, have);
}

lumen_status lumen_context_set_device(lumen_context *ctx, const char *spec)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    int i;
    lumen_status s = lumen_device_find(spec, &i);
    if (s) return s;
    ctx->device = i;
    return LUMEN_OK;
}

int lumen_context_device(const lumen_context *ctx) { return ctx ? ctx->device : -1; }

lumen_status lumen_context_set_strict(lumen_context *ctx, int strict)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    ctx->strict = strict != 0;
    return LUMEN_OK;
}

int lumen_context_strict(const lumen_context *ctx) { return ctx ? ctx->strict : 0; }
