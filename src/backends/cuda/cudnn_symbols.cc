/*
 * lumen_cudnn_symbols: loads libcudnn.so.9 as conv.cu does (dlopen, then dlsym of every entry
 * of cudnn_api.h) and says which entries are missing. Needs no GPU: cuDNN loads without one.
 * Exit status 0: all found; 1: some missing; 2: the library did not load.
 */
#include "cudnn_api.h"

#include <dlfcn.h>

#include <cstdio>

int main()
{
    void *h = dlopen(LUMEN_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        std::printf("%s: not loaded: %s\n", LUMEN_CUDNN_SONAME, dlerror());
        return 2;
    }
    int missing = 0, found = 0;
#define CHECK(f)                                                                                   \
    if (dlsym(h, #f)) found++;                                                                     \
    else std::printf("missing: %s\n", #f), missing++;
    LUMEN_DNN_FUNCS(CHECK)
#undef CHECK
    using version_fn = size_t (*)();
    auto version = reinterpret_cast<version_fn>(dlsym(h, "cudnnGetVersion"));
    std::printf("%s: version %zu (headers %d.%d.%d); %d of %d entries found\n", LUMEN_CUDNN_SONAME,
                version ? version() : (size_t)0, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL, found,
                found + missing);
    return missing ? 1 : 0;
}
