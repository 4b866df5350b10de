// NotifyEvent / WaitEvent between the cube core and its two vector cores (mix 1:2), and
// SYNC_AIC_FLAG as a mode-0 barrier of the vector cores: each vector core writes its value, the
// vector cores meet at the barrier, each NotifyEvent<PIPE_MTE3>s the cube core, which WaitEvents,
// sums both values into out[2] and NotifyEvent<PIPE_FIX>s back; each vector core WaitEvents and
// copies the sum into out[3 + its index]. drop: the cube core does not wait (a race).
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint16_t TO_CUBE = 4, TO_VECTORS = 6;

extern "C" __global__ __aicore__ void notify_wait(GM_ADDR out, uint32_t drop) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)out, 8);
    if ASCEND_IS_AIV {
        const int32_t me = int32_t(GetBlockIdx());
        g.SetValue(uint64_t(me), 10 * (me + 1));
        CrossCoreSetFlag<0, PIPE_MTE3>(SYNC_AIC_FLAG);
        CrossCoreWaitFlag(SYNC_AIC_FLAG);
        NotifyEvent<PIPE_MTE3>(TO_CUBE);
        WaitEvent(TO_VECTORS);
        g.SetValue(uint64_t(3 + me), g.GetValue(2));
    } else {
        if (!drop) WaitEvent<PIPE_S>(TO_CUBE);
        g.SetValue(2, g.GetValue(0) + g.GetValue(1));
        NotifyEvent<PIPE_FIX>(TO_VECTORS);
        if (drop) WaitEvent(TO_CUBE);  // (consumed late, after the reads it should have ordered)
    }
}
