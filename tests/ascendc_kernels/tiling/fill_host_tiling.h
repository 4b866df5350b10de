// The same struct as a host tiling header has it: host-only includes and the optiling namespace,
// which no kernel can include (mpnpu.ascendc.tiling.kernel_tiling_header makes the kernel side).
#ifndef FILL_HOST_TILING_H
#define FILL_HOST_TILING_H
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(FillTiling)
TILING_DATA_FIELD_DEF(uint32_t, total);
TILING_DATA_FIELD_DEF(float, base);
TILING_DATA_FIELD_DEF_ARR(uint16_t, 3, spare);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(Fill, FillTiling)
extern int TilingForFill(void* context);
}  // namespace optiling
#endif
