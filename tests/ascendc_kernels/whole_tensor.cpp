// The whole-tensor operators (dst = src0 OP src1) on a vector core: x and y copied in, the six
// operators computed into six tensors of n elements each (n = the destination's length, not the
// sources'), copied out one after the other. T is float for + - * / and int16_t for & |;
// MPNPU_TEST_DROP drops the barrier before the copy-out (a race the operator's trace must show).
#include "kernel_operator.h"
using namespace AscendC;

#ifndef MPNPU_TEST_T
#define MPNPU_TEST_T float
#endif
#ifndef MPNPU_TEST_DROP
#define MPNPU_TEST_DROP 0
#endif

extern "C" __global__ __aicore__ void whole_tensor(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t n) {
    using T = MPNPU_TEST_T;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8 * 128 * sizeof(T));
    LocalTensor<T> all = buf.Get<T>();
    LocalTensor<T> a = all, b = all[128];
    GlobalTensor<T> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ T*)x, 128);
    yg.SetGlobalBuffer((__gm__ T*)y, 128);
    og.SetGlobalBuffer((__gm__ T*)out, 4 * n);
    DataCopy(a, xg, 128);
    DataCopy(b, yg, 128);
    PipeBarrier<PIPE_ALL>();
    LocalTensor<T> r[4];
    for (int i = 0; i < 4; ++i) {
        r[i] = all[(2 + i) * 128];
        r[i].SetSize(n);
    }
    if constexpr (std::is_same_v<T, float>) {
        r[0] = a + b;
        r[1] = a - b;
        r[2] = a * b;
        r[3] = a / b;
    } else {
        r[0] = a & b;
        r[1] = a | b;
        r[2] = a & a;
        r[3] = b | b;
    }
    if (!MPNPU_TEST_DROP) PipeBarrier<PIPE_ALL>();
    for (int i = 0; i < 4; ++i) DataCopy(og[i * n], r[i], n);
}
