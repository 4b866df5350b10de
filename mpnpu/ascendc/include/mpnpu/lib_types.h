// Types the high-level APIs share: DataFormat (a tensor's layout, as ShapeInfo and the transform and
// quantisation calls name it) and TensorDataType (the host tiling helpers' element type: ge::DataType,
// as documented).
#ifndef MPNPU_LIB_TYPES_H
#define MPNPU_LIB_TYPES_H

#include <cstdint>

#include "datatype.h"

namespace AscendC {

enum class DataFormat : uint8_t {
    ND = 0,
    NZ,
    NCHW,
    NC1HWC0,
    NHWC,
    NCDHW,
    NDC1HWC0,
    FRACTAL_Z_3D,
};

using TensorDataType = ge::DataType;

}  // namespace AscendC

#endif  // MPNPU_LIB_TYPES_H
