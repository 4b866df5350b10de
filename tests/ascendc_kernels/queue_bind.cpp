// A queue bound from VECIN to VECOUT (TQueBind), on one vector core, over ``tiles`` tiles of 256 floats:
//   mode 0  each tile copied in and straight out again through the bound queue (plain EnQue / DeQue);
//   mode 1  each tile copied in, +1 in place on the vector unit, copied out, the trips named by
//           position: EnQue<GM, VECIN> / DeQue<GM, VECIN>, then EnQue<VECOUT, GM> / DeQue<VECOUT, GM>.
// The queue's events order each trip's pipes: out = x (mode 0) or x + 1 (mode 1), with no hazard.
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t TILE = 256;

extern "C" __global__ __aicore__ void queue_bind(GM_ADDR x, GM_ADDR out, int32_t tiles, int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> bind;
    pipe.InitBuffer(bind, 1, TILE * sizeof(float));
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, tiles * TILE);
    og.SetGlobalBuffer((__gm__ float*)out, tiles * TILE);
    for (int32_t t = 0; t < tiles; ++t) {
        LocalTensor<float> buf = bind.AllocTensor<float>();
        DataCopy(buf, xg[t * TILE], TILE);
        if (mode == 0) {
            bind.EnQue(buf);
            buf = bind.DeQue<float>();
        } else {
            bind.EnQue<TPosition::GM, TPosition::VECIN, float>(buf);
            buf = bind.DeQue<TPosition::GM, TPosition::VECIN, float>();
            Adds(buf, buf, 1.0f, TILE);
            bind.EnQue<TPosition::VECOUT, TPosition::GM, float>(buf);
            buf = bind.DeQue<TPosition::VECOUT, TPosition::GM, float>();
        }
        DataCopy(og[t * TILE], buf, TILE);
        bind.FreeTensor(buf);
    }
}
