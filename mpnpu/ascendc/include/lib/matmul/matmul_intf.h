// The matmul API's header under its longer path (the same as lib/matmul_intf.h).
#ifndef MPNPU_LIB_MATMUL_MATMUL_INTF_H
#define MPNPU_LIB_MATMUL_MATMUL_INTF_H

#include "../matmul_intf.h"

#endif  // MPNPU_LIB_MATMUL_MATMUL_INTF_H
