// Host program passing a tiling struct by value to its kernel, as the dev kit's samples do.
#include <cstdio>

#include "tikicpulib.h"

struct Tiling {
    uint32_t n;
    float scale;
    int64_t offset;
};

extern "C" __global__ __aicore__ void scaled(GM_ADDR y, Tiling t) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ float* o = reinterpret_cast<__gm__ float*>(y);
    o[AscendC::GetBlockIdx()] = float(t.n) * t.scale + float(t.offset);
}

int main() {
    float* y = static_cast<float*>(AscendC::GmAlloc(64));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    Tiling t{3, 0.5f, 10};
    ICPU_RUN_KF(scaled, 2, reinterpret_cast<uint8_t*>(y), t);
    t.n = 5;
    ICPU_RUN_KF(scaled, 2, reinterpret_cast<uint8_t*>(y), t);
    std::printf("%g %g\n", y[0], y[1]);
    AscendC::GmFree(y);
    return 0;
}
