// Matmul + bias + ReLU epilogue, in Ascend C: the C++ twin of kernels/aiv_barrier/kernel.py (an
// AIV-only barrier where the cube core is a party).
//
//   out[M, N] = relu(x[M, K] @ w[K, N] + bias[N])
//
//   Prepare    cube:    y_ws[rows of this cube core] = x @ w   (K-chunks accumulated in L0C, float out)
//              vector:  bias_ws[columns of this vector core] = float(bias)
//   SyncAll<true>       vector cores only: orders the bias slices between vector cores
//   SyncAll<false>      every core: orders the cube's y_ws write          (missing in the incident)
//   Epilogue   vector:  out[rows of this vector core] = relu(y_ws[rows] + bias_ws)
//
// As written, the kernel has SyncAll<true>() only: a barrier among the vector cores, which the
// cube core is no party to, so it says nothing about whether the cube's result has landed. A
// vector core that passes it before the cube has finished reads the previous call's stale y_ws.
// A mix kernel (1 cube + 2 vector cores per AI core); x, w, bias and out are DTYPE_X.
#include "kernel_operator.h"
#include "aiv_barrier_tiling.h"

using namespace AscendC;

#ifndef DTYPE_X
#define DTYPE_X half
#endif

template <typename T>
class KernelMatmulBiasRelu {
public:
    __aicore__ inline KernelMatmulBiasRelu() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR out, GM_ADDR yWs, GM_ADDR biasWs,
                                const AivBarrierTilingData& tiling) {
        m_ = tiling.m;
        n_ = tiling.n;
        k_ = tiling.k;
        baseK_ = tiling.baseK;
        xGm_.SetGlobalBuffer((__gm__ T*)x, m_ * k_);
        wGm_.SetGlobalBuffer((__gm__ T*)w, k_ * n_);
        biasGm_.SetGlobalBuffer((__gm__ T*)bias, n_);
        outGm_.SetGlobalBuffer((__gm__ T*)out, m_ * n_);
        yWsGm_.SetGlobalBuffer((__gm__ float*)yWs, m_ * n_);
        biasWsGm_.SetGlobalBuffer((__gm__ float*)biasWs, n_);
        nAlign_ = (n_ + 15) / 16 * 16;  // a row of float or of T in whole 32-byte blocks
        if ASCEND_IS_AIC {
            const uint32_t cube = static_cast<uint32_t>(GetBlockIdx()), cubes = static_cast<uint32_t>(GetBlockNum());
            row0_ = cube * m_ / cubes;
            rows_ = (cube + 1) * m_ / cubes - row0_;
        } else {
            const uint32_t parts = static_cast<uint32_t>(GetBlockNum() * GetTaskRation());
            const uint32_t me = static_cast<uint32_t>(GetBlockIdx());
            col0_ = me * n_ / parts;
            cols_ = (me + 1) * n_ / parts - col0_;
            row0_ = me * m_ / parts;
            rows_ = (me + 1) * m_ / parts - row0_;
            const uint32_t colsAlign = cols_ ? (cols_ + 15) / 16 * 16 : 16, rowsAtLeast1 = rows_ ? rows_ : 1;
            pipe_.InitBuffer(inQueueBias_, 1, colsAlign * sizeof(T));
            pipe_.InitBuffer(outQueueBiasWs_, 1, colsAlign * sizeof(float));
            pipe_.InitBuffer(inQueueY_, 1, rowsAtLeast1 * nAlign_ * sizeof(float));
            pipe_.InitBuffer(inQueueBiasWs_, 1, nAlign_ * sizeof(float));
            pipe_.InitBuffer(outQueueOut_, 1, rowsAtLeast1 * nAlign_ * sizeof(T));
        }
    }

    __aicore__ inline void Process() {
        Prepare();
        if ASCEND_IS_AIV {
            SyncAll<true>();
        }
        SyncAll<false>();
        if ASCEND_IS_AIV {
            Epilogue();
        }
    }

private:
    // cube: y_ws[my rows] = x[my rows] @ w.  vector: bias_ws[my columns] = float(bias[my columns]).
    __aicore__ inline void Prepare() {
        if ASCEND_IS_AIC {
            // y_ws[my rows] = x[my rows] @ w, accumulated over K-chunks in L0C: GM -> L1 (ND2NZ),
            // L1 -> L0A / L0B, Mmad; one Fixpipe at the end
            if (rows_ == 0) return;
            constexpr uint32_t C0 = 32 / sizeof(T);  // elements of a 32-byte block: a fractal row of L0A / L0B
            const uint32_t mAlign = Align16(rows_), nAlign = Align16(n_), kAlign = Align16(baseK_);
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
            for (uint32_t k0 = 0; k0 < k_; k0 += baseK_) {
                const uint32_t kw = k_ - k0 < baseK_ ? k_ - k0 : baseK_;
                const uint32_t K1 = (kw + C0 - 1) / C0, kwAlign = Align16(kw);
                if (k0 > 0) {  // L1 was loaded into L0 before it is refilled
                    SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
                    WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
                }
                DataCopy(a1, xGm_[row0_ * k_ + k0], Nd2NzParams(1, rows_, kw, 0, k_, mAlign, 1, 0));
                if constexpr (sizeof(T) == 2) {  // w [kw, n] as NZ, kwAlign rows apart
                    DataCopy(b1, wGm_[k0 * n_], Nd2NzParams(1, kw, n_, 0, n_, kwAlign, 1, 0));
                } else {  // float w as ZZ: each 16 rows an NZ of their own (adjacent column blocks)
                    for (uint32_t r = 0; r < kw; r += 16)
                        DataCopy(b1[r * nAlign], wGm_[(k0 + r) * n_],
                                 Nd2NzParams(1, kw - r < 16 ? kw - r : 16, n_, 0, n_, 16, 1, 0));
                }
                SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
                if (k0 > 0) {  // the last Mmad has read L0A / L0B
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
                        LoadDataWithTranspose(b2[2 * i * N1 * 128], b1[i * 16 * nAlign],
                                              LoadData2dTransposeParams(0, N1, 1, 0, N1 - 1));
                }
                SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
                WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
                Mmad(c1, a2, b2, MmadParams(rows_, n_, kw, 0, false, k0 == 0));  // onto L0C after the first chunk
            }
            SetFlag<HardEvent::M_FIX>(EVENT_ID0);
            WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
            Fixpipe(yWsGm_[row0_ * n_], c1, FixpipeParamsV220(n_, rows_, mAlign, n_, false));
        } else {
            if (cols_ == 0) return;
            LocalTensor<T> raw = inQueueBias_.AllocTensor<T>();
            DataCopyPad(raw, biasGm_[col0_], DataCopyExtParams(1, cols_ * sizeof(T), 0, 0),
                        DataCopyPadExtParams<T>(false, 0, 0, T(0)));
            inQueueBias_.EnQue(raw);
            raw = inQueueBias_.DeQue<T>();
            LocalTensor<float> wide = outQueueBiasWs_.AllocTensor<float>();
            if constexpr (std::is_same_v<T, float>) {
                DataCopy(wide, raw, (cols_ + 7) / 8 * 8);
            } else {
                Cast(wide, raw, RoundMode::CAST_NONE, cols_);
            }
            inQueueBias_.FreeTensor(raw);
            outQueueBiasWs_.EnQue(wide);
            wide = outQueueBiasWs_.DeQue<float>();
            DataCopyPad(biasWsGm_[col0_], wide, DataCopyExtParams(1, cols_ * sizeof(float), 0, 0));
            outQueueBiasWs_.FreeTensor(wide);
        }
    }

    // out[my rows] = relu(y_ws[my rows] + bias_ws), in T.
    __aicore__ inline void Epilogue() {
        if (rows_ == 0) return;
        // rows of y_ws, each nAlign_ floats apart in UB: written by a cube core, only the
        // all-core SyncAll orders this read after it
        LocalTensor<float> y = inQueueY_.AllocTensor<float>();
        const uint32_t rowGap = (nAlign_ * sizeof(float) - (n_ * sizeof(float) + 31) / 32 * 32) / 32;
        DataCopyPad(y, yWsGm_[row0_ * n_], DataCopyExtParams(rows_, n_ * sizeof(float), 0, rowGap),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        inQueueY_.EnQue(y);
        // the whole bias row: written by every vector core, the vector cores' SyncAll orders this read
        LocalTensor<float> b = inQueueBiasWs_.AllocTensor<float>();
        DataCopyPad(b, biasWsGm_, DataCopyExtParams(1, n_ * sizeof(float), 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        inQueueBiasWs_.EnQue(b);
        y = inQueueY_.DeQue<float>();
        b = inQueueBiasWs_.DeQue<float>();
        for (uint32_t r = 0; r < rows_; ++r) Add(y[r * nAlign_], y[r * nAlign_], b, n_);
        inQueueBiasWs_.FreeTensor(b);
        LocalTensor<T> result = outQueueOut_.AllocTensor<T>();
        for (uint32_t r = 0; r < rows_; ++r) {
            if constexpr (std::is_same_v<T, float>) {
                Relu(result[r * nAlign_], y[r * nAlign_], n_);
            } else {
                Relu(y[r * nAlign_], y[r * nAlign_], n_);
                Cast(result[r * nAlign_], y[r * nAlign_], RoundMode::CAST_RINT, n_);
            }
        }
        inQueueY_.FreeTensor(y);
        outQueueOut_.EnQue(result);
        result = outQueueOut_.DeQue<T>();
        const uint32_t outGap = (nAlign_ * sizeof(T) - (n_ * sizeof(T) + 31) / 32 * 32) / 32;
        DataCopyPad(outGm_[row0_ * n_], result, DataCopyExtParams(rows_, n_ * sizeof(T), outGap, 0));
        outQueueOut_.FreeTensor(result);
    }

    static __aicore__ inline uint32_t Align16(uint32_t x) { return (x + 15) / 16 * 16; }

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> inQueueBias_, inQueueY_, inQueueBiasWs_;
    TQue<TPosition::VECOUT, 1> outQueueBiasWs_, outQueueOut_;
    GlobalTensor<T> xGm_, wGm_, biasGm_, outGm_;
    GlobalTensor<float> yWsGm_, biasWsGm_;
    uint32_t m_ = 0, n_ = 0, k_ = 0, baseK_ = 0, nAlign_ = 0, row0_ = 0, rows_ = 0, col0_ = 0, cols_ = 0;
};

extern "C" __global__ __aicore__ void aiv_barrier(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR out, GM_ADDR yWs,
                                                  GM_ADDR biasWs, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(AivBarrierTilingData, tilingData, tiling);
    KernelMatmulBiasRelu<DTYPE_X> op;
    op.Init(x, w, bias, out, yWs, biasWs, tilingData);
    op.Process();
}
