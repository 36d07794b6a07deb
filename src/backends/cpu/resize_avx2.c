/* The resize row kernels for the avx2 build flags (CMakeLists.txt) (resize_kernels.h). */
#define RESIZE_NAME(x) lumen_resize_##x##_avx2
#include "resize_kernels.h"
