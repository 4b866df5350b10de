// SoftmaxFlashV2 and SoftmaxFlashV3, the SoftMax family's blockwise (flash-attention) forms, on the
// vector unit. The shape, the padding model and the temporary buffer are SoftMax's (mpnpu/softmax.h).
//
// SoftmaxFlashV2, per row of x (the row's max over its first oriSrcK elements):
//   isUpdate false: M = rowmax(x), dst = exp(x - M), S = the sum of dst; expMaxTensor is not written.
//   isUpdate true:  M = max(inMax, rowmax(x)), dst = exp(x - M), E = exp(inMax - M),
//                   S = E * inExpSum + the sum of dst; E into expMaxTensor.
// M, S (and E) are written as one 32-byte block a row, every element the row's value; inMax and
// inExpSum are read from each row's block's first element. The sums and maxima are of the data's type,
// or float with half data (the mixed form); expMaxTensor is of the data's type.
//
// SoftmaxFlashV3 (half data, float statistics), the page's formula with splitMeanCnt = 8 parts of
// baseK = srcK / 8 elements a row; mpnpu follows the page's reduction for the parts' means: the row's
// first 512 elements summed 8 at a time into 64 partial sums, each later 64-element repeat added to
// them lane by lane, then each 8 adjacent partial sums make one part's sum (local[b], divided by
// baseK), and the row's mean is the mean of the 8. With s = alpha / (1 - alpha), x' = x - (mean -
// local[b]) * s over part b; A = mean (or, updating, (mean + inMean * (loopCnt - 1)) / loopCnt);
// shiftCurr = (mean - A) * s, shiftPrev = (inMean - A) * s; M = shiftCurr + max(x') (updating: the
// larger of that and shiftPrev + inMax); dst = exp(x' - (M - shiftCurr)); S = the sum of dst (updating:
// plus E * inExpSum with E = exp(inMax - M + shiftPrev), written to expMaxTensor).
// mpnpu takes srcK a multiple of 64 of at least 512 (the page's reduction starts with 8 whole
// repeats; another srcK is an API error), srcM = oriSrcM and srcK = oriSrcK (documented).
//
// Arithmetic in float, each result rounded once to its type; sums added in order along the row (the
// device's reduction order and exp differ within the rounding of the type). Every input is read
// before any output is written, so the in/out pairs may be the same tensors (as kernels pass them).
// Accesses on PIPE_V, memchecked; the sharedTmpBuffer (in UB, 32-byte aligned, at least a row of srcK
// floats, overlapping neither src nor dst) is traced as written and read over the rows it holds;
// the framework's own scratch (the forms without one) is not modelled. Not provided: the outReduceMax
// forms, SOFTMAX_OUTPUT_WITHOUT_BRC (a static_assert) and the NZ format (a static_assert). (The
// kernel-side SoftMaxFlashV2TilingFunc is in softmax.h, with the host helpers.)
#ifndef MPNPU_SOFTMAX_FLASH_H
#define MPNPU_SOFTMAX_FLASH_H

#include <cmath>
#include <cstdint>
#include <vector>

#include "softmax.h"

namespace AscendC {

// SoftmaxFlashV3's shape and parameters.
struct SoftMaxParams {
    uint32_t srcM = 0;
    uint32_t srcK = 0;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    uint32_t loopCnt = 1;
    uint32_t splitMeanCnt = 8;
    float alpha = 0.9375f;
    SoftMaxParams() = default;
    SoftMaxParams(uint32_t m, uint32_t k, uint32_t oriM, uint32_t oriK, uint32_t loop, uint32_t split, float a)
        : srcM(m), srcK(k), oriSrcM(oriM), oriSrcK(oriK), loopCnt(loop), splitMeanCnt(split), alpha(a) {}
};

}  // namespace AscendC

namespace mpnpu {
namespace softmax {

// The per-row statistics of a flash call: inputs read from, outputs written to, 32-byte blocks.
template <typename U>
struct RowStats {
    const AscendC::LocalTensor<U>* t;
    const char* what;
};

template <typename U>
inline std::vector<float> read_rows(const AscendC::LocalTensor<U>& t, const Shape& s, const Site& site,
                                    const char* name, const char* what) {
    constexpr uint32_t per = 32 / sizeof(U);
    check_row_output(t, s, site, name, what);
    t.mpnpu_touch('R', P_V, 0, uint64_t(s.m) * per, site, name);
    std::vector<float> v(s.m);
    for (uint32_t r = 0; r < s.m; ++r) v[r] = to_float(t.mpnpu_addr()[uint64_t(r) * per]);
    return v;
}

template <typename U>
inline void write_rows(const AscendC::LocalTensor<U>& t, const std::vector<float>& v, const Shape& s,
                       const Site& site, const char* name) {
    constexpr uint32_t per = 32 / sizeof(U);
    t.mpnpu_touch('W', P_V, 0, uint64_t(s.m) * per, site, name);
    U* o = t.mpnpu_addr();
    for (uint32_t r = 0; r < s.m; ++r)
        for (uint32_t j = 0; j < per; ++j) o[uint64_t(r) * per + j] = from_float<U>(v[r]);
}

// The common part of both calls: checks of dst, src, the outputs and the buffer; src read and the
// buffer traced. Returns src widened to float.
template <typename T, typename U>
inline std::vector<float> flash_begin(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                      const AscendC::LocalTensor<uint8_t>* tmp, const Shape& s,
                                      std::initializer_list<RowStats<U>> outs, const AscendC::LocalTensor<T>* expMax,
                                      const Site& site, const char* name) {
    const uint64_t n = uint64_t(s.m) * s.k;
    const uint64_t tmp_used = check_data(dst, src, tmp, s, site, name);
    for (const RowStats<U>& o : outs) check_row_output(*o.t, s, site, name, o.what);
    if (expMax) check_row_output(*expMax, s, site, name, "expMaxTensor");
    src.mpnpu_touch('R', P_V, 0, n, site, name);
    if (tmp_used) {
        tmp->mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
        tmp->mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
    }
    std::vector<float> x(n);
    const T* in = src.mpnpu_addr();
    for (uint64_t i = 0; i < n; ++i) x[i] = to_float(in[i]);
    return x;
}

template <typename T>
inline void write_data(const AscendC::LocalTensor<T>& dst, const std::vector<float>& y, const Site& site,
                       const char* name) {
    dst.mpnpu_touch('W', P_V, 0, y.size(), site, name);
    T* out = dst.mpnpu_addr();
    for (uint64_t i = 0; i < y.size(); ++i) out[i] = from_float<T>(y[i]);
}

template <typename T, typename U, bool isUpdate>
inline void flash_v2(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& expSum,
                     const AscendC::LocalTensor<U>& max, const AscendC::LocalTensor<T>& src,
                     const AscendC::LocalTensor<T>& expMax, const AscendC::LocalTensor<U>& inExpSum,
                     const AscendC::LocalTensor<U>& inMax, const AscendC::LocalTensor<uint8_t>* tmp,
                     const ::SoftMaxTiling& tiling, const AscendC::SoftMaxShapeInfo& info,
                     const AscendC::SoftmaxConfig& config, const Site& site) {
    const char* name = "SoftmaxFlashV2";
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const Shape s = shape_of(tiling, info, config, sizeof(T), site, name);
        std::vector<float> x = flash_begin<T, U>(dst, src, tmp, s, {{&expSum, "expSumTensor"}, {&max, "maxTensor"}},
                                                 isUpdate ? &expMax : nullptr, site, name);
        std::vector<float> in_sum, in_max;
        if constexpr (isUpdate) {
            in_sum = read_rows(inExpSum, s, site, name, "inExpSumTensor");
            in_max = read_rows(inMax, s, site, name, "inMaxTensor");
        }
        std::vector<float> row_max(s.m), row_sum(s.m), row_e(s.m);
        for (uint32_t r = 0; r < s.m; ++r) {
            float* row = x.data() + uint64_t(r) * s.k;
            float m = -INFINITY;
            for (uint32_t j = 0; j < s.ori_k; ++j) m = std::fmax(m, row[j]);
            if constexpr (isUpdate) m = std::fmax(m, in_max[r]);
            float acc = 0.0f;
            for (uint32_t j = 0; j < s.k; ++j) {
                row[j] = std::exp(row[j] - m);
                if (j < s.ori_k) acc += row[j];
            }
            if constexpr (isUpdate) {
                row_e[r] = std::exp(in_max[r] - m);
                acc += row_e[r] * in_sum[r];
            }
            row_max[r] = m;
            row_sum[r] = acc;
        }
        write_data(dst, x, site, name);
        write_rows(expSum, row_sum, s, site, name);
        write_rows(max, row_max, s, site, name);
        if constexpr (isUpdate) write_rows(expMax, row_e, s, site, name);
    }
}

template <bool isUpdate>
inline void flash_v3(const AscendC::LocalTensor<half>& dst, const AscendC::LocalTensor<float>& mean,
                     const AscendC::LocalTensor<float>& expSum, const AscendC::LocalTensor<float>& max,
                     const AscendC::LocalTensor<half>& src, const AscendC::LocalTensor<half>& expMax,
                     const AscendC::LocalTensor<float>& inMean, const AscendC::LocalTensor<float>& inExpSum,
                     const AscendC::LocalTensor<float>& inMax, const AscendC::LocalTensor<uint8_t>* tmp,
                     const AscendC::SoftMaxParams& p, const Site& site) {
    const char* name = "SoftmaxFlashV3";
    vec::start(site, name);
    if (p.srcM != p.oriSrcM || p.srcK != p.oriSrcK)
        api_error(site, "%s: the shape %u x %u is padded from %u x %u (documented: srcM = oriSrcM and srcK = oriSrcK)",
                  name, p.srcM, p.srcK, p.oriSrcM, p.oriSrcK);
    if (p.splitMeanCnt != 8)
        api_error(site, "%s: splitMeanCnt %u is not 8 (the only documented value)", name, p.splitMeanCnt);
    if (p.srcK < 512 || p.srcK % 64)
        api_error(site, "%s: srcK %u: mpnpu's model of the page's reduction takes a multiple of 64 of at least 512",
                  name, p.srcK);
    if (isUpdate && p.loopCnt < 1) api_error(site, "%s: loopCnt %u (updating, it is at least 1)", name, p.loopCnt);
    if (!(p.alpha < 1.0f)) api_error(site, "%s: alpha %g (alpha / (1 - alpha) needs alpha below 1)", name, p.alpha);
    const Shape s{p.srcM, p.srcK, p.srcM, p.srcK};
    std::vector<float> x = flash_begin<half, float>(
        dst, src, tmp, s, {{&mean, "meanTensor"}, {&expSum, "expSumTensor"}, {&max, "maxTensor"}},
        isUpdate ? &expMax : nullptr, site, name);
    std::vector<float> in_mean, in_sum, in_max;
    if constexpr (isUpdate) {
        in_mean = read_rows(inMean, s, site, name, "inMeanTensor");
        in_sum = read_rows(inExpSum, s, site, name, "inExpSumTensor");
        in_max = read_rows(inMax, s, site, name, "inMaxTensor");
    }
    const float scalar = p.alpha / (1.0f - p.alpha);
    const uint32_t base_k = s.k / 8;
    std::vector<float> row_mean(s.m), row_max(s.m), row_sum(s.m), row_e(s.m);
    for (uint32_t r = 0; r < s.m; ++r) {
        float* row = x.data() + uint64_t(r) * s.k;
        float lanes[64];
        for (uint32_t l = 0; l < 64; ++l) {
            float b = 0.0f;
            for (uint32_t t = 0; t < 8; ++t) b += row[8 * l + t];
            lanes[l] = b;
        }
        for (uint32_t rep = 8; rep < s.k / 64; ++rep)
            for (uint32_t l = 0; l < 64; ++l) lanes[l] += row[64 * rep + l];
        float local[8], global = 0.0f;
        for (uint32_t b = 0; b < 8; ++b) {
            float part = 0.0f;
            for (uint32_t l = 0; l < 8; ++l) part += lanes[8 * b + l];
            local[b] = part / float(base_k);
            global += local[b];
        }
        global /= 8.0f;
        float mx = -INFINITY;
        for (uint32_t j = 0; j < s.k; ++j) {
            row[j] -= (global - local[j / base_k]) * scalar;
            mx = std::fmax(mx, row[j]);
        }
        const float a = isUpdate ? (global + in_mean[r] * float(p.loopCnt - 1)) / float(p.loopCnt) : global;
        const float shift_curr = (global - a) * scalar;
        float m = shift_curr + mx, shift_prev = 0.0f;
        if constexpr (isUpdate) {
            shift_prev = (in_mean[r] - a) * scalar;
            m = std::fmax(m, shift_prev + in_max[r]);
        }
        const float sub = m - shift_curr;
        float acc = 0.0f;
        for (uint32_t j = 0; j < s.k; ++j) {
            row[j] = std::exp(row[j] - sub);
            acc += row[j];
        }
        if constexpr (isUpdate) {
            row_e[r] = std::exp(in_max[r] - m + shift_prev);
            acc += row_e[r] * in_sum[r];
        }
        row_mean[r] = a;
        row_max[r] = m;
        row_sum[r] = acc;
    }
    write_data(dst, x, site, name);
    write_rows(mean, row_mean, s, site, name);
    write_rows(expSum, row_sum, s, site, name);
    write_rows(max, row_max, s, site, name);
    if constexpr (isUpdate) write_rows(expMax, row_e, s, site, name);
}

}  // namespace softmax
}  // namespace mpnpu

namespace AscendC {

#define MPNPU_FLASH_CHECKS(NAME)                                                                                 \
    static_assert(!isDataFormatNZ, NAME ": mpnpu computes the ND format only (isDataFormatNZ = false)");       \
    static_assert(config.mode == SoftmaxMode::SOFTMAX_NORMAL,                                                  \
                  NAME ": mpnpu does not implement SOFTMAX_OUTPUT_WITHOUT_BRC (the (m, 1) outputs)")

#define MPNPU_FLASH_V3_CHECKS                                                     \
    MPNPU_FLASH_CHECKS("SoftmaxFlashV3");                                         \
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, float>,           \
                  "SoftmaxFlashV3: T is half and U float (the documented types)"); \
    (void)tiling /* (the call is computed whole: no split to follow) */

// The sums and maxima of the data's type, or float with half data (U deduced).
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<U>& expSumTensor,
                           const LocalTensor<U>& maxTensor, const LocalTensor<T>& srcTensor,
                           const LocalTensor<T>& expMaxTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    MPNPU_FLASH_CHECKS("SoftmaxFlashV2");
    static_assert(mpnpu::softmax::sum_type_ok<T, U>, "SoftmaxFlashV2: the sums and maxima are of the data's type, "
                  "or float with half data");
    mpnpu::softmax::flash_v2<T, U, isUpdate>(dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                             inExpSumTensor, inMaxTensor, nullptr, tiling, softmaxShapeInfo, config,
                                             site);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<U>& expSumTensor,
                           const LocalTensor<U>& maxTensor, const LocalTensor<T>& srcTensor,
                           const LocalTensor<T>& expMaxTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}, MPNPU_SITE) {
    MPNPU_FLASH_CHECKS("SoftmaxFlashV2");
    static_assert(mpnpu::softmax::sum_type_ok<T, U>, "SoftmaxFlashV2: the sums and maxima are of the data's type, "
                  "or float with half data");
    mpnpu::softmax::flash_v2<T, U, isUpdate>(dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                             inExpSumTensor, inMaxTensor, &sharedTmpBuffer, tiling, softmaxShapeInfo,
                                             config, site);
}

template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor,
                           const LocalTensor<U>& expSumTensor, const LocalTensor<U>& maxTensor,
                           const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                           const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxParams& params, MPNPU_SITE) {
    MPNPU_FLASH_V3_CHECKS;
    mpnpu::softmax::flash_v3<isUpdate>(dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                       inMeanTensor, inExpSumTensor, inMaxTensor, nullptr, params, site);
}
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor,
                           const LocalTensor<U>& expSumTensor, const LocalTensor<U>& maxTensor,
                           const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                           const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxParams& params, MPNPU_SITE) {
    MPNPU_FLASH_V3_CHECKS;
    mpnpu::softmax::flash_v3<isUpdate>(dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                       inMeanTensor, inExpSumTensor, inMaxTensor, &sharedTmpBuffer, params, site);
}
#undef MPNPU_FLASH_V3_CHECKS
#undef MPNPU_FLASH_CHECKS

}  // namespace AscendC

#endif  // MPNPU_SOFTMAX_FLASH_H
