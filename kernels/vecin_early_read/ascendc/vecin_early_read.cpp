// y = 2 * x tile by tile through double-buffered VECIN / VECOUT queues, in Ascend C: the C++ twin
// of kernels/vecin_early_read/kernel.py (a vector read of VECIN before MTE2 filled it).
//
//   CopyIn    AllocTensor (VECIN), DataCopy x[tile] on MTE2, EnQue
//   Compute   DeQue (PIPE_V waits for MTE2), AllocTensor (VECOUT: waits for MTE3 to have copied
//             the buffer's last tile out), Muls on PIPE_V, EnQue, FreeTensor
//   CopyOut   DeQue (MTE3 waits for PIPE_V), DataCopy y[tile] on MTE3, FreeTensor
//
// The incident drops Compute's DeQue of the input queue: Muls reads the VECIN buffer before MTE2
// has filled it and scales whatever it held (an earlier tile, or the previous call's data).
// Variant vecout-reuse drops Compute's AllocTensor of the output queue instead: Muls overwrites a
// VECOUT buffer MTE3 is still copying out. A vector-only kernel: the tiles go round-robin over
// the GetBlockNum() vector cores.
#include "kernel_operator.h"
#include "vecin_early_read_tiling.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

class KernelScale {
public:
    __aicore__ inline KernelScale() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const VecinEarlyReadTilingData& tiling) {
        tileNum_ = tiling.tileNum;
        tileLength_ = tiling.tileLength;
        xGm_.SetGlobalBuffer((__gm__ float*)x, tileNum_ * tileLength_);
        yGm_.SetGlobalBuffer((__gm__ float*)y, tileNum_ * tileLength_);
        pipe_.InitBuffer(inQueueX_, BUFFER_NUM, tileLength_ * sizeof(float));
        pipe_.InitBuffer(outQueueY_, BUFFER_NUM, tileLength_ * sizeof(float));
    }

    __aicore__ inline void Process() {
        const uint32_t cores = static_cast<uint32_t>(GetBlockNum());
        for (uint32_t i = static_cast<uint32_t>(GetBlockIdx()); i < tileNum_; i += cores) {
            CopyIn(i);
            Compute();
            CopyOut(i);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t progress) {
        LocalTensor<float> xLocal = inQueueX_.AllocTensor<float>();
        DataCopy(xLocal, xGm_[progress * tileLength_], tileLength_);
        inQueueX_.EnQue(xLocal);
    }

    __aicore__ inline void Compute() {
        LocalTensor<float> xLocal = inQueueX_.DeQue<float>();
        LocalTensor<float> yLocal = outQueueY_.AllocTensor<float>();
        Muls(yLocal, xLocal, 2.0f, tileLength_);
        outQueueY_.EnQue<float>(yLocal);
        inQueueX_.FreeTensor(xLocal);
    }

    __aicore__ inline void CopyOut(uint32_t progress) {
        LocalTensor<float> yLocal = outQueueY_.DeQue<float>();
        DataCopy(yGm_[progress * tileLength_], yLocal, tileLength_);
        outQueueY_.FreeTensor(yLocal);
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueX_;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueueY_;
    GlobalTensor<float> xGm_, yGm_;
    uint32_t tileNum_ = 0, tileLength_ = 0;
};

extern "C" __global__ __aicore__ void vecin_early_read(GM_ADDR x, GM_ADDR y, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(VecinEarlyReadTilingData, tilingData, tiling);
    KernelScale op;
    op.Init(x, y, tilingData);
    op.Process();
}
