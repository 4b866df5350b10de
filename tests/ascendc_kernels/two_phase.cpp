// A two-phase sum over the vector cores: each core adds its slice of x into its partials row, a
// SyncAll, then core 0 adds every row into out. Without the SyncAll (drop this file's SyncAll line)
// core 0 reads rows the other cores have not written yet.
#include "kernel_operator.h"
using namespace AscendC;

class TwoPhase {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR partials, GM_ADDR out, uint32_t n) {
        cores_ = GetBlockNum();
        me_ = GetBlockIdx();
        per_ = n / cores_;
        xGm_.SetGlobalBuffer((__gm__ float*)x + me_ * per_, per_);
        partGm_.SetGlobalBuffer((__gm__ float*)partials, cores_ * 8);
        outGm_.SetGlobalBuffer((__gm__ float*)out, 8);
        pipe_.InitBuffer(buf_, 64 * 1024);
    }
    __aicore__ inline void Process() {
        PartialSum();
        SyncAll();
        if (me_ == 0) Total();
    }

private:
    __aicore__ inline void PartialSum() {
        LocalTensor<float> t = buf_.Get<float>(per_);
        DataCopy(t, xGm_, per_);
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
        float s = 0;
        for (uint32_t i = 0; i < per_; ++i) s += t.GetValue(i);
        LocalTensor<float> p = buf_.GetWithOffset<float>(8, 32768);
        for (int i = 0; i < 8; ++i) p.SetValue(i, s);
        SetFlag<HardEvent::S_MTE3>(0);
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopy(partGm_[me_ * 8], p, 8);
        SetFlag<HardEvent::MTE3_S>(0);
        WaitFlag<HardEvent::MTE3_S>(0);
    }
    __aicore__ inline void Total() {
        LocalTensor<float> all = buf_.GetWithOffset<float>(cores_ * 8, 0);
        DataCopy(all, partGm_, cores_ * 8);
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
        float total = 0;
        for (uint32_t c = 0; c < cores_; ++c) total += all.GetValue(c * 8);
        LocalTensor<float> p = buf_.GetWithOffset<float>(8, 32768);
        for (int i = 0; i < 8; ++i) p.SetValue(i, total);
        SetFlag<HardEvent::S_MTE3>(0);
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopy(outGm_, p, 8);
    }
    TPipe pipe_;
    TBuf<TPosition::VECCALC> buf_;
    GlobalTensor<float> xGm_, partGm_, outGm_;
    uint32_t cores_ = 0, me_ = 0, per_ = 0;
};

extern "C" __global__ __aicore__ void two_phase(GM_ADDR x, GM_ADDR partials, GM_ADDR out, uint32_t n) {
    TwoPhase op;
    op.Init(x, partials, out, n);
    op.Process();
}
