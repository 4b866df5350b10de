// Host program for a mix 1:2 kernel (the flag handshake): no SetKernelMode, so the default mix mode.
#include <cstdio>

#include "tikicpulib.h"
#include "../flags_mix.cpp"

int main() {
    int32_t* out = static_cast<int32_t*>(AscendC::GmAlloc(64 * sizeof(int32_t)));
    ICPU_RUN_KF(handshake, 2, (uint8_t*)out, 7u);
    bool ok = true;
    for (int v = 0; v < 4; ++v) ok = ok && out[v] == 7;
    std::printf("rounds %d %d %d %d\n", out[0], out[1], out[2], out[3]);
    AscendC::GmFree(out);
    return ok ? 0 : 1;
}
