// The library's element-wise calls on the vector unit: Sigmoid (1 / (1 + e^-x)) and Sign (1, -1 or 0).
// Each takes half or float, a count (default: the destination's size) and, optionally, a
// caller-supplied temporary buffer, which is scratch on the device and not modelled here. Computed
// in float, half results rounded once to nearest-even; Sign gives 0 for zeros and NaN. The source is
// read and the destination written, each memchecked and traced as one contiguous record on PIPE_V.
// Misuse is an API error at the kernel's line: a count past the end of either tensor, overlapping
// source and destination (the documentation does not allow it), another element type.
//
// The count form also exists with exactly the documented signature (dst, src, const uint32_t), for
// kernels that pass Sigmoid<T, false> along as a function pointer (see vector/engine.h, if_same).
#ifndef MPNPU_MATH_LIB_H
#define MPNPU_MATH_LIB_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace mpnpu {

struct LibSigmoid {
    static constexpr const char* name = "Sigmoid";
    static float f(float x) { return 1.0f / (1.0f + std::exp(-x)); }
};
struct LibSign {
    static constexpr const char* name = "Sign";
    static float f(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
};

template <class Op, typename T>
inline void lib_unary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t count,
                      const Site& site) {
    const char* name = Op::name;
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        vec::check_operand(dst, 32, site, name, "dst");
        vec::check_operand(src, 32, site, name, "src");
        vec::check_count(dst, count, site, name, "dst");
        vec::check_count(src, count, site, name, "src");
        if (count == 0) return;
        const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
        uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
        const uint64_t bytes = count * sizeof(T);
        if (d < s + bytes && s < d + bytes)
            api_error(site, "%s: dst and src overlap (the call takes separate operands)", name);
        src.mpnpu_touch('R', P_V, 0, count, site, name);
        dst.mpnpu_touch('W', P_V, 0, count, site, name);
        const T* in = src.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        for (uint64_t i = 0; i < count; ++i) out[i] = from_float<T>(Op::f(to_float(in[i])));
    }
}

}  // namespace mpnpu

#define MPNPU_LIB_UNARY(NAME, OP)                                                                                  \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, MPNPU_SITE) {           \
        (void)sharedTmpBuffer;                                                                                     \
        mpnpu::lib_unary<OP>(dstTensor, srcTensor, calCount, site);                                                \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {                                    \
        (void)sharedTmpBuffer;                                                                                     \
        mpnpu::lib_unary<OP>(dstTensor, srcTensor, dstTensor.GetSize(), site);                                     \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,    \
                     MPNPU_SITE) {                                                                                 \
        mpnpu::lib_unary<OP>(dstTensor, srcTensor, calCount, site);                                                \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, MPNPU_SITE) {               \
        mpnpu::lib_unary<OP>(dstTensor, srcTensor, dstTensor.GetSize(), site);                                     \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false, typename C, mpnpu::vec::if_same<C, uint32_t> = 0>            \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, C calCount) {               \
        mpnpu::lib_unary<OP>(dstTensor, srcTensor, calCount, MPNPU_FPTR_SITE(#NAME));                              \
    }

namespace AscendC {
MPNPU_LIB_UNARY(Sigmoid, mpnpu::LibSigmoid)
MPNPU_LIB_UNARY(Sign, mpnpu::LibSign)
}  // namespace AscendC

#endif  // MPNPU_MATH_LIB_H
