/* Backends that own devices: the CPU, then the modules (liblumen_<name>.so) found at run
 * time. A module that cannot be loaded (no driver, no CUDA libraries) is skipped with an info
 * line, so one build runs everywhere and lists only the devices that are there.
 * Search order: $LUMEN_MODULE_PATH (files or folders, ':'-separated), then the folder of the
 * program or shared library lumen is linked into: its LUMEN_MODULE_SUBDIR ("lumen-modules")
 * subfolder, then the folder itself. Only paths relative to the binary, so an installed
 * liblumen.so finds ${libdir}/lumen-modules wherever the prefix is, and nothing of the build
 * tree is compiled in; the build puts its modules in <build>/lumen-modules, next to the CLI
 * and liblumen.so (CMakeLists.txt links that folder into the other program folders). */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_BACKENDS 8

static const lumen_backend *backends[MAX_BACKENDS];
static int n_backends;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void *host_plan_get(lumen_context *ctx, const void *key, size_t len)
{
    return lumen_plan_cache_get(ctx->plans, key, len);
}

static void *host_plan_put(lumen_context *ctx, const void *key, size_t len, void *value,
                           void (*destroy)(void *), size_t bytes)
{
    return lumen_plan_cache_put(ctx->plans, key, len, value, destroy, bytes);
}

static void *host_state(const lumen_context *ctx) { return ctx->be_state; }
static int host_device(const lumen_context *ctx) { return ctx->be_device; }
static uint64_t host_memory_limit(const lumen_context *ctx) { return ctx->memory_limit; }
static int host_tf32(const lumen_context *ctx) { return ctx->tf32; }
static int host_interrupted(const lumen_context *ctx) { return lumen_interrupt_requested(ctx); }

static const lumen_module_host host = {
    .abi = LUMEN_MODULE_ABI,
    .set_error = lumen_set_error,
    .log = lumen_log,
    .plan_get = host_plan_get,
    .plan_put = host_plan_put,
    .state = host_state,
    .device = host_device,
    .memory_limit = host_memory_limit,
    .gaussian_kernel = lumen_gaussian_taps,
    .tf32 = host_tf32,
    .last_error = lumen_last_error,
    .cache_path = lumen_cache_path,
    .interrupted = host_interrupted,
};

static bool registered(const char *name)
{
    for (int i = 0; i < n_backends; i++)
        if (!strcmp(backends[i]->name, name)) return true;
    return false;
}

/* dlopen + init; a module whose backend is already registered is closed again. */
static void load_module(const char *path)
{
    if (n_backends == MAX_BACKENDS) return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        lumen_log(LUMEN_LOG_INFO, "module %s not loaded: %s", path, dlerror());
        return;
    }
    lumen_module_init_fn init = (lumen_module_init_fn)dlsym(h, LUMEN_MODULE_INIT_SYMBOL);
    const lumen_backend *be = NULL;
    if (!init || init(LUMEN_MODULE_ABI, &host, &be) != LUMEN_OK || !be || !be->name ||
        registered(be->name)) {
        lumen_log(LUMEN_LOG_INFO, "module %s: %s", path,
                  !init ? "no lumen_module_init" : be && be->name ? "backend already loaded"
                                                                 : lumen_last_error());
        dlclose(h);
        return;
    }
    backends[n_backends++] = be; /* kept open for the life of the process */
    lumen_log(LUMEN_LOG_INFO, "module %s: backend %s, %d device(s)", path, be->name,
              be->device_count ? be->device_count() : 0);
}

static bool is_module_name(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, "liblumen_", 9) && n > 12 && !strcmp(name + n - 3, ".so");
}

static int module_name_filter(const struct dirent *e)
{
    return is_module_name(e->d_name);
}

/* A file is loaded; a folder is searched for liblumen_*.so, in name order: the device list is
 * the same on every run, and liblumen_cuda.so comes before liblumen_vulkan.so, so a GPU that
 * both drive is cuda:N before vulkan:M and "auto" takes it through CUDA. */
static void load_from(const char *path)
{
    struct dirent **names = NULL;
    const int n = scandir(path, &names, module_name_filter, alphasort);
    if (n < 0) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) load_module(path);
        else lumen_log(LUMEN_LOG_DEBUG, "module path %s: not there", path);
        return;
    }
    for (int i = 0; i < n; i++) {
        char file[PATH_MAX];
        if (snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name) < (int)sizeof file)
            load_module(file);
        free(names[i]);
    }
    free(names);
}

/* The folder of the executable or shared object this code is linked into. */
static void own_folder(char *buf, size_t size)
{
    Dl_info info;
    buf[0] = '\0';
    if (!dladdr((void *)lumen_backend_count, &info) || !info.dli_fname) return;
    char real[PATH_MAX];
    if (!realpath(info.dli_fname, real)) return;
    char *slash = strrchr(real, '/');
    if (slash) *slash = '\0';
    snprintf(buf, size, "%s", real);
}

static void load_all(void)
{
    backends[n_backends++] = &lumen_cpu_backend;
    const char *env = getenv("LUMEN_MODULE_PATH");
    if (env) {
        char *list = strdup(env);
        for (char *save = NULL, *p = list ? strtok_r(list, ":", &save) : NULL; p;
             p = strtok_r(NULL, ":", &save))
            load_from(p);
        free(list);
    }
    char dir[PATH_MAX], sub[PATH_MAX];
    own_folder(dir, sizeof dir);
    if (!dir[0]) return;
    if (snprintf(sub, sizeof sub, "%s/%s", dir, LUMEN_MODULE_SUBDIR) < (int)sizeof sub)
        load_from(sub);
    load_from(dir); /* modules copied next to the program or the Python extension */
}

int lumen_backend_count(void)
{
    pthread_once(&load_once, load_all);
    return n_backends;
}

const lumen_backend *lumen_backend_at(int i)
{
    return i >= 0 && i < lumen_backend_count() ? backends[i] : NULL;
}
