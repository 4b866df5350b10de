// Host program whose kernel deadlocks: the vector cores wait (mode 2) for a flag their cube core
// never sets. mpnpu must end the program with one line naming the wait, never hang.
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void never_set(GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    (void)out;
    if ASCEND_IS_AIV {
        AscendC::CrossCoreWaitFlag<2>(3);
    }
}

int main() {
    uint8_t* out = static_cast<uint8_t*>(AscendC::GmAlloc(64));
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(never_set, 1, out);
    AscendC::GmFree(out);
    return 0;
}
