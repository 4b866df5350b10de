// Tiling structs shared by host and kernel: TCubeTiling, the matmul tiling the cube core's matmul
// API reads (every field an int, as documented; the order is mpnpu's own, so values are set by
// name, as CPU-debug tests and mpnpu's tiling helper do).
#ifndef MPNPU_KERNEL_TILING_H
#define MPNPU_KERNEL_TILING_H

#include <cstdint>
#include <cstring>  // (tiling headers copy structs with memcpy)

struct TCubeTiling {
    int32_t usedCoreNum = 0;
    int32_t M = 0;  // shapes of A [M, Ka], B [Kb, N], C [M, N], in elements
    int32_t N = 0;
    int32_t Ka = 0;
    int32_t Kb = 0;
    int32_t singleCoreM = 0;  // one core's part
    int32_t singleCoreN = 0;
    int32_t singleCoreK = 0;
    int32_t baseM = 0;  // one matrix instruction's block
    int32_t baseN = 0;
    int32_t baseK = 0;
    int32_t depthA1 = 0;  // base blocks held in L1
    int32_t depthB1 = 0;
    int32_t stepM = 0;
    int32_t stepN = 0;
    int32_t isBias = 0;
    int32_t transLength = 0;
    int32_t iterateOrder = 0;
    int32_t shareMode = 0;
    int32_t shareL1Size = 0;
    int32_t shareL0CSize = 0;
    int32_t shareUbSize = 0;
    int32_t batchM = 0;
    int32_t batchN = 0;
    int32_t singleBatchM = 0;
    int32_t singleBatchN = 0;
    int32_t stepKa = 0;
    int32_t stepKb = 0;
    int32_t depthAL1CacheUB = 0;
    int32_t depthBL1CacheUB = 0;
    int32_t dbL0A = 0;
    int32_t dbL0B = 0;
    int32_t dbL0C = 0;
    int32_t mxTypePara = 0;
    int32_t reserved = 0;
};

namespace optiling {
using TCubeTiling = ::TCubeTiling;
}
namespace AscendC {
namespace tiling {
using TCubeTiling = ::TCubeTiling;
}
}  // namespace AscendC

#endif  // MPNPU_KERNEL_TILING_H
