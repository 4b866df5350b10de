// Scalar GM accesses that bypass the data cache, ordered by DataSyncBarrier: y[i] = x[i] + 1 per core.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gm_bypass(GM_ADDR x, GM_ADDR y) {
    __gm__ int32_t* xs = (__gm__ int32_t*)x + GetBlockIdx();
    __gm__ int32_t* ys = (__gm__ int32_t*)y + GetBlockIdx();
    int32_t v = ReadGmByPassDCache<int32_t>(xs);
    DataSyncBarrier<MemDsbT::DDR>();
    WriteGmByPassDCache<int32_t>(ys, v + 1);
    DataSyncBarrier<MemDsbT::ALL>();
}
