// Arange, the library's arithmetic progression: dst[i] = firstValue + i * diffValue for i < count, and
// its host helper GetArangeMaxMinTmpSize (with the deprecated name GetArithProgressionMaxMinTmpSize).
//
// The page builds the sequence in steps (8 values by scalar writes, then repeated Adds); mpnpu writes
// each value directly as firstValue + i * diffValue in float for half and float (exactly for the
// integer types), so for long float sequences its last bits can differ from the device's running
// sums. T is half, float, int16_t or int32_t (another type is an API error). Documented and checked
// (API errors at the kernel's line): dst a UB tensor starting 32-byte aligned, count > 0 and within
// dst, diffValue >= 0. The write is traced on PIPE_V. No temporary buffer: the host helper gives 0, 0.
#ifndef MPNPU_INDEX_LIB_H
#define MPNPU_INDEX_LIB_H

#include <cstdint>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"
#include "vector/scalar.h"

namespace AscendC {

template <typename T>
inline void Arange(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count, MPNPU_SITE) {
    const char* name = "Arange";
    mpnpu::vec::start(site, name);
    constexpr bool ok = mpnpu::vec::one_of<T, half, float, int16_t, int32_t>;
    mpnpu::vec::need_type<T>(ok, site, name, "half, float, int16_t, int32_t");
    if constexpr (ok) {
        mpnpu::vec::check_operand(dst, 32, site, name, "dst");
        if (count <= 0) mpnpu::api_error(site, "%s: count %d must be greater than 0", name, count);
        if (mpnpu::to_float(diffValue) < 0.0f)
            mpnpu::api_error(site, "%s: diffValue %g must be at least 0", name, double(mpnpu::to_float(diffValue)));
        mpnpu::vec::progression(dst, firstValue, diffValue, count, site, name);
    }
}

inline void GetArangeMaxMinTmpSize(uint32_t& maxValue, uint32_t& minValue) { maxValue = minValue = 0; }
inline void GetArithProgressionMaxMinTmpSize(uint32_t& maxValue, uint32_t& minValue) {
    GetArangeMaxMinTmpSize(maxValue, minValue);
}

}  // namespace AscendC

#endif  // MPNPU_INDEX_LIB_H
