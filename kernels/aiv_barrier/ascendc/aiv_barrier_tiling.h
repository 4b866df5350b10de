// Tiling of matmul + bias + ReLU (aiv_barrier.cpp): the shapes and the K-chunk, filled per case by
// kernels/aiv_barrier/operator.py. Which rows a cube core multiplies, and which columns and rows a
// vector core takes, follow from GetBlockNum() at run time.
#ifndef AIV_BARRIER_TILING_H
#define AIV_BARRIER_TILING_H

#include <cstdint>

struct AivBarrierTilingData {
    uint32_t m;      // x [m, k], w [k, n], bias [n], out [m, n]
    uint32_t n;
    uint32_t k;
    uint32_t baseK;  // the cube core multiplies K in chunks of baseK, accumulating in L0C
};

#endif  // AIV_BARRIER_TILING_H
