// The tiling of the matmul test kernels: a TCubeTiling (filled by mpnpu.ascendc.matmul_tiling)
// and what the test asks for.
#ifndef MM_TILING_H
#define MM_TILING_H
#include "kernel_tiling/kernel_tiling.h"

struct MmTestTiling {
    TCubeTiling cube;
    int32_t mode;  // MODE_* bits of the kernel
    int32_t rounds;
};
#endif
