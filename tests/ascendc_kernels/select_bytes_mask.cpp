// A kernel of our own for SelectWithBytesMask: x [M, K] float and a uint8 mask [M, MK] (MK > K) are
// copied in; mode 0: y = mask ? -1 : x (tensor src0); 1: y = mask ? x : -1 (scalar src0); 2: mode 0 in
// place (dst is x) with isReuseMask false; 3: misuse, a mask row shorter than a source row. The mask
// is copied back out, to show what the call left in it.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint32_t M = 4;
constexpr uint32_t K = 16;
constexpr uint32_t MK = 64;

extern "C" __global__ __aicore__ void select_bytes_mask(GM_ADDR x, GM_ADDR mask, GM_ADDR y, GM_ADDR maskOut,
                                                        int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> xg, yg;
    GlobalTensor<uint8_t> mg, mo;
    xg.SetGlobalBuffer((__gm__ float*)x, M * K);
    yg.SetGlobalBuffer((__gm__ float*)y, M * K);
    mg.SetGlobalBuffer((__gm__ uint8_t*)mask, M * MK);
    mo.SetGlobalBuffer((__gm__ uint8_t*)maskOut, M * MK);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8192);
    LocalTensor<float> xl = buf.GetWithOffset<float>(M * K, 0);
    LocalTensor<float> yl = buf.GetWithOffset<float>(M * K, 1024);
    LocalTensor<uint8_t> ml = buf.GetWithOffset<uint8_t>(M * MK, 2048);
    LocalTensor<uint8_t> tmp = buf.GetWithOffset<uint8_t>(2048, 4096);
    SelectWithBytesMaskShapeInfo info;
    info.firstAxis = M;
    info.srcLastAxis = K;
    info.maskLastAxis = mode == 3 ? 8 : MK;
    DataCopy(xl, xg, M * K);
    DataCopy(ml, mg, M * MK);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    if (mode == 0 || mode == 3) {
        SelectWithBytesMask(yl, xl, -1.0f, ml, tmp, info);
    } else if (mode == 1) {
        SelectWithBytesMask(yl, -1.0f, xl, ml, tmp, info);
    } else {
        SelectWithBytesMask<float, uint8_t, false>(xl, xl, -1.0f, ml, tmp, info);
        yl = xl;
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, yl, M * K);
    DataCopy(mo, ml, M * MK);
}
