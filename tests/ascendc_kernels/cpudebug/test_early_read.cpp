// A CPU-debug host program over early_read.cpp (an intra-core MTE2 -> V hand-over through a queue):
// prints how many outputs are wrong and exits 1 if any is.
#include <cstdio>

#include "tikicpulib.h"
#include "../early_read.cpp"

int main() {
    const uint32_t tiles = 16, tile = 256, n = tiles * tile, blocks = 2;
    float* x = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    float* y = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 97) + 1.0f;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(early_read, blocks, (uint8_t*)x, (uint8_t*)y, tiles, tile);
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += y[i] != 2.0f * x[i];
    std::printf("wrong %u\n", wrong);
    AscendC::GmFree(x);
    AscendC::GmFree(y);
    return wrong == 0 ? 0 : 1;
}
