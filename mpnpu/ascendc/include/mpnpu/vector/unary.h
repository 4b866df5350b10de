// One-source element-wise instructions: Exp, Ln, Abs, Sqrt, Rsqrt, Reciprocal, Relu, Not.
//
// Count form (dst, src, count) and the level-0 forms (bit mask or lane count, repeatTime,
// UnaryRepeatParams). The transcendental ones are computed in float (Exp by exp_f32 below, the
// others through <cmath>; half results rounded once to nearest-even); the precision configs of the
// newest product are accepted and all compute the same way.
#ifndef MPNPU_VECTOR_UNARY_H
#define MPNPU_VECTOR_UNARY_H

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

struct FloatUnary {
    template <typename T>
    static constexpr bool ok = one_of<T, half, float>;
    static constexpr const char* types = "half, float";
};
// The steps exp_f32 and its 8-lane twin share, for a float or a vector of floats (the same
// operations either way): k = x / ln2 rounded to nearest, and y = e^(x - k ln2). (By reference: a
// vector passed by value has no ABI of its own outside the AVX2 function.)
template <typename V>
__attribute__((always_inline)) inline void exp_k(const V& xc, V& k) {
    k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
}
template <typename V>
__attribute__((always_inline)) inline void exp_reduced(const V& xc, const V& k, V& out) {
    V r = xc - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    const V z = r * r;
    V y = r * 1.9875691500e-4f + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    out = y * z + r + 1.0f;
}

// exp in float as straight-line arithmetic, so that a row of it vectorises: x = k ln2 + r with k
// rounded to nearest (the 1.5 * 2^23 trick) and ln2 in two parts, a degree-6 polynomial for e^r on
// [-ln2/2, ln2/2], and 2^k applied as two factors so that overflow to inf and results in the
// subnormal range come out of the multiplications. Within 1 ulp of the correctly rounded e^x for
// every float (checked exhaustively over [-105, 90] against double-precision exp; outside that
// range the result is inf or 0); NaN stays NaN. Plain IEEE operations only: the same bits in a
// vectorised row as lane by lane.
inline float exp_f32(float x) {
    float xc = x < 89.0f ? x : 89.0f;  // (NaN goes here too: restored at the end)
    xc = xc > -104.0f ? xc : -104.0f;
    float k, y;
    exp_k(xc, k);
    const int32_t ki = static_cast<int32_t>(k);
    exp_reduced(xc, k, y);
    const int32_t k1 = ki / 2, k2 = ki - k1;  // each in [-75, 65]: two normal powers of two
    const uint32_t b1 = uint32_t(k1 + 127) << 23, b2 = uint32_t(k2 + 127) << 23;
    float s1, s2;
    std::memcpy(&s1, &b1, sizeof s1);
    std::memcpy(&s2, &b2, sizeof s2);
    y = y * s1 * s2;
    return x == x ? y : x + x;  // (x + x: a signalling NaN comes back quiet, as from std::exp)
}

#ifdef MPNPU_SIMD_X86
// exp_f32 on 8 lanes at once: the same operations in the same order (AVX2 has no fused
// multiply-add without FMA, which is not enabled here), hence the same bits as lane by lane.
typedef float ExpV8f __attribute__((vector_size(32)));
typedef int32_t ExpV8i __attribute__((vector_size(32)));
typedef uint32_t ExpV8u __attribute__((vector_size(32)));

__attribute__((target("avx2"), always_inline)) inline ExpV8f exp_select(ExpV8i m, ExpV8f a, ExpV8f b) {
    return (ExpV8f)(((ExpV8i)a & m) | ((ExpV8i)b & ~m));
}

__attribute__((target("avx2"), always_inline)) inline ExpV8f exp_v8(ExpV8f x) {
    const ExpV8f hi = ExpV8f{} + 89.0f, lo = ExpV8f{} + -104.0f;
    ExpV8f xc = exp_select(x < hi, x, hi);
    xc = exp_select(xc > lo, xc, lo);
    ExpV8f k, y;
    exp_k(xc, k);
    const ExpV8i ki = __builtin_convertvector(k, ExpV8i);
    exp_reduced(xc, k, y);
    const ExpV8i k1 = ki / 2, k2 = ki - k1;
    y = y * (ExpV8f)((ExpV8u)(k1 + 127) << 23) * (ExpV8f)((ExpV8u)(k2 + 127) << 23);
    return exp_select(x == x, y, x + x);
}

// The whole 8-lane steps of exp_row_f32; returns the lanes done.
__attribute__((target("avx2"))) inline uint32_t exp_row_avx2(uint8_t* d, const uint8_t* s, uint32_t n) {
    uint32_t j = 0;
    for (; j + 8 <= n; j += 8) {
        ExpV8f x;
        std::memcpy(&x, s + uint64_t(j) * 4, sizeof x);
        const ExpV8f y = exp_v8(x);
        std::memcpy(d + uint64_t(j) * 4, &y, sizeof y);
    }
    return j;
}
#endif

// n consecutive floats, dst and src the same or disjoint (a lane is read before it is written).
inline void exp_row_f32(uint8_t* d, const uint8_t* s, uint32_t n) {
    uint32_t j = 0;
#ifdef MPNPU_SIMD_X86
    if (has_avx2()) j = exp_row_avx2(d, s, n);
#endif
    for (; j < n; ++j) st<float>(d + uint64_t(j) * 4, exp_f32(ld<float>(s + uint64_t(j) * 4)));
}

struct OpExp : FloatUnary {
    template <typename C>
    static C f(C x) {
        if constexpr (std::is_same_v<C, float>) {
            return exp_f32(x);
        } else {
            return std::exp(x);
        }
    }
    // a whole run of float lanes at once (the engine's dense path)
    static void float_row(uint8_t* d, const uint8_t* s, uint32_t n) { exp_row_f32(d, s, n); }
};
#ifdef MPNPU_SIMD_X86
// n consecutive floats d[j] = op(s[j]), 8 at a time, with instructions whose result on each lane is
// the lane loop's: IEEE's correctly rounded square root and division (Sqrt 'q', Rsqrt 'r' as
// 1 / sqrt, Reciprocal 'c'), the sign bit cleared (Abs 'a'), an ordered compare and a select (Relu
// 'u': NaN gives 0, as x > 0 ? x : 0 does). Returns how many lanes it did (a multiple of 8).
template <char op>
__attribute__((target("avx"))) inline uint32_t float_unary_row_avx(uint8_t* d, const uint8_t* s, uint32_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    uint32_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(s + uint64_t(j) * 4));
        __m256 z;
        if constexpr (op == 'q') z = _mm256_sqrt_ps(x);
        else if constexpr (op == 'r') z = _mm256_div_ps(one, _mm256_sqrt_ps(x));
        else if constexpr (op == 'c') z = _mm256_div_ps(one, x);
        else if constexpr (op == 'a') z = _mm256_and_ps(x, magnitude);
        else z = _mm256_and_ps(x, _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
        _mm256_storeu_ps(reinterpret_cast<float*>(d + uint64_t(j) * 4), z);
    }
    return j;
}
#endif

// The float row of a one-source op: 8 lanes at a time where the CPU has AVX, the rest (or all) by
// the op's own f, lane by lane.
template <class Op, char op>
inline void float_unary_row(uint8_t* d, const uint8_t* s, uint32_t n) {
    uint32_t j = 0;
#ifdef MPNPU_SIMD_X86
    if (has_avx()) j = float_unary_row_avx<op>(d, s, n);
#endif
    for (; j < n; ++j) st<float>(d + uint64_t(j) * 4, Op::f(ld<float>(s + uint64_t(j) * 4)));
}

struct OpLn : FloatUnary {
    template <typename C>
    static C f(C x) { return std::log(x); }
};
struct OpAbs : FloatUnary {
    template <typename C>
    static C f(C x) { return std::fabs(x); }
    static void float_row(uint8_t* d, const uint8_t* s, uint32_t n) { float_unary_row<OpAbs, 'a'>(d, s, n); }
};
struct OpSqrt : FloatUnary {
    template <typename C>
    static C f(C x) { return std::sqrt(x); }
    static void float_row(uint8_t* d, const uint8_t* s, uint32_t n) { float_unary_row<OpSqrt, 'q'>(d, s, n); }
};
struct OpRsqrt : FloatUnary {
    template <typename C>
    static C f(C x) { return C(1) / std::sqrt(x); }
    static void float_row(uint8_t* d, const uint8_t* s, uint32_t n) { float_unary_row<OpRsqrt, 'r'>(d, s, n); }
};
struct OpReciprocal : FloatUnary {
    template <typename C>
    static C f(C x) { return C(1) / x; }
    static void float_row(uint8_t* d, const uint8_t* s, uint32_t n) { float_unary_row<OpReciprocal, 'c'>(d, s, n); }
};
struct OpRelu {
    template <typename T>
    static constexpr bool ok = one_of<T, half, int32_t, float>;
    static constexpr const char* types = "half, int32_t, float";
    template <typename C>
    static C f(C x) { return x > C(0) ? x : C(0); }
    static void float_row(uint8_t* d, const uint8_t* s, uint32_t n) { float_unary_row<OpRelu, 'u'>(d, s, n); }
};
// Copy: each element as it is (no float round trip: the bits move).
struct OpCopy {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, uint16_t, int32_t, uint32_t, half, bfloat16_t, float>;
    static constexpr const char* types = "int16_t, uint16_t, int32_t, uint32_t, half, bfloat16_t, float";
    template <typename C>
    static C f(C x) { return x; }
};
struct OpNot {
    template <typename T>
    static constexpr bool ok = one_of<T, int16_t, uint16_t>;
    static constexpr const char* types = "int16_t, uint16_t";
    template <typename C>
    static C f(C x) { return ~x; }
};

template <class Op, class = void>
struct has_float_row : std::false_type {};
template <class Op>
struct has_float_row<Op, std::void_t<decltype(&Op::float_row)>> : std::true_type {};

template <class Op, typename T>
inline void unary_apply(const char* name, const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                        const AscendC::LocalTensor<T>& src, const Geo& gs, const Site& site) {
    auto lane = [](const T& x) { return from_calc<T>(Op::f(to_calc(x))); };
    if constexpr (std::is_same_v<T, float> && has_float_row<Op>::value) {
        unary(name, p, dst, gd, src, gs, site, lane, [](uint8_t* d, const uint8_t* s, uint32_t n) { Op::float_row(d, s, n); });
    } else {
        unary(name, p, dst, gd, src, gs, site, lane);
    }
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

// (repeatTime as any integer, so that a value over 255 is reported; the forms without a site
// parameter are the documented signatures, for a kernel that takes the call's address: engine.h.)
#define MPNPU_VEC_UNARY_LEVEL0(NAME, OP, EXTRA_TPARAM)                                                            \
    template <typename T, bool isSetMask = true EXTRA_TPARAM, typename R>                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                 \
                     const R repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {                     \
        mpnpu::vec::unary_bits<OP, T, isSetMask>(#NAME, dst, src, mask, static_cast<int64_t>(repeatTime),         \
                                                 repeatParams, site);                                             \
    }                                                                                                             \
    template <typename T, bool isSetMask = true EXTRA_TPARAM, typename R>                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask,                   \
                     const R repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {                     \
        mpnpu::vec::unary_len<OP, T, isSetMask>(#NAME, dst, src, mask, static_cast<int64_t>(repeatTime),          \
                                                repeatParams, site);                                              \
    }                                                                                                             \
    template <typename T, bool isSetMask = true EXTRA_TPARAM, typename M, typename R,                             \
              mpnpu::vec::if_same<M, const uint64_t*> = 0, mpnpu::vec::if_same<R, uint8_t> = 0>                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, M mask, R repeatTime,                  \
                     const UnaryRepeatParams& repeatParams) {                                                     \
        mpnpu::vec::unary_bits<OP, T, isSetMask>(#NAME, dst, src, mask, repeatTime, repeatParams,                 \
                                                 MPNPU_FPTR_SITE(#NAME));                                         \
    }                                                                                                             \
    template <typename T, bool isSetMask = true EXTRA_TPARAM, typename M, typename R,                             \
              mpnpu::vec::if_same<M, uint64_t> = 0, mpnpu::vec::if_same<R, uint8_t> = 0>                          \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, M mask, R repeatTime,                  \
                     const UnaryRepeatParams& repeatParams) {                                                     \
        mpnpu::vec::unary_len<OP, T, isSetMask>(#NAME, dst, src, mask, repeatTime, repeatParams,                  \
                                                MPNPU_FPTR_SITE(#NAME));                                          \
    }

#define MPNPU_VEC_UNARY_COUNT(NAME, OP, EXTRA_TPARAM)                                                             \
    template <typename T EXTRA_TPARAM>                                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, MPNPU_SITE) {    \
        mpnpu::vec::unary_count<OP, T, true>(#NAME, dst, src, count, site);                                       \
    }                                                                                                             \
    template <typename T EXTRA_TPARAM, typename C, mpnpu::vec::if_same<C, int32_t> = 0>                           \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const C& count) {                      \
        mpnpu::vec::unary_count<OP, T, true>(#NAME, dst, src, count, MPNPU_FPTR_SITE(#NAME));                     \
    }

#define MPNPU_VEC_UNARY(NAME, OP)      \
    MPNPU_VEC_UNARY_COUNT(NAME, OP, )  \
    MPNPU_VEC_UNARY_LEVEL0(NAME, OP, )

// The calls that take a precision config: template <typename T, const XConfig& config = DEFAULT>.
#define MPNPU_VEC_UNARY_CFG(NAME, OP, CFG, DEFAULT)                                  \
    MPNPU_VEC_UNARY_COUNT(NAME, OP, MPNPU_VEC_COMMA const CFG& config = DEFAULT)     \
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
// Log: the natural logarithm, as Ln (the math library's name for it), also in the library's forms:
// the whole tensor (count = dst's size) and with a temporary buffer (scratch on the device, unused).
// (the count form takes the library's template <typename T, bool isReuseSource = false>: Log<T, false>(...))
MPNPU_VEC_UNARY_COUNT(Log, mpnpu::vec::OpLn, MPNPU_VEC_COMMA bool isReuseSource = false)
MPNPU_VEC_UNARY_LEVEL0(Log, mpnpu::vec::OpLn, )
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, MPNPU_SITE) {
    mpnpu::vec::unary_count<mpnpu::vec::OpLn, T, true>("Log", dst, src, dst.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                MPNPU_SITE) {
    (void)sharedTmpBuffer;
    mpnpu::vec::unary_count<mpnpu::vec::OpLn, T, true>("Log", dst, src, dst.GetSize(), site);
}
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                const uint32_t calCount, MPNPU_SITE) {
    (void)sharedTmpBuffer;
    mpnpu::vec::unary_count<mpnpu::vec::OpLn, T, true>("Log", dst, src, calCount, site);
}

// Copy: UB -> UB by the vector unit, every element as it is (count form, and the level-0 forms with
// CopyRepeatParams: block strides and repeat sizes in 32-byte blocks).
template <typename T>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, MPNPU_SITE) {
    mpnpu::vec::unary_count<mpnpu::vec::OpCopy, T, true>("Copy", dst, src, count, site);
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams& p, MPNPU_SITE) {
    mpnpu::vec::unary_bits<mpnpu::vec::OpCopy, T, isSetMask>(
        "Copy", dst, src, mask, repeatTime,
        UnaryRepeatParams(p.dstStride, p.srcStride, uint8_t(p.dstRepeatSize), uint8_t(p.srcRepeatSize)), site);
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams& p, MPNPU_SITE) {
    mpnpu::vec::unary_len<mpnpu::vec::OpCopy, T, isSetMask>(
        "Copy", dst, src, mask, repeatTime,
        UnaryRepeatParams(p.dstStride, p.srcStride, uint8_t(p.dstRepeatSize), uint8_t(p.srcRepeatSize)), site);
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_UNARY_H
