// AscendQuant (half / float -> int8_t) and AscendAntiQuant (int8_t -> half / bfloat16_t) on the vector
// unit, the forms of this chip class, with the host helpers GetAscendQuantMaxMinTmpSize and
// GetAscendAntiQuant{MaxMin,Max,Min}TmpSize (GetAscendDequantMaxMinTmpSize is in dequant.h).
//
// AscendQuant: dst[i] = round(src[i] * scale + offset), rounded half to even (CAST_RINT) and saturated
// to [-128, 127]. Computed in half for both source types: this chip class converts to int8 only from
// half, so mpnpu's model takes the source, the scale and the offset as halves and rounds the product
// and the sum to half (the dev kit's quant sample, float data on this chip class, checks against
// exactly that: its golden is computed in float16). A float source beyond half's range saturates. PER_TENSOR: scale and offset are float scalars.
// PER_CHANNEL: scale (and the offset, a tensor or a scalar of the source type) repeat every
// scaleCount elements: dst[i] uses scale[i % scaleCount] (and offset[i % offsetCount]); scaleCount a
// multiple of 32 and calCount of scaleCount, offsetCount = scaleCount (documented). The forms without
// a count take calCount = srcTensor.GetSize() and scaleCount / offsetCount = those tensors' sizes.
//
// AscendAntiQuant (PER_CHANNEL, isTranspose false): src is [K, N] (K the call's k), offset and scale
// are [H, N] with groupSize = K / H: dst[i][j] = scale[i / groupSize][j] * (src[i][j] +
// offset[i / groupSize][j]); isTranspose true: src [N, K], offset and scale [N, H], the group along
// the row. Their shapes come from the AntiQuantShapeInfo, or when it is zero from the tensors'
// ShapeInfo (scale's, when not set, taken as offset's; neither set: [1, N] with N = the tensor's size).
// The scalar forms: dst = scale * (src + offset) over the whole source (srcTensor.GetSize()). With a
// half destination the documented steps are each rounded to half (src to half, the add, the
// multiply), as the device computes them in half; with bfloat16_t they run in float, rounded once.
//
// The temporary buffer (mpnpu's model): the calls need none (minimum 0); given one, they stage the
// float intermediates of the call's elements in it (maximum 4 bytes an element), traced as written
// and read on PIPE_V over min(that, its size). Operands in UB, 32-byte aligned, memchecked, on PIPE_V;
// dst must not overlap src. Not provided: the dstT/srcT/scaleT forms of other products (fp8, hifloat8,
// fp4, PER_TOKEN / PER_GROUP with AscendQuantParam / AscendAntiQuantParam).
#ifndef MPNPU_QUANT_H
#define MPNPU_QUANT_H

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../graph/tensor_shape.h"
#include "lib_types.h"
#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

struct AscendQuantConfig {
    uint32_t calcCount = 0;
    uint32_t offsetCount = 0;
    uint32_t scaleCount = 0;
    uint32_t workLocalSize = 0;
};
constexpr AscendQuantConfig ASCEND_QUANT_DEFAULT_CFG = {0, 0, 0, 0};

struct AntiQuantShapeInfo {
    uint32_t offsetHeight{0};
    uint32_t offsetWidth{0};
    uint32_t scaleHeight{0};
    uint32_t scaleWidth{0};
};

}  // namespace AscendC

namespace mpnpu {
namespace quant {

inline int8_t to_int8(float v) {
    if (std::isnan(v)) return 0;
    const float r = std::nearbyint(v);  // (the default rounding mode: to nearest, ties to even)
    return int8_t(r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r));
}

// The scratch the call uses of a given buffer: 4 bytes an element, at most its size.
template <typename D, typename S>
inline void trace_tmp(const AscendC::LocalTensor<uint8_t>* tmp, uint64_t n, const AscendC::LocalTensor<D>& dst,
                      const AscendC::LocalTensor<S>& src, const Site& site, const char* name) {
    if (!tmp) return;
    const uint64_t used = lib::check_scratch(*tmp, n * 4, {lib::span_of(src, n, "srcTensor"),
                                                         lib::span_of(dst, n, "dstTensor")},
                                             site, name, "sharedTmpBuffer");
    lib::trace_scratch(*tmp, used, site, name);
}

template <typename D, typename S>
inline void check_pair(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, uint64_t n,
                       const Site& site, const char* name) {
    vec::check_operand(dst, 32, site, name, "dstTensor");
    vec::check_operand(src, 32, site, name, "srcTensor");
    vec::check_count(src, n, site, name, "srcTensor");
    vec::check_count(dst, n, site, name, "dstTensor");
    if (vec::overlaps(src.mpnpu_addr(), n * sizeof(S), dst.mpnpu_addr(), n * sizeof(D)))
        api_error(site, "%s: srcTensor and dstTensor overlap (the call takes separate operands)", name);
}

// A per-channel parameter: a tensor of `count` elements (nullptr: the scalar).
template <typename T>
struct Param {
    const AscendC::LocalTensor<T>* t;
    float scalar;
    uint32_t count;
    const char* what;
};

template <typename T>
inline std::vector<float> read_param(const Param<T>& p, const Site& site, const char* name) {
    if (!p.t) return std::vector<float>(1, p.scalar);
    vec::check_operand(*p.t, 32, site, name, p.what);
    vec::check_count(*p.t, p.count, site, name, p.what);
    p.t->mpnpu_touch('R', P_V, 0, p.count, site, name);
    std::vector<float> v(p.count);
    for (uint32_t i = 0; i < p.count; ++i) v[i] = to_float(p.t->mpnpu_addr()[i]);
    return v;
}

// AscendQuant: the per-tensor form has scale and offset scalars (Param without a tensor).
template <typename T>
inline void quant(const AscendC::LocalTensor<int8_t>& dst, const AscendC::LocalTensor<T>& src,
                  const AscendC::LocalTensor<uint8_t>* tmp, const Param<T>& scale, const Param<T>& offset,
                  uint32_t calCount, const Site& site) {
    const char* name = "AscendQuant";
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        if (scale.t) {
            if (scale.count == 0 || scale.count % 32)
                api_error(site, "%s: scaleCount %u is not a positive multiple of 32", name, scale.count);
            if (calCount % scale.count)
                api_error(site, "%s: calCount %u is not a multiple of scaleCount %u", name, calCount, scale.count);
            if (offset.t && offset.count != scale.count)
                api_error(site, "%s: offsetCount %u is not scaleCount %u (documented: equal)", name, offset.count,
                          scale.count);
        }
        check_pair(dst, src, calCount, site, name);
        if (calCount == 0) return;
        src.mpnpu_touch('R', P_V, 0, calCount, site, name);
        const std::vector<float> sc = read_param(scale, site, name), of = read_param(offset, site, name);
        trace_tmp(tmp, calCount, dst, src, site, name);
        dst.mpnpu_touch('W', P_V, 0, calCount, site, name);
        const T* in = src.mpnpu_addr();
        int8_t* out = dst.mpnpu_addr();
        // in half (see the top of this file): the source, the scale and the offset as halves, the product
        // and the sum each rounded to half, then half -> int8
        const auto h = [](float v) { return to_float(from_float<half>(v)); };
        for (uint64_t i = 0; i < calCount; ++i)
            out[i] = to_int8(h(h(h(to_float(in[i])) * h(sc[i % sc.size()])) + h(of[i % of.size()])));
    }
}

// AscendAntiQuant. offset/scale: tensors (with their shape) or scalars (offset may be absent: 0).
template <typename I, typename O, bool transpose>
inline void antiquant(const AscendC::LocalTensor<O>& dst, const AscendC::LocalTensor<I>& src,
                      const AscendC::LocalTensor<O>* offset, O offsetScalar, bool hasOffset,
                      const AscendC::LocalTensor<O>* scale, O scaleScalar, const AscendC::LocalTensor<uint8_t>* tmp,
                      uint32_t k, const AscendC::AntiQuantShapeInfo& info, const Site& site) {
    const char* name = "AscendAntiQuant";
    vec::start(site, name);
    uint64_t n_all = src.GetSize();
    uint32_t oh = 1, ow = 1, sh = 1, sw = 1, rows = 1, cols = 1;
    if (scale) {  // the per-channel form: the parameters' shapes
        const AscendC::LocalTensor<O>& first = offset ? *offset : *scale;
        const AscendC::ShapeInfo os = first.GetShapeInfo(), ss = scale->GetShapeInfo();
        oh = info.offsetHeight, ow = info.offsetWidth, sh = info.scaleHeight, sw = info.scaleWidth;
        if (!oh || !ow) {
            if (os.shapeDim >= 2) {
                oh = os.shape[0], ow = os.shape[1];
            } else {
                oh = transpose ? first.GetSize() : 1, ow = transpose ? 1 : first.GetSize();
            }
        }
        if (!sh || !sw) {
            if (ss.shapeDim >= 2) {
                sh = ss.shape[0], sw = ss.shape[1];
            } else {
                sh = oh, sw = ow;
            }
        }
        if (!offset) oh = sh, ow = sw;
        if (oh != sh || ow != sw)
            api_error(site, "%s: offset's shape [%u, %u] is not scale's [%u, %u]", name, oh, ow, sh, sw);
        const uint32_t groups = transpose ? sw : sh, n = transpose ? sh : sw;
        if (k == 0 || groups == 0 || k % groups)
            api_error(site, "%s: k %u is not a multiple of the parameters' %u groups (shape [%u, %u])", name, k,
                      groups, sh, sw);
        rows = transpose ? n : k, cols = transpose ? k : n;
        n_all = uint64_t(rows) * cols;
        if ((uint64_t(cols) * sizeof(O)) % 32)
            api_error(site, "%s: a row of %u elements is not 32-byte aligned", name, cols);
        vec::check_operand(*scale, 32, site, name, "scale");
        vec::check_count(*scale, uint64_t(sh) * sw, site, name, "scale");
        if (offset) {
            vec::check_operand(*offset, 32, site, name, "offset");
            vec::check_count(*offset, uint64_t(oh) * ow, site, name, "offset");
        }
    }
    check_pair(dst, src, n_all, site, name);
    if (n_all == 0) return;
    src.mpnpu_touch('R', P_V, 0, n_all, site, name);
    const uint64_t np = uint64_t(sh) * sw;
    if (scale) scale->mpnpu_touch('R', P_V, 0, np, site, name);
    if (scale && offset) offset->mpnpu_touch('R', P_V, 0, np, site, name);
    trace_tmp(tmp, n_all, dst, src, site, name);
    const I* in = src.mpnpu_addr();
    std::vector<float> y(n_all);
    constexpr bool in_half = std::is_same_v<O, half>;
    const auto step = [](float v) { return in_half ? to_float(from_float<half>(v)) : v; };
    for (uint64_t e = 0; e < n_all; ++e) {
        float s = to_float(scaleScalar), o = hasOffset ? to_float(offsetScalar) : 0.0f;
        if (scale) {
            const uint64_t i = e / cols, j = e % cols;
            const uint64_t pi = transpose ? i : i / (k / sh), pj = transpose ? j / (k / sw) : j;
            s = to_float(scale->mpnpu_addr()[pi * sw + pj]);
            o = offset ? to_float(offset->mpnpu_addr()[pi * sw + pj]) : 0.0f;
        }
        y[e] = step(s * step(step(float(in[e])) + o));
    }
    dst.mpnpu_touch('W', P_V, 0, n_all, site, name);
    O* out = dst.mpnpu_addr();
    for (uint64_t e = 0; e < n_all; ++e) out[e] = from_float<O>(y[e]);
}

template <typename Shape>
inline uint64_t elems(const Shape& s) {
    const int64_t n = s.GetShapeSize();
    return n > 0 ? uint64_t(n) : 0;
}
inline uint32_t clamp32(uint64_t v) { return v > 0xFFFFFFFFu ? 0xFFFFFFFFu : uint32_t(v); }

}  // namespace quant
}  // namespace mpnpu

namespace AscendC {

// -- AscendQuant ----------------------------------------------------------------------------------------
#define MPNPU_QUANT_T \
    static_assert(mpnpu::vec::one_of<T, half, float>, "AscendQuant: T is half or float (the source type)")

// PER_TENSOR
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const float scale, const float offset,
                        const uint32_t calCount, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, &sharedTmpBuffer, {nullptr, scale, 1, "scale"},
                           {nullptr, offset, 1, "offset"}, calCount, site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const float scale, const float offset,
                        MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, &sharedTmpBuffer, {nullptr, scale, 1, "scale"},
                           {nullptr, offset, 1, "offset"}, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor, const float scale,
                        const float offset, const uint32_t calCount, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, nullptr, {nullptr, scale, 1, "scale"},
                           {nullptr, offset, 1, "offset"}, calCount, site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor, const float scale,
                        const float offset, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, nullptr, {nullptr, scale, 1, "scale"},
                           {nullptr, offset, 1, "offset"}, srcTensor.GetSize(), site);
}

// PER_CHANNEL: a scale tensor, the offset a scalar of T or a tensor.
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor,
                        const T offset, const uint32_t scaleCount, const uint32_t calCount, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, &sharedTmpBuffer, {&scaleTensor, 0.0f, scaleCount, "scaleTensor"},
                           {nullptr, mpnpu::to_float(offset), 1, "offset"}, calCount, site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor,
                        const LocalTensor<T>& offsetTensor, const uint32_t scaleCount, const uint32_t offsetCount,
                        const uint32_t calCount, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, &sharedTmpBuffer, {&scaleTensor, 0.0f, scaleCount, "scaleTensor"},
                           {&offsetTensor, 0.0f, offsetCount, "offsetTensor"}, calCount, site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor,
                        const T offset, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, &sharedTmpBuffer,
                           {&scaleTensor, 0.0f, scaleTensor.GetSize(), "scaleTensor"},
                           {nullptr, mpnpu::to_float(offset), 1, "offset"}, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor,
                        const LocalTensor<T>& offsetTensor, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, &sharedTmpBuffer,
                           {&scaleTensor, 0.0f, scaleTensor.GetSize(), "scaleTensor"},
                           {&offsetTensor, 0.0f, offsetTensor.GetSize(), "offsetTensor"}, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<T>& scaleTensor, const T offset, const uint32_t scaleCount,
                        const uint32_t calCount, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, nullptr, {&scaleTensor, 0.0f, scaleCount, "scaleTensor"},
                           {nullptr, mpnpu::to_float(offset), 1, "offset"}, calCount, site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<T>& scaleTensor, const LocalTensor<T>& offsetTensor,
                        const uint32_t scaleCount, const uint32_t offsetCount, const uint32_t calCount, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, nullptr, {&scaleTensor, 0.0f, scaleCount, "scaleTensor"},
                           {&offsetTensor, 0.0f, offsetCount, "offsetTensor"}, calCount, site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<T>& scaleTensor, const T offset, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, nullptr, {&scaleTensor, 0.0f, scaleTensor.GetSize(), "scaleTensor"},
                           {nullptr, mpnpu::to_float(offset), 1, "offset"}, srcTensor.GetSize(), site);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<T>& scaleTensor, const LocalTensor<T>& offsetTensor, MPNPU_SITE) {
    MPNPU_QUANT_T;
    mpnpu::quant::quant<T>(dstTensor, srcTensor, nullptr, {&scaleTensor, 0.0f, scaleTensor.GetSize(), "scaleTensor"},
                           {&offsetTensor, 0.0f, offsetTensor.GetSize(), "offsetTensor"}, srcTensor.GetSize(), site);
}
#undef MPNPU_QUANT_T

// -- AscendAntiQuant ------------------------------------------------------------------------------------
#define MPNPU_ANTIQUANT_T                                                                                      \
    static_assert(std::is_same_v<InputDataType, int8_t>, "AscendAntiQuant: mpnpu takes int8_t sources");       \
    static_assert(std::is_same_v<OutputDataType, half> || std::is_same_v<OutputDataType, bfloat16_t>,         \
                  "AscendAntiQuant: the output is half or bfloat16_t on this chip class")

template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& offset, const LocalTensor<OutputDataType>& scale,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_ANTIQUANT_T;
    mpnpu::quant::antiquant<InputDataType, OutputDataType, isTranspose>(
        dst, src, &offset, OutputDataType(), true, &scale, OutputDataType(), &sharedTmpBuffer, k, shapeInfo, site);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& scale, const LocalTensor<uint8_t>& sharedTmpBuffer,
                            const uint32_t k, const AntiQuantShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_ANTIQUANT_T;
    mpnpu::quant::antiquant<InputDataType, OutputDataType, isTranspose>(
        dst, src, nullptr, OutputDataType(), false, &scale, OutputDataType(), &sharedTmpBuffer, k, shapeInfo, site);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType offset, const OutputDataType scale,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_ANTIQUANT_T;
    mpnpu::quant::antiquant<InputDataType, OutputDataType, isTranspose>(dst, src, nullptr, offset, true, nullptr, scale,
                                                                        &sharedTmpBuffer, k, shapeInfo, site);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType scale, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_ANTIQUANT_T;
    mpnpu::quant::antiquant<InputDataType, OutputDataType, isTranspose>(
        dst, src, nullptr, OutputDataType(), false, nullptr, scale, &sharedTmpBuffer, k, shapeInfo, site);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& offset, const LocalTensor<OutputDataType>& scale,
                            const uint32_t k, const AntiQuantShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_ANTIQUANT_T;
    mpnpu::quant::antiquant<InputDataType, OutputDataType, isTranspose>(
        dst, src, &offset, OutputDataType(), true, &scale, OutputDataType(), nullptr, k, shapeInfo, site);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType offset, const OutputDataType scale, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_ANTIQUANT_T;
    mpnpu::quant::antiquant<InputDataType, OutputDataType, isTranspose>(dst, src, nullptr, offset, true, nullptr, scale,
                                                                        nullptr, k, shapeInfo, site);
}
#undef MPNPU_ANTIQUANT_T

// -- host helpers (mpnpu's model: no scratch needed; 4 bytes an element staged at most) -----------------
inline void GetAscendQuantMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                        uint32_t& minValue) {
    (void)typeSize;
    maxValue = mpnpu::quant::clamp32(mpnpu::quant::elems(srcShape) * 4);
    minValue = 0;
}
inline void GetAscendAntiQuantMaxMinTmpSize(const TensorShape& srcShape, const TensorShape& scaleShape,
                                            bool isTranspose, TensorDataType inputDataType,
                                            TensorDataType outputDataType, uint32_t& maxValue, uint32_t& minValue) {
    (void)scaleShape, (void)isTranspose, (void)inputDataType, (void)outputDataType;
    maxValue = mpnpu::quant::clamp32(mpnpu::quant::elems(srcShape) * 4);
    minValue = 0;
}
inline uint32_t GetAscendAntiQuantMaxTmpSize(const TensorShape& srcShape, const TensorShape& scaleShape,
                                             bool isTranspose, TensorDataType inputDataType,
                                             TensorDataType outputDataType) {
    uint32_t maxValue = 0, minValue = 0;
    GetAscendAntiQuantMaxMinTmpSize(srcShape, scaleShape, isTranspose, inputDataType, outputDataType, maxValue,
                                    minValue);
    return maxValue;
}
inline uint32_t GetAscendAntiQuantMinTmpSize(const TensorShape& srcShape, const TensorShape& scaleShape,
                                             bool isTranspose, TensorDataType inputDataType,
                                             TensorDataType outputDataType) {
    (void)srcShape, (void)scaleShape, (void)isTranspose, (void)inputDataType, (void)outputDataType;
    return 0;
}
inline void GetAscendDequantMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                          uint32_t& minValue) {
    (void)typeSize;  // (dequant.h's model: 4 bytes a source element, none required)
    maxValue = mpnpu::quant::clamp32(mpnpu::quant::elems(srcShape) * 4);
    minValue = 0;
}

}  // namespace AscendC

#endif  // MPNPU_QUANT_H
