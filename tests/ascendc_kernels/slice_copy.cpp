// DataCopy's slice forms on a kernel of our own: from a [4, 40] float tensor in GM, rows 1 and 3 and in
// each the pieces of 8 at columns 4 and 16 (to column 27, 4 apart) into a [2, 16] UB tile; then the tile
// into columns 4..19 of a [2, 24] GM output. ``bad`` 1: a destination slice one block short.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void slice_copy(GM_ADDR x, GM_ADDR y, int32_t bad) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 4 * 40);
    yg.SetGlobalBuffer((__gm__ float*)y, 2 * 24);
    LocalTensor<float> t = buf.Get<float>(2 * 16);
    SliceInfo src[] = {{4, 27, 4, 1, 40}, {1, 3, 1, 1, 4}};
    SliceInfo tile[] = {{0, 15, 0, 2, 16}, {0, 1, 0, 1, 2}};
    SliceInfo out[] = {{4, 19, 0, 2, 24}, {0, 1, 0, 1, 2}};
    if (bad) tile[0].endIndex = 7;  // one block short of the source's 16 a row
    DataCopy(t, xg, tile, src, 2);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(yg, t, out, tile, 2);
}
