// Host side: the tiling-data definition macros of a host tiling header (BEGIN_TILING_DATA_DEF,
// TILING_DATA_FIELD_DEF[_ARR/_STRUCT], END_TILING_DATA_DEF, REGISTER_TILING_DATA_CLASS). A struct
// so defined has the fields in their order, set_<field> / get_<field>, GetDataSize and SaveToBuffer;
// the kernel side reads the same layout (kernel_tiling/kernel_tiling.h defines both, once).
#ifndef MPNPU_REGISTER_TILINGDATA_BASE_H
#define MPNPU_REGISTER_TILINGDATA_BASE_H

#include <cstdint>
#include <string>
#include <vector>

#include "../graph/types.h"
#include "../kernel_tiling/kernel_tiling.h"

#endif  // MPNPU_REGISTER_TILINGDATA_BASE_H
