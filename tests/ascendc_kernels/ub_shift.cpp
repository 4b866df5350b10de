// A kernel with undefined behaviour when its input asks for it: a shift by at least the width of int.
// Built with MPNPU_KERNEL_UBSAN=1, the sanitizer stops the core at that line; built plainly it runs.
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void ub_shift(GM_ADDR x, GM_ADDR amount)
{
    AscendC::GlobalTensor<int32_t> values;
    AscendC::GlobalTensor<int32_t> by;
    values.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(x), 8);
    by.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(amount), 1);
    const int32_t v = values.GetValue(0);
    values.SetValue(1, v << by.GetValue(0));  // the shift
}
