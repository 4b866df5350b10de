// Tensor-scalar instructions: Adds, Muls, Maxs, Mins, LeakyRelu, and Axpy (dst += scalar * src).
//
// Count form (dst, src, scalar, count; isSetMask where documented) and the level-0 forms with
// UnaryRepeatParams. The scalar has the tensor's element type; the documented second signature
// with a separate scalar type U (which must equal T) is provided too.
#ifndef MPNPU_VECTOR_SCALAR_H
#define MPNPU_VECTOR_SCALAR_H

#include <cstdint>
#include <type_traits>

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"
#include "mask.h"
#include "params.h"

namespace mpnpu {
namespace vec {

struct OpAdds {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, half, bfloat16_t, int32_t, float>;
    static constexpr const char* types = "int16_t, half, bfloat16_t, int32_t, float";
    template <typename C>
    static C f(C x, C s) { return x + s; }
    static constexpr char arith = '+';  // a plain IEEE operation on float: float rows may vectorise it
};
struct OpMuls : OpAdds {
    template <typename C>
    static C f(C x, C s) { return x * s; }
    static constexpr char arith = '*';
};
struct OpMaxs : OpAdds {
    template <typename C>
    static C f(C x, C s) { return x > s ? x : s; }
    static constexpr char arith = 'M';
};
struct OpMins : OpAdds {
    template <typename C>
    static C f(C x, C s) { return x < s ? x : s; }
    static constexpr char arith = 'm';
};
struct OpLeakyRelu {
    template <typename T>
    static constexpr bool ok = one_of<T, half, float>;
    static constexpr const char* types = "half, float";
    template <typename C>
    static C f(C x, C s) { return x >= C(0) ? x : x * s; }
    static constexpr char arith = 'L';
};

// Shifts by a scalar count of bits: logical for unsigned types, arithmetic for signed ones.
struct OpShiftRight {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, uint16_t, int32_t, uint32_t>;
    static constexpr const char* types = "int16_t, uint16_t, int32_t, uint32_t";
    template <typename C>
    static C f(C x, C s) { return s >= C(sizeof(C) * 8) || s < C(0) ? C(x < C(0) ? -1 : 0) : C(x >> s); }
};
struct OpShiftLeft : OpShiftRight {
    template <typename C>
    static C f(C x, C s) {
        using U = std::make_unsigned_t<C>;
        return s >= C(sizeof(C) * 8) || s < C(0) ? C(0) : C(U(x) << U(s));
    }
};

template <class Op, typename T>
inline void scalar_apply(const char* name, const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                         const AscendC::LocalTensor<T>& src, const Geo& gs, const T& scalar, const Site& site) {
    calc_t<T> s = to_calc(scalar);
    const auto lane = [s](const T& x) { return from_calc<T>(Op::f(to_calc(x), s)); };
#ifdef MPNPU_SIMD_X86
    if constexpr (std::is_same_v<T, float> && arith_of<Op>::value != 0) {
        if (has_avx()) {  // the two-source row, with the scalar as a block of 8 lanes
            const float block[8] = {s, s, s, s, s, s, s, s};
            unary(name, p, dst, gd, src, gs, site, lane, [&block](uint8_t* d, const uint8_t* x, uint32_t n) {
                binary_row_avx<arith_of<Op>::value>(d, x, reinterpret_cast<const uint8_t*>(block), n, true);
            });
            return;
        }
    }
#endif
    unary(name, p, dst, gd, src, gs, site, lane);
}

template <class Op, typename T, bool isSetMask>
inline void scalar_count(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                         const T& scalar, int64_t count, const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        if (isSetMask && count > 0) {
            check_count(dst, uint64_t(count), site, name, "dst");
            check_count(src, uint64_t(count), site, name, "src");
        }
        constexpr uint32_t lanes = lanes_for(sizeof(T));
        Plan p = plan_count<isSetMask>(count, lanes, site, name);
        Geo g = contiguous(lanes, sizeof(T));
        scalar_apply<Op>(name, p, dst, g, src, g, scalar, site);
    }
}

template <class Op, typename T, bool isSetMask>
inline void scalar_bits(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const T& scalar, const uint64_t mask[], int64_t repeat, const AscendC::UnaryRepeatParams& rp,
                        const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        Plan p = plan_level0_bits<isSetMask>(mask, repeat, lanes_for(sizeof(T)), site, name);
        scalar_apply<Op>(name, p, dst, geo(rp.dstBlkStride, rp.dstRepStride), src,
                         geo(rp.srcBlkStride, rp.srcRepStride), scalar, site);
    }
}

template <class Op, typename T, bool isSetMask>
inline void scalar_len(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const T& scalar, uint64_t mask, int64_t repeat, const AscendC::UnaryRepeatParams& rp,
                       const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        Plan p = plan_level0_len<isSetMask>(mask, repeat, lanes_for(sizeof(T)), site, name);
        scalar_apply<Op>(name, p, dst, geo(rp.dstBlkStride, rp.dstRepStride), src,
                         geo(rp.srcBlkStride, rp.srcRepStride), scalar, site);
    }
}

// Axpy: dst = scalar * src + dst (T dst, U src and scalar): half/half, float/float, and a half
// source into a float destination (64 lanes a repeat). dst is read as well as written.
template <typename T, typename U>
inline void axpy_check(const Site& site) {
    bool ok = (std::is_same_v<T, half> && std::is_same_v<U, half>) ||
              (std::is_same_v<T, float> && std::is_same_v<U, float>) ||
              (std::is_same_v<T, float> && std::is_same_v<U, half>);
    if (!ok)
        api_error(site, "Axpy: dst %s with src %s is not supported (half/half, float/float, float dst with half src)",
                  type_name<T>(), type_name<U>());
}

template <typename T, typename U>
inline void axpy_apply(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                       const AscendC::LocalTensor<U>& src, const Geo& gs, const U& scalar, const Site& site) {
    const char* name = "Axpy";
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (p.none()) return;
    Hull hd = hull_of(p, sizeof(T), gd);
    touch(src, 'R', hull_of(p, sizeof(U), gs), site, name);
    touch(dst, 'R', hd, site, name);
    touch(dst, 'W', hd, site, name);
    float s = float(scalar);
    Lane ls = lane_of(src, gs), lD = lane_of(dst, gd);
    run<T>(p, lD, [&](uint64_t r, uint32_t j) {
        return from_calc<T>(mul_then_add(s, float(ld<U>(ls.at(r, j))), float(ld<T>(lD.at(r, j)))));
    });
}

constexpr uint32_t axpy_lanes(uint32_t dst_size, uint32_t src_size) {
    return lanes_for(dst_size > src_size ? dst_size : src_size);
}

// dst[i] = first + i * diff for i < count (in float for half and float): ArithProgression and Arange.
template <typename T>
inline void progression(const AscendC::LocalTensor<T>& dst, const T first, const T diff, const int32_t count,
                        const Site& site, const char* name) {
    if (count < 0 || uint64_t(count) > dst.GetSize())
        api_error(site, "%s: count %d is outside the destination's %llu elements", name, count,
                  static_cast<unsigned long long>(dst.GetSize()));
    dst.mpnpu_touch('W', P_V, 0, uint64_t(count), site, name);
    T* d = dst.mpnpu_addr();
    for (int32_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<T>) {
            d[i] = T(first + T(i) * diff);
        } else {
            d[i] = from_float<T>(to_float(first) + float(i) * to_float(diff));
        }
    }
}

}  // namespace vec
}  // namespace mpnpu

#define MPNPU_VEC_SCALAR_LEVEL0(NAME, OP, TPARAMS, SCALAR_T)                                                     \
    template <TPARAMS>                                                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const SCALAR_T& scalarValue,           \
                     const uint64_t mask[], const int64_t repeatTime, const UnaryRepeatParams& repeatParams,      \
                     MPNPU_SITE) {                                                                                \
        mpnpu::vec::scalar_bits<OP, T, isSetMask>(#NAME, dst, src, T(scalarValue), mask, repeatTime, repeatParams, \
                                                  site);                                                          \
    }                                                                                                             \
    template <TPARAMS>                                                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const SCALAR_T& scalarValue,           \
                     const uint64_t mask, const int64_t repeatTime, const UnaryRepeatParams& repeatParams,        \
                     MPNPU_SITE) {                                                                                \
        mpnpu::vec::scalar_len<OP, T, isSetMask>(#NAME, dst, src, T(scalarValue), mask, repeatTime, repeatParams,  \
                                                 site);                                                           \
    }                                                                                                             \
    template <TPARAMS>                                                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const SCALAR_T& scalarValue,           \
                     const int32_t& count, MPNPU_SITE) {                                                          \
        mpnpu::vec::scalar_count<OP, T, isSetMask>(#NAME, dst, src, T(scalarValue), count, site);                 \
    }

#define MPNPU_VEC_COMMA2 ,
// Both documented signatures: <T, isSetMask> with a T scalar, and <T, U, isSetMask, (U == T)>.
#define MPNPU_VEC_SCALAR(NAME, OP)                                                                                \
    MPNPU_VEC_SCALAR_LEVEL0(NAME, OP, typename T MPNPU_VEC_COMMA2 bool isSetMask = true, T)                     \
    MPNPU_VEC_SCALAR_LEVEL0(NAME, OP,                                                                             \
                            typename T MPNPU_VEC_COMMA2 typename U MPNPU_VEC_COMMA2 bool isSetMask = true         \
                                MPNPU_VEC_COMMA2 typename std::enable_if<std::is_same<T MPNPU_VEC_COMMA2 U>::value \
                                MPNPU_VEC_COMMA2 bool>::type = true,                                              \
                            U)

namespace AscendC {

MPNPU_VEC_SCALAR(Adds, mpnpu::vec::OpAdds)
MPNPU_VEC_SCALAR(Muls, mpnpu::vec::OpMuls)
MPNPU_VEC_SCALAR(Maxs, mpnpu::vec::OpMaxs)
MPNPU_VEC_SCALAR(Mins, mpnpu::vec::OpMins)
MPNPU_VEC_SCALAR(LeakyRelu, mpnpu::vec::OpLeakyRelu)
MPNPU_VEC_SCALAR(ShiftRight, mpnpu::vec::OpShiftRight)
MPNPU_VEC_SCALAR(ShiftLeft, mpnpu::vec::OpShiftLeft)

// ArithProgression: dst[i] = firstValue + i * diffValue for the first ``count`` elements, written by
// the vector unit (in float for half and float, as the unit computes). (Arange, the library's newer
// name for it with stricter arguments, shares the writing: index_lib.h.)
template <typename T>
inline void ArithProgression(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count,
                             MPNPU_SITE) {
    mpnpu::vec::progression(dst, firstValue, diffValue, count, site, "ArithProgression");
}

// The scalar-first ("flexible scalar position") forms of the newest product are not implemented.
#define MPNPU_VEC_REFUSED_SCALAR_FIRST(NAME)                                                                      \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const T& scalarValue, const LocalTensor<T>& src,                  \
                     const int32_t& count, MPNPU_SITE) {                                                          \
        static_assert(mpnpu::vec::refused<T>, #NAME " with the scalar before the tensor (the flexible scalar "     \
                                              "position form) is not implemented by mpnpu: pass the tensor "      \
                                              "first, " #NAME "(dst, src, scalar, count)");                       \
        (void)dst, (void)scalarValue, (void)src, (void)count, (void)site;                                         \
    }

MPNPU_VEC_REFUSED_SCALAR_FIRST(Adds)
MPNPU_VEC_REFUSED_SCALAR_FIRST(Muls)
MPNPU_VEC_REFUSED_SCALAR_FIRST(Maxs)
MPNPU_VEC_REFUSED_SCALAR_FIRST(Mins)

template <typename T, typename U>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const int32_t& count,
                 MPNPU_SITE) {
    mpnpu::vec::axpy_check<T, U>(site);
    if (count > 0) {
        mpnpu::vec::check_count(dst, uint64_t(count), site, "Axpy", "dst");
        mpnpu::vec::check_count(src, uint64_t(count), site, "Axpy", "src");
    }
    constexpr uint32_t lanes = mpnpu::vec::axpy_lanes(sizeof(T), sizeof(U));
    mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, "Axpy");
    mpnpu::vec::axpy_apply(p, dst, mpnpu::vec::contiguous(lanes, sizeof(T)), src,
                           mpnpu::vec::contiguous(lanes, sizeof(U)), scalarValue, site);
}
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const uint64_t mask[],
                 const int64_t repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {
    mpnpu::vec::axpy_check<T, U>(site);
    constexpr uint32_t lanes = mpnpu::vec::axpy_lanes(sizeof(T), sizeof(U));
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, lanes, site, "Axpy");
    mpnpu::vec::axpy_apply(p, dst, mpnpu::vec::geo(repeatParams.dstBlkStride, repeatParams.dstRepStride), src,
                           mpnpu::vec::geo(repeatParams.srcBlkStride, repeatParams.srcRepStride), scalarValue, site);
}
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const uint64_t mask,
                 const int64_t repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {
    mpnpu::vec::axpy_check<T, U>(site);
    constexpr uint32_t lanes = mpnpu::vec::axpy_lanes(sizeof(T), sizeof(U));
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(mask, repeatTime, lanes, site, "Axpy");
    mpnpu::vec::axpy_apply(p, dst, mpnpu::vec::geo(repeatParams.dstBlkStride, repeatParams.dstRepStride), src,
                           mpnpu::vec::geo(repeatParams.srcBlkStride, repeatParams.srcRepStride), scalarValue, site);
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_SCALAR_H
