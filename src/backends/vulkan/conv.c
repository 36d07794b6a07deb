/* LUMEN_OP_CONV2D and LUMEN_OP_CONV_TRANSPOSE2D: not on the device yet (docs/vulkan.md, "What
 * is next"): the runtime runs them on the CPU. */
#include "vk_internal.h"

const vk_op_impl vk_op_conv2d = {NULL, NULL}, vk_op_conv_transpose2d = {NULL, NULL};
