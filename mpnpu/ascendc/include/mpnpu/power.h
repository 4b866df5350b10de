// Power, the math library's element-wise power: tensor ^ tensor, tensor ^ scalar and scalar ^ tensor,
// each with and without a caller-supplied temporary buffer and a count (default: the destination's
// size). Computed on the vector unit in float (integers exactly, by repeated squaring), its reads and
// write memchecked and traced on PIPE_V. The PowerConfig forms are not provided.
#ifndef MPNPU_POWER_H
#define MPNPU_POWER_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"

namespace mpnpu {
template <typename T>
inline T power_of(T base, T exp) {
    if constexpr (std::is_integral_v<T>) {
        if (exp < 0) return T(base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0));
        T r = 1;
        for (T b = base, e = exp; e; e >>= 1, b = T(b * b))
            if (e & 1) r = T(r * b);
        return r;
    } else {
        return from_float<T>(std::pow(to_float(base), to_float(exp)));
    }
}

// dst[i] = a(i) ^ b(i) for i < count, where a and b read a tensor's element or return a scalar.
template <typename T, class A, class B>
inline void power_apply(const AscendC::LocalTensor<T>& dst, uint32_t count, A a, B b, const Site& site) {
    if (count > dst.GetSize())
        api_error(site, "Power: count %u is more than the destination's %u elements", count, dst.GetSize());
    dst.mpnpu_touch('W', P_V, 0, count, site, "Power");
    T* d = dst.mpnpu_addr();
    for (uint32_t i = 0; i < count; ++i) d[i] = power_of<T>(a(i), b(i));
}

template <typename T>
inline auto reader(const AscendC::LocalTensor<T>& t, uint32_t count, const Site& site) {
    if (count > t.GetSize())
        api_error(site, "Power: count %u is more than a source's %u elements", count, t.GetSize());
    t.mpnpu_touch('R', P_V, 0, count, site, "Power");
    const T* p = t.mpnpu_addr();
    return [p](uint32_t i) { return p[i]; };
}
}  // namespace mpnpu

namespace AscendC {

template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const uint32_t calCount, MPNPU_SITE) {
    mpnpu::power_apply(dst, calCount, mpnpu::reader(src0, calCount, site), mpnpu::reader(src1, calCount, site), site);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, MPNPU_SITE) {
    Power<T, isReuseSource>(dst, src0, src1, dst.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>&, const uint32_t calCount, MPNPU_SITE) {
    Power<T, isReuseSource>(dst, src0, src1, calCount, site);
}

template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, const uint32_t calCount,
                  MPNPU_SITE) {
    const T s = scalar;
    mpnpu::power_apply(dst, calCount, mpnpu::reader(src, calCount, site), [s](uint32_t) { return s; }, site);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, MPNPU_SITE) {
    Power<T, isReuseSource>(dst, src, scalar, dst.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, const LocalTensor<uint8_t>&,
                  const uint32_t calCount, MPNPU_SITE) {
    Power<T, isReuseSource>(dst, src, scalar, calCount, site);
}

template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const T& scalar, const LocalTensor<T>& src, const uint32_t calCount,
                  MPNPU_SITE) {
    const T s = scalar;
    mpnpu::power_apply(dst, calCount, [s](uint32_t) { return s; }, mpnpu::reader(src, calCount, site), site);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const T& scalar, const LocalTensor<T>& src, MPNPU_SITE) {
    Power<T, isReuseSource>(dst, scalar, src, dst.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const T& scalar, const LocalTensor<T>& src, const LocalTensor<uint8_t>&,
                  const uint32_t calCount, MPNPU_SITE) {
    Power<T, isReuseSource>(dst, scalar, src, calCount, site);
}

}  // namespace AscendC

#endif  // MPNPU_POWER_H
