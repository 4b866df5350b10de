// Inter-block syncs through a GM workspace (IBSet / IBWait, InitDetermineComputeWorkspace /
// WaitPreBlock / NotifyNextBlock), on vector cores. ``mode``:
//   0 a chain: core b > 0 waits for core b-1's set, reads the row core b-1 wrote, adds 1 and writes
//     its own row (out[b] = x + b); core 0 writes x. Without the syncs (sync == 0) the reads race.
//   1 block order: ``rounds`` rounds, in each every core in block order updates one shared row
//     (acc = acc * 3 + b + 1), between WaitPreBlock and NotifyNextBlock; without them it races.
//   2 a wait no core satisfies: core 1 waits for (block 0, event 1), which nothing sets.
//   3 misuse: an IBSet naming a block the launch does not have.
//   4 misuse: a UB workspace smaller than the documented 32 bytes.
//   5 every block but the last waits for the last block's set: fine while every block has a core; in a
//     launch wider than the cores the last block starts only when another ends, which none will.
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t ROW = 8;

class BlockSync {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR out, GM_ADDR ws) {
        me_ = int32_t(GetBlockIdx());
        cores_ = int32_t(GetBlockNum());
        xGm_.SetGlobalBuffer((__gm__ float*)x, ROW);
        outGm_.SetGlobalBuffer((__gm__ float*)out, (cores_ + 1) * ROW);
        wsGm_.SetGlobalBuffer((__gm__ int32_t*)ws, 64 * 8);
        pipe_.InitBuffer(buf_, 4096);
        pipe_.InitBuffer(syncBuf_, 32 * 64);
    }

    __aicore__ inline void Chain(int32_t sync) {
        LocalTensor<int32_t> ub = syncBuf_.Get<int32_t>();
        LocalTensor<float> row = buf_.Get<float>(ROW);
        if (me_ > 0 && sync) IBWait(wsGm_, ub, me_ - 1, 0);
        if (me_ == 0) DataCopy(row, xGm_, ROW);
        else DataCopy(row, outGm_[(me_ - 1) * ROW], ROW);
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
        if (me_ > 0)
            for (int32_t i = 0; i < ROW; ++i) row.SetValue(i, row.GetValue(i) + 1.0f);
        SetFlag<HardEvent::S_MTE3>(0);
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopy(outGm_[me_ * ROW], row, ROW);
        if (sync) IBSet(wsGm_, ub, me_, 0);
    }

    __aicore__ inline void Ordered(int32_t sync, int32_t rounds) {
        LocalTensor<int32_t> ub = syncBuf_.Get<int32_t>();
        LocalTensor<float> row = buf_.Get<float>(ROW);
        if (sync) InitDetermineComputeWorkspace(wsGm_, ub);
        for (int32_t r = 0; r < rounds; ++r) {
            if (sync) WaitPreBlock(wsGm_, ub);
            DataCopy(row, outGm_, ROW);
            SetFlag<HardEvent::MTE2_S>(0);
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int32_t i = 0; i < ROW; ++i) row.SetValue(i, row.GetValue(i) * 3.0f + float(me_ + 1));
            SetFlag<HardEvent::S_MTE3>(0);
            WaitFlag<HardEvent::S_MTE3>(0);
            DataCopy(outGm_, row, ROW);
            if (sync) NotifyNextBlock(wsGm_, ub);
            SetFlag<HardEvent::MTE3_MTE2>(0);
            WaitFlag<HardEvent::MTE3_MTE2>(0);
        }
    }

    __aicore__ inline void Unsatisfied() {
        LocalTensor<int32_t> ub = syncBuf_.Get<int32_t>();
        if (me_ == 1) IBWait(wsGm_, ub, 0, 1);  // nothing sets (block 0, event 1)
    }

    __aicore__ inline void BadBlock() {
        LocalTensor<int32_t> ub = syncBuf_.Get<int32_t>();
        IBSet(wsGm_, ub, cores_, 0);  // one past the last block
    }

    __aicore__ inline void WaitForLast() {
        LocalTensor<int32_t> ub = syncBuf_.Get<int32_t>();
        if (me_ == cores_ - 1) IBSet(wsGm_, ub, me_, 0);
        else IBWait(wsGm_, ub, cores_ - 1, 0);  // the last block's set
    }

    __aicore__ inline void SmallUb() {
        LocalTensor<int32_t> ub = syncBuf_.Get<int32_t>(4);
        IBSet(wsGm_, ub, me_, 0);  // 16 bytes of UB workspace
    }

private:
    TPipe pipe_;
    TBuf<TPosition::VECCALC> buf_, syncBuf_;
    GlobalTensor<float> xGm_, outGm_;
    GlobalTensor<int32_t> wsGm_;
    int32_t me_ = 0, cores_ = 0;
};

extern "C" __global__ __aicore__ void block_sync(GM_ADDR x, GM_ADDR out, GM_ADDR ws, int32_t mode, int32_t sync,
                                                 int32_t rounds) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    BlockSync op;
    op.Init(x, out, ws);
    if (mode == 0) op.Chain(sync);
    else if (mode == 1) op.Ordered(sync, rounds);
    else if (mode == 2) op.Unsatisfied();
    else if (mode == 3) op.BadBlock();
    else if (mode == 4) op.SmallUb();
    else op.WaitForLast();
}

// SuperKernel early start on one launch (WaitPreTaskEnd before the first copy, SetNextTaskStart
// after the last): they order nothing here, so the add is right with them and, on a launch of its
// own, without them; ``twice`` calls WaitPreTaskEnd a second time (misuse).
extern "C" __global__ __aicore__ void task_sync(GM_ADDR x, GM_ADDR out, int32_t twice) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * 64, 64);
    outGm.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * 64, 64);
    LocalTensor<float> t = buf.Get<float>(64);
    WaitPreTaskEnd();
    if (twice) WaitPreTaskEnd();  // a second time on this core
    DataCopy(t, xGm, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Adds(t, t, 1.0f, 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(outGm, t, 64);
    SetNextTaskStart();
}

// GroupBarrier: cores [0, arrive) each add their block number + 1 into out[0] (an atomic add copy), then
// Arrive; the other cores Wait, then copy out[0] into their own slot out[8 * b]. ``rounds`` rounds;
// ``sync`` 0 leaves the barrier out (the waiters' reads race the adds); ``bad`` 1 waits with an index
// outside the Wait group.
extern "C" __global__ __aicore__ void group_barrier(GM_ADDR out, GM_ADDR ws, int32_t arrive, int32_t sync,
                                                    int32_t rounds, int32_t bad) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    const int32_t b = int32_t(GetBlockIdx()), n = int32_t(GetBlockNum());
    GlobalTensor<int32_t> og;
    og.SetGlobalBuffer((__gm__ int32_t*)out, 8 * (n + 1));
    GroupBarrier<PipeMode::MTE3_MODE> bar(ws, uint32_t(arrive), uint32_t(n - arrive));
    LocalTensor<int32_t> t = buf.Get<int32_t>(8);
    for (int32_t r = 0; r < rounds; ++r) {
        if (b < arrive) {
            Duplicate(t, 0, 8);
            PipeBarrier<PIPE_V>();
            SetFlag<HardEvent::V_S>(0);
            WaitFlag<HardEvent::V_S>(0);
            t.SetValue(0, b + 1);
            SetFlag<HardEvent::S_MTE3>(0);
            WaitFlag<HardEvent::S_MTE3>(0);
            SetAtomicAdd<int32_t>();
            DataCopy(og, t, 8);
            DisableDmaAtomic();
            if (sync) bar.Arrive(uint32_t(b));
        } else {
            if (sync) bar.Wait(bad ? uint32_t(n) : uint32_t(b - arrive));  // the Wait
            DataCopy(t, og, 8);
            SetFlag<HardEvent::MTE2_MTE3>(0);
            WaitFlag<HardEvent::MTE2_MTE3>(0);
            DataCopy(og[8 * (b + 1)], t, 8);
            SetFlag<HardEvent::MTE3_MTE2>(0);
            WaitFlag<HardEvent::MTE3_MTE2>(0);
        }
    }
}
