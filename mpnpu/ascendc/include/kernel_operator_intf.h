// kernel_operator_intf.h: a header kernels include by this name for names of the kernel API; here it is the whole API
// (kernel_operator.h), so whatever a kernel takes from it is available.
#ifndef MPNPU_KERNEL_OPERATOR_INTF_H
#define MPNPU_KERNEL_OPERATOR_INTF_H

#include "kernel_operator.h"

#endif
