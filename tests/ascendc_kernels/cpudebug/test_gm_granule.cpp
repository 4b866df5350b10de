// Host program whose kernel copies COUNT halfs of x (a GmAlloc of BYTES bytes) into UB and back out.
// The device rounds every GM allocation up to 32 bytes, so a whole-block copy that covers the end of an
// 18-byte tensor stays inside its allocation; a copy past that is a memcheck report.
#include <cstdio>
#include <cstdlib>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void granule(GM_ADDR x, GM_ADDR out, uint32_t count) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    AscendC::GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(x));
    og.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(out));
    AscendC::LocalTensor<half> t = buf.Get<half>();
    AscendC::DataCopy(t, xg, count);  // the copy in
    AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE3>(0);
    AscendC::DataCopy(og, t, count);
}

int main(int argc, char** argv) {
    const size_t bytes = argc > 1 ? size_t(std::atoi(argv[1])) : 18;
    const uint32_t count = argc > 2 ? uint32_t(std::atoi(argv[2])) : 16;
    uint8_t* x = static_cast<uint8_t*>(AscendC::GmAlloc(bytes));
    uint8_t* out = static_cast<uint8_t*>(AscendC::GmAlloc(256));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(granule, 1, x, out, count);
    std::printf("copied %u halfs\n", count);
    AscendC::GmFree(x);
    AscendC::GmFree(out);
    return 0;
}
