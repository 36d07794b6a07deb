/* Device list and device specs ("auto", "cpu", "cuda:1"). Each backend reports its devices;
 * indices are assigned in backend order, the CPU first. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lumen_device_count(void)
{
    int n = 0;
    for (int b = 0; b < lumen_backend_count(); b++) n += lumen_backend_at(b)->device_count();
    return n;
}

/* The backend of device index and its index within it; NULL when there is none. */
const lumen_backend *lumen_device_backend(int index, int *local)
{
    int first = 0;
    for (int b = 0; b < lumen_backend_count() && index >= 0; b++) {
        const lumen_backend *be = lumen_backend_at(b);
        int n = be->device_count();
        if (index < first + n) {
            *local = index - first;
            return be;
        }
        first += n;
    }
    return NULL;
}

lumen_status lumen_device_get_info(int index, lumen_device_info *out)
{
    lumen_clear_error();
    if (!out) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "out: pointer is NULL");
    int local;
    const lumen_backend *be = lumen_device_backend(index, &local);
    if (be) {
        lumen_status s = be->device_info(local, out);
        out->index = index;
        return s;
    }
    return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: index %d is not in 0..%d", index,
                           lumen_device_count() - 1);
}

lumen_status lumen_device_get_driver(int index, char *buf, size_t size)
{
    lumen_clear_error();
    if (!buf || !size) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "buf: NULL or empty");
    int local;
    const lumen_backend *be = lumen_device_backend(index, &local);
    if (!be)
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: index %d is not in 0..%d",
                               index, lumen_device_count() - 1);
    buf[0] = '\0';
    if (be->device_driver) be->device_driver(local, buf, size);
    return LUMEN_OK;
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

/* From the backend table alone: asking a GPU for its info can create a driver context there. */
void lumen_device_label(int i, char *buf, size_t size)
{
    int local = 0;
    const lumen_backend *be = lumen_device_backend(i, &local);
    if (!be) snprintf(buf, size, "device %d", i);
    else if (be == &lumen_cpu_backend) snprintf(buf, size, "cpu");
    else snprintf(buf, size, "%s:%d", be->name, local);
}

lumen_status lumen_device_spec(int index, char *buf, size_t size)
{
    lumen_clear_error();
    if (!buf || size == 0) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "buf: no room");
    int local;
    if (!lumen_device_backend(index, &local))
        return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "device: index %d is not in 0..%d",
                               index, lumen_device_count() - 1);
    lumen_device_label(index, buf, size);
    return LUMEN_OK;
}

#define MAX_LABELS 64
static char labels[MAX_LABELS][32];
static int n_labels;
static pthread_once_t labels_once = PTHREAD_ONCE_INIT;

static void make_labels(void)
{
    n_labels = lumen_device_count() < MAX_LABELS ? lumen_device_count() : MAX_LABELS;
    for (int i = 0; i < n_labels; i++) lumen_device_label(i, labels[i], sizeof labels[i]);
}

const char *lumen_device_name_static(int i)
{
    pthread_once(&labels_once, make_labels);
    return i >= 0 && i < n_labels ? labels[i] : "?";
}

/* Comma-separated "cpu, cuda:0, ..." for error messages. */
static void list_devices(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < lumen_device_count() && used < size; i++) {
        char label[48];
        lumen_device_label(i, label, sizeof label);
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", label);
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

void lumen_context_release_device(lumen_context *ctx)
{
    lumen_plan_cache_clear(ctx->plans); /* device plans may refer to the state's stream */
    if (ctx->be && ctx->be->state_destroy && ctx->be_state) ctx->be->state_destroy(ctx->be_state);
    ctx->be = &lumen_cpu_backend;
    ctx->be_state = NULL;
    ctx->device = ctx->be_device = 0;
}

lumen_status lumen_context_set_device(lumen_context *ctx, const char *spec)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    int i, local = 0;
    lumen_status s = lumen_device_find(spec, &i);
    if (s) return s;
    if (i == ctx->device) return LUMEN_OK;
    const lumen_backend *be = lumen_device_backend(i, &local);
    void *state = NULL;
    if (be->state_create && (s = be->state_create(local, &state))) return s;
    lumen_context_release_device(ctx);
    ctx->device = i;
    ctx->be = be;
    ctx->be_device = local;
    ctx->be_state = state;
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

lumen_status lumen_context_set_memory_limit(lumen_context *ctx, uint64_t bytes)
{
    lumen_clear_error();
    if (!ctx) return lumen_set_error(LUMEN_ERR_INVALID_ARGUMENT, "ctx: context is NULL");
    ctx->memory_limit = bytes;
    return LUMEN_OK;
}
