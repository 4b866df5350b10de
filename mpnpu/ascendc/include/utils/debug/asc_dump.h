// The include path of the memory dumps (asc_dump_gm, asc_dump_ubuf, asc_dump_l1buf, asc_dump_cbuf,
// asc_dump): mpnpu/asc_dump.h.
#ifndef MPNPU_UTILS_DEBUG_ASC_DUMP_H
#define MPNPU_UTILS_DEBUG_ASC_DUMP_H
#include "../../kernel_operator.h"
#include "../../mpnpu/asc_dump.h"
#endif
