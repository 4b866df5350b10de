// basic_api/kernel_tpipe.h: a header path the API pages give for part of the basic API (basic_api/README.md).
#ifndef MPNPU_BASIC_API_KERNEL_TPIPE_H
#define MPNPU_BASIC_API_KERNEL_TPIPE_H
#include "kernel_operator.h"
#endif
