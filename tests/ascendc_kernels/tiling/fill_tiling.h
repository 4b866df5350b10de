// Our tiling struct written with the host's definition macros, as a kernel-side header.
#ifndef FILL_TILING_H
#define FILL_TILING_H
#include "kernel_tiling/kernel_tiling.h"

BEGIN_TILING_DATA_DEF(FillTiling)
TILING_DATA_FIELD_DEF(uint32_t, total);
TILING_DATA_FIELD_DEF(float, base);
TILING_DATA_FIELD_DEF_ARR(uint16_t, 3, spare);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(Fill, FillTiling)
#endif
