// Kernels of our own for the small names of mpnpu/utils.h: ASSERT, AlignUp / DivCeil, AscendC::Std,
// ToFloat, g_coreType, InitGlobalMemory, TBuf::AllocTensor, AscendCUtils.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void utils_names(GM_ADDR out, GM_ADDR ws, uint32_t fail_assert) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    ASSERT(GetBlockNum() != 0 && "block dim can not be zero!");
    ASSERT(fail_assert == 0);
    GlobalTensor<float> og, wg;
    og.SetGlobalBuffer((__gm__ float*)out, 8);
    wg.SetGlobalBuffer((__gm__ float*)ws, 64);
    if (g_coreType == AIV && GetBlockIdx() == 0) {
        InitGlobalMemory(wg, 64, 2.5f);
        InitOutput(wg[32], 16, 4.0f);
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 1024);
        LocalTensor<float> t = buf.AllocTensor<float>();
        buf.FreeTensor(t);
        og.SetValue(0, float(AlignUp(10u, 8u)));
        og.SetValue(1, float(DivCeil(10, 4)));
        og.SetValue(2, float(Std::max(3, 7)) + (Std::is_same_v<Std::conditional_t<true, int, float>, int> ? 0.5f : 0));
        og.SetValue(3, ToFloat(bfloat16_t(1.5f)));
        og.SetValue(4, float(AscendCUtils::GetC0Count(2)));
        og.SetValue(5, wg.GetValue(63));
        og.SetValue(6, wg.GetValue(40));
    }
}
