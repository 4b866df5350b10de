// TopK on the vector unit (half, float: this chip class), with its host helpers GetTopKMaxMinTmpSize and
// TopKTilingFunc.
//
// The source is TopKInfo's outter rows of inner elements (inner a multiple of 32; the first n of each
// row count, 1 <= k <= n <= inner). Each row's k largest (isLargest, or TopKConfig's order LARGEST) or
// smallest values are written in order, largest (smallest) first, equal values in their order in the
// row (the earlier first); with each its index: j, its position in the row, or with isInitIndex the
// given srcIndexLocal[j] (Normal mode: one index row shared by every row; Small mode: a row each).
// With isHasfinish, a row whose finishLocal bool is true gets its values as usual and every one of its
// k indices set to n (documented).
//   Normal mode: row r's values at dstValueLocal[r * k_pad], k_pad = k rounded up to 32 bytes of T, its
//     indices at dstIndexLocal[r * kpad_index], kpad_index = k rounded up to 8; the padding after the
//     k is not written (documented: not filled). inner at most 4096.
//   Small mode (TOPK_NSMALL): inner is 32, rows of k values and k indices, back to back.
// Values compare as floats (half widened); a NaN counts as larger than every number.
//
// The temporary buffer (mpnpu's model): the (value, index) records of the rows being sorted and their
// merge copy, 16 bytes an element: one row (16 x inner) in Normal mode, every row (16 x inner x outter)
// in Small mode, as both the minimum and the maximum GetTopKMaxMinTmpSize gives; a tmpLocal below it
// is an API error, and its used part is traced as written and read on PIPE_V (it must not overlap an
// operand). The framework's own scratch (the forms without tmpLocal) is not modelled. Reads (src, the
// index row(s), the finish flags) come before any write; each written row is its own record on PIPE_V.
// Not provided (a static_assert): TopKConfig's RADIX_SELECT algorithm (another product). isHasfinish
// in Small mode (documented: not supported) is an API error when called.
#ifndef MPNPU_TOPK_H
#define MPNPU_TOPK_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "../kernel_tiling/kernel_tiling.h"
#include "../tiling/platform/platform_ascendc.h"
#include "lib_types.h"
#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

enum class TopKMode {
    TOPK_NORMAL,
    TOPK_NSMALL,
};
enum class TopKAlgo { RADIX_SELECT, MERGE_SORT };
enum class TopKOrder { UNSET, LARGEST, SMALLEST };
struct TopKConfig {
    TopKAlgo algo = TopKAlgo::MERGE_SORT;
    TopKOrder order = TopKOrder::UNSET;
    bool sorted = true;
};
constexpr TopKConfig defaultTopKConfig = {TopKAlgo::MERGE_SORT, TopKOrder::UNSET, true};

struct TopKInfo {
    int32_t outter = 1;
    int32_t inner = 0;
    int32_t n = 0;
};

}  // namespace AscendC

namespace mpnpu {
namespace topk {

// The scratch of the model (bytes), 0 when the shape is not one TopK takes.
inline uint64_t tmp_bytes(int64_t inner, int64_t outter, bool small) {
    if (inner <= 0 || outter <= 0) return 0;
    return uint64_t(inner) * 16 * (small ? uint64_t(outter) : 1);
}

inline bool shape_ok(int64_t inner, int64_t outter, bool small) {
    return inner > 0 && outter > 0 && inner % 32 == 0 && (small ? inner == 32 : inner <= 4096);
}

template <typename T, bool initIndex, bool hasFinish, bool small>
inline void run(const AscendC::LocalTensor<T>& dstValue, const AscendC::LocalTensor<int32_t>& dstIndex,
                const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<int32_t>& srcIndex,
                const AscendC::LocalTensor<bool>& finish, const AscendC::LocalTensor<uint8_t>* tmp, int32_t k,
                const AscendC::TopKInfo& info, bool largest, const Site& site) {
    const char* name = "TopK";
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        if (!shape_ok(info.inner, info.outter, small))
            api_error(site, "%s: TopKInfo {outter %d, inner %d}: inner must be a positive multiple of 32 (%s) and "
                      "outter positive", name, info.outter, info.inner,
                      small ? "Small mode: exactly 32" : "Normal mode: at most 4096");
        if (info.n < 1 || info.n > info.inner)
            api_error(site, "%s: TopKInfo.n %d is outside [1, inner %d]", name, info.n, info.inner);
        if (k < 1 || k > info.n) api_error(site, "%s: k %d is outside [1, n %d]", name, k, info.n);
        if (small && hasFinish) api_error(site, "%s: isHasfinish is not supported in Small mode (documented)", name);
        const uint64_t rows = uint64_t(info.outter), inner = uint64_t(info.inner), n = uint64_t(info.n);
        const uint64_t kk = uint64_t(k);
        const uint64_t k_pad = small ? kk : (kk + 32 / sizeof(T) - 1) / (32 / sizeof(T)) * (32 / sizeof(T));
        const uint64_t k_pad_index = small ? kk : (kk + 7) / 8 * 8;
        const uint64_t elems = rows * inner;
        const uint64_t value_span = (rows - 1) * k_pad + kk, index_span = (rows - 1) * k_pad_index + kk;
        vec::check_operand(dstValue, 32, site, name, "dstValueLocal");
        vec::check_operand(dstIndex, 32, site, name, "dstIndexLocal");
        vec::check_operand(src, 32, site, name, "srcLocal");
        vec::check_count(src, elems, site, name, "srcLocal");
        vec::check_count(dstValue, value_span, site, name, "dstValueLocal");
        vec::check_count(dstIndex, index_span, site, name, "dstIndexLocal");
        const uint64_t index_n = small ? elems : inner;
        if constexpr (initIndex) {
            vec::check_operand(srcIndex, 32, site, name, "srcIndexLocal");
            vec::check_count(srcIndex, index_n, site, name, "srcIndexLocal");
        }
        if constexpr (hasFinish) {
            vec::check_operand(finish, 32, site, name, "finishLocal");
            vec::check_count(finish, rows, site, name, "finishLocal");
        }
        for (const lib::Span& out : {lib::span_of(dstValue, value_span, "dstValueLocal"),
                                     lib::span_of(dstIndex, index_span, "dstIndexLocal")})
            if (vec::overlaps(out.addr, out.bytes, src.mpnpu_addr(), elems * sizeof(T)))
                api_error(site, "%s: %s overlaps srcLocal (the call takes separate operands)", name, out.what);
        uint64_t used = 0;
        if (tmp) {
            const uint64_t need = tmp_bytes(info.inner, info.outter, small);
            if (tmp->GetSize() < need)
                api_error(site, "%s: tmpLocal has %u bytes, below the minimum %llu (GetTopKMaxMinTmpSize)", name,
                          tmp->GetSize(), (unsigned long long)need);
            used = lib::check_scratch(*tmp, need,
                                      {lib::span_of(src, elems, "srcLocal"),
                                       lib::span_of(dstValue, value_span, "dstValueLocal"),
                                       lib::span_of(dstIndex, index_span, "dstIndexLocal")},
                                      site, name, "tmpLocal");
        }
        src.mpnpu_touch('R', P_V, 0, elems, site, name);
        if constexpr (initIndex) srcIndex.mpnpu_touch('R', P_V, 0, index_n, site, name);
        if constexpr (hasFinish) finish.mpnpu_touch('R', P_V, 0, rows, site, name);
        if (tmp) lib::trace_scratch(*tmp, used, site, name);
        const T* in = src.mpnpu_addr();
        std::vector<T> values(rows * kk);
        std::vector<int32_t> indices(rows * kk);
        std::vector<uint32_t> order(n);
        for (uint64_t r = 0; r < rows; ++r) {
            const T* row = in + r * inner;
            const auto key = [&](uint32_t j) {
                const float v = to_float(row[j]);
                return std::isnan(v) ? INFINITY : v;  // (NaN above every number; +inf ties it, by position)
            };
            std::iota(order.begin(), order.end(), 0u);
            std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
                return largest ? key(a) > key(b) : key(a) < key(b);
            });
            const bool done = hasFinish && finish.mpnpu_addr()[r];
            for (uint64_t i = 0; i < kk; ++i) {
                const uint32_t j = order[i];
                values[r * kk + i] = row[j];
                int32_t ix = int32_t(j);
                if constexpr (initIndex) ix = srcIndex.mpnpu_addr()[(small ? r * inner : 0) + j];
                indices[r * kk + i] = done ? int32_t(n) : ix;
            }
        }
        T* vo = dstValue.mpnpu_addr();
        int32_t* io = dstIndex.mpnpu_addr();
        for (uint64_t r = 0; r < rows; ++r) {
            dstValue.mpnpu_touch('W', P_V, r * k_pad, kk, site, name);
            dstIndex.mpnpu_touch('W', P_V, r * k_pad_index, kk, site, name);
            for (uint64_t i = 0; i < kk; ++i) {
                vo[r * k_pad + i] = values[r * kk + i];
                io[r * k_pad_index + i] = indices[r * kk + i];
            }
        }
    }
}

}  // namespace topk
}  // namespace mpnpu

namespace AscendC {

#define MPNPU_TOPK_CHECKS                                                                                       \
    static_assert(config.algo == TopKAlgo::MERGE_SORT,                                                          \
                  "TopK: mpnpu does not implement the RADIX_SELECT algorithm (another product's)");            \
    /* (isHasfinish in Small mode: an error when called; kernels instantiate it in branches never taken) */    \
    const bool mpnpu_largest = config.order == TopKOrder::UNSET ? isLargest : config.order == TopKOrder::LARGEST; \
    (void)tilling

template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          enum TopKMode topkMode = TopKMode::TOPK_NORMAL, const TopKConfig& config = defaultTopKConfig>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const int32_t k, const TopkTiling& tilling,
                 const TopKInfo& topKInfo, const bool isLargest = true, MPNPU_SITE) {
    MPNPU_TOPK_CHECKS;
    mpnpu::topk::run<T, isInitIndex, isHasfinish, topkMode == TopKMode::TOPK_NSMALL>(
        dstValueLocal, dstIndexLocal, srcLocal, srcIndexLocal, finishLocal, nullptr, k, topKInfo, mpnpu_largest, site);
}
template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          enum TopKMode topkMode = TopKMode::TOPK_NORMAL, const TopKConfig& config = defaultTopKConfig>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const LocalTensor<uint8_t>& tmpLocal, const int32_t k,
                 const TopkTiling& tilling, const TopKInfo& topKInfo, const bool isLargest = true, MPNPU_SITE) {
    MPNPU_TOPK_CHECKS;
    mpnpu::topk::run<T, isInitIndex, isHasfinish, topkMode == TopKMode::TOPK_NSMALL>(
        dstValueLocal, dstIndexLocal, srcLocal, srcIndexLocal, finishLocal, &tmpLocal, k, topKInfo, mpnpu_largest,
        site);
}
#undef MPNPU_TOPK_CHECKS

// -- host helpers: false (and nothing set) for a shape TopK does not take --------------------------------
inline bool GetTopKMaxMinTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform, const int32_t inner,
                                 const int32_t outter, const bool isReuseSource, const bool isInitIndex,
                                 enum TopKMode mode, const bool isLargest, const uint32_t dataTypeSize,
                                 uint32_t& maxValue, uint32_t& minValue) {
    (void)ascendcPlatform, (void)isReuseSource, (void)isInitIndex, (void)isLargest;
    const bool small = mode == TopKMode::TOPK_NSMALL;
    if (!mpnpu::topk::shape_ok(inner, outter, small) || (dataTypeSize != 2 && dataTypeSize != 4)) return false;
    maxValue = minValue = uint32_t(mpnpu::topk::tmp_bytes(inner, outter, small));
    return true;
}
inline bool GetTopKMaxMinTmpSize(const int32_t inner, const int32_t outter, const int32_t k, const bool isReuseSource,
                                 const bool isInitIndex, enum TopKMode mode, const bool isLargest,
                                 TensorDataType dataType, const TopKConfig& config, uint32_t& maxValue,
                                 uint32_t& minValue) {
    (void)isReuseSource, (void)isInitIndex, (void)isLargest;
    const bool small = mode == TopKMode::TOPK_NSMALL;
    if (config.algo != TopKAlgo::MERGE_SORT || k < 1 || k > inner || !mpnpu::topk::shape_ok(inner, outter, small) ||
        (dataType != ge::DT_FLOAT && dataType != ge::DT_FLOAT16))
        return false;
    maxValue = minValue = uint32_t(mpnpu::topk::tmp_bytes(inner, outter, small));
    return true;
}
inline bool TopKTilingFunc(const platform_ascendc::PlatformAscendC& ascendcPlatform, const int32_t inner,
                           const int32_t outter, const int32_t k, const uint32_t dataTypeSize, const bool isInitIndex,
                           enum TopKMode mode, const bool isLargest, TopkTiling& topKTiling) {
    (void)ascendcPlatform, (void)isInitIndex, (void)isLargest;
    const bool small = mode == TopKMode::TOPK_NSMALL;
    if (!mpnpu::topk::shape_ok(inner, outter, small) || k < 1 || k > inner ||
        (dataTypeSize != 2 && dataTypeSize != 4))
        return false;
    topKTiling = TopkTiling{};
    topKTiling.tmpLocalSize = int32_t(mpnpu::topk::tmp_bytes(inner, outter, small));
    topKTiling.allDataSize = inner * outter;
    topKTiling.innerDataSize = inner;
    topKTiling.sortRepeat = uint32_t(inner / 32);
    topKTiling.kAlignFourBytes = (k + 7) / 8 * 8;
    topKTiling.kAlignTwoBytes = (k + 15) / 16 * 16;
    return true;
}

}  // namespace AscendC

#endif  // MPNPU_TOPK_H
