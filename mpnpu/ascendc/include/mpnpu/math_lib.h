// The library's element-wise one-source calls on the vector unit.
//
// Sigmoid (1 / (1 + e^-x)) and Sign (1, -1 or 0): half or float, a count (default: the destination's
// size) and, optionally, a caller-supplied temporary buffer, which is not modelled for these two.
// Computed in float, half results rounded once to nearest-even; Sign gives 0 for zeros and NaN. The
// source is read and the destination written, each memchecked and traced as one contiguous record on
// PIPE_V. Misuse is an API error at the kernel's line: a count past the end of either tensor,
// overlapping source and destination (the documentation does not allow it), another element type.
//
// Acos, Asin, Atan, Acosh, Asinh, Atanh, Cos, Sin, Tan, Cosh, Sinh, Tanh, Erf, Erfc, Floor, Ceil, Trunc,
// Frac, Log2, Log10 and their host
// helpers GetXxxMaxMinTmpSize / GetXxxTmpBufferFactorSize: see "the math library's one-source calls"
// below (the temporary buffer is checked and traced for these).
//
// Every count form also exists with exactly the documented signature (dst, src, const uint32_t), for
// kernels that pass Sigmoid<T, false> or Cos<T, false> along as a function pointer (see
// vector/engine.h, if_same).
#ifndef MPNPU_MATH_LIB_H
#define MPNPU_MATH_LIB_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

// -- the math library's one-source calls: Acos ... Tanh, Erf, Erfc, Floor, Ceil, Trunc, Frac, Log2, Log10 -----
//
// Each is computed element by element in double precision from the element's value and rounded once
// to float (a half result then once more to half); the documented value ranges (Acos/Asin [-1, 1],
// Cos/Sin/Tan within +-65504) are not checked: outside them the device's result is "invalid", here it
// is what the function gives (NaN, or the exact value). A count is documented as `calCount`; the forms
// without one cover the whole source tensor.
//
// The temporary buffer. The device's library works through intermediate values in scratch: the
// caller's sharedTmpBuffer, or space the framework reserves. mpnpu's model of it (our own; the pages
// give no numbers, only the host helpers below): the call converts its input to float a piece at a
// time, 4 bytes of scratch per element for a piece of at least one 256-byte repeat of the input. So
// the minimum is 4 x 256 / sizeof(T) bytes (512 for half, 256 for float), the most it uses is
// 4 x max(count, 256 / sizeof(T)) bytes, and GetXxxTmpBufferFactorSize says maxLiveNodeCount =
// 4 / sizeof(T), extraBuf = 0. A sharedTmpBuffer below the minimum is an API error (the pages: the
// space must not be smaller than GetXxxMaxMinTmpSize's minimum); the part the call uses is traced as
// written and then read on PIPE_V (its contents are left as they were: they are undefined after the
// call on the device). The framework's own scratch is not modelled.
//
// Operands: dst, src and sharedTmpBuffer in UB, 32-byte aligned; the count within both tensors;
// sharedTmpBuffer must not overlap dst or src (documented). The pages do not allow dst and src to
// overlap either, but public kernels call Floor and Log10 in place (dst is src); each element is read
// before it is written, so exactly the same start is accepted, and any other overlap is an API error.
// The source is read and the destination written on PIPE_V, one contiguous record each.
namespace mpnpu {
namespace mlib {

constexpr uint32_t kRepeatBytes = 256;

inline uint32_t tmp_min_bytes(uint32_t typeSize) {
    return (typeSize == 2 || typeSize == 4) ? 4u * (kRepeatBytes / typeSize) : 0u;
}
inline uint32_t tmp_max_bytes(uint64_t count, uint32_t typeSize) {
    if (typeSize != 2 && typeSize != 4) return 0;
    uint64_t elems = count > kRepeatBytes / typeSize ? count : kRepeatBytes / typeSize;
    uint64_t bytes = 4 * elems;
    return bytes > UINT32_MAX ? UINT32_MAX : uint32_t(bytes);
}
inline void tmp_factor(uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
    maxLiveNodeCount = (typeSize == 2 || typeSize == 4) ? 4u / typeSize : 0u;
    extraBuf = 0;
}

struct Acos { static constexpr const char* name = "Acos"; static double f(double x) { return std::acos(x); } };
struct Asin { static constexpr const char* name = "Asin"; static double f(double x) { return std::asin(x); } };
struct Atan { static constexpr const char* name = "Atan"; static double f(double x) { return std::atan(x); } };
struct Cos { static constexpr const char* name = "Cos"; static double f(double x) { return std::cos(x); } };
struct Sin { static constexpr const char* name = "Sin"; static double f(double x) { return std::sin(x); } };
struct Tan { static constexpr const char* name = "Tan"; static double f(double x) { return std::tan(x); } };
struct Cosh { static constexpr const char* name = "Cosh"; static double f(double x) { return std::cosh(x); } };
struct Sinh { static constexpr const char* name = "Sinh"; static double f(double x) { return std::sinh(x); } };
struct Tanh { static constexpr const char* name = "Tanh"; static double f(double x) { return std::tanh(x); } };
struct Erf { static constexpr const char* name = "Erf"; static double f(double x) { return std::erf(x); } };
struct Erfc { static constexpr const char* name = "Erfc"; static double f(double x) { return std::erfc(x); } };
struct Floor { static constexpr const char* name = "Floor"; static double f(double x) { return std::floor(x); } };
struct Log2 { static constexpr const char* name = "Log2"; static double f(double x) { return std::log2(x); } };
struct Acosh { static constexpr const char* name = "Acosh"; static double f(double x) { return std::acosh(x); } };
struct Asinh { static constexpr const char* name = "Asinh"; static double f(double x) { return std::asinh(x); } };
struct Atanh { static constexpr const char* name = "Atanh"; static double f(double x) { return std::atanh(x); } };
struct Ceil { static constexpr const char* name = "Ceil"; static double f(double x) { return std::ceil(x); } };
struct Trunc { static constexpr const char* name = "Trunc"; static double f(double x) { return std::trunc(x); } };
// the fractional part, with the sign of x (Frac(-258.41888) = -0.41888...)
struct Frac { static constexpr const char* name = "Frac"; static double f(double x) { return x - std::trunc(x); } };
struct Log10 { static constexpr const char* name = "Log10"; static double f(double x) { return std::log10(x); } };

// ClampMin / ClampMax: src with the values below (above) the call's scalar, ``bound``, replaced by it.
struct ClampMin {
    static constexpr const char* name = "ClampMin";
    double bound;
    double f(double x) const { return x < bound ? bound : x; }
};
struct ClampMax {
    static constexpr const char* name = "ClampMax";
    double bound;
    double f(double x) const { return x > bound ? bound : x; }
};

// tmp: the caller's sharedTmpBuffer, or null (the framework's scratch). in_place: whether dst may be src.
// op: the function (a call's own parameters, such as ClampMin's bound, are its members).
template <class Op, typename T, bool in_place = true>
inline void unary(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                  const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count, const Site& site, const Op& op = Op{}) {
    const char* name = Op::name;
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        vec::check_operand(dst, 32, site, name, "dst");
        vec::check_operand(src, 32, site, name, "src");
        vec::check_count(dst, count, site, name, "dst");
        vec::check_count(src, count, site, name, "src");
        const uint64_t bytes = count * sizeof(T);
        uint64_t used = 0;
        if (tmp) {
            vec::check_operand(*tmp, 32, site, name, "sharedTmpBuffer");
            const uint32_t have = tmp->GetSize(), need = tmp_min_bytes(sizeof(T));
            if (have < need)
                api_error(site,
                          "%s: sharedTmpBuffer has %u bytes, fewer than the %u it needs for %s (the minimum "
                          "Get%sMaxMinTmpSize gives)",
                          name, have, need, vec::type_name<T>(), name);
            const uint32_t most = tmp_max_bytes(count, sizeof(T));
            used = count ? (have < most ? have : most) : 0;
            if (vec::overlaps(tmp->mpnpu_addr(), used, src.mpnpu_addr(), bytes))
                api_error(site, "%s: sharedTmpBuffer overlaps src (the call takes separate operands)", name);
            if (vec::overlaps(tmp->mpnpu_addr(), used, dst.mpnpu_addr(), bytes))
                api_error(site, "%s: sharedTmpBuffer overlaps dst (the call takes separate operands)", name);
        }
        if (count == 0) return;
        const T* in = src.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        if (vec::overlaps(in, bytes, out, bytes)) {
            if (!in_place)
                api_error(site, "%s: dst and src overlap (the call takes separate operands)", name);
            if (static_cast<const void*>(in) != static_cast<const void*>(out))
                api_error(site, "%s: dst and src overlap without being the same tensor (the call takes separate "
                          "operands, or the same one in place)", name);
        }
        src.mpnpu_touch('R', P_V, 0, count, site, name);
        if (used) {
            tmp->mpnpu_touch_bytes('W', P_V, 0, used, site, name);
            tmp->mpnpu_touch_bytes('R', P_V, 0, used, site, name);
        }
        dst.mpnpu_touch('W', P_V, 0, count, site, name);
        for (uint64_t i = 0; i < count; ++i)
            out[i] = from_float<T>(static_cast<float>(op.f(to_float(in[i]))));
    }
}

}  // namespace mlib

// Sigmoid and Sign: computed in float, and dst and src must not overlap at all.
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
    mlib::unary<Op, T, false>(dst, src, nullptr, count, site);
}
}  // namespace mpnpu

// The four documented forms, one macro each, and the count form once more with exactly the documented
// signature (dst, src, const uint32_t), for kernels that pass NAME<T, false> as a function pointer.
#define MPNPU_MLIB_TMP_COUNT(NAME)                                                                                 \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, MPNPU_SITE) {           \
        mpnpu::mlib::unary<mpnpu::mlib::NAME>(dstTensor, srcTensor, &sharedTmpBuffer, calCount, site);             \
    }
#define MPNPU_MLIB_TMP_WHOLE(NAME)                                                                                 \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {                                    \
        mpnpu::mlib::unary<mpnpu::mlib::NAME>(dstTensor, srcTensor, &sharedTmpBuffer, srcTensor.GetSize(), site);  \
    }
#define MPNPU_MLIB_COUNT(NAME)                                                                                     \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,    \
                     MPNPU_SITE) {                                                                                 \
        mpnpu::mlib::unary<mpnpu::mlib::NAME>(dstTensor, srcTensor, nullptr, calCount, site);                      \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false, typename C, mpnpu::vec::if_same<C, uint32_t> = 0>            \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, C calCount) {               \
        mpnpu::mlib::unary<mpnpu::mlib::NAME>(dstTensor, srcTensor, nullptr, calCount, MPNPU_FPTR_SITE(#NAME));    \
    }
#define MPNPU_MLIB_WHOLE(NAME)                                                                                     \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, MPNPU_SITE) {               \
        mpnpu::mlib::unary<mpnpu::mlib::NAME>(dstTensor, srcTensor, nullptr, srcTensor.GetSize(), site);           \
    }
// The host helpers (they run anywhere): srcShape is an AscendC::TensorShape (ge::Shape), or anything
// with GetShapeSize(); isReuseSource does not change the sizes.
#define MPNPU_MLIB_HOST(NAME)                                                                                      \
    template <typename Shape>                                                                                      \
    inline void Get##NAME##MaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource, \
                                         uint32_t& maxValue, uint32_t& minValue) {                                 \
        (void)isReuseSource;                                                                                       \
        const int64_t n = static_cast<int64_t>(srcShape.GetShapeSize());                                           \
        maxValue = mpnpu::mlib::tmp_max_bytes(n > 0 ? uint64_t(n) : 0u, typeSize);                                 \
        minValue = mpnpu::mlib::tmp_min_bytes(typeSize);                                                           \
    }                                                                                                              \
    inline void Get##NAME##TmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount,                \
                                               uint32_t& extraBuf) {                                               \
        mpnpu::mlib::tmp_factor(typeSize, maxLiveNodeCount, extraBuf);                                             \
    }
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

#define MPNPU_MLIB_ALL_FORMS(NAME) \
    MPNPU_MLIB_TMP_COUNT(NAME)     \
    MPNPU_MLIB_TMP_WHOLE(NAME)     \
    MPNPU_MLIB_COUNT(NAME)         \
    MPNPU_MLIB_WHOLE(NAME)         \
    MPNPU_MLIB_HOST(NAME)

// ClampMin / ClampMax(dst, src, [sharedTmpBuffer,] scalar, calCount), and their host helpers.
#define MPNPU_MLIB_CLAMP(NAME)                                                                                     \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const T scalar, const uint32_t calCount,         \
                     MPNPU_SITE) {                                                                                 \
        mpnpu::mlib::unary(dstTensor, srcTensor, &sharedTmpBuffer, calCount, site,                                 \
                           mpnpu::mlib::NAME{double(float(scalar))});                                              \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const T scalar,             \
                     const uint32_t calCount, MPNPU_SITE) {                                                        \
        mpnpu::mlib::unary(dstTensor, srcTensor, nullptr, calCount, site, mpnpu::mlib::NAME{double(float(scalar))}); \
    }                                                                                                              \
    MPNPU_MLIB_HOST(NAME)

namespace AscendC {
MPNPU_MLIB_CLAMP(ClampMin)
MPNPU_MLIB_CLAMP(ClampMax)
MPNPU_MLIB_HOST(Clamp)  // (the pages' one helper for the Clamp family: GetClampMaxMinTmpSize)
MPNPU_LIB_UNARY(Sigmoid, mpnpu::LibSigmoid)
MPNPU_LIB_UNARY(Sign, mpnpu::LibSign)
// (their host helpers give the library's common sizes; the buffer itself is not modelled for these two)
MPNPU_MLIB_HOST(Sigmoid)
MPNPU_MLIB_HOST(Sign)
MPNPU_MLIB_ALL_FORMS(Acos)
MPNPU_MLIB_ALL_FORMS(Asin)
MPNPU_MLIB_ALL_FORMS(Atan)
MPNPU_MLIB_ALL_FORMS(Cos)
MPNPU_MLIB_ALL_FORMS(Sin)
MPNPU_MLIB_ALL_FORMS(Tan)
MPNPU_MLIB_ALL_FORMS(Cosh)
MPNPU_MLIB_ALL_FORMS(Sinh)
MPNPU_MLIB_ALL_FORMS(Tanh)
MPNPU_MLIB_ALL_FORMS(Erf)
MPNPU_MLIB_ALL_FORMS(Erfc)
MPNPU_MLIB_ALL_FORMS(Log2)
MPNPU_MLIB_ALL_FORMS(Acosh)
MPNPU_MLIB_ALL_FORMS(Asinh)
MPNPU_MLIB_ALL_FORMS(Atanh)
MPNPU_MLIB_ALL_FORMS(Trunc)
MPNPU_MLIB_ALL_FORMS(Frac)
// Ceil: only the two count forms are documented.
MPNPU_MLIB_TMP_COUNT(Ceil)
MPNPU_MLIB_COUNT(Ceil)
MPNPU_MLIB_HOST(Ceil)
// Floor: only the two count forms are documented.
MPNPU_MLIB_TMP_COUNT(Floor)
MPNPU_MLIB_COUNT(Floor)
MPNPU_MLIB_HOST(Floor)
// Log10: the count and whole-tensor forms, without a temporary buffer (as documented).
MPNPU_MLIB_COUNT(Log10)
MPNPU_MLIB_WHOLE(Log10)
MPNPU_MLIB_HOST(Log10)
// Log itself (the natural logarithm) is the vector unit's Ln (vector/unary.h); its host helpers are here.
MPNPU_MLIB_HOST(Log)
}  // namespace AscendC

#endif  // MPNPU_MATH_LIB_H
