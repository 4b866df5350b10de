// Power, the math library's element-wise power: tensor ^ tensor, tensor ^ scalar and scalar ^ tensor,
// each with and without a caller-supplied temporary buffer and a count (default: the tensor
// source's size), and the host helper GetPowerMaxMinTmpSize. Computed in float (std::pow of the
// float values, rounded to T; integers exactly, by repeated squaring). PowerConfig's algorithm
// (INTRINSIC or DOUBLE_FLOAT_TECH) is accepted and changes nothing: the one result is the precise one.
//
// Operands as the library's other element-wise calls (lib_elementwise.h: UB, 32-byte aligned, the
// count within each tensor, PIPE_V tracing, a sharedTmpBuffer at least the model's minimum of 2 floats
// per element and overlapping nothing). The page does not allow dst to overlap a source; mpnpu's own
// kernels have long raised an int32 tensor to a power in place, and each element is read before it
// is written, so exactly the same tensor is accepted (any other overlap is an API error).
#ifndef MPNPU_POWER_H
#define MPNPU_POWER_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "lib_elementwise.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"

namespace mpnpu {
template <typename T>
inline T power_of(T base, T exp) {
    if constexpr (std::is_integral_v<T>) {
        if (exp < 0) return T(base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0));
        // (in uint64_t, where a product wraps instead of overflowing: the low bits are T's wrapped result)
        uint64_t r = 1;
        for (uint64_t b = uint64_t(int64_t(base)), e = uint64_t(exp); e; e >>= 1, b *= b)
            if (e & 1) r *= b;
        return static_cast<T>(r);
    } else {
        return from_float<T>(std::pow(to_float(base), to_float(exp)));
    }
}

constexpr uint32_t kPowerNodes = 2;

template <typename T>
inline bool power_typed(const Site& site) {
    vec::need_type<T>(vec::one_of<T, half, float, int32_t>, site, "Power", "half, float, int32_t");
    return vec::one_of<T, half, float, int32_t>;
}
// dst = src0 ^ src1, element by element.
template <typename T>
inline void power_tt(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                     const AscendC::LocalTensor<T>& src1, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count,
                     const Site& site) {
    if (!power_typed<T>(site) || !lib::prepare("Power", lib::DstReuse::same, dst, count, tmp, sizeof(T), kPowerNodes,
                                               site, src0, "src0Tensor", src1, "src1Tensor"))
        return;
    const T* a = src0.mpnpu_addr();
    const T* b = src1.mpnpu_addr();
    T* d = dst.mpnpu_addr();
    for (uint64_t i = 0; i < count; ++i) d[i] = power_of<T>(a[i], b[i]);
}
// dst = src ^ scalar (scalar_exp) or scalar ^ src.
template <typename T>
inline void power_ts(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, T scalar,
                     bool scalar_exp, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count, const Site& site) {
    if (!power_typed<T>(site) || !lib::prepare("Power", lib::DstReuse::same, dst, count, tmp, sizeof(T), kPowerNodes,
                                               site, src, scalar_exp ? "src0Tensor" : "src1Tensor"))
        return;
    const T* a = src.mpnpu_addr();
    T* d = dst.mpnpu_addr();
    for (uint64_t i = 0; i < count; ++i) d[i] = scalar_exp ? power_of<T>(a[i], scalar) : power_of<T>(scalar, a[i]);
}
}  // namespace mpnpu

namespace AscendC {

enum class PowerAlgo {
    INTRINSIC = 0,
    DOUBLE_FLOAT_TECH,
};
struct PowerConfig {
    PowerAlgo algo = PowerAlgo::INTRINSIC;
};
constexpr PowerConfig defaultPowerConfig = {};

#define MPNPU_POWER_TPARAMS typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_tt(dstTensor, src0Tensor, src1Tensor, &sharedTmpBuffer, calCount, site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    mpnpu::power_tt(dstTensor, src0Tensor, src1Tensor, &sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                  uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_tt(dstTensor, src0Tensor, src1Tensor, nullptr, calCount, site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                  MPNPU_SITE) {
    mpnpu::power_tt(dstTensor, src0Tensor, src1Tensor, nullptr, src0Tensor.GetSize(), site);
}

template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src0Tensor, src1Scalar, true, &sharedTmpBuffer, calCount, site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src0Tensor, src1Scalar, true, &sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar,
                  uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src0Tensor, src1Scalar, true, nullptr, calCount, site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const T& src1Scalar, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src0Tensor, src1Scalar, true, nullptr, src0Tensor.GetSize(), site);
}

template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src1Tensor, src0Scalar, false, &sharedTmpBuffer, calCount, site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src1Tensor, src0Scalar, false, &sharedTmpBuffer, src1Tensor.GetSize(), site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor,
                  uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src1Tensor, src0Scalar, false, nullptr, calCount, site);
}
template <MPNPU_POWER_TPARAMS>
inline void Power(const LocalTensor<T>& dstTensor, const T& src0Scalar, const LocalTensor<T>& src1Tensor, MPNPU_SITE) {
    mpnpu::power_ts(dstTensor, src1Tensor, src0Scalar, false, nullptr, src1Tensor.GetSize(), site);
}
#undef MPNPU_POWER_TPARAMS

// The sizes for whichever form the shapes say (a shape of one element is the scalar's): the larger
// shape's elements; typeIsInt (int32_t) does not change them.
template <typename Shape>
inline void GetPowerMaxMinTmpSize(const Shape& srcShape1, const Shape& srcShape2, const bool typeIsInt,
                                  const uint32_t typeSize, const bool isReuseSource, uint32_t& maxValue,
                                  uint32_t& minValue) {
    (void)typeIsInt, (void)isReuseSource;
    const uint64_t n1 = mpnpu::lib::shape_count(srcShape1), n2 = mpnpu::lib::shape_count(srcShape2);
    maxValue = mpnpu::lib::tmp_max(n1 > n2 ? n1 : n2, typeSize, mpnpu::kPowerNodes);
    minValue = mpnpu::lib::tmp_min(typeSize, mpnpu::kPowerNodes);
}
MPNPU_LIB_HOST_FACTOR(Power, mpnpu::kPowerNodes)

}  // namespace AscendC

#endif  // MPNPU_POWER_H
