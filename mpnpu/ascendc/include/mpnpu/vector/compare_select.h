// Compare and select: Compare (tensor-tensor, into UB bits or into the compare-mask register),
// Compares and its older name CompareScalar (tensor-scalar), GetCmpMask / SetCmpMask, Select.
//
// Compare results are bits, one per element, little-endian within each byte (element i is bit
// i % 8 of byte i / 8 of dst). On the Atlas A2/A3 products a Compare into UB ignores its mask
// arguments: every lane of each repeat is compared, and each repeat's 256 / sizeof(T) result bits
// follow the previous repeat's in dst (dst strides are not used; source strides are). The count
// forms compare whole repeats only: the elements of a last partial 256-byte repeat are left out.
//
// Select picks src0 where a select bit is 1 and src1 where it is 0, for the lanes of the mask
// (other dst elements keep their values). Its three modes:
//   VSEL_CMPMASK_SPR         (0)  the same first 256 / sizeof(T) select bits for every repeat
//   VSEL_TENSOR_SCALAR_MODE  (1)  src1 is a scalar; select bits are consumed continuously
//                                  (repeat r, lane j: bit r * lanes + j)
//   VSEL_TENSOR_TENSOR_MODE  (2)  src1 is a tensor; select bits consumed continuously
// The forms without a mask argument take the vector mask register, and their select bits (mode
// 0), scalar (mode 1) or select-bit address (mode 2) from the compare-mask register (SetCmpMask).
#ifndef MPNPU_VECTOR_COMPARE_SELECT_H
#define MPNPU_VECTOR_COMPARE_SELECT_H

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

inline const char* cmp_name(AscendC::CMPMODE m) {
    static const char* names[] = {"LT", "GT", "EQ", "LE", "GE", "NE"};
    unsigned i = unsigned(m);
    return i < 6 ? names[i] : "CMPMODE(?)";
}

template <typename C>
inline bool compare(C a, C b, AscendC::CMPMODE m) {
    switch (m) {
        case AscendC::CMPMODE::LT: return a < b;
        case AscendC::CMPMODE::GT: return a > b;
        case AscendC::CMPMODE::EQ: return a == b;
        case AscendC::CMPMODE::LE: return a <= b;
        case AscendC::CMPMODE::GE: return a >= b;
        case AscendC::CMPMODE::NE: return a != b;
    }
    return false;
}

// half and float in every mode, int32_t for EQ only; the result tensor holds 8-bit lanes.
template <typename T, typename U>
inline void compare_check(AscendC::CMPMODE mode, bool signed_dst_ok, const Site& site, const char* name) {
    need_type<T>(one_of<T, half, float, int32_t>, site, name, "half, float, int32_t (EQ only)");
    if (std::is_same_v<T, int32_t> && mode != AscendC::CMPMODE::EQ)
        api_error(site, "%s: int32_t takes CMPMODE::EQ only, not %s", name, cmp_name(mode));
    if (unsigned(mode) > 5) api_error(site, "%s: CMPMODE %u is not a compare mode", name, unsigned(mode));
    bool dst_ok = std::is_same_v<U, uint8_t> || (signed_dst_ok && std::is_same_v<U, int8_t>);
    if (!dst_ok)
        api_error(site, "%s: the result tensor must be uint8_t%s, not %s", name, signed_dst_ok ? " or int8_t" : "",
                  type_name<U>());
}

// ``repeats`` full repeats of src0 OP (src1 tensor, or the scalar when s1 is null) into dst bits.
template <typename T, typename U>
inline void compare_run(const char* name, uint64_t repeats, const AscendC::LocalTensor<U>& dst,
                        const AscendC::LocalTensor<T>& s0, const Geo& g0, const AscendC::LocalTensor<T>* s1,
                        const Geo& g1, const T& scalar, AscendC::CMPMODE mode, const Site& site) {
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(s0, 32, site, name, "src0");
    if (s1) check_operand(*s1, 32, site, name, "src1");
    if (repeats == 0) return;
    constexpr uint32_t lanes = lanes_for(sizeof(T));
    Plan p = plan_normal(first_n(lanes), repeats, lanes);
    touch(s0, 'R', hull_of(p, sizeof(T), g0), site, name);
    if (s1) touch(*s1, 'R', hull_of(p, sizeof(T), g1), site, name);
    Hull hd;
    hd.add(0, repeats * (lanes / 8));
    touch(dst, 'W', hd, site, name);
    Lane l0 = lane_of(s0, g0);
    Lane l1 = s1 ? lane_of(*s1, g1) : Lane{nullptr, uint32_t(sizeof(T)), g1};
    calc_t<T> sc = to_calc(scalar);
    uint8_t* out = base(dst);
    for (uint64_t r = 0; r < repeats; ++r) {
        uint8_t bytes[MAX_LANES / 8] = {};
        for (uint32_t j = 0; j < lanes; ++j) {
            calc_t<T> a = to_calc(ld<T>(l0.at(r, j)));
            calc_t<T> b = s1 ? to_calc(ld<T>(l1.at(r, j))) : sc;
            if (compare(a, b, mode)) bytes[j / 8] = uint8_t(bytes[j / 8] | (1u << (j % 8)));
        }
        std::memcpy(out + r * (lanes / 8), bytes, lanes / 8);
    }
}

template <typename T>
inline uint64_t compare_count_repeats(uint64_t count) {
    return count * sizeof(T) / REPEAT_BYTES;
}

// -- select --------------------------------------------------------------------------------------------

template <typename T, typename U>
inline void select_check(const Site& site) {
    need_type<T>(one_of<T, half, float>, site, "Select", "half, float");
    if (!one_of<U, uint8_t, uint16_t, uint32_t, uint64_t>)
        api_error(site, "Select: the select mask must be uint8_t, uint16_t, uint32_t or uint64_t, not %s",
                  type_name<U>());
}

inline const char* sel_name(AscendC::SELMODE m) {
    switch (m) {
        case AscendC::SELMODE::VSEL_CMPMASK_SPR: return "VSEL_CMPMASK_SPR";
        case AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE: return "VSEL_TENSOR_SCALAR_MODE";
        case AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE: return "VSEL_TENSOR_TENSOR_MODE";
    }
    return "SELMODE(?)";
}

// Where the select bits are: a byte range of UB (offsets from UB's start) that memcheck checks
// against [lo, hi) — the selMask tensor's buffer, or the compare-mask register's copy.
struct SelBits {
    const uint8_t* bytes = nullptr;  // bit i = bytes[i / 8] >> (i % 8)
    bool continuous = false;         // modes 1 and 2
    bool bit(uint64_t r, uint32_t j, uint32_t lanes) const {
        uint64_t i = continuous ? r * lanes + j : j;
        return (bytes[i / 8] >> (i % 8)) & 1u;
    }
};

// The bytes of the select mask the plan's lanes read.
inline Hull select_hull(const Plan& p, bool continuous) {
    uint64_t mn = ~0ull, mx = 0;
    bool any = false;
    auto add = [&](const Bits& b, uint64_t r) {
        each_lane(b, [&](uint32_t j) {
            uint64_t i = continuous ? r * p.lanes + j : j;
            if (i < mn) mn = i;
            if (i > mx) mx = i;
            any = true;
        });
    };
    if (continuous) {
        for (uint64_t r = 0; r < p.repeats; ++r) add(p.bits(r), r);
    } else {
        if (p.repeats > 1) add(p.main, 0);
        if (p.repeats > 0) add(p.last, 0);
    }
    Hull h;
    if (any) h.add(mn / 8, mx / 8 + 1);
    return h;
}

// dst = sel ? src0 : (src1 tensor, or the scalar when s1 is null), for the plan's lanes.
template <typename T>
inline void select_run(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                       const AscendC::LocalTensor<T>& s0, const Geo& g0, const AscendC::LocalTensor<T>* s1,
                       const Geo& g1, const T& scalar, const SelBits& sel, const Site& site) {
    Lane l0 = lane_of(s0, g0);
    Lane l1 = s1 ? lane_of(*s1, g1) : Lane{nullptr, uint32_t(sizeof(T)), g1};
    touch(s0, 'R', hull_of(p, sizeof(T), g0), site, "Select");
    if (s1) touch(*s1, 'R', hull_of(p, sizeof(T), g1), site, "Select");
    touch(dst, 'W', hull_of(p, sizeof(T), gd), site, "Select");
    run<T>(p, lane_of(dst, gd), [&](uint64_t r, uint32_t j) {
        if (sel.bit(r, j, p.lanes)) return ld<T>(l0.at(r, j));
        return s1 ? ld<T>(l1.at(r, j)) : scalar;
    });
}

// The forms with a selMask tensor. ``s1`` null: mode 1 with ``scalar``.
template <typename T, typename U>
inline void select_tensor(const Plan& p, const AscendC::LocalTensor<T>& dst, const Geo& gd,
                          const AscendC::LocalTensor<U>& selMask, const AscendC::LocalTensor<T>& s0, const Geo& g0,
                          const AscendC::LocalTensor<T>* s1, const Geo& g1, const T& scalar, AscendC::SELMODE mode,
                          const Site& site) {
    const char* name = "Select";
    select_check<T, U>(site);
    if (s1 && mode == AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE)
        api_error(site, "Select: VSEL_TENSOR_SCALAR_MODE takes a scalar src1, not a tensor");
    if (!s1 && mode != AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE)
        api_error(site, "Select: a scalar src1 needs VSEL_TENSOR_SCALAR_MODE, not %s", sel_name(mode));
    if (unsigned(mode) > 2) api_error(site, "Select: SELMODE %u is not a select mode", unsigned(mode));
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(selMask, 32, site, name, "selMask");
    check_operand(s0, 32, site, name, "src0");
    if (s1) check_operand(*s1, 32, site, name, "src1");
    if (p.none()) return;
    SelBits sel;
    sel.continuous = mode != AscendC::SELMODE::VSEL_CMPMASK_SPR;
    sel.bytes = base(selMask);
    touch(selMask, 'R', select_hull(p, sel.continuous), site, name);
    select_run(p, dst, gd, s0, g0, s1, g1, scalar, sel, site);
}

inline Geo geo_dst(const AscendC::BinaryRepeatParams& rp) { return geo(rp.dstBlkStride, rp.dstRepStride); }
inline Geo geo_src0(const AscendC::BinaryRepeatParams& rp) { return geo(rp.src0BlkStride, rp.src0RepStride); }
inline Geo geo_src1(const AscendC::BinaryRepeatParams& rp) { return geo(rp.src1BlkStride, rp.src1RepStride); }

// The select-bit address a mode-2 SetCmpMask stored: a pointer into this process's UB (what
// GetPhyAddr gives), or a UB offset (what device code computes); the UB offset, or -1.
inline int64_t ub_offset_of(uint64_t addr) {
    const int64_t at = offset_in(MPNPU_MEM_UB, addr);
    if (at >= 0) return at;
    if (addr < UB_BYTES) return int64_t(addr);
    return -1;
}

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

// -- Compare into UB -----------------------------------------------------------------------------------

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    CMPMODE cmpMode, uint32_t count, MPNPU_SITE) {
    mpnpu::vec::compare_check<T, U>(cmpMode, true, site, "Compare");
    mpnpu::vec::check_count(src0, count, site, "Compare", "src0");
    mpnpu::vec::check_count(src1, count, site, "Compare", "src1");
    uint64_t repeats = mpnpu::vec::compare_count_repeats<T>(count);
    mpnpu::vec::check_count(dst, repeats * mpnpu::vec::lanes_for(sizeof(T)) / 8, site, "Compare", "dst (bytes)");
    constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));
    mpnpu::vec::Geo g = mpnpu::vec::contiguous(lanes, sizeof(T));
    mpnpu::vec::compare_run("Compare", repeats, dst, src0, g, &src1, g, T(), cmpMode, site);
}

// Level-0 forms: the mask is a reserved argument on the Atlas A2/A3 products (every lane is compared).
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    CMPMODE cmpMode, const uint64_t mask[], const int64_t repeatTime,
                    const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    (void)mask;
    mpnpu::vec::compare_check<T, U>(cmpMode, true, site, "Compare");
    mpnpu::vec::check_repeat(repeatTime, site, "Compare");
    mpnpu::vec::compare_run("Compare", uint64_t(repeatTime), dst, src0, mpnpu::vec::geo_src0(repeatParams), &src1,
                            mpnpu::vec::geo_src1(repeatParams), T(), cmpMode, site);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    CMPMODE cmpMode, const uint64_t mask, const int64_t repeatTime,
                    const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    (void)mask;
    mpnpu::vec::compare_check<T, U>(cmpMode, true, site, "Compare");
    mpnpu::vec::check_repeat(repeatTime, site, "Compare");
    mpnpu::vec::compare_run("Compare", uint64_t(repeatTime), dst, src0, mpnpu::vec::geo_src0(repeatParams), &src1,
                            mpnpu::vec::geo_src1(repeatParams), T(), cmpMode, site);
}

// -- Compares / CompareScalar --------------------------------------------------------------------------

#define MPNPU_VEC_COMPARES(NAME)                                                                                  \
    template <typename T, typename U>                                                                             \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,  \
                     uint32_t count, MPNPU_SITE) {                                                                \
        mpnpu::vec::compare_check<T, U>(cmpMode, false, site, #NAME);                                             \
        mpnpu::vec::check_count(src0, count, site, #NAME, "src0");                                                \
        uint64_t repeats = mpnpu::vec::compare_count_repeats<T>(count);                                           \
        mpnpu::vec::check_count(dst, repeats * mpnpu::vec::lanes_for(sizeof(T)) / 8, site, #NAME, "dst (bytes)"); \
        mpnpu::vec::Geo g = mpnpu::vec::contiguous(mpnpu::vec::lanes_for(sizeof(T)), sizeof(T));                 \
        mpnpu::vec::compare_run(#NAME, repeats, dst, src0, g, static_cast<const LocalTensor<T>*>(nullptr), g,     \
                                src1Scalar, cmpMode, site);                                                       \
    }                                                                                                             \
    template <typename T, typename U, bool isSetMask = true>                                                      \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,  \
                     const uint64_t mask[], const int64_t repeatTime, const UnaryRepeatParams& repeatParams,      \
                     MPNPU_SITE) {                                                                                \
        (void)mask;                                                                                               \
        mpnpu::vec::compare_check<T, U>(cmpMode, false, site, #NAME);                                             \
        mpnpu::vec::check_repeat(repeatTime, site, #NAME);                                                        \
        mpnpu::vec::Geo g = mpnpu::vec::geo(repeatParams.srcBlkStride, repeatParams.srcRepStride);                \
        mpnpu::vec::compare_run(#NAME, uint64_t(repeatTime), dst, src0, g,                                        \
                                static_cast<const LocalTensor<T>*>(nullptr), g, src1Scalar, cmpMode, site);       \
    }                                                                                                             \
    template <typename T, typename U, bool isSetMask = true>                                                      \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,  \
                     const uint64_t mask, const int64_t repeatTime, const UnaryRepeatParams& repeatParams,        \
                     MPNPU_SITE) {                                                                                \
        (void)mask;                                                                                               \
        mpnpu::vec::compare_check<T, U>(cmpMode, false, site, #NAME);                                             \
        mpnpu::vec::check_repeat(repeatTime, site, #NAME);                                                        \
        mpnpu::vec::Geo g = mpnpu::vec::geo(repeatParams.srcBlkStride, repeatParams.srcRepStride);                \
        mpnpu::vec::compare_run(#NAME, uint64_t(repeatTime), dst, src0, g,                                        \
                                static_cast<const LocalTensor<T>*>(nullptr), g, src1Scalar, cmpMode, site);       \
    }

MPNPU_VEC_COMPARES(Compares)
MPNPU_VEC_COMPARES(CompareScalar)

// -- Compare into the compare-mask register ------------------------------------------------------------

namespace internal_cmp {
template <typename T, bool isSetMask>
inline void compare_reg(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                        const mpnpu::vec::Plan& p0, const BinaryRepeatParams& rp, const mpnpu::Site& site) {
    using namespace mpnpu::vec;
    const char* name = "Compare";
    need_type<T>(one_of<T, half, float>, site, name, "half, float");
    if (unsigned(cmpMode) > 5) mpnpu::api_error(site, "Compare: CMPMODE %u is not a compare mode", unsigned(cmpMode));
    start(site, name);
    check_operand(src0, 32, site, name, "src0");
    check_operand(src1, 32, site, name, "src1");
    Plan p = p0;  // one repeat only
    if (p.repeats > 1) {
        p.repeats = 1;
        p.last = p.main;
    }
    Geo g0 = geo_src0(rp), g1 = geo_src1(rp);
    uint64_t bits[2] = {0, 0};
    if (!p.none()) {
        touch(src0, 'R', hull_of(p, sizeof(T), g0), site, name);
        touch(src1, 'R', hull_of(p, sizeof(T), g1), site, name);
        Lane l0 = lane_of(src0, g0), l1 = lane_of(src1, g1);
        each_lane(p.bits(0), [&](uint32_t j) {
            if (compare(to_calc(ld<T>(l0.at(0, j))), to_calc(ld<T>(l1.at(0, j))), cmpMode))
                bits[j / 64] |= 1ull << (j % 64);
        });
    }
    mpnpu::core().vec.cmp[0] = bits[0];
    mpnpu::core().vec.cmp[1] = bits[1];
}
}  // namespace internal_cmp

// One repeat of src0 OP src1 into the 128-bit compare-mask register (lanes outside the mask give 0).
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    mpnpu::vec::Plan p =
        mpnpu::vec::plan_level0_bits<isSetMask>(mask, 1, mpnpu::vec::lanes_for(sizeof(T)), site, "Compare");
    internal_cmp::compare_reg<T, isSetMask>(src0, src1, cmpMode, p, repeatParams, site);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    mpnpu::vec::Plan p =
        mpnpu::vec::plan_level0_len<isSetMask>(mask, 1, mpnpu::vec::lanes_for(sizeof(T)), site, "Compare");
    internal_cmp::compare_reg<T, isSetMask>(src0, src1, cmpMode, p, repeatParams, site);
}

// The compare-mask register's 128 bits into dst (16 bytes).
template <typename T>
inline void GetCmpMask(const LocalTensor<T>& dst, MPNPU_SITE) {
    mpnpu::vec::start(site, "GetCmpMask");
    mpnpu::vec::check_operand(dst, 16, site, "GetCmpMask", "dst");
    mpnpu::vec::Hull h;
    h.add(0, 16);
    mpnpu::vec::touch(dst, 'W', h, site, "GetCmpMask");
    std::memcpy(mpnpu::vec::base(dst), mpnpu::core().vec.cmp, 16);
}

// The compare-mask register from src's first 16 bytes.
template <typename T>
inline void SetCmpMask(const LocalTensor<T>& src, MPNPU_SITE) {
    mpnpu::vec::start(site, "SetCmpMask");
    mpnpu::vec::check_operand(src, 16, site, "SetCmpMask", "src");
    mpnpu::vec::Hull h;
    h.add(0, 16);
    mpnpu::vec::touch(src, 'R', h, site, "SetCmpMask");
    std::memcpy(mpnpu::core().vec.cmp, mpnpu::vec::base(src), 16);
}

// -- Select --------------------------------------------------------------------------------------------

// Count forms.
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint32_t count, MPNPU_SITE) {
    using namespace mpnpu::vec;
    if (count > 0) {
        check_count(dst, count, site, "Select", "dst");
        check_count(src0, count, site, "Select", "src0");
    }
    constexpr uint32_t lanes = lanes_for(sizeof(T));
    select_check<T, U>(site);
    Plan p = plan_count<true>(count, lanes, site, "Select");
    Geo g = contiguous(lanes, sizeof(T));
    select_tensor(p, dst, g, selMask, src0, g, static_cast<const LocalTensor<T>*>(nullptr), g, src1, selMode, site);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, MPNPU_SITE) {
    using namespace mpnpu::vec;
    if (count > 0) {
        check_count(dst, count, site, "Select", "dst");
        check_count(src0, count, site, "Select", "src0");
        check_count(src1, count, site, "Select", "src1");
    }
    constexpr uint32_t lanes = lanes_for(sizeof(T));
    select_check<T, U>(site);
    Plan p = plan_count<true>(count, lanes, site, "Select");
    Geo g = contiguous(lanes, sizeof(T));
    select_tensor(p, dst, g, selMask, src0, g, &src1, g, T(), selMode, site);
}

// Level-0 forms, mode 1 (scalar src1).
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, const uint64_t mask[], const int64_t repeatTime,
                   const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    select_check<T, U>(site);
    Plan p = plan_level0_bits<isSetMask>(mask, repeatTime, lanes_for(sizeof(T)), site, "Select");
    select_tensor(p, dst, geo_dst(repeatParams), selMask, src0, geo_src0(repeatParams),
                  static_cast<const LocalTensor<T>*>(nullptr), geo_src1(repeatParams), src1, selMode, site);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, const uint64_t mask, const int64_t repeatTime,
                   const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    select_check<T, U>(site);
    Plan p = plan_level0_len<isSetMask>(mask, repeatTime, lanes_for(sizeof(T)), site, "Select");
    select_tensor(p, dst, geo_dst(repeatParams), selMask, src0, geo_src0(repeatParams),
                  static_cast<const LocalTensor<T>*>(nullptr), geo_src1(repeatParams), src1, selMode, site);
}

// Level-0 forms, modes 0 and 2 (tensor src1).
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, const uint64_t mask[], const int64_t repeatTime,
                   const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    select_check<T, U>(site);
    Plan p = plan_level0_bits<isSetMask>(mask, repeatTime, lanes_for(sizeof(T)), site, "Select");
    select_tensor(p, dst, geo_dst(repeatParams), selMask, src0, geo_src0(repeatParams), &src1,
                  geo_src1(repeatParams), T(), selMode, site);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, const uint64_t mask, const int64_t repeatTime,
                   const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    select_check<T, U>(site);
    Plan p = plan_level0_len<isSetMask>(mask, repeatTime, lanes_for(sizeof(T)), site, "Select");
    select_tensor(p, dst, geo_dst(repeatParams), selMask, src0, geo_src0(repeatParams), &src1,
                  geo_src1(repeatParams), T(), selMode, site);
}

// Mode 1 without a mask argument: the vector mask register's lanes, the scalar from the
// compare-mask register (SetCmpMask of a tensor holding it).
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const int64_t repeatTime, const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    select_check<T, U>(site);
    Plan p = plan_level0_len<false>(0, repeatTime, lanes_for(sizeof(T)), site, "Select");
    T scalar;
    std::memcpy(static_cast<void*>(&scalar), mpnpu::core().vec.cmp, sizeof(T));
    select_tensor(p, dst, geo_dst(repeatParams), selMask, src0, geo_src0(repeatParams),
                  static_cast<const LocalTensor<T>*>(nullptr), geo_src1(repeatParams), scalar,
                  SELMODE::VSEL_TENSOR_SCALAR_MODE, site);
}

// Modes 0 and 2 without a mask argument: the vector mask register's lanes; the select bits are the
// compare-mask register itself (mode 0) or at the UB address it holds (mode 2).
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   const int64_t repeatTime, const BinaryRepeatParams& repeatParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Select";
    need_type<T>(one_of<T, half, float>, site, name, "half, float");
    static_assert(selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE,
                  "Select<T, VSEL_TENSOR_SCALAR_MODE>(dst, src0, src1, ...) does not exist: mode 1 without a mask "
                  "argument is Select(dst, selMask, src0, repeatTime, repeatParams)");
    Plan p = plan_level0_len<false>(0, repeatTime, lanes_for(sizeof(T)), site, name);
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src0, 32, site, name, "src0");
    check_operand(src1, 32, site, name, "src1");
    if (p.none()) return;
    SelBits sel;
    uint8_t reg[16];
    std::memcpy(reg, mpnpu::core().vec.cmp, 16);
    if (selMode == SELMODE::VSEL_CMPMASK_SPR) {
        sel.bytes = reg;
    } else {
        int64_t off = ub_offset_of(mpnpu::core().vec.cmp[0]);
        if (off < 0)
            mpnpu::api_error(site, "Select: the compare-mask register holds 0x%llx, not a UB address (mode 2 takes the "
                                   "select mask's address through SetCmpMask)",
                             (unsigned long long)mpnpu::core().vec.cmp[0]);
        sel.continuous = true;
        sel.bytes = mpnpu::memory_base(MPNPU_MEM_UB) + off;
        Hull h = select_hull(p, true);
        if (uint64_t(off) + h.hi > mpnpu::UB_BYTES)
            mpnpu::api_error(site, "Select: the select mask at UB byte %lld runs past the end of UB", (long long)off);
        mpnpu::local_access('R', mpnpu::P_V, MPNPU_MEM_UB, uint64_t(off) + h.lo, uint64_t(off) + h.hi, 0,
                            mpnpu::UB_BYTES, site, name);
    }
    select_run(p, dst, geo_dst(repeatParams), src0, geo_src0(repeatParams), &src1, geo_src1(repeatParams), T(), sel,
               site);
}

// The scalar-first ("flexible scalar position") forms of the newest product are not implemented.
template <typename T, typename U>
inline void Compares(const LocalTensor<U>& dst, const T src0Scalar, const LocalTensor<T>& src1, CMPMODE cmpMode,
                     uint32_t count, MPNPU_SITE) {
    static_assert(mpnpu::vec::refused<T>, "Compares with the scalar before the tensor (the flexible scalar position "
                                          "form) is not implemented by mpnpu: Compares(dst, src0, scalar, mode, "
                                          "count) with the mode reversed");
    (void)dst, (void)src0Scalar, (void)src1, (void)cmpMode, (void)count, (void)site;
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, T src0, const LocalTensor<T>& src1,
                   SELMODE selMode, uint32_t count, MPNPU_SITE) {
    static_assert(mpnpu::vec::refused<T>, "Select with a scalar src0 (the flexible scalar position form) is not "
                                          "implemented by mpnpu: Select(dst, selMask, src0 tensor, scalar, "
                                          "VSEL_TENSOR_SCALAR_MODE, count) with the select bits inverted");
    (void)dst, (void)selMask, (void)src0, (void)src1, (void)selMode, (void)count, (void)site;
}

// The whole-tensor compare operators (dst = src0 < src1, ...) are not implemented.
#define MPNPU_VEC_REFUSED_COMPARE(OP, MODE)                                                                       \
    template <typename T>                                                                                         \
    inline LocalTensor<uint8_t> operator OP(const LocalTensor<T>& a, const LocalTensor<T>& b) {                   \
        static_assert(mpnpu::vec::refused<T>, "the whole-tensor compare operator (dst = src0 " #OP " src1) is "    \
                                              "not implemented by mpnpu: call Compare(dst, src0, src1, "         \
                                              "CMPMODE::" MODE ", count)");                                       \
        (void)b;                                                                                                  \
        return a.template ReinterpretCast<uint8_t>();                                                             \
    }

MPNPU_VEC_REFUSED_COMPARE(<, "LT")
MPNPU_VEC_REFUSED_COMPARE(>, "GT")
MPNPU_VEC_REFUSED_COMPARE(<=, "LE")
MPNPU_VEC_REFUSED_COMPARE(>=, "GE")
MPNPU_VEC_REFUSED_COMPARE(==, "EQ")
MPNPU_VEC_REFUSED_COMPARE(!=, "NE")

}  // namespace AscendC

#endif  // MPNPU_VECTOR_COMPARE_SELECT_H
