// One-source element-wise instructions: Exp, Ln, Abs, Sqrt, Rsqrt, Reciprocal, Relu, Not.
//
// Count form (dst, src, count) and the level-0 forms (bit mask or lane count, repeatTime,
// UnaryRepeatParams). The transcendental ones are computed in float through <cmath> (half results
// rounded once to nearest-even); the precision configs of the newest product are accepted and
// all compute the same way.
#ifndef MPNPU_VECTOR_UNARY_H
#define MPNPU_VECTOR_UNARY_H

#include <cmath>
#include <cstdint>

#include "../rt.h"
#include "../tensor.h"
#include "engine.h"
#include "mask.h"
#include "params.h"

namespace mpnpu {
namespace vec {

struct FloatUnary {
    template <typename T>
    static constexpr bool ok = one_of<T, half, float>;
    static constexpr const char* types = "half, float";
};
struct OpExp : FloatUnary {
    template <typename C>
    static C f(C x) { return std::exp(x); }
};
struct OpLn : FloatUnary {
    template <typename C>
    static C f(C x) { return std::log(x); }
};
struct OpAbs : FloatUnary {
    template <typename C>
    static C f(C x) { return std::fabs(x); }
};
struct OpSqrt : FloatUnary {
    template <typename C>
    static C f(C x) { return std::sqrt(x); }
};
struct OpRsqrt : FloatUnary {
    template <typename C>
    static C f(C x) { return C(1) / std::sqrt(x); }
};
struct OpReciprocal : FloatUnary {
    template <typename C>
    static C f(C x) { return C(1) / x; }
};
struct OpRelu {
    template <typename T>
    static constexpr bool ok = one_of<T, half, int32_t, float>;
    static constexpr const char* types = "half, int32_t, float";
    template <typename C>
    static C f(C x) { return x > C(0) ? x : C(0); }
};
struct OpNot {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, uint16_t>;
    static constexpr const char* types = "int16_t, uint16_t";
    template <typename C>
    static C f(C x) { return ~x; }
};

template <class Op, typename T>
inline void unary_apply(const char* name, const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                        const AscendC::LocalTensor<T>& src, const Geo& gs, const Site& site) {
    unary(name, p, dst, gd, src, gs, site, [](const T& x) { return from_calc<T>(Op::f(to_calc(x))); });
}

template <class Op, typename T, bool isSetMask>
inline void unary_count(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        int64_t count, const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        if (isSetMask && count > 0) {
            check_count(dst, uint64_t(count), site, name, "dst");
            check_count(src, uint64_t(count), site, name, "src");
        }
        constexpr uint32_t lanes = lanes_for(sizeof(T));
        Plan p = plan_count<isSetMask>(count, lanes, site, name);
        Geo g = contiguous(lanes, sizeof(T));
        unary_apply<Op>(name, p, dst, g, src, g, site);
    }
}

template <class Op, typename T, bool isSetMask>
inline void unary_bits(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const uint64_t mask[], int64_t repeat, const AscendC::UnaryRepeatParams& rp,
                       const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        Plan p = plan_level0_bits<isSetMask>(mask, repeat, lanes_for(sizeof(T)), site, name);
        unary_apply<Op>(name, p, dst, geo(rp.dstBlkStride, rp.dstRepStride), src, geo(rp.srcBlkStride, rp.srcRepStride),
                        site);
    }
}

template <class Op, typename T, bool isSetMask>
inline void unary_len(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      uint64_t mask, int64_t repeat, const AscendC::UnaryRepeatParams& rp, const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        Plan p = plan_level0_len<isSetMask>(mask, repeat, lanes_for(sizeof(T)), site, name);
        unary_apply<Op>(name, p, dst, geo(rp.dstBlkStride, rp.dstRepStride), src, geo(rp.srcBlkStride, rp.srcRepStride),
                        site);
    }
}

}  // namespace vec
}  // namespace mpnpu

#define MPNPU_VEC_UNARY_LEVEL0(NAME, OP, EXTRA_TPARAM)                                                            \
    template <typename T, bool isSetMask = true EXTRA_TPARAM>                                                     \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                 \
                     const int64_t repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {               \
        mpnpu::vec::unary_bits<OP, T, isSetMask>(#NAME, dst, src, mask, repeatTime, repeatParams, site);          \
    }                                                                                                             \
    template <typename T, bool isSetMask = true EXTRA_TPARAM>                                                     \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask,                   \
                     const int64_t repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {               \
        mpnpu::vec::unary_len<OP, T, isSetMask>(#NAME, dst, src, mask, repeatTime, repeatParams, site);           \
    }

#define MPNPU_VEC_UNARY(NAME, OP)                                                                                 \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, MPNPU_SITE) {    \
        mpnpu::vec::unary_count<OP, T, true>(#NAME, dst, src, count, site);                                       \
    }                                                                                                             \
    MPNPU_VEC_UNARY_LEVEL0(NAME, OP, )

// The calls that take a precision config: template <typename T, const XConfig& config = DEFAULT>.
#define MPNPU_VEC_UNARY_CFG(NAME, OP, CFG, DEFAULT)                                                               \
    template <typename T, const CFG& config = DEFAULT>                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, MPNPU_SITE) {    \
        mpnpu::vec::unary_count<OP, T, true>(#NAME, dst, src, count, site);                                       \
    }                                                                                                             \
    MPNPU_VEC_UNARY_LEVEL0(NAME, OP, MPNPU_VEC_COMMA const CFG& config = DEFAULT)

#define MPNPU_VEC_COMMA ,

namespace AscendC {

MPNPU_VEC_UNARY_CFG(Exp, mpnpu::vec::OpExp, ExpConfig, DEFAULT_EXP_CONFIG)
MPNPU_VEC_UNARY_CFG(Ln, mpnpu::vec::OpLn, LnConfig, DEFAULT_LN_CONFIG)
MPNPU_VEC_UNARY_CFG(Sqrt, mpnpu::vec::OpSqrt, SqrtConfig, DEFAULT_SQRT_CONFIG)
MPNPU_VEC_UNARY_CFG(Rsqrt, mpnpu::vec::OpRsqrt, RsqrtConfig, DEFAULT_RSQRT_CONFIG)
MPNPU_VEC_UNARY_CFG(Reciprocal, mpnpu::vec::OpReciprocal, ReciprocalConfig, DEFAULT_RECIPROCAL_CONFIG)
MPNPU_VEC_UNARY(Abs, mpnpu::vec::OpAbs)
MPNPU_VEC_UNARY(Relu, mpnpu::vec::OpRelu)
MPNPU_VEC_UNARY(Not, mpnpu::vec::OpNot)

}  // namespace AscendC

#endif  // MPNPU_VECTOR_UNARY_H
