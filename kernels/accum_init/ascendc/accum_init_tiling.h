// Tiling of the split-K matmul (accum_init.cpp): the shapes, the K-chunk, and the TCubeTiling the
// cube core's matmul API starts from (filled by mpnpu.ascendc.matmul_tiling on the host; each
// chunk's shape is set at run time). Filled per case by kernels/accum_init/operator.py.
#ifndef ACCUM_INIT_TILING_H
#define ACCUM_INIT_TILING_H

#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"

struct AccumInitTilingData {
    uint32_t m;      // a [m, k], b [k, n], c [m, n]
    uint32_t n;
    uint32_t k;
    uint32_t baseK;  // K is cut into chunks of baseK, dealt round-robin to the cube cores
    TCubeTiling cube;
};

#endif  // ACCUM_INIT_TILING_H
