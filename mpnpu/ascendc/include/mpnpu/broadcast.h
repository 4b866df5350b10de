// BroadCast / Broadcast, the tensor-transform library call that repeats a tensor along one axis to
// a larger shape: dim 1 or 2, axis 0 or 1, ND layout (both tensors dense, row after row). With
// dim 2, axis 1 turns an [m, 1] column into [m, k] (every row filled with its element); axis 0
// turns a [1, k] row into [m, k] (the row repeated m times). With dim 1, [1] becomes [n].
// The forms with and without a caller-supplied temporary buffer compute the same; the temporary
// buffer is scratch on the device, not modelled here (neither read nor written).
//
// On the vector unit (PIPE_V): the source's elements are read and the destination's written, each
// memchecked and traced as one contiguous record. Misuse is an API error at the kernel's line:
// shapes that are not a broadcast along `axis`, a row of an axis-0 source that is not a multiple of
// 32 bytes, more elements than a tensor holds, overlapping operands (the one overlap accepted is an
// axis-0 broadcast into its own source's memory: the first row is the source itself, and public
// kernels rely on it), an element type other than int8_t, uint8_t, half or float.
#ifndef MPNPU_BROADCAST_H
#define MPNPU_BROADCAST_H

#include <cstdint>
#include <cstring>
#include <vector>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace mpnpu {

template <typename T, int32_t dim, int32_t axis>
inline void broadcast(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const uint32_t* dstShape, const uint32_t* srcShape, const Site& site) {
    static_assert(dim == 1 || dim == 2, "BroadCast: dim must be 1 or 2 (the documented shapes)");
    static_assert(axis == 0 || axis == 1, "BroadCast: axis must be 0 or 1");
    static_assert(dim == 2 || axis == 0, "BroadCast: a one-dimensional broadcast has only axis 0");
    constexpr bool ok = vec::one_of<T, int8_t, uint8_t, half, float>;
    vec::need_type<T>(ok, site, "BroadCast", "int8_t, uint8_t, half, float");
    if (!dstShape || !srcShape) api_error(site, "BroadCast: a shape argument is a null pointer");
    uint64_t rows = 1, cols, src_count, dst_count;
    if constexpr (dim == 1) {
        cols = dstShape[0];
        if (srcShape[0] != 1 && srcShape[0] != dstShape[0])
            api_error(site, "BroadCast: srcShape [%u] does not broadcast to dstShape [%u]", srcShape[0], dstShape[0]);
        src_count = srcShape[0];
        dst_count = cols;
    } else {
        rows = dstShape[0];
        cols = dstShape[1];
        const bool shapes_ok = axis == 1 ? (srcShape[0] == dstShape[0] && (srcShape[1] == 1 || srcShape[1] == dstShape[1]))
                                         : (srcShape[1] == dstShape[1] && (srcShape[0] == 1 || srcShape[0] == dstShape[0]));
        if (!shapes_ok)
            api_error(site, "BroadCast: srcShape [%u, %u] does not broadcast to dstShape [%u, %u] along axis %d",
                      srcShape[0], srcShape[1], dstShape[0], dstShape[1], int(axis));
        if (axis == 0 && (uint64_t(srcShape[1]) * sizeof(T)) % 32 != 0)
            api_error(site, "BroadCast: with axis 0 a source row must be a multiple of 32 bytes (srcShape[1] = %u "
                      "elements of %zu bytes)", srcShape[1], sizeof(T));
        src_count = uint64_t(srcShape[0]) * srcShape[1];
        dst_count = rows * cols;
    }
    if (src_count > src.GetSize())
        api_error(site, "BroadCast: srcShape holds %llu elements, more than src's %u", (unsigned long long)src_count,
                  src.GetSize());
    if (dst_count > dst.GetSize())
        api_error(site, "BroadCast: dstShape holds %llu elements, more than dst's %u", (unsigned long long)dst_count,
                  dst.GetSize());
    if (dst_count == 0) return;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    const bool overlap = dst.mpnpu_mem() == src.mpnpu_mem() && src_count > 0 && d < s + src_count * sizeof(T) &&
                         s < d + dst_count * sizeof(T);
    const bool in_place_rows = dim == 2 && axis == 0 && d == s;
    if (overlap && !in_place_rows)
        api_error(site, "BroadCast: dst and src overlap (the call takes separate operands)");
    src.mpnpu_touch('R', P_V, 0, src_count, site, "BroadCast");
    dst.mpnpu_touch('W', P_V, 0, dst_count, site, "BroadCast");
    // (the source first copied out, so that the in-place axis-0 form reads its row before any write)
    std::vector<uint8_t> in(s, s + src_count * sizeof(T));
    const bool same = src_count == dst_count;  // nothing to repeat: a copy
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c) {
            uint64_t from;
            if (same) from = r * cols + c;
            else if (dim == 1) from = 0;
            else if (axis == 1) from = r;
            else from = c;
            std::memcpy(d + (r * cols + c) * sizeof(T), in.data() + from * sizeof(T), sizeof(T));
        }
}

}  // namespace mpnpu

namespace AscendC {

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], MPNPU_SITE) {
    mpnpu::broadcast<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, site);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    (void)sharedTmpBuffer;
    mpnpu::broadcast<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, site);
}
// Broadcast: the newer name of the same call.
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], MPNPU_SITE) {
    mpnpu::broadcast<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, site);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    (void)sharedTmpBuffer;
    mpnpu::broadcast<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, site);
}

}  // namespace AscendC

#endif  // MPNPU_BROADCAST_H
