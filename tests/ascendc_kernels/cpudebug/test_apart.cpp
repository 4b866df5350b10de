// A CPU-debug host program whose kernel is compiled apart (two_phase.cpp is a translation unit of
// its own, not included here), as a repository that builds kernels into a library would have it.
#include <cstdio>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void two_phase(GM_ADDR x, GM_ADDR partials, GM_ADDR out, uint32_t n);

int main() {
    const uint32_t n = 4 * 256, blocks = 4;
    float* x = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    float* partials = static_cast<float*>(AscendC::GmAlloc(blocks * 8 * sizeof(float)));
    float* out = static_cast<float*>(AscendC::GmAlloc(8 * sizeof(float)));
    for (uint32_t i = 0; i < n; ++i) x[i] = 1.0f;
    for (uint32_t i = 0; i < blocks * 8; ++i) partials[i] = -1.0f;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(two_phase, blocks, (uint8_t*)x, (uint8_t*)partials, (uint8_t*)out, n);
    std::printf("total %g\n", out[0]);
    bool ok = out[0] == float(n);
    AscendC::GmFree(x);
    AscendC::GmFree(partials);
    AscendC::GmFree(out);
    return ok ? 0 : 1;
}
