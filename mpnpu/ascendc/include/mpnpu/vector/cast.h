// Cast (element type conversion with a RoundMode) and SetDeqScale (the int32 -> half scale).
//
// The type pairs and the round modes each pair takes are those of the Atlas A2/A3 products
// (half -> int4b_t included: the integer rounded as the mode says and saturated to [-8, 7], two to a
// byte, the even lane in the low 4 bits; dst strides count 32-byte blocks of 64 such values); another
// pair or mode is reported as an API error naming both. A repeat has
// as many lanes as 256 bytes hold of the wider type; each operand keeps its own element size
// within its blocks (a half -> float repeat reads 4 blocks of half and writes 8 blocks of float).
//
// Conversions are exact where the destination can hold the value; otherwise they round as the
// mode says (CAST_NONE: to nearest even) and saturate on overflow, as documented: out-of-range
// integers clamp to the destination's range and finite floats that overflow a narrower float
// become its largest finite value. NaN becomes 0 in an integer and stays NaN in a float.
// float -> float rounds to an integral value (CAST_NONE: the value as it is, as no precision is lost).
#ifndef MPNPU_VECTOR_CAST_H
#define MPNPU_VECTOR_CAST_H

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"
#include "mask.h"
#include "params.h"

namespace mpnpu {
namespace vec {

// An exact value: (-1)^neg * mag * 2^exp, or an infinity / NaN.
struct Exact {
    bool neg = false;
    bool inf = false;
    bool nan = false;
    uint64_t mag = 0;
    int exp = 0;
};

inline Exact decode_float(uint64_t bits, int frac_bits, int exp_bits) {
    Exact x;
    int bias = (1 << (exp_bits - 1)) - 1;
    x.neg = (bits >> (frac_bits + exp_bits)) & 1u;
    uint64_t e = (bits >> frac_bits) & ((1ull << exp_bits) - 1);
    uint64_t f = bits & ((1ull << frac_bits) - 1);
    if (e == (1ull << exp_bits) - 1) {
        if (f) x.nan = true;
        else x.inf = true;
        return x;
    }
    if (e == 0) {
        x.mag = f;
        x.exp = 1 - bias - frac_bits;
    } else {
        x.mag = f | (1ull << frac_bits);
        x.exp = int(e) - bias - frac_bits;
    }
    return x;
}

template <typename T>
inline Exact exact_of(const T& v) {
    Exact x;
    if constexpr (std::is_same_v<T, half>) {
        return decode_float(v.bits, 10, 5);
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        return decode_float(v.bits, 7, 8);
    } else if constexpr (std::is_same_v<T, float>) {
        return decode_float(f32_bits(v), 23, 8);
    } else if constexpr (std::is_same_v<T, double>) {
        uint64_t b;
        std::memcpy(&b, &v, 8);
        return decode_float(b, 52, 11);
    } else if constexpr (std::is_signed_v<T>) {
        x.neg = v < 0;
        x.mag = x.neg ? uint64_t(0) - uint64_t(int64_t(v)) : uint64_t(int64_t(v));
        return x;
    } else {
        x.mag = uint64_t(v);
        return x;
    }
}

// Drop the low ``s`` bits of mag (s > 0): the kept part, the first dropped bit and whether any
// other dropped bit is set.
struct Split {
    uint64_t q;
    bool round;
    bool sticky;
};
inline Split split(uint64_t mag, int s) {
    if (s <= 0) return Split{mag, false, false};
    if (s > 64) return Split{0, false, mag != 0};
    uint64_t q = s == 64 ? 0 : mag >> s;
    bool round = (mag >> (s - 1)) & 1u;
    uint64_t below = mag & ((1ull << (s - 1)) - 1);  // s - 1 <= 63
    return Split{q, round, below != 0};
}

// Whether the kept magnitude steps up by one ulp (away from zero) under ``mode``.
inline bool round_up(const Split& sp, bool neg, AscendC::RoundMode mode) {
    using M = AscendC::RoundMode;
    bool inexact = sp.round || sp.sticky;
    switch (mode) {
        case M::CAST_FLOOR: return neg && inexact;
        case M::CAST_CEIL: return !neg && inexact;
        case M::CAST_ROUND: return sp.round;
        case M::CAST_TRUNC: return false;
        case M::CAST_ODD: return false;  // the last bit is forced instead
        default: return sp.round && (sp.sticky || (sp.q & 1u));  // CAST_NONE, CAST_RINT
    }
}

inline int bit_length(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

// To an integer in [lo, hi] (saturating).
inline int64_t to_integer(const Exact& x, AscendC::RoundMode mode, int64_t lo, int64_t hi) {
    if (x.nan) return 0;
    if (x.inf) return x.neg ? lo : hi;
    uint64_t q;
    bool overflow = false;
    if (x.exp >= 0) {
        if (x.mag != 0 && (x.exp >= 64 || bit_length(x.mag) + x.exp > 64)) overflow = true;
        q = overflow ? 0 : x.mag << x.exp;
    } else {
        Split sp = split(x.mag, -x.exp);
        q = sp.q + (round_up(sp, x.neg, mode) ? 1u : 0u);
    }
    if (x.neg) {
        if (overflow || q > uint64_t(0) - uint64_t(lo)) return lo;
        return q == (1ull << 63) ? INT64_MIN : -int64_t(q);
    }
    if (overflow || q > uint64_t(hi)) return hi;
    return int64_t(q);
}

// A floating format: p significand bits (with the implicit one), frac bits, exponent range.
struct Format {
    int p;
    int frac_bits;
    int exp_bits;
    int emin;  // exponent of the smallest normal
    int emax;  // exponent of the largest finite
    int bias;
};
constexpr Format HALF_FMT{11, 10, 5, -14, 15, 15};
constexpr Format BF16_FMT{8, 7, 8, -126, 127, 127};
constexpr Format FLOAT_FMT{24, 23, 8, -126, 127, 127};

// To a floating format's bits (sign included), rounding by ``mode``, saturating finite overflow.
inline uint64_t to_format(const Exact& x, AscendC::RoundMode mode, const Format& f) {
    uint64_t sign = uint64_t(x.neg) << (f.frac_bits + f.exp_bits);
    uint64_t exp_all = (1ull << f.exp_bits) - 1;
    if (x.nan) return (exp_all << f.frac_bits) | (1ull << (f.frac_bits - 1));
    if (x.inf) return sign | (exp_all << f.frac_bits);
    if (x.mag == 0) return sign;
    int n = bit_length(x.mag);
    int E = x.exp + n - 1;                               // value in [2^E, 2^(E+1))
    int qe = (E < f.emin ? f.emin : E) - (f.p - 1);      // exponent of one unit in the last place
    uint64_t q;
    if (qe <= x.exp) {
        q = x.mag << (x.exp - qe);  // exact
    } else {
        Split sp = split(x.mag, qe - x.exp);
        q = sp.q;
        if (mode == AscendC::RoundMode::CAST_ODD) {
            if (sp.round || sp.sticky) q |= 1u;
        } else if (round_up(sp, x.neg, mode)) {
            ++q;
        }
    }
    uint64_t max_finite = ((exp_all - 1) << f.frac_bits) | ((1ull << f.frac_bits) - 1);
    if (q == 0) return sign;
    int m = bit_length(q);
    int E2 = qe + m - 1;
    if (E2 > f.emax) return sign | max_finite;
    if (m < f.p) return sign | q;  // subnormal (only possible at the bottom of the range)
    // m == p, or p + 1 after a carry (then q is a power of two)
    if (m == f.p + 1) q >>= 1;
    uint64_t biased = uint64_t(E2 + f.bias);
    return sign | (biased << f.frac_bits) | (q & ((1ull << f.frac_bits) - 1));
}

template <typename T>
inline T float_from_bits(uint64_t b) {
    if constexpr (std::is_same_v<T, half>) return half::from_bits(uint16_t(b));
    else if constexpr (std::is_same_v<T, bfloat16_t>) return bfloat16_t::from_bits(uint16_t(b));
    else return bits_f32(uint32_t(b));
}

template <typename T>
constexpr Format format_of() {
    if constexpr (std::is_same_v<T, half>) return HALF_FMT;
    else if constexpr (std::is_same_v<T, bfloat16_t>) return BF16_FMT;
    else return FLOAT_FMT;
}

// Round modes as a bit set: 1 << int(mode).
constexpr uint32_t M_NONE = 1u << 0, M_RINT = 1u << 1, M_FLOOR = 1u << 2, M_CEIL = 1u << 3, M_ROUND = 1u << 4,
                   M_TRUNC = 1u << 5, M_ODD = 1u << 6, M_ALL = 0xFFu;
constexpr uint32_t M_ROUNDING = M_RINT | M_FLOOR | M_CEIL | M_ROUND | M_TRUNC;

// The modes a (dst T, src U) pair takes on the Atlas A2/A3 products; 0: not a supported pair.
template <typename T, typename U>
constexpr uint32_t cast_modes() {
    using std::is_same_v;
    if constexpr (is_same_v<T, half> && (is_same_v<U, int8_t> || is_same_v<U, uint8_t>)) return M_NONE;
    else if constexpr (is_same_v<T, half> && is_same_v<U, int16_t>) return M_ROUNDING | M_NONE;
    else if constexpr (is_same_v<T, float> && is_same_v<U, int16_t>) return M_NONE;
    else if constexpr ((is_same_v<T, int8_t> || is_same_v<T, uint8_t>) && is_same_v<U, half>) return M_ROUNDING | M_NONE;
    else if constexpr ((is_same_v<T, int16_t> || is_same_v<T, int32_t>) && is_same_v<U, half>) return M_ROUNDING;
    else if constexpr (is_same_v<T, float> && is_same_v<U, half>) return M_NONE;
    else if constexpr (is_same_v<T, int32_t> && is_same_v<U, bfloat16_t>) return M_ROUNDING;
    else if constexpr (is_same_v<T, float> && is_same_v<U, bfloat16_t>) return M_NONE;
    else if constexpr (is_same_v<T, int16_t> && is_same_v<U, int32_t>) return M_NONE;
    else if constexpr (is_same_v<T, half> && is_same_v<U, int32_t>) return M_ALL;  // SetDeqScale; mode ignored
    else if constexpr (is_same_v<T, float> && is_same_v<U, int32_t>) return M_ROUNDING | M_NONE;
    else if constexpr (is_same_v<T, int64_t> && is_same_v<U, int32_t>) return M_NONE;
    else if constexpr (is_same_v<T, int16_t> && is_same_v<U, float>) return M_ROUNDING;
    else if constexpr (is_same_v<T, half> && is_same_v<U, float>) return M_ROUNDING | M_ODD | M_NONE;
    else if constexpr (is_same_v<T, bfloat16_t> && is_same_v<U, float>) return M_ROUNDING;
    else if constexpr (is_same_v<T, float> && is_same_v<U, float>) return M_ROUNDING | M_NONE;  // NONE: no loss
    else if constexpr ((is_same_v<T, int32_t> || is_same_v<T, int64_t>) && is_same_v<U, float>) return M_ROUNDING;
    else if constexpr (is_same_v<T, int32_t> && is_same_v<U, int64_t>) return M_NONE;
    else if constexpr (is_same_v<T, float> && is_same_v<U, int64_t>) return M_ROUNDING;
    else return 0;
}

inline const char* round_name(AscendC::RoundMode m) {
    static const char* names[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                  "CAST_ROUND", "CAST_TRUNC", "CAST_ODD", "CAST_HYBRID"};
    unsigned i = unsigned(m);
    return i < 8 ? names[i] : "RoundMode(?)";
}

template <typename T, typename U>
inline void cast_check(AscendC::RoundMode mode, const Site& site) {
    constexpr uint32_t modes = cast_modes<T, U>();
    if (modes == 0)
        api_error(site, "Cast: %s -> %s is not a supported conversion", type_name<U>(), type_name<T>());
    unsigned m = unsigned(mode);
    if (m >= 8 || !(modes & (1u << m)))
        api_error(site, "Cast: %s -> %s does not take %s", type_name<U>(), type_name<T>(), round_name(mode));
}

template <typename T>
constexpr int64_t int_min() { return int64_t(std::numeric_limits<T>::min()); }
template <typename T>
constexpr int64_t int_max() {
    return std::is_same_v<T, int64_t> ? INT64_MAX : int64_t(std::numeric_limits<T>::max());
}

// One element of Cast.
template <typename T, typename U>
inline T convert(const U& v, AscendC::RoundMode mode) {
    if constexpr (std::is_same_v<T, half> && std::is_same_v<U, int32_t>) {
        // dequantisation: src * the SetDeqScale half scale, rounded to nearest even
        double prod = double(v) * double(float(half::from_bits(core().vec.deq_scale)));  // exact: < 2^53
        return float_from_bits<half>(to_format(exact_of(prod), AscendC::RoundMode::CAST_RINT, HALF_FMT));
    } else if constexpr (std::is_same_v<T, float> && (std::is_same_v<U, half> || std::is_same_v<U, bfloat16_t>)) {
        // Widening, exact in every mode: the value itself (NaN as to_format makes it, the canonical
        // quiet NaN), without the exact-fraction route.
        constexpr uint16_t exp_mask = std::is_same_v<U, half> ? 0x7C00u : 0x7F80u;
        if ((v.bits & exp_mask) == exp_mask && (v.bits & uint16_t(~exp_mask & 0x7FFFu))) return bits_f32(0x7FC00000u);
        (void)mode;
        return float(v);
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
        // CAST_NONE rounds only where the conversion loses precision, and float -> float loses none:
        // the value as it is. The other modes round to an integral value.
        if (mode == AscendC::RoundMode::CAST_NONE) return v;
        Exact x = exact_of(v);
        if (x.nan || x.inf || x.exp >= 0) return v;  // already integral
        Split sp = split(x.mag, -x.exp);
        uint64_t q = sp.q + (round_up(sp, x.neg, mode) ? 1u : 0u);  // < 2^24: exact in float
        float r = float(q);
        return x.neg ? -r : r;
    } else if constexpr (is_floating_v<T>) {
        return float_from_bits<T>(to_format(exact_of(v), mode, format_of<T>()));
    } else {
        return T(to_integer(exact_of(v), mode, int_min<T>(), int_max<T>()));
    }
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(MPNPU_GEMM_BASELINE)
#define MPNPU_VEC_F16C 1
inline bool has_f16c() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    }();
    return yes;
}

// n half lanes at s as float at d: exact, so F16C's widening is convert<float, half>'s value, but for
// NaN (convert gives the canonical quiet NaN, F16C keeps the payload): those lanes are rewritten.
// (The lanes to look at again are found 8 at a time: those whose exponent is all ones.)
__attribute__((target("f16c,avx"))) inline void half_row_to_float(uint8_t* d, const uint8_t* s, uint32_t n) {
    const __m128i exp_mask = _mm_set1_epi16(0x7C00);
    const auto fix = [&](uint32_t i) {
        const uint16_t b = ld<uint16_t>(s + 2 * i);
        if ((b & 0x7C00u) == 0x7C00u && (b & 0x3FFu)) st<uint32_t>(d + 4 * i, 0x7FC00000u);
    };
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i));
        _mm256_storeu_ps(reinterpret_cast<float*>(d + 4 * i), _mm256_cvtph_ps(h));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask)))
            for (uint32_t k = i; k < i + 8; ++k) fix(k);
    }
    for (; i < n; ++i) {
        st<float>(d + 4 * i, f16_bits_to_f32(ld<uint16_t>(s + 2 * i)));
        fix(i);
    }
}

// n float lanes at s as half at d, rounded to nearest even (CAST_RINT, and CAST_NONE, which rounds
// the same): F16C's narrowing is IEEE's, so it is convert<half, float>'s value but for what convert
// makes of a value past the largest half (the largest half, where F16C gives inf) and of NaN (the
// canonical quiet NaN, where F16C keeps the payload): those lanes are rewritten. Checked against
// convert for every one of the 2^32 floats (docs/ascendc-vector-api.md, "Numerics").
// (The lanes to look at again are found 8 at a time: those whose half has an all-ones exponent.)
__attribute__((target("f16c,avx"))) inline void float_row_to_half(uint8_t* d, const uint8_t* s, uint32_t n) {
    const __m128i exp_mask = _mm_set1_epi16(0x7C00);
    const auto put = [&](uint32_t i, uint16_t h, uint32_t b) {
        if ((h & 0x7C00u) == 0x7C00u) {
            if ((b & 0x7F800000u) != 0x7F800000u) h = uint16_t((h & 0x8000u) | 0x7BFFu);  // saturate
            else if (b & 0x7FFFFFu) h = uint16_t(0x7E00u);  // NaN
        }
        st<uint16_t>(d + 2 * i, h);
    };
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(s + 4 * i));
        const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
        if (!_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask))) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * i), h);
            continue;
        }
        uint16_t hs[8];
        uint32_t bs[8];
        _mm_storeu_si128(reinterpret_cast<__m128i*>(hs), h);
        _mm256_storeu_ps(reinterpret_cast<float*>(bs), x);
        for (uint32_t k = 0; k < 8; ++k) put(i + k, hs[k], bs[k]);
    }
    for (; i < n; ++i) {
        const uint32_t b = ld<uint32_t>(s + 4 * i);
        put(i, uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(ld<float>(s + 4 * i)), _MM_FROUND_TO_NEAREST_INT), 0)),
            b);
    }
}

// n bfloat16 lanes at s as float at d: exact (the bits shifted up), but for NaN, which becomes the
// canonical quiet NaN as convert makes it; 8 at a time. d and s are apart (a wider destination).
__attribute__((target("avx2"))) inline void bf16_row_to_float(uint8_t* d, const uint8_t* s, uint32_t n) {
    const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000),
                  quiet_nan = _mm256_set1_epi32(0x7FC00000);
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i w =
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i))), 16);
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(w, magnitude), inf);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 4 * i), _mm256_blendv_epi8(w, quiet_nan, nan));
    }
    for (; i < n; ++i) {
        const uint32_t w = uint32_t(ld<uint16_t>(s + 2 * i)) << 16;
        st<uint32_t>(d + 4 * i, (w & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC00000u : w);
    }
}
#endif

// n float lanes at s as bfloat16 at d, rounded to nearest even (CAST_RINT): the carry of adding half
// a unit (less one, plus the kept lowest bit) is the rounding, subnormals included; a finite value
// that rounds past the largest bfloat16 saturates to it and NaN becomes the canonical quiet NaN, as in
// convert. Checked against convert for every one of the 2^32 floats.
inline void float_row_to_bf16(uint8_t* d, const uint8_t* s, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t b = ld<uint32_t>(s + 4 * i);
        uint32_t r = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
        const bool special = (b & 0x7F800000u) == 0x7F800000u;  // inf stays inf: its low half is 0
        if (!special && (r & 0x7F80u) == 0x7F80u) r = (r & 0x8000u) | 0x7F7Fu;
        if (special && (b & 0x7FFFFFu)) r = 0x7FC0u;
        st<uint16_t>(d + 2 * i, uint16_t(r));
    }
}

template <typename T, typename U>
inline void cast_apply(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                       const AscendC::LocalTensor<U>& src, const Geo& gs, AscendC::RoundMode mode, const Site& site) {
    // Lane by lane with convert, or with ``row`` over each run of contiguous lanes (the same bits).
    // (generic: convert<T, U> is instantiated only for the pairs a branch below takes)
    const auto cast = [&](auto... row) {
        unary("Cast", p, dst, gd, src, gs, site, [mode](const U& x) { return convert<T, U>(x, mode); }, row...);
    };
#ifdef MPNPU_VEC_F16C
    if constexpr (std::is_same_v<T, float> && std::is_same_v<U, half>) {
        if (has_f16c()) return cast([](uint8_t* d, const uint8_t* s, uint32_t n) { half_row_to_float(d, s, n); });
    }
    if constexpr (std::is_same_v<T, half> && std::is_same_v<U, float>) {
        if (has_f16c() && (mode == AscendC::RoundMode::CAST_RINT || mode == AscendC::RoundMode::CAST_NONE))
            return cast([](uint8_t* d, const uint8_t* s, uint32_t n) { float_row_to_half(d, s, n); });
    }
#endif
#ifdef MPNPU_VEC_F16C  // (bf16_row_to_float is defined with the F16C rows)
    if constexpr (std::is_same_v<T, float> && std::is_same_v<U, bfloat16_t>) {
        if (has_avx2()) return cast([](uint8_t* d, const uint8_t* s, uint32_t n) { bf16_row_to_float(d, s, n); });
    }
#endif
    if constexpr (std::is_same_v<T, bfloat16_t> && std::is_same_v<U, float>) {
        if (mode == AscendC::RoundMode::CAST_RINT)
            return cast([](uint8_t* d, const uint8_t* s, uint32_t n) { float_row_to_bf16(d, s, n); });
    }
    if constexpr (cast_modes<T, U>() != 0) cast();  // (cast_check has refused any other pair)
}

// half -> int4b_t: lane j of repeat r goes to 4-bit slot r * dRep * 64 + (j / 64) * dBlk * 64 + j % 64
// of dst's bytes (dst strides in 32-byte blocks), as int8 conversion then saturation to [-8, 7].
template <typename U>
inline void cast_to_int4(const Plan& p, const AscendC::LocalTensor<int4b_t>& dst, uint64_t dBlk, uint64_t dRep,
                         const AscendC::LocalTensor<U>& src, const Geo& gs, AscendC::RoundMode mode, const Site& site) {
    const char* name = "Cast";
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (p.none()) return;
    auto slot = [&](uint64_t r, uint32_t j) { return r * dRep * 64 + uint64_t(j / 64) * dBlk * 64 + j % 64; };
    Hull hd;
    for (uint64_t r = 0; r < p.repeats; ++r)
        each_lane(p.bits(r), [&](uint32_t j) { hd.add(slot(r, j) / 2, slot(r, j) / 2 + 1); });
    touch(src, 'R', hull_of(p, sizeof(U), gs), site, name);
    touch(dst, 'W', hd, site, name);
    if constexpr (!std::is_same_v<U, half>) return;  // (refused by cast_int4_check before)
    Lane ls = lane_of(src, gs);
    std::vector<std::pair<uint64_t, int8_t>> out;
    for (uint64_t r = 0; r < p.repeats; ++r)
        each_lane(p.bits(r), [&](uint32_t j) {
            int8_t v = convert<int8_t, U>(ld<U>(ls.at(r, j)), mode);
            out.emplace_back(slot(r, j), int8_t(v < -8 ? -8 : v > 7 ? 7 : v));
        });
    uint8_t* d = base(dst);
    for (const auto& [s, v] : out) {
        uint8_t& byte = d[s / 2];
        const uint8_t nib = uint8_t(v) & 0xF;
        byte = (s % 2) ? uint8_t((byte & 0x0F) | (nib << 4)) : uint8_t((byte & 0xF0) | nib);
    }
}

template <typename U>
inline void cast_int4_level0(const Plan& p, const AscendC::LocalTensor<int4b_t>& dst, const AscendC::LocalTensor<U>& src,
                             const AscendC::UnaryRepeatParams& rp, AscendC::RoundMode mode, const Site& site) {
    cast_to_int4(p, dst, rp.dstBlkStride, rp.dstRepStride, src, geo(rp.srcBlkStride, rp.srcRepStride), mode, site);
}

template <typename T, typename U>
inline void cast_int4_check(AscendC::RoundMode mode, const Site& site) {
    if constexpr (!std::is_same_v<U, half>)
        api_error(site, "Cast: %s -> int4b_t is not a supported conversion (it takes half)", type_name<U>());
    else cast_check<int8_t, half>(mode, site);
}

template <typename T, typename U>
constexpr uint32_t cast_lanes() {
    if constexpr (std::is_same_v<T, int4b_t>) return 128;  // (a repeat of half sources)
    else return lanes_for(sizeof(T) > sizeof(U) ? uint32_t(sizeof(T)) : uint32_t(sizeof(U)));
}

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint32_t count, MPNPU_SITE) {
    if constexpr (std::is_same_v<T, int4b_t>) {
        mpnpu::vec::cast_int4_check<T, U>(roundMode, site);
        if (count > dst.GetSize())
            mpnpu::api_error(site, "Cast: count %u exceeds dst's %llu int4b_t values", count,
                             (unsigned long long)dst.GetSize());
        mpnpu::vec::check_count(src, count, site, "Cast", "src");
        mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, 128, site, "Cast");
        mpnpu::vec::cast_to_int4(p, dst, 1, 2, src, mpnpu::vec::contiguous(128, sizeof(U)), roundMode, site);
    } else {
        mpnpu::vec::cast_check<T, U>(roundMode, site);
        if (count > 0) {
            mpnpu::vec::check_count(dst, count, site, "Cast", "dst");
            mpnpu::vec::check_count(src, count, site, "Cast", "src");
        }
        constexpr uint32_t lanes = mpnpu::vec::cast_lanes<T, U>();
        mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, "Cast");
        mpnpu::vec::cast_apply(p, dst, mpnpu::vec::contiguous(lanes, sizeof(T)), src,
                               mpnpu::vec::contiguous(lanes, sizeof(U)), roundMode, site);
    }
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask[], const int64_t repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {
    constexpr uint32_t lanes = mpnpu::vec::cast_lanes<T, U>();
    if constexpr (std::is_same_v<T, int4b_t>) {
        mpnpu::vec::cast_int4_check<T, U>(roundMode, site);
        mpnpu::vec::cast_int4_level0(mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, lanes, site, "Cast"), dst, src,
                                     repeatParams, roundMode, site);
    } else {
        mpnpu::vec::cast_check<T, U>(roundMode, site);
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, lanes, site, "Cast");
        mpnpu::vec::cast_apply(p, dst, mpnpu::vec::geo(repeatParams.dstBlkStride, repeatParams.dstRepStride), src,
                               mpnpu::vec::geo(repeatParams.srcBlkStride, repeatParams.srcRepStride), roundMode, site);
    }
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask, const int64_t repeatTime, const UnaryRepeatParams& repeatParams, MPNPU_SITE) {
    constexpr uint32_t lanes = mpnpu::vec::cast_lanes<T, U>();
    if constexpr (std::is_same_v<T, int4b_t>) {
        mpnpu::vec::cast_int4_check<T, U>(roundMode, site);
        mpnpu::vec::cast_int4_level0(mpnpu::vec::plan_level0_len<isSetMask>(mask, repeatTime, lanes, site, "Cast"), dst, src,
                                     repeatParams, roundMode, site);
    } else {
        mpnpu::vec::cast_check<T, U>(roundMode, site);
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(mask, repeatTime, lanes, site, "Cast");
        mpnpu::vec::cast_apply(p, dst, mpnpu::vec::geo(repeatParams.dstBlkStride, repeatParams.dstRepStride), src,
                               mpnpu::vec::geo(repeatParams.srcBlkStride, repeatParams.srcRepStride), roundMode, site);
    }
}

// The scale an int32 -> half Cast multiplies by.
inline void SetDeqScale(half scale, MPNPU_SITE) {
    (void)site;
    mpnpu::core().vec.deq_scale = scale.bits;
}

// The int16 -> 8-bit dequant forms feed CastDequant, which mpnpu does not implement.
inline void SetDeqScale(float scale, int16_t offset, bool signMode, MPNPU_SITE) {
    (void)scale;
    (void)offset;
    (void)signMode;
    mpnpu::unsupported(site, "SetDeqScale(scale, offset, signMode): CastDequant is not implemented by mpnpu");
}

// The vector-dequant parameters of CastDequant (not implemented).
struct VdeqInfo {
    float vdeqScale[16] = {};
    int16_t vdeqOffset[16] = {};
    bool vdeqSignMode[16] = {};
};

template <typename T>
inline void SetDeqScale(const LocalTensor<T>& vdeq, const VdeqInfo& vdeqInfo, MPNPU_SITE) {
    static_assert(mpnpu::vec::refused<T>, "SetDeqScale(vdeq, vdeqInfo) feeds CastDequant, which mpnpu does not "
                                          "implement");
    (void)vdeq, (void)vdeqInfo, (void)site;
}

// -- scalar conversion ----------------------------------------------------------------------------------
//
// Cast<T, U, roundMode>(value) and its older name ScalarCast: one scalar converted on the scalar unit
// (no memory touched), with the pairs and modes documented for it: float -> half with CAST_ODD, float
// -> int32_t with CAST_ROUND, CAST_CEIL, CAST_FLOOR or CAST_RINT (saturating, NaN -> 0, as the vector
// Cast). Another pair or mode is a compile error.
template <typename T, typename U, RoundMode roundMode>
constexpr bool scalar_cast_ok =
    std::is_same_v<T, float> &&
    ((std::is_same_v<U, half> && roundMode == RoundMode::CAST_ODD) ||
     (std::is_same_v<U, int32_t> && (roundMode == RoundMode::CAST_ROUND || roundMode == RoundMode::CAST_CEIL ||
                                     roundMode == RoundMode::CAST_FLOOR || roundMode == RoundMode::CAST_RINT)));

template <typename T, typename U, RoundMode roundMode>
inline U ScalarCast(T valueIn) {
    static_assert(scalar_cast_ok<T, U, roundMode>,
                  "ScalarCast / scalar Cast takes float -> half with CAST_ODD, or float -> int32_t with CAST_ROUND, "
                  "CAST_CEIL, CAST_FLOOR or CAST_RINT");
    return mpnpu::vec::convert<U, T>(valueIn, roundMode);
}
template <typename T, typename U, RoundMode roundMode>
inline U Cast(T valueIn) {
    return ScalarCast<T, U, roundMode>(valueIn);
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_CAST_H
