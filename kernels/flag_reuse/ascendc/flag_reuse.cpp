// Matmul + SiLU through ping-pong GM slots, in Ascend C: the C++ twin of
// kernels/flag_reuse/kernel.py ("flag reused before it was consumed").
//
//   out[M, N] = silu(x[M, K] @ w[K, N] + bias[N]),  N cut into tiles of baseN columns
//
// Each cube core computes its tiles one after another into its two GM slots (ping-pong) and hands
// each to its two vector cores with a cross-core flag; each vector core adds the bias and applies
// SiLU to its half of the tile's rows:
//
//   cube:    tile i:  L0C = x @ w[:, tile]   [FW: wait flag 4 + i % 2, slot i % 2 free]   Fixpipe -> slot   set flag 3
//   vector:  tile i:  wait flag 3   rows <- slot[i % 2][my half]   [FS: set flag 4 + i % 2]
//                     out[my half, tile] = silu(rows + bias[tile])
//
// As written, the kernel has no vector -> cube "slot free" handshake (FS / FW): the cube sets flag
// 3 again for each next tile whether or not the vector cores took the previous ones. Flags count,
// so no set is lost, but a vector core two tiles behind reads a slot the cube already overwrote.
// Dropping only FS leaves the cube waiting for a release no core will set: the watchdog's deadlock.
// A mix kernel (1 cube + 2 vector cores per AI core); x, w, bias and out are DTYPE_X.
#include "kernel_operator.h"
#include "flag_reuse_tiling.h"

using namespace AscendC;

#ifndef DTYPE_X
#define DTYPE_X half
#endif

// Cross-core flags, mode 2 (a cube core and its two vector cores).
constexpr uint16_t FLAG_TILE_READY = 3;           // cube -> vector: a tile is in its slot
constexpr uint16_t FLAG_SLOT_FREE[2] = {4, 5};    // vector -> cube: slot 0 / 1 read, it may be overwritten

__aicore__ inline uint32_t Align32Bytes(uint32_t bytes) { return (bytes + 31) / 32 * 32; }

// The cube core: each of its tiles of x @ w into slot i % 2, announced with flag 3.
template <typename T>
class TileProducer {
public:
    __aicore__ inline TileProducer() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR slots, const FlagReuseTilingData& tiling) {
        m_ = tiling.m;
        n_ = tiling.n;
        k_ = tiling.k;
        baseN_ = tiling.baseN;
        baseK_ = tiling.baseK;
        cube_ = static_cast<uint32_t>(GetBlockIdx());
        cubes_ = static_cast<uint32_t>(GetBlockNum());
        xGm_.SetGlobalBuffer((__gm__ T*)x, m_ * k_);
        wGm_.SetGlobalBuffer((__gm__ T*)w, k_ * n_);
        slotsGm_.SetGlobalBuffer((__gm__ float*)slots, (cube_ + 1) * 2 * m_ * baseN_);
    }

    __aicore__ inline void Pipeline() {
        constexpr uint32_t C0 = 32 / sizeof(T);  // elements of a 32-byte block: a fractal row of L0A / L0B
        const uint32_t mAlign = Align16(m_), kAlign = Align16(baseK_), M1 = mAlign / 16;
        LocalMemAllocator<Hardware::L1> l1;
        LocalMemAllocator<Hardware::L0A> l0a;
        LocalMemAllocator<Hardware::L0B> l0b;
        LocalMemAllocator<Hardware::L0C> l0c;
        LocalTensor<T> a1 = l1.Alloc<TPosition::A1, T>(mAlign * kAlign);
        LocalTensor<T> b1 = l1.Alloc<TPosition::B1, T>(kAlign * baseN_);
        LocalTensor<T> a2 = l0a.Alloc<TPosition::A2, T>(mAlign * kAlign);
        LocalTensor<T> b2 = l0b.Alloc<TPosition::B2, T>(kAlign * baseN_);
        LocalTensor<float> c1 = l0c.Alloc<TPosition::CO1, float>(mAlign * baseN_);
        uint32_t tiles = 0;
        for (uint32_t n0 = cube_ * baseN_; n0 < n_; n0 += cubes_ * baseN_, ++tiles) {
            const uint32_t tn = n_ - n0 < baseN_ ? n_ - n0 : baseN_;
            const uint32_t tnAlign = Align16(tn), N1 = tnAlign / 16, slot = tiles % 2;
            if (tiles > 0) {  // the last tile has left L0C
                SetFlag<HardEvent::FIX_M>(EVENT_ID0);
                WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
            }
            for (uint32_t k0 = 0; k0 < k_; k0 += baseK_) {
                const uint32_t kw = k_ - k0 < baseK_ ? k_ - k0 : baseK_;
                const uint32_t K1 = (kw + C0 - 1) / C0, kwAlign = Align16(kw);
                if (tiles > 0 || k0 > 0) {  // L1 was loaded into L0 before it is refilled
                    SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
                    WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
                }
                DataCopy(a1, xGm_[k0], Nd2NzParams(1, m_, kw, 0, k_, mAlign, 1, 0));
                if constexpr (sizeof(T) == 2) {  // w [kw, tn] as NZ, kwAlign rows apart
                    DataCopy(b1, wGm_[k0 * n_ + n0], Nd2NzParams(1, kw, tn, 0, n_, kwAlign, 1, 0));
                } else {  // float w as ZZ: each 16 rows an NZ of their own (adjacent column blocks)
                    for (uint32_t r = 0; r < kw; r += 16)
                        DataCopy(b1[r * tnAlign], wGm_[(k0 + r) * n_ + n0],
                                 Nd2NzParams(1, kw - r < 16 ? kw - r : 16, tn, 0, n_, 16, 1, 0));
                }
                SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
                if (tiles > 0 || k0 > 0) {  // the last Mmad has read L0A / L0B
                    SetFlag<HardEvent::M_MTE1>(EVENT_ID0);
                    WaitFlag<HardEvent::M_MTE1>(EVENT_ID0);
                }
                for (uint32_t i = 0; i < M1; ++i)  // L0A: Zz
                    LoadData(a2[i * K1 * 16 * C0], a1[i * 16 * C0], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
                if constexpr (sizeof(T) == 2) {  // L0B: Zn
                    for (uint32_t i = 0; i < kwAlign / 16; ++i)
                        LoadData(b2[i * N1 * 256], b1[i * 256], LoadData2DParams(0, N1, kwAlign / 16, 0, 0, true, 0));
                } else {
                    for (uint32_t i = 0; i < kwAlign / 16; ++i)
                        LoadDataWithTranspose(b2[2 * i * N1 * 128], b1[i * 16 * tnAlign],
                                              LoadData2dTransposeParams(0, N1, 1, 0, N1 - 1));
                }
                SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
                WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
                Mmad(c1, a2, b2, MmadParams(m_, tn, kw, 0, false, k0 == 0));  // onto L0C after the first chunk
            }
            SetFlag<HardEvent::M_FIX>(EVENT_ID0);
            WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
            // slot i % 2 still holds tile i - 2 until both vector cores released it
            if (tiles >= 2) CrossCoreWaitFlag(FLAG_SLOT_FREE[slot]);
            Fixpipe(slotsGm_[(cube_ * 2 + slot) * m_ * baseN_], c1, FixpipeParamsV220(tn, m_, mAlign, baseN_, false));
            // raised on PIPE_FIX: once the tile has landed in the slot
            CrossCoreSetFlag<2, PIPE_FIX>(FLAG_TILE_READY);
        }
        // Take back the last releases, so that no flag is left set when the kernel ends.
        for (uint32_t i = tiles > 2 ? tiles - 2 : 0; i < tiles; ++i) CrossCoreWaitFlag(FLAG_SLOT_FREE[i % 2]);
    }

private:
    static __aicore__ inline uint32_t Align16(uint32_t x) { return (x + 15) / 16 * 16; }

    GlobalTensor<T> xGm_, wGm_;
    GlobalTensor<float> slotsGm_;
    uint32_t m_ = 0, n_ = 0, k_ = 0, baseN_ = 0, baseK_ = 0, cube_ = 0, cubes_ = 1;
};

// A vector core: SiLU(tile + bias) of its half of each tile's rows; a slot is released as soon as
// it has been copied in.
template <typename T>
class TileConsumer {
public:
    __aicore__ inline TileConsumer() {}

    __aicore__ inline void Init(GM_ADDR bias, GM_ADDR out, GM_ADDR slots, const FlagReuseTilingData& tiling) {
        m_ = tiling.m;
        n_ = tiling.n;
        baseN_ = tiling.baseN;
        cube_ = static_cast<uint32_t>(GetBlockIdx() / GetTaskRation());
        cubes_ = static_cast<uint32_t>(GetBlockNum());
        const uint32_t half = (m_ + 1) / 2;
        row0_ = GetSubBlockIdx() == 0 ? 0 : half;
        rows_ = GetSubBlockIdx() == 0 ? half : m_ - half;
        biasGm_.SetGlobalBuffer((__gm__ T*)bias, n_);
        outGm_.SetGlobalBuffer((__gm__ T*)out, m_ * n_);
        slotsGm_.SetGlobalBuffer((__gm__ float*)slots, (cube_ + 1) * 2 * m_ * baseN_);
        const uint32_t tileLength = (rows_ ? rows_ : 1) * baseN_;  // rows baseN elements apart in UB
        pipe_.InitBuffer(inQueueY_, 1, tileLength * sizeof(float));
        pipe_.InitBuffer(inQueueBias_, 1, baseN_ * sizeof(T));
        pipe_.InitBuffer(outQueueOut_, 1, tileLength * sizeof(T));
        pipe_.InitBuffer(biasFloatBuf_, baseN_ * sizeof(float));
        pipe_.InitBuffer(denominatorBuf_, tileLength * sizeof(float));
    }

    __aicore__ inline void Pipeline() {
        const DataCopyPadExtParams<float> noPadF(false, 0, 0, 0.0f);
        const DataCopyPadExtParams<T> noPad(false, 0, 0, T(0));
        LocalTensor<float> biasF = biasFloatBuf_.Get<float>();
        LocalTensor<float> den = denominatorBuf_.Get<float>();
        const uint32_t count = rows_ * baseN_;
        uint32_t i = 0;
        for (uint32_t n0 = cube_ * baseN_; n0 < n_; n0 += cubes_ * baseN_, ++i) {
            const uint32_t tn = n_ - n0 < baseN_ ? n_ - n0 : baseN_;
            CrossCoreWaitFlag(FLAG_TILE_READY);
            LocalTensor<float> y = inQueueY_.AllocTensor<float>();
            const uint32_t ubGap = (baseN_ * sizeof(float) - Align32Bytes(tn * sizeof(float))) / 32;
            DataCopyPad(y, slotsGm_[((cube_ * 2 + i % 2) * m_ + row0_) * baseN_],
                        DataCopyExtParams(rows_, tn * sizeof(float), (baseN_ - tn) * sizeof(float), ubGap), noPadF);
            // raised on PIPE_MTE2: the slot is free once the copy out of it has been made
            CrossCoreSetFlag<2, PIPE_MTE2>(FLAG_SLOT_FREE[i % 2]);
            inQueueY_.EnQue(y);
            LocalTensor<T> b = inQueueBias_.AllocTensor<T>();
            DataCopyPad(b, biasGm_[n0], DataCopyExtParams(1, tn * sizeof(T), 0, 0), noPad);
            inQueueBias_.EnQue(b);

            y = inQueueY_.DeQue<float>();
            b = inQueueBias_.DeQue<T>();
            if constexpr (std::is_same_v<T, float>) {
                DataCopy(biasF, b, baseN_);
            } else {
                Cast(biasF, b, RoundMode::CAST_NONE, tn);
            }
            inQueueBias_.FreeTensor(b);
            for (uint32_t r = 0; r < rows_; ++r) Add(y[r * baseN_], y[r * baseN_], biasF, tn);
            // silu(y) = y / (1 + exp(-y)), over whole rows of the tile (the columns past tn are not copied out)
            Muls(den, y, -1.0f, count);
            Exp(den, den, count);
            Adds(den, den, 1.0f, count);
            LocalTensor<T> result = outQueueOut_.AllocTensor<T>();
            if constexpr (std::is_same_v<T, float>) {
                Div(result, y, den, count);
            } else {
                Div(y, y, den, count);
                Cast(result, y, RoundMode::CAST_RINT, count);
            }
            inQueueY_.FreeTensor(y);
            outQueueOut_.EnQue(result);
            result = outQueueOut_.DeQue<T>();
            const uint32_t outGap = (baseN_ * sizeof(T) - Align32Bytes(tn * sizeof(T))) / 32;
            DataCopyPad(outGm_[row0_ * n_ + n0], result,
                        DataCopyExtParams(rows_, tn * sizeof(T), outGap, (n_ - tn) * sizeof(T)));
            outQueueOut_.FreeTensor(result);
        }
    }

private:
    TPipe pipe_;
    TQue<TPosition::VECIN, 1> inQueueY_, inQueueBias_;
    TQue<TPosition::VECOUT, 1> outQueueOut_;
    TBuf<TPosition::VECCALC> biasFloatBuf_, denominatorBuf_;
    GlobalTensor<T> biasGm_, outGm_;
    GlobalTensor<float> slotsGm_;
    uint32_t m_ = 0, n_ = 0, baseN_ = 0, cube_ = 0, cubes_ = 1, row0_ = 0, rows_ = 0;
};

extern "C" __global__ __aicore__ void flag_reuse(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR out, GM_ADDR slots,
                                                 GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(FlagReuseTilingData, tilingData, tiling);
    if ASCEND_IS_AIC {
        TileProducer<DTYPE_X> producer;
        producer.Init(x, w, slots, tilingData);
        producer.Pipeline();
    } else {
        TileConsumer<DTYPE_X> consumer;
        consumer.Init(bias, out, slots, tilingData);
        consumer.Pipeline();
    }
}
