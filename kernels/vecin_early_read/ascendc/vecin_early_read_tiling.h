// Tiling of y = 2x (vecin_early_read.cpp): how many tiles and how long each is (float elements),
// filled by the host per case (kernels/vecin_early_read/operator.py).
#ifndef VECIN_EARLY_READ_TILING_H
#define VECIN_EARLY_READ_TILING_H

#include <cstdint>

struct VecinEarlyReadTilingData {
    uint32_t tileNum;     // tiles of x and y
    uint32_t tileLength;  // elements per tile (a multiple of 8: whole 32-byte blocks)
};

#endif  // VECIN_EARLY_READ_TILING_H
