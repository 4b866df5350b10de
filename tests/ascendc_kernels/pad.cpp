// A kernel of our own for Pad and UnPad. x (DATA_T, 512 elements) is copied in as a [h, w] source;
// the tilings come from the host helpers (PadTilingFunc with the original width oriW). Mode:
//   0 Pad(left, right, value 7)   1 the same with a sharedTmpBuffer of tmpBytes   2 UnPad(right)
//   3 UnPad with a sharedTmpBuffer of tmpBytes
// y (512 elements, starting as the host filled it) is copied out. Misuse: 10 Pad's dst over x.
#include "kernel_operator.h"

using namespace AscendC;

#ifndef DATA_T
#define DATA_T float
#endif

extern "C" __global__ __aicore__ void pad(GM_ADDR x, GM_ADDR y, int32_t mode, int32_t h, int32_t w, int32_t oriW,
                                          int32_t left, int32_t right, int32_t tmpBytes) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    using T = DATA_T;
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T*)x, 512);
    yg.SetGlobalBuffer((__gm__ T*)y, 512);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * 2048 + 2048);
    LocalTensor<T> xl = buf.GetWithOffset<T>(512, 0), yl = buf.GetWithOffset<T>(512, 4096);
    LocalTensor<uint8_t> tmp = buf.GetWithOffset<uint8_t>(uint32_t(tmpBytes > 0 ? tmpBytes : 32), 6144);
    const TensorShape shape({uint32_t(h), uint32_t(w)}), ori({uint32_t(h), uint32_t(oriW)});
    PadTiling pt;
    PadTilingFunc(shape, ori, 2048, sizeof(T), pt);
    UnPadTiling ut;
    UnPadTilingFunc(shape, 2048, sizeof(T), ut);
    PadParams pp{uint16_t(left), uint16_t(right), 7};
    UnPadParams up{0, uint16_t(right)};

    DataCopy(xl, xg, 512);
    DataCopy(yl, yg, 512);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    if (mode == 0) {
        Pad(yl, xl, pp, pt);
    } else if (mode == 1) {
        Pad(yl, xl, pp, tmp, pt);
    } else if (mode == 2) {
        UnPad(yl, xl, up, ut);
    } else if (mode == 3) {
        UnPad(yl, xl, up, tmp, ut);
    } else if (mode == 10) {
        Pad(xl[64], xl, pp, pt);
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, yl, 512);
}
