// Each core writes who it is: GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetSubBlockNum, GetTaskRation,
// and its core type, into row (type * 64 + block idx) of out (int32 [128, 8]).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void identity(GM_ADDR out) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)out, 128 * 8);
    int64_t row = (ASCEND_IS_AIC ? 64 : 0) + GetBlockIdx();
    g.SetValue(row * 8 + 0, int32_t(GetBlockIdx()));
    g.SetValue(row * 8 + 1, int32_t(GetBlockNum()));
    g.SetValue(row * 8 + 2, int32_t(GetSubBlockIdx()));
    g.SetValue(row * 8 + 3, int32_t(GetSubBlockNum()));
    g.SetValue(row * 8 + 4, int32_t(GetTaskRation()));
    g.SetValue(row * 8 + 5, ASCEND_IS_AIV ? 1 : 2);
}
