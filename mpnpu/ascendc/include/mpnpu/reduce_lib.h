// ReduceSum, the library's sum along one axis of a 2-D source (ReduceSum<T, pattern, isReuseSource>),
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
#ifndef MPNPU_REDUCE_LIB_H
#define MPNPU_REDUCE_LIB_H

#include <cstdint>
#include <type_traits>

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
}  // namespace AscendC

namespace mpnpu {
namespace reducelib {

template <typename T, class Pattern>
inline void run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, const uint32_t srcShape[], bool srcInnerPad,
                const Site& site) {
    const char* name = "ReduceSum";
    static_assert(std::is_same_v<Pattern, AscendC::Pattern::Reduce::AR> ||
                      std::is_same_v<Pattern, AscendC::Pattern::Reduce::RA>,
                  "ReduceSum: the pattern is Pattern::Reduce::AR or Pattern::Reduce::RA");
    vec::need_type<T>(std::is_same_v<T, float>, site, name, "float");
    if constexpr (std::is_same_v<T, float>) {
        constexpr bool kRows = std::is_same_v<Pattern, AscendC::Pattern::Reduce::AR>;
        if (!srcInnerPad) api_error(site, "ReduceSum: srcInnerPad must be true on this chip class");
        if (!srcShape) api_error(site, "ReduceSum: srcShape is a null pointer");
        vec::start(site, name);
        const uint64_t rows = srcShape[0], cols = srcShape[1], ld = (cols + 7) / 8 * 8;
        const uint64_t elems = rows * ld, outs = kRows ? rows : cols;
        if (!sumlib::check_and_trace(dst, src, tmp, elems, outs, (ld * sizeof(T) + 31) / 32 * 32, site, name)) return;
        const T* in = src.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        if constexpr (kRows) {
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

}  // namespace AscendC

#endif  // MPNPU_REDUCE_LIB_H
