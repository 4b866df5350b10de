// A handoff of our own from the vector cores to their cube core: each vector core copies its partial
// out to GM (MTE3) and raises a mode-2 flag; the cube core waits for both and reads the partials.
// The flag is raised on PIPE_V, not on PIPE_MTE3: it can fire before the copy-out has landed.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void flag_pipe(GM_ADDR partials, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<float> pg, og;
    pg.SetGlobalBuffer((__gm__ float*)partials, 16);
    og.SetGlobalBuffer((__gm__ float*)out, 8);
    if ASCEND_IS_AIV {
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 1024);
        LocalTensor<float> t = buf.Get<float>(8);
        Duplicate(t, float(GetBlockIdx() + 1), 8);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(pg[GetBlockIdx() * 8], t, 8);
        CrossCoreSetFlag<0x2, PIPE_V>(4);  // should be PIPE_MTE3
    }
    if ASCEND_IS_AIC {
        CrossCoreWaitFlag(4);
        og.SetValue(0, pg.GetValue(0) + pg.GetValue(8));
    }
}
