// Two stages on one vector core, each with a TPipe of its own, as the pages say to do it (end one
// pipe before the next): stage 1 on tiles 0-1 (out = 2x), then ``how`` 0 pipe.Destroy(), 1 a
// PipeBarrier<PIPE_ALL> and pipe.Reset(), 2 the barrier and pipe.DestroyWithoutPipeAll() (those two
// order nothing themselves: without the barrier, stage 2's first copy in would race stage 1's last
// reads of the same bytes); stage 2 on tiles 2-3 (out = x + 1) on a new pipe whose queues get the
// same event ids. Stage 1's last FreeTensors leave their sets untaken (no FreeAllEvent): ending the
// pipe forgets them, so stage 2's waits pair with stage 2's own sets.
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t TILE = 256;

template <int STAGE>
__aicore__ inline void RunStage(TPipe& pipe, GlobalTensor<float>& xg, GlobalTensor<float>& og) {
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, TILE * sizeof(float));
    pipe.InitBuffer(outQ, 1, TILE * sizeof(float));
    for (int32_t t = 2 * STAGE; t < 2 * STAGE + 2; ++t) {
        LocalTensor<float> a = inQ.AllocTensor<float>();
        DataCopy(a, xg[t * TILE], TILE);
        inQ.EnQue(a);
        a = inQ.DeQue<float>();
        LocalTensor<float> b = outQ.AllocTensor<float>();
        if (STAGE == 0) Muls(b, a, 2.0f, TILE);
        else Adds(b, a, 1.0f, TILE);
        inQ.FreeTensor(a);
        outQ.EnQue(b);
        b = outQ.DeQue<float>();
        DataCopy(og[t * TILE], b, TILE);
        outQ.FreeTensor(b);
    }
}

extern "C" __global__ __aicore__ void pipe_destroy(GM_ADDR x, GM_ADDR out, int32_t how) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 4 * TILE);
    og.SetGlobalBuffer((__gm__ float*)out, 4 * TILE);
    {
        TPipe pipe;
        RunStage<0>(pipe, xg, og);
        if (how == 0) {
            pipe.Destroy();
        } else if (how == 1) {
            PipeBarrier<PIPE_ALL>();
            pipe.Reset();
        } else {
            PipeBarrier<PIPE_ALL>();
            pipe.DestroyWithoutPipeAll();
        }
    }
    TPipe pipe;
    RunStage<1>(pipe, xg, og);
}
