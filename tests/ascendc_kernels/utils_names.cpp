// Kernels of our own for the small names of mpnpu/utils.h: ASSERT, AlignUp / DivCeil, AscendC::Std,
// ToFloat, g_coreType, InitGlobalMemory / InitOutput / Fill, TBuf::AllocTensor, AscendCUtils.
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
        GlobalTensor<float> tail = wg[48];
        Fill(tail, 8, 6.0f);  // (the high-level API's name for the same fill)
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 1024);
        LocalTensor<float> t = buf.AllocTensor<float>();
        buf.FreeTensor(t);
        og.SetValue(0, float(AlignUp(10u, 8u)));
        og.SetValue(1, float(DivCeil(10, 4)));
        og.SetValue(2, float(Std::max(3, 7)) + (Std::is_same_v<Std::conditional_t<true, int, float>, int> ? 0.5f : 0) +
                           (Std::is_same_v<Conditional<false, int, float>::type, float> ? 0.25f : 0));
        og.SetValue(3, ToFloat(bfloat16_t(1.5f)));
        og.SetValue(4, float(AscendCUtils::GetC0Count(2)));
        og.SetValue(5, wg.GetValue(63));
        og.SetValue(6, wg.GetValue(40));
        og.SetValue(7, wg.GetValue(50));
    }
}

// Copy's count form (200 elements) and its level-0 form (2 repeats of 64 floats, the source 16 blocks
// apart, the destination 8: every other 64 of the source, packed).
extern "C" __global__ __aicore__ void copy_forms(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (GetBlockIdx() != 0) return;
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 256);
    yg.SetGlobalBuffer((__gm__ float*)y, 512);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<float> a = buf.GetWithOffset<float>(256, 0);
    LocalTensor<float> b = buf.GetWithOffset<float>(256, 1024);
    LocalTensor<float> c = buf.GetWithOffset<float>(256, 2048);
    Duplicate(b, -1.0f, 256);
    Duplicate(c, -1.0f, 256);
    DataCopy(a, xg, 256);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Copy(b, a, 200);
    Copy(c, a, uint64_t(64), uint8_t(2), CopyRepeatParams{1, 1, 8, 16});
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, b, 256);
    DataCopy(yg[256], c, 256);
}

// The enhanced local copy (DataCopyEnhancedParams): on this chip class a basic UB -> UB copy (mode 0);
// operands of two types (a conversion, mode 1) are refused at the call.
extern "C" __global__ __aicore__ void enhanced_copy(GM_ADDR x, GM_ADDR y, int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (GetBlockIdx() != 0) return;
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    yg.SetGlobalBuffer((__gm__ float*)y, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> a = buf.GetWithOffset<float>(64, 0);
    LocalTensor<float> b = buf.GetWithOffset<float>(64, 256);
    DataCopy(a, xg, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    const DataCopyEnhancedParams enhanced(BlockMode::BLOCK_MODE_VECTOR, DeqScale::DEQ_NONE, 0, 0, false,
                                          pad_t::PAD_NONE, 0);
    if (mode == 1) {
        LocalTensor<half> h = buf.GetWithOffset<half>(64, 512);
        DataCopy(h, a, DataCopyParams(1, 8, 0, 0), enhanced);  // the conversion
    }
    DataCopy(b, a, DataCopyParams(2, 2, 2, 2), enhanced);  // blocks 0-1 and 4-5 to 0-1 and 4-5
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, b, 64);
}

// ArithProgression (int32 and float) and the shifts (arithmetic for int32, logical for uint32).
extern "C" __global__ __aicore__ void arith_shift(GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (GetBlockIdx() != 0) return;
    GlobalTensor<int32_t> yg;
    yg.SetGlobalBuffer((__gm__ int32_t*)y, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<int32_t> a = buf.GetWithOffset<int32_t>(64, 0);
    LocalTensor<int32_t> r = buf.GetWithOffset<int32_t>(64, 256);
    LocalTensor<int32_t> l = buf.GetWithOffset<int32_t>(64, 512);
    LocalTensor<float> f = buf.GetWithOffset<float>(64, 768);
    ArithProgression<int32_t>(a, -40, 3, 64);
    ArithProgression<float>(f, 0.5f, 0.25f, 64);
    ShiftRight<int32_t>(r, a, 1, 64);
    ShiftLeft(l.ReinterpretCast<uint32_t>(), a.ReinterpretCast<uint32_t>(), uint32_t(2), 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, a, 64);
    DataCopy(yg[64], r, 64);
    DataCopy(yg[128], l, 64);
    DataCopy(yg[192], f.ReinterpretCast<int32_t>(), 64);
}

// Power: tensor ^ scalar, scalar ^ tensor, tensor ^ tensor (float), and int32 exactly.
extern "C" __global__ __aicore__ void power_forms(GM_ADDR x, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (GetBlockIdx() != 0) return;
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    yg.SetGlobalBuffer((__gm__ float*)y, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<float> a = buf.GetWithOffset<float>(64, 0);
    LocalTensor<float> p = buf.GetWithOffset<float>(64, 256);
    LocalTensor<float> q = buf.GetWithOffset<float>(64, 512);
    LocalTensor<float> r = buf.GetWithOffset<float>(64, 768);
    LocalTensor<int32_t> n = buf.GetWithOffset<int32_t>(64, 1024);
    DataCopy(a, xg, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Power(p, a, 2.0f, 64);
    Power(q, 2.0f, a, 64);
    Power<float, false>(r, a, a);
    ArithProgression<int32_t>(n, -3, 1, 64);
    Power<int32_t, false>(n, n, 3, 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, p, 64);
    DataCopy(yg[64], q, 64);
    DataCopy(yg[128], r, 64);
    DataCopy(yg[192], n.ReinterpretCast<float>(), 64);
}
