/* The CPU backend's table of entries: fast path and scalar reference. */
#include "conv.h"
#include "cpu.h"
#include "gaussian_fast.h"

const lumen_backend lumen_cpu_fast_backend = {
    .name = "cpu",
    .filter2d = lumen_cpu_direct,
    .sep_filter = lumen_cpu_separable,
    .fft_filter = lumen_cpu_fft,
    .gaussian_fast = lumen_cpu_gaussian_fast,
    .conv2d = lumen_cpu_conv, /* the reference itself when SIMD is off (conv_select.c) */
    .cost = lumen_cpu_cost,
    .device_count = lumen_cpu_device_count,
    .device_info = lumen_cpu_device_info,
};
