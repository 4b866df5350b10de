// Mix 1:2 handshake: per round the cube core sets flag 5 (mode 2, both vector cores wait with no
// mode, as kernels on this chip write it), each vector core counts the round and sets flag 6 back
// (mode 2: the cube's wait needs both). Then SyncAll<false> over every core.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void handshake(GM_ADDR out, uint32_t rounds) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)out, 64);
    if ASCEND_IS_AIC {
        for (uint32_t r = 0; r < rounds; ++r) {
            CrossCoreSetFlag<2, PIPE_FIX>(5);
            CrossCoreWaitFlag(6);
        }
    } else {
        int32_t n = 0;
        for (uint32_t r = 0; r < rounds; ++r) {
            CrossCoreWaitFlag(5);
            ++n;
            CrossCoreSetFlag<2, PIPE_MTE3>(6);
        }
        g.SetValue(GetBlockIdx(), n);
    }
    SyncAll<false>();
}
