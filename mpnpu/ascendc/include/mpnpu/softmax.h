// The SoftMax high-level call on the vector unit, and SimpleSoftMax.
//
// SoftMax takes the source as [m, k]: m the product of the non-last axes, k the last axis, each row
// of k elements starting at row * k. Per row: max = the row's largest value, e = exp(x - max),
// sum = the sum of e, dst = e / sum. The row's max and sum are also outputs (the forms with
// sumTensor and maxTensor): one 32-byte block per row, every element of it that row's value.
// SimpleSoftMax is the last step alone, given the sums and maxima: dst = exp(src - max) / sum.
// SoftmaxGrad, the backward step: per row d = the sum of grad * src, dst = (grad - d) * src; with
// isFront (and SoftmaxGradFront) dst is d alone, one 32-byte block a row.
//
// The shape. A SoftMaxShapeInfo {srcM, srcK, oriSrcM, oriSrcK} gives it: srcK the row length in UB
// (32-byte aligned, documented), oriSrcK the row's meaningful elements, with the rest padding the
// caller filled; when it is left at {} the tiling's srcM and srcK do. mpnpu's model of padding (our
// own reading of "the padded data takes part in some of the computation"): the row's max and sum are
// taken over its first oriSrcK elements, and every one of its srcK elements, padding included, is
// written as exp(x - max) / sum. Rows past oriSrcM are computed like the others.
//
// Arithmetic: in float for both element types (half rows are widened, each result rounded once
// to half); exp, the sum and the division in float, the sum added in order along the row. The
// device's own reduction order and its exp are not bit-exact with this; conformance compares within
// the rounding of the type.
//
// The temporary buffer. The caller's sharedTmpBuffer (checked: in UB, 32-byte aligned, overlapping
// neither src nor dst, as documented) is traced as written and read on PIPE_V, its first
// 4 x k bytes per row of the call, at most its size; the framework's own scratch is not modelled.
// The tiling's split is not followed (the call is computed whole), so its other fields are not read.
//
// Operands: every tensor in UB, 32-byte aligned; src and dst may be the same tensor (documented:
// their space may be reused), sumTensor and maxTensor are separate outputs of the same type
// (float or half; float with half data in the mixed form). isDataFormatNZ = true (the NZ layout's
// two-axis reduce) is refused at compile time. All accesses are recorded on PIPE_V, each a
// contiguous record; each is memchecked against its tensor.
#ifndef MPNPU_SOFTMAX_H
#define MPNPU_SOFTMAX_H

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../kernel_tiling/kernel_tiling.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

// The shape of a SoftMax call's source: {srcM, srcK, oriSrcM, oriSrcK} (see the top of this file).
struct SoftMaxShapeInfo {
    uint32_t srcM = 0;
    uint32_t srcK = 0;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftMaxShapeInfo() = default;
    SoftMaxShapeInfo(uint32_t m, uint32_t k, uint32_t oriM, uint32_t oriK)
        : srcM(m), srcK(k), oriSrcM(oriM), oriSrcK(oriK) {}
};

enum class SoftmaxMode {
    SOFTMAX_NORMAL = 0,
    SOFTMAX_OUTPUT_WITHOUT_BRC = 1,
};

// Compile-time options of the SoftMax family: isCheckTiling, a constant shape (oriSrcM, oriSrcK)
// and a reserved mode. mpnpu takes the shape from the call (a constant one, when given, must agree).
struct SoftmaxConfig {
    bool isCheckTiling = true;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftmaxMode mode = SoftmaxMode::SOFTMAX_NORMAL;
};
constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {true, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};

}  // namespace AscendC

namespace mpnpu {
namespace softmax {

struct Shape {
    uint32_t m, k, ori_m, ori_k;
};

inline Shape shape_of(const ::SoftMaxTiling& tiling, const AscendC::SoftMaxShapeInfo& info,
                      const AscendC::SoftmaxConfig& config, uint32_t type_size, const Site& site, const char* name) {
    Shape s{info.srcM, info.srcK, info.oriSrcM, info.oriSrcK};
    if (s.m == 0 && s.k == 0) s = Shape{tiling.srcM, tiling.srcK, tiling.srcM, tiling.srcK};
    if (s.ori_m == 0) s.ori_m = s.m;
    if (s.ori_k == 0) s.ori_k = s.k;
    if (s.m == 0 || s.k == 0)
        api_error(site, "%s: no shape: SoftMaxShapeInfo and the tiling both give %u x %u (srcM x srcK)", name, s.m,
                  s.k);
    if ((uint64_t(s.k) * type_size) % 32)
        api_error(site, "%s: srcK %u is not 32-byte aligned (%u bytes a row; the last axis must be padded to a "
                  "multiple of %u elements)", name, s.k, unsigned(s.k * type_size), unsigned(32 / type_size));
    if (s.ori_k > s.k || s.ori_m > s.m)
        api_error(site, "%s: the original shape %u x %u is larger than the shape %u x %u it is padded to", name,
                  s.ori_m, s.ori_k, s.m, s.k);
    if (config.oriSrcK && (config.oriSrcK != s.ori_k || (config.oriSrcM && config.oriSrcM != s.ori_m)))
        api_error(site, "%s: the SoftmaxConfig's constant shape %u x %u is not the call's %u x %u", name,
                  config.oriSrcM, config.oriSrcK, s.ori_m, s.ori_k);
    return s;
}

// The per-row reduction outputs of type U: one 32-byte block a row.
template <typename U>
inline void check_row_output(const AscendC::LocalTensor<U>& t, const Shape& s, const Site& site, const char* name,
                             const char* what) {
    vec::check_operand(t, 32, site, name, what);
    vec::check_count(t, uint64_t(s.m) * (32 / sizeof(U)), site, name, what);
}

template <typename T>
inline void check_tmp(const AscendC::LocalTensor<uint8_t>& tmp, const void* src, const void* dst, uint64_t bytes,
                      const Site& site, const char* name) {
    vec::check_operand(tmp, 32, site, name, "sharedTmpBuffer");
    if (vec::overlaps(tmp.mpnpu_addr(), tmp.GetSize(), src, bytes))
        api_error(site, "%s: sharedTmpBuffer overlaps srcTensor (the call takes separate operands)", name);
    if (vec::overlaps(tmp.mpnpu_addr(), tmp.GetSize(), dst, bytes))
        api_error(site, "%s: sharedTmpBuffer overlaps dstTensor (the call takes separate operands)", name);
}

// src and dst: the same tensor, or apart.
template <typename T>
inline void check_src_dst(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t bytes,
                          const Site& site, const char* name) {
    const void* a = src.mpnpu_addr();
    const void* b = dst.mpnpu_addr();
    if (a != b && vec::overlaps(a, bytes, b, bytes))
        api_error(site, "%s: dstTensor and srcTensor overlap without being the same tensor (the call takes "
                  "separate operands, or the same one reused)", name);
}

// The checks both calls make of dst, src and sharedTmpBuffer for the shape s; the bytes of the
// buffer the call uses (0 without one).
template <typename T>
inline uint64_t check_data(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                           const AscendC::LocalTensor<uint8_t>* tmp, const Shape& s, const Site& site,
                           const char* name) {
    const uint64_t n = uint64_t(s.m) * s.k, bytes = n * sizeof(T);
    vec::check_operand(dst, 32, site, name, "dstTensor");
    vec::check_operand(src, 32, site, name, "srcTensor");
    vec::check_count(src, n, site, name, "srcTensor");
    vec::check_count(dst, n, site, name, "dstTensor");
    check_src_dst(dst, src, bytes, site, name);
    if (!tmp) return 0;
    check_tmp<T>(*tmp, src.mpnpu_addr(), dst.mpnpu_addr(), bytes, site, name);
    return n * 4 < tmp->GetSize() ? n * 4 : tmp->GetSize();
}

// SoftMax: dst = exp(x - rowmax) / rowsum; the row's max and sum into max/sum (U), when given.
template <typename T, typename U>
inline void run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>* sum,
                const AscendC::LocalTensor<U>* max, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, const ::SoftMaxTiling& tiling,
                const AscendC::SoftMaxShapeInfo& info, const AscendC::SoftmaxConfig& config, const Site& site) {
    const char* name = "SoftMax";
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const Shape s = shape_of(tiling, info, config, sizeof(T), site, name);
        const uint64_t n = uint64_t(s.m) * s.k, bytes = n * sizeof(T);
        const uint64_t tmp_used = check_data(dst, src, tmp, s, site, name);
        if (sum) {
            check_row_output(*sum, s, site, name, "sumTensor");
            check_row_output(*max, s, site, name, "maxTensor");
            const uint64_t rb = uint64_t(s.m) * 32;
            if (vec::overlaps(sum->mpnpu_addr(), rb, max->mpnpu_addr(), rb))
                api_error(site, "%s: sumTensor and maxTensor overlap (each is an output of its own)", name);
            for (const void* out : {static_cast<const void*>(sum->mpnpu_addr()),
                                    static_cast<const void*>(max->mpnpu_addr())})
                if (vec::overlaps(out, rb, src.mpnpu_addr(), bytes) || vec::overlaps(out, rb, dst.mpnpu_addr(), bytes))
                    api_error(site, "%s: sumTensor or maxTensor overlaps srcTensor or dstTensor", name);
        }
        src.mpnpu_touch('R', P_V, 0, n, site, name);
        if (tmp_used) {
            tmp->mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
            tmp->mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
        }
        const T* in = src.mpnpu_addr();
        std::vector<float> e(n);
        std::vector<float> row_max(s.m), row_sum(s.m);
        for (uint32_t r = 0; r < s.m; ++r) {
            const T* x = in + uint64_t(r) * s.k;
            float m = -INFINITY;
            for (uint32_t j = 0; j < s.ori_k; ++j) m = std::fmax(m, to_float(x[j]));
            float acc = 0.0f;
            for (uint32_t j = 0; j < s.k; ++j) {
                float v = std::exp(to_float(x[j]) - m);
                e[uint64_t(r) * s.k + j] = v;
                if (j < s.ori_k) acc += v;
            }
            row_max[r] = m;
            row_sum[r] = acc;
        }
        dst.mpnpu_touch('W', P_V, 0, n, site, name);
        T* out = dst.mpnpu_addr();
        for (uint32_t r = 0; r < s.m; ++r)
            for (uint32_t j = 0; j < s.k; ++j)
                out[uint64_t(r) * s.k + j] = from_float<T>(e[uint64_t(r) * s.k + j] / row_sum[r]);
        if (sum) {
            constexpr uint32_t per = 32 / sizeof(U);
            sum->mpnpu_touch('W', P_V, 0, uint64_t(s.m) * per, site, name);
            max->mpnpu_touch('W', P_V, 0, uint64_t(s.m) * per, site, name);
            U* so = sum->mpnpu_addr();
            U* mo = max->mpnpu_addr();
            for (uint32_t r = 0; r < s.m; ++r)
                for (uint32_t j = 0; j < per; ++j) {
                    so[uint64_t(r) * per + j] = from_float<U>(row_sum[r]);
                    mo[uint64_t(r) * per + j] = from_float<U>(row_max[r]);
                }
        }
    }
}

// SimpleSoftMax: dst = exp(x - max) / sum with the given per-row sums and maxima (U).
template <typename T, typename U>
inline void simple(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& sum,
                   const AscendC::LocalTensor<U>& max, const AscendC::LocalTensor<T>& src,
                   const AscendC::LocalTensor<uint8_t>* tmp, const ::SoftMaxTiling& tiling,
                   const AscendC::SoftMaxShapeInfo& info, const AscendC::SoftmaxConfig& config, const Site& site) {
    const char* name = "SimpleSoftMax";
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const Shape s = shape_of(tiling, info, config, sizeof(T), site, name);
        const uint64_t n = uint64_t(s.m) * s.k;
        constexpr uint32_t per = 32 / sizeof(U);
        const uint64_t tmp_used = check_data(dst, src, tmp, s, site, name);
        check_row_output(sum, s, site, name, "inSumTensor");
        check_row_output(max, s, site, name, "inMaxTensor");
        src.mpnpu_touch('R', P_V, 0, n, site, name);
        sum.mpnpu_touch('R', P_V, 0, uint64_t(s.m) * per, site, name);
        max.mpnpu_touch('R', P_V, 0, uint64_t(s.m) * per, site, name);
        if (tmp_used) {
            tmp->mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
            tmp->mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
        }
        const T* in = src.mpnpu_addr();
        const U* si = sum.mpnpu_addr();
        const U* mi = max.mpnpu_addr();
        std::vector<float> y(n);
        for (uint32_t r = 0; r < s.m; ++r) {
            const float m = to_float(mi[uint64_t(r) * per]), d = to_float(si[uint64_t(r) * per]);
            for (uint32_t j = 0; j < s.k; ++j)
                y[uint64_t(r) * s.k + j] = std::exp(to_float(in[uint64_t(r) * s.k + j]) - m) / d;
        }
        dst.mpnpu_touch('W', P_V, 0, n, site, name);
        T* out = dst.mpnpu_addr();
        for (uint64_t i = 0; i < n; ++i) out[i] = from_float<T>(y[i]);
    }
}

// SoftmaxGrad: per row d = sum(grad * src) (over the original length); front: dst is d, one 32-byte
// block a row; otherwise dst = (grad - d) * src over the whole row.
template <typename T>
inline void grad(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& grad,
                 const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
                 const ::SoftMaxTiling& tiling, bool front, const AscendC::SoftMaxShapeInfo& info, const Site& site,
                 const char* name) {
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const Shape s = shape_of(tiling, info, AscendC::SoftmaxConfig{}, sizeof(T), site, name);
        const uint64_t n = uint64_t(s.m) * s.k, bytes = n * sizeof(T);
        constexpr uint32_t per = 32 / sizeof(T);
        vec::check_operand(grad, 32, site, name, "gradTensor");
        vec::check_operand(src, 32, site, name, "srcTensor");
        vec::check_operand(dst, 32, site, name, "dstTensor");
        vec::check_count(grad, n, site, name, "gradTensor");
        vec::check_count(src, n, site, name, "srcTensor");
        const uint64_t out_n = front ? uint64_t(s.m) * per : n;
        vec::check_count(dst, out_n, site, name, "dstTensor");
        for (const AscendC::LocalTensor<T>* in : {&grad, &src}) {
            const void* a = in->mpnpu_addr();
            const void* b = dst.mpnpu_addr();
            if (a != b && vec::overlaps(a, bytes, b, out_n * sizeof(T)))
                api_error(site, "%s: dstTensor overlaps an input without being that tensor", name);
        }
        uint64_t tmp_used = 0;
        if (tmp) {
            check_tmp<T>(*tmp, src.mpnpu_addr(), dst.mpnpu_addr(), bytes, site, name);
            if (vec::overlaps(tmp->mpnpu_addr(), tmp->GetSize(), grad.mpnpu_addr(), bytes))
                api_error(site, "%s: sharedTmpBuffer overlaps gradTensor (the call takes separate operands)", name);
            tmp_used = n * 4 < tmp->GetSize() ? n * 4 : tmp->GetSize();
        }
        grad.mpnpu_touch('R', P_V, 0, n, site, name);
        src.mpnpu_touch('R', P_V, 0, n, site, name);
        if (tmp_used) {
            tmp->mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
            tmp->mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
        }
        const T* g = grad.mpnpu_addr();
        const T* x = src.mpnpu_addr();
        std::vector<float> out(out_n);
        for (uint32_t r = 0; r < s.m; ++r) {
            const uint64_t row = uint64_t(r) * s.k;
            float d = 0.0f;
            for (uint32_t j = 0; j < s.ori_k; ++j) d += to_float(g[row + j]) * to_float(x[row + j]);
            if (front) {
                for (uint32_t j = 0; j < per; ++j) out[uint64_t(r) * per + j] = d;
            } else {
                for (uint32_t j = 0; j < s.k; ++j)
                    out[row + j] = (to_float(g[row + j]) - d) * to_float(x[row + j]);
            }
        }
        dst.mpnpu_touch('W', P_V, 0, out_n, site, name);
        T* o = dst.mpnpu_addr();
        for (uint64_t i = 0; i < out_n; ++i) o[i] = from_float<T>(out[i]);
    }
}

template <typename T, typename U>
constexpr bool sum_type_ok = std::is_same_v<T, U> || (std::is_same_v<T, half> && std::is_same_v<U, float>);

}  // namespace softmax
}  // namespace mpnpu

namespace AscendC {

#define MPNPU_SOFTMAX_NZ_CHECK                                                                              \
    static_assert(!isDataFormatNZ, "SoftMax: mpnpu computes the ND format only (isDataFormatNZ = false)"); \
    static_assert(mpnpu::softmax::sum_type_ok<T, U>, "SoftMax: sumTensor and maxTensor are of the data's type, " \
                  "or float with half data")

// The forms with sumTensor and maxTensor (of the data's type, or float with half data).
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<U>& sumTensor, const LocalTensor<U>& maxTensor,
                    const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    MPNPU_SOFTMAX_NZ_CHECK;
    mpnpu::softmax::run<T, U>(dstTensor, &sumTensor, &maxTensor, srcTensor, nullptr, tiling, softmaxShapeInfo, config,
                              site);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<U>& sumTensor, const LocalTensor<U>& maxTensor,
                    const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    MPNPU_SOFTMAX_NZ_CHECK;
    mpnpu::softmax::run<T, U>(dstTensor, &sumTensor, &maxTensor, srcTensor, &sharedTmpBuffer, tiling,
                              softmaxShapeInfo, config, site);
}
#undef MPNPU_SOFTMAX_NZ_CHECK

// The forms without sumTensor and maxTensor.
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    mpnpu::softmax::run<T, T>(dstTensor, nullptr, nullptr, srcTensor, nullptr, tiling, softmaxShapeInfo, config, site);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    mpnpu::softmax::run<T, T>(dstTensor, nullptr, nullptr, srcTensor, &sharedTmpBuffer, tiling, softmaxShapeInfo,
                              config, site);
}

// SimpleSoftMax: the sums and maxima given (of the data's type, or float with half data).
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<U>& inSumTensor,
                          const LocalTensor<U>& inMaxTensor, const LocalTensor<T>& srcTensor,
                          const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "SimpleSoftMax: mpnpu computes the ND format only (isDataFormatNZ = false)");
    static_assert(mpnpu::softmax::sum_type_ok<T, U>, "SimpleSoftMax: the sums and maxima are of the data's type, "
                  "or float with half data");
    mpnpu::softmax::simple<T, U>(dstTensor, inSumTensor, inMaxTensor, srcTensor, nullptr, tiling, softmaxShapeInfo,
                                 config, site);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<U>& inSumTensor,
                          const LocalTensor<U>& inMaxTensor, const LocalTensor<T>& srcTensor,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                          const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "SimpleSoftMax: mpnpu computes the ND format only (isDataFormatNZ = false)");
    static_assert(mpnpu::softmax::sum_type_ok<T, U>, "SimpleSoftMax: the sums and maxima are of the data's type, "
                  "or float with half data");
    mpnpu::softmax::simple<T, U>(dstTensor, inSumTensor, inMaxTensor, srcTensor, &sharedTmpBuffer, tiling,
                                 softmaxShapeInfo, config, site);
}

// SoftmaxGrad: dst = (grad - rowsum(grad * src)) * src, or with isFront the row sums alone.
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void SoftmaxGrad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                        const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling, bool isFront = false,
                        const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "SoftmaxGrad: mpnpu computes the ND format only (isDataFormatNZ = false)");
    mpnpu::softmax::grad<T>(dstTensor, gradTensor, srcTensor, nullptr, tiling, isFront, softmaxShapeInfo, site,
                            "SoftmaxGrad");
}
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void SoftmaxGrad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                        const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                        const SoftMaxTiling& tiling, bool isFront = false,
                        const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "SoftmaxGrad: mpnpu computes the ND format only (isDataFormatNZ = false)");
    mpnpu::softmax::grad<T>(dstTensor, gradTensor, srcTensor, &sharedTmpBuffer, tiling, isFront, softmaxShapeInfo,
                            site, "SoftmaxGrad");
}
// SoftmaxGradFront: SoftmaxGrad's isFront form, the row sums of grad * src, one 32-byte block a row.
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
inline void SoftmaxGradFront(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                             const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                             const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "SoftmaxGradFront: mpnpu computes the ND format only (isDataFormatNZ = false)");
    mpnpu::softmax::grad<T>(dstTensor, gradTensor, srcTensor, nullptr, tiling, true, softmaxShapeInfo, site,
                            "SoftmaxGradFront");
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
inline void SoftmaxGradFront(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                             const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                             const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "SoftmaxGradFront: mpnpu computes the ND format only (isDataFormatNZ = false)");
    mpnpu::softmax::grad<T>(dstTensor, gradTensor, srcTensor, &sharedTmpBuffer, tiling, true, softmaxShapeInfo, site,
                            "SoftmaxGradFront");
}

}  // namespace AscendC

#endif  // MPNPU_SOFTMAX_H
