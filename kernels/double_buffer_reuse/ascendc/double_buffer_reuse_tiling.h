// Tiling of y = x + 1 (double_buffer_reuse.cpp): how many tiles and how long each is (float
// elements), filled by the host per case (kernels/double_buffer_reuse/operator.py).
#ifndef DOUBLE_BUFFER_REUSE_TILING_H
#define DOUBLE_BUFFER_REUSE_TILING_H

#include <cstdint>

struct DoubleBufferReuseTilingData {
    uint32_t tileNum;     // tiles of x and y
    uint32_t tileLength;  // elements per tile (a multiple of 8: whole 32-byte blocks)
};

#endif  // DOUBLE_BUFFER_REUSE_TILING_H
