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
    if (n < 0 || (size_t)n >= sizeof dir || !make_dir(dir)) return false;
    n = snprintf(buf, size, "%s/%s", dir, name);
    return n > 0 && (size_t)n < size;
}
