// securec.h: the bounds-checked memory functions unit tests include by this name (memcpy_s,
// memset_s), with the behaviour of the C11 Annex K functions of those names: each takes the
// destination's size, and a call that would write past it (or is given a null pointer) writes no
// more than that size and returns a nonzero error code; success returns EOK (0).
//   memcpy_s(dest, destMax, src, count)  copies count bytes; on an error, zeroes dest's destMax bytes
//                                        (when dest is usable) and returns EINVAL / ERANGE
//   memset_s(dest, destMax, c, count)    sets count bytes to c; count > destMax sets destMax bytes,
//                                        returns ERANGE
#ifndef MPNPU_SECUREC_H
#define MPNPU_SECUREC_H

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef EOK
#define EOK 0
#endif

typedef int errno_t;

namespace mpnpu {
// The largest destination size taken as meant (a larger one is a negative length converted).
constexpr size_t SECUREC_MAX = size_t(INTPTR_MAX);
}  // namespace mpnpu

inline errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
    if (dest == nullptr || destMax == 0 || destMax > mpnpu::SECUREC_MAX) return EINVAL;
    if (src == nullptr || count > destMax) {
        std::memset(dest, 0, destMax);
        return src == nullptr ? EINVAL : ERANGE;
    }
    if (count) std::memmove(dest, src, count);  // (overlap copies as memmove does)
    return EOK;
}

inline errno_t memset_s(void* dest, size_t destMax, int c, size_t count) {
    if (dest == nullptr || destMax == 0 || destMax > mpnpu::SECUREC_MAX) return EINVAL;
    if (count > destMax) {
        std::memset(dest, c, destMax);
        return ERANGE;
    }
    std::memset(dest, c, count);
    return EOK;
}

#endif  // MPNPU_SECUREC_H
