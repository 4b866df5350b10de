// Tiling of matmul + SiLU through ping-pong GM slots (flag_reuse.cpp): the shapes, the tile width
// and the TCubeTiling the cube core's matmul API starts from (filled by mpnpu.ascendc.matmul_tiling
// on the host: one base block is one tile). Filled per case by kernels/flag_reuse/operator.py.
#ifndef FLAG_REUSE_TILING_H
#define FLAG_REUSE_TILING_H

#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"

struct FlagReuseTilingData {
    uint32_t m;      // x [m, k], w [k, n], bias [n], out [m, n]
    uint32_t n;
    uint32_t k;
    uint32_t baseN;  // N is cut into tiles of baseN columns; a slot holds one tile, [m, baseN] float
    TCubeTiling cube;
};

#endif  // FLAG_REUSE_TILING_H
