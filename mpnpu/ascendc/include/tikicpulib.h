// The CPU-debug host API, as unit tests include it: GmAlloc / GmFree, SetKernelMode, ICPU_SET_TILING_KEY,
// ICPU_RUN_KF, memset_s / memcpy_s (mpnpu/cpudebug.h, securec.h), with the whole kernel API.
#ifndef MPNPU_TIKICPULIB_H
#define MPNPU_TIKICPULIB_H

#include "kernel_operator.h"
#include "mpnpu/cpudebug.h"

#endif  // MPNPU_TIKICPULIB_H
