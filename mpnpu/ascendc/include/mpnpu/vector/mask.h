// The vector mask register and its calls: SetVectorMask, SetMaskCount, SetMaskNorm, ResetMask and
// MASK_PLACEHOLDER.
//
// The register (mpnpu::VectorRegs in rt.h, reset at every launch) holds 128 bits and a mode:
//   normal mode   bit j on: lane j of every repeat takes part (16-bit lanes use all 128 bits,
//                 32-bit lanes the low 64)
//   counter mode  the low 64 bits are an element count: the instruction runs that many elements,
//                 as many repeats as they need (its repeatTime is ignored)
// A level-0 call with isSetMask = true loads its own mask into the register (so it stays there
// for a later isSetMask = false call); with isSetMask = false it uses the register as is. A count
// call with isSetMask = true runs in counter mode and leaves the register all ones in normal mode.
#ifndef MPNPU_VECTOR_MASK_H
#define MPNPU_VECTOR_MASK_H

#include <cstdint>

#include "../native/rt.h"
#include "engine.h"
#include "params.h"

namespace AscendC {

// The mask argument of a level-0 call made with isSetMask = false (it is not read).
constexpr uint64_t MASK_PLACEHOLDER = 0;
// The same for the bit-mask forms.
inline uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};

// Normal mode: lanes by bit (maskHigh: lanes 64..127). Counter mode: maskLow is the element count.
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow, MPNPU_SITE) {
    (void)site;
    mpnpu::VectorRegs& v = mpnpu::core().vec;
    v.mask[0] = maskLow;
    v.mask[1] = mode == MaskMode::COUNTER ? 0 : maskHigh;
}

// Normal mode: the first ``len`` lanes of each repeat (at most one repeat's worth for T).
// Counter mode: ``len`` elements in all.
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len, MPNPU_SITE) {
    mpnpu::VectorRegs& v = mpnpu::core().vec;
    if (len < 0) mpnpu::api_error(site, "SetVectorMask: len %d is negative", len);
    if constexpr (mode == MaskMode::COUNTER) {
        v.mask[0] = uint64_t(len);
        v.mask[1] = 0;
    } else {
        constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T) < 2 ? 2 : uint32_t(sizeof(T)));
        mpnpu::vec::Bits b = mpnpu::vec::first_n(uint64_t(len) < lanes ? uint64_t(len) : lanes);
        v.mask[0] = b.w[0];
        v.mask[1] = b.w[1];
    }
}

// Counter mode: masks are element counts.
inline void SetMaskCount(MPNPU_SITE) {
    (void)site;
    mpnpu::core().vec.counter = true;
}

// Normal mode (the default): masks are per-repeat lane bits.
inline void SetMaskNorm(MPNPU_SITE) {
    (void)site;
    mpnpu::core().vec.counter = false;
}

// Every lane on again.
inline void ResetMask(MPNPU_SITE) {
    (void)site;
    mpnpu::VectorRegs& v = mpnpu::core().vec;
    v.mask[0] = v.mask[1] = ~0ull;
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_MASK_H
