// kern_fwk.h: the header the API pages give for ICPU_RUN_KF and ICPU_SET_TILING_KEY of the CPU-debug
// host API (as tools/cpudebug/include/kern_fwk.h). mpnpu's CPU-debug host API is tikicpulib.h.
#ifndef MPNPU_KERN_FWK_H
#define MPNPU_KERN_FWK_H
#include "tikicpulib.h"
#endif
