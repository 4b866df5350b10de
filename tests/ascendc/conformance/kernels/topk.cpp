// TopK and the library's ReduceMax on one vector core.
// op 0, TopK: src (outter x inner), an index row (inner, or outter x inner in Small mode) and the finish
//   flags (outter bools, 32 bytes) are copied in; dst values and indices (dst's initial contents copied in
//   first, so the padding shows what it held) are copied out. flags: 1 isInitIndex, 2 isHasfinish,
//   4 Small mode, 8 isLargest, 16 with tmpLocal (tmpBytes of it; 0: GetTopKMaxMinTmpSize's minimum),
//   32 TopKConfig order SMALLEST (overrides isLargest). T float (types 0) or half (1).
// op 1, ReduceMax<T, AR (k = 0) or RA (k = 1)>: src rows x cols (rows padded to 32 bytes), with a
//   sharedTmpBuffer when flags & 16; dst copied out. GetReduceMaxMaxMinTmpSize into misc[0], [1].
#include "kernel_operator.h"
using namespace AscendC;

constexpr TopKConfig SMALLEST_CFG = {TopKAlgo::MERGE_SORT, TopKOrder::SMALLEST, true};

template <typename T, bool init, bool finish, TopKMode mode, const TopKConfig& cfg>
static void call(const LocalTensor<T>& dv, const LocalTensor<int32_t>& di, const LocalTensor<T>& s,
                 const LocalTensor<int32_t>& si, const LocalTensor<bool>& fl, const LocalTensor<uint8_t>& tmp,
                 bool withTmp, int32_t k, const TopkTiling& tiling, const TopKInfo& info, bool largest) {
    if (withTmp) TopK<T, init, finish, false, mode, cfg>(dv, di, s, si, fl, tmp, k, tiling, info, largest);
    else TopK<T, init, finish, false, mode, cfg>(dv, di, s, si, fl, k, tiling, info, largest);
}

template <typename T>
static void run_topk(GM_ADDR src, GM_ADDR index, GM_ADDR fin, GM_ADDR dst, GM_ADDR dstIndex, GM_ADDR misc,
                 uint32_t outter, uint32_t inner, uint32_t n, uint32_t k, uint32_t flags, uint32_t tmpBytes) {
    const bool small = flags & 4;
    const uint32_t kPad = small ? k : (k + 32 / sizeof(T) - 1) / (32 / sizeof(T)) * (32 / sizeof(T));
    const uint32_t kPadIndex = small ? k : (k + 7) / 8 * 8;
    const uint32_t elems = outter * inner, indexN = small ? elems : inner;
    GlobalTensor<T> srcGm, dstGm;
    GlobalTensor<int32_t> indexGm, dstIndexGm;
    GlobalTensor<bool> finGm;
    GlobalTensor<uint32_t> miscGm;
    srcGm.SetGlobalBuffer((__gm__ T*)src);
    dstGm.SetGlobalBuffer((__gm__ T*)dst);
    indexGm.SetGlobalBuffer((__gm__ int32_t*)index);
    dstIndexGm.SetGlobalBuffer((__gm__ int32_t*)dstIndex);
    finGm.SetGlobalBuffer((__gm__ bool*)fin);
    miscGm.SetGlobalBuffer((__gm__ uint32_t*)misc);
    uint32_t lo = 0, hi = 0;
    const bool ok = GetTopKMaxMinTmpSize(*platform_ascendc::PlatformAscendCManager::GetInstance(), int32_t(inner), int32_t(outter), false,
                                         bool(flags & 1), small ? TopKMode::TOPK_NSMALL : TopKMode::TOPK_NORMAL,
                                         bool(flags & 8), uint32_t(sizeof(T)), hi, lo);
    TopkTiling tiling;
    TopKTilingFunc(*platform_ascendc::PlatformAscendCManager::GetInstance(), int32_t(inner), int32_t(outter), int32_t(k),
                   uint32_t(sizeof(T)), bool(flags & 1), small ? TopKMode::TOPK_NSMALL : TopKMode::TOPK_NORMAL,
                   bool(flags & 8), tiling);
    miscGm.SetValue(0, ok ? lo : 0xFFFFFFFFu);
    miscGm.SetValue(1, hi);
    miscGm.SetValue(2, uint32_t(tiling.tmpLocalSize));
    miscGm.SetValue(3, uint32_t(tiling.kAlignFourBytes));
    if (tmpBytes == 0) tmpBytes = lo;
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, indexBuf, finBuf, dstBuf, dstIndexBuf, tmpBuf;
    pipe.InitBuffer(srcBuf, elems * sizeof(T));
    pipe.InitBuffer(indexBuf, indexN * 4);
    pipe.InitBuffer(finBuf, 32);
    pipe.InitBuffer(dstBuf, outter * kPad * sizeof(T));
    pipe.InitBuffer(dstIndexBuf, outter * kPadIndex * 4);
    pipe.InitBuffer(tmpBuf, tmpBytes + 32);
    LocalTensor<T> s = srcBuf.Get<T>();
    LocalTensor<int32_t> si = indexBuf.Get<int32_t>();
    LocalTensor<bool> fl = finBuf.Get<bool>();
    LocalTensor<T> dv = dstBuf.Get<T>();
    LocalTensor<int32_t> di = dstIndexBuf.Get<int32_t>();
    LocalTensor<uint8_t> tmp = tmpBuf.GetWithOffset<uint8_t>(tmpBytes, 0);
    DataCopy(s, srcGm, elems);
    DataCopy(si, indexGm, indexN);
    DataCopy(fl, finGm, 32);
    DataCopy(dv, dstGm, outter * kPad);
    DataCopy(di, dstIndexGm, outter * kPadIndex);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const TopKInfo info{int32_t(outter), int32_t(inner), int32_t(n)};
    const bool withTmp = flags & 16, largest = flags & 8;
    const int32_t kk = int32_t(k);
    constexpr TopKMode N = TopKMode::TOPK_NORMAL, S = TopKMode::TOPK_NSMALL;
    switch (flags & 7) {
        case 0: call<T, false, false, N, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest); break;
        case 1: call<T, true, false, N, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest); break;
        case 2: call<T, false, true, N, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest); break;
        case 3: call<T, true, true, N, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest); break;
        case 4: call<T, false, false, S, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest); break;
        case 5:
            if (flags & 32) call<T, true, false, S, SMALLEST_CFG>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, true);
            else call<T, true, false, S, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest);
            break;
        default: call<T, false, true, S, defaultTopKConfig>(dv, di, s, si, fl, tmp, withTmp, kk, tiling, info, largest); break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dstGm, dv, outter * kPad);
    DataCopy(dstIndexGm, di, outter * kPadIndex);
}

template <typename T>
static void run_reduce_max(GM_ADDR src, GM_ADDR dst, GM_ADDR misc, uint32_t rows, uint32_t cols, uint32_t ra,
                       uint32_t flags) {
    constexpr uint32_t per = 32 / sizeof(T);
    const uint32_t ld = (cols + per - 1) / per * per, outs = ra ? cols : rows, outPad = (outs + per - 1) / per * per;
    GlobalTensor<T> srcGm, dstGm;
    GlobalTensor<uint32_t> miscGm;
    srcGm.SetGlobalBuffer((__gm__ T*)src);
    dstGm.SetGlobalBuffer((__gm__ T*)dst);
    miscGm.SetGlobalBuffer((__gm__ uint32_t*)misc);
    uint32_t hi = 0, lo = 0;
    GetReduceMaxMaxMinTmpSize(TensorShape({int64_t(rows), int64_t(cols)}),
                              sizeof(T) == 2 ? ge::DT_FLOAT16 : ge::DT_FLOAT,
                              ra ? ReducePattern::RA : ReducePattern::AR, true, false, hi, lo);
    miscGm.SetValue(0, lo);
    miscGm.SetValue(1, hi);
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, dstBuf, tmpBuf;
    pipe.InitBuffer(srcBuf, rows * ld * sizeof(T));
    pipe.InitBuffer(dstBuf, outPad * sizeof(T));
    pipe.InitBuffer(tmpBuf, lo + 32);
    LocalTensor<T> s = srcBuf.Get<T>();
    LocalTensor<T> d = dstBuf.Get<T>();
    LocalTensor<uint8_t> tmp = tmpBuf.GetWithOffset<uint8_t>(lo, 0);
    DataCopy(s, srcGm, rows * ld);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const uint32_t shape[2] = {rows, cols};
    if (ra) {
        if (flags & 16) ReduceMax<T, Pattern::Reduce::RA>(d, s, tmp, shape, true);
        else ReduceMax<T, Pattern::Reduce::RA, true>(d, s, shape, true);
    } else {
        if (flags & 16) ReduceMax<T, Pattern::Reduce::AR>(d, s, tmp, shape, true);
        else ReduceMax<T, Pattern::Reduce::AR, true>(d, s, shape, true);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopyPad(dstGm, d, DataCopyExtParams{1, uint32_t(outs * sizeof(T)), 0, 0, 0});
}

extern "C" __global__ __aicore__ void topk(GM_ADDR src, GM_ADDR index, GM_ADDR fin, GM_ADDR dst, GM_ADDR dstIndex,
                                           GM_ADDR misc, uint32_t op, uint32_t types, uint32_t outter,
                                           uint32_t inner, uint32_t n, uint32_t k, uint32_t flags,
                                           uint32_t tmpBytes) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (op == 0) {
        if (types == 0) run_topk<float>(src, index, fin, dst, dstIndex, misc, outter, inner, n, k, flags, tmpBytes);
        else run_topk<half>(src, index, fin, dst, dstIndex, misc, outter, inner, n, k, flags, tmpBytes);
    } else {
        if (types == 0) run_reduce_max<float>(src, dst, misc, outter, inner, k, flags);
        else run_reduce_max<half>(src, dst, misc, outter, inner, k, flags);
    }
}
