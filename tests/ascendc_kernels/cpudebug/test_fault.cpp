// Host program whose kernel reads past the end of its input on one vector core (faults.cpp, mode 1).
#include "tikicpulib.h"
#include "../faults.cpp"

int main() {
    const uint32_t n = 64;
    uint8_t* x = static_cast<uint8_t*>(AscendC::GmAlloc(n * sizeof(float)));
    uint8_t* y = static_cast<uint8_t*>(AscendC::GmAlloc(n * sizeof(float)));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(faults, 2, x, y, n, 1u, 1u);
    return 0;
}
