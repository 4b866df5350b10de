// The sorting library on the vector unit: Concat, Sort, Extract and the library's MrgSort form, in the
// layout of this chip class (Atlas A2: 8-byte (score, index) records, as Sort32 and MrgSort in
// vector/sort.h write them; the region-proposal layout of other products is not modelled).
//
//   Concat(concat, src, tmp, repeatTime)   prepares src for Sort. In this layout Sort takes the scores
//            themselves, so concat becomes src (the same tensor: kernels pass a LocalTensor they have
//            not set and sort it afterwards); repeatTime (16 scores each, [0, 255]) must stay within
//            src. Nothing is read or written, so nothing is traced; tmp is checked as an operand only.
//   Sort<T, isFullSort>(dst, concat, index, tmp, repeatTime)   sorts repeatTime x 32 scores (concat)
//            with their uint32_t indices (index) into as many records (dst, 8 bytes each), by score
//            from largest to smallest, equal scores in their order (the earlier first). isFullSort:
//            the whole input at once; otherwise each repeat's 32 on their own (as Sort32).
//   Extract(dstValue, dstIndex, sorted, repeatTime)   splits repeatTime x 32 records back into their
//            scores (dstValue) and indices (dstIndex).
//   MrgSort<T, isExhaustedSuspension>(dst, sortList, elementCountList, sortedNum, validBit, repeatTime)
//            the basic MrgSort with these as its MrgSort4Info (repeatTime in [1, 255], as documented);
//            sortedNum receives the records taken from each queue (what GetMrgSortResult would read).
// Scores compare as in vector/sort.h (floats, half widened; NaN before every number). T is half or
// float (another type is an API error at the kernel's line); every tensor is in UB, 32-byte aligned.
//
// The temporary buffer (mpnpu's model; the pages give GetSortTmpSize only as a host call): a full sort
// of more than one repeat merges through a second copy of the records, repeatTime x 32 x 8 bytes of
// tmp (or all of tmp, when smaller), traced as written and read on PIPE_V; a sort of one repeat, or
// one repeat at a time, does not use it. Its used part must not overlap concat, index or dst.
// Sort reads concat and index, then writes dst; Extract reads sorted, then writes dstValue and
// dstIndex (each read completely before anything is written, so overlapping operands give the
// result of separate ones). All on PIPE_V, each a contiguous record, memchecked.
#ifndef MPNPU_SORT_LIB_H
#define MPNPU_SORT_LIB_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../graph/tensor_shape.h"
#include "lib_types.h"
#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "vector/engine.h"
#include "vector/sort.h"

namespace mpnpu {
namespace sortlib {

inline void check_repeat(int32_t repeatTime, const Site& site, const char* name) {
    if (repeatTime < 0 || repeatTime > 255)
        api_error(site, "%s: repeatTime %d is outside [0, 255]", name, repeatTime);
}

// The checks Sort and Extract open with (repeatTime, a vector core, three UB operands); returns the
// records the call covers, 32 a repeat.
template <typename A, typename B, typename C>
inline uint64_t begin(int32_t repeatTime, const AscendC::LocalTensor<A>& a, const AscendC::LocalTensor<B>& b,
                      const AscendC::LocalTensor<C>& c, const char* const what[3], const Site& site,
                      const char* name) {
    check_repeat(repeatTime, site, name);
    vec::start(site, name);
    vec::check_operand(a, 32, site, name, what[0]);
    vec::check_operand(b, 32, site, name, what[1]);
    vec::check_operand(c, 32, site, name, what[2]);
    return uint64_t(repeatTime) * 32;
}

}  // namespace sortlib
}  // namespace mpnpu

namespace AscendC {

template <typename T>
inline void Concat(LocalTensor<T>& concat, const LocalTensor<T>& src, const LocalTensor<T>& tmp,
                   const int32_t repeatTime, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Concat";
    check_sort_type<T>(site, name);
    mpnpu::sortlib::check_repeat(repeatTime, site, name);
    start(site, name);
    check_operand(src, 32, site, name, "src");
    check_operand(tmp, 32, site, name, "tmp");
    const uint64_t n = uint64_t(repeatTime) * 16;
    if (n > src.GetSize())
        mpnpu::api_error(site, "Concat: repeatTime %d covers %llu scores, past the end of src (%u elements)",
                         repeatTime, (unsigned long long)n, src.GetSize());
    concat = src;
}

template <typename T, bool isFullSort>
inline void Sort(const LocalTensor<T>& dst, const LocalTensor<T>& concat, const LocalTensor<uint32_t>& index,
                 LocalTensor<T>& tmp, const int32_t repeatTime, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Sort";
    check_sort_type<T>(site, name);
    if constexpr (one_of<T, half, float>) {
        const char* const what[3] = {"dst", "concat", "index"};
        const uint64_t n = mpnpu::sortlib::begin(repeatTime, dst, concat, index, what, site, name);
        const bool merges = isFullSort && repeatTime > 1;
        const uint64_t used = mpnpu::lib::check_scratch(
            tmp, merges ? n * 8 : 0,
            {mpnpu::lib::span_of(concat, n, "concat"), mpnpu::lib::span_of(index, n, "index"),
             mpnpu::lib::Span{dst.mpnpu_addr(), n * 8, "dst"}},
            site, name, "tmp");
        if (n == 0) return;
        touch(concat, 'R', Hull{0, n * sizeof(T)}, site, name);
        touch(index, 'R', Hull{0, n * 4}, site, name);
        std::vector<Record> recs = make_records<T>(base(concat), base(index), n);
        mpnpu::lib::trace_scratch(tmp, used, site, name);
        touch(dst, 'W', Hull{0, n * 8}, site, name);
        const uint64_t group = isFullSort ? n : 32;
        for (uint64_t g = 0; g < n; g += group)
            std::stable_sort(recs.begin() + long(g), recs.begin() + long(g + group), score_before<T>);
        std::memcpy(base(dst), recs.data(), n * 8);
    }
}

template <typename T>
inline void Extract(const LocalTensor<T>& dstValue, const LocalTensor<uint32_t>& dstIndex,
                    const LocalTensor<T>& sorted, const int32_t repeatTime, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Extract";
    check_sort_type<T>(site, name);
    if constexpr (one_of<T, half, float>) {
        const char* const what[3] = {"dstValue", "dstIndex", "sorted"};
        const uint64_t n = mpnpu::sortlib::begin(repeatTime, dstValue, dstIndex, sorted, what, site, name);
        if (n == 0) return;
        touch(sorted, 'R', Hull{0, n * 8}, site, name);
        std::vector<Record> recs(n);
        std::memcpy(recs.data(), base(sorted), n * 8);
        touch(dstValue, 'W', Hull{0, n * sizeof(T)}, site, name);
        touch(dstIndex, 'W', Hull{0, n * 4}, site, name);
        uint8_t* v = base(dstValue);
        uint8_t* ix = base(dstIndex);
        for (uint64_t i = 0; i < n; ++i) {
            std::memcpy(v + i * sizeof(T), recs[i].bytes, sizeof(T));
            std::memcpy(ix + i * 4, recs[i].bytes + 4, 4);
        }
    }
}

template <typename T, bool isExhaustedSuspension = false>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& sortList, const uint16_t elementCountList[4],
                    uint32_t sortedNum[4], uint16_t validBit, const int32_t repeatTime, MPNPU_SITE) {
    if (repeatTime < 1 || repeatTime > 255)
        mpnpu::api_error(site, "MrgSort: repeatTime %d is outside [1, 255]", repeatTime);
    MrgSort4Info info(elementCountList, isExhaustedSuspension, validBit, uint16_t(repeatTime));
    MrgSort(dst, sortList, info, site);
    const mpnpu::VectorRegs& regs = mpnpu::core().vec;
    for (int q = 0; q < 4; ++q) sortedNum[q] = regs.mrg[q];
}

// The newer Sort's configuration (SortConfig, SortType), as its host helper takes it. mpnpu does not
// provide the kernel-side Sort with a SortConfig (a product other than this chip class); the
// helper's sizes are those of this header's Sort model (a full sort merges through a second copy of
// the 8-byte records: 8 bytes an element, as both minimum and maximum), which is what kernels of this
// chip class that size their tmp with it pass to Sort.
enum class SortType {
    RADIX_SORT,
    MERGE_SORT,
};
struct SortConfig {
    SortType type = SortType::RADIX_SORT;
    bool isDescend = false;
    bool hasSrcIndex = false;
    bool hasDstIndex = false;
};

inline void GetSortMaxMinTmpSize(const TensorShape& srcShape, TensorDataType valueType, TensorDataType indexType,
                                 bool isReuseSource, const SortConfig& config, uint32_t& maxValue,
                                 uint32_t& minValue) {
    (void)valueType, (void)indexType, (void)isReuseSource, (void)config;
    const int64_t n = srcShape.GetShapeSize();
    const uint64_t bytes = uint64_t(n > 0 ? n : 0) * 8;
    maxValue = minValue = bytes > 0xFFFFFFFFu ? 0xFFFFFFFFu : uint32_t(bytes);
}

}  // namespace AscendC

#endif  // MPNPU_SORT_LIB_H
