// y = x through a UB buffer, with the defect MODE names (0: none): 1 copies out a second buffer
// nothing wrote (initcheck); 2 raises an MTE2_MTE3 event that nothing waits for (synccheck).
#include "kernel_operator.h"
using namespace AscendC;

#ifndef MODE
#define MODE 0
#endif

extern "C" __global__ __aicore__ void checks(GM_ADDR x, GM_ADDR y, uint32_t n) {
    if (GetBlockIdx() != 0) return;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * n * sizeof(float));
    LocalTensor<float> a = buf.Get<float>();
    LocalTensor<float> b = a[n];
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    yg.SetGlobalBuffer((__gm__ float*)y, n);
    DataCopy(a, xg, n);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
#if MODE == 2
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);  // CHECK: never waited
#endif
#if MODE == 1
    DataCopy(yg, b, n);  // CHECK: unwritten buffer
#else
    DataCopy(yg, a, n);
#endif
}
