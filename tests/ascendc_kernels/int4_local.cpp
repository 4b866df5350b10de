// LocalTensor<int4b_t> on a kernel of our own: sizes and offsets count int4b_t values, two to a byte.
// out = [Get<int4b_t>() of a 4096-byte buffer: its size, GetLength(); its [2048]: bytes from the
// buffer's start; as half: size; a half tensor of 64 as int4b_t: size; [6][1024]: bytes in]; and a
// DataCopy of 256 int4b_t values to y copies 128 bytes (the buffer filled with 0x11 first).
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void int4_local(GM_ADDR out, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    GlobalTensor<int64_t> og;
    og.SetGlobalBuffer((__gm__ int64_t*)out, 6);
    LocalTensor<int4b_t> all = buf.Get<int4b_t>();
    auto bytes = [&all](const LocalTensor<int4b_t>& t) { return int64_t(t.GetPhyAddr() - all.GetPhyAddr()); };
    og.SetValue(0, int64_t(all.GetSize()));
    og.SetValue(1, int64_t(all.GetLength()));
    og.SetValue(2, bytes(all[2048]));
    og.SetValue(3, int64_t(all.ReinterpretCast<half>().GetSize()));
    og.SetValue(4, int64_t(buf.Get<half>(64).ReinterpretCast<int4b_t>().GetSize()));
    og.SetValue(5, bytes(all[6][1024]));
    Duplicate(buf.Get<uint16_t>(), uint16_t(0x1111), 2048);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    GlobalTensor<int4b_t> yg;
    yg.SetGlobalBuffer((__gm__ int4b_t*)y, 512);
    DataCopy(yg, all, 256);
}
