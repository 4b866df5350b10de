// Tiling of matmul + bias + ReLU (aiv_barrier.cpp): the shapes and the TCubeTiling the cube core's
// matmul API starts from (filled by mpnpu.ascendc.matmul_tiling on the host; each cube core sets
// its rows at run time). Filled per case by kernels/aiv_barrier/operator.py.
#ifndef AIV_BARRIER_TILING_H
#define AIV_BARRIER_TILING_H

#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"

struct AivBarrierTilingData {
    uint32_t m;  // x [m, k], w [k, n], bias [n], out [m, n]
    uint32_t n;
    uint32_t k;
    TCubeTiling cube;
};

#endif  // AIV_BARRIER_TILING_H
