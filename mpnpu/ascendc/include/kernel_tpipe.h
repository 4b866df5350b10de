// kernel_tpipe.h: the file name of basic_api/kernel_tpipe.h, as kernels include it (basic_api/README.md).
#ifndef MPNPU_KERNEL_TPIPE_H
#define MPNPU_KERNEL_TPIPE_H
#include "basic_api/kernel_tpipe.h"
#endif
