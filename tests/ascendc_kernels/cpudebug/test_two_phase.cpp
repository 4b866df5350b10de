// A CPU-debug style host program of our own (the shape of the operator repositories' kernel unit
// tests): GmAlloc, SetKernelMode, ICPU_RUN_KF, GmFree; prints the total and exits 0 when right.
// With MPNPU_TEST_ZERO_BLOCKS, a launch of 0 blocks follows (outside the documented 1..65535, a
// launch the chip's runtime refuses: no core runs) and what it left is printed.
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
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(two_phase, blocks, (uint8_t*)x, (uint8_t*)partials, (uint8_t*)out, n);
    std::printf("total %g\n", out[0]);
    bool ok = out[0] == float(n);
#ifdef MPNPU_TEST_ZERO_BLOCKS
    out[0] = -1.0f;
    ICPU_RUN_KF(two_phase, 0, (uint8_t*)x, (uint8_t*)partials, (uint8_t*)out, n);  // no block
    std::printf("after 0 blocks %g\n", out[0]);
#endif
    AscendC::GmFree(x);
    AscendC::GmFree(partials);
    AscendC::GmFree(out);
    return ok ? 0 : 1;
}
