// A kernel of our own for the SoftMax family: x [M, K] (K padded to K_PAD in UB when ORI_K < K_PAD)
// is copied in, SoftMax'd (mode 0: with sum and max; 1: half data, float sum and max; 2: no sum and
// max, in place, with a sharedTmpBuffer; 3: SimpleSoftMax from mode 0's sum and max; 4: SoftmaxGrad and 5:
// SoftmaxGradFront with grad = src = x), and copied out
// with the sum and max. Misuse: mode 10, a K that is not 32-byte aligned; 11, a sharedTmpBuffer over
// the source. The copy in and the call are ordered by the MTE2_V flag, the call and the copy out by
// V_MTE3 (a test drops one to see the race).
#include "kernel_operator.h"

using namespace AscendC;

#ifndef DATA_T
#define DATA_T float
#endif
#ifndef SUM_T
#define SUM_T DATA_T
#endif

constexpr uint32_t M = 4;
constexpr uint32_t K_PAD = 64;

extern "C" __global__ __aicore__ void softmax(GM_ADDR x, GM_ADDR y, GM_ADDR sum, GM_ADDR max, int32_t mode,
                                              int32_t oriK) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    using T = DATA_T;
    using U = SUM_T;
    constexpr uint32_t per = 32 / sizeof(U);
    GlobalTensor<T> xg, yg;
    GlobalTensor<U> sg, mg;
    xg.SetGlobalBuffer((__gm__ T*)x, M * K_PAD);
    yg.SetGlobalBuffer((__gm__ T*)y, M * K_PAD);
    sg.SetGlobalBuffer((__gm__ U*)sum, M * per);
    mg.SetGlobalBuffer((__gm__ U*)max, M * per);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 16384);
    LocalTensor<T> src = buf.GetWithOffset<T>(M * K_PAD, 0);
    LocalTensor<T> dst = buf.GetWithOffset<T>(M * K_PAD, 4096);
    LocalTensor<U> s = buf.GetWithOffset<U>(M * per, 8192);
    LocalTensor<U> m = buf.GetWithOffset<U>(M * per, 8448);
    LocalTensor<uint8_t> tmp = buf.GetWithOffset<uint8_t>(4096, 12288);
    SoftMaxTiling tiling;
    tiling.srcM = M;
    tiling.srcK = K_PAD;
    SoftMaxShapeInfo shape{M, K_PAD, M, uint32_t(oriK)};

    DataCopy(src, xg, M * K_PAD);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    if (mode == 0 || mode == 1 || mode == 3) {
        SoftMax<T>(dst, s, m, src, tiling, shape);
        if (mode == 3) {
            PipeBarrier<PIPE_V>();
            SimpleSoftMax<T>(dst, s, m, src, tmp, tiling, shape);
        }
    } else if (mode == 2) {
        SoftMax<T, false, false>(src, src, tmp, tiling, shape);
        dst = src;
    } else if (mode == 4) {
        SoftmaxGrad<T>(dst, src, src, tmp, tiling, false, shape);  // grad = src = x
    } else if (mode == 5) {
        SoftmaxGradFront<T>(dst, src, src, tiling, shape);
    } else if (mode == 10) {
        SoftMax<T>(dst, s, m, src, tiling, SoftMaxShapeInfo{M, 20, M, 20});
    } else if (mode == 11) {
        SoftMax<T>(dst, s, m, src, src.ReinterpretCast<uint8_t>(), tiling, shape);
    } else if (mode == 12) {
        SoftMax<T>(dst, s, m, src, SoftMaxTiling{});  // no shape anywhere
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, dst, M * K_PAD);
    if (mode != 2) {
        DataCopy(sg, s, M * per);
        DataCopy(mg, m, M * per);
    }
}
