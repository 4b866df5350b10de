// The Ascend C kernel API on mpnpu's multi-process device: an independent implementation, written
// from the documented behaviour of each call, for running and debugging kernels written for Ascend
// devices on a CPU. Not affiliated with or endorsed by Huawei; Ascend and CANN are Huawei's
// trademarks. docs/ascendc.md lists what is supported.
#ifndef MPNPU_KERNEL_OPERATOR_H
#define MPNPU_KERNEL_OPERATOR_H

#include <cassert>  // (kernels built for CPU debug call assert under __CCE_KT_TEST__)
#include <cstdint>
#include <cstring>

#include "mpnpu/native/rt.h"
#include "mpnpu/types.h"
#include "mpnpu/identity.h"
#include "mpnpu/macros.h"
#include "mpnpu/tensor.h"
#include "mpnpu/sync.h"
#include "mpnpu/block_sync.h"
#include "mpnpu/tpipe.h"
#include "mpnpu/data_copy.h"
#include "mpnpu/scalar_atomic.h"
#include "mpnpu/vector.h"
#include "mpnpu/cube.h"
#include "mpnpu/utils.h"
#include "mpnpu/power.h"
#include "mpnpu/broadcast.h"
#include "mpnpu/math_lib.h"
#include "mpnpu/activation_lib.h"
#include "mpnpu/math_lib2.h"
#include "mpnpu/index_lib.h"
#include "mpnpu/dropout.h"
#include "mpnpu/softmax.h"
#include "mpnpu/normalization.h"
#include "mpnpu/softmax_flash.h"
#include "mpnpu/pad.h"
#include "mpnpu/sort_lib.h"
#include "mpnpu/topk.h"
#include "mpnpu/cumsum.h"
#include "mpnpu/layout.h"
#include "mpnpu/transdata.h"
#include "mpnpu/sum.h"
#include "mpnpu/reduce_lib.h"
#include "mpnpu/select_bytes_mask.h"
#include "mpnpu/dequant.h"
#include "mpnpu/quant.h"
#include "mpnpu/datatype.h"
#include "mpnpu/debug.h"
#include "mpnpu/dump.h"
#include "mpnpu/asc_dump.h"

#endif  // MPNPU_KERNEL_OPERATOR_H
