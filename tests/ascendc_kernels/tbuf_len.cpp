// Buffers whose InitBuffer length is not a multiple of 32 bytes (our own kernel): the pipe rounds
// each one up to 32 bytes, and the whole-buffer tensor covers the rounded length. out (int32 [8])
// gets the element counts of a TBuf's Get(), a queue's AllocTensor and a TBufPool TBuf's Get(),
// each made from 24 bytes of float; then a 6-float ReduceMax over a 24-byte TBuf shared with dst
// (one repeat: its 2 intermediate floats, aligned to 32 bytes, fit the rounded buffer).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void tbuf_len(GM_ADDR out) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)out, 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf, other, red;
    TQue<TPosition::VECIN, 1> que;
    TBufPool<TPosition::VECCALC> pool;
    pipe.InitBuffer(buf, 6 * sizeof(float));
    pipe.InitBuffer(que, 1, 6 * sizeof(float));
    pipe.InitBufPool(pool, 64);
    pool.InitBuffer(other, 6 * sizeof(float));
    pipe.InitBuffer(red, 6 * sizeof(float));
    LocalTensor<float> q = que.AllocTensor<float>();
    g.SetValue(0, int32_t(buf.Get<float>().GetSize()));
    g.SetValue(1, int32_t(q.GetSize()));
    g.SetValue(2, int32_t(other.Get<float>().GetSize()));
    que.FreeTensor(q);
    LocalTensor<float> src = buf.Get<float>();
    for (int i = 0; i < 6; ++i) src.SetValue(i, float(i == 4 ? 9 : i));
    LocalTensor<float> tmp = red.Get<float>();
    ReduceMax(tmp, src, tmp, 6, false);
    g.SetValue(3, int32_t(tmp.GetValue(0)));
}
