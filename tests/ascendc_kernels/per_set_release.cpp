// A handoff of our own between the two vector cores that racecheck must see as ordered: each core
// copies its slot out (MTE3) and raises flag 1 on PIPE_MTE3, then copies an input in (MTE2) and
// raises flag 2 on PIPE_MTE2 (which does not wait for the copy out); it waits for flag 1 and reads
// the other core's slot. Flag 1 orders the copy out before that read, whatever flag 2 does not.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void per_set_release(GM_ADDR x, GM_ADDR slots, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    const int32_t me = GetBlockIdx();
    GlobalTensor<float> xg, sg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 16);
    sg.SetGlobalBuffer((__gm__ float*)slots, 16);
    og.SetGlobalBuffer((__gm__ float*)out, 16);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<float> mine = buf.Get<float>(8);
    LocalTensor<float> in = buf.GetWithOffset<float>(8, 1024);
    LocalTensor<float> other = buf.GetWithOffset<float>(8, 2048);
    Duplicate(mine, float(me + 1), 8);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(sg[me * 8], mine, 8);
    CrossCoreSetFlag<0x0, PIPE_MTE3>(1);
    DataCopy(in, xg[me * 8], 8);
    CrossCoreSetFlag<0x0, PIPE_MTE2>(2);
    CrossCoreWaitFlag(1);
    DataCopy(other, sg[(1 - me) * 8], 8);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(og[me * 8], other, 8);
    CrossCoreWaitFlag(2);
}
