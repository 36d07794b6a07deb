/* The resize row kernels for the baseline ISA (resize_kernels.h). */
#define RESIZE_NAME(x) lumen_resize_##x##_generic
#include "resize_kernels.h"
