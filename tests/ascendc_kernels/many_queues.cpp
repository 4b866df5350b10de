// Queue buffers and the 8 event ids of a position (our own kernel). By default: eight single-buffer
// VECIN queues carry x's first 8 tiles, the first queue gives its event ids back (FreeAllEvent),
// and a ninth queue, made after that, carries the last tile; out = the 9 tiles, each plus 1. With
// MPNPU_TEST_DOUBLE_BUFFERED: six double-buffered VECIN queues take turns over their buffers, and
// the ninth buffer in use has no event id left. With MPNPU_TEST_COPIED: a queue passed by value
// carries a tile before the queue itself carries the next (the copy names the same buffer, whose
// event ids it takes; the original does not learn of the copy's FreeTensor).
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t TILE = 64;

class Tiles {
public:
    __aicore__ inline Tiles(GM_ADDR x, GM_ADDR out) {
        xg_.SetGlobalBuffer((__gm__ float*)x, 12 * TILE);
        og_.SetGlobalBuffer((__gm__ float*)out, 12 * TILE);
        pipe_.InitBuffer(outQue_, 1, TILE * sizeof(float));
    }
    // Tile t through ``que`` into out (plus 1).
    template <class Q>
    __aicore__ inline void Carry(Q& que, int32_t t) {
        LocalTensor<float> a = que.template AllocTensor<float>();  // the tile's AllocTensor
        DataCopy(a, xg_[t * TILE], TILE);
        que.EnQue(a);
        a = que.template DeQue<float>();
        LocalTensor<float> o = outQue_.AllocTensor<float>();
        Adds(o, a, 1.0f, TILE);
        que.FreeTensor(a);
        outQue_.EnQue(o);
        o = outQue_.DeQue<float>();
        DataCopy(og_[t * TILE], o, TILE);
        outQue_.FreeTensor(o);
    }
    TPipe pipe_;

private:
    TQue<TPosition::VECOUT, 1> outQue_;
    GlobalTensor<float> xg_, og_;
};

// The queue taken by value, as a kernel may pass it by mistake.
__aicore__ inline void CarryByValue(Tiles& tiles, TQue<TPosition::VECIN, 1> que, int32_t t) {
    tiles.Carry(que, t);
}

extern "C" __global__ __aicore__ void many_queues(GM_ADDR x, GM_ADDR out) {
    Tiles tiles(x, out);
#if defined(MPNPU_TEST_COPIED)
    TQue<TPosition::VECIN, 1> q;
    tiles.pipe_.InitBuffer(q, 1, TILE * sizeof(float));
    CarryByValue(tiles, q, 0);
    tiles.Carry(q, 1);  // the original's FreeTensor
#elif defined(MPNPU_TEST_DOUBLE_BUFFERED)
    TQue<TPosition::VECIN, 2> in[6];
    for (int q = 0; q < 6; ++q) tiles.pipe_.InitBuffer(in[q], 2, TILE * sizeof(float));
    for (int t = 0; t < 12; ++t) tiles.Carry(in[t % 6], t);
#else
    TQue<TPosition::VECIN, 1> in[8];
    for (int q = 0; q < 8; ++q) tiles.pipe_.InitBuffer(in[q], 1, TILE * sizeof(float));
    for (int t = 0; t < 8; ++t) tiles.Carry(in[t], t);
    in[0].FreeAllEvent();
    TQue<TPosition::VECIN, 1> ninth;
    tiles.pipe_.InitBuffer(ninth, 1, TILE * sizeof(float));
    tiles.Carry(ninth, 8);
#endif
}
