// The memory dumps of utils/debug/asc_dump.h on a kernel of our own: 4 floats of GM, the same 4 after a
// copy into UB (16 halves: 8 cast from them, 8 more of 2.5), and with ``bad`` 1 an asc_dump_ubuf of a GM address.
#include "kernel_operator.h"
#include "utils/debug/asc_dump.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void dump_kernel(GM_ADDR x, int32_t bad) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 8);
    LocalTensor<float> t = buf.GetWithOffset<float>(8, 0);
    LocalTensor<half> h = buf.GetWithOffset<half>(32, 256);
    if (bad) asc_dump_ubuf<float>((__ubuf__ float*)xg.GetPhyAddr(), 9, 4);  // a GM address
    asc_dump_gm<float>((__gm__ float*)xg.GetPhyAddr(), 1, 4);
    DataCopy(t, xg, 8);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Cast(h, t, RoundMode::CAST_NONE, 8);
    Duplicate(h[16], half(2.5f), 16);
    PipeBarrier<PIPE_ALL>();
    asc_dump_ubuf<float>((__ubuf__ float*)t.GetPhyAddr(), 2, 4);
    asc_dump((half*)h.GetPhyAddr(), 3, 8);
    asc_dump((half*)h[16].GetPhyAddr(), 4, 8);
}
