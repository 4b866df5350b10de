// Tiling of fused_linear_online_max_sum (the Ascend C kernel in floms.cpp): filled on the host by
// kernels/fused_linear_online_max_sum/operator_cxx.py from the same rules as the Python kernel's
// tiling.py (rows dealt to vector cores in whole mask bytes, baseM x baseN tiles dealt round-robin
// to cube cores, one workspace carved into per-cube-core partials, ping-pong tiles and the masked
// targets TargetProcess hands to CVProcess).
#ifndef FLOMS_TILING_H
#define FLOMS_TILING_H

#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"

struct FlomsTilingData {
    int64_t bt;               // rows of input (tokens)
    int64_t h;                // hidden size
    int64_t v;                // local vocab shard size (rows of weight)
    int64_t vocabStartIndex;  // the shard is [vocabStartIndex, vocabEndIndex)
    int64_t vocabEndIndex;
    int32_t blockDim;         // AI cores of the launch (cube cores; twice as many vector cores)
    int32_t returnLogits;     // 1: the tiles are float32 and vocab_parallel_logits is written
    int32_t baseM;            // tile rows
    int32_t baseN;            // tile columns
    int32_t rowsPerVector;    // rows per vector core in Init / TargetProcess / AllReduce (a multiple of 8)
    int32_t nTilesM;
    int32_t nTilesN;
    int32_t halfM;            // the most rows one vector core takes of a tile: (baseM + 1) / 2
    uint64_t onlineMaxOffset;     // workspace bytes: [blockDim, bt] float online max
    uint64_t onlineSumOffset;     // [blockDim, bt] float online sum
    uint64_t tileBufferOffset;    // [blockDim, 2, baseM, baseN] tiles (input dtype, float32 with returnLogits)
    uint64_t maskedTargetOffset;  // [bt] masked targets (target dtype)
    float probeValue;             // the init-sentinel probe's case-specific constant
    TCubeTiling mmTiling;         // the cube core's matmul of one tile
};

#endif  // FLOMS_TILING_H
