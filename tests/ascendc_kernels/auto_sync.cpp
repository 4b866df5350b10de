// Two kernels of our own for racecheck's model of how kernels are built and synchronised.
// auto_sync: the vector unit writes a buffer and the scalar unit reads and writes it next, with no
// sync of the kernel's own between them: the compiler's automatic synchronisation inserts it.
// copy_then_get: the scalar unit reads what an MTE2 copy wrote, with no sync of the kernel's own:
// built with the compiler's automatic synchronisation the read waits for the copy, without it the
// read races the copy (and sees what the vector unit wrote before).
// own_set: a core writes GM through MTE3, raises a mode-0 cross-core flag on MTE3, waits on it (its
// own set is among those the wait needs), then reads the same GM back through MTE2.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void auto_sync(GM_ADDR x, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    LocalTensor<float> t = buf.Get<float>(64);
    DataCopy(t, xg, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(t, t, 2.0f, 64);
    float first = t.GetValue(0);  // the scalar unit reads what the vector unit wrote
    t.SetValue(1, first);
    SetFlag<HardEvent::S_MTE3>(0);
    WaitFlag<HardEvent::S_MTE3>(0);
    DataCopy(og, t, 64);
}

extern "C" __global__ __aicore__ void own_set(GM_ADDR ws, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    GlobalTensor<float> wg, og;
    wg.SetGlobalBuffer((__gm__ float*)ws, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    LocalTensor<float> a = buf.Get<float>(64);
    Duplicate(a, 3.0f, 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(wg, a, 64);
    CrossCoreSetFlag<0x0, PIPE_MTE3>(5);
    CrossCoreWaitFlag(5);
    LocalTensor<float> b = buf.GetWithOffset<float>(64, 1024);
    DataCopy(b, wg, 64);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(og, b, 64);
}

extern "C" __global__ __aicore__ void copy_then_get(GM_ADDR x, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    LocalTensor<float> t = buf.Get<float>(64);
    Duplicate(t, -1.0f, 64);
    SetFlag<HardEvent::V_MTE2>(0);
    WaitFlag<HardEvent::V_MTE2>(0);
    DataCopy(t, xg, 64);
    og.SetValue(0, t.GetValue(5));  // the scalar unit reads what MTE2 copied in
}
