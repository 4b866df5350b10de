// basic_api/kernel_operator_proposal_intf.h: a header path the API pages give for part of the basic API (basic_api/README.md).
#ifndef MPNPU_BASIC_API_KERNEL_OPERATOR_PROPOSAL_INTF_H
#define MPNPU_BASIC_API_KERNEL_OPERATOR_PROPOSAL_INTF_H
#include "kernel_operator.h"
#endif
