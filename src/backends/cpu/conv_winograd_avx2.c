/*
 * The Winograd transforms compiled with -mavx2 -mfma (called only after the run-time CPU
 * check): the same source as the portable ones, 16 tiles per pair of ymm registers.
 */
#define WINO_M 2
#define WINO_SUFFIX f2_avx2
#include "conv_winograd_kernels.h"

#define WINO_M 4
#define WINO_SUFFIX f4_avx2
#include "conv_winograd_kernels.h"
