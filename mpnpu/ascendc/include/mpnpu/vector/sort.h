// Sorting (the proposal instructions): Sort32 and MrgSort (with MrgSortSrcList and MrgSort4Info), and
// GetMrgSortResult.
//
// A sorted queue is a run of 8-byte (score, index) records: the score in the low bytes (4 for float;
// 2 for half, then 2 reserved bytes, written 0 here) and the uint32_t index in the high 4 bytes.
//   Sort32   each repeat sorts 32 scores (src0, 32 elements a repeat) with their indices (src1, 32
//            uint32_t a repeat) into 32 records (dst, 256 bytes a repeat), by score from largest to
//            smallest; equal scores keep their order (the earlier first)
//   MrgSort  merges the 2, 3 or 4 queues validBit names (3, 7, 15) of elementLengths records each into
//            one, by score from largest to smallest (equal scores: the earlier queue's first, within a
//            queue its order); ifExhaustedSuspension stops at the first queue that runs out;
//            repeatTimes > 1 (four queues of one length, one after the other, validBit 15, no
//            suspension) merges each next group of four, source and destination moving by their length
//   GetMrgSortResult  how many records the last MrgSort took from each of its four queues (its last
//            repeat's; 0 for a queue it did not merge). The pages define the counts only after a
//            MrgSort with ifExhaustedSuspension: called when the core's last MrgSort had it off, or
//            before any, it is an API error. MrgSort writes the counts on PIPE_V and GetMrgSortResult
//            reads them on the scalar unit (PIPE_S), traced as bytes [8, 16) of memory SPR (the special
//            registers), so racecheck wants a V_S flag between them (or the compiler's automatic
//            synchronisation), as for GetAccVal.
// Scores compare as floats (half widened). The pages give a NaN no place; mpnpu puts NaNs before every
// number (among themselves in their order), so that the order is total.
// Sort32 and MrgSort run on PIPE_V, read before they write; memchecked and traced as every vector
// instruction.
#ifndef MPNPU_VECTOR_SORT_H
#define MPNPU_VECTOR_SORT_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"

namespace mpnpu {
namespace vec {

struct Record {
    uint8_t bytes[8];
};

template <typename T>
inline float score_of(const Record& r) {
    T s;
    std::memcpy(static_cast<void*>(&s), r.bytes, sizeof(T));
    return float(s);
}

// a goes before b: the larger score, NaN before any number; equal scores (and two NaNs) are neither.
template <typename T>
inline bool score_before(const Record& a, const Record& b) {
    const float x = score_of<T>(a), y = score_of<T>(b);
    if (std::isnan(x)) return !std::isnan(y);
    return !std::isnan(y) && x > y;
}

// n records of the scores at s and the uint32_t indices at idx.
template <typename T>
inline std::vector<Record> make_records(const uint8_t* s, const uint8_t* idx, uint64_t n) {
    std::vector<Record> recs(n);
    for (uint64_t i = 0; i < n; ++i) {
        std::memset(recs[i].bytes, 0, 8);
        std::memcpy(recs[i].bytes, s + i * sizeof(T), sizeof(T));
        std::memcpy(recs[i].bytes + 4, idx + i * 4, 4);
    }
    return recs;
}

template <typename T>
inline void check_sort_type(const Site& site, const char* name) {
    need_type<T>(one_of<T, half, float>, site, name, "half, float");
}

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

template <typename T>
inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
                   const int32_t repeatTime, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Sort32";
    check_sort_type<T>(site, name);
    if constexpr (one_of<T, half, float>) {
        if (repeatTime < 0 || repeatTime > 255)
            mpnpu::api_error(site, "Sort32: repeatTime %d is outside [0, 255]", repeatTime);
        start(site, name);
        check_operand(dst, 256, site, name, "dst");
        check_operand(src0, 32 * sizeof(T), site, name, "src0");
        check_operand(src1, 128, site, name, "src1");
        if (repeatTime == 0) return;
        const uint64_t n = uint64_t(repeatTime) * 32;
        touch(src0, 'R', Hull{0, n * sizeof(T)}, site, name);
        touch(src1, 'R', Hull{0, n * 4}, site, name);
        touch(dst, 'W', Hull{0, n * 8}, site, name);
        std::vector<Record> recs = make_records<T>(base(src0), base(src1), n);
        for (uint64_t r = 0; r < uint64_t(repeatTime); ++r)
            std::stable_sort(recs.begin() + long(r * 32), recs.begin() + long(r * 32 + 32), score_before<T>);
        std::memcpy(base(dst), recs.data(), n * 8);
    }
}

template <typename T>
struct MrgSortSrcList {
    MrgSortSrcList() {}
    MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                   const LocalTensor<T>& src4In)
        : src1(src1In[0]), src2(src2In[0]), src3(src3In[0]), src4(src4In[0]) {}
    LocalTensor<T> src1, src2, src3, src4;
};

struct MrgSort4Info {
    MrgSort4Info() {}
    MrgSort4Info(const uint16_t elementLengthsIn[4], bool ifExhaustedSuspensionIn, uint16_t validBitIn,
                 uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn) {
        for (int i = 0; i < 4; ++i) elementLengths[i] = elementLengthsIn[i];
    }
    uint16_t elementLengths[4] = {0, 0, 0, 0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint16_t repeatTimes = 0;
};

template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& params, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "MrgSort";
    check_sort_type<T>(site, name);
    if constexpr (one_of<T, half, float>) {
        const int k = params.validBit == 3 ? 2 : params.validBit == 7 ? 3 : params.validBit == 15 ? 4 : 0;
        if (!k) mpnpu::api_error(site, "MrgSort: validBit %u is not 3, 7 or 15", unsigned(params.validBit));
        if (params.repeatTimes > 255)
            mpnpu::api_error(site, "MrgSort: repeatTimes %u is outside [0, 255]", unsigned(params.repeatTimes));
        for (int q = 0; q < k; ++q)
            if (params.elementLengths[q] > 4095)
                mpnpu::api_error(site, "MrgSort: elementLengths[%d] %u is outside [0, 4095]", q,
                                 unsigned(params.elementLengths[q]));
        start(site, name);
        check_operand(dst, 32, site, name, "dst");
        const LocalTensor<T>* qs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
        for (int q = 0; q < k; ++q) check_operand(*qs[q], 8, site, name, "a source queue");
        if (params.repeatTimes == 0) return;
        const uint64_t len0 = params.elementLengths[0];
        if (params.repeatTimes > 1) {
            bool ok = k == 4 && !params.ifExhaustedSuspension;
            for (int q = 1; q < 4 && ok; ++q)
                ok = params.elementLengths[q] == len0 && qs[q]->mpnpu_mem() == qs[0]->mpnpu_mem() &&
                     qs[q]->mpnpu_offset() == qs[0]->mpnpu_offset() + uint64_t(q) * len0 * 8;
            if (!ok)
                mpnpu::api_error(site, "MrgSort: repeatTimes %u needs four queues of one length stored one after the "
                                       "other, validBit 15 and ifExhaustedSuspension false",
                                 unsigned(params.repeatTimes));
        }
        uint64_t total = 0;
        for (int q = 0; q < k; ++q) total += params.elementLengths[q];
        const uint64_t reps = params.repeatTimes, step = total * 8;  // (repeats: the four queues' whole length)
        for (int q = 0; q < k; ++q)
            touch(*qs[q], 'R', Hull{0, (reps - 1) * step + uint64_t(params.elementLengths[q]) * 8}, site, name);
        const uint64_t dlo = dst.mpnpu_offset(), dhi = dlo + reps * step;
        for (int q = 0; q < k; ++q) {
            const uint64_t lo = qs[q]->mpnpu_offset(), hi = lo + (reps - 1) * step + uint64_t(params.elementLengths[q]) * 8;
            if (qs[q]->mpnpu_mem() == dst.mpnpu_mem() && lo < dhi && dlo < hi)
                mpnpu::api_error(site, "MrgSort: source queue %d overlaps dst (not supported)", q + 1);
        }
        std::vector<Record> out;
        out.reserve(reps * total);
        uint64_t pos[4] = {};
        for (uint64_t r = 0; r < reps; ++r) {
            const Record* heads[4] = {};
            uint64_t left[4] = {};
            for (uint64_t& p : pos) p = 0;
            for (int q = 0; q < k; ++q) {
                heads[q] = reinterpret_cast<const Record*>(base(*qs[q]) + r * step);
                left[q] = params.elementLengths[q];
            }
            for (;;) {
                int best = -1;
                bool exhausted = false;
                for (int q = 0; q < k; ++q) {
                    if (pos[q] == left[q]) {
                        exhausted = true;
                        continue;
                    }
                    if (best < 0 || score_before<T>(heads[q][pos[q]], heads[best][pos[best]])) best = q;
                }
                if (best < 0 || (exhausted && params.ifExhaustedSuspension)) break;
                out.push_back(heads[best][pos[best]++]);
            }
        }
        touch(dst, 'W', Hull{0, out.size() * 8}, site, name);
        if (!out.empty()) std::memcpy(base(dst), out.data(), out.size() * 8);
        mpnpu::VectorRegs& regs = mpnpu::core().vec;
        for (int q = 0; q < 4; ++q) regs.mrg[q] = uint16_t(pos[q]);
        regs.mrg_suspend = params.ifExhaustedSuspension;
        mpnpu::local_access('W', mpnpu::P_V, MPNPU_MEM_SPR, mpnpu::SPR_MRGSORT, mpnpu::SPR_MRGSORT + 8, 0,
                            mpnpu::SPR_BYTES, site, name);
    }
}

inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                             uint16_t& mrgSortList4, MPNPU_SITE) {
    const char* name = "GetMrgSortResult";
    mpnpu::vec::start(site, name);
    const mpnpu::VectorRegs& regs = mpnpu::core().vec;
    if (!regs.mrg_suspend)
        mpnpu::api_error(site, "GetMrgSortResult: the counts are defined after a MrgSort with ifExhaustedSuspension "
                               "set, and this core's last MrgSort did not set it (or none ran)");
    mpnpu::local_access('R', mpnpu::P_S, MPNPU_MEM_SPR, mpnpu::SPR_MRGSORT, mpnpu::SPR_MRGSORT + 8, 0,
                        mpnpu::SPR_BYTES, site, name);
    mrgSortList1 = regs.mrg[0];
    mrgSortList2 = regs.mrg[1];
    mrgSortList3 = regs.mrg[2];
    mrgSortList4 = regs.mrg[3];
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_SORT_H
