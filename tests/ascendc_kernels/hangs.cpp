// Ways for a mix 1:2 kernel to hang, chosen by `mode` (vector core `who` misbehaves): the watchdog
// must name every stuck core with its kernel line, well before any timeout.
// 1 every core waits on flag 5, which nothing sets;
// 2 vector core `who` waits on flag 3 in mode 1 (which needs its own set too) and never sets it;
// 3 vector core `who` spins (no API call) after a PipeBarrier, while every other core is in SyncAll;
// 4 vector core `who` spins before its first API call; the other cores finish.
// The spins are bounded (30 s), so that no process outlives a runtime that failed to end it.
#include <chrono>
#include "kernel_operator.h"
using namespace AscendC;

static void spin() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    volatile uint64_t n = 0;
    while (std::chrono::steady_clock::now() < until) n = n + 1;
}

extern "C" __global__ __aicore__ void hangs(uint32_t mode, uint32_t who) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    const bool me = ASCEND_IS_AIV && uint32_t(GetBlockIdx()) == who;
    if (mode == 1) CrossCoreWaitFlag(5);  // hang: nothing sets flag 5
    if (mode == 2 && ASCEND_IS_AIV) {
        if (me) CrossCoreWaitFlag<1>(3);  // hang: mode 1 needs this core's own set
        else CrossCoreSetFlag<1, PIPE_MTE3>(3);
    }
    if (mode == 3) {
        if (me) {
            PipeBarrier<PIPE_ALL>();  // the spinning core's last API call
            spin();
        }
        SyncAll<false>();  // the others wait here
    }
    if (mode == 4 && me) spin();  // spins before its first API call
}
