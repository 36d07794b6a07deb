/* The resize row kernels for the avx512 build flags (CMakeLists.txt) (resize_kernels.h). */
#define RESIZE_NAME(x) lumen_resize_##x##_avx512
#include "resize_kernels.h"
