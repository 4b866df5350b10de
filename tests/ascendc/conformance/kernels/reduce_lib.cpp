// The library's ReduceSum<float, Pattern::Reduce::AR / RA>: src (rows x cols, rows padded to 8 floats)
// copied to UB, summed along the rows (pattern 0, AR) or the columns (1, RA), with a sharedTmpBuffer
// (tmp 1) or without; dst copied out. misuse 1: srcInnerPad false; 2: dst overlaps src.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void reduce_lib(GM_ADDR src, GM_ADDR dst, uint32_t rows, uint32_t cols,
                                                 int32_t pattern, int32_t tmp, int32_t misuse) {
    const uint32_t ld = (cols + 7) / 8 * 8, outs = pattern == 0 ? rows : cols;
    const uint32_t outLen = (outs + 7) / 8 * 8;
    GlobalTensor<float> srcGm, dstGm;
    srcGm.SetGlobalBuffer((__gm__ float*)src);
    dstGm.SetGlobalBuffer((__gm__ float*)dst);
    TPipe pipe;
    TBuf<TPosition::VECCALC> inBuf, outBuf, tmpBuf;
    pipe.InitBuffer(inBuf, rows * ld * sizeof(float));
    pipe.InitBuffer(outBuf, outLen * sizeof(float));
    pipe.InitBuffer(tmpBuf, ld * sizeof(float));
    LocalTensor<float> in = inBuf.Get<float>(), out = misuse == 2 ? in : outBuf.Get<float>();
    DataCopy(in, srcGm, rows * ld);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const uint32_t shape[2] = {rows, cols};
    const bool pad = misuse != 1;
    if (pattern == 0) {
        if (tmp) ReduceSum<float, Pattern::Reduce::AR, false>(out, in, tmpBuf.Get<uint8_t>(), shape, pad);  // the call
        else ReduceSum<float, Pattern::Reduce::AR>(out, in, shape, pad);
    } else {
        if (tmp) ReduceSum<float, Pattern::Reduce::RA, true>(out, in, tmpBuf.Get<uint8_t>(), shape, pad);
        else ReduceSum<float, Pattern::Reduce::RA>(out, in, shape, pad);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dstGm, out, outLen);
}
