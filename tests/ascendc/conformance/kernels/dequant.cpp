// AscendDequant on one vector core: src (m x n int32_t) and the scale vector are copied into UB,
// dequantised into dst (m rows of n rounded up to 32 bytes of the destination type) and copied out.
// form: 0 scale tensor with sharedTmpBuffer, 1 scale tensor, 2 scalar with sharedTmpBuffer, 3 scalar;
// +4: DEQUANT_WITH_MULTI_ROW. types: 0 (float, float), 1 (half, uint64_t), 2 (bfloat16_t, float),
// 3 (float, bfloat16_t), 4 (bfloat16_t, bfloat16_t). The scalar form takes the scale vector's first.
#include "kernel_operator.h"
using namespace AscendC;

template <typename D, typename S>
static void run(GM_ADDR src, GM_ADDR scale, GM_ADDR dst, uint32_t m, uint32_t n, uint32_t calCount, uint32_t form) {
    constexpr uint32_t per = 32 / sizeof(D);
    const uint32_t nDst = (n + per - 1) / per * per;
    GlobalTensor<int32_t> srcGm;
    GlobalTensor<S> scaleGm;
    GlobalTensor<D> dstGm;
    srcGm.SetGlobalBuffer((__gm__ int32_t*)src);
    scaleGm.SetGlobalBuffer((__gm__ S*)scale);
    dstGm.SetGlobalBuffer((__gm__ D*)dst);
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, scaleBuf, dstBuf, tmpBuf;
    pipe.InitBuffer(srcBuf, m * n * 4);
    pipe.InitBuffer(scaleBuf, 256);
    pipe.InitBuffer(dstBuf, m * nDst * uint32_t(sizeof(D)));
    pipe.InitBuffer(tmpBuf, 1024);
    LocalTensor<int32_t> s = srcBuf.Get<int32_t>();
    LocalTensor<S> sc = scaleBuf.Get<S>();
    LocalTensor<D> d = dstBuf.Get<D>();
    LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
    DataCopy(s, srcGm, m * n);
    DataCopy(sc, scaleGm, uint32_t(256 / sizeof(S)));
    DataCopy(d, dstGm, m * nDst);  // (what the padding columns held)
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const DequantParams p{m, n, calCount};
    constexpr DeQuantMode MULTI = DeQuantMode::DEQUANT_WITH_MULTI_ROW;
    if constexpr (std::is_same_v<S, uint64_t>) {
        if (form & 4) AscendDequant<D, S, MULTI>(d, s, sc, tmp, p);
        else if (form & 1) AscendDequant(d, s, sc, p);
        else AscendDequant(d, s, sc, tmp, p);
    } else {
        const S first = sc.GetValue(0);
        switch (form) {
            case 0: AscendDequant(d, s, sc, tmp, p); break;
            case 1: AscendDequant(d, s, sc, p); break;
            case 2: AscendDequant(d, s, first, tmp, p); break;
            case 3: AscendDequant(d, s, first, p); break;
            default: AscendDequant<D, S, MULTI>(d, s, sc, tmp, p); break;
        }
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dstGm, d, m * nDst);
}

extern "C" __global__ __aicore__ void dequant(GM_ADDR src, GM_ADDR scale, GM_ADDR dst, uint32_t m, uint32_t n,
                                              uint32_t calCount, uint32_t form, uint32_t types) {
    switch (types) {
        case 0: run<float, float>(src, scale, dst, m, n, calCount, form); break;
        case 1: run<half, uint64_t>(src, scale, dst, m, n, calCount, form); break;
        case 2: run<bfloat16_t, float>(src, scale, dst, m, n, calCount, form); break;
        case 3: run<float, bfloat16_t>(src, scale, dst, m, n, calCount, form); break;
        default: run<bfloat16_t, bfloat16_t>(src, scale, dst, m, n, calCount, form); break;
    }
}
