// kernel_operator_fixpipe_intf.h: the file name of basic_api/kernel_operator_fixpipe_intf.h, as kernels include it (basic_api/README.md).
#ifndef MPNPU_KERNEL_OPERATOR_FIXPIPE_INTF_H
#define MPNPU_KERNEL_OPERATOR_FIXPIPE_INTF_H
#include "basic_api/kernel_operator_fixpipe_intf.h"
#endif
