// ascendc_assert with and without a message; N decides whether the second one holds. ASCENDC_ASSERT
// with a KERNEL_LOG as its behaviour refuses N = 96.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void assert_msg(GM_ADDR y, uint32_t n) {
    ASCENDC_ASSERT(n != 96, { KERNEL_LOG(KERNEL_ERROR, "n %u is refused", n); });  // the refusal
    ascendc_assert(n > 0);
    ascendc_assert(n % 32 == 0, "n %u must be a multiple of %d\n", n, 32);  // the check
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)y, 8);
    if (GetBlockIdx() == 0) g.SetValue(0, int32_t(n));
}
