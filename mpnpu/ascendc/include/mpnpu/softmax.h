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
// to half); exp, the sum and the division in float, the sum added in order along the row
// (SoftmaxGrad's row sum of grad * src: as Sum adds, each 64-float repeat by a tree of adjacent pairs,
// the repeats then in order). The device's own reduction order and its exp are not bit-exact with
// this; conformance compares within the rounding of the type.
//
// The temporary buffer. The caller's sharedTmpBuffer (checked: in UB, 32-byte aligned, overlapping
// neither src nor dst, as documented, and at least one row of k floats: the minimum the host's
// Get*MinTmpSize gives) is traced as written and read on PIPE_V over the whole rows of 4 x k bytes it
// holds, at most the call's m; the framework's own scratch is not modelled.
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
#include <cstring>
#include <type_traits>
#include <vector>

#include "../graph/tensor_shape.h"
#include "../kernel_tiling/kernel_tiling.h"
#include "native/rt.h"
#include "sum.h"
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
    constexpr SoftMaxShapeInfo() = default;
    constexpr SoftMaxShapeInfo(uint32_t m, uint32_t k, uint32_t oriM, uint32_t oriK)
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

template <typename Tiling>  // (SoftMaxTiling or LogSoftMaxTiling: srcM and srcK alike)
inline Shape shape_of(const Tiling& tiling, const AscendC::SoftMaxShapeInfo& info,
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

// mpnpu's model of the family's sharedTmpBuffer: a row of srcK floats (the row widened, its exp) for each
// row it holds at once. The minimum is one row; the call uses as many whole rows as fit, at most the
// call's m (Get*MinTmpSize / Get*MaxTmpSize give these bounds for the host's shape).
inline uint64_t tmp_used_bytes(const AscendC::LocalTensor<uint8_t>& tmp, const Shape& s, const Site& site,
                               const char* name) {
    const uint64_t row = uint64_t(s.k) * 4, have = tmp.GetSize();
    if (have < row)
        api_error(site, "%s: sharedTmpBuffer has %llu bytes, below the minimum %llu (one row of srcK = %u floats; "
                  "the host's minimum-size helper gives it)", name, (unsigned long long)have,
                  (unsigned long long)row, s.k);
    const uint64_t rows = have / row < s.m ? have / row : s.m;
    return rows * row;
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
    return tmp_used_bytes(*tmp, s, site, name);
}

// SoftMax: dst = exp(x - rowmax) / rowsum; the row's max and sum into max/sum (U), when given.
// LogSoftMax (as_log set): dst = log10(exp(x - rowmax) / rowsum), the quotient rounded to float first.
template <typename T, typename U, typename Tiling>
inline void run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>* sum,
                const AscendC::LocalTensor<U>* max, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, const Tiling& tiling,
                const AscendC::SoftMaxShapeInfo& info, const AscendC::SoftmaxConfig& config, const Site& site,
                const char* name = "SoftMax", bool as_log = false) {
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const Shape s = shape_of(tiling, info, config, sizeof(T), site, name);
        const uint64_t n = uint64_t(s.m) * s.k, bytes = n * sizeof(T);
        const uint64_t tmp_used = check_data(dst, src, tmp, s, site, name);
        if (as_log && src.mpnpu_addr() != dst.mpnpu_addr() &&
            vec::overlaps(src.mpnpu_addr(), bytes, dst.mpnpu_addr(), bytes))
            api_error(site, "%s: dst and src overlap (documented: the call takes separate operands)", name);
        if (as_log && src.mpnpu_addr() == dst.mpnpu_addr())
            api_error(site, "%s: dst is src (documented: the call takes separate operands)", name);
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
                out[uint64_t(r) * s.k + j] = from_float<T>(
                    as_log ? std::log10(e[uint64_t(r) * s.k + j] / row_sum[r]) : e[uint64_t(r) * s.k + j] / row_sum[r]);
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
            tmp_used = tmp_used_bytes(*tmp, s, site, name);
        }
        grad.mpnpu_touch('R', P_V, 0, n, site, name);
        src.mpnpu_touch('R', P_V, 0, n, site, name);
        if (tmp_used) {
            tmp->mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
            tmp->mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
        }
        const T* g = grad.mpnpu_addr();
        const T* x = src.mpnpu_addr();
        std::vector<float> out(out_n), prod(s.k);
        for (uint32_t r = 0; r < s.m; ++r) {
            const uint64_t row = uint64_t(r) * s.k;
            for (uint32_t j = 0; j < s.ori_k; ++j) prod[j] = to_float(g[row + j]) * to_float(x[row + j]);
            const float d = sumlib::row_sum(prod.data(), s.ori_k);  // (the vector unit's pairwise tree)
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

// -- LogSoftMax and AdjustSoftMaxRes ------------------------------------------------------------------

// LogSoftMax: dst = log10(softmax(src)) (the page's formula: base 10), the row's max and sum into max
// and sum (of the data's type, one 32-byte block a row); dst and src must not overlap (documented).
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void LogSoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sum, const LocalTensor<T>& max,
                       const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                       const LogSoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "LogSoftMax: mpnpu computes the ND format only (isDataFormatNZ = false)");
    mpnpu::softmax::run<T, T>(dst, &sum, &max, src, &sharedTmpBuffer, tiling, softmaxShapeInfo, SOFTMAX_DEFAULT_CFG,
                              site, "LogSoftMax", true);
}

// AdjustSoftMaxRes: every row whose max (the block's first element, or with stepSizeMode != 0 the
// row's one element) has the bit pattern `from` is set to `to` over its srcK elements; true when
// some row was. The comparison is of bits (from is the float's, or half's, encoding, as documented).
template <typename T1, typename T2, bool isDataFormatNZ = false, uint8_t stepSizeMode = 0>
inline bool AdjustSoftMaxRes(const LocalTensor<T1>& softMaxRes, const LocalTensor<T2>& maxTensor, const uint32_t from,
                             const T1 to, const SoftMaxShapeInfo& softmaxShapeInfo, MPNPU_SITE) {
    static_assert(!isDataFormatNZ, "AdjustSoftMaxRes: mpnpu computes the ND format only (isDataFormatNZ = false)");
    const char* name = "AdjustSoftMaxRes";
    using mpnpu::vec::one_of;
    mpnpu::vec::start(site, name);
    mpnpu::vec::need_type<T1>(one_of<T1, half, float>, site, name, "half, float");
    mpnpu::vec::need_type<T2>(one_of<T2, half, float>, site, name, "half, float (maxTensor)");
    bool found = false;
    if constexpr (one_of<T1, half, float> && one_of<T2, half, float>) {
        const uint32_t m = softmaxShapeInfo.srcM, k = softmaxShapeInfo.srcK;
        if ((uint64_t(k) * sizeof(T1)) % 32)
            mpnpu::api_error(site, "%s: srcK %u is not 32-byte aligned", name, k);
        const uint32_t step = stepSizeMode == 0 ? 32 / sizeof(T2) : 1;
        const uint64_t n_max = uint64_t(m) * step;
        mpnpu::vec::check_operand(softMaxRes, 32, site, name, "softMaxRes");
        mpnpu::vec::check_operand(maxTensor, 32, site, name, "maxTensor");
        mpnpu::vec::check_count(softMaxRes, uint64_t(m) * k, site, name, "softMaxRes");
        mpnpu::vec::check_count(maxTensor, n_max, site, name, "maxTensor");
        if (m == 0) return false;
        maxTensor.mpnpu_touch('R', mpnpu::P_V, 0, n_max, site, name);
        const T2* mx = maxTensor.mpnpu_addr();
        T1* res = softMaxRes.mpnpu_addr();
        for (uint32_t r = 0; r < m; ++r) {
            T2 v = mx[uint64_t(r) * step];
            uint32_t bits = 0;
            std::memcpy(&bits, &v, sizeof(T2));  // (zero-extended: a half's 16 bits)
            if (bits != from) continue;
            found = true;
            softMaxRes.mpnpu_touch('W', mpnpu::P_V, uint64_t(r) * k, k, site, name);
            for (uint32_t j = 0; j < k; ++j) res[uint64_t(r) * k + j] = to;
        }
    }
    return found;
}

}  // namespace AscendC

// -- host helpers ----------------------------------------------------------------------------------------
// The temporary-size and tiling helpers of the SoftMax family (SoftMax/SimpleSoftMax, SoftmaxGrad,
// SoftmaxFlashV2, SoftmaxFlashV3, LogSoftMax). They follow mpnpu's model of the buffer (see
// tmp_used_bytes above): one row of srcK floats at least, the whole shape's rows at most, with srcK the
// shape's last axis rounded up to 16 elements (32 bytes of either data type) and m the product of the
// others. The tiling functions fill the documented fields with a split consistent with that model:
// splitM = the rows localWorkSpaceSize holds (at most m), rangeM = m / splitM, tailM = m % splitM,
// reduceK = outMaxK = the elements of one 32-byte block of the max/sum type. The kernel side reads only
// srcM and srcK (the shape, when the call's SoftMaxShapeInfo gives none); the rest describes the split
// for code that reads it.
namespace mpnpu {
namespace softmax {

struct HostShape {
    uint64_t m, k;
};

inline HostShape host_shape(const ge::Shape& shape) {
    const size_t dims = shape.GetDimNum();
    if (dims == 0) return {0, 0};
    uint64_t m = 1;
    for (size_t i = 0; i + 1 < dims; ++i) m *= uint64_t(shape.GetDim(i) > 0 ? shape.GetDim(i) : 0);
    const int64_t last = shape.GetDim(dims - 1);
    const uint64_t k = last > 0 ? (uint64_t(last) + 15) / 16 * 16 : 0;
    return {m, k};
}

constexpr uint32_t clamp32(uint64_t v) { return v > 0xFFFFFFFFu ? 0xFFFFFFFFu : uint32_t(v); }
inline uint32_t host_min_tmp(const ge::Shape& shape) { return clamp32(host_shape(shape).k * 4); }
inline uint32_t host_max_tmp(const ge::Shape& shape) {
    const HostShape s = host_shape(shape);
    return clamp32(s.m * s.k * 4);
}

// The tiling of the model for m rows of k (k already rounded up), in a constant expression (the
// kernel-side SoftMaxFlashV2TilingFunc is constexpr).
constexpr ::SoftMaxTiling tiling_of(uint64_t m, uint64_t k, uint32_t sumTypeSize, uint32_t localWorkSpaceSize) {
    const uint64_t row = k * 4;
    const uint64_t split = row ? (localWorkSpaceSize / row < m ? localWorkSpaceSize / row : m) : 0;
    const uint32_t block = sumTypeSize ? 32 / sumTypeSize : 0;
    const uint64_t tail = split ? m % split : 0;
    ::SoftMaxTiling t{};
    t.srcM = clamp32(m);
    t.srcK = clamp32(k);
    t.srcSize = clamp32(m * k);
    t.outMaxM = clamp32(m);
    t.outMaxK = block;
    t.outMaxSize = clamp32(m * block);
    t.splitM = clamp32(split);
    t.splitK = clamp32(k);
    t.splitSize = clamp32(split * k);
    t.reduceM = clamp32(split);
    t.reduceK = block;
    t.reduceSize = clamp32(split * block);
    t.rangeM = split ? clamp32(m / split) : 0;
    t.tailM = clamp32(tail);
    t.tailSplitSize = clamp32(tail * k);
    t.tailReduceSize = clamp32(tail * block);
    return t;
}

inline void host_tiling(const ge::Shape& shape, uint32_t sumTypeSize, uint32_t localWorkSpaceSize,
                        ::SoftMaxTiling& t) {
    const HostShape s = host_shape(shape);
    t = tiling_of(s.m, s.k, sumTypeSize, localWorkSpaceSize);
}

}  // namespace softmax
}  // namespace mpnpu

namespace AscendC {

inline uint32_t GetSoftMaxMaxTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize,
                                     const bool isReuseSource) {
    (void)dataTypeSize, (void)isReuseSource;
    return mpnpu::softmax::host_max_tmp(srcShape);
}
inline uint32_t GetSoftMaxMinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize,
                                     const bool isReuseSource) {
    (void)dataTypeSize, (void)isReuseSource;
    return mpnpu::softmax::host_min_tmp(srcShape);
}
inline void SoftMaxTilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize,
                              const uint32_t localWorkSpaceSize, SoftMaxTiling& softmaxTiling) {
    mpnpu::softmax::host_tiling(srcShape, dataTypeSize, localWorkSpaceSize, softmaxTiling);
}

inline uint32_t GetSoftMaxGradMaxTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize, const bool isFront,
                                         const bool isReuseSource) {
    (void)dataTypeSize, (void)isFront, (void)isReuseSource;
    return mpnpu::softmax::host_max_tmp(srcShape);
}
inline uint32_t GetSoftMaxGradMinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize, const bool isFront,
                                         const bool isReuseSource) {
    (void)dataTypeSize, (void)isFront, (void)isReuseSource;
    return mpnpu::softmax::host_min_tmp(srcShape);
}
inline void SoftMaxGradTilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize,
                                  const uint32_t localWorkSpaceSize, SoftMaxTiling& softmaxGradTiling,
                                  const bool isFront = false) {
    (void)isFront;
    mpnpu::softmax::host_tiling(srcShape, dataTypeSize, localWorkSpaceSize, softmaxGradTiling);
}

// Whether a tiling's split meets the basic-block shape the SoftMax page gives for isBasicBlock: the row
// length srcK a multiple of 64 in [256 / dataTypeSize, 2048), and the rows computed together (splitM,
// and the tail's tailM) multiples of 8. (mpnpu computes either way; kernels use the answer to choose.)
inline bool IsBasicBlockInSoftMax(SoftMaxTiling& tiling, const uint32_t dataTypeSize = 2) {
    const uint32_t k = tiling.srcK;
    return dataTypeSize != 0 && k % 64 == 0 && k >= 256 / dataTypeSize && k < 2048 && tiling.splitM != 0 &&
           tiling.splitM % 8 == 0 && tiling.tailM % 8 == 0;
}

// (isBasicBlock and isFlashOutputBrc do not change mpnpu's sizes; the kernel refuses the
// SOFTMAX_OUTPUT_WITHOUT_BRC mode isFlashOutputBrc goes with.)
inline uint32_t GetSoftMaxFlashV2MinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                            const uint32_t dataTypeSize2, const bool isUpdate,
                                            const bool isBasicBlock = false, const bool isFlashOutputBrc = false) {
    (void)dataTypeSize1, (void)dataTypeSize2, (void)isUpdate, (void)isBasicBlock, (void)isFlashOutputBrc;
    return mpnpu::softmax::host_min_tmp(srcShape);
}
inline uint32_t GetSoftMaxFlashV2MaxTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                            const uint32_t dataTypeSize2, const bool isUpdate,
                                            const bool isBasicBlock = false, const bool isFlashOutputBrc = false) {
    (void)dataTypeSize1, (void)dataTypeSize2, (void)isUpdate, (void)isBasicBlock, (void)isFlashOutputBrc;
    return mpnpu::softmax::host_max_tmp(srcShape);
}
inline void SoftMaxFlashV2TilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                     const uint32_t dataTypeSize2, const uint32_t localWorkSpaceSize,
                                     SoftMaxTiling& softmaxFlashTiling, const bool isUpdate,
                                     const bool isBasicBlock = false, const bool isFlashOutputBrc = false) {
    (void)dataTypeSize1, (void)isUpdate, (void)isBasicBlock, (void)isFlashOutputBrc;
    mpnpu::softmax::host_tiling(srcShape, dataTypeSize2, localWorkSpaceSize, softmaxFlashTiling);
}

// The kernel side's form (a shape that differs from the host's): the same model for the call's srcM x
// srcK (srcK as given: already 32-byte aligned on the kernel side).
constexpr SoftMaxTiling SoftMaxFlashV2TilingFunc(const SoftMaxShapeInfo& shapeInfo, const uint32_t dataTypeSize1,
                                                 const uint32_t dataTypeSize2, const uint32_t localWorkSpaceSize,
                                                 const bool isUpdate = false, const bool isBasicBlock = false,
                                                 const bool isDataFormatNZ = false,
                                                 const bool isFlashOutputBrc = false) {
    (void)dataTypeSize1, (void)isUpdate, (void)isBasicBlock, (void)isDataFormatNZ, (void)isFlashOutputBrc;
    return mpnpu::softmax::tiling_of(shapeInfo.srcM, shapeInfo.srcK, dataTypeSize2, localWorkSpaceSize);
}

inline void GetSoftMaxFlashV3MaxMinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                           const uint32_t dataTypeSize2, uint32_t& maxValue, uint32_t& minValue,
                                           const bool isUpdate, const bool isBasicBlock = false) {
    (void)dataTypeSize1, (void)dataTypeSize2, (void)isUpdate, (void)isBasicBlock;
    maxValue = mpnpu::softmax::host_max_tmp(srcShape);
    minValue = mpnpu::softmax::host_min_tmp(srcShape);
}
inline void SoftMaxFlashV3TilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                     const uint32_t dataTypeSize2, const uint32_t localWorkSpaceSize,
                                     SoftMaxTiling& softmaxFlashV3Tiling, const bool isUpdate,
                                     const bool isBasicBlock = false) {
    (void)dataTypeSize1, (void)isUpdate, (void)isBasicBlock;
    mpnpu::softmax::host_tiling(srcShape, dataTypeSize2, localWorkSpaceSize, softmaxFlashV3Tiling);
}

inline uint32_t GetLogSoftMaxMaxTmpSize(const TensorShape srcShape, const uint32_t dataTypeSize,
                                        const bool isReuseSource) {
    (void)dataTypeSize, (void)isReuseSource;
    return mpnpu::softmax::host_max_tmp(srcShape);
}
inline uint32_t GetLogSoftMaxMinTmpSize(const TensorShape srcShape, const uint32_t dataTypeSize,
                                        const bool isReuseSource) {
    (void)dataTypeSize, (void)isReuseSource;
    return mpnpu::softmax::host_min_tmp(srcShape);
}
inline void LogSoftMaxTilingFunc(const TensorShape srcShape, const uint32_t dataTypeSize,
                                 const uint32_t localWorkSpaceSize, LogSoftMaxTiling& softmaxTiling) {
    mpnpu::softmax::host_tiling(srcShape, dataTypeSize, localWorkSpaceSize, softmaxTiling);
}

}  // namespace AscendC

#endif  // MPNPU_SOFTMAX_H
