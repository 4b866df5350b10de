// Matmul + bias + ReLU epilogue, in Ascend C: the C++ twin of kernels/aiv_barrier/kernel.py (an
// AIV-only barrier where the cube core is a party).
//
//   out[M, N] = relu(x[M, K] @ w[K, N] + bias[N])
//
//   Prepare    cube:    y_ws[rows of this cube core] = x @ w   (the matmul API, float32 out)
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
#include "lib/matmul_intf.h"
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
        cubeTiling_ = tiling.cube;
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
            if (rows_ == 0) return;
            using AType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
            using BType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
            using CType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
            using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
            MatmulImpl<AType, BType, CType, BiasType> mm;
            mm.Init(&cubeTiling_, &pipe_);
            mm.SetOrgShape(m_, n_, k_);
            mm.SetSingleShape(rows_, n_, k_);
            mm.DisableBias();
            mm.SetTensorA(xGm_[row0_ * k_]);
            mm.SetTensorB(wGm_);
            mm.IterateAll(yWsGm_[row0_ * n_]);
            mm.End();
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

    TPipe pipe_;
    TQue<TPosition::VECIN, 1> inQueueBias_, inQueueY_, inQueueBiasWs_;
    TQue<TPosition::VECOUT, 1> outQueueBiasWs_, outQueueOut_;
    GlobalTensor<T> xGm_, wGm_, biasGm_, outGm_;
    GlobalTensor<float> yWsGm_, biasWsGm_;
    TCubeTiling cubeTiling_;
    uint32_t m_ = 0, n_ = 0, k_ = 0, nAlign_ = 0, row0_ = 0, rows_ = 0, col0_ = 0, cols_ = 0;
};

extern "C" __global__ __aicore__ void aiv_barrier(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR out, GM_ADDR yWs,
                                                  GM_ADDR biasWs, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(AivBarrierTilingData, tilingData, tiling);
    KernelMatmulBiasRelu<DTYPE_X> op;
    op.Init(x, w, bias, out, yWs, biasWs, tilingData);
    op.Process();
}
