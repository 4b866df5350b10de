// Host program whose kernel deadlocks with every core alive: the cube core waits for a flag the
// vector cores set only after a flag the cube core sets only after its own wait. mpnpu reports it
// once every core has been blocked for the stall window (MPNPU_STALL_GRACE), never hangs.
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void wait_for_each_other(GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    (void)out;
    if ASCEND_IS_AIC {
        AscendC::CrossCoreWaitFlag<2>(4);
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(3);
    }
    if ASCEND_IS_AIV {
        AscendC::CrossCoreWaitFlag<2>(3);
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(4);
    }
}

int main() {
    uint8_t* out = static_cast<uint8_t*>(AscendC::GmAlloc(64));
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(wait_for_each_other, 1, out);
    AscendC::GmFree(out);
    return 0;
}
