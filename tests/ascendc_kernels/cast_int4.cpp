// Cast half -> int4b_t on a kernel of our own: 256 halves to 256 packed 4-bit values (128 bytes), by
// the count form (``form`` 0) or the level-0 length form (1: mask 128, 2 repeats, dst 2 blocks a
// repeat) in round mode ``mode`` (RoundMode's number); ``form`` 2 casts float (misuse).
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void cast_int4(GM_ADDR x, GM_ADDR y, int32_t form, int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    GlobalTensor<half> xg;
    GlobalTensor<int8_t> yg;
    xg.SetGlobalBuffer((__gm__ half*)x, 256);
    yg.SetGlobalBuffer((__gm__ int8_t*)y, 128);
    LocalTensor<half> s = buf.GetWithOffset<half>(256, 0);
    LocalTensor<int8_t> d = buf.GetWithOffset<int8_t>(128, 1024);
    LocalTensor<float> f = buf.GetWithOffset<float>(64, 2048);
    DataCopy(s, xg, 256);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<int4b_t> d4 = d.ReinterpretCast<int4b_t>();
    const RoundMode rm = RoundMode(mode);
    if (form == 0) Cast(d4, s, rm, 256);
    else if (form == 1) Cast<int4b_t, half>(d4, s, rm, uint64_t(128), 2, {1, 1, 2, 8});
    else Cast(d4, f, rm, 64);  // float -> int4b_t
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, d, 128);
}
