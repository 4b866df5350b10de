// Sort32 and MrgSort on a kernel of our own: 128 scores (float or half) with indices 0..127, sorted in
// groups of 32 (4 repeats), then merged: the four queues with repeatTimes 1 into 128 records
// (``mode`` 0), or the first two only, validBit 3 (1), or with ifExhaustedSuspension (2); ``mode`` 3
// passes validBit 5 (misuse). Writes the Sort32 records then the merged ones.
#include "kernel_operator.h"

using namespace AscendC;

template <typename T>
__aicore__ inline void run(GM_ADDR x, GM_ADDR idx, GM_ADDR y, int32_t mode) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8192);
    GlobalTensor<T> xg;
    GlobalTensor<uint32_t> ig;
    GlobalTensor<T> yg;
    xg.SetGlobalBuffer((__gm__ T*)x, 128);
    ig.SetGlobalBuffer((__gm__ uint32_t*)idx, 128);
    constexpr uint32_t per = 8 / sizeof(T);  // T elements in one record
    yg.SetGlobalBuffer((__gm__ T*)y, 2 * 128 * per);
    LocalTensor<T> s = buf.GetWithOffset<T>(128, 0);
    LocalTensor<uint32_t> i = buf.GetWithOffset<uint32_t>(128, 512);
    LocalTensor<T> sorted = buf.GetWithOffset<T>(128 * per, 1024);
    LocalTensor<T> merged = buf.GetWithOffset<T>(128 * per, 2048);
    DataCopy(s, xg, 128);
    DataCopy(i, ig, 128);
    Duplicate(merged, T(0), 128 * per);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Sort32<T>(sorted, s, i, 4);
    PipeBarrier<PIPE_V>();
    MrgSort4Info params;
    for (int q = 0; q < 4; ++q) params.elementLengths[q] = 32;
    params.validBit = mode == 1 ? 3 : mode == 3 ? 5 : 15;
    params.ifExhaustedSuspension = mode == 2;
    params.repeatTimes = 1;
    MrgSortSrcList<T> list(sorted[0], sorted[32 * per], sorted[64 * per], sorted[96 * per]);
    MrgSort<T>(merged, list, params);  // the merge
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, sorted, 128 * per);
    DataCopy(yg[128 * per], merged, 128 * per);
}

extern "C" __global__ __aicore__ void sort_kernel(GM_ADDR x, GM_ADDR idx, GM_ADDR y, int32_t half_scores,
                                                  int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (half_scores) run<half>(x, idx, y, mode);
    else run<float>(x, idx, y, mode);
}
