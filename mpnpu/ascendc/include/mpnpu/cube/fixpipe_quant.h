// The conversion a move out of L0C applies to each value (Fixpipe, the L0C DataCopy): quantPre with
// ReLU, as the documentation of the fixpipe's on-the-way quantisation describes it for this chip class.
//
//   F322F16 / F322BF16   float -> half / bfloat16_t, rounding to nearest even (ReLU first, if on)
//   DEQF16  / VDEQF16    int32_t -> half:           value x scale
//   QF322B8_PRE / V...   float   -> int8_t/uint8_t: value x scale + offset, rounded, saturated
//   REQ8    / VREQ8      int32_t -> int8_t/uint8_t: value x scale + offset, rounded, saturated
//
// A scale word is a uint64_t: bits 0-31 a float of which the hardware keeps 1 sign, 8 exponent and 10
// mantissa bits (bits 13-31); bits 32-35 a shift N (0b0000 meaning 1 ... 0b1111 meaning 16) and bit 36
// the mode-control bit: set, an int32_t input is first shifted right by N and taken as an int16_t;
// bits 37-45 a 9-bit integer offset (the B8 modes); bit 46 whether the B8 result is signed. The scalar
// modes take one word (deqScalar, or SetFixpipePreQuantFlag's); the vector ("V") modes one per column
// of C (the cbufWorkspace tensor in L1, or SetFixPipeConfig's table). A positive value is multiplied
// by the scale; a negative one by the scale too, or by 0 when ReLU is on.
#ifndef MPNPU_CUBE_FIXPIPE_QUANT_H
#define MPNPU_CUBE_FIXPIPE_QUANT_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../types.h"
#include "params.h"

namespace mpnpu {
namespace cube {

struct QuantRule {
    QuantMode_t mode = QuantMode_t::NoQuant;
    bool relu = false;
    uint64_t scalar = 0;             // the scalar modes' word
    const uint64_t* table = nullptr;  // the vector modes' words, one per column
};

inline bool quant_is_vector(QuantMode_t q) {
    return q == QuantMode_t::VDEQF16 || q == QuantMode_t::VQF322B8_PRE || q == QuantMode_t::VREQ8;
}

inline const char* quant_name(QuantMode_t q) {
    static const char* const names[] = {"NoQuant", "F322F16", "F322BF16", "DEQF16",     "VDEQF16",
                                        "QF322B8_PRE", "VQF322B8_PRE", "REQ8", "VREQ8"};
    const int i = int(q);
    return i >= 0 && i < int(sizeof(names) / sizeof(names[0])) ? names[i] : "an unknown mode";
}

// Whether quantPre converts L0C's U to T (the combinations the documentation lists for this chip class).
template <typename T, typename U>
constexpr bool quant_converts(QuantMode_t q) {
    constexpr bool f32 = std::is_same_v<U, float>, s32 = std::is_same_v<U, int32_t>;
    constexpr bool b8 = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;
    switch (q) {
        case QuantMode_t::NoQuant: return std::is_same_v<T, U>;
        case QuantMode_t::F322F16: return f32 && std::is_same_v<T, half>;
        case QuantMode_t::F322BF16: return f32 && std::is_same_v<T, bfloat16_t>;
        case QuantMode_t::DEQF16:
        case QuantMode_t::VDEQF16: return s32 && std::is_same_v<T, half>;
        case QuantMode_t::QF322B8_PRE:
        case QuantMode_t::VQF322B8_PRE: return f32 && b8;
        case QuantMode_t::REQ8:
        case QuantMode_t::VREQ8: return s32 && b8;
    }
    return false;
}

// The scale of a word: its low 32 bits as a float with the 13 lowest mantissa bits cleared.
inline float quant_scale(uint64_t word) {
    const uint32_t bits = uint32_t(word) & 0xFFFFE000u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline int quant_offset(uint64_t word) {
    const int raw = int((word >> 37) & 0x1FF);
    return raw >= 256 ? raw - 512 : raw;  // a 9-bit two's-complement integer
}

template <typename T>
inline T saturate_round(float f) {
    const float lo = float(std::numeric_limits<T>::min()), hi = float(std::numeric_limits<T>::max());
    if (std::isnan(f)) return T(0);
    const float r = std::nearbyint(f);
    return T(r < lo ? lo : r > hi ? hi : r);
}

// A vector mode's words for ``columns`` columns, copied (the instruction reads its table before it
// writes anything); empty for the other modes.
inline std::vector<uint64_t> table_words(const QuantRule& q, uint64_t columns) {
    if (!quant_is_vector(q.mode) || q.table == nullptr) return {};
    return std::vector<uint64_t>(q.table, q.table + columns);
}

// The value ``v`` of L0C in column ``col`` as it leaves for a T.
template <typename T, typename U>
inline T quant_convert(const QuantRule& q, U v, uint64_t col) {
    if (q.mode == QuantMode_t::NoQuant || q.mode == QuantMode_t::F322F16 || q.mode == QuantMode_t::F322BF16) {
        if (q.relu && v < U(0)) v = U(0);
        if constexpr (std::is_same_v<T, U>) return v;
        else return from_float<T>(float(v));
    }
    const uint64_t word = quant_is_vector(q.mode) ? q.table[col] : q.scalar;
    float x;
    if constexpr (std::is_same_v<U, int32_t>) {
        int32_t in = v;
        if ((word >> 36) & 1) {  // mode control: shift right by N, then as an int16_t
            in >>= int((word >> 32) & 0xF) + 1;
            in = in < -32768 ? -32768 : in > 32767 ? 32767 : in;
        }
        x = float(in);
    } else {
        x = float(v);
    }
    const float scale = quant_scale(word);
    x = x >= 0.0f ? x * scale : (q.relu ? 0.0f : x * scale);
    if constexpr (std::is_same_v<T, half>) {
        const float lim = 65504.0f;
        return from_float<half>(x < -lim ? -lim : x > lim ? lim : x);
    } else {
        return saturate_round<T>(x + float(quant_offset(word)));
    }
}

}  // namespace cube
}  // namespace mpnpu

#endif  // MPNPU_CUBE_FIXPIPE_QUANT_H
