// One kernel, many ways to fail, chosen by `mode` on vector core `who` (the others run cleanly):
// 1 read past the end of x, 2 write past the end of a UB buffer, 3 segfault, 4 abort,
// 5 throw, 6 skip the SyncAll every other core waits in, 7 a WaitFlag nothing raised,
// 8 DeQue of an empty queue.
#include <stdexcept>
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void faults(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode, uint32_t who) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    yg.SetGlobalBuffer((__gm__ float*)y, n);
    LocalTensor<float> t = buf.Get<float>();
    bool me = uint32_t(GetBlockIdx()) == who;
    if (me && mode == 1) DataCopy(t, xg[n - 8], 64);
    if (me && mode == 2) t.SetValue(256, 1.0f);
    if (me && mode == 3) { volatile float* p = nullptr; *p = 1.0f; }
    if (me && mode == 4) abort();
    if (me && mode == 5) throw std::runtime_error("kernel gave up");
    if (me && mode == 7) WaitFlag<HardEvent::MTE2_V>(3);
    if (me && mode == 8) {
        TQue<TPosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 256);
        LocalTensor<float> u = q.DeQue<float>();
        (void)u;
    }
    if (!(me && mode == 6)) SyncAll();
    DataCopy(t, xg, 8);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(yg, t, 8);
}
