// The matmul API's header as kernels include it: Matmul, MatmulImpl, MatmulType, MatmulConfig,
// REGIST_MATMUL_OBJ (mpnpu/cube/matmul.h).
#ifndef MPNPU_LIB_MATMUL_INTF_H
#define MPNPU_LIB_MATMUL_INTF_H

#include "../kernel_operator.h"
#include "../kernel_tiling/kernel_tiling.h"
#include "../mpnpu/cube/matmul.h"

#endif  // MPNPU_LIB_MATMUL_INTF_H
