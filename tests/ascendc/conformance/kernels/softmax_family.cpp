// The SoftMax family's newer calls on one vector core: x (m x k, rows padded to k) and the incoming
// statistics (one 32-byte block a row) are copied into UB, one call runs, and every output is copied
// out. mode: 0 LogSoftMax; 1 SoftmaxFlashV2 (update off); 2 SoftmaxFlashV2 (update on, no buffer);
// 3 SoftMax then AdjustSoftMaxRes (rows whose max has the bits `from` set to -1; the result in misc[0]);
// 4 SoftmaxFlashV3 (half data, float statistics; update = flag); 5 SoftmaxGrad; 6 the host helpers'
// sizes for {m, k} into misc. types: 0 float, 1 half, 2 half data with float statistics (FlashV2).
// tmpBytes: the sharedTmpBuffer's size (0: GetXxxMinTmpSize's minimum for {m, k}).
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t SRC = 0, DST = 32768, STATS = 65536, TMP = 73728;

template <typename T, typename U>
static void run(GM_ADDR x, GM_ADDR stats, GM_ADDR y, GM_ADDR out, GM_ADDR misc, uint32_t m, uint32_t k,
                uint32_t oriK, uint32_t mode, uint32_t tmpBytes, uint32_t flag) {
    constexpr uint32_t perT = 32 / sizeof(T), perU = 32 / sizeof(U);
    const uint32_t n = m * k;
    GlobalTensor<T> xGm, yGm, expGm;
    GlobalTensor<U> statGm, outGm;
    GlobalTensor<uint32_t> miscGm;
    xGm.SetGlobalBuffer((__gm__ T*)x);
    yGm.SetGlobalBuffer((__gm__ T*)y);
    statGm.SetGlobalBuffer((__gm__ U*)stats);  // inSum, inMax, inMean: m blocks each
    outGm.SetGlobalBuffer((__gm__ U*)out);      // sum, max, mean: m blocks each; then expMax (T)
    expGm.SetGlobalBuffer((__gm__ T*)(out + 3 * m * 32));
    miscGm.SetGlobalBuffer((__gm__ uint32_t*)misc);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 196608 - 1024);
    LocalTensor<T> src = buf.GetWithOffset<T>(n, SRC);
    LocalTensor<T> dst = buf.GetWithOffset<T>(n, DST);
    LocalTensor<U> sum = buf.GetWithOffset<U>(m * perU, STATS);
    LocalTensor<U> max = buf.GetWithOffset<U>(m * perU, STATS + 1024);
    LocalTensor<U> mean = buf.GetWithOffset<U>(m * perU, STATS + 2048);
    LocalTensor<T> expMax = buf.GetWithOffset<T>(m * perT, STATS + 3072);
    LocalTensor<U> inSum = buf.GetWithOffset<U>(m * perU, STATS + 4096);
    LocalTensor<U> inMax = buf.GetWithOffset<U>(m * perU, STATS + 5120);
    LocalTensor<U> inMean = buf.GetWithOffset<U>(m * perU, STATS + 6144);
    const TensorShape shape({int64_t(m), int64_t(oriK)});
    if (tmpBytes == 0) {
        if (mode == 0) tmpBytes = GetLogSoftMaxMinTmpSize(shape, sizeof(T), false);
        else if (mode == 5) tmpBytes = GetSoftMaxGradMinTmpSize(shape, sizeof(T), false, false);
        else tmpBytes = GetSoftMaxFlashV2MinTmpSize(shape, sizeof(T), sizeof(U), flag != 0);
    }
    LocalTensor<uint8_t> tmp = buf.GetWithOffset<uint8_t>(tmpBytes, TMP);
    DataCopy(src, xGm, n);
    DataCopy(inSum, statGm, m * perU);
    DataCopy(inMax, statGm[m * perU], m * perU);
    DataCopy(inMean, statGm[2 * m * perU], m * perU);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const SoftMaxShapeInfo info{m, k, m, oriK};
    SoftMaxTiling tiling;
    SoftMaxTilingFunc(shape, sizeof(U), tmpBytes, tiling);
    if (mode == 0) {
        if constexpr (std::is_same_v<T, U>) {
            LogSoftMaxTiling lt;
            LogSoftMaxTilingFunc(shape, sizeof(T), tmpBytes, lt);
            LogSoftMax(dst, sum, max, src, tmp, lt, info);
        }
    } else if (mode == 1) {
        SoftmaxFlashV2<T, false>(dst, sum, max, src, expMax, inSum, inMax, tmp, tiling, info);
    } else if (mode == 2) {
        SoftmaxFlashV2<T, true>(dst, sum, max, src, expMax, inSum, inMax, tiling, info);
    } else if (mode == 3) {
        SoftMax<T>(dst, sum, max, src, tmp, tiling, info);
        PipeBarrier<PIPE_V>();
        const bool hit = AdjustSoftMaxRes<T, U>(dst, max, flag, T(-1.0f), info);
        SetFlag<HardEvent::V_S>(EVENT_ID0);
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        miscGm.SetValue(0, hit ? 1u : 0u);
    } else if (mode == 4) {
        if constexpr (std::is_same_v<T, half> && std::is_same_v<U, float>) {
            const SoftMaxParams params{m, k, m, k, 3, 8, 0.9375f};
            if (flag)
                SoftmaxFlashV3<T, U, true>(dst, mean, sum, max, src, expMax, inMean, inSum, inMax, tmp, tiling, params);
            else
                SoftmaxFlashV3<T, U, false>(dst, mean, sum, max, src, expMax, inMean, inSum, inMax, tiling, params);
        }
    } else if (mode == 5) {
        SoftMaxTiling gt;
        SoftMaxGradTilingFunc(shape, sizeof(T), tmpBytes, gt);
        SoftmaxGrad<T>(dst, src, src, tmp, gt, false, info);  // grad = src = x
    } else if (mode == 6) {
        uint32_t v3max = 0, v3min = 0;
        GetSoftMaxFlashV3MaxMinTmpSize(shape, 2, 4, v3max, v3min, true);
        const uint32_t sizes[10] = {GetSoftMaxMinTmpSize(shape, sizeof(T), false),
                                    GetSoftMaxMaxTmpSize(shape, sizeof(T), false),
                                    GetSoftMaxGradMinTmpSize(shape, sizeof(T), true, false),
                                    GetSoftMaxGradMaxTmpSize(shape, sizeof(T), true, false),
                                    GetSoftMaxFlashV2MinTmpSize(shape, sizeof(T), sizeof(U), true),
                                    GetSoftMaxFlashV2MaxTmpSize(shape, sizeof(T), sizeof(U), true),
                                    GetLogSoftMaxMinTmpSize(shape, sizeof(T), false),
                                    GetLogSoftMaxMaxTmpSize(shape, sizeof(T), false),
                                    v3min, v3max};
        for (uint32_t i = 0; i < 10; ++i) miscGm.SetValue(i, sizes[i]);
        SoftMaxTiling t;
        SoftMaxTilingFunc(shape, sizeof(U), tmpBytes, t);
        const uint32_t fields[6] = {t.srcM, t.srcK, t.splitM, t.rangeM, t.tailM, t.reduceK};
        for (uint32_t i = 0; i < 6; ++i) miscGm.SetValue(10 + i, fields[i]);
        // the kernel side's form, for the call's (aligned) shape, also in a constant expression
        constexpr SoftMaxTiling fixed = SoftMaxFlashV2TilingFunc(SoftMaxShapeInfo{8, 64, 8, 64}, 4, 4, 1024);
        static_assert(fixed.splitM == 4 && fixed.rangeM == 2 && fixed.tailM == 0 && fixed.reduceK == 8,
                      "SoftMaxFlashV2TilingFunc: 1024 bytes hold 4 rows of 64 floats");
        const SoftMaxTiling kt = SoftMaxFlashV2TilingFunc(info, sizeof(T), sizeof(U), tmpBytes, true);
        const uint32_t kernelFields[4] = {kt.srcM, kt.srcK, kt.splitM, kt.tailM};
        for (uint32_t i = 0; i < 4; ++i) miscGm.SetValue(16 + i, kernelFields[i]);
        miscGm.SetValue(20, IsBasicBlockInSoftMax(t, sizeof(T)) ? 1u : 0u);
        return;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yGm, dst, n);  // (only what the call wrote: the rest of UB was never written)
    if (mode == 5) return;
    DataCopy(outGm, sum, m * perU);
    DataCopy(outGm[m * perU], max, m * perU);
    if (mode == 4) DataCopy(outGm[2 * m * perU], mean, m * perU);
    if (mode == 2 || (mode == 4 && flag)) DataCopy(expGm, expMax, m * perT);
}

extern "C" __global__ __aicore__ void softmax_family(GM_ADDR x, GM_ADDR stats, GM_ADDR y, GM_ADDR out, GM_ADDR misc,
                                                     uint32_t m, uint32_t k, uint32_t oriK, uint32_t mode,
                                                     uint32_t types, uint32_t tmpBytes, uint32_t flag) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (types == 0) run<float, float>(x, stats, y, out, misc, m, k, oriK, mode, tmpBytes, flag);
    else if (types == 1) run<half, half>(x, stats, y, out, misc, m, k, oriK, mode, tmpBytes, flag);
    else run<half, float>(x, stats, y, out, misc, m, k, oriK, mode, tmpBytes, flag);
}
