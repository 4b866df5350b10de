// What GetSysWorkSpacePtr gives a kernel: out[0] = 1 if it is the workspace argument, 2 if it is out
// (the kernel set it itself with SetSysWorkspace: set != 0), 4 if it is the tiling argument (the
// last), 0 if null, 3 otherwise. Built with
// MPNPU_FRAMEWORK_WORKSPACE (as `mpnpu ut` builds an operator project's kernels) or HAVE_WORKSPACE with
// HAVE_TILING the framework has set it to the workspace argument before the kernel runs (HAVE_WORKSPACE
// alone: to the last argument, here the tiling); without, it is null until the kernel sets it, in
// every launch (a pointer an earlier launch set does not carry over).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void sys_workspace(GM_ADDR out, int32_t set, GM_ADDR workspace, GM_ADDR tiling) {
    if (set) SetSysWorkspace(out);
    GM_ADDR sys = GetSysWorkSpacePtr();
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)out, 8);
    g.SetValue(0, sys == workspace ? 1 : sys == out ? 2 : sys == tiling ? 4 : sys == nullptr ? 0 : 3);
}
