// A vector-only kernel for the launch test: half in, Cast to float, Muls, Adds under a bit mask,
// Exp, float out, through double-buffered queues. -DDROP_OUT_QUEUE leaves out the output queue's
// EnQue/DeQue, so MTE3 copies out what PIPE_V writes with nothing ordering the two (a race).
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t N = 2048, TILE = 256;
class KernelChain {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR z) {
        int off = GetBlockIdx() * N;
        xg.SetGlobalBuffer((__gm__ half*)x + off, N);
        zg.SetGlobalBuffer((__gm__ float*)z + off, N);
        pipe.InitBuffer(inQ, 2, TILE * sizeof(half));
        pipe.InitBuffer(outQ, 2, TILE * sizeof(float));
        pipe.InitBuffer(tmp, TILE * sizeof(float));
    }
    __aicore__ inline void Process() {
        for (int i = 0; i < N / TILE; ++i) {
            LocalTensor<half> x = inQ.AllocTensor<half>();
            DataCopy(x, xg[i * TILE], TILE);
            inQ.EnQue(x);
            LocalTensor<half> xl = inQ.DeQue<half>();
            LocalTensor<float> t = tmp.Get<float>();
            LocalTensor<float> z = outQ.AllocTensor<float>();
            Cast(t, xl, RoundMode::CAST_NONE, TILE);
            Muls(t, t, 2.0f, TILE);
            uint64_t mask[2] = {0x00000000FFFFFFFFull, 0};
            Adds(t, t, 1.0f, mask, TILE / 64, {1, 1, 8, 8});
            Exp(z, t, TILE);
#ifndef DROP_OUT_QUEUE
            outQ.EnQue(z);
#endif
            inQ.FreeTensor(xl);
#ifndef DROP_OUT_QUEUE
            LocalTensor<float> zo = outQ.DeQue<float>();
#else
            LocalTensor<float> zo = z;
#endif
            DataCopy(zg[i * TILE], zo, TILE);
            outQ.FreeTensor(zo);
        }
    }
private:
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    TQue<TPosition::VECOUT, 2> outQ;
    TBuf<TPosition::VECCALC> tmp;
    GlobalTensor<half> xg;
    GlobalTensor<float> zg;
};
extern "C" __global__ __aicore__ void vector_chain(GM_ADDR x, GM_ADDR z) {
    KernelChain op;
    op.Init(x, z);
    op.Process();
}
