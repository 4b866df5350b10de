// Filling and gathering: Duplicate, Brcb, CreateVecIndex, Gather, Gatherb, GatherMask.
//
//   Duplicate       dst lanes = a scalar (or, count form, src's first element)
//   CreateVecIndex  dst lane (repeat r, lane j) = firstValue + r * lanes + j
//   Brcb            each of 8 source elements per repeat fills one 32-byte block of dst
//   Gather          dst element i = the element at byte srcBaseAddr + srcOffset[i] of src
//   Gatherb         dst block (r, j) = the 32-byte block at byte offset[r * 8 + j] of src
//   GatherMask      the source elements whose pattern bit is 1, packed one after another into dst
#ifndef MPNPU_VECTOR_FILL_GATHER_H
#define MPNPU_VECTOR_FILL_GATHER_H

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

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
    Geo gd{32, dst_rep};
    Lane ld_dst = lane_of(dst, gd);
    uint8_t* s = base(src);
    // A repeat reads all its sources before it writes (run below), so dst may be src, as kernels that
    // spread values in place do. What no model of the chip settles is a repeat reading an element an
    // earlier repeat of the same call wrote (whether repeats overlap in its pipeline): refused.
    const bool same_mem = dst.mpnpu_mem() == src.mpnpu_mem();
    std::vector<std::pair<const uint8_t*, const uint8_t*>> written;  // each earlier repeat's dst bytes
    Hull h_src;
    for (uint64_t r = 0; r < p.repeats; ++r) {
        const uint8_t* wlo = nullptr;
        const uint8_t* whi = nullptr;
        each_lane(p.bits(r), [&](uint32_t j) {
            uint64_t at = uint64_t(base_addr) + ld<uint32_t>(lo.at(r, j));
            if (at % sizeof(T))
                api_error(site, "%s: srcOffset[%llu] = %u is not a multiple of the element size (%zu bytes)", name,
                          (unsigned long long)(r * p.lanes + j), ld<uint32_t>(lo.at(r, j)), sizeof(T));
            h_src.add(at, at + sizeof(T));
            const uint8_t* e = s + at;
            for (const auto& w : written)
                if (e < w.second && w.first < e + sizeof(T))
                    api_error(site, "%s: repeat %llu gathers element %llu of src, which an earlier repeat of this "
                                    "call wrote (dst and src share memory): the result depends on how the chip "
                                    "pipelines repeats; gather into a separate buffer",
                              name, (unsigned long long)r, (unsigned long long)(at / sizeof(T)));
            uint8_t* d = ld_dst.at(r, j);
            if (!wlo || d < wlo) wlo = d;
            if (!whi || d + sizeof(T) > whi) whi = d + sizeof(T);
        });
        if (same_mem && wlo) written.emplace_back(wlo, whi);
    }
    touch(src, 'R', h_src, site, name);
    Hull h_dst = hull_of(p, sizeof(T), gd);
    touch(dst, 'W', h_dst, site, name);
    run<T>(p, ld_dst, [&](uint64_t r, uint32_t j) {
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

namespace mpnpu {
namespace vec {
// -- GatherMask ----------------------------------------------------------------------------------------
//
// Each repeat r takes n source elements (n = 256 bytes' worth in normal mode, ``mask`` in counter
// mode, the one form the A2/A3 products have: ``mask`` elements a repeat), element i of the repeat at
// byte r * src0RepeatStride * 32 + (i / per-block) * src0BlockStride * 32 + (i % per-block) * size.
// Element i is kept when bit i of the repeat's pattern is 1: a fixed pattern (1: even elements, 2:
// odd, 3..6: the first..fourth of every four, 7: all), or the bits of a pattern tensor (bit i of the
// repeat's bits, little-endian within each word; repeat r's bits start r * src1RepeatStride * 32
// bytes into the tensor). The kept elements are written one after another from dst[0], repeat
// after repeat, and rsvdCnt says how many. Every processed source element is read (the trace's
// read hull); the call leaves the vector unit in normal mode, as documented. All reads happen before
// the writes, so dst may be src0 (the documented in-place use).

template <typename T>
constexpr bool gather_mask_type_ok = one_of<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;

// pattern(r, i) -> whether element i of repeat r is kept; read_pattern(n) checks and records the
// pattern tensor's reads (n elements a repeat) once the operands are checked, before src0 is read.
template <typename T, class Pattern, class ReadPattern>
inline void gather_mask(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0, Pattern pattern,
                        ReadPattern read_pattern, bool reduceMode, uint32_t mask,
                        const AscendC::GatherMaskParams& params, uint64_t& rsvdCnt, const Site& site) {
    const char* name = "GatherMask";
    start(site, name);
    need_type<T>(gather_mask_type_ok<T>, site, name, "int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float");
    check_operand(dst, 32, site, name, "dst");
    check_operand(src0, 32, site, name, "src0");
    if (reduceMode && mask == 0) api_error(site, "GatherMask: mask 0 in counter mode (reduceMode = true takes 1 or more)");
    const uint64_t n = reduceMode ? mask : lanes_for(sizeof(T));
    const uint64_t R = params.repeatTimes;
    const Geo g = geo(params.src0BlockStride, params.src0RepeatStride);
    read_pattern(n);
    Hull hs;
    std::vector<uint64_t> kept;
    for (uint64_t r = 0; r < R; ++r) {
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t o = r * g.rep + lane_offset(uint32_t(i), sizeof(T), g);
            hs.add(o, o + sizeof(T));
            if (pattern(r, i)) kept.push_back(o);
        }
    }
    if (kept.size() > dst.GetSize())
        api_error(site, "GatherMask: %llu kept elements exceed dst's %u", (unsigned long long)kept.size(),
                  dst.GetSize());
    touch(src0, 'R', hs, site, name);
    Hull hd;
    if (!kept.empty()) hd.add(0, kept.size() * sizeof(T));
    touch(dst, 'W', hd, site, name);
    std::vector<uint8_t> vals(kept.size() * sizeof(T));
    const uint8_t* s = base(src0);
    for (size_t k = 0; k < kept.size(); ++k) std::memcpy(vals.data() + k * sizeof(T), s + kept[k], sizeof(T));
    if (!vals.empty()) std::memcpy(base(dst), vals.data(), vals.size());
    rsvdCnt = kept.size();
    core().vec.counter = false;
}

inline bool fixed_pattern_bit(uint8_t pattern, uint64_t i) {
    switch (pattern) {
        case 1: return i % 2 == 0;
        case 2: return i % 2 == 1;
        case 3: case 4: case 5: case 6: return i % 4 == uint64_t(pattern - 3);
        default: return true;  // 7
    }
}

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

// The pattern tensor's type: the unsigned integer of the element's width.
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, MPNPU_SITE) {
    using namespace mpnpu::vec;
    constexpr bool pair_ok = std::is_unsigned_v<U> && std::is_integral_v<U> && sizeof(U) == sizeof(T);
    if (!pair_ok)
        mpnpu::api_error(site, "GatherMask: a %s pattern tensor does not go with %s elements (it takes uint16_t for "
                         "16-bit and uint32_t for 32-bit elements)", type_name<U>(), type_name<T>());
    const uint64_t rep = uint64_t(gatherMaskParams.src1RepeatStride) * 32;
    const uint8_t* bits = base(src1Pattern);
    auto read_pattern = [&](uint64_t n) {
        check_operand(src1Pattern, 32, site, "GatherMask", "src1Pattern");
        const uint64_t words = (n + 8 * sizeof(U) - 1) / (8 * sizeof(U));
        Hull hp;
        for (uint64_t r = 0; r < gatherMaskParams.repeatTimes; ++r) hp.add(r * rep, r * rep + words * sizeof(U));
        touch(src1Pattern, 'R', hp, site, "GatherMask");
    };
    gather_mask<T>(dst, src0, [&](uint64_t r, uint64_t i) { return ((bits[r * rep + i / 8] >> (i % 8)) & 1) != 0; },
                   read_pattern, reduceMode, mask, gatherMaskParams, rsvdCnt, site);
}

template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, MPNPU_SITE) {
    if (src1Pattern < 1 || src1Pattern > 7)
        mpnpu::api_error(site, "GatherMask: fixed pattern %u is outside [1, 7]", unsigned(src1Pattern));
    mpnpu::vec::gather_mask<T>(dst, src0,
                               [src1Pattern](uint64_t, uint64_t i) { return mpnpu::vec::fixed_pattern_bit(src1Pattern, i); },
                               [](uint64_t) {}, reduceMode, mask, gatherMaskParams, rsvdCnt, site);
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_FILL_GATHER_H
