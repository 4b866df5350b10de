// A barrier the kernel builds itself out of flag words in GM (no sync call of the API): every vector
// core writes its row of ``data``, then its own flag word, then reads all the flag words again and
// again until each is set; after the barrier it copies the next core's row into its row of ``out``.
// The last core first goes through its row ``work`` extra times, so that the others are polling by
// the time its flag lands; each core writes how many times it looked at the flags to ``spins``.
// ``mode``:
//   0 the barrier: out[b] = data[b + 1] = x[b + 1] * 2 + 1, and no race.
//   1 no barrier at all: the read of the next core's row races with that core's write of it.
//   2 one look at the flags instead of a loop (the read of the next row still races: nothing makes
//     the core wait for the flags it read).
//   3 the barrier, but the flags polled are the ones before the core's own (out of order: the core
//     polls until its predecessors are done, then reads its successor's row, which still races).
//   4 scalar flags: each core stores its flag with WriteGmByPassDCache and loads the next core's
//     with ReadGmByPassDCache until it is set (no race); 5 the same with the load's loop dropped; 6 as
//     4, but the last core's loop is a line of its own (working longer, it finds the flag set at its
//     first look: only a probe shows that line is a loop, mpnpu/racecheck/poll_probe.py).
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t ROW = 8;

class PollBarrier {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR data, GM_ADDR out, GM_ADDR flags, GM_ADDR spins) {
        me_ = int32_t(GetBlockIdx());
        cores_ = int32_t(GetBlockNum());
        xGm_.SetGlobalBuffer((__gm__ float*)x, cores_ * ROW);
        dataGm_.SetGlobalBuffer((__gm__ float*)data, cores_ * ROW);
        outGm_.SetGlobalBuffer((__gm__ float*)out, cores_ * ROW);
        flagGm_.SetGlobalBuffer((__gm__ int32_t*)flags, 64);
        spinGm_.SetGlobalBuffer((__gm__ int32_t*)spins, 64);
        pipe_.InitBuffer(rowBuf_, 32 * ROW);
        pipe_.InitBuffer(flagBuf_, 32);
        pipe_.InitBuffer(pollBuf_, 4 * 64);
    }

    __aicore__ inline void WriteRow() {
        LocalTensor<float> row = rowBuf_.Get<float>(ROW);
        DataCopy(row, xGm_[me_ * ROW], ROW);
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
        for (int32_t i = 0; i < ROW; ++i) row.SetValue(i, row.GetValue(i) * 2.0f + 1.0f);
        SetFlag<HardEvent::S_MTE3>(0);
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopy(dataGm_[me_ * ROW], row, ROW);
    }

    __aicore__ inline void WriteFlag() {
        LocalTensor<int32_t> flag = flagBuf_.Get<int32_t>(8);
        flag.SetValue(0, 1);
        SetFlag<HardEvent::S_MTE3>(1);
        WaitFlag<HardEvent::S_MTE3>(1);
        DataCopyExtParams one{1, static_cast<uint32_t>(sizeof(int32_t)), 0, 0, 0};
        DataCopyPad(flagGm_[me_], flag, one);  // (after the row on MTE3: the pipe runs in order)
        SetFlag<HardEvent::MTE3_S>(0);
        WaitFlag<HardEvent::MTE3_S>(0);
    }

    // Whether every flag in [0, n) is set, from one copy of them.
    __aicore__ inline bool LookAtFlags(int32_t n) {
        LocalTensor<int32_t> poll = pollBuf_.Get<int32_t>();
        DataCopyExtParams all{1, static_cast<uint32_t>(n * sizeof(int32_t)), 0, 0, 0};
        DataCopyPadExtParams<int32_t> pad{false, 0, 0, 0};
        DataCopyPad(poll, flagGm_, all, pad);
        SetFlag<HardEvent::MTE2_S>(1);
        WaitFlag<HardEvent::MTE2_S>(1);
        bool done = true;
        for (int32_t i = 0; i < n; ++i)
            if (poll.GetValue(i) != 1) done = false;
        return done;
    }

    __aicore__ inline void ReadNext() {
        LocalTensor<float> row = rowBuf_.Get<float>(ROW);
        const int32_t next = (me_ + 1) % cores_;
        DataCopy(row, dataGm_[next * ROW], ROW);
        SetFlag<HardEvent::MTE2_MTE3>(0);
        WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(outGm_[me_ * ROW], row, ROW);
    }

    __aicore__ inline void Run(int32_t mode, int32_t work) {
        for (int32_t i = 0; i < (me_ == cores_ - 1 ? work : 0); ++i) {
            WriteRow();
            SetFlag<HardEvent::MTE3_MTE2>(0);
            WaitFlag<HardEvent::MTE3_MTE2>(0);
        }
        WriteRow();
        int32_t looks = 0;
        if (mode == 4 || mode == 5 || mode == 6) {
            SetFlag<HardEvent::MTE3_S>(0);
            WaitFlag<HardEvent::MTE3_S>(0);
            __gm__ int32_t* words = const_cast<__gm__ int32_t*>(flagGm_.GetPhyAddr());
            WriteGmByPassDCache<int32_t>(words + me_ * 8, 1);
            const int32_t next = (me_ + 1) % cores_;
            if (mode == 6 && me_ == cores_ - 1) {
                while (++looks, ReadGmByPassDCache<int32_t>(words + next * 8) != 1) {  // the last core's own line
                }
            } else {
                while (++looks, ReadGmByPassDCache<int32_t>(words + next * 8) != 1 && mode != 5) {
                }
            }
            SetFlag<HardEvent::S_MTE2>(0);
            WaitFlag<HardEvent::S_MTE2>(0);
        }
        if (mode < 4 && mode != 1) WriteFlag();
        if (mode == 0) {
            while (++looks, !LookAtFlags(cores_)) {
            }
        } else if (mode == 2) {
            (void)LookAtFlags(cores_);
            looks = 1;
        } else if (mode == 3) {
            while (++looks, !LookAtFlags(me_ > 0 ? me_ : 1)) {
            }
        }
        ReadNext();
        LocalTensor<int32_t> flag = flagBuf_.Get<int32_t>(8);
        flag.SetValue(0, looks);
        SetFlag<HardEvent::S_MTE3>(1);
        WaitFlag<HardEvent::S_MTE3>(1);
        DataCopyExtParams one{1, static_cast<uint32_t>(sizeof(int32_t)), 0, 0, 0};
        DataCopyPad(spinGm_[me_], flag, one);
    }

private:
    TPipe pipe_;
    TBuf<TPosition::VECCALC> rowBuf_, flagBuf_, pollBuf_;
    GlobalTensor<float> xGm_, dataGm_, outGm_;
    GlobalTensor<int32_t> flagGm_, spinGm_;
    int32_t me_ = 0, cores_ = 0;
};

extern "C" __global__ __aicore__ void poll_barrier(GM_ADDR x, GM_ADDR data, GM_ADDR out, GM_ADDR flags,
                                                   GM_ADDR spins, int32_t mode, int32_t work) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    PollBarrier op;
    op.Init(x, data, out, flags, spins);
    op.Run(mode, work);
}
