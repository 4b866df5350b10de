// y = x + x tile by tile through a VECIN queue. The DeQue orders PIPE_V's read of the tile after
// PIPE_MTE2's copy into it; dropped (by its line), Add reads whatever the buffer held before.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void early_read(GM_ADDR x, GM_ADDR y, uint32_t tiles, uint32_t tile) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, tile * sizeof(float));
    pipe.InitBuffer(out, 1, tile * sizeof(float));
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, tiles * tile);
    yg.SetGlobalBuffer((__gm__ float*)y, tiles * tile);
    for (uint32_t i = GetBlockIdx(); i < tiles; i += GetBlockNum()) {
        LocalTensor<float> a = in.AllocTensor<float>();
        DataCopy(a, xg[i * tile], tile);
        in.EnQue(a);
        a = in.DeQue<float>();
        LocalTensor<float> b = out.AllocTensor<float>();
        Add(b, a, a, tile);
        out.EnQue<float>(b);
        in.FreeTensor(a);
        b = out.DeQue<float>();
        DataCopy(yg[i * tile], b, tile);
        out.FreeTensor(b);
    }
}
