// Host program whose kernel reads GM through a raw pointer OFFSET floats past the end of a 64 KiB
// GmAlloc'd tensor (OFFSET from the command line). mpnpu must end the program naming the line.
#include <cstdio>
#include <cstdlib>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void overrun(GM_ADDR x, GM_ADDR out, uint32_t n, uint32_t offset) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ float* p = reinterpret_cast<__gm__ float*>(x);
    __gm__ float* o = reinterpret_cast<__gm__ float*>(out);
    if (AscendC::GetBlockIdx() == 0) {
        o[0] = p[n + offset];  // the read past the end
    }
}

int main(int argc, char** argv) {
    const uint32_t n = 16384;  // 64 KiB of float
    const uint32_t offset = argc > 1 ? uint32_t(std::atoi(argv[1])) : 100;
    uint8_t* x = static_cast<uint8_t*>(AscendC::GmAlloc(n * sizeof(float)));
    uint8_t* out = static_cast<uint8_t*>(AscendC::GmAlloc(32));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(overrun, 1, x, out, n, offset);
    std::printf("read %g\n", reinterpret_cast<float*>(out)[0]);
    AscendC::GmFree(x);
    AscendC::GmFree(out);
    return 0;
}
