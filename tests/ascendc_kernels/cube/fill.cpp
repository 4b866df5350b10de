// Fill / InitConstValue on a cube core of our own: B (16 x 16 half) filled with ``bv`` in L1 (Fill, 16
// blocks of 32 bytes) and loaded to L0B; A (48 x 16, three 512-byte fractals in L0A) zeroed, then its
// fractals 0 and 2 set to ``av`` (InitConstValue, 2 repeats of 1 block, a gap of 1 block); C = A x B to
// GM as float: rows 0-15 and 32-47 are av * bv * 16, rows 16-31 are 0. ``bad`` 1 fills an L0C tensor.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void fill_cube(GM_ADDR c, float av, float bv, int32_t bad) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<float> cGm;
    cGm.SetGlobalBuffer((__gm__ float*)c, 48 * 16);
    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalTensor<half> b1 = l1.Alloc<TPosition::B1, half>(16 * 16);
    LocalTensor<half> a2 = l0a.Alloc<TPosition::A2, half>(48 * 16);
    LocalTensor<half> b2 = l0b.Alloc<TPosition::B2, half>(16 * 16);
    LocalTensor<float> c1 = l0c.Alloc<TPosition::CO1, float>(48 * 16);
    if (bad) Fill(c1, {1, 1, 0, 1.0f});  // an L0C tensor
    Fill(b1, {1, 16, 0, half(bv)});
    InitConstValue(a2, {1, 3, 0, half(0.0f)});
    PipeBarrier<PIPE_MTE1>();
    InitConstValue(a2, {2, 1, 1, half(av)});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData(b2, b1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c1, a2, b2, MmadParams(48, 16, 16));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp(16, 48, 48, 16, false);
    Fixpipe(cGm, c1, fp);
    PipeBarrier<PIPE_ALL>();
}
