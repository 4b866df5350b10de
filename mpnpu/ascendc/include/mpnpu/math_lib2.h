// More of the math library's element-wise calls with a temporary buffer: Fmod, Xor, the high-level
// Exp (with a Taylor expansion level) and the high-level Axpy, and their host helpers.
//
// What mpnpu computes:
//   Fmod(a, b)  = a - Trunc(a / b) * b, exactly (std::fmod of the float values), rounded to T;
//                 half or float. FmodConfig's algorithm and iteration count are accepted: the exact
//                 remainder is what either converges to.
//   Xor(a, b)   = a ^ b, bit for bit; int16_t or uint16_t.
//   Exp<T, L>   = e^x when L is 0; otherwise e^floor(x) * (1 + sum_{i=1..L} f^i / i!) with f = x -
//                 floor(x) (the documented split into integer and fractional part, the series summed
//                 in float term by term as the unit would); half or float.
//   Axpy(d, s, a) = fl(fl(s * a) + d): the documented Muls then Add, each rounded to float; dst half
//                 with src half, float with float, or float with half (the mixed form).
// Everything else (doubles in the transcendental parts) is rounded once to float, then to T.
//
// Operands (lib_elementwise.h does the checks and the PIPE_V tracing): UB tensors starting 32-byte
// aligned, the count within each, dst apart from the sources (documented for all four), and a
// caller-supplied sharedTmpBuffer at least the model's minimum (1 float per element for Xor, Exp and
// Axpy, 2 for Fmod: lib_elementwise.h) and overlapping nothing. Axpy reads dst as well as writing it.
#ifndef MPNPU_MATH_LIB2_H
#define MPNPU_MATH_LIB2_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "lib_elementwise.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

constexpr uint32_t FMOD_ITERATION_NUM_MAX = 11;
enum class FmodAlgo {
    NORMAL = 0,
    ITERATION_COMPENSATION = 1,
};
struct FmodConfig {
    FmodAlgo algo = FmodAlgo::NORMAL;
    uint32_t iterationNum = FMOD_ITERATION_NUM_MAX;
};
constexpr FmodConfig DEFAULT_FMOD_CONFIG = {};

}  // namespace AscendC

namespace mpnpu {
namespace mlib2 {

constexpr uint32_t kFmodNodes = 2;
constexpr uint32_t kOneNode = 1;

template <typename T>
inline void fmod(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                 const AscendC::LocalTensor<T>& src1, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count,
                 const Site& site) {
    const char* name = "Fmod";
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        if (lib::prepare(name, lib::DstReuse::none, dst, count, tmp, sizeof(T), kFmodNodes, site, src0, "src0Tensor",
                         src1, "src1Tensor"))
            lib::map2(dst, src0, src1, count, [](double a, double b) { return std::fmod(a, b); });
    }
}

template <typename T>
inline void xor_(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                 const AscendC::LocalTensor<T>& src1, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count,
                 const Site& site) {
    const char* name = "Xor";
    vec::need_type<T>(vec::one_of<T, int16_t, uint16_t>, site, name, "int16_t, uint16_t");
    if constexpr (vec::one_of<T, int16_t, uint16_t>) {
        if (!lib::prepare(name, lib::DstReuse::none, dst, count, tmp, sizeof(T), kOneNode, site, src0, "src0Tensor",
                          src1, "src1Tensor"))
            return;
        const T* a = src0.mpnpu_addr();
        const T* b = src1.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        for (uint64_t i = 0; i < count; ++i) out[i] = T(a[i] ^ b[i]);
    }
}

// e^x by the documented split: e^floor(x) times the Taylor series of e^f to `level` terms past 1.
inline double exp_taylor(double x, unsigned level) {
    if (level == 0) return std::exp(x);
    const float xa = std::floor(float(x));
    const float f = float(x) - xa;
    float term = 1.0f, sum = 1.0f;
    for (unsigned i = 1; i <= level; ++i) {
        term *= f / float(i);
        sum += term;
    }
    return double(float(std::exp(double(xa)))) * double(sum);
}

template <typename T, unsigned level>
inline void exp(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count, const Site& site) {
    const char* name = "Exp";
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        if (lib::prepare(name, lib::DstReuse::none, dst, count, tmp, sizeof(T), kOneNode, site, src, "src"))
            lib::map1(dst, src, count, [](double x) { return exp_taylor(x, level); });
    }
}

template <typename T, typename U>
constexpr bool kAxpyTypes = (std::is_same_v<T, half> && std::is_same_v<U, half>) ||
                            (std::is_same_v<T, float> && std::is_same_v<U, float>) ||
                            (std::is_same_v<T, float> && std::is_same_v<U, half>);

template <typename T, typename U>
inline void axpy(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src, U scalar,
                 const AscendC::LocalTensor<uint8_t>& tmp, uint64_t count, const Site& site) {
    const char* name = "Axpy";
    if (!kAxpyTypes<T, U>)
        api_error(site, "Axpy: dst %s with src %s is not supported (half/half, float/float, float dst with half src)",
                  vec::type_name<T>(), vec::type_name<U>());
    if constexpr (kAxpyTypes<T, U>) {
        if (!lib::prepare(name, lib::DstReuse::accumulate, dst, count, &tmp, sizeof(U), kOneNode, site, src, "src"))
            return;
        const float a = to_float(scalar);
        const U* in = src.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        for (uint64_t i = 0; i < count; ++i) {
            const float product = to_float(in[i]) * a;  // Muls, rounded to float
            out[i] = from_float<T>(product + to_float(out[i]));
        }
    }
}

}  // namespace mlib2
}  // namespace mpnpu

namespace AscendC {

// -- Fmod -----------------------------------------------------------------------------------------------
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::fmod(dstTensor, src0Tensor, src1Tensor, &sharedTmpBuffer, calCount, site);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    mpnpu::mlib2::fmod(dstTensor, src0Tensor, src1Tensor, &sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::fmod(dstTensor, src0Tensor, src1Tensor, nullptr, calCount, site);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 MPNPU_SITE) {
    mpnpu::mlib2::fmod(dstTensor, src0Tensor, src1Tensor, nullptr, src0Tensor.GetSize(), site);
}
MPNPU_LIB_HOST_MAXMIN(Fmod, mpnpu::mlib2::kFmodNodes)
MPNPU_LIB_HOST_FACTOR(Fmod, mpnpu::mlib2::kFmodNodes)

// -- Xor ------------------------------------------------------------------------------------------------
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::xor_(dstTensor, src0Tensor, src1Tensor, &sharedTmpBuffer, calCount, site);
}
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    mpnpu::mlib2::xor_(dstTensor, src0Tensor, src1Tensor, &sharedTmpBuffer, src0Tensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::xor_(dstTensor, src0Tensor, src1Tensor, nullptr, calCount, site);
}
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                MPNPU_SITE) {
    mpnpu::mlib2::xor_(dstTensor, src0Tensor, src1Tensor, nullptr, src0Tensor.GetSize(), site);
}
MPNPU_LIB_HOST_MAXMIN(Xor, mpnpu::mlib2::kOneNode)
MPNPU_LIB_HOST_FACTOR(Xor, mpnpu::mlib2::kOneNode)

// -- Exp (high level: the Taylor-level template parameter tells it from the vector unit's Exp) ----------
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::exp<T, taylorExpandLevel>(dstLocal, srcLocal, &sharedTmpBuffer, calCount, site);
}
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::exp<T, taylorExpandLevel>(dstLocal, srcLocal, nullptr, calCount, site);
}
// (the page's helper returns whether it could give the sizes: always, here)
template <typename Shape>
inline bool GetExpMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    maxValue = mpnpu::lib::tmp_max(mpnpu::lib::shape_count(srcShape), typeSize, mpnpu::mlib2::kOneNode);
    minValue = mpnpu::lib::tmp_min(typeSize, mpnpu::mlib2::kOneNode);
    return true;
}
MPNPU_LIB_HOST_FACTOR(Exp, mpnpu::mlib2::kOneNode)

// -- Axpy (high level: the form with a sharedTmpBuffer; the vector unit's Axpy is vector/scalar.h) -----
template <typename T, typename U, bool isReuseSource = false>
inline void Axpy(const LocalTensor<T>& dstTensor, const LocalTensor<U>& srcTensor, const U scalarValue,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, MPNPU_SITE) {
    mpnpu::mlib2::axpy(dstTensor, srcTensor, scalarValue, sharedTmpBuffer, calCount, site);
}
MPNPU_LIB_HOST_MAXMIN(Axpy, mpnpu::mlib2::kOneNode)
MPNPU_LIB_HOST_FACTOR(Axpy, mpnpu::mlib2::kOneNode)

}  // namespace AscendC

#endif  // MPNPU_MATH_LIB2_H
