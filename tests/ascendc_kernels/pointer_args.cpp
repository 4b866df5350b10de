// A kernel whose arguments are all GM pointers (the launch path a batch repeats, mpnpu.ascendc.native.bridge
// .launcher): out[i] = a[i] + 2 b[i] + 3 c[i] for 8 floats on every vector core; ctl[0] == 1 makes
// core ctl[1] copy 8 floats from c[4], past c's end.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void weighted_sum(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out, GM_ADDR ctl) {
    GlobalTensor<float> ag, bg, cg, og;
    GlobalTensor<int32_t> ctlg;
    ag.SetGlobalBuffer((__gm__ float*)a, 8);
    bg.SetGlobalBuffer((__gm__ float*)b, 8);
    cg.SetGlobalBuffer((__gm__ float*)c, 8);
    ctlg.SetGlobalBuffer((__gm__ int32_t*)ctl, 2);
    og.SetGlobalBuffer((__gm__ float*)out + 8 * GetBlockIdx(), 8);
    if (ctlg.GetValue(0) == 1 && ctlg.GetValue(1) == GetBlockIdx()) {
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 32);
        LocalTensor<float> t = buf.Get<float>();
        DataCopy(t, cg[4], 8);
    }
    for (int i = 0; i < 8; ++i) og.SetValue(i, ag.GetValue(i) + 2.0f * bg.GetValue(i) + 3.0f * cg.GetValue(i));
}
