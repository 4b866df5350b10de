// Tiling of matmul + SiLU through ping-pong GM slots (flag_reuse.cpp): the shapes, the tile width
// and the K-chunk, filled per case by kernels/flag_reuse/operator.py. Which tiles a cube core
// computes follows from GetBlockNum() at run time.
#ifndef FLAG_REUSE_TILING_H
#define FLAG_REUSE_TILING_H

#include <cstdint>

struct FlagReuseTilingData {
    uint32_t m;      // x [m, k], w [k, n], bias [n], out [m, n]
    uint32_t n;
    uint32_t k;
    uint32_t baseN;  // N is cut into tiles of baseN columns; a slot holds one tile, [m, baseN] float
    uint32_t baseK;  // the cube core multiplies K in chunks of baseK, accumulating in L0C
};

#endif  // FLAG_REUSE_TILING_H
