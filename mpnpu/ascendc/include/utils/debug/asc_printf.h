// The include path of kernel printing (AscendC::printf): mpnpu/debug.h.
#ifndef MPNPU_UTILS_DEBUG_ASC_PRINTF_H
#define MPNPU_UTILS_DEBUG_ASC_PRINTF_H
#include "../../kernel_operator.h"
#endif
