// RMSNorm with the hidden dimension split across the vector cores, in Ascend C: the C++ twin of
// kernels/reduce_early/kernel.py ("cross-core reduction read too early").
//
//   y[R, H] = x / sqrt(mean(x^2, axis=1) + eps) * gamma
//
// Each vector core takes a slice of the columns of every row, so a row's sum of squares needs
// every core's slice:
//
//   PartialSumSq   partials[v, r] = sum over my columns of x[r]^2        (one float per row)
//   SyncAll<true>  every vector core's partials are in GM                (missing in the incident)
//   Normalize      total[r] = sum over v of partials[v, r]
//                  y[r, my columns] = x[r] * rsqrt(total[r] / H + eps) * gamma
//
// Without the SyncAll a core that got ahead reads a partials row another core has not written
// yet (whatever the previous call left in the workspace) and normalises with a wrong sum.
// A vector-only kernel: GetBlockNum() vector cores, GetBlockIdx() is this one.
#include "kernel_operator.h"
#include "reduce_early_tiling.h"

using namespace AscendC;

#ifndef DTYPE_X
#define DTYPE_X float
#endif

constexpr int32_t BUFFER_NUM = 2;          // x and y chunks double-buffered
constexpr uint32_t UB_CHUNK_BYTES = 160 * 1024;  // what the row chunks may take of UB (the rest: gamma, partials)

template <typename T>
class KernelRmsNormSplitH {
public:
    __aicore__ inline KernelRmsNormSplitH() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR partials,
                                const ReduceEarlyTilingData& tiling) {
        rows_ = tiling.rows;
        hidden_ = tiling.hidden;
        eps_ = tiling.eps;
        cores_ = static_cast<uint32_t>(GetBlockNum());
        me_ = static_cast<uint32_t>(GetBlockIdx());
        col0_ = me_ * hidden_ / cores_;
        cols_ = (me_ + 1) * hidden_ / cores_ - col0_;
        colsAlign_ = cols_ ? (cols_ + 15) / 16 * 16 : 16;  // a row in UB: whole 32-byte blocks of T and of float
        rowsAlign_ = (rows_ + 7) / 8 * 8;                   // a partials row in UB, in whole blocks of float
        // rows per chunk: x and y (double-buffered, T) and two float rows of work per row
        const uint32_t rowBytes = colsAlign_ * (2 * BUFFER_NUM * sizeof(T) + 2 * sizeof(float));
        chunkRows_ = UB_CHUNK_BYTES / rowBytes;
        chunkRows_ = chunkRows_ > rows_ ? rows_ : chunkRows_;
        chunkRows_ = chunkRows_ < 1 ? 1 : chunkRows_;
        // the UB gap after a row's data (DataCopyPad's dstStride / srcStride, 32-byte blocks)
        ubRowGap_ = (colsAlign_ * sizeof(T) - (cols_ * sizeof(T) + 31) / 32 * 32) / 32;

        xGm_.SetGlobalBuffer((__gm__ T*)x, rows_ * hidden_);
        gammaGm_.SetGlobalBuffer((__gm__ T*)gamma, hidden_);
        yGm_.SetGlobalBuffer((__gm__ T*)y, rows_ * hidden_);
        partialsGm_.SetGlobalBuffer((__gm__ float*)partials, cores_ * rows_);

        const uint32_t chunk = chunkRows_ * colsAlign_;
        pipe_.InitBuffer(inQueueX_, BUFFER_NUM, chunk * sizeof(T));
        pipe_.InitBuffer(outQueueY_, BUFFER_NUM, chunk * sizeof(T));
        pipe_.InitBuffer(inQueueGamma_, 1, colsAlign_ * sizeof(T));
        pipe_.InitBuffer(outQueueSums_, 1, rowsAlign_ * sizeof(float));
        pipe_.InitBuffer(inQueueEvery_, 1, cores_ * rowsAlign_ * sizeof(float));
        pipe_.InitBuffer(xFloatBuf_, chunk * sizeof(float));
        pipe_.InitBuffer(squareBuf_, chunk * sizeof(float));
        pipe_.InitBuffer(gammaFloatBuf_, colsAlign_ * sizeof(float));
        pipe_.InitBuffer(workBuf_, colsAlign_ * sizeof(float));
        pipe_.InitBuffer(rstdBuf_, rowsAlign_ * sizeof(float));
    }

    __aicore__ inline void Process() {
        PartialSumSq();
        SyncAll();
        Normalize();
    }

private:
    // partials[me, r] = sum of x[r, my columns]^2, for every row r (x in chunks of rows).
    __aicore__ inline void PartialSumSq() {
        LocalTensor<float> xf = xFloatBuf_.Get<float>();
        LocalTensor<float> square = squareBuf_.Get<float>();
        LocalTensor<float> work = workBuf_.Get<float>();
        LocalTensor<float> sums = outQueueSums_.AllocTensor<float>();
        Duplicate(sums, 0.0f, rowsAlign_);  // (a core with no columns adds nothing)
        const DataCopyPadExtParams<T> noPad(false, 0, 0, T(0));
        for (uint32_t r0 = 0; r0 < rows_ && cols_ > 0; r0 += chunkRows_) {
            const uint32_t nr = rows_ - r0 < chunkRows_ ? rows_ - r0 : chunkRows_;
            LocalTensor<T> xIn = inQueueX_.AllocTensor<T>();
            DataCopyPad(xIn, xGm_[r0 * hidden_ + col0_],
                        DataCopyExtParams(nr, cols_ * sizeof(T), (hidden_ - cols_) * sizeof(T), ubRowGap_), noPad);
            inQueueX_.EnQue(xIn);
            xIn = inQueueX_.DeQue<T>();
            // whole UB rows (the columns past cols_ are never summed)
            if constexpr (std::is_same_v<T, float>) {
                Mul(square, xIn, xIn, nr * colsAlign_);
            } else {
                Cast(xf, xIn, RoundMode::CAST_NONE, nr * colsAlign_);
                Mul(square, xf, xf, nr * colsAlign_);
            }
            inQueueX_.FreeTensor(xIn);
            for (uint32_t r = 0; r < nr; ++r) ReduceSum(sums[r0 + r], square[r * colsAlign_], work, cols_);
        }
        outQueueSums_.EnQue(sums);
        sums = outQueueSums_.DeQue<float>();
        DataCopyPad(partialsGm_[me_ * rows_], sums, DataCopyExtParams(1, rows_ * sizeof(float), 0, 0));
        outQueueSums_.FreeTensor(sums);
    }

    // rstd[r] from every core's partials; y[r, my columns] = x[r, my columns] * rstd[r] * gamma.
    __aicore__ inline void Normalize() {
        if (cols_ == 0) return;  // more vector cores than columns
        const DataCopyPadExtParams<T> noPad(false, 0, 0, T(0));
        LocalTensor<T> gamma = inQueueGamma_.AllocTensor<T>();
        DataCopyPad(gamma, gammaGm_[col0_], DataCopyExtParams(1, cols_ * sizeof(T), 0, 0), noPad);
        inQueueGamma_.EnQue(gamma);
        // Every core's partials, one UB row each: only the SyncAll orders this read after their writes.
        LocalTensor<float> every = inQueueEvery_.AllocTensor<float>();
        DataCopyPad(every, partialsGm_, DataCopyExtParams(cores_, rows_ * sizeof(float), 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        inQueueEvery_.EnQue(every);

        every = inQueueEvery_.DeQue<float>();
        LocalTensor<float> rstd = rstdBuf_.Get<float>();
        Duplicate(rstd, 0.0f, rowsAlign_);
        for (uint32_t v = 0; v < cores_; ++v) Add(rstd, rstd, every[v * rowsAlign_], rows_);
        inQueueEvery_.FreeTensor(every);
        Muls(rstd, rstd, 1.0f / static_cast<float>(hidden_), rows_);
        Adds(rstd, rstd, eps_, rows_);
        Rsqrt(rstd, rstd, rows_);

        gamma = inQueueGamma_.DeQue<T>();
        LocalTensor<float> gf = gammaFloatBuf_.Get<float>();
        if constexpr (std::is_same_v<T, float>) {
            DataCopy(gf, gamma, colsAlign_);
        } else {
            Cast(gf, gamma, RoundMode::CAST_NONE, cols_);
        }
        inQueueGamma_.FreeTensor(gamma);
        // the scalar unit reads rstd row by row
        const TEventID vToS = GetTPipePtr()->FetchEventID(HardEvent::V_S);
        SetFlag<HardEvent::V_S>(vToS);
        WaitFlag<HardEvent::V_S>(vToS);

        LocalTensor<float> xf = xFloatBuf_.Get<float>();
        for (uint32_t r0 = 0; r0 < rows_; r0 += chunkRows_) {
            const uint32_t nr = rows_ - r0 < chunkRows_ ? rows_ - r0 : chunkRows_;
            LocalTensor<T> xIn = inQueueX_.AllocTensor<T>();
            DataCopyPad(xIn, xGm_[r0 * hidden_ + col0_],
                        DataCopyExtParams(nr, cols_ * sizeof(T), (hidden_ - cols_) * sizeof(T), ubRowGap_), noPad);
            inQueueX_.EnQue(xIn);
            xIn = inQueueX_.DeQue<T>();
            LocalTensor<T> yOut = outQueueY_.AllocTensor<T>();
            if constexpr (std::is_same_v<T, float>) {
                for (uint32_t r = 0; r < nr; ++r) {
                    Muls(yOut[r * colsAlign_], xIn[r * colsAlign_], rstd.GetValue(r0 + r), cols_);
                    Mul(yOut[r * colsAlign_], yOut[r * colsAlign_], gf, cols_);
                }
            } else {
                Cast(xf, xIn, RoundMode::CAST_NONE, nr * colsAlign_);
                for (uint32_t r = 0; r < nr; ++r) {
                    Muls(xf[r * colsAlign_], xf[r * colsAlign_], rstd.GetValue(r0 + r), cols_);
                    Mul(xf[r * colsAlign_], xf[r * colsAlign_], gf, cols_);
                }
                Cast(yOut, xf, RoundMode::CAST_RINT, nr * colsAlign_);
            }
            inQueueX_.FreeTensor(xIn);
            outQueueY_.EnQue(yOut);
            yOut = outQueueY_.DeQue<T>();
            DataCopyPad(yGm_[r0 * hidden_ + col0_], yOut,
                        DataCopyExtParams(nr, cols_ * sizeof(T), ubRowGap_, (hidden_ - cols_) * sizeof(T)));
            outQueueY_.FreeTensor(yOut);
        }
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueX_;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueueY_;
    TQue<TPosition::VECIN, 1> inQueueGamma_;
    TQue<TPosition::VECIN, 1> inQueueEvery_;
    TQue<TPosition::VECOUT, 1> outQueueSums_;
    TBuf<TPosition::VECCALC> xFloatBuf_, squareBuf_, gammaFloatBuf_, workBuf_, rstdBuf_;
    GlobalTensor<T> xGm_, gammaGm_, yGm_;
    GlobalTensor<float> partialsGm_;
    uint32_t rows_ = 0, hidden_ = 0, cores_ = 1, me_ = 0, col0_ = 0, cols_ = 0, colsAlign_ = 0, rowsAlign_ = 0;
    uint32_t chunkRows_ = 1, ubRowGap_ = 0;
    float eps_ = 0.0f;
};

extern "C" __global__ __aicore__ void reduce_early(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR partials,
                                                   GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(ReduceEarlyTilingData, tilingData, tiling);
    KernelRmsNormSplitH<DTYPE_X> op;
    op.Init(x, gamma, y, partials, tilingData);
    op.Process();
}
