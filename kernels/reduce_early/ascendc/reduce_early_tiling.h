// Tiling of the split-hidden RMSNorm (reduce_early.cpp): the shape of x and the epsilon, filled by
// the host per case (kernels/reduce_early/operator.py). How the columns are split follows from
// GetBlockNum() at run time.
#ifndef REDUCE_EARLY_TILING_H
#define REDUCE_EARLY_TILING_H

#include <cstdint>

struct ReduceEarlyTilingData {
    uint32_t rows;    // R: rows of x and y
    uint32_t hidden;  // H: columns of x, y and gamma
    float eps;
};

#endif  // REDUCE_EARLY_TILING_H
