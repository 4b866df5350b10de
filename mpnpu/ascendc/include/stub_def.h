// stub_def.h: the header the API pages give for GmAlloc, GmFree and SetKernelMode of the CPU-debug
// host API (as tools/cpudebug/include/stub_def.h); kernels include it by its file name under
// __CCE_KT_TEST__. mpnpu's CPU-debug host API is tikicpulib.h.
#ifndef MPNPU_STUB_DEF_H
#define MPNPU_STUB_DEF_H
#include "tikicpulib.h"
#endif
