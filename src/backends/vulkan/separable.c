/* LUMEN_OP_FILTER_SEPARABLE: not on the device yet. */
#include "vk_internal.h"

const vk_op_impl vk_op_separable = {NULL, NULL};
