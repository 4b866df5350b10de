// Mix 1:2: `sets` cross-core flag sets nobody waits for, in mode `mode`: mode 0 (vector core 0 sets
// flag 3 for the vector cores, a set that goes through the core process), or mode 2 (the cube sets
// flag 7 for its vector cores, a set the library makes itself). A counter holds 0..15: 10 sets a
// launch overflow on the next launch unless the runtime cleared what this one left.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void flag_leftovers(GM_ADDR out, uint32_t mode, uint32_t sets) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    (void)out;
    if (mode == 0 && ASCEND_IS_AIV && GetBlockIdx() == 0) {
        for (uint32_t i = 0; i < sets; ++i) CrossCoreSetFlag<0, PIPE_MTE3>(3);
    }
    if (mode == 2 && ASCEND_IS_AIC) {
        for (uint32_t i = 0; i < sets; ++i) CrossCoreSetFlag<2, PIPE_FIX>(7);
    }
    SyncAll<false>();
}
