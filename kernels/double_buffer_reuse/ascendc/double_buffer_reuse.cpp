// y = x + 1 tile by tile, in place in two UB buffers (ping-pong) ordered by explicit flags, in
// Ascend C: the C++ twin of kernels/double_buffer_reuse/kernel.py.
//
//   for my k-th tile (buffer b = k % 2):
//       WaitFlag<MTE3_MTE2>(refill[b])   MTE2 waits until buffer b's last tile was copied out
//       DataCopy  buf[b] <- x[tile]      MTE2
//       MTE2_V                           PIPE_V waits for the copy-in
//       Adds      buf[b] += 1            V, in place
//       V_MTE3                           MTE3 waits for PIPE_V
//       DataCopy  y[tile] <- buf[b]      MTE3
//       SetFlag<MTE3_MTE2>(refill[b])    buffer b may be refilled once this copy-out is done
//
// The incident drops the loop's WaitFlag<MTE3_MTE2>: MTE2 refills buffer b with tile k+2 while
// MTE3 may still be copying tile k out of it, so y[k] receives tile k+2's bytes. A vector-only
// kernel: the tiles go round-robin over the GetBlockNum() vector cores.
#include "kernel_operator.h"
#include "double_buffer_reuse_tiling.h"

using namespace AscendC;

class KernelAddOnePingPong {
public:
    __aicore__ inline KernelAddOnePingPong() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const DoubleBufferReuseTilingData& tiling) {
        tileNum_ = tiling.tileNum;
        tileLength_ = tiling.tileLength;
        xGm_.SetGlobalBuffer((__gm__ float*)x, tileNum_ * tileLength_);
        yGm_.SetGlobalBuffer((__gm__ float*)y, tileNum_ * tileLength_);
        pipe_.InitBuffer(pingPongBuf_, 2 * tileLength_ * sizeof(float));
        for (int32_t b = 0; b < 2; ++b) refill_[b] = pipe_.AllocEventID<HardEvent::MTE3_MTE2>();
        filled_ = pipe_.AllocEventID<HardEvent::MTE2_V>();
        computed_ = pipe_.AllocEventID<HardEvent::V_MTE3>();
    }

    __aicore__ inline void Process() { AddOne(); }

private:
    __aicore__ inline void AddOne() {
        const uint32_t cores = static_cast<uint32_t>(GetBlockNum());
        const uint32_t first = static_cast<uint32_t>(GetBlockIdx());
        const uint32_t mine = first < tileNum_ ? (tileNum_ - first + cores - 1) / cores : 0;
        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t tile = first + k * cores, b = k % 2;
            LocalTensor<float> buf = pingPongBuf_.GetWithOffset<float>(tileLength_, b * tileLength_ * sizeof(float));
            if (k >= 2) WaitFlag<HardEvent::MTE3_MTE2>(refill_[b]);
            DataCopy(buf, xGm_[tile * tileLength_], tileLength_);
            SetFlag<HardEvent::MTE2_V>(filled_);
            WaitFlag<HardEvent::MTE2_V>(filled_);
            Adds(buf, buf, 1.0f, tileLength_);
            SetFlag<HardEvent::V_MTE3>(computed_);
            WaitFlag<HardEvent::V_MTE3>(computed_);
            DataCopy(yGm_[tile * tileLength_], buf, tileLength_);
            SetFlag<HardEvent::MTE3_MTE2>(refill_[b]);
        }
        // Take back the last two buffers' flags, so that none is left raised when the kernel ends.
        for (uint32_t k = mine > 2 ? mine - 2 : 0; k < mine; ++k) WaitFlag<HardEvent::MTE3_MTE2>(refill_[k % 2]);
    }

    TPipe pipe_;
    TBuf<TPosition::VECCALC> pingPongBuf_;
    GlobalTensor<float> xGm_, yGm_;
    TEventID refill_[2] = {};
    TEventID filled_ = 0, computed_ = 0;
    uint32_t tileNum_ = 0, tileLength_ = 0;
};

extern "C" __global__ __aicore__ void double_buffer_reuse(GM_ADDR x, GM_ADDR y, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(DoubleBufferReuseTilingData, tilingData, tiling);
    KernelAddOnePingPong op;
    op.Init(x, y, tilingData);
    op.Process();
}
