// A kernel of our own for the accumulator register: ReduceSum over n floats, then the scalar unit
// reads the result back with GetAccVal (both forms) and GetReduceRepeatSumSpr after a V -> S flag, and
// writes them to GM.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void acc_val(GM_ADDR x, GM_ADDR out, int32_t n) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 16384);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 1024);
    og.SetGlobalBuffer((__gm__ float*)out, 8);
    LocalTensor<float> t = buf.GetWithOffset<float>(1024, 0);
    LocalTensor<float> d = buf.GetWithOffset<float>(8, 4096);
    LocalTensor<float> w = buf.GetWithOffset<float>(64, 4352);
    LocalTensor<float> o = buf.GetWithOffset<float>(8, 8192);
    DataCopy(t, xg, 1024);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    ReduceSum(d, t, w, n);
    SetFlag<HardEvent::V_S>(1);
    WaitFlag<HardEvent::V_S>(1);
    float sum = GetAccVal<float>();
    uint64_t raw = GetAccVal();
    float fromRaw = *reinterpret_cast<float*>(&raw);
    o.SetValue(0, sum);
    o.SetValue(1, fromRaw);
    o.SetValue(2, float(raw >> 32));  // the high bytes of a float result: 0
    o.SetValue(3, GetReduceRepeatSumSpr<float>());  // (the newer name of the same register)
    SetFlag<HardEvent::S_MTE3>(0);
    WaitFlag<HardEvent::S_MTE3>(0);
    DataCopy(og, o, 8);
}
