// Mix 1:2: the cube core sets flag 7 (mode 2) `sets` times and nobody waits for it. A counter holds
// 0..15, so 16 sets overflow; 10 sets per launch overflow on a later launch only if the runtime did
// not clear what the earlier launch left.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void flag_counts(GM_ADDR out, uint32_t sets) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    (void)out;
    if ASCEND_IS_AIC {
        for (uint32_t i = 0; i < sets; ++i) CrossCoreSetFlag<2, PIPE_FIX>(7);
    }
    SyncAll<false>();
}
