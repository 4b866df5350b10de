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
#include "lib/matmul_intf.h"
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
        cubeTiling_ = tiling.cube;
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

    // This cube core's K-chunks (round-robin over the cube cores), each added atomically into c.
    __aicore__ inline void SplitKMatmul() {
        using AType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
        using BType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
        using CType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
        using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
        MatmulImpl<AType, BType, CType, BiasType> mm;
        mm.Init(&cubeTiling_, &pipe_);
        mm.SetOrgShape(m_, n_, k_);
        mm.DisableBias();
        const uint32_t cube = static_cast<uint32_t>(GetBlockIdx()), cubes = static_cast<uint32_t>(GetBlockNum());
        for (uint32_t k0 = cube * baseK_; k0 < k_; k0 += cubes * baseK_) {
            const uint32_t kw = k_ - k0 < baseK_ ? k_ - k0 : baseK_;
            mm.SetSingleShape(m_, n_, kw);
            mm.SetTensorA(aGm_[k0]);
            mm.SetTensorB(bGm_[k0 * n_]);
            mm.IterateAll(cGm_, 1);  // c += this chunk's partial product (enAtomic 1: add)
        }
        mm.End();
    }

    TPipe pipe_;
    TQue<TPosition::VECOUT, 1> outQueueZero_;
    GlobalTensor<T> aGm_, bGm_;
    GlobalTensor<float> cGm_;
    TCubeTiling cubeTiling_;
    uint32_t m_ = 0, n_ = 0, k_ = 0, baseK_ = 0, row0_ = 0, rows_ = 0, zeroLength_ = 0;
};

extern "C" __global__ __aicore__ void accum_init(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(AccumInitTilingData, tilingData, tiling);
    KernelSplitKMatmul<DTYPE_A> op;
    op.Init(a, b, c, tilingData);
    op.Process();
}
