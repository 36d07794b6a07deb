/* LUMEN_OP_FILTER_FFT: not on the device yet (docs/vulkan.md, "What is next"): the runtime
 * runs it on the CPU. */
#include "vk_internal.h"

const vk_op_impl vk_op_fft = {.supports = NULL};
