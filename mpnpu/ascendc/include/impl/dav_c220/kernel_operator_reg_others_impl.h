// impl/dav_c220/kernel_operator_reg_others_impl.h: a path some kernels include directly for the
// vector core's register reads (the ReduceSum accumulator, GetAccVal) and a block-size constant
// (ONE_BLK_FLOAT_NUM). mpnpu's own header at that path: the whole kernel API, which has both.
#ifndef MPNPU_IMPL_DAV_C220_REG_OTHERS_H
#define MPNPU_IMPL_DAV_C220_REG_OTHERS_H

#include "../../kernel_operator.h"

#endif  // MPNPU_IMPL_DAV_C220_REG_OTHERS_H
