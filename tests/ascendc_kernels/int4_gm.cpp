// GlobalTensor<int4b_t> indexing on a kernel of our own: out[i] = the bytes from the tensor's start to
// element n (n = 2048, 6, 1024 then 1024 more, 7), two int4b_t values to a byte.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void int4_gm(GM_ADDR y, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int4b_t> yg;
    yg.SetGlobalBuffer((__gm__ int4b_t*)y, 4096);
    GlobalTensor<int64_t> og;
    og.SetGlobalBuffer((__gm__ int64_t*)out, 4);
    const uint8_t* start = reinterpret_cast<const uint8_t*>(yg.GetPhyAddr());
    auto bytes = [start](const GlobalTensor<int4b_t>& t) {
        return int64_t(reinterpret_cast<const uint8_t*>(t.GetPhyAddr()) - start);
    };
    og.SetValue(0, bytes(yg[2048]));
    og.SetValue(1, bytes(yg[6]));
    og.SetValue(2, bytes(yg[1024][1024]));
    og.SetValue(3, bytes(yg[7]));
}
