// kernel_tensor.h: the file name of basic_api/kernel_tensor.h, as kernels include it (basic_api/README.md).
#ifndef MPNPU_KERNEL_TENSOR_H
#define MPNPU_KERNEL_TENSOR_H
#include "basic_api/kernel_tensor.h"
#endif
