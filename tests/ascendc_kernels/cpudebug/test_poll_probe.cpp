// A CPU-debug host program over poll_barrier.cpp, mode 6 on two vector cores: the last core works
// longer, then polls its neighbour's flag word at a line of its own and usually finds it set at its
// first look. Prints how many times each core looked and how many outputs are wrong; exits 1 if any is.
#include <cstdio>

#include "tikicpulib.h"
#include "../poll_barrier.cpp"

int main() {
    const int32_t cores = 2, row = 8, n = cores * row;
    float* x = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    float* data = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    float* out = static_cast<float*>(AscendC::GmAlloc(n * sizeof(float)));
    int32_t* flags = static_cast<int32_t*>(AscendC::GmAlloc(64 * sizeof(int32_t)));
    int32_t* spins = static_cast<int32_t*>(AscendC::GmAlloc(64 * sizeof(int32_t)));
    for (int32_t i = 0; i < n; ++i) x[i] = float(i);
    for (int32_t i = 0; i < 64; ++i) flags[i] = spins[i] = 0;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(poll_barrier, cores, (uint8_t*)x, (uint8_t*)data, (uint8_t*)out, (uint8_t*)flags, (uint8_t*)spins,
                int32_t(6), int32_t(3000));
    int32_t wrong = 0;
    for (int32_t i = 0; i < n; ++i) wrong += out[i] != x[(i + row) % n] * 2.0f + 1.0f;
    std::printf("looks %d %d wrong %d\n", spins[0], spins[1], wrong);
    AscendC::GmFree(x);
    AscendC::GmFree(data);
    AscendC::GmFree(out);
    AscendC::GmFree(flags);
    AscendC::GmFree(spins);
    return wrong == 0 ? 0 : 1;
}
