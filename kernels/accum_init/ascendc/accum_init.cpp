// Split-K matmul with atomic accumulation, in Ascend C: the C++ twin of
// kernels/accum_init/kernel.py ("accumulator not yet initialised").
//
//   c[M, N] = a[M, K] @ b[K, N], K cut into chunks of baseK
//
// The output comes from the caching allocator uncleared, so the vector cores zero it first; then
// every cube core multiplies its own K-chunks and adds each partial product into c atomically:
//
//   InitOutput     (vector)  c[rows of this vector core] := 0
//   SyncAll<false>           every core: c is zero before any add       (missing in the incident)
//   SplitKMatmul   (cube)    for each of its K-chunks: c += a[:, chunk] @ b[chunk, :] (atomic add)
//
// Without the SyncAll nothing orders a vector core's zeroing after a cube core's first atomic add:
// a late zeroing wipes a partial sum already added, or the cube adds onto the previous call's
// stale values. Atomics order the adds among themselves, never against a plain write.
// A mix kernel (1 cube + 2 vector cores per AI core); A and B are DTYPE_A, C is float.
#include "kernel_operator.h"
#include "accum_init_tiling.h"

using namespace AscendC;

#ifndef DTYPE_A
#define DTYPE_A half
#endif

template <typename T>
class KernelSplitKMatmul {
public:
    __aicore__ inline KernelSplitKMatmul() {}

    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, const AccumInitTilingData& tiling) {
        m_ = tiling.m;
        n_ = tiling.n;
        k_ = tiling.k;
        baseK_ = tiling.baseK;
        aGm_.SetGlobalBuffer((__gm__ T*)a, m_ * k_);
        bGm_.SetGlobalBuffer((__gm__ T*)b, k_ * n_);
        cGm_.SetGlobalBuffer((__gm__ float*)c, m_ * n_);
        if ASCEND_IS_AIV {
            const uint32_t parts = static_cast<uint32_t>(GetBlockNum() * GetTaskRation());
            const uint32_t me = static_cast<uint32_t>(GetBlockIdx());
            row0_ = me * m_ / parts;
            rows_ = (me + 1) * m_ / parts - row0_;
            zeroLength_ = (rows_ * n_ + 7) / 8 * 8;
            if (rows_ > 0) pipe_.InitBuffer(outQueueZero_, 1, zeroLength_ * sizeof(float));
        }
    }

    __aicore__ inline void Process() {
        if ASCEND_IS_AIV {
            InitOutput();
        }
        SyncAll<false>();
        if ASCEND_IS_AIC {
            SplitKMatmul();
        }
    }

private:
    // c[rows of this vector core] := 0
    __aicore__ inline void InitOutput() {
        if (rows_ == 0) return;
        LocalTensor<float> zeros = outQueueZero_.AllocTensor<float>();
        Duplicate(zeros, 0.0f, zeroLength_);
        outQueueZero_.EnQue(zeros);
        zeros = outQueueZero_.DeQue<float>();
        DataCopyPad(cGm_[row0_ * n_], zeros, DataCopyExtParams(1, rows_ * n_ * sizeof(float), 0, 0));
        outQueueZero_.FreeTensor(zeros);
    }

    // This cube core's K-chunks (round-robin over the cube cores), each added atomically into c:
    // GM -> L1 (ND2NZ), L1 -> L0A / L0B, Mmad into L0C, Fixpipe out with the atomic add.
    __aicore__ inline void SplitKMatmul() {
        constexpr uint32_t C0 = 32 / sizeof(T);  // elements of a 32-byte block: a fractal row of L0A / L0B
        const uint32_t mAlign = Align16(m_), nAlign = Align16(n_), kAlign = Align16(baseK_);
        const uint32_t M1 = mAlign / 16, N1 = nAlign / 16;
        LocalMemAllocator<Hardware::L1> l1;
        LocalMemAllocator<Hardware::L0A> l0a;
        LocalMemAllocator<Hardware::L0B> l0b;
        LocalMemAllocator<Hardware::L0C> l0c;
        LocalTensor<T> a1 = l1.Alloc<TPosition::A1, T>(mAlign * kAlign);
        LocalTensor<T> b1 = l1.Alloc<TPosition::B1, T>(kAlign * nAlign);
        LocalTensor<T> a2 = l0a.Alloc<TPosition::A2, T>(mAlign * kAlign);
        LocalTensor<T> b2 = l0b.Alloc<TPosition::B2, T>(kAlign * nAlign);
        LocalTensor<float> c1 = l0c.Alloc<TPosition::CO1, float>(mAlign * nAlign);
        const uint32_t cube = static_cast<uint32_t>(GetBlockIdx()), cubes = static_cast<uint32_t>(GetBlockNum());
        bool first = true;
        for (uint32_t k0 = cube * baseK_; k0 < k_; k0 += cubes * baseK_, first = false) {
            const uint32_t kw = k_ - k0 < baseK_ ? k_ - k0 : baseK_;
            const uint32_t K1 = (kw + C0 - 1) / C0, kwAlign = Align16(kw);
            if (!first) {  // L1 was loaded into L0 before it is refilled
                SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
                WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
            }
            // A [m, kw] as NZ: 32-byte column blocks, mAlign rows apart
            DataCopy(a1, aGm_[k0], Nd2NzParams(1, m_, kw, 0, k_, mAlign, 1, 0));
            if constexpr (sizeof(T) == 2) {  // B [kw, n] as NZ, kwAlign rows apart
                DataCopy(b1, bGm_[k0 * n_], Nd2NzParams(1, kw, n_, 0, n_, kwAlign, 1, 0));
            } else {  // float B as ZZ: each 16 rows an NZ of their own, so a row's column blocks are adjacent fractals
                for (uint32_t r = 0; r < kw; r += 16)
                    DataCopy(b1[r * nAlign], bGm_[(k0 + r) * n_], Nd2NzParams(1, kw - r < 16 ? kw - r : 16, n_, 0, n_, 16, 1, 0));
            }
            SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
            if (!first) {  // the last Mmad has read L0A / L0B
                SetFlag<HardEvent::M_MTE1>(EVENT_ID0);
                WaitFlag<HardEvent::M_MTE1>(EVENT_ID0);
            }
            // L0A wants Zz: each 16 rows, their K1 fractals in a row
            for (uint32_t i = 0; i < M1; ++i)
                LoadData(a2[i * K1 * 16 * C0], a1[i * 16 * C0], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
            // L0B wants Zn: each fractal transposed, a row of N1 fractals per 16 (half) or 8 (float) k
            if constexpr (sizeof(T) == 2) {
                for (uint32_t i = 0; i < kwAlign / 16; ++i)
                    LoadData(b2[i * N1 * 256], b1[i * 256], LoadData2DParams(0, N1, kwAlign / 16, 0, 0, true, 0));
            } else {
                for (uint32_t i = 0; i < kwAlign / 16; ++i)
                    LoadDataWithTranspose(b2[2 * i * N1 * 128], b1[i * 16 * nAlign],
                                          LoadData2dTransposeParams(0, N1, 1, 0, N1 - 1));
            }
            SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
            WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
            if (!first) {  // the last chunk has left L0C
                SetFlag<HardEvent::FIX_M>(EVENT_ID0);
                WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
            }
            Mmad(c1, a2, b2, MmadParams(m_, n_, kw));
            SetFlag<HardEvent::M_FIX>(EVENT_ID0);
            WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
            SetAtomicAdd<float>();
            Fixpipe(cGm_, c1, FixpipeParamsV220(n_, m_, mAlign, n_, false));  // c += this chunk's partial product
            SetAtomicNone();
        }
    }

    static __aicore__ inline uint32_t Align16(uint32_t x) { return (x + 15) / 16 * 16; }

    TPipe pipe_;
    TQue<TPosition::VECOUT, 1> outQueueZero_;
    GlobalTensor<T> aGm_, bGm_;
    GlobalTensor<float> cGm_;
    uint32_t m_ = 0, n_ = 0, k_ = 0, baseK_ = 0, row0_ = 0, rows_ = 0, zeroLength_ = 0;
};

extern "C" __global__ __aicore__ void accum_init(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(AccumInitTilingData, tilingData, tiling);
    KernelSplitKMatmul<DTYPE_A> op;
    op.Init(a, b, c, tilingData);
    op.Process();
}
