// Host side of the normalization APIs (mpnpu/normalization.h): the temporary-buffer sizes
// (GetXxxMaxMinTmpSize) and the tilings (GetLayerNormNDTilingInfo, GetLayerNormGradNDTilingInfo,
// GetLayerNormGradBetaNDTilingInfo, GetDeepNormTilingInfo, GetRmsNormTilingInfo) of LayerNorm (both
// forms), LayerNormGrad, LayerNormGradBeta, DeepNorm, RmsNorm, Normalize, WelfordUpdate and
// WelfordFinalize.
//
// The pages give the helpers' prototypes and say that the minimum is what a call needs to be correct
// and the maximum what it can use at all; the sizes themselves are the implementation's. mpnpu's model
// (its own, and what its kernels check and trace):
//
//  * A call works through its rows (the B x S rows of H elements, the A rows of R) a few at a time,
//    keeping `bufs` float intermediates per element of the rows in hand: the minimum is one row's
//    (bufs x width x 4 bytes), the maximum all rows' at once. bufs (row_bufs below) is per call, one
//    more for half data (a float copy of the input).
//  * A tiling helper turns its stackBufferSize into the rows a pass takes (bsCurLength, aCurLength,
//    oneCalSize / H, mainBsLength): as many whole rows as fit, at most all of them. A stack below the
//    minimum gives 0 rows, which the kernel call refuses. The kernel call, given a sharedTmpBuffer,
//    needs bufs x rows-a-pass x width x 4 bytes of it (a larger buffer is fine: the rest is not
//    used), and traces that part as written and read.
//  * RmsNorm adds one float per row of a pass, the rows rounded up to a 32-byte block (its sum of
//    squares): minimum (bufs x H + 8) x 4 bytes.
//  * WelfordUpdate and WelfordFinalize work on their abLength elements at once: minimum = maximum.
//
// The other fields are filled consistently with that split (loop counts, tail sizes, positions of the
// intermediates inside the buffer, 1 / H), for kernels that read them; mpnpu's calls do not.
#ifndef MPNPU_TILING_NORMALIZATION_TILING_H
#define MPNPU_TILING_NORMALIZATION_TILING_H

#include <cstdint>
#include <cstring>

#include "../graph/tensor_shape.h"
#include "../kernel_tiling/kernel_tiling.h"

namespace mpnpu {
namespace norm {

// The calls, for the float intermediates each keeps per element (row_bufs).
enum class Call { LayerNorm, LayerNormRstd, Normalize, LayerNormGrad, LayerNormGradBeta, DeepNorm, RmsNorm,
                  WelfordUpdate, WelfordFinalize };

inline uint32_t row_bufs(Call c, uint32_t typeSize) {
    const uint32_t widen = typeSize == 2 ? 1u : 0u;  // a float copy of half data
    switch (c) {
        case Call::LayerNorm:
        case Call::LayerNormRstd:
            return 2 + widen;  // x - mean, and the normalized row
        case Call::Normalize:
            return 1 + widen;  // x - mean
        case Call::LayerNormGrad:
            return 4 + widen;  // dy * gamma, x - mean, and two partial sums
        case Call::LayerNormGradBeta:
            return 2 + widen;  // dy * resForGamma, and the running column sums
        case Call::DeepNorm:
            return 3 + widen;  // alpha * x + gx, x1 - mean, the normalized row
        case Call::RmsNorm:
            return 1 + widen;  // x * x
        case Call::WelfordUpdate:
            return 1 + widen;  // x - mean
        case Call::WelfordFinalize:
            return 2;  // counts * mean, the deviations
    }
    return 0;
}

constexpr uint32_t kFloatBytes = 4;
constexpr uint32_t kBlockFloats = 8;  // floats in a 32-byte block

inline uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
inline uint32_t clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : uint32_t(v); }
inline uint32_t dim(const ge::Shape& s, size_t i) {
    const int64_t d = s.GetDim(i);
    return d > 0 && d <= int64_t(UINT32_MAX) ? uint32_t(d) : 0u;
}
// A row's elements padded to a 32-byte block of typeSize elements.
inline uint32_t padded(uint32_t n, uint32_t typeSize) {
    return typeSize ? clamp32(align_up(n, 32 / typeSize)) : n;
}

// Bytes of the buffer rows rows of width elements need (the row model above).
inline uint64_t rows_bytes(Call c, uint32_t typeSize, uint64_t rows, uint64_t width) {
    uint64_t bytes = uint64_t(row_bufs(c, typeSize)) * rows * width * kFloatBytes;
    if (c == Call::RmsNorm) bytes += align_up(rows, kBlockFloats) * kFloatBytes;
    return bytes;
}
// The rows of a pass a stack of `stack` bytes holds (0: not one).
inline uint32_t rows_fitting(Call c, uint32_t typeSize, uint32_t rows, uint32_t width, uint64_t stack) {
    if (width == 0) return 0;
    uint32_t lo = 0, hi = rows;  // the most r with rows_bytes(r) <= stack
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (rows_bytes(c, typeSize, mid, width) <= stack) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}
inline void min_max(Call c, uint32_t typeSize, uint32_t rows, uint32_t width, uint32_t& maxValue,
                    uint32_t& minValue) {
    const bool ok = rows && width && (typeSize == 2 || typeSize == 4);
    minValue = ok ? clamp32(rows_bytes(c, typeSize, 1, width)) : 0;
    maxValue = ok ? clamp32(rows_bytes(c, typeSize, rows, width)) : 0;
}
inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// The shape fields every B x S x H tiling has (same names in each struct).
template <class Tiling>
inline void set_shape(Tiling& t, uint32_t b, uint32_t s, uint32_t h, uint32_t oriH) {
    t.bLength = b;
    t.sLength = s;
    t.hLength = h;
    t.originalHLength = oriH;
}

// The fields the B x S x H tilings of LayerNorm and DeepNorm share.
template <class Tiling>
inline void fill_bsh(Tiling& t, Call c, uint32_t b, uint32_t s, uint32_t h, uint32_t oriH, uint32_t stack,
                     uint32_t typeSize) {
    t = Tiling{};
    const uint32_t bs = b * s, n = bs * h, rows = rows_fitting(c, typeSize, bs, h, stack);
    set_shape(t, b, s, h, oriH);
    t.inputXSize = n;
    t.meanVarSize = bs;
    t.numberOfTmpBuf = row_bufs(c, typeSize);
    t.tmpBufSize = stack / kFloatBytes;
    t.oneTmpSize = rows * h;
    t.firstTmpStartPos = 0;
    t.secondTmpStartPos = rows * h;
    t.thirdTmpStartPos = 2 * rows * h;
    t.loopRound = rows ? bs / rows : 0;
    t.inputRoundSize = rows * h;
    t.inputTailSize = rows ? (bs % rows) * h : 0;
    t.inputTailPos = n - t.inputTailSize;
    t.meanVarRoundSize = rows;
    t.meanVarTailSize = rows ? bs % rows : 0;
    t.meanVarTailPos = bs - t.meanVarTailSize;
    t.bshCurLength = rows * h;
    t.bsCurLength = rows;
    t.lastDimValueBack = oriH ? 1.0f / float(oriH) : 0.0f;
}

// {B, S, H[, originH]} as the B x S x H helpers take it.
struct Bsh {
    uint32_t b, s, h, oriH;
};
inline Bsh bsh_of(const ge::Shape& shape) {
    Bsh v{dim(shape, 0), dim(shape, 1), dim(shape, 2), shape.GetDimNum() > 3 ? dim(shape, 3) : dim(shape, 2)};
    if (v.oriH == 0 || v.oriH > v.h) v.oriH = v.h;
    return v;
}

// GetXxxMaxMinTmpSize of a B x S x H call.
inline void bsh_min_max(Call c, const ge::Shape& shape, uint32_t typeSize, uint32_t& maxValue, uint32_t& minValue) {
    const Bsh v = bsh_of(shape);
    min_max(c, typeSize, v.b * v.s, v.h, maxValue, minValue);
}

// The start the grads' tilings share: the struct reset, its stack (in floats) and shape set; the shape
// and the rows a pass.
struct GradStart {
    Bsh v;
    uint32_t bs, rows;
};
template <class Tiling>
inline GradStart grad_start(Tiling& t, Call c, const ge::Shape& shape, uint32_t stack, uint32_t typeSize) {
    t = Tiling{};
    const Bsh v = bsh_of(shape);
    const GradStart g{v, v.b * v.s, rows_fitting(c, typeSize, v.b * v.s, v.h, stack)};
    t.stackBufferSize = stack / kFloatBytes;
    set_shape(t, v.b, v.s, v.h, v.oriH);
    return g;
}

// The basic block of DeepNorm and RmsNorm: H a multiple of 64 up to hMax, B x S a multiple of 8.
inline bool basic_block_ok(uint32_t bs, uint32_t h, uint32_t hMax) {
    return h % 64 == 0 && h > 0 && h <= hMax && bs % 8 == 0;
}
constexpr uint32_t kDeepNormBasicHMax = 2040;
constexpr uint32_t kRmsNormBasicHMax = 2047;

}  // namespace norm
}  // namespace mpnpu

namespace AscendC {

// -- LayerNorm, the B x S x H form: srcShape {B, S, H, originH} ------------------------------------------
inline void GetLayerNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;  // (mpnpu never writes the source, so reusing it saves nothing)
    mpnpu::norm::bsh_min_max(mpnpu::norm::Call::LayerNorm, srcShape, typeSize, maxValue, minValue);
}
inline void GetLayerNormNDTilingInfo(const TensorShape& srcShape, const uint32_t stackBufferSize,
                                     const uint32_t typeSize, const bool isReuseSource, LayerNormTiling& tiling) {
    (void)isReuseSource;
    const mpnpu::norm::Bsh v = mpnpu::norm::bsh_of(srcShape);
    mpnpu::norm::fill_bsh(tiling, mpnpu::norm::Call::LayerNorm, v.b, v.s, v.h, v.oriH, stackBufferSize, typeSize);
}
// (the deprecated spelling)
inline void GetLayerNormNDTillingInfo(const TensorShape& srcShape, const uint32_t stackBufferSize,
                                      const uint32_t typeSize, const bool isReuseSource, LayerNormTiling& tilling) {
    GetLayerNormNDTilingInfo(srcShape, stackBufferSize, typeSize, isReuseSource, tilling);
}

// -- LayerNorm, the A x R form (rstd): srcShape {A, R}; A is the most a kernel call may take -------------
inline void GetLayerNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      const bool isComputeRstd, const bool isOnlyOutput, uint32_t& maxValue,
                                      uint32_t& minValue) {
    (void)isReuseSource;
    (void)isComputeRstd;
    (void)isOnlyOutput;
    const uint32_t a = mpnpu::norm::dim(srcShape, 0), r = mpnpu::norm::dim(srcShape, 1);
    mpnpu::norm::min_max(mpnpu::norm::Call::LayerNormRstd, typeSize, a, mpnpu::norm::padded(r, typeSize), maxValue,
                         minValue);
}
inline void GetLayerNormNDTilingInfo(const TensorShape& srcShape, const uint32_t stackBufferSize,
                                     const uint32_t typeSize, const bool isReuseSource, const bool isComputeRstd,
                                     LayerNormSeparateTiling& tiling) {
    (void)isReuseSource;
    (void)isComputeRstd;
    using mpnpu::norm::Call;
    tiling = LayerNormSeparateTiling{};
    const uint32_t a = mpnpu::norm::dim(srcShape, 0), r = mpnpu::norm::dim(srcShape, 1);
    const uint32_t rp = mpnpu::norm::padded(r, typeSize);
    const uint32_t rows = mpnpu::norm::rows_fitting(Call::LayerNormRstd, typeSize, a, rp, stackBufferSize);
    uint32_t head = 1;  // the largest power of two not above R (the device's pairwise sum's whole part)
    while (r && head * 2 <= r) head *= 2;
    tiling.aLength = a;
    tiling.rLength = r;
    tiling.rHeadLength = r ? head : 0;
    tiling.halfAddRepeatTimes = r ? (head * typeSize + 255) / 256 : 0;
    tiling.k2Rec = r ? 1.0f / float(head) : 0.0f;
    tiling.k2RRec = r ? float(head) / float(r) : 0.0f;
    tiling.inputXSize = a * rp;
    tiling.meanVarSize = a;
    tiling.numberOfTmpBuf = mpnpu::norm::row_bufs(Call::LayerNormRstd, typeSize);
    tiling.tmpBufSize = stackBufferSize / mpnpu::norm::kFloatBytes;
    tiling.oneTmpSize = rows * rp;
    tiling.secondTmpStartPos = rows * rp;
    tiling.thirdTmpStartPos = 2 * rows * rp;
    tiling.loopRound = rows ? a / rows : 0;
    tiling.inputRoundSize = rows * rp;
    tiling.inputTailSize = rows ? (a % rows) * rp : 0;
    tiling.inputTailPos = a * rp - tiling.inputTailSize;
    tiling.meanVarRoundSize = rows;
    tiling.meanVarTailSize = rows ? a % rows : 0;
    tiling.meanVarTailPos = a - tiling.meanVarTailSize;
    tiling.arCurLength = rows * rp;
    tiling.aCurLength = rows;
    tiling.rValueBack = r ? 1.0f / float(r) : 0.0f;
}

// -- Normalize: srcShape {A, R} -------------------------------------------------------------------------
inline void GetNormalizeMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSizeU, const uint32_t typeSizeT,
                                      const bool isReuseSource, const bool isComputeRstd, const bool isOnlyOutput,
                                      uint32_t& maxValue, uint32_t& minValue) {
    (void)typeSizeU;
    (void)isReuseSource;
    (void)isComputeRstd;
    (void)isOnlyOutput;
    const uint32_t a = mpnpu::norm::dim(srcShape, 0), r = mpnpu::norm::dim(srcShape, 1);
    mpnpu::norm::min_max(mpnpu::norm::Call::Normalize, typeSizeT, a, mpnpu::norm::padded(r, typeSizeT), maxValue,
                         minValue);
}

// -- LayerNormGrad: srcShape {B, S, H, originH} ---------------------------------------------------------
inline void GetLayerNormGradMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,
                                          const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    mpnpu::norm::bsh_min_max(mpnpu::norm::Call::LayerNormGrad, srcShape, typeSize, maxValue, minValue);
}
inline void GetLayerNormGradNDTilingInfo(const TensorShape srcShape, const uint32_t stackBufferSize,
                                         const uint32_t typeSize, const bool isReuseSource,
                                         LayerNormGradTiling& tiling) {
    (void)isReuseSource;
    const mpnpu::norm::GradStart g =
        mpnpu::norm::grad_start(tiling, mpnpu::norm::Call::LayerNormGrad, srcShape, stackBufferSize, typeSize);
    const mpnpu::norm::Bsh& v = g.v;
    const uint32_t bs = g.bs, rows = g.rows;
    const uint32_t one = rows * v.h;  // one intermediate of a pass, in elements
    tiling.oneCalSize = one;
    tiling.nohCalSize = rows;
    tiling.loopNum = rows ? bs / rows : 0;
    tiling.tailSize = rows ? (bs % rows) * v.h : 0;
    tiling.nohTailSize = rows ? bs % rows : 0;
    // the intermediates one after the other in the buffer: x1 (dy * gamma), x2 (x - mean), the sums
    tiling.x1TensorPos = 0;
    tiling.x1TensorSize = one;
    tiling.x2TensorPos = one;
    tiling.x2TensorSize = one;
    tiling.tmpTensorPos = 2 * one;
    tiling.tmpTensorSize = one;
    tiling.tmpTensor1Pos = 3 * one;
    tiling.tmpTensor1Size = one;
    tiling.lastDimValueBack = mpnpu::norm::float_bits(v.oriH ? 1.0f / float(v.oriH) : 0.0f);
    tiling.lastDimValueBackMulTwo = mpnpu::norm::float_bits(v.oriH ? 2.0f / float(v.oriH) : 0.0f);
}

// -- LayerNormGradBeta: srcShape {B, S, H, originH} -----------------------------------------------------
inline void GetLayerNormGradBetaMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,
                                              const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    mpnpu::norm::bsh_min_max(mpnpu::norm::Call::LayerNormGradBeta, srcShape, typeSize, maxValue, minValue);
}
inline void GetLayerNormGradBetaNDTilingInfo(const TensorShape srcShape, const uint32_t stackBufferSize,
                                             const uint32_t typeSize, const bool isReuseSource,
                                             LayerNormGradBetaTiling& tiling) {
    (void)isReuseSource;
    const mpnpu::norm::GradStart g =
        mpnpu::norm::grad_start(tiling, mpnpu::norm::Call::LayerNormGradBeta, srcShape, stackBufferSize, typeSize);
    const mpnpu::norm::Bsh& v = g.v;
    const uint32_t bs = g.bs, rows = g.rows;
    tiling.bshLength = bs * v.h;
    tiling.bsLength = bs;
    tiling.oneCalSize = rows * v.h;
    tiling.numberOfTmpBuf = mpnpu::norm::row_bufs(mpnpu::norm::Call::LayerNormGradBeta, typeSize);
    tiling.loopRound = rows ? bs / rows : 0;
    tiling.inputTailSize = rows ? (bs % rows) * v.h : 0;
    tiling.inputTailPos = bs * v.h - tiling.inputTailSize;
    tiling.bsTailSize = rows ? bs % rows : 0;
    tiling.bshCurLength = rows * v.h;
    tiling.bsCurLength = rows;
    tiling.inputDyTmpTensorPos = 0;
    tiling.resForGammaTmpTensorPos = rows * v.h;
}

// -- DeepNorm: srcShape {B, S, H}, originSrcShape {B, S, originH} ----------------------------------------
inline bool GetDeepNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                     const bool isBasicBlock, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    const mpnpu::norm::Bsh v = mpnpu::norm::bsh_of(srcShape);
    maxValue = minValue = 0;
    if (v.b * v.s == 0 || v.h == 0 || (typeSize != 2 && typeSize != 4)) return false;
    if (isBasicBlock && !mpnpu::norm::basic_block_ok(v.b * v.s, v.h, mpnpu::norm::kDeepNormBasicHMax)) return false;
    mpnpu::norm::min_max(mpnpu::norm::Call::DeepNorm, typeSize, v.b * v.s, v.h, maxValue, minValue);
    return true;
}
inline bool GetDeepNormTilingInfo(const TensorShape& srcShape, const TensorShape& originSrcShape,
                                  const uint32_t stackBufferSize, const uint32_t typeSize, const bool isReuseSource,
                                  const bool isBasicBlock, DeepNormTiling& tiling) {
    (void)isReuseSource;
    const mpnpu::norm::Bsh v = mpnpu::norm::bsh_of(srcShape);
    const uint32_t oriH = mpnpu::norm::dim(originSrcShape, 2);
    tiling = DeepNormTiling{};
    if (v.b * v.s == 0 || v.h == 0 || oriH == 0 || oriH > v.h || (typeSize != 2 && typeSize != 4)) return false;
    if (isBasicBlock && (oriH != v.h || !mpnpu::norm::basic_block_ok(v.b * v.s, v.h,
                                                                      mpnpu::norm::kDeepNormBasicHMax)))
        return false;
    mpnpu::norm::fill_bsh(tiling, mpnpu::norm::Call::DeepNorm, v.b, v.s, v.h, oriH, stackBufferSize, typeSize);
    return tiling.bsCurLength != 0;
}

// -- RmsNorm: srcShape {B, S, H} (H padded to 32 bytes), originSrcShape {B, S, originH} -----------------
inline bool GetRmsNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                    uint32_t& minValue, const bool isBasicBlock = false) {
    const mpnpu::norm::Bsh v = mpnpu::norm::bsh_of(srcShape);
    maxValue = minValue = 0;
    if (v.b * v.s == 0 || v.h == 0 || (typeSize != 2 && typeSize != 4)) return false;
    if (isBasicBlock && !mpnpu::norm::basic_block_ok(v.b * v.s, v.h, mpnpu::norm::kRmsNormBasicHMax)) return false;
    mpnpu::norm::min_max(mpnpu::norm::Call::RmsNorm, typeSize, v.b * v.s, v.h, maxValue, minValue);
    return true;
}
inline bool GetRmsNormTilingInfo(const TensorShape& srcShape, const TensorShape& originSrcShape,
                                 const uint32_t stackBufferByteSize, const uint32_t typeSize, RmsNormTiling& tiling,
                                 const bool isBasicBlock = false) {
    using mpnpu::norm::Call;
    const mpnpu::norm::Bsh v = mpnpu::norm::bsh_of(srcShape);
    const uint32_t oriH = mpnpu::norm::dim(originSrcShape, 2), bs = v.b * v.s;
    tiling = RmsNormTiling{};
    if (bs == 0 || v.h == 0 || oriH == 0 || oriH > v.h || (typeSize != 2 && typeSize != 4)) return false;
    if (mpnpu::norm::dim(originSrcShape, 0) != v.b || mpnpu::norm::dim(originSrcShape, 1) != v.s) return false;
    if (isBasicBlock && (oriH != v.h || !mpnpu::norm::basic_block_ok(bs, v.h, mpnpu::norm::kRmsNormBasicHMax)))
        return false;
    uint32_t rows = mpnpu::norm::rows_fitting(Call::RmsNorm, typeSize, bs, v.h, stackBufferByteSize);
    if (isBasicBlock && rows >= 8) rows -= rows % 8;  // (a basic block pass takes whole blocks of 8 rows)
    if (rows == 0) return false;
    mpnpu::norm::set_shape(tiling, v.b, v.s, v.h, oriH);
    tiling.reciprocalOfHLength = 1.0f / float(oriH);
    tiling.mainBshLength = rows * v.h;
    tiling.mainBsLength = rows;
    tiling.mainBsLengthAlign = uint32_t(mpnpu::norm::align_up(rows, mpnpu::norm::kBlockFloats));
    tiling.loopRound = bs / rows;
    tiling.tailBsLength = bs % rows;
    tiling.tailBshLength = tiling.tailBsLength * v.h;
    tiling.inputTailPos = bs * v.h - tiling.tailBshLength;
    return true;
}

// -- WelfordUpdate: srcShape {rnLength, abLength}; WelfordFinalize: srcShape {abLength} ---------------------
inline void GetWelfordUpdateMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSizeT,
                                          const uint32_t typeSizeU, const bool isReuseSource, const bool isInplace,
                                          uint32_t& maxValue, uint32_t& minValue) {
    (void)typeSizeU;
    (void)isReuseSource;
    (void)isInplace;
    const uint32_t n = mpnpu::norm::dim(srcShape, 0) * mpnpu::norm::dim(srcShape, 1);
    mpnpu::norm::min_max(mpnpu::norm::Call::WelfordUpdate, typeSizeT, 1, n, maxValue, minValue);
}
inline void GetWelfordFinalizeMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,
                                            const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    mpnpu::norm::min_max(mpnpu::norm::Call::WelfordFinalize, typeSize, 1, mpnpu::norm::dim(srcShape, 0), maxValue,
                         minValue);
}

}  // namespace AscendC

#endif  // MPNPU_TILING_NORMALIZATION_TILING_H
