// Sum, the library's sum along the last axis of an [outter, inner] source, and its host helper
// GetSumMaxMinTmpSize.
//
// sumParams {outter, inner, n}: outter rows of inner elements each (inner x sizeof(T) a multiple of
// 32 bytes: n rounded up to 32 bytes, as the pages require), of which the first n count. dst[i] is
// the sum of row i's first n elements, added as ReduceSum's count form adds (documented: the same
// pairwise tree): each 256-byte repeat of the row (128 halves, 64 floats; lanes past n count as 0) by
// a binary tree of adjacent pairs, the repeats' sums then one after another, every sum rounded to T.
// dst's elements past outter are not written (the pages: the alignment padding holds whatever it held).
//
// Checks, each an API error at the kernel's line: T half or float; reduceDim -1 and isBasicBlock
// false (the pages: not supported); 1 <= n <= inner and inner the rounded-up n; outter x inner
// elements within srcTensor and outter within dstTensor; srcTensor and dstTensor must not overlap
// (documented). Every tensor in UB, 32-byte aligned. outter 0 does nothing; isReuseSource is reserved.
//
// The temporary buffer (mpnpu's model; GetSumMaxMinTmpSize's maximum equals its minimum and depends on
// n only, as documented): one row's repeat sums, ceil(n / repeat) x sizeof(T) bytes rounded up to 32,
// reused row after row; the used part (or all of the buffer, when smaller) must not overlap srcTensor
// or dstTensor (documented), and is traced as written and read on PIPE_V. Accesses, in order:
// srcTensor read (its outter x inner elements), the scratch, dstTensor written (outter elements); all
// on PIPE_V, each one contiguous record.
#ifndef MPNPU_SUM_H
#define MPNPU_SUM_H

#include <cstdint>
#include <vector>

#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"
#include "vector/reduce.h"

namespace AscendC {

struct SumParams {
    uint32_t outter = 1;
    uint32_t inner = 0;
    uint32_t n = 0;
};

}  // namespace AscendC

namespace mpnpu {
namespace sumlib {

inline uint64_t tmp_bytes(uint64_t n, uint32_t typeSize) {
    if (typeSize != 2 && typeSize != 4) return 0;
    const uint64_t lanes = 256 / typeSize, repeats = (n + lanes - 1) / lanes;
    return (repeats * typeSize + 31) / 32 * 32;
}

// The operands' checks (UB, 32-byte aligned, within their tensors, dst apart from src, the scratch's
// used part apart from both) and their accesses on PIPE_V: src read (elems), the scratch, dst written
// (outs). Returns false when there is nothing to compute.
template <typename T>
inline bool check_and_trace(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                            const AscendC::LocalTensor<uint8_t>* tmp, uint64_t elems, uint64_t outs, uint64_t need,
                            const Site& site, const char* name) {
    vec::check_operand(dst, 32, site, name, "dstTensor");
    vec::check_operand(src, 32, site, name, "srcTensor");
    vec::check_count(src, elems, site, name, "srcTensor");
    vec::check_count(dst, outs, site, name, "dstTensor");
    if (vec::overlaps(src.mpnpu_addr(), elems * sizeof(T), dst.mpnpu_addr(), outs * sizeof(T)))
        api_error(site, "%s: dstTensor overlaps srcTensor (the call takes separate operands)", name);
    uint64_t used = 0;
    if (tmp)
        used = lib::check_scratch(*tmp, need,
                                  {lib::span_of(src, elems, "srcTensor"), lib::span_of(dst, outs, "dstTensor")}, site,
                                  name, "sharedTmpBuffer");
    if (outs == 0 || elems == 0) return false;
    src.mpnpu_touch('R', P_V, 0, elems, site, name);
    if (tmp) lib::trace_scratch(*tmp, used, site, name);
    dst.mpnpu_touch('W', P_V, 0, outs, site, name);
    return true;
}

// The sum of row[0..n) as ReduceSum's count form adds it: each 256-byte repeat by a binary tree of
// adjacent pairs (lanes past n count as 0), the repeats' sums then one after another.
template <typename T>
inline T row_sum(const T* row, uint64_t n) {
    constexpr uint32_t lanes = 256 / sizeof(T);
    T total = vec::from_calc<T>(0);
    for (uint64_t first = 0; first < n; first += lanes) {
        T v[lanes];
        for (uint32_t j = 0; j < lanes; ++j) v[j] = first + j < n ? row[first + j] : vec::from_calc<T>(0);
        const T s = vec::tree_sum(v, lanes);
        total = first == 0 ? s : vec::add_round(total, s);
    }
    return total;
}

template <typename T>
inline void run(int32_t reduceDim, bool isBasicBlock, const AscendC::LocalTensor<T>& dst,
                const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
                const AscendC::SumParams& p, const Site& site) {
    const char* name = "Sum";
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        if (reduceDim != -1)
            api_error(site, "Sum: reduceDim %d is not supported (the call sums the last axis: pass -1)", reduceDim);
        if (isBasicBlock) api_error(site, "Sum: isBasicBlock is reserved and not supported (pass false)");
        vec::start(site, name);
        const uint64_t per_block = 32 / sizeof(T), aligned = (uint64_t(p.n) + per_block - 1) / per_block * per_block;
        if (p.n < 1 || p.n > p.inner)
            api_error(site, "Sum: sumParams.n %u is outside [1, inner %u]", p.n, p.inner);
        if (p.inner != aligned)
            api_error(site, "Sum: sumParams.inner %u is not n %u rounded up to 32 bytes (%llu for %s)", p.inner, p.n,
                      (unsigned long long)aligned, vec::type_name<T>());
        const uint64_t rows = p.outter, elems = rows * p.inner;
        if (!check_and_trace(dst, src, tmp, elems, rows, tmp_bytes(p.n, sizeof(T)), site, name)) return;
        const T* in = src.mpnpu_addr();
        T* out = dst.mpnpu_addr();
        for (uint64_t r = 0; r < rows; ++r) out[r] = row_sum(in + r * p.inner, p.n);
    }
}

}  // namespace sumlib
}  // namespace mpnpu

namespace AscendC {

template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const SumParams& sumParams, MPNPU_SITE) {
    mpnpu::sumlib::run(reduceDim, isBasicBlock, dstTensor, srcTensor, &sharedTmpBuffer, sumParams, site);
}

template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SumParams& sumParams,
                MPNPU_SITE) {
    mpnpu::sumlib::run(reduceDim, isBasicBlock, dstTensor, srcTensor, nullptr, sumParams, site);
}

// The host helper: the same size for both (the pages: the maximum currently equals the minimum).
inline void GetSumMaxMinTmpSize(const uint32_t n, const uint32_t typeSize, const bool isReuseSource,
                                uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    maxValue = minValue = uint32_t(mpnpu::sumlib::tmp_bytes(n, typeSize));
}

}  // namespace AscendC

#endif  // MPNPU_SUM_H
