// A CPU-debug program of our own for sync mutation testing (mpnpu mutate): the two vector cores of an
// AI core combine values through GM after a SyncAll, then hand the sum to their cube core with a
// cross-core flag, and the program checks what it is told to check. argv[1]: "checked" (both outputs), "unchecked" (out[1] is not checked: the flag's wait
// protects something no assertion looks at), "redundant" (both, with a second SyncAll and a
// PipeBarrier that order nothing the first SyncAll does not).
#include <cstdio>
#include <cstring>

#include "tikicpulib.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void handoff(GM_ADDR x, GM_ADDR ws, GM_ADDR out, uint32_t extra_sync) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> xg, wg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 8);
    wg.SetGlobalBuffer((__gm__ float*)ws, 8);
    og.SetGlobalBuffer((__gm__ float*)out, 8);
    if ASCEND_IS_AIV {
        const int32_t me = GetBlockIdx();
        wg.SetValue(me, xg.GetValue(me) * 2.0f);
        if (extra_sync) PipeBarrier<PIPE_ALL>();  // (orders nothing the SyncAll does not)
        SyncAll();
        if (extra_sync) SyncAll();
        if (me == 0) og.SetValue(0, wg.GetValue(0) + wg.GetValue(1));
        CrossCoreSetFlag<0x2, PIPE_MTE3>(3);
    }
    if ASCEND_IS_AIC {
        CrossCoreWaitFlag(3);
        og.SetValue(1, og.GetValue(0) + 1.0f);
    }
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "checked";
    float* x = static_cast<float*>(GmAlloc(8 * sizeof(float)));
    float* ws = static_cast<float*>(GmAlloc(8 * sizeof(float)));
    float* out = static_cast<float*>(GmAlloc(8 * sizeof(float)));
    for (int i = 0; i < 8; ++i) {
        x[i] = float(i + 1);
        ws[i] = -100.0f;
        out[i] = -100.0f;
    }
    SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(handoff, 1, (uint8_t*)x, (uint8_t*)ws, (uint8_t*)out, uint32_t(std::strcmp(mode, "redundant") == 0));
    bool ok = out[0] == 6.0f && (std::strcmp(mode, "unchecked") == 0 || out[1] == 7.0f);
    std::printf("out %g %g: %s\n", out[0], out[1], ok ? "PASS" : "FAIL");
    GmFree(x);
    GmFree(ws);
    GmFree(out);
    return ok ? 0 : 1;
}
