// Two-source element-wise instructions: Add, Sub, Mul, Div, Max, Min, And, Or, the compound AddRelu
// and SubRelu (dst = max(src0 +/- src1, 0)), and FusedMulAdd (dst = src0 * dst + src1).
//
// Each has a count form (dst, src0, src1, count) and, as documented, the level-0 forms with a
// bit mask (uint64_t mask[2]) or a lane count (uint64_t mask), repeatTime and BinaryRepeatParams.
// Element types are those of the Atlas A2/A3 products, plus bfloat16_t where the newest product
// takes it; integers wrap, half and bfloat16_t are computed in float and rounded once.
#ifndef MPNPU_VECTOR_BINARY_H
#define MPNPU_VECTOR_BINARY_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"
#include "mask.h"
#include "params.h"

namespace mpnpu {
namespace vec {

// The expression a whole-tensor operator (dst = src0 + src1) makes: its operands (copies: views are
// small values), how to compute it into a destination, and the site its reports name.
template <typename T>
struct WholeTensor {
    using mpnpu_whole_tensor = void;
    AscendC::LocalTensor<T> src0;
    AscendC::LocalTensor<T> src1;
    void (*run)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&,
                const Site&);
    Site site;
};

struct OpAdd {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, half, bfloat16_t, int32_t, float>;
    static constexpr const char* types = "int16_t, half, bfloat16_t, int32_t, float";
    template <typename C>
    static C f(C a, C b) { return a + b; }
    static constexpr char arith = '+';  // a plain IEEE operation on float: float rows may vectorise it
};
struct OpSub : OpAdd {
    template <typename C>
    static C f(C a, C b) { return a - b; }
    static constexpr char arith = '-';
};
struct OpMul : OpAdd {
    template <typename C>
    static C f(C a, C b) { return a * b; }
    static constexpr char arith = '*';
};
struct OpDiv {
    template <typename T>
    static constexpr bool ok = one_of<T, half, float>;
    static constexpr const char* types = "half, float";
    template <typename C>
    static C f(C a, C b) { return a / b; }
    static constexpr char arith = '/';
};
struct OpMax : OpAdd {
    template <typename C>
    static C f(C a, C b) { return a > b ? a : b; }
    static constexpr char arith = 'M';  // (a compare and a select per lane: also the same bits in a row)
};
struct OpMin : OpAdd {
    template <typename C>
    static C f(C a, C b) { return a < b ? a : b; }
    static constexpr char arith = 'm';
};

// AddRelu / SubRelu: the sum (difference) as Add (Sub) makes it, then the larger of it and 0. An
// int16_t sum wraps first, as Add's does (so 30000 + 30000 is negative and gives 0); a floating sum
// is rounded once, after the comparison (which rounding keeps: it does not change a sign).
template <typename C>
inline C relu_of_int16_or_float(C s) {
    if constexpr (std::is_integral_v<C>) s = C(int16_t(uint16_t(uint64_t(s))));
    return s > C(0) ? s : C(0);
}
struct OpAddRelu {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, half, float>;
    static constexpr const char* types = "int16_t, half, float";
    template <typename C>
    static C f(C a, C b) { return relu_of_int16_or_float(C(a + b)); }
};
struct OpSubRelu : OpAddRelu {
    template <typename C>
    static C f(C a, C b) { return relu_of_int16_or_float(C(a - b)); }
};

struct OpAnd {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, uint16_t>;
    static constexpr const char* types = "int16_t, uint16_t";
    template <typename C>
    static C f(C a, C b) { return a & b; }
};
struct OpOr : OpAnd {
    template <typename C>
    static C f(C a, C b) { return a | b; }
};

template <class Op, typename T>
inline void binary_apply(const char* name, const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                         const AscendC::LocalTensor<T>& s0, const Geo& g0, const AscendC::LocalTensor<T>& s1,
                         const Geo& g1, const Site& site) {
    auto lane = [](const T& a, const T& b) { return from_calc<T>(Op::f(to_calc(a), to_calc(b))); };
#ifdef MPNPU_SIMD_X86
    if constexpr (std::is_same_v<T, float> && arith_of<Op>::value != 0) {
        if (has_avx()) {
            binary(name, p, dst, gd, s0, g0, s1, g1, site, lane,
                   [](uint8_t* d, const uint8_t* a, const uint8_t* b, uint32_t n, bool b_block) {
                       binary_row_avx<arith_of<Op>::value>(d, a, b, n, b_block);
                   });
            return;
        }
    }
#endif
    binary(name, p, dst, gd, s0, g0, s1, g1, site, lane);
}

template <class Op, typename T, bool isSetMask>
inline void binary_count(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                         const AscendC::LocalTensor<T>& s1, int64_t count, const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        if (isSetMask && count > 0) {
            check_count(dst, uint64_t(count), site, name, "dst");
            check_count(s0, uint64_t(count), site, name, "src0");
            check_count(s1, uint64_t(count), site, name, "src1");
        }
        constexpr uint32_t lanes = lanes_for(sizeof(T));
        Plan p = plan_count<isSetMask>(count, lanes, site, name);
        Geo g = contiguous(lanes, sizeof(T));
        binary_apply<Op>(name, p, dst, g, s0, g, s1, g, site);
    }
}

template <class Op, typename T, bool isSetMask>
inline void binary_level0(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                          const AscendC::LocalTensor<T>& s1, const Plan& p, const AscendC::BinaryRepeatParams& rp,
                          const Site& site) {
    binary_apply<Op>(name, p, dst, geo(rp.dstBlkStride, rp.dstRepStride), s0, geo(rp.src0BlkStride, rp.src0RepStride),
                     s1, geo(rp.src1BlkStride, rp.src1RepStride), site);
}

template <class Op, typename T, bool isSetMask>
inline void binary_bits(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                        const AscendC::LocalTensor<T>& s1, const uint64_t mask[], int64_t repeat,
                        const AscendC::BinaryRepeatParams& rp, const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        Plan p = plan_level0_bits<isSetMask>(mask, repeat, lanes_for(sizeof(T)), site, name);
        binary_level0<Op, T, isSetMask>(name, dst, s0, s1, p, rp, site);
    }
}

template <class Op, typename T, bool isSetMask>
inline void binary_len(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                       const AscendC::LocalTensor<T>& s1, uint64_t mask, int64_t repeat,
                       const AscendC::BinaryRepeatParams& rp, const Site& site) {
    need_type<T>(Op::template ok<T>, site, name, Op::types);
    if constexpr (Op::template ok<T>) {
        Plan p = plan_level0_len<isSetMask>(mask, repeat, lanes_for(sizeof(T)), site, name);
        binary_level0<Op, T, isSetMask>(name, dst, s0, s1, p, rp, site);
    }
}

// And / Or count forms: 32-bit integers as pairs of 16-bit halves.
template <class Op, typename T>
inline void logic_count(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                        const AscendC::LocalTensor<T>& s1, int32_t count, const Site& site) {
    if constexpr (sizeof(T) == 4 && std::is_integral_v<T>)
        binary_count<Op, uint16_t, true>(name, dst.template ReinterpretCast<uint16_t>(),
                                         s0.template ReinterpretCast<uint16_t>(),
                                         s1.template ReinterpretCast<uint16_t>(), count, site);
    else
        binary_count<Op, T, true>(name, dst, s0, s1, count, site);
}

// FusedMulAdd: dst = src0 * dst + src1, lane by lane (half or float). dst is read as well as written.
// One rounding: half is computed in float (where its product is exact) and rounded once, float with a
// fused multiply-add.
template <typename T>
inline T fused_mul_add_lane(const T& a, const T& d, const T& b) {
    if constexpr (std::is_same_v<T, float>) return std::fma(a, d, b);
    else return from_calc<T>(to_calc(a) * to_calc(d) + to_calc(b));
}

template <typename T>
inline void fused_mul_add(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                          const AscendC::LocalTensor<T>& s0, const Geo& g0, const AscendC::LocalTensor<T>& s1,
                          const Geo& g1, const Site& site) {
    const char* name = "FusedMulAdd";
    need_type<T>(one_of<T, half, float>, site, name, "half, float");
    if constexpr (one_of<T, half, float>) {
        start(site, name);
        check_operand(dst, 32, site, name, "dst");
        check_operand(s0, 32, site, name, "src0");
        check_operand(s1, 32, site, name, "src1");
        if (p.none()) return;
        Hull hd = hull_of(p, sizeof(T), gd);
        touch(s0, 'R', hull_of(p, sizeof(T), g0), site, name);
        touch(s1, 'R', hull_of(p, sizeof(T), g1), site, name);
        touch(dst, 'R', hd, site, name);
        touch(dst, 'W', hd, site, name);
        Lane l0 = lane_of(s0, g0), l1 = lane_of(s1, g1), lD = lane_of(dst, gd);
        run<T>(p, lD, [&](uint64_t r, uint32_t j) {
            return fused_mul_add_lane<T>(ld<T>(l0.at(r, j)), ld<T>(lD.at(r, j)), ld<T>(l1.at(r, j)));
        });
    }
}

}  // namespace vec
}  // namespace mpnpu

// The three documented forms of a two-source call. (repeatTime is taken as any integer, not the
// device's uint8_t, so that a value over 255 is reported instead of silently truncated.)
#define MPNPU_VEC_BINARY_LEVEL0_T(NAME, OP, TPARAMS)                                                              \
    template <typename T, bool isSetMask = true TPARAMS, typename R>                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
                     const uint64_t mask[], const R repeatTime, const BinaryRepeatParams& repeatParams,           \
                     MPNPU_SITE) {                                                                                \
        mpnpu::vec::binary_bits<OP, T, isSetMask>(#NAME, dst, src0, src1, mask, static_cast<int64_t>(repeatTime), \
                                                  repeatParams, site);                                            \
    }                                                                                                             \
    template <typename T, bool isSetMask = true TPARAMS, typename R>                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
                     const uint64_t mask, const R repeatTime, const BinaryRepeatParams& repeatParams,             \
                     MPNPU_SITE) {                                                                                \
        mpnpu::vec::binary_len<OP, T, isSetMask>(#NAME, dst, src0, src1, mask, static_cast<int64_t>(repeatTime),  \
                                                 repeatParams, site);                                             \
    }                                                                                                             \
    /* the documented signatures, for a kernel that takes the call's address (engine.h, if_same) */               \
    template <typename T, bool isSetMask = true TPARAMS, typename M, typename R,                                  \
              mpnpu::vec::if_same<M, const uint64_t*> = 0, mpnpu::vec::if_same<R, uint8_t> = 0>                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, M mask,   \
                     R repeatTime, const BinaryRepeatParams& repeatParams) {                                      \
        mpnpu::vec::binary_bits<OP, T, isSetMask>(#NAME, dst, src0, src1, mask, repeatTime, repeatParams,         \
                                                  MPNPU_FPTR_SITE(#NAME));                                        \
    }                                                                                                             \
    template <typename T, bool isSetMask = true TPARAMS, typename M, typename R,                                  \
              mpnpu::vec::if_same<M, uint64_t> = 0, mpnpu::vec::if_same<R, uint8_t> = 0>                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, M mask,   \
                     R repeatTime, const BinaryRepeatParams& repeatParams) {                                      \
        mpnpu::vec::binary_len<OP, T, isSetMask>(#NAME, dst, src0, src1, mask, repeatTime, repeatParams,          \
                                                 MPNPU_FPTR_SITE(#NAME));                                         \
    }

#define MPNPU_VEC_BINARY_LEVEL0(NAME, OP) MPNPU_VEC_BINARY_LEVEL0_T(NAME, OP, )

#define MPNPU_VEC_BINARY_COUNT_T(NAME, OP, TPARAMS)                                                               \
    template <typename T TPARAMS>                                                                                 \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
                     const int32_t& count, MPNPU_SITE) {                                                          \
        mpnpu::vec::binary_count<OP, T, true>(#NAME, dst, src0, src1, count, site);                               \
    }                                                                                                             \
    template <typename T TPARAMS, typename C, mpnpu::vec::if_same<C, int32_t> = 0>                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
                     const C& count) {                                                                            \
        mpnpu::vec::binary_count<OP, T, true>(#NAME, dst, src0, src1, count, MPNPU_FPTR_SITE(#NAME));             \
    }

#define MPNPU_VEC_BINARY(NAME, OP)           \
    MPNPU_VEC_BINARY_COUNT_T(NAME, OP, )     \
    MPNPU_VEC_BINARY_LEVEL0(NAME, OP)

#define MPNPU_VEC_COMMA ,

namespace AscendC {

MPNPU_VEC_BINARY(Add, mpnpu::vec::OpAdd)
MPNPU_VEC_BINARY(Sub, mpnpu::vec::OpSub)
MPNPU_VEC_BINARY(Mul, mpnpu::vec::OpMul)
MPNPU_VEC_BINARY(Max, mpnpu::vec::OpMax)
MPNPU_VEC_BINARY(Min, mpnpu::vec::OpMin)
MPNPU_VEC_BINARY_LEVEL0(Or, mpnpu::vec::OpOr)
MPNPU_VEC_BINARY(AddRelu, mpnpu::vec::OpAddRelu)
MPNPU_VEC_BINARY(SubRelu, mpnpu::vec::OpSubRelu)

// Div takes a precision config on the newest product; every config computes the same here.
MPNPU_VEC_BINARY_COUNT_T(Div, mpnpu::vec::OpDiv, MPNPU_VEC_COMMA const DivConfig& config = DEFAULT_DIV_CONFIG)
MPNPU_VEC_BINARY_LEVEL0_T(Div, mpnpu::vec::OpDiv, MPNPU_VEC_COMMA const DivConfig& config = DEFAULT_DIV_CONFIG)

// FusedMulAdd (dst = src0 * dst + src1): the count form and the two level-0 forms.
template <typename T>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                        const int32_t& count, MPNPU_SITE) {
    if (count > 0) {
        mpnpu::vec::check_count(dst, uint64_t(count), site, "FusedMulAdd", "dst");
        mpnpu::vec::check_count(src0, uint64_t(count), site, "FusedMulAdd", "src0");
        mpnpu::vec::check_count(src1, uint64_t(count), site, "FusedMulAdd", "src1");
    }
    constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));
    mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, "FusedMulAdd");
    mpnpu::vec::Geo g = mpnpu::vec::contiguous(lanes, sizeof(T));
    mpnpu::vec::fused_mul_add(p, dst, g, src0, g, src1, g, site);
}
template <typename T, bool isSetMask = true, typename R>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                        const uint64_t mask[], const R repeatTime, const BinaryRepeatParams& rp, MPNPU_SITE) {
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_bits<isSetMask>(mask, static_cast<int64_t>(repeatTime),
                                                                 mpnpu::vec::lanes_for(sizeof(T)), site, "FusedMulAdd");
    mpnpu::vec::fused_mul_add(p, dst, mpnpu::vec::geo(rp.dstBlkStride, rp.dstRepStride), src0,
                              mpnpu::vec::geo(rp.src0BlkStride, rp.src0RepStride), src1,
                              mpnpu::vec::geo(rp.src1BlkStride, rp.src1RepStride), site);
}
template <typename T, bool isSetMask = true, typename R>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                        const uint64_t mask, const R repeatTime, const BinaryRepeatParams& rp, MPNPU_SITE) {
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(mask, static_cast<int64_t>(repeatTime),
                                                                mpnpu::vec::lanes_for(sizeof(T)), site, "FusedMulAdd");
    mpnpu::vec::fused_mul_add(p, dst, mpnpu::vec::geo(rp.dstBlkStride, rp.dstRepStride), src0,
                              mpnpu::vec::geo(rp.src0BlkStride, rp.src0RepStride), src1,
                              mpnpu::vec::geo(rp.src1BlkStride, rp.src1RepStride), site);
}

// And / Or: 16-bit integers. The count forms also take 32-bit integers the way the documented
// call does: as pairs of 16-bit halves, ``count`` counting halves (so 2n for n words).

#define MPNPU_VEC_LOGIC_COUNT(NAME, OP)                                                                           \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
                     const int32_t& count, MPNPU_SITE) {                                                          \
        mpnpu::vec::logic_count<OP>(#NAME, dst, src0, src1, count, site);                                         \
    }                                                                                                             \
    template <typename T, typename C, mpnpu::vec::if_same<C, int32_t> = 0>                                        \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,           \
                     const C& count) {                                                                            \
        mpnpu::vec::logic_count<OP>(#NAME, dst, src0, src1, count, MPNPU_FPTR_SITE(#NAME));                       \
    }

MPNPU_VEC_LOGIC_COUNT(And, mpnpu::vec::OpAnd)
MPNPU_VEC_BINARY_LEVEL0(And, mpnpu::vec::OpAnd)
MPNPU_VEC_LOGIC_COUNT(Or, mpnpu::vec::OpOr)

// The whole-tensor operators: ``dst = src0 + src1`` computes as many elements as dst holds (the Add
// page: the count of the operator form is the destination's whole length), as Add(dst, src0, src1,
// count) would; likewise -, *, / and, on 16-bit integers (32-bit as pairs of halves), & and |. The
// operator yields an expression that the destination's assignment computes. An operator has no room
// for the caller's line, so its reports name the form instead of a line.
#define MPNPU_VEC_WHOLE_TENSOR_OPERATOR(OP, NAME, RUN)                                                            \
    template <typename T>                                                                                         \
    inline mpnpu::vec::WholeTensor<T> operator OP(const LocalTensor<T>& a, const LocalTensor<T>& b) {             \
        return {a, b, [](const LocalTensor<T>& d, const LocalTensor<T>& s0, const LocalTensor<T>& s1,             \
                         const mpnpu::Site& site) { RUN; },                                                      \
                ::mpnpu::Site{"(dst = src0 " #OP " src1, the whole-tensor " NAME ")", 0, NAME}};                  \
    }

MPNPU_VEC_WHOLE_TENSOR_OPERATOR(+, "Add", (mpnpu::vec::binary_count<mpnpu::vec::OpAdd, T, true>(
    "Add", d, s0, s1, int32_t(d.GetSize()), site)))
MPNPU_VEC_WHOLE_TENSOR_OPERATOR(-, "Sub", (mpnpu::vec::binary_count<mpnpu::vec::OpSub, T, true>(
    "Sub", d, s0, s1, int32_t(d.GetSize()), site)))
MPNPU_VEC_WHOLE_TENSOR_OPERATOR(*, "Mul", (mpnpu::vec::binary_count<mpnpu::vec::OpMul, T, true>(
    "Mul", d, s0, s1, int32_t(d.GetSize()), site)))
MPNPU_VEC_WHOLE_TENSOR_OPERATOR(/, "Div", (mpnpu::vec::binary_count<mpnpu::vec::OpDiv, T, true>(
    "Div", d, s0, s1, int32_t(d.GetSize()), site)))
MPNPU_VEC_WHOLE_TENSOR_OPERATOR(&, "And", (mpnpu::vec::logic_count<mpnpu::vec::OpAnd>(
    "And", d, s0, s1, int32_t(d.GetSize()) * int32_t(sizeof(T) == 4 ? 2 : 1), site)))
MPNPU_VEC_WHOLE_TENSOR_OPERATOR(|, "Or", (mpnpu::vec::logic_count<mpnpu::vec::OpOr>(
    "Or", d, s0, s1, int32_t(d.GetSize()) * int32_t(sizeof(T) == 4 ? 2 : 1), site)))

}  // namespace AscendC

#endif  // MPNPU_VECTOR_BINARY_H
