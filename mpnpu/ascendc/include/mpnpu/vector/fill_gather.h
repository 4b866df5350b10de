// Filling and gathering: Duplicate, Brcb, CreateVecIndex, Gather, Gatherb.
//
//   Duplicate       dst lanes = a scalar (or, count form, src's first element)
//   CreateVecIndex  dst lane (repeat r, lane j) = firstValue + r * lanes + j
//   Brcb            each of 8 source elements per repeat fills one 32-byte block of dst
//   Gather          dst element i = the element at byte srcBaseAddr + srcOffset[i] of src
//   Gatherb         dst block (r, j) = the 32-byte block at byte offset[r * 8 + j] of src
#ifndef MPNPU_VECTOR_FILL_GATHER_H
#define MPNPU_VECTOR_FILL_GATHER_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"
#include "mask.h"
#include "params.h"

namespace mpnpu {
namespace vec {

template <typename T>
constexpr bool fill_type_ok = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
constexpr const char* FILL_TYPES = "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float";

template <typename T>
constexpr bool index_type_ok = one_of<T, int16_t, half, int32_t, float>;

// n consecutive lanes at d set to v, a 32-byte block of copies at a time.
template <typename T>
inline void fill_row(uint8_t* d, const T& v, uint32_t n) {
    uint8_t block[32];
    for (uint32_t j = 0; j < 32 / sizeof(T); ++j) std::memcpy(block + j * sizeof(T), &v, sizeof(T));
    const uint64_t bytes = uint64_t(n) * sizeof(T);
    uint64_t i = 0;
    for (; i + 32 <= bytes; i += 32) std::memcpy(d + i, block, 32);
    std::memcpy(d + i, block, bytes - i);
}

template <typename T>
inline void duplicate_apply(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd, const T& v,
                            const Site& site) {
    need_type<T>(fill_type_ok<T>, site, "Duplicate", FILL_TYPES);
    fill("Duplicate", p, dst, gd, site, [&v](uint64_t, uint32_t) { return v; },
         [&v](uint8_t* d, uint32_t n) { fill_row(d, v, n); });
}

template <typename T>
inline void index_apply(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd, const T& first,
                        const Site& site) {
    need_type<T>(index_type_ok<T>, site, "CreateVecIndex", "int16_t, half, int32_t, float");
    calc_t<T> f0 = to_calc(first);
    uint32_t lanes = p.lanes;
    fill("CreateVecIndex", p, dst, gd, site, [=](uint64_t r, uint32_t j) {
        return from_calc<T>(f0 + calc_t<T>(r * lanes + j));
    });
}

inline bool overlaps(int mem_a, uint64_t a_lo, uint64_t a_hi, int mem_b, uint64_t b_lo, uint64_t b_hi) {
    return mem_a == mem_b && a_lo < b_hi && b_lo < a_hi;
}

// Whether two operands' touched bytes share any byte of UB.
template <typename A, typename B>
inline bool operands_overlap(const AscendC::LocalTensor<A>& a, const Hull& ha, const AscendC::LocalTensor<B>& b,
                             const Hull& hb) {
    if (ha.empty() || hb.empty()) return false;
    return overlaps(a.mpnpu_mem(), a.mpnpu_offset() + ha.lo, a.mpnpu_offset() + ha.hi, b.mpnpu_mem(),
                    b.mpnpu_offset() + hb.lo, b.mpnpu_offset() + hb.hi);
}

template <typename T>
inline void gather_apply(const char* name, const Plan& p, const AscendC::LocalTensor<T>& dst, uint64_t dst_rep,
                         const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint32_t>& offsets,
                         uint32_t base_addr, const Site& site) {
    need_type<T>(fill_type_ok<T>, site, name, FILL_TYPES);
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    check_operand(offsets, 32, site, name, "srcOffset");
    if (base_addr % sizeof(T))
        api_error(site, "%s: srcBaseAddr %u is not a multiple of the element size (%zu bytes)", name, base_addr,
                  sizeof(T));
    if (p.none()) return;
    // srcOffset element i = r * lanes + j
    Geo g_off = contiguous(p.lanes, 4);  // 4-byte offsets, one per lane, consecutive over repeats
    Hull h_off = hull_of(p, 4, g_off);
    touch(offsets, 'R', h_off, site, name);
    Lane lo = lane_of(offsets, g_off);
    Hull h_src;
    for (uint64_t r = 0; r < p.repeats; ++r) {
        each_lane(p.bits(r), [&](uint32_t j) {
            uint64_t at = uint64_t(base_addr) + ld<uint32_t>(lo.at(r, j));
            if (at % sizeof(T))
                api_error(site, "%s: srcOffset[%llu] = %u is not a multiple of the element size (%zu bytes)", name,
                          (unsigned long long)(r * p.lanes + j), ld<uint32_t>(lo.at(r, j)), sizeof(T));
            h_src.add(at, at + sizeof(T));
        });
    }
    Geo gd{32, dst_rep};
    Hull h_dst = hull_of(p, sizeof(T), gd);
    if (operands_overlap(dst, h_dst, src, h_src))
        api_error(site, "%s: dst overlaps the source elements it gathers (src and dst must not share memory)", name);
    touch(src, 'R', h_src, site, name);
    touch(dst, 'W', h_dst, site, name);
    uint8_t* s = base(src);
    run<T>(p, lane_of(dst, gd), [&](uint64_t r, uint32_t j) {
        return ld<T>(s + uint64_t(base_addr) + ld<uint32_t>(lo.at(r, j)));
    });
}

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

// -- Duplicate -----------------------------------------------------------------------------------------

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count, MPNPU_SITE) {
    if (count > 0) mpnpu::vec::check_count(dst, uint64_t(count), site, "Duplicate", "dst");
    constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));
    mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, "Duplicate");
    mpnpu::vec::duplicate_apply(p, dst, mpnpu::vec::contiguous(lanes, sizeof(T)), scalarValue, site);
}

// The tensor form (newest product): src's first element, copied ``count`` times.
template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, MPNPU_SITE) {
    mpnpu::vec::check_operand(src, 32, site, "Duplicate", "src");
    mpnpu::vec::Hull h;
    h.add(0, sizeof(T));
    if (count > 0) {
        mpnpu::vec::check_count(dst, uint64_t(count), site, "Duplicate", "dst");
        mpnpu::vec::touch(src, 'R', h, site, "Duplicate");
    }
    T v = mpnpu::vec::ld<T>(mpnpu::vec::base(src));
    constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));
    mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, "Duplicate");
    mpnpu::vec::duplicate_apply(p, dst, mpnpu::vec::contiguous(lanes, sizeof(T)), v, site);
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const uint64_t mask[], const int64_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, MPNPU_SITE) {
    mpnpu::vec::Plan p =
        mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site, "Duplicate");
    mpnpu::vec::duplicate_apply(p, dst, mpnpu::vec::geo(dstBlockStride, dstRepeatStride), scalarValue, site);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const uint64_t mask, const int64_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, MPNPU_SITE) {
    mpnpu::vec::Plan p =
        mpnpu::vec::plan_level0_len<isSetMask>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site, "Duplicate");
    mpnpu::vec::duplicate_apply(p, dst, mpnpu::vec::geo(dstBlockStride, dstRepeatStride), scalarValue, site);
}

// -- CreateVecIndex ------------------------------------------------------------------------------------

template <typename T>
inline void CreateVecIndex(const LocalTensor<T>& dst, const T& firstValue, uint32_t count, MPNPU_SITE) {
    if (count > 0) mpnpu::vec::check_count(dst, count, site, "CreateVecIndex", "dst");
    constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));
    mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, "CreateVecIndex");
    mpnpu::vec::index_apply(p, dst, mpnpu::vec::contiguous(lanes, sizeof(T)), firstValue, site);
}
template <typename T>
inline void CreateVecIndex(const LocalTensor<T>& dst, const T& firstValue, const uint64_t mask[],
                           const int64_t repeatTime, uint16_t dstBlkStride, uint8_t dstRepStride, MPNPU_SITE) {
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_bits<true>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site,
                                                           "CreateVecIndex");
    mpnpu::vec::index_apply(p, dst, mpnpu::vec::geo(dstBlkStride, dstRepStride), firstValue, site);
}
template <typename T>
inline void CreateVecIndex(const LocalTensor<T>& dst, const T& firstValue, const uint64_t mask,
                           const int64_t repeatTime, uint16_t dstBlkStride, uint8_t dstRepStride, MPNPU_SITE) {
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<true>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site,
                                                          "CreateVecIndex");
    mpnpu::vec::index_apply(p, dst, mpnpu::vec::geo(dstBlkStride, dstRepStride), firstValue, site);
}

// -- Brcb ----------------------------------------------------------------------------------------------

// 8 source elements per repeat (read contiguously), each filling one 32-byte block of dst.
template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int64_t repeatTime,
                 const BrcbRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Brcb";
    need_type<T>(fill_type_ok<T>, site, name, FILL_TYPES);
    check_repeat(repeatTime, site, name);
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (repeatTime == 0) return;
    uint64_t blk = (repeatParams.dstBlkStride ? repeatParams.dstBlkStride : 1) * 32ull;
    uint64_t rep = repeatParams.dstRepStride * 32ull;
    uint64_t R = uint64_t(repeatTime);
    Hull hs, hd;
    hs.add(0, R * 8 * sizeof(T));
    hd.add(0, (R - 1) * rep + 7 * blk + 32);  // the last block of the last repeat ends the hull
    if (operands_overlap(dst, hd, src, hs))
        api_error(site, "Brcb: src and dst overlap (they must not share memory)");
    touch(src, 'R', hs, site, name);
    touch(dst, 'W', hd, site, name);
    uint8_t* s = base(src);
    uint8_t* d = base(dst);
    constexpr uint32_t per_block = 32 / sizeof(T);
    for (uint64_t r = 0; r < R; ++r)
        for (uint32_t j = 0; j < 8; ++j) {
            T v = ld<T>(s + (r * 8 + j) * sizeof(T));
            for (uint32_t k = 0; k < per_block; ++k) st<T>(d + r * rep + j * blk + k * sizeof(T), v);
        }
}

// -- Gather / Gatherb ----------------------------------------------------------------------------------

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count, MPNPU_SITE) {
    using namespace mpnpu::vec;
    if (count > 0) {
        check_count(dst, count, site, "Gather", "dst");
        check_count(srcOffset, count, site, "Gather", "srcOffset");
    }
    constexpr uint32_t lanes = lanes_for(sizeof(T));
    Plan p = plan_count<true>(count, lanes, site, "Gather");
    gather_apply("Gather", p, dst, uint64_t(lanes) * sizeof(T), src, srcOffset, srcBaseAddr, site);
}
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint64_t mask[], const int64_t repeatTime,
                   const uint16_t dstRepStride, MPNPU_SITE) {
    using namespace mpnpu::vec;
    Plan p = plan_level0_bits<true>(mask, repeatTime, lanes_for(sizeof(T)), site, "Gather");
    gather_apply("Gather", p, dst, uint64_t(dstRepStride) * 32, src, srcOffset, srcBaseAddr, site);
}
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint64_t mask, const int64_t repeatTime,
                   const uint16_t dstRepStride, MPNPU_SITE) {
    using namespace mpnpu::vec;
    Plan p = plan_level0_len<true>(mask, repeatTime, lanes_for(sizeof(T)), site, "Gather");
    gather_apply("Gather", p, dst, uint64_t(dstRepStride) * 32, src, srcOffset, srcBaseAddr, site);
}

// 8 source blocks per repeat, at the byte offsets offset[r * 8 + j] from src (32-byte aligned).
template <typename T>
inline void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
                    const int64_t repeatTime, const GatherRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Gatherb";
    need_type<T>(one_of<T, uint16_t, uint32_t>, site, name, "uint16_t, uint32_t");
    check_repeat(repeatTime, site, name);
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    check_operand(offset, 32, site, name, "offset");
    if (repeatTime == 0) return;
    uint64_t R = uint64_t(repeatTime);
    uint64_t blk = (repeatParams.dstBlkStride ? repeatParams.dstBlkStride : 1) * 32ull;
    uint64_t rep = repeatParams.dstRepStride * 32ull;
    Hull ho;
    ho.add(0, R * 8 * 4);
    touch(offset, 'R', ho, site, name);
    const uint8_t* o = base(offset);
    Hull hs, hd;
    for (uint64_t i = 0; i < R * 8; ++i) {
        uint32_t off = ld<uint32_t>(o + i * 4);
        if (off % 32)
            api_error(site, "Gatherb: offset[%llu] = %u is not 32-byte aligned", (unsigned long long)i, off);
        hs.add(off, uint64_t(off) + 32);
    }
    for (uint64_t r = 0; r < R; ++r)
        for (uint32_t j = 0; j < 8; ++j) hd.add(r * rep + j * blk, r * rep + j * blk + 32);
    if (operands_overlap(dst, hd, src, hs))
        api_error(site, "Gatherb: dst overlaps the source blocks it gathers (src and dst must not share memory)");
    touch(src, 'R', hs, site, name);
    touch(dst, 'W', hd, site, name);
    uint8_t* s = base(src);
    uint8_t* d = base(dst);
    for (uint64_t r = 0; r < R; ++r)
        for (uint32_t j = 0; j < 8; ++j) std::memmove(d + r * rep + j * blk, s + ld<uint32_t>(o + (r * 8 + j) * 4), 32);
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_FILL_GATHER_H
