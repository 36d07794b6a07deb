/* Where lumen keeps what outlives a process: FFTW wisdom, cost calibration. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static bool make_dir(const char *path)
{
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

/* mkdir -p: $XDG_CACHE_HOME may name a folder that does not exist yet. */
static bool make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        bool ok = make_dir(path);
        *p = '/';
        if (!ok) return false;
    }
    return make_dir(path);
}

bool lumen_cache_path(const char *name, char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[4096];
    int n;
    if (xdg && *xdg) {
        n = snprintf(dir, sizeof dir, "%s/lumen", xdg);
    } else if (home && *home) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s/.cache", home);
        if (!make_dir(parent)) return false;
        n = snprintf(dir, sizeof dir, "%s/.cache/lumen", home);
    } else {
        return false;
    }
    if (n < 0 || (size_t)n >= sizeof dir || !make_dirs(dir)) return false;
    n = snprintf(buf, size, "%s/%s", dir, name);
    return n > 0 && (size_t)n < size;
}
