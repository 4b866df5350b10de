// kernel_operator_dump_tensor_intf.h: the header DumpTensor's page names; here it is the whole API
// (kernel_operator.h), DumpTensor included (mpnpu/dump.h).
#ifndef MPNPU_KERNEL_OPERATOR_DUMP_TENSOR_INTF_H
#define MPNPU_KERNEL_OPERATOR_DUMP_TENSOR_INTF_H

#include "kernel_operator.h"

#endif
