// A CPU-debug style host program of our own that launches 0 blocks (outside the documented 1..65535,
// a launch the chip's runtime refuses, so no core runs), then a launch of 4: prints what each left.
#include <cstdio>

#include "tikicpulib.h"
#include "../two_phase.cpp"

int main() {
    const uint32_t n = 4 * 256, blocks = 4;
    float* x = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    float* partials = static_cast<float*>(AscendC::GmAlloc(blocks * 8 * sizeof(float)));
    float* out = static_cast<float*>(AscendC::GmAlloc(8 * sizeof(float)));
    for (uint32_t i = 0; i < n; ++i) x[i] = 1.0f;
    for (uint32_t i = 0; i < blocks * 8; ++i) partials[i] = -1.0f;
    out[0] = -1.0f;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(two_phase, 0, (uint8_t*)x, (uint8_t*)partials, (uint8_t*)out, n);  // no block
    std::printf("after 0 blocks %g\n", out[0]);
    ICPU_RUN_KF(two_phase, blocks, (uint8_t*)x, (uint8_t*)partials, (uint8_t*)out, n);
    std::printf("after %u blocks %g\n", blocks, out[0]);
    AscendC::GmFree(x);
    AscendC::GmFree(partials);
    AscendC::GmFree(out);
    return 0;
}
