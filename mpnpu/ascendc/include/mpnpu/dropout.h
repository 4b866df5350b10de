// DropOut: the library's filter by a mask, with its shape struct DropOutShapeInfo and host helpers
// GetDropOutMaxTmpSize / GetDropOutMinTmpSize / GetDropOutMaxMinTmpSize.
//
// The source and dst are [firstAxis, srcLastAxis]; each element is kept, divided by keepProb (the
// documented Muls by 1 / keepProb, in float), or set to 0, as the mask says. Two mask layouts:
//   byte mode: one uint8_t per element, nonzero keeps it; rows of maskLastAxis bytes.
//   bit mode:  one bit per element, bit j of a byte (least significant first) for the byte's j-th
//              element; rows of maskLastAxis bytes covering srcLastAxis bits.
// dropOutMode picks the layout: 1 byte mode with padded rows ("dirty" data past srcLastAxis in each
// row), 2 byte mode with the valid bytes back to back, 3 bit mode with the valid bits back to back,
// 4 bit mode with padded rows, and 0 (the default) infers it from the shapes: maskLastAxis equal to
// srcLastAxis is mode 2, longer is 1, maskLastAxis * 8 equal to srcLastAxis is 3, longer is 4 (anything
// else is an API error). In the padded modes the device first packs the valid mask data to the front
// of the mask (its GatherMask step: the page warns the mask may be rewritten); mpnpu does the same, a
// traced write of the mask, and requires (as documented) an even count of valid values per row.
// isInitBitMode does not change the result here.
//
// Operands: T half or float; dst, src, mask and sharedTmpBuffer UB tensors starting 32-byte aligned;
// srcLastAxis * sizeof(T) a multiple of 32 bytes (documented); keepProb in (0, 1); dst may be src (the
// page allows the reuse) but no other overlap; sharedTmpBuffer at least the minimum the host helper
// gives (the model of lib_elementwise.h: one float per element) and apart from every operand. All
// accesses on PIPE_V.
#ifndef MPNPU_DROPOUT_H
#define MPNPU_DROPOUT_H

#include <cstdint>
#include <vector>

#include "lib_elementwise.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

// The shapes of a DropOut call: rows, the source's row length, the mask's row length (in its elements).
struct DropOutShapeInfo {
    DropOutShapeInfo() {}
    uint32_t firstAxis = 0;
    uint32_t srcLastAxis = 0;
    uint32_t maskLastAxis = 0;
};

}  // namespace AscendC

namespace mpnpu {
namespace dropout {

constexpr uint32_t kNodes = 1;

// 1..4 as documented (see the top), from the shapes when mode is 0.
inline uint32_t resolve_mode(uint32_t mode, uint32_t k, uint32_t mk, const Site& site) {
    if (mode > 4) api_error(site, "DropOut: dropOutMode %u is not one of 0 to 4", mode);
    if (mode) return mode;
    if (mk == k) return 2;
    if (mk > k) return 1;
    if (uint64_t(mk) * 8 == k) return 3;
    if (uint64_t(mk) * 8 > k) return 4;
    api_error(site, "DropOut: maskLastAxis %u covers neither srcLastAxis %u bytes nor %u bits", mk, k, k);
}

template <typename T, uint32_t dropOutMode>
inline void run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>& mask, const AscendC::LocalTensor<uint8_t>* tmp, float keepProb,
                const AscendC::DropOutShapeInfo& info, const Site& site) {
    const char* name = "DropOut";
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const uint32_t m = info.firstAxis, k = info.srcLastAxis, mk = info.maskLastAxis;
        if ((uint64_t(k) * sizeof(T)) % 32)
            api_error(site, "%s: srcLastAxis %u is not 32-byte aligned (%u elements of %s make a block)", name, k,
                      unsigned(32 / sizeof(T)), vec::type_name<T>());
        if (!(keepProb > 0.0f && keepProb < 1.0f))
            api_error(site, "%s: keepProb %g is outside (0, 1)", name, double(keepProb));
        const uint32_t mode = resolve_mode(dropOutMode, k, mk, site);
        const bool bits = mode >= 3, padded = mode == 1 || mode == 4;
        const uint64_t row_bytes = bits ? (uint64_t(k) + 7) / 8 : k;  // the valid mask bytes of a row
        if (padded && mk < row_bytes)
            api_error(site, "%s: maskLastAxis %u is shorter than a row's %llu mask bytes", name, mk,
                      (unsigned long long)row_bytes);
        if (padded && row_bytes % 2)
            api_error(site, "%s: with padded mask rows the valid values of a row (%llu) must be even", name,
                      (unsigned long long)row_bytes);
        const uint64_t n = uint64_t(m) * k;
        const uint64_t mask_bytes = padded ? uint64_t(m) * mk : (bits ? (n + 7) / 8 : n);
        vec::check_operand(mask, 32, site, name, "maskLocal");
        vec::check_count(mask, mask_bytes, site, name, "maskLocal");
        for (const void* t : {static_cast<const void*>(src.mpnpu_addr()), static_cast<const void*>(dst.mpnpu_addr())})
            if (vec::overlaps(mask.mpnpu_addr(), mask_bytes, t, n * sizeof(T)))
                api_error(site, "%s: maskLocal overlaps dst or srcLocal", name);
        if (tmp && vec::overlaps(tmp->mpnpu_addr(), tmp->GetSize(), mask.mpnpu_addr(), mask_bytes))
            api_error(site, "%s: sharedTmpBuffer overlaps maskLocal (the call takes separate operands)", name);
        // (mask read first: prepare traces the source read, the scratch and the write after it)
        if (n) mask.mpnpu_touch('R', P_V, 0, mask_bytes, site, name);
        if (!lib::prepare(name, lib::DstReuse::same, dst, n, tmp, sizeof(T), kNodes, site, src, "srcLocal")) return;
        uint8_t* mk_in = mask.mpnpu_addr();
        const uint64_t stride = padded ? mk : row_bytes;  // bytes from one row's mask to the next
        auto keep = [&](uint32_t r, uint32_t j) {
            if (!bits) return mk_in[(padded ? uint64_t(r) * stride : uint64_t(r) * k) + j] != 0;
            const uint64_t bit = padded ? uint64_t(r) * stride * 8 + j : uint64_t(r) * k + j;
            return ((mk_in[bit / 8] >> (bit % 8)) & 1u) != 0;
        };
        const float scale = 1.0f / keepProb;
        const T* in = src.mpnpu_addr();
        std::vector<T> out(n);
        for (uint32_t r = 0; r < m; ++r)
            for (uint32_t j = 0; j < k; ++j) {
                const uint64_t i = uint64_t(r) * k + j;
                out[i] = keep(r, j) ? from_float<T>(to_float(in[i]) * scale) : from_float<T>(0.0f);
            }
        T* o = dst.mpnpu_addr();
        for (uint64_t i = 0; i < n; ++i) o[i] = out[i];
        if (padded && mk != row_bytes) {  // the documented clean-up, in place: valid rows packed to the front
            mask.mpnpu_touch('W', P_V, 0, uint64_t(m) * row_bytes, site, name);
            for (uint32_t r = 1; r < m; ++r)
                for (uint64_t j = 0; j < row_bytes; ++j) mk_in[r * row_bytes + j] = mk_in[r * stride + j];
        }
    }
}

// The host helpers' element count: the source's. The pages pass {firstAxis, srcLastAxis, maskLastAxis};
// a shape of three dimensions is read so (the first two), any other as the source's own shape.
template <typename Shape>
inline uint64_t source_count(const Shape& s) {
    if (s.GetDimNum() == 3) {
        const int64_t n = s.GetDim(0) * s.GetDim(1);
        return n > 0 ? uint64_t(n) : 0u;
    }
    return lib::shape_count(s);
}

}  // namespace dropout
}  // namespace mpnpu

namespace AscendC {

template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
inline void DropOut(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint8_t>& maskLocal,
                    const float keepProb, const DropOutShapeInfo& info, MPNPU_SITE) {
    mpnpu::dropout::run<T, dropOutMode>(dstLocal, srcLocal, maskLocal, nullptr, keepProb, info, site);
}
template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
inline void DropOut(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint8_t>& maskLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const float keepProb, const DropOutShapeInfo& info,
                    MPNPU_SITE) {
    mpnpu::dropout::run<T, dropOutMode>(dstLocal, srcLocal, maskLocal, &sharedTmpBuffer, keepProb, info, site);
}

template <typename Shape>
inline uint32_t GetDropOutMaxTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource) {
    (void)isReuseSource;
    return mpnpu::lib::tmp_max(mpnpu::dropout::source_count(srcShape), typeSize, mpnpu::dropout::kNodes);
}
template <typename Shape>
inline uint32_t GetDropOutMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource) {
    (void)srcShape, (void)isReuseSource;
    return mpnpu::lib::tmp_min(typeSize, mpnpu::dropout::kNodes);
}
template <typename Shape>
inline void GetDropOutMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                    uint32_t& maxValue, uint32_t& minValue) {
    maxValue = GetDropOutMaxTmpSize(srcShape, typeSize, isReuseSource);
    minValue = GetDropOutMinTmpSize(srcShape, typeSize, isReuseSource);
}

}  // namespace AscendC

#endif  // MPNPU_DROPOUT_H
