// Parameter structs and enumerations of the vector instructions: the stride sets of the level-0
// ("high-dimensional") forms, rounding modes, compare / select / reduce modes, mask modes and the
// precision configs some unary calls take as a template argument.
//
// Strides are in 32-byte data blocks: a block stride is the step between the 8 blocks of one
// repeat, a repeat stride the step between the same block of consecutive repeats. The fields and
// constructor argument orders follow the documented structs, so braced initialisers written for
// the device ({1, 1, 1, 8, 8, 8}) mean the same here.
#ifndef MPNPU_VECTOR_PARAMS_H
#define MPNPU_VECTOR_PARAMS_H

#include <cstdint>

namespace AscendC {

constexpr int32_t DEFAULT_BLK_NUM = 8;           // blocks per repeat
constexpr int32_t DEFAULT_BLK_STRIDE = 1;        // consecutive blocks
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;     // consecutive repeats
constexpr uint32_t ONE_BLK_SIZE = 32;            // bytes in a data block
// On no API page: the dev kit's guide and matmul samples divide a byte count by it to get the data
// blocks a DataCopyParams' blockLen counts, so it is a data block's bytes.
constexpr uint32_t DEFAULT_C0_SIZE = ONE_BLK_SIZE;
// Floats in one data block. On no API page: kernels use it as a block's float count
// (``repStride = alignedLen / ONE_BLK_FLOAT_NUM``), some after including
// impl/dav_c220/kernel_operator_reg_others_impl.h, some without.
constexpr uint32_t ONE_BLK_FLOAT_NUM = ONE_BLK_SIZE / sizeof(float);
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;   // bytes one repeat of a full-width operand covers
// On no API page either; public kernels use them, with the meanings their names give, through
// kernel_operator.h alone:
constexpr uint32_t B32_BYTE_SIZE = 4;                                               // bytes of a 32-bit element
constexpr uint32_t B32_DATA_NUM_PER_BLOCK = ONE_BLK_SIZE / B32_BYTE_SIZE;           // 32-bit elements per block
constexpr uint32_t B32_DATA_NUM_PER_REPEAT = ONE_REPEAT_BYTE_SIZE / B32_BYTE_SIZE;  // ... per full repeat
constexpr uint64_t FULL_MASK = ~uint64_t(0);  // a normal-mode mask word with every lane on
// Brcb takes this many source elements per repeat, each filling one data block of the result
constexpr uint32_t BRCB_BROADCAST_NUMBER = 8;

// Strides of a two-source instruction (dst, src0, src1).
struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                       const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn),
          src0BlkStride(src0BlkStrideIn),
          src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn),
          src0RepStride(src0RepStrideIn),
          src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;  // reserved
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;  // reserved
    bool strideSizeMode = false;    // reserved
};

// Strides of a one-source instruction (dst, src); also the tensor-scalar calls.
// Copy's repeat parameters (UB -> UB by the vector unit): block strides and repeat sizes in 32-byte
// blocks, in the documented field order.
struct CopyRepeatParams {
    uint16_t dstStride = 1;
    uint16_t srcStride = 1;
    uint16_t dstRepeatSize = 8;
    uint16_t srcRepeatSize = 8;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn),
          srcBlkStride(srcBlkStrideIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn, const bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn),
          srcBlkStride(srcBlkStrideIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn),
          halfBlock(halfBlockIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;  // reserved
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;  // reserved
    bool strideSizeMode = false;    // reserved
    bool halfBlock = false;         // CastDequant only (not implemented)
};

// Destination strides of Brcb (the source is always read contiguously). A block stride of 0 is
// taken as 1, as the documented reference computation does.
struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;  // reserved
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t src1BlkStride = DEFAULT_BLK_STRIDE;  // reserved
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;  // reserved
    bool repeatStrideMode = false;                  // reserved
    bool strideSizeMode = false;                    // reserved
};

// Destination strides of Gatherb (block gather). A block stride of 0 is taken as 1.
// GatherMask's strides and repeats (src0BlockStride and the repeat strides in 32-byte blocks).
struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};
// GatherMask's mode template argument (reserved by the documentation: every mode computes the same).
enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V1;

struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;  // reserved
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t src0BlkStride = DEFAULT_BLK_STRIDE;  // reserved
    uint16_t src1BlkStride = DEFAULT_BLK_STRIDE;  // reserved
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;  // reserved
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;  // reserved
    bool repeatStrideMode = false;                  // reserved
    bool strideSizeMode = false;                    // reserved
};

// How Cast rounds when the destination cannot hold the value exactly.
enum class RoundMode {
    CAST_NONE = 0,  // nearest-even when precision is lost, otherwise exact
    CAST_RINT,      // nearest, ties to even
    CAST_FLOOR,     // toward minus infinity
    CAST_CEIL,      // toward plus infinity
    CAST_ROUND,     // nearest, ties away from zero
    CAST_TRUNC,     // toward zero
    CAST_ODD,       // toward zero, then the last bit set if anything was dropped (round to odd)
    CAST_HYBRID,    // stochastic rounding to hifloat8 (not on the products mpnpu models)
};

// Compare modes: dst bit = (src0 OP src1).
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };

// Select modes: where the select bits come from and what src1 is.
enum class SELMODE : uint8_t {
    VSEL_CMPMASK_SPR = 0,     // the same select bits (one repeat's worth) for every repeat
    VSEL_TENSOR_SCALAR_MODE,  // src1 is a scalar; select bits consumed continuously
    VSEL_TENSOR_TENSOR_MODE,  // src1 is a tensor; select bits consumed continuously
};

enum class ReduceType { SUM = 0, MAX, MIN };

// Where ReduceRepeat / WholeReduceMax / Min put the extreme value and its index.
enum class ReduceOrder {
    ORDER_VALUE_INDEX = 0,  // [value, index] per repeat
    ORDER_INDEX_VALUE,      // [index, value]
    ORDER_ONLY_VALUE,       // [value]
    ORDER_ONLY_INDEX,       // [index] (32 bits)
};

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

// Precision configs of the unary calls (a template argument). mpnpu computes every algorithm the
// same way (in float through <cmath>), so they only have to compile.
enum class ExpAlgo { INTRINSIC = 0, PRECISION_1ULP_FTZ_TRUE, PRECISION_1ULP_FTZ_FALSE };
struct ExpConfig {
    ExpAlgo algo = ExpAlgo::INTRINSIC;
};
inline constexpr ExpConfig DEFAULT_EXP_CONFIG = {ExpAlgo::INTRINSIC};

enum class LnAlgo { INTRINSIC = 0, PRECISION_1ULP_FTZ_TRUE, PRECISION_1ULP_FTZ_FALSE };
struct LnConfig {
    LnAlgo algo = LnAlgo::INTRINSIC;
};
inline constexpr LnConfig DEFAULT_LN_CONFIG = {LnAlgo::INTRINSIC};

enum class SqrtAlgo { INTRINSIC = 0, FAST_INVERSE, PRECISION_1ULP_FTZ_TRUE, PRECISION_0ULP_FTZ_FALSE,
                      PRECISION_1ULP_FTZ_FALSE };
struct SqrtConfig {
    SqrtAlgo algo = SqrtAlgo::INTRINSIC;
};
inline constexpr SqrtConfig DEFAULT_SQRT_CONFIG = {SqrtAlgo::INTRINSIC};

enum class RsqrtAlgo { INTRINSIC = 0, FAST_INVERSE, PRECISION_1ULP_FTZ_TRUE, PRECISION_0ULP_FTZ_FALSE,
                       PRECISION_1ULP_FTZ_FALSE };
struct RsqrtConfig {
    RsqrtAlgo algo = RsqrtAlgo::INTRINSIC;
};
inline constexpr RsqrtConfig DEFAULT_RSQRT_CONFIG = {RsqrtAlgo::INTRINSIC};

enum class ReciprocalAlgo { INTRINSIC = 0, PRECISION_1ULP_FTZ_TRUE, PRECISION_1ULP_FTZ_FALSE };
struct ReciprocalConfig {
    ReciprocalAlgo algo = ReciprocalAlgo::INTRINSIC;
};
inline constexpr ReciprocalConfig DEFAULT_RECIPROCAL_CONFIG = {ReciprocalAlgo::INTRINSIC};

enum class DivAlgo { INTRINSIC = 0, DIFF_COMPENSATION, PRECISION_1ULP_FTZ_TRUE, PRECISION_0ULP_FTZ_TRUE,
                     PRECISION_0ULP_FTZ_FALSE, PRECISION_1ULP_FTZ_FALSE };
struct DivConfig {
    DivAlgo algo = DivAlgo::INTRINSIC;
};
inline constexpr DivConfig DEFAULT_DIV_CONFIG = {DivAlgo::INTRINSIC};

}  // namespace AscendC

#endif  // MPNPU_VECTOR_PARAMS_H
