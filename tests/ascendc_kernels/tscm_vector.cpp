// A TSCM buffer on a vector core (a kernel of our own): filled with a value in place (InitConstValue,
// on MTE2), then copied out to GM, as public kernels' output-clearing helpers do on every core of a mix
// kernel. out[0:64] = value.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void tscm_vector(GM_ADDR out, float value) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::TSCM> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    LocalTensor<float> tmp = buf.Get<float>();  // TSCM on a vector core
    InitConstValue(tmp, InitConstValueParams<float>(1, 8, 0, value));
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(og, tmp, DataCopyParams(1, 8, 0, 0));
}
