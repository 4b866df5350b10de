// Data types and enumerations of the kernel API: half, bfloat16_t, pipes, events, positions and
// the data-movement parameter structs. (Vector-instruction enums and parameter structs live in
// mpnpu/vector/params.h.)
#ifndef MPNPU_TYPES_H
#define MPNPU_TYPES_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lib_types.h"  // (ShapeInfo carries a DataFormat)

namespace mpnpu {

// float32 <-> 16-bit floats by bit manipulation, rounding to nearest with ties to even (what the
// device's conversions do by default), independent of the host compiler's own half support.
inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float bits_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline uint16_t f32_to_f16_bits(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t man = x & 0x7FFFFFu;
    if (exp == 0xFFu) return uint16_t(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));  // inf / NaN
    int32_t e = int32_t(exp) - 127 + 15;
    if (e >= 0x1F) return uint16_t(sign | 0x7C00u);  // overflow: inf
    if (e <= 0) {                                    // subnormal half (or zero)
        if (e < -10) return uint16_t(sign);
        man |= 0x800000u;
        uint32_t shift = uint32_t(14 - e);
        uint32_t half_man = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_man & 1u))) ++half_man;
        return uint16_t(sign | half_man);
    }
    uint32_t half_man = man >> 13;
    uint32_t rem = man & 0x1FFFu;
    uint32_t out = sign | (uint32_t(e) << 10) | half_man;
    if (rem > 0x1000u || (rem == 0x1000u && (half_man & 1u))) ++out;  // may carry into the exponent: inf
    return uint16_t(out);
}

inline float f16_bits_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0) {
        if (man == 0) return bits_f32(sign);
        int e = -1;  // normalise the subnormal
        do {
            ++e;
            man <<= 1;
        } while (!(man & 0x400u));
        return bits_f32(sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3FFu) << 13));
    }
    if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (man << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

inline uint16_t f32_to_bf16_bits(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7FFFu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
}

inline float bf16_bits_to_f32(uint16_t b) { return bits_f32(uint32_t(b) << 16); }

}  // namespace mpnpu

// IEEE binary16, stored as its bits; arithmetic goes through float (each result rounded back).
struct half {
    uint16_t bits = 0;
    constexpr half() = default;
    // implicit from any number, as kernels expect (half x = 0; half y = 1.5f;)
    template <typename A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
    half(A v) : bits(mpnpu::f32_to_f16_bits(float(v))) {}  // NOLINT
    operator float() const { return mpnpu::f16_bits_to_f32(bits); }
    static half from_bits(uint16_t b) {
        half h;
        h.bits = b;
        return h;
    }
    half& operator+=(float o) { return *this = half(float(*this) + o); }
    half& operator-=(float o) { return *this = half(float(*this) - o); }
    half& operator*=(float o) { return *this = half(float(*this) * o); }
    half& operator/=(float o) { return *this = half(float(*this) / o); }
    half operator-() const { return from_bits(uint16_t(bits ^ 0x8000u)); }
};

// bfloat16, stored as its bits (the top half of a float32).
struct bfloat16_t {
    uint16_t bits = 0;
    constexpr bfloat16_t() = default;
    template <typename A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
    bfloat16_t(A v) : bits(mpnpu::f32_to_bf16_bits(float(v))) {}  // NOLINT
    operator float() const { return mpnpu::bf16_bits_to_f32(bits); }
    static bfloat16_t from_bits(uint16_t b) {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
    bfloat16_t operator-() const { return from_bits(uint16_t(bits ^ 0x8000u)); }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit floats must be 2 bytes");

namespace mpnpu {
// Reading any element type as float and back, for instructions that compute in float.
template <typename T>
inline float to_float(T v) { return static_cast<float>(v); }
template <typename T>
inline T from_float(float f) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) return T(f);
    else return static_cast<T>(f);
}
template <typename T>
constexpr bool is_float16_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
template <typename T>
constexpr bool is_floating_v = std::is_floating_point_v<T> || is_float16_v<T>;
}  // namespace mpnpu

// -- pipes and events (global names, as in Ascend C) --------------------------------------------------

enum pipe_t : uint8_t {
    PIPE_S = 0,
    PIPE_V = 1,
    PIPE_M = 2,
    PIPE_MTE1 = 3,
    PIPE_MTE2 = 4,
    PIPE_MTE3 = 5,
    PIPE_ALL = 6,
    PIPE_FIX = 7,
};

enum event_t : uint8_t {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
};

typedef unsigned char __gm_uint8_t;  // the bytes behind GM_ADDR

// A signed 4-bit integer. In memory two share a byte, the even element in the low 4 bits (the only
// call that writes them packed here is Cast half -> int4b_t); as a scalar type, one per int8.
struct int4b_t {
    int8_t value = 0;
    constexpr int4b_t() = default;
    constexpr int4b_t(int v) : value(int8_t(((v + 8) & 0xF) - 8)) {}  // NOLINT: wraps into -8..7
    constexpr operator int() const { return value; }
};

namespace mpnpu {
// The bytes n elements of T take, and the elements of T b bytes hold: the API counts int4b_t
// elements (a tensor's size, an offset), two to a byte.
template <typename T>
constexpr uint64_t elem_bytes(uint64_t n) {
    if constexpr (std::is_same_v<T, ::int4b_t>) return n / 2;
    else return n * sizeof(T);
}
template <typename T>
constexpr uint64_t bytes_elems(uint64_t b) {
    if constexpr (std::is_same_v<T, ::int4b_t>) return b * 2;
    else return b / sizeof(T);
}
}  // namespace mpnpu

namespace AscendC {

// HardEvent::SRC_DST: pipe DST waits for pipe SRC. The numbering is mpnpu's own.
enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3,
    MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3,
    MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, S_M, S_MTE1, S_FIX,
    MAX
};

enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, C2PIPE2GM,
    C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;

enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

// Data movement parameters (lengths and strides as documented for each call).
struct DataCopyParams {
    uint16_t blockCount = 1;  // how many blocks
    uint16_t blockLen = 0;    // each block's length in 32-byte units
    uint16_t srcStride = 0;   // gap between source blocks, in 32-byte units
    uint16_t dstStride = 0;   // gap between destination blocks, in 32-byte units
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcGap, uint16_t dstGap)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;  // how many blocks
    uint32_t blockLen = 0;    // each block's length in bytes
    uint32_t srcStride = 0;   // gap between source blocks: bytes in GM, 32-byte units in UB
    uint32_t dstStride = 0;   // gap between destination blocks: bytes in GM, 32-byte units in UB
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcGap, uint32_t dstGap, uint32_t reserved = 0)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap), rsv(reserved) {}
};

// The enhanced local copy's parameters (the L0C -> UB page). Their path exists on the inference chips
// alone: on this chip class the call is accepted and copies as the basic local copy does.
enum class BlockMode : uint8_t {
    BLOCK_MODE_NORMAL,
    BLOCK_MODE_MATRIX,
    BLOCK_MODE_VECTOR,
    BLOCK_MODE_SMALL_CHANNEL,
    BLOCK_MODE_DEPTHWISE
};
enum class DeqScale : uint8_t { DEQ_NONE, DEQ, VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16 };
}  // namespace AscendC
// (the pad mode's type is a global name; its one value used by kernels: no padding, the page's
// "reserved")
enum class pad_t : uint8_t { PAD_NONE = 0 };
namespace AscendC {
struct DataCopyEnhancedParams {
    BlockMode blockMode = BlockMode::BLOCK_MODE_NORMAL;
    DeqScale deqScale = DeqScale::DEQ_NONE;
    uint64_t deqValue = 0;
    uint8_t sidStoreMode = 0;
    bool isRelu = false;
    pad_t padMode = pad_t::PAD_NONE;
    uint64_t padValue = 0;
    uint64_t deqTensorAddr = 0;
    DataCopyEnhancedParams() = default;
    DataCopyEnhancedParams(BlockMode blockModeIn, DeqScale deqScaleIn, uint64_t deqValueIn, uint8_t sidStoreModeIn,
                           bool isReluIn, pad_t padModeIn, uint64_t padValueIn)
        : blockMode(blockModeIn), deqScale(deqScaleIn), deqValue(deqValueIn), sidStoreMode(sidStoreModeIn),
          isRelu(isReluIn), padMode(padModeIn), padValue(padValueIn) {}
};

// Names kernels give the copy parameters' defaults (on no API page; inferred from their use, as the
// burst count and the strides of a copy of one contiguous run): the documented defaults of
// DataCopyParams / DataCopyExtParams, one block and no gaps.
constexpr uint16_t DEFAULT_DATA_COPY_NBURST = 1;
constexpr uint32_t DEFAULT_DATA_COPY_STRIDE = 0;

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;        // fill the padding with paddingValue (else SetPadValue's value, or undefined)
    uint8_t leftPadding = 0;   // elements padded before each block
    uint8_t rightPadding = 0;  // elements padded after each block
    T paddingValue = T();
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    DataCopyPadParams(bool pad, uint8_t left, uint8_t right, uint64_t value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

// IsSameType<A, B>::value: whether A and B are one type (a compile-time trait kernels branch on).
template <typename A, typename B>
struct IsSameType {
    static constexpr bool value = std::is_same_v<A, B>;
};

// TrueType / FalseType: two distinct types for compile-time detection (on no API page; kernels use
// them unqualified in SFINAE checks, `decltype(..., TrueType())` against `FalseType check(...)`, and
// compare the result with IsSameType).
using TrueType = std::true_type;
using FalseType = std::false_type;

// Ceil(a, b): a / b rounded up, for non-negative integers (0 when b is 0).
template <typename A, typename B>
__attribute__((always_inline)) constexpr inline std::common_type_t<A, B> Ceil(A a, B b) {
    static_assert(std::is_integral_v<A> && std::is_integral_v<B>, "Ceil(a, b): integer operands");
    using C = std::common_type_t<A, B>;
    return C(b) == 0 ? C(0) : C((C(a) + C(b) - 1) / C(b));
}

struct ShapeInfo {
    uint8_t shapeDim = 0;
    uint8_t originalShapeDim = 0;
    uint32_t shape[8] = {};
    uint32_t originalShape[8] = {};
    DataFormat dataFormat = DataFormat::ND;
    ShapeInfo() = default;
    ShapeInfo(uint8_t inputShapeDim, const uint32_t inputShape[]) : ShapeInfo(inputShapeDim, inputShape, 0, nullptr) {}
    ShapeInfo(uint8_t inputShapeDim, const uint32_t inputShape[], DataFormat inputFormat)
        : ShapeInfo(inputShapeDim, inputShape, inputShapeDim, inputShape, inputFormat) {}
    ShapeInfo(uint8_t inputShapeDim, const uint32_t inputShape[], uint8_t inputOriginalShapeDim,
              const uint32_t inputOriginalShape[], DataFormat inputFormat = DataFormat::ND)
        : shapeDim(inputShapeDim > 8 ? 8 : inputShapeDim),
          originalShapeDim(inputOriginalShapeDim > 8 ? 8 : inputOriginalShapeDim),
          dataFormat(inputFormat) {
        for (uint8_t i = 0; i < shapeDim; ++i) shape[i] = inputShape[i];
        for (uint8_t i = 0; i < originalShapeDim; ++i) originalShape[i] = inputOriginalShape[i];
    }
};

}  // namespace AscendC

#endif  // MPNPU_TYPES_H
