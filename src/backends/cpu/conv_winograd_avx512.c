/*
 * The Winograd transforms compiled for AVX-512 (called only after the run-time CPU check): the
 * same source as the portable ones, plus masked gathers that load a tap of 16 tiles at once.
 */
#define WINO_M 2
#define WINO_SUFFIX f2_avx512
#include "conv_winograd_kernels.h"

#define WINO_M 4
#define WINO_SUFFIX f4_avx512
#include "conv_winograd_kernels.h"
