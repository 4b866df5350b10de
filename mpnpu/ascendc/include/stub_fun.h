// stub_fun.h: public kernels include it beside stub_def.h under __CCE_KT_TEST__ (the CPU-debug
// build). No API page says what it declares; mpnpu declares the CPU-debug host API in tikicpulib.h
// and the kernel API in kernel_operator.h, and this header includes both.
#ifndef MPNPU_STUB_FUN_H
#define MPNPU_STUB_FUN_H
#include "tikicpulib.h"
#endif
