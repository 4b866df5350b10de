// The sorting library, CumSum and Sum on a kernel of our own, in the order a top-p sampler uses them: 96
// scores (float or half) with indices 0..95 are prepared (Concat into a tensor left unset), sorted whole
// (Sort<T, true>) and split back (Extract); the sorted values' running sum (CumSum) and total (Sum) follow.
// Then the first two 32-record groups of a per-repeat Sort are merged with ifExhaustedSuspension and
// GetMrgSortResult reads how far each queue got (after a V_S flag). ``mode`` 1 passes Sort a repeatTime
// of 300 (misuse); 2 reads GetMrgSortResult after a merge without suspension (misuse).
#include "kernel_operator.h"

using namespace AscendC;

constexpr CumSumConfig kRunning{true, false, false};

// A kernel's own constant hides the API's of the same name (EIGHT and SIXTEEN, which kernels name without
// defining: mpnpu/utils.h).
namespace own {
constexpr uint32_t SIXTEEN = 16;
inline int32_t concat_repeats(uint32_t scores) { return int32_t(scores / SIXTEEN); }
}  // namespace own

template <typename T>
__aicore__ inline void run(GM_ADDR x, GM_ADDR vals, GM_ADDR idxs, GM_ADDR cums, GM_ADDR sums, GM_ADDR counts,
                           int32_t mode) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 16384);
    GlobalTensor<T> xg, vg, cg, sg;
    GlobalTensor<uint32_t> ig;
    GlobalTensor<uint16_t> ng;
    xg.SetGlobalBuffer((__gm__ T*)x, 96);
    vg.SetGlobalBuffer((__gm__ T*)vals, 96);
    ig.SetGlobalBuffer((__gm__ uint32_t*)idxs, 96);
    cg.SetGlobalBuffer((__gm__ T*)cums, 96);
    sg.SetGlobalBuffer((__gm__ T*)sums, 32 / sizeof(T));
    ng.SetGlobalBuffer((__gm__ uint16_t*)counts, 16);
    constexpr uint32_t per = 8 / sizeof(T);  // T elements in one record
    LocalTensor<T> scores = buf.GetWithOffset<T>(96, 0);
    LocalTensor<uint32_t> index = buf.GetWithOffset<uint32_t>(96, 512);
    LocalTensor<T> sorted = buf.GetWithOffset<T>(96 * per, 128 * EIGHT);
    LocalTensor<T> tmp = buf.GetWithOffset<T>(96 * per, 2048);
    LocalTensor<T> values = buf.GetWithOffset<T>(96, 3072);
    LocalTensor<uint32_t> order = buf.GetWithOffset<uint32_t>(96, 3584);
    LocalTensor<T> running = buf.GetWithOffset<T>(96, 4096);
    LocalTensor<T> unused = buf.GetWithOffset<T>(32, 4608);
    LocalTensor<T> total = buf.GetWithOffset<T>(32 / sizeof(T), 4736);
    LocalTensor<uint8_t> scratch = buf.GetWithOffset<uint8_t>(2048, 5120);
    LocalTensor<T> groups = buf.GetWithOffset<T>(96 * per, 7168);
    LocalTensor<T> merged = buf.GetWithOffset<T>(64 * per, 8192);
    LocalTensor<uint16_t> got = buf.GetWithOffset<uint16_t>(16, 9216);
    DataCopy(scores, xg, 96);
    CreateVecIndex(index.ReinterpretCast<int32_t>(), int32_t(0), 96);
    Duplicate(got, uint16_t(0), 16);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<T> prepared;
    Concat(prepared, scores, tmp, own::concat_repeats(96));
    Sort<T, true>(sorted, prepared, index, tmp, mode == 1 ? 300 : 3);  // the full sort
    Sort<T, false>(groups, prepared, index, tmp, 3);
    Extract(values, order, sorted, 3);
    const CumSumInfo info{1, 96};
    CumSum<T, kRunning>(running, unused, values, scratch, info);
    SumParams params;
    params = {1, 96, 96};
    Sum(total, values, scratch, params);
    MrgSort4Info mrg;
    mrg.elementLengths[0] = mrg.elementLengths[1] = 32;
    mrg.validBit = 3;
    mrg.ifExhaustedSuspension = mode != 2;
    mrg.repeatTimes = 1;
    MrgSort<T>(merged, MrgSortSrcList<T>(groups[0], groups[32 * per], groups[0], groups[0]), mrg);
    SetFlag<HardEvent::V_S>(1);
    WaitFlag<HardEvent::V_S>(1);
    uint16_t n[4];
    GetMrgSortResult(n[0], n[1], n[2], n[3]);  // the counts
    for (int q = 0; q < 4; ++q) got.SetValue(q, n[q]);
    SetFlag<HardEvent::S_MTE3>(2);
    WaitFlag<HardEvent::S_MTE3>(2);
    SetFlag<HardEvent::V_MTE3>(3);
    WaitFlag<HardEvent::V_MTE3>(3);
    DataCopy(vg, values, 96);
    DataCopy(ig, order, 96);
    DataCopy(cg, running, 96);
    DataCopy(sg, total, 32 / sizeof(T));
    DataCopy(ng, got, 16);
}

extern "C" __global__ __aicore__ void sort_lib_kernel(GM_ADDR x, GM_ADDR vals, GM_ADDR idxs, GM_ADDR cums,
                                                      GM_ADDR sums, GM_ADDR counts, int32_t half_scores,
                                                      int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (half_scores) run<half>(x, vals, idxs, cums, sums, counts, mode);
    else run<float>(x, vals, idxs, cums, sums, counts, mode);
}
