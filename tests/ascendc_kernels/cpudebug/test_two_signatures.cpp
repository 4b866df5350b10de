// Host program launching one kernel twice with different argument types (a tensor, then nullptr), as
// unit tests do for an optional input: the second launch runs on the core processes the first forked.
#include <cstdio>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void optional_input(GM_ADDR out, GM_ADDR bias) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ int32_t* o = reinterpret_cast<__gm__ int32_t*>(out);
    if (AscendC::GetBlockIdx() == 0) o[0] = bias == nullptr ? 2 : 1 + reinterpret_cast<__gm__ int32_t*>(bias)[0];
}

int main() {
    int32_t* out = static_cast<int32_t*>(AscendC::GmAlloc(32));
    int32_t* bias = static_cast<int32_t*>(AscendC::GmAlloc(32));
    bias[0] = 40;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(optional_input, 2, reinterpret_cast<uint8_t*>(out), reinterpret_cast<uint8_t*>(bias));
    std::printf("with bias %d\n", out[0]);
    ICPU_RUN_KF(optional_input, 2, reinterpret_cast<uint8_t*>(out), nullptr);
    std::printf("without %d\n", out[0]);
    AscendC::GmFree(out);
    AscendC::GmFree(bias);
    return 0;
}
