// A CPU-debug program that chooses its kernel mode: a kernel declaring KERNEL_TYPE_MIX_AIC_1_2 run as
// AIC_MODE (its cube part alone, as a unit test may run it) counts the cores that ran it. With no
// SetKernelMode (argument "declared"), the launch follows the program's default mode instead; with
// argument "mix11", KernelMode::MIX_AIC_1_1: a cube core and one vector core a block.
#include <cstdio>
#include <cstring>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void count_cores(GM_ADDR counts) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    AscendC::GlobalTensor<int32_t> c;
    c.SetGlobalBuffer((__gm__ int32_t*)counts, 16);
    const int slot = ASCEND_IS_AIC ? 0 : 8;
    c.SetValue(slot + AscendC::GetBlockIdx() % 8, 1);
    AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                      AscendC::DcciDst::CACHELINE_OUT>(c[slot]);
}

int main(int argc, char** argv) {
    int32_t* counts = static_cast<int32_t*>(AscendC::GmAlloc(16 * sizeof(int32_t)));
    std::memset(counts, 0, 16 * sizeof(int32_t));
    if (argc > 1 && std::strcmp(argv[1], "mix11") == 0) AscendC::SetKernelMode(KernelMode::MIX_AIC_1_1);
    else if (argc < 2 || std::strcmp(argv[1], "declared") != 0) AscendC::SetKernelMode(KernelMode::AIC_MODE);
    ICPU_RUN_KF(count_cores, 2, (uint8_t*)counts);
    int cube = 0, vector = 0;
    for (int i = 0; i < 8; ++i) cube += counts[i], vector += counts[8 + i];
    std::printf("cube %d vector %d\n", cube, vector);
    AscendC::GmFree(counts);
    return 0;
}
