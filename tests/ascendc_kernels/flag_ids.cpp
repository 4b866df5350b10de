// A cube -> vector handshake of our own on a flag id the device's SyncAll is built on (12): fine
// alone; with a SyncAll in the same launch (with_sync_all), a collision mpnpu names.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void flag_ids(GM_ADDR out, uint32_t with_sync_all) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    (void)out;
    if (with_sync_all) SyncAll<false>();
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<0x2, PIPE_FIX>(12);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(12);
    }
}
