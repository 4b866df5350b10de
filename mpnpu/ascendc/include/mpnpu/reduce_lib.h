// ReduceSum and ReduceMax, the library's sum and maximum along one axis of a 2-D source (ReduceSum<T, pattern, isReuseSource>),
// beside the basic API's ReduceSum (mpnpu/vector/reduce.h: its second template argument is a bool,
// this one's a pattern type, so each call takes the one it names).
//
// pattern Pattern::Reduce::AR sums each row (srcShape {rows, cols}: dst[i] = the sum of row i), RA
// each column (dst[j] = the sum of column j). Rows are cols rounded up to 32 bytes apart (srcInnerPad
// true, the only value this chip class takes: an API error otherwise). T float (this chip class).
// The order of the additions (the pages do not give it; mpnpu's choice): AR as Sum adds a row (each
// 256-byte repeat by a binary tree of adjacent pairs, the repeats' sums then one after another), RA
// row after row, as a vector add of each row onto the running sums; every sum rounded to float.
//
// Checks, each an API error at the kernel's line: the operands in UB, 32-byte aligned, within their
// tensors; srcTensor and dstTensor must not overlap, nor the scratch either (documented). The scratch
// (mpnpu's model): one row of partial sums, cols x 4 bytes rounded up to 32, traced as written and
// read on PIPE_V; the call without a sharedTmpBuffer has none. Accesses, all on PIPE_V: srcTensor read
// (rows x the padded cols), the scratch, dstTensor written (rows for AR, cols for RA).
//
// ReduceMax<T, pattern, isReuseSource> (T half or float on this chip class): the same shapes, checks,
// scratch and accesses; dst[i] the largest of row i (AR), dst[j] of column j (RA), compared as the
// vector unit's Max (a NaN operand gives NaN). GetReduceMaxMaxMinTmpSize gives the scratch of the
// model above for the shape's last axis, as both its minimum and its maximum.
#ifndef MPNPU_REDUCE_LIB_H
#define MPNPU_REDUCE_LIB_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../graph/tensor_shape.h"
#include "lib_types.h"

#include "native/rt.h"
#include "scratch.h"
#include "sum.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"
#include "vector/reduce.h"

namespace AscendC {
namespace Pattern {
namespace Reduce {
// (documented as structs whose members the user need not know)
struct AR {};
struct RA {};
}  // namespace Reduce
}  // namespace Pattern

// The host helpers' name for a pattern (the library takes AR and RA).
enum class ReducePattern : uint32_t {
    AR = 0,
    RA = 1,
    R,
    ARA,
    ARAR,
    ARARA,
    ARARAR,
    ARARARA,
    ARARARAR,
    ARARARARA,
    RAR,
    RARA,
    RARAR,
    RARARA,
    RARARAR,
    RARARARA,
};
}  // namespace AscendC

namespace mpnpu {
namespace reducelib {

template <typename T>
inline T max_of(T a, T b) {
    const float x = to_float(a), y = to_float(b);
    if (std::isnan(x)) return a;
    if (std::isnan(y)) return b;
    return y > x ? b : a;
}

template <typename T, class Pattern, bool kMax = false>
inline void run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, const uint32_t srcShape[], bool srcInnerPad,
                const Site& site) {
    const char* name = kMax ? "ReduceMax" : "ReduceSum";
    static_assert(std::is_same_v<Pattern, AscendC::Pattern::Reduce::AR> ||
                      std::is_same_v<Pattern, AscendC::Pattern::Reduce::RA>,
                  "ReduceSum / ReduceMax: the pattern is Pattern::Reduce::AR or Pattern::Reduce::RA");
    constexpr bool kTypeOk = kMax ? vec::one_of<T, half, float> : std::is_same_v<T, float>;
    vec::need_type<T>(kTypeOk, site, name, kMax ? "half, float" : "float");
    if constexpr (kTypeOk) {
        constexpr bool kRows = std::is_same_v<Pattern, AscendC::Pattern::Reduce::AR>;
        if (!srcInnerPad) api_error(site, "%s: srcInnerPad must be true on this chip class", name);
        if (!srcShape) api_error(site, "%s: srcShape is a null pointer", name);
        vec::start(site, name);
        constexpr uint64_t per = 32 / sizeof(T);
        const uint64_t rows = srcShape[0], cols = srcShape[1], ld = (cols + per - 1) / per * per;
        const uint64_t elems = rows * ld, outs = kRows ? rows : cols;
        if (!sumlib::check_and_trace(dst, src, tmp, elems, outs, (ld * sizeof(T) + 31) / 32 * 32, site, name)) return;
        const T* in = src.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        if constexpr (kMax) {
            for (uint64_t o = 0; o < outs; ++o) {
                T best = kRows ? in[o * ld] : in[o];
                const uint64_t len = kRows ? cols : rows;
                for (uint64_t e = 1; e < len; ++e) best = max_of(best, kRows ? in[o * ld + e] : in[e * ld + o]);
                out[o] = best;
            }
        } else if constexpr (kRows) {
            for (uint64_t r = 0; r < rows; ++r) out[r] = sumlib::row_sum(in + r * ld, cols);
        } else {
            for (uint64_t c = 0; c < cols; ++c) {
                T total = in[c];
                for (uint64_t r = 1; r < rows; ++r) total = vec::add_round(total, in[r * ld + c]);
                out[c] = total;
            }
        }
    }
}

}  // namespace reducelib
}  // namespace mpnpu

namespace AscendC {

template <class T, class pattern, bool isReuseSource = false>
inline void ReduceSum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[], bool srcInnerPad,
                      MPNPU_SITE) {
    mpnpu::reducelib::run<T, pattern>(dstTensor, srcTensor, &sharedTmpBuffer, srcShape, srcInnerPad, site);
}

template <class T, class pattern, bool isReuseSource = false>
inline void ReduceSum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t srcShape[],
                      bool srcInnerPad, MPNPU_SITE) {
    mpnpu::reducelib::run<T, pattern>(dstTensor, srcTensor, nullptr, srcShape, srcInnerPad, site);
}

template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[], bool srcInnerPad,
                      MPNPU_SITE) {
    mpnpu::reducelib::run<T, pattern, true>(dstTensor, srcTensor, &sharedTmpBuffer, srcShape, srcInnerPad, site);
}

template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t srcShape[],
                      bool srcInnerPad, MPNPU_SITE) {
    mpnpu::reducelib::run<T, pattern, true>(dstTensor, srcTensor, nullptr, srcShape, srcInnerPad, site);
}

// The scratch of the model above: one row of the shape's last axis, padded to 32 bytes.
inline void GetReduceMaxMaxMinTmpSize(const TensorShape& srcShape, const TensorDataType dataType,
                                      ReducePattern pattern, bool isSrcInnerPad, bool isReuseSource,
                                      uint32_t& maxValue, uint32_t& minValue) {
    (void)pattern, (void)isSrcInnerPad, (void)isReuseSource;
    const uint64_t size = dataType == ge::DT_FLOAT16 ? 2 : 4;  // (half or float on this chip class)
    const size_t dims = srcShape.GetDimNum();
    const int64_t last = dims ? srcShape.GetDim(dims - 1) : 0;
    const uint64_t bytes = (uint64_t(last > 0 ? last : 0) * size + 31) / 32 * 32;
    maxValue = minValue = uint32_t(bytes);
}

}  // namespace AscendC

#endif  // MPNPU_REDUCE_LIB_H
