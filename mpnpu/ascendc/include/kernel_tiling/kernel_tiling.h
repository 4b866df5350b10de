// Tiling structs shared by host and kernel: TCubeTiling, the matmul tiling the cube core's matmul
// API reads (every field an int, as documented; the order is mpnpu's own, so values are set by
// name, as CPU-debug tests and mpnpu's tiling helper do).
#ifndef MPNPU_KERNEL_TILING_H
#define MPNPU_KERNEL_TILING_H

#include <cstddef>
#include <cstdint>
#include <cstring>  // (tiling headers copy structs with memcpy)
#include <type_traits>

#include "../mpnpu/datatype.h"  // (tiling headers name ge::DataType values)

struct TCubeTiling {
    int32_t usedCoreNum = 0;
    int32_t M = 0;  // shapes of A [M, Ka], B [Kb, N], C [M, N], in elements
    int32_t N = 0;
    int32_t Ka = 0;
    int32_t Kb = 0;
    int32_t singleCoreM = 0;  // one core's part
    int32_t singleCoreN = 0;
    int32_t singleCoreK = 0;
    int32_t baseM = 0;  // one matrix instruction's block
    int32_t baseN = 0;
    int32_t baseK = 0;
    int32_t depthA1 = 0;  // base blocks held in L1
    int32_t depthB1 = 0;
    int32_t stepM = 0;
    int32_t stepN = 0;
    int32_t isBias = 0;
    int32_t transLength = 0;
    int32_t iterateOrder = 0;
    int32_t shareMode = 0;
    int32_t shareL1Size = 0;
    int32_t shareL0CSize = 0;
    int32_t shareUbSize = 0;
    int32_t batchM = 0;
    int32_t batchN = 0;
    int32_t singleBatchM = 0;
    int32_t singleBatchN = 0;
    int32_t stepKa = 0;
    int32_t stepKb = 0;
    int32_t depthAL1CacheUB = 0;
    int32_t depthBL1CacheUB = 0;
    int32_t dbL0A = 0;
    int32_t dbL0B = 0;
    int32_t dbL0C = 0;
    int32_t mxTypePara = 0;
    // the batch layouts of A, B and C (batch, sequence, head-number, group and head-dim extents) and
    // how many batches one call computes, as batch matmul tilings fill them
    int32_t ALayoutInfoB = 0;
    int32_t ALayoutInfoS = 0;
    int32_t ALayoutInfoN = 0;
    int32_t ALayoutInfoG = 0;
    int32_t ALayoutInfoD = 0;
    int32_t BLayoutInfoB = 0;
    int32_t BLayoutInfoS = 0;
    int32_t BLayoutInfoN = 0;
    int32_t BLayoutInfoG = 0;
    int32_t BLayoutInfoD = 0;
    int32_t CLayoutInfoB = 0;
    int32_t CLayoutInfoS1 = 0;
    int32_t CLayoutInfoN = 0;
    int32_t CLayoutInfoG = 0;
    int32_t CLayoutInfoS2 = 0;
    int32_t BatchNum = 0;
    // (methods after every field: mpnpu.ascendc.tiling reads the fields from this text)
    // the host side's accessors, as a tiling struct of the definition macros has them: set_<field>,
    // get_<field>, GetDataSize, SaveToBuffer (host code fills an optiling::TCubeTiling with them)
#define MPNPU_TCUBE_ACCESSORS(f)                       \
    void set_##f(int32_t mpnpu_value) { f = mpnpu_value; } \
    int32_t get_##f() const { return f; }
    MPNPU_TCUBE_ACCESSORS(usedCoreNum) MPNPU_TCUBE_ACCESSORS(M) MPNPU_TCUBE_ACCESSORS(N) MPNPU_TCUBE_ACCESSORS(Ka)
    MPNPU_TCUBE_ACCESSORS(Kb) MPNPU_TCUBE_ACCESSORS(singleCoreM) MPNPU_TCUBE_ACCESSORS(singleCoreN)
    MPNPU_TCUBE_ACCESSORS(singleCoreK) MPNPU_TCUBE_ACCESSORS(baseM) MPNPU_TCUBE_ACCESSORS(baseN)
    MPNPU_TCUBE_ACCESSORS(baseK) MPNPU_TCUBE_ACCESSORS(depthA1) MPNPU_TCUBE_ACCESSORS(depthB1)
    MPNPU_TCUBE_ACCESSORS(stepM) MPNPU_TCUBE_ACCESSORS(stepN) MPNPU_TCUBE_ACCESSORS(isBias)
    MPNPU_TCUBE_ACCESSORS(transLength) MPNPU_TCUBE_ACCESSORS(iterateOrder) MPNPU_TCUBE_ACCESSORS(shareMode)
    MPNPU_TCUBE_ACCESSORS(shareL1Size) MPNPU_TCUBE_ACCESSORS(shareL0CSize) MPNPU_TCUBE_ACCESSORS(shareUbSize)
    MPNPU_TCUBE_ACCESSORS(batchM) MPNPU_TCUBE_ACCESSORS(batchN) MPNPU_TCUBE_ACCESSORS(singleBatchM)
    MPNPU_TCUBE_ACCESSORS(singleBatchN) MPNPU_TCUBE_ACCESSORS(stepKa) MPNPU_TCUBE_ACCESSORS(stepKb)
    MPNPU_TCUBE_ACCESSORS(depthAL1CacheUB) MPNPU_TCUBE_ACCESSORS(depthBL1CacheUB) MPNPU_TCUBE_ACCESSORS(dbL0A)
    MPNPU_TCUBE_ACCESSORS(dbL0B) MPNPU_TCUBE_ACCESSORS(dbL0C) MPNPU_TCUBE_ACCESSORS(mxTypePara)
    MPNPU_TCUBE_ACCESSORS(ALayoutInfoB) MPNPU_TCUBE_ACCESSORS(ALayoutInfoS) MPNPU_TCUBE_ACCESSORS(ALayoutInfoN)
    MPNPU_TCUBE_ACCESSORS(ALayoutInfoG) MPNPU_TCUBE_ACCESSORS(ALayoutInfoD) MPNPU_TCUBE_ACCESSORS(BLayoutInfoB)
    MPNPU_TCUBE_ACCESSORS(BLayoutInfoS) MPNPU_TCUBE_ACCESSORS(BLayoutInfoN) MPNPU_TCUBE_ACCESSORS(BLayoutInfoG)
    MPNPU_TCUBE_ACCESSORS(BLayoutInfoD) MPNPU_TCUBE_ACCESSORS(CLayoutInfoB) MPNPU_TCUBE_ACCESSORS(CLayoutInfoS1)
    MPNPU_TCUBE_ACCESSORS(CLayoutInfoN) MPNPU_TCUBE_ACCESSORS(CLayoutInfoG) MPNPU_TCUBE_ACCESSORS(CLayoutInfoS2)
    MPNPU_TCUBE_ACCESSORS(BatchNum)
#undef MPNPU_TCUBE_ACCESSORS
    size_t GetDataSize() const { return sizeof(TCubeTiling); }
    void SaveToBuffer(void* mpnpu_buf, size_t mpnpu_capacity) const {
        std::memcpy(mpnpu_buf, this, mpnpu_capacity < sizeof(TCubeTiling) ? mpnpu_capacity : sizeof(TCubeTiling));
    }
};

// The SoftMax family's tiling (SoftMax, SimpleSoftMax): the documented fields, in order. The host's
// SoftMaxTilingFunc fills it; mpnpu's SoftMax reads only srcM and srcK (the shape, when the call's
// SoftMaxShapeInfo gives none): it computes the whole call at once, with no split to describe.
struct SoftMaxTiling {
    uint32_t srcM = 0;
    uint32_t srcK = 0;
    uint32_t srcSize = 0;
    uint32_t outMaxM = 0;
    uint32_t outMaxK = 0;
    uint32_t outMaxSize = 0;
    uint32_t splitM = 0;
    uint32_t splitK = 0;
    uint32_t splitSize = 0;
    uint32_t reduceM = 0;
    uint32_t reduceK = 0;
    uint32_t reduceSize = 0;
    uint32_t rangeM = 0;
    uint32_t tailM = 0;
    uint32_t tailSplitSize = 0;
    uint32_t tailReduceSize = 0;
};

// The normalization APIs' tilings (mpnpu/normalization.h): the documented fields, in the documented
// order. The host helpers (tiling/normalization_tiling.h) fill them by mpnpu's own rule, said there;
// mpnpu's kernels read the shape fields and the rows a pass takes (which decide how much of the
// temporary buffer a call uses), and compute each call whole.
struct LayerNormTiling {
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t inputXSize = 0;
    uint32_t meanVarSize = 0;
    uint32_t numberOfTmpBuf = 0;
    uint32_t meanTmpTensorPos = 0;
    uint32_t meanTmpTensorSize = 0;
    uint32_t varianceTmpTensorPos = 0;
    uint32_t varianceTmpTensorSize = 0;
    uint32_t tmpBufSize = 0;
    uint32_t oneTmpSize = 0;
    uint32_t firstTmpStartPos = 0;
    uint32_t secondTmpStartPos = 0;
    uint32_t thirdTmpStartPos = 0;
    uint32_t loopRound = 0;
    uint32_t inputRoundSize = 0;
    uint32_t inputTailSize = 0;
    uint32_t inputTailPos = 0;
    uint32_t meanVarRoundSize = 0;
    uint32_t meanVarTailSize = 0;
    uint32_t meanVarTailPos = 0;
    uint32_t bshCurLength = 0;
    uint32_t bsCurLength = 0;
    float lastDimValueBack = 0.0f;
};

// The [A, R] LayerNorm's tiling (the form with LayerNormPara).
struct LayerNormSeparateTiling {
    uint32_t aLength = 0;
    uint32_t rLength = 0;
    uint32_t halfAddRepeatTimes = 0;
    uint32_t rHeadLength = 0;
    float k2Rec = 0;
    float k2RRec = 0;
    uint32_t inputXSize = 0;
    uint32_t meanVarSize = 0;
    uint32_t numberOfTmpBuf = 0;
    uint32_t varianceTmpTensorPos = 0;
    uint32_t varianceTmpTensorSize = 0;
    uint32_t tmpBufSize = 0;
    uint32_t oneTmpSize = 0;
    uint32_t firstTmpStartPos = 0;
    uint32_t secondTmpStartPos = 0;
    uint32_t thirdTmpStartPos = 0;
    uint32_t loopRound = 0;
    uint32_t inputRoundSize = 0;
    uint32_t inputTailSize = 0;
    uint32_t inputTailPos = 0;
    uint32_t meanVarRoundSize = 0;
    uint32_t meanVarTailSize = 0;
    uint32_t meanVarTailPos = 0;
    uint32_t arCurLength = 0;
    uint32_t aCurLength = 0;
    float rValueBack = 0;
};
// Pad's and UnPad's tilings. The pages do not list their fields: these are mpnpu's own (the shape the
// host's PadTilingFunc / UnPadTilingFunc saw), read by mpnpu's Pad and UnPad (mpnpu/pad.h).
struct PadTiling {
    uint32_t srcHeight = 0;
    uint32_t srcWidth = 0;
    uint32_t srcOriHeight = 0;
    uint32_t srcOriWidth = 0;
    uint32_t tmpBufSize = 0;
};
struct UnPadTiling {
    uint32_t srcHeight = 0;
    uint32_t srcWidth = 0;
    uint32_t tmpBufSize = 0;
};

struct LayerNormGradTiling {
    uint32_t stackBufferSize = 0;
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t oneCalSize = 0;
    uint32_t nohCalSize = 0;
    uint32_t loopNum = 0;
    uint32_t tailSize = 0;
    uint32_t nohTailSize = 0;
    uint32_t tmpTensorBSHPos = 0;
    uint32_t tmpTensorBSHSize = 0;
    uint32_t pdVarTensorPos = 0;
    uint32_t pdVarTensorSize = 0;
    uint32_t pdMeanTensorPos = 0;
    uint32_t pdMeanTensorSize = 0;
    uint32_t x1TensorPos = 0;
    uint32_t x1TensorSize = 0;
    uint32_t x2TensorPos = 0;
    uint32_t x2TensorSize = 0;
    uint32_t x3TensorPos = 0;
    uint32_t x3TensorSize = 0;
    uint32_t tmpTensorPos = 0;
    uint32_t tmpTensorSize = 0;
    uint32_t tmpTensor1Pos = 0;
    uint32_t tmpTensor1Size = 0;
    uint32_t tmpTensor2Pos = 0;
    uint32_t tmpTensor2Size = 0;
    uint32_t lastDimValueBack = 0;        // (documented as uint32_t: the bits of the float 1 / H)
    uint32_t lastDimValueBackMulTwo = 0;  // (the bits of the float 2 / H)
};

struct LayerNormGradBetaTiling {
    uint32_t stackBufferSize = 0;
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t bshLength = 0;
    uint32_t bsLength = 0;
    uint32_t oneCalSize = 0;
    uint32_t numberOfTmpBuf = 0;
    uint32_t loopRound = 0;
    uint32_t inputTailSize = 0;
    uint32_t inputTailPos = 0;
    uint32_t bsTailSize = 0;
    uint32_t bshCurLength = 0;
    uint32_t bsCurLength = 0;
    uint32_t gammaTempTensorPos = 0;
    uint32_t betaTempTensorPos = 0;
    uint32_t inputDyTmpTensorPos = 0;
    uint32_t resForGammaTmpTensorPos = 0;
    uint32_t reserved = 0;
};

// DeepNorm's tiling: LayerNormTiling's fields, documented again for it. (Written out, not derived:
// mpnpu.ascendc.tiling reads a struct's fields from its own text and does not follow a base class.)
struct DeepNormTiling {
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t inputXSize = 0;
    uint32_t meanVarSize = 0;
    uint32_t numberOfTmpBuf = 0;
    uint32_t meanTmpTensorPos = 0;
    uint32_t meanTmpTensorSize = 0;
    uint32_t varianceTmpTensorPos = 0;
    uint32_t varianceTmpTensorSize = 0;
    uint32_t tmpBufSize = 0;
    uint32_t oneTmpSize = 0;
    uint32_t firstTmpStartPos = 0;
    uint32_t secondTmpStartPos = 0;
    uint32_t thirdTmpStartPos = 0;
    uint32_t loopRound = 0;
    uint32_t inputRoundSize = 0;
    uint32_t inputTailSize = 0;
    uint32_t inputTailPos = 0;
    uint32_t meanVarRoundSize = 0;
    uint32_t meanVarTailSize = 0;
    uint32_t meanVarTailPos = 0;
    uint32_t bshCurLength = 0;
    uint32_t bsCurLength = 0;
    float lastDimValueBack = 0;
};

struct RmsNormTiling {
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    float reciprocalOfHLength = 0;
    uint32_t mainBshLength = 0;
    uint32_t mainBsLength = 0;
    uint32_t mainBsLengthAlign = 0;
    uint32_t loopRound = 0;
    uint32_t inputTailPos = 0;
    uint32_t tailBshLength = 0;
    uint32_t tailBsLength = 0;
};

// LogSoftMax's tiling: the pages name the struct only; mpnpu makes it SoftMaxTiling under another name
// (LogSoftMaxTilingFunc fills it as SoftMaxTilingFunc does; LogSoftMax reads srcM and srcK alone, when
// its SoftMaxShapeInfo gives no shape).
using LogSoftMaxTiling = SoftMaxTiling;

// TopK's tiling: the documented fields, in order. TopKTilingFunc fills the sizes mpnpu's TopK model
// uses (tmpLocalSize, allDataSize, innerDataSize, sortRepeat, kAlignFourBytes, kAlignTwoBytes); the
// device's mask and offset fields stay 0 (mpnpu's TopK has no vector masks or queue offsets to
// describe), and the kernel side takes its shape from TopKInfo.
struct TopkTiling {
    int32_t tmpLocalSize = 0;
    int32_t allDataSize = 0;
    int32_t innerDataSize = 0;
    uint32_t sortRepeat = 0;
    int32_t mrgSortRepeat = 0;
    int32_t kAlignFourBytes = 0;
    int32_t kAlignTwoBytes = 0;
    int32_t maskOffset = 0;
    int32_t maskVreducev2FourBytes = 0;
    int32_t maskVreducev2TwoBytes = 0;
    int32_t mrgSortSrc1offset = 0;
    int32_t mrgSortSrc2offset = 0;
    int32_t mrgSortSrc3offset = 0;
    int32_t mrgSortTwoQueueSrc1Offset = 0;
    int32_t mrgFourQueueTailPara1 = 0;
    int32_t mrgFourQueueTailPara2 = 0;
    int32_t srcIndexOffset = 0;
    uint32_t copyUbToUbBlockCount = 0;
    int32_t topkMrgSrc1MaskSizeOffset = 0;
    int32_t topkNSmallSrcIndexOffset = 0;
    uint32_t vreduceValMask0 = 0;
    uint32_t vreduceValMask1 = 0;
    uint32_t vreduceIdxMask0 = 0;
    uint32_t vreduceIdxMask1 = 0;
    uint16_t vreducehalfValMask0 = 0;
    uint16_t vreducehalfValMask1 = 0;
    uint16_t vreducehalfValMask2 = 0;
    uint16_t vreducehalfValMask3 = 0;
    uint16_t vreducehalfValMask4 = 0;
    uint16_t vreducehalfValMask5 = 0;
    uint16_t vreducehalfValMask6 = 0;
    uint16_t vreducehalfValMask7 = 0;
};

// The bytes of a T (sizeof(T) of them from `bytes`) as a T, in a constant expression: how an
// ahead-of-time tiling holder turns its byte array into the tiling struct at compile time.
template <class T>
constexpr T convert_from_bytes(const uint8_t* bytes) {
    static_assert(std::is_trivially_copyable_v<T>, "convert_from_bytes: T must be trivially copyable");
    struct Bytes {
        uint8_t b[sizeof(T)];
    } raw{};
    for (size_t i = 0; i < sizeof(T); ++i) raw.b[i] = bytes[i];
    return __builtin_bit_cast(T, raw);
}

namespace optiling {
using TCubeTiling = ::TCubeTiling;
using SoftMaxTiling = ::SoftMaxTiling;
using LayerNormTiling = ::LayerNormTiling;
using LayerNormSeparateTiling = ::LayerNormSeparateTiling;
using LayerNormGradTiling = ::LayerNormGradTiling;
using LayerNormGradBetaTiling = ::LayerNormGradBetaTiling;
using DeepNormTiling = ::DeepNormTiling;
using RmsNormTiling = ::RmsNormTiling;
using LogSoftMaxTiling = ::LogSoftMaxTiling;
using TopkTiling = ::TopkTiling;
using PadTiling = ::PadTiling;
using UnPadTiling = ::UnPadTiling;
}
namespace AscendC {
namespace tiling {
using TCubeTiling = ::TCubeTiling;
using SoftMaxTiling = ::SoftMaxTiling;
using LayerNormTiling = ::LayerNormTiling;
using LayerNormSeparateTiling = ::LayerNormSeparateTiling;
using LayerNormGradTiling = ::LayerNormGradTiling;
using LayerNormGradBetaTiling = ::LayerNormGradBetaTiling;
using DeepNormTiling = ::DeepNormTiling;
using RmsNormTiling = ::RmsNormTiling;
using LogSoftMaxTiling = ::LogSoftMaxTiling;
using TopkTiling = ::TopkTiling;
using PadTiling = ::PadTiling;
using UnPadTiling = ::UnPadTiling;
}
}  // namespace AscendC

// -- tiling structs written with the host's definition macros ------------------------------------------
// BEGIN_TILING_DATA_DEF(Name) ... END_TILING_DATA_DEF; as the kernel sees it: a plain struct of the
// fields in their order (the compiler's layout, which mpnpu.ascendc.tiling reads back), with the
// host side's set_<field>/get_<field>, GetDataSize and SaveToBuffer for code that fills it.
// REGISTER_TILING_DATA_CLASS(Op, Name) makes Name the struct GET_TILING_DATA(var, tiling) fills in
// that scope.
#define BEGIN_TILING_DATA_DEF(name) \
    struct name {                   \
        using mpnpu_self_t = name;
#define TILING_DATA_FIELD_DEF(type, field)                    \
    type field{};                                             \
    void set_##field(type mpnpu_value) { field = mpnpu_value; } \
    type get_##field() const { return field; }
#define TILING_DATA_FIELD_DEF_ARR(type, count, field)                                           \
    type field[count]{};                                                                        \
    void set_##field(const type* mpnpu_values) { std::memcpy(field, mpnpu_values, sizeof(field)); } \
    const type* get_##field() const { return field; }
#define TILING_DATA_FIELD_DEF_STRUCT(type, field) type field{};
#define END_TILING_DATA_DEF                                                                   \
    size_t GetDataSize() const { return sizeof(mpnpu_self_t); }                                \
    void SaveToBuffer(void* mpnpu_buf, size_t mpnpu_capacity) const {                          \
        std::memcpy(mpnpu_buf, this,                                                           \
                    mpnpu_capacity < sizeof(mpnpu_self_t) ? mpnpu_capacity : sizeof(mpnpu_self_t)); \
    }                                                                                          \
    }
#define REGISTER_TILING_DATA_CLASS(op, name) using mpnpu_tiling_default_t [[maybe_unused]] = name;

#endif  // MPNPU_KERNEL_TILING_H
