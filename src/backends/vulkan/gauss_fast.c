/* LUMEN_OP_GAUSSIAN_FAST: not on the device yet (docs/vulkan.md, "What is next"): the runtime
 * runs it on the CPU. */
#include "vk_internal.h"

const vk_op_impl vk_op_gauss_fast = {.supports = NULL};
