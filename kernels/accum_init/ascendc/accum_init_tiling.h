// Tiling of the split-K matmul (accum_init.cpp): the shapes and the K-chunk, filled per case by
// kernels/accum_init/operator.py. Which chunks a cube core takes and which rows a vector core
// zeroes follow from GetBlockNum() at run time.
#ifndef ACCUM_INIT_TILING_H
#define ACCUM_INIT_TILING_H

#include <cstdint>

struct AccumInitTilingData {
    uint32_t m;      // a [m, k], b [k, n], c [m, n]
    uint32_t n;
    uint32_t k;
    uint32_t baseK;  // K is cut into chunks of baseK, dealt round-robin to the cube cores
};

#endif  // ACCUM_INIT_TILING_H
