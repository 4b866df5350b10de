// Two buffer pools over the same bytes of UB, used one after the other (TPipe::InitBufPool with a
// shareBuf), each ended by its Reset: out[0:N] = 2 x, then out[N:2N] = y + 1 (our own kernel).
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t N = 1024;

extern "C" __global__ __aicore__ void pools(GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    yg.SetGlobalBuffer((__gm__ float*)y, N);
    og.SetGlobalBuffer((__gm__ float*)out, 2 * N);
    TPipe pipe;
    TBufPool<TPosition::VECCALC> first, second;
    TQue<TPosition::VECIN, 1> in1, in2;
    TQue<TPosition::VECOUT, 1> out1, out2;
    pipe.InitBufPool(first, 2 * N * sizeof(float));
    pipe.InitBufPool(second, 2 * N * sizeof(float), first);
    first.InitBuffer(in1, 1, N * sizeof(float));
    first.InitBuffer(out1, 1, N * sizeof(float));
    LocalTensor<float> a = in1.AllocTensor<float>();
    DataCopy(a, xg, N);
    in1.EnQue(a);
    a = in1.DeQue<float>();
    LocalTensor<float> b = out1.AllocTensor<float>();
    Muls(b, a, 2.0f, N);
    out1.EnQue(b);
    in1.FreeTensor(a);
    b = out1.DeQue<float>();
    DataCopy(og, b, N);
    out1.FreeTensor(b);
    first.Reset();  // the first pool's accesses end here
    second.InitBuffer(in2, 1, N * sizeof(float));
    second.InitBuffer(out2, 1, N * sizeof(float));
    LocalTensor<float> c = in2.AllocTensor<float>();
    DataCopy(c, yg, N);
    in2.EnQue(c);
    c = in2.DeQue<float>();
    LocalTensor<float> d = out2.AllocTensor<float>();
    Adds(d, c, 1.0f, N);
    out2.EnQue(d);
    in2.FreeTensor(c);
    d = out2.DeQue<float>();
    DataCopy(og[N], d, N);
    out2.FreeTensor(d);
    second.Reset();
}

#ifdef MPNPU_TEST_OVERFLOW
// A pool asked for more than it holds: an error at the InitBuffer line.
extern "C" __global__ __aicore__ void overflow(GM_ADDR x) {
    TPipe pipe;
    TBufPool<TPosition::VECCALC, 2> pool;
    TBuf<TPosition::VECCALC> one, two, three;
    pipe.InitBufPool(pool, 1024);
    pool.InitBuffer(one, 512);
    pool.InitBuffer(two, MPNPU_TEST_OVERFLOW);  // too much, or (512) the pool's last bytes
    pool.InitBuffer(three, 32);  // a third buffer: more than bufIDSize 2
}
#endif
