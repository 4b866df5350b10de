// Host program whose kernel prints from each of its 4 vector cores with AscendC::printf.
#include <cstdio>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void say(GM_ADDR unused) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    (void)unused;
    AscendC::printf("core %d of %d says %.1f\n", int(AscendC::GetBlockIdx()), int(AscendC::GetBlockNum()), half(1.5f));
}

int main() {
    uint8_t* unused = static_cast<uint8_t*>(AscendC::GmAlloc(32));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(say, 4, unused);
    std::printf("done\n");
    AscendC::GmFree(unused);
    return 0;
}
