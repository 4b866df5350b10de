// AscendQuant and AscendAntiQuant on one vector core. src, the parameters (scale then offset, 256 bytes
// each) and dst's initial contents are copied into UB, one call runs, dst is copied out.
// Quant (op 0), T float (types 0) or half (1), src n elements, dst int8_t:
//   form 0 scalars + tmp + count, 1 scalars + count, 2 scalars + tmp (whole), 3 scalars (whole),
//   4 scale tensor + offset scalar + tmp + counts, 5 scale + offset tensors + counts, 6 scale + offset
//   tensors (whole), 7 scale tensor + offset scalar (whole); 8 misuse: dst over src.
// AntiQuant (op 1), int8_t src [k, cols] (or [cols, k] transposed), dst half (types 0) or bfloat16_t (1):
//   form 0 offset + scale tensors + tmp, 1 scale tensor only, 2 scalars + tmp, 3 offset + scale tensors
//   (no tmp), with the parameters' shape [groups, cols] ([cols, groups] transposed) given in the
//   AntiQuantShapeInfo (shapeFrom 0), in offset's ShapeInfo (1), or nowhere (2: [1, cols]).
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
static void run_quant(GM_ADDR src, GM_ADDR par, GM_ADDR dst, uint32_t n, uint32_t cal, uint32_t scaleCount,
                  uint32_t form) {
    GlobalTensor<T> srcGm, parGm;
    GlobalTensor<int8_t> dstGm;
    srcGm.SetGlobalBuffer((__gm__ T*)src);
    parGm.SetGlobalBuffer((__gm__ T*)par);
    dstGm.SetGlobalBuffer((__gm__ int8_t*)dst);
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, parBuf, dstBuf, tmpBuf;
    pipe.InitBuffer(srcBuf, n * sizeof(T));
    pipe.InitBuffer(parBuf, 512);
    pipe.InitBuffer(dstBuf, n);
    pipe.InitBuffer(tmpBuf, 8192);
    LocalTensor<T> s = srcBuf.Get<T>();
    LocalTensor<T> scale = parBuf.GetWithOffset<T>(scaleCount, 0);
    LocalTensor<T> offset = parBuf.GetWithOffset<T>(scaleCount, 256);
    LocalTensor<int8_t> d = dstBuf.Get<int8_t>();
    LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
    DataCopy(s, srcGm, n);
    DataCopy(parBuf.Get<T>(), parGm, uint32_t(512 / sizeof(T)));
    DataCopy(d, dstGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const float sc = 1.75f, of = -2.5f;
    const T ofT = T(of);
    switch (form) {
        case 0: AscendQuant<T>(d, s, tmp, sc, of, cal); break;
        case 1: AscendQuant<T>(d, s, sc, of, cal); break;
        case 2: AscendQuant<T>(d, s, tmp, sc, of); break;
        case 3: AscendQuant<T>(d, s, sc, of); break;
        case 4: AscendQuant<T>(d, s, tmp, scale, ofT, scaleCount, cal); break;
        case 5: AscendQuant<T>(d, s, scale, offset, scaleCount, scaleCount, cal); break;
        case 6: AscendQuant<T>(d, s, tmp, scale, offset); break;
        case 7: AscendQuant<T>(d, s, scale, ofT); break;
        default: AscendQuant<T>(s.template ReinterpretCast<int8_t>(), s, sc, of, cal); break;  // misuse
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dstGm, d, n);
}

template <typename O, bool transpose>
static void run_antiquant(GM_ADDR src, GM_ADDR par, GM_ADDR dst, uint32_t k, uint32_t cols, uint32_t groups,
                      uint32_t form, uint32_t shapeFrom) {
    const uint32_t n = k * cols, np = groups * cols;
    GlobalTensor<int8_t> srcGm;
    GlobalTensor<O> parGm, dstGm;
    srcGm.SetGlobalBuffer((__gm__ int8_t*)src);
    parGm.SetGlobalBuffer((__gm__ O*)par);
    dstGm.SetGlobalBuffer((__gm__ O*)dst);
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, parBuf, dstBuf, tmpBuf;
    pipe.InitBuffer(srcBuf, n);
    pipe.InitBuffer(parBuf, 2048);
    pipe.InitBuffer(dstBuf, n * sizeof(O));
    pipe.InitBuffer(tmpBuf, 4096);
    LocalTensor<int8_t> s = srcBuf.Get<int8_t>();
    LocalTensor<O> scale = parBuf.GetWithOffset<O>(np, 0);
    LocalTensor<O> offset = parBuf.GetWithOffset<O>(np, 1024);
    LocalTensor<O> d = dstBuf.Get<O>();
    LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
    DataCopy(s, srcGm, n);
    DataCopy(parBuf.Get<O>(), parGm, uint32_t(2048 / sizeof(O)));
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const uint32_t h = transpose ? cols : groups, w = transpose ? groups : cols;
    AntiQuantShapeInfo info{};
    if (shapeFrom == 0) {
        info = AntiQuantShapeInfo{h, w, h, w};
    } else if (shapeFrom == 1) {
        uint32_t shape[2] = {h, w};
        offset.SetShapeInfo(ShapeInfo(2, shape, DataFormat::ND));
        scale.SetShapeInfo(ShapeInfo(2, shape, DataFormat::ND));
    }
    const O sc = O(0.5f), of = O(-3.0f);
    switch (form) {
        case 0: AscendAntiQuant<int8_t, O, transpose>(d, s, offset, scale, tmp, k, info); break;
        case 1: AscendAntiQuant<int8_t, O, transpose>(d, s, scale, tmp, k, info); break;
        case 2: AscendAntiQuant<int8_t, O, transpose>(d, s, of, sc, tmp, k, info); break;
        default: AscendAntiQuant<int8_t, O, transpose>(d, s, offset, scale, k, info); break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dstGm, d, n);
}

extern "C" __global__ __aicore__ void quant(GM_ADDR src, GM_ADDR par, GM_ADDR dst, uint32_t op, uint32_t types,
                                            uint32_t n, uint32_t cal, uint32_t count, uint32_t form,
                                            uint32_t transpose) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (op == 0) {
        if (types == 0) run_quant<float>(src, par, dst, n, cal, count, form);
        else run_quant<half>(src, par, dst, n, cal, count, form);
        return;
    }
    // antiquant: n = k, cal = cols, count = groups, transpose's high bits: where the shape comes from
    const uint32_t from = transpose >> 1;
    if (types == 0) {
        if (transpose & 1) run_antiquant<half, true>(src, par, dst, n, cal, count, form, from);
        else run_antiquant<half, false>(src, par, dst, n, cal, count, form, from);
    } else {
        if (transpose & 1) run_antiquant<bfloat16_t, true>(src, par, dst, n, cal, count, form, from);
        else run_antiquant<bfloat16_t, false>(src, par, dst, n, cal, count, form, from);
    }
}
