// Host program launching a vector kernel without SetKernelMode: MIX_MODE, the CPU-debug default, starts
// a cube core per block too, and the cube core cannot use UB (its first use, buf.Get, says so). mpnpu must say why.
#include <cstdio>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void vector_work(GM_ADDR out) {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);  // only addresses: allowed on any core
    AscendC::LocalTensor<float> t = buf.Get<float>();  // UB
    AscendC::Duplicate(t, 1.0f, 64);
    (void)out;
}

int main() {
    uint8_t* out = static_cast<uint8_t*>(AscendC::GmAlloc(256));
    ICPU_RUN_KF(vector_work, 1, out);
    AscendC::GmFree(out);
    return 0;
}
