// SelectWithBytesMask: the high-level select by a mask of whole elements (not bits), on the vector unit.
//
// The source is [firstAxis, srcLastAxis] and the mask [firstAxis, maskLastAxis] (maskLastAxis >=
// srcLastAxis; each mask row's elements past srcLastAxis take no part). With a tensor src0 and a
// scalar src1: dst = mask == 0 ? src0 : src1; with a scalar src0 and a tensor src1: dst = mask == 0 ?
// src0 : src1 the other way round. T is half or float; the mask's U is bool or an 8-, 16- or 32-bit
// integer. Documented: the source's last axis 32-byte aligned, the mask's 32-byte aligned and a
// multiple of 16 elements; dst may be the source tensor (reused); the caller's sharedTmpBuffer is the
// scratch. The documentation also wants the two shapes to be the tensors' whole sizes; mpnpu only
// checks that they fit in them (a kernel passing a larger buffer is not refused).
//
// isReuseMask (default true): the call may rewrite the mask when its rows are longer than the
// source's. mpnpu does what the documented steps do: it packs each mask row's first srcLastAxis
// elements to the front of the mask (rows back to back), a write of the mask on PIPE_V, so a kernel
// that reads its mask again afterwards sees what it would see on the device. With isReuseMask false,
// or rows of equal length, the mask is only read.
//
// Every access is on PIPE_V; the sharedTmpBuffer's first 4 bytes per source element (at most its size)
// are traced as written and read; misuse is an API error at the kernel's line.
#ifndef MPNPU_SELECT_BYTES_MASK_H
#define MPNPU_SELECT_BYTES_MASK_H

#include <cstdint>
#include <type_traits>
#include <vector>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

// The shapes of a SelectWithBytesMask call: rows, the source's row length and the mask's.
struct SelectWithBytesMaskShapeInfo {
    SelectWithBytesMaskShapeInfo() {}
    uint32_t firstAxis = 0;
    uint32_t srcLastAxis = 0;
    uint32_t maskLastAxis = 0;
};

}  // namespace AscendC

namespace mpnpu {
namespace bytes_mask {

template <typename U>
constexpr bool mask_type_ok = vec::one_of<U, bool, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t>;

// tensor_first: the tensor is src0 (mask 0 picks it) or src1 (mask 0 picks the scalar).
template <typename T, typename U, bool reuse_mask>
inline void select(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, T scalar,
                   bool tensor_first, const AscendC::LocalTensor<U>& mask, const AscendC::LocalTensor<uint8_t>& tmp,
                   const AscendC::SelectWithBytesMaskShapeInfo& info, const Site& site,
                   const char* name = "SelectWithBytesMask") {
    vec::start(site, name);
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        const uint32_t m = info.firstAxis, k = info.srcLastAxis, mk = info.maskLastAxis;
        if ((uint64_t(k) * sizeof(T)) % 32)
            api_error(site, "%s: srcLastAxis %u is not 32-byte aligned (%u elements of %s make a block)", name, k,
                      unsigned(32 / sizeof(T)), vec::type_name<T>());
        if ((uint64_t(mk) * sizeof(U)) % 32 || mk % 16)
            api_error(site, "%s: maskLastAxis %u must be 32-byte aligned and a multiple of 16 elements", name, mk);
        if (mk < k)
            api_error(site, "%s: maskLastAxis %u is shorter than srcLastAxis %u (each mask row covers a source row)",
                      name, mk, k);
        const uint64_t n = uint64_t(m) * k, bytes = n * sizeof(T);
        vec::check_operand(dst, 32, site, name, "dst");
        vec::check_operand(src, 32, site, name, "the source tensor");
        vec::check_operand(mask, 32, site, name, "mask");
        vec::check_operand(tmp, 32, site, name, "sharedTmpBuffer");
        vec::check_count(src, n, site, name, "the source tensor");
        vec::check_count(dst, n, site, name, "dst");
        vec::check_count(mask, uint64_t(m) * mk, site, name, "mask");
        const void* s = src.mpnpu_addr();
        const void* d = dst.mpnpu_addr();
        if (s != d && vec::overlaps(s, bytes, d, bytes))
            api_error(site, "%s: dst and the source tensor overlap without being the same tensor", name);
        const uint64_t mask_bytes = uint64_t(m) * mk * sizeof(U);
        for (const void* t : {s, d})
            if (vec::overlaps(mask.mpnpu_addr(), mask_bytes, t, bytes))
                api_error(site, "%s: mask overlaps dst or the source tensor", name);
        for (const void* t : {s, d, static_cast<const void*>(mask.mpnpu_addr())})
            if (vec::overlaps(tmp.mpnpu_addr(), tmp.GetSize(), t, t == mask.mpnpu_addr() ? mask_bytes : bytes))
                api_error(site, "%s: sharedTmpBuffer overlaps an operand (the call takes separate operands)", name);
        if (n == 0) return;
        const uint64_t tmp_used = n * 4 < tmp.GetSize() ? n * 4 : tmp.GetSize();
        src.mpnpu_touch('R', P_V, 0, n, site, name);
        mask.mpnpu_touch('R', P_V, 0, uint64_t(m) * mk, site, name);
        if (tmp_used) {
            tmp.mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
            tmp.mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
        }
        const T* in = src.mpnpu_addr();
        U* mk_in = mask.mpnpu_addr();
        std::vector<T> out(n);
        for (uint32_t r = 0; r < m; ++r)
            for (uint32_t j = 0; j < k; ++j) {
                const bool zero = mk_in[uint64_t(r) * mk + j] == U(0);
                const T t = in[uint64_t(r) * k + j];
                out[uint64_t(r) * k + j] = tensor_first ? (zero ? t : scalar) : (zero ? scalar : t);
            }
        dst.mpnpu_touch('W', P_V, 0, n, site, name);
        T* o = dst.mpnpu_addr();
        for (uint64_t i = 0; i < n; ++i) o[i] = out[i];
        if (reuse_mask && mk != k) {  // the documented GatherMask step, in place: rows packed to the front
            mask.mpnpu_touch('W', P_V, 0, n, site, name);
            for (uint32_t r = 1; r < m; ++r)
                for (uint32_t j = 0; j < k; ++j) mk_in[uint64_t(r) * k + j] = mk_in[uint64_t(r) * mk + j];
        }
    }
}

}  // namespace bytes_mask
}  // namespace mpnpu

namespace AscendC {

// src0 a tensor, src1 a scalar: mask 0 takes src0.
template <typename T, typename U, bool isReuseMask = true>
inline void SelectWithBytesMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, T src1,
                                const LocalTensor<U>& mask, const LocalTensor<uint8_t>& sharedTmpBuffer,
                                const SelectWithBytesMaskShapeInfo& info, MPNPU_SITE) {
    static_assert(mpnpu::bytes_mask::mask_type_ok<U>,
                  "SelectWithBytesMask: the mask is bool, int8_t, uint8_t, int16_t, uint16_t, int32_t or uint32_t");
    mpnpu::bytes_mask::select<T, U, isReuseMask>(dst, src0, src1, true, mask, sharedTmpBuffer, info, site);
}
// src0 a scalar, src1 a tensor: mask 0 takes src0.
template <typename T, typename U, bool isReuseMask = true>
inline void SelectWithBytesMask(const LocalTensor<T>& dst, T src0, const LocalTensor<T>& src1,
                                const LocalTensor<U>& mask, const LocalTensor<uint8_t>& sharedTmpBuffer,
                                const SelectWithBytesMaskShapeInfo& info, MPNPU_SITE) {
    static_assert(mpnpu::bytes_mask::mask_type_ok<U>,
                  "SelectWithBytesMask: the mask is bool, int8_t, uint8_t, int16_t, uint16_t, int32_t or uint32_t");
    mpnpu::bytes_mask::select<T, U, isReuseMask>(dst, src1, src0, false, mask, sharedTmpBuffer, info, site);
}

// Select with a SelectWithBytesMaskShapeInfo: the library's newer name for the same call (the pages'
// Select of the data-filter group); identical behaviour, errors name Select.
template <typename T, typename U, bool isReuseMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, T src1, const LocalTensor<U>& mask,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info, MPNPU_SITE) {
    static_assert(mpnpu::bytes_mask::mask_type_ok<U>,
                  "Select: the mask is bool, int8_t, uint8_t, int16_t, uint16_t, int32_t or uint32_t");
    mpnpu::bytes_mask::select<T, U, isReuseMask>(dst, src0, src1, true, mask, sharedTmpBuffer, info, site, "Select");
}
template <typename T, typename U, bool isReuseMask = true>
inline void Select(const LocalTensor<T>& dst, T src0, const LocalTensor<T>& src1, const LocalTensor<U>& mask,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info, MPNPU_SITE) {
    static_assert(mpnpu::bytes_mask::mask_type_ok<U>,
                  "Select: the mask is bool, int8_t, uint8_t, int16_t, uint16_t, int32_t or uint32_t");
    mpnpu::bytes_mask::select<T, U, isReuseMask>(dst, src1, src0, false, mask, sharedTmpBuffer, info, site, "Select");
}

// The host helpers (also under their deprecated SelectWithBytesMask names). mpnpu's model of the
// scratch: 4 bytes per source element (what the call traces), at most; the call needs none to be
// correct, so the minimum is 0 ("no buffer needed", as the pages put it). The source is the larger of
// src0Shape and src1Shape (the scalar's shape is {1}).
template <typename Shape>
inline uint32_t GetSelectMaxTmpSize(const Shape& src0Shape, const Shape& src1Shape, const uint32_t srcTypeSize,
                                    const Shape& maskShape, const uint32_t maskTypeSize, const bool isReuseMask) {
    (void)srcTypeSize, (void)maskShape, (void)maskTypeSize, (void)isReuseMask;
    const int64_t a = src0Shape.GetShapeSize(), b = src1Shape.GetShapeSize();
    const int64_t n = a > b ? a : b;
    return n > 0 ? uint32_t(uint64_t(n) * 4 > UINT32_MAX ? UINT32_MAX : uint64_t(n) * 4) : 0u;
}
template <typename Shape>
inline uint32_t GetSelectMinTmpSize(const Shape&, const Shape&, const uint32_t, const Shape&, const uint32_t,
                                    const bool) {
    return 0;
}
template <typename Shape>
inline void GetSelectMaxMinTmpSize(const Shape& src0Shape, const Shape& src1Shape, const uint32_t srcTypeSize,
                                   const Shape& maskShape, const uint32_t maskTypeSize, const bool isReuseMask,
                                   uint32_t& maxValue, uint32_t& minValue) {
    maxValue = GetSelectMaxTmpSize(src0Shape, src1Shape, srcTypeSize, maskShape, maskTypeSize, isReuseMask);
    minValue = GetSelectMinTmpSize(src0Shape, src1Shape, srcTypeSize, maskShape, maskTypeSize, isReuseMask);
}
template <typename Shape>
inline uint32_t GetSelectWithBytesMaskMaxTmpSize(const Shape& src0Shape, const Shape& src1Shape,
                                                 const uint32_t srcTypeSize, const Shape& maskShape,
                                                 const uint32_t maskTypeSize, const bool isReuseMask) {
    return GetSelectMaxTmpSize(src0Shape, src1Shape, srcTypeSize, maskShape, maskTypeSize, isReuseMask);
}
template <typename Shape>
inline uint32_t GetSelectWithBytesMaskMinTmpSize(const Shape& src0Shape, const Shape& src1Shape,
                                                 const uint32_t srcTypeSize, const Shape& maskShape,
                                                 const uint32_t maskTypeSize, const bool isReuseMask) {
    return GetSelectMinTmpSize(src0Shape, src1Shape, srcTypeSize, maskShape, maskTypeSize, isReuseMask);
}
template <typename Shape>
inline void GetSelectWithBytesMaskMaxMinTmpSize(const Shape& src0Shape, const Shape& src1Shape,
                                                const uint32_t srcTypeSize, const Shape& maskShape,
                                                const uint32_t maskTypeSize, const bool isReuseMask,
                                                uint32_t& maxValue, uint32_t& minValue) {
    GetSelectMaxMinTmpSize(src0Shape, src1Shape, srcTypeSize, maskShape, maskTypeSize, isReuseMask, maxValue,
                           minValue);
}

}  // namespace AscendC

#endif  // MPNPU_SELECT_BYTES_MASK_H
