// A LocalTensor placed by the kernel itself: LocalTensor<T>(TPosition, addr, tileSize). ADDR and TILE
// choose where (a misaligned address or a tile past the end of UB is refused at the constructor's line);
// COPY_ONLY leaves the Muls out (y = x), for copies that run past a small tile.
#include "kernel_operator.h"
using namespace AscendC;

#ifndef ADDR
#define ADDR 256
#endif
#ifndef TILE
#define TILE 64
#endif

extern "C" __global__ __aicore__ void local_at(GM_ADDR x, GM_ADDR y) {
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    yg.SetGlobalBuffer((__gm__ float*)y, 64);
    LocalTensor<float> t = LocalTensor<float>(TPosition::VECCALC, ADDR, TILE);  // placed here
    DataCopy(t, xg, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
#ifndef COPY_ONLY
    Muls(t, t, 2.0f, 64);
#endif
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, t, 64);
}
