// A kernel built for two chip families declares one kernel type per family: the inference series'
// KERNEL_TYPE_MIX_VECTOR_CORE has no effect on this chip class, the vector-only type applies.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void two_families(GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_VECTOR_CORE);
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)out, 64);
    g.SetValue(GetBlockIdx(), int32_t(GetBlockIdx()) + 1);
}
