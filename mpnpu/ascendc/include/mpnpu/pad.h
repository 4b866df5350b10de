// Pad and UnPad, the high-level library's width padding of a [height, width] tensor, on the vector
// unit, with their host helpers.
//
// Pad. The shape comes from the tiling (PadTilingFunc: srcShape [height, width] and the original
// shape's width). Two documented cases:
//   1. width not 32-byte aligned: the source is height rows of width elements back to back; each
//      destination row (the width rounded up to 32 bytes apart) is leftPad padValues, the source row,
//      rightPad padValues. leftPad + width + rightPad may not pass the aligned width; the rest of
//      each destination row is left as it was.
//   2. width aligned, with the columns from the original width on redundant: the destination is the
//      source with columns [oriWidth, oriWidth + rightPad) set to padValue (right padding only).
// A width already aligned with no redundant columns is refused, as documented; so are a pad past the
// aligned width, a left pad in case 2, and a source whose size is not 32-byte aligned.
// UnPad. The source is [height, width] (width 32-byte aligned, from UnPadTilingFunc's srcShape); the
// destination is height rows of width - rightPad elements back to back. rightPad must be in
// (0, one 32-byte block); leftPad is documented as not in effect yet: a non-zero one is refused.
// padValue (int32_t) is converted to T. T: int16_t, uint16_t, half, int32_t, uint32_t, float.
//
// The temporary buffer (mpnpu's model; the pages give the helpers only): one destination row at
// least (the aligned width in bytes), every row at most; a smaller sharedTmpBuffer, or one over an
// operand, is an API error; its used part is traced as written, then read. dst and src are separate
// operands. Everything on PIPE_V, one record per operand, memchecked.
#ifndef MPNPU_PAD_H
#define MPNPU_PAD_H

#include <cstdint>
#include <type_traits>
#include <vector>

#include "../graph/tensor_shape.h"
#include "../kernel_tiling/kernel_tiling.h"
#include "../tiling/platform/platform_ascendc.h"
#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {
struct PadParams {
    uint16_t leftPad = 0;
    uint16_t rightPad = 0;
    int32_t padValue = 0;
};
struct UnPadParams {
    uint16_t leftPad = 0;
    uint16_t rightPad = 0;
};
}  // namespace AscendC

namespace mpnpu {
namespace pad {

inline uint64_t aligned(uint64_t width, uint32_t type_size) {
    const uint64_t per = 32 / type_size;
    return (width + per - 1) / per * per;
}
inline uint64_t tmp_min(uint64_t width, uint32_t ts) { return aligned(width, ts) * ts; }
inline uint64_t tmp_max(uint64_t height, uint64_t width, uint32_t ts) { return height * aligned(width, ts) * ts; }

template <typename T>
inline void check_pair(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t dst_n,
                       uint64_t src_n, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t height, uint64_t width,
                       const Site& site, const char* name) {
    vec::check_operand(dst, 32, site, name, "dstTensor");
    vec::check_operand(src, 32, site, name, "srcTensor");
    vec::check_count(dst, dst_n, site, name, "dstTensor");
    vec::check_count(src, src_n, site, name, "srcTensor");
    const lib::Span d{dst.mpnpu_addr(), dst_n * sizeof(T), "dstTensor"}, s{src.mpnpu_addr(), src_n * sizeof(T),
                                                                           "srcTensor"};
    if (vec::overlaps(d.addr, d.bytes, s.addr, s.bytes))
        api_error(site, "%s: dstTensor and srcTensor overlap (the call takes separate operands)", name);
    if (!tmp) return;
    if (tmp->GetSize() < tmp_min(width, sizeof(T)))
        api_error(site, "%s: sharedTmpBuffer has %u bytes, below the minimum %llu (one row; the host helper's "
                  "minValue)", name, tmp->GetSize(), (unsigned long long)tmp_min(width, sizeof(T)));
    const uint64_t used = lib::check_scratch(*tmp, tmp_max(height, width, sizeof(T)), {d, s}, site, name,
                                             "sharedTmpBuffer");
    src.mpnpu_touch('R', P_V, 0, src_n, site, name);
    lib::trace_scratch(*tmp, used, site, name);
}

template <typename T>
inline void pad(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                const AscendC::PadParams& params, const AscendC::LocalTensor<uint8_t>* tmp,
                const ::PadTiling& tiling, const Site& site) {
    const char* name = "Pad";
    vec::start(site, name);
    const uint64_t h = tiling.srcHeight, w = tiling.srcWidth, ow = tiling.srcOriWidth ? tiling.srcOriWidth : w;
    const uint64_t aw = aligned(w, sizeof(T)), l = params.leftPad, r = params.rightPad;
    if (!h || !w) api_error(site, "%s: the tiling gives no shape (PadTilingFunc fills it)", name);
    const bool case1 = aw != w;
    if (!case1 && ow >= w)
        api_error(site, "%s: width %llu is 32-byte aligned with no redundant columns: nothing to pad (documented)",
                  name, (unsigned long long)w);
    if ((h * w * sizeof(T)) % 32)
        api_error(site, "%s: the source's %llu bytes are not 32-byte aligned (documented)", name,
                  (unsigned long long)(h * w * sizeof(T)));
    if (case1 && l + w + r > aw)
        api_error(site, "%s: leftPad %llu + width %llu + rightPad %llu is past the aligned width %llu", name,
                  (unsigned long long)l, (unsigned long long)w, (unsigned long long)r, (unsigned long long)aw);
    if (!case1 && (l || ow + r > w))
        api_error(site, "%s: an aligned width with redundant columns takes a right pad only, within the width "
                  "(leftPad %llu, oriWidth %llu + rightPad %llu, width %llu)", name, (unsigned long long)l,
                  (unsigned long long)ow, (unsigned long long)r, (unsigned long long)w);
    const uint64_t n = h * aw;
    check_pair(dst, src, n, h * w, tmp, h, w, site, name);
    if (!tmp) src.mpnpu_touch('R', P_V, 0, h * w, site, name);
    const T* in = src.mpnpu_addr();
    T* out = dst.mpnpu_addr();
    T value;
    if constexpr (is_floating_v<T>) value = from_float<T>(float(params.padValue));
    else value = static_cast<T>(params.padValue);
    if (case1) {
        const uint64_t row = l + w + r;
        std::vector<T> rows(h * row);
        for (uint64_t i = 0; i < h; ++i)
            for (uint64_t j = 0; j < row; ++j)
                rows[i * row + j] = (j < l || j >= l + w) ? value : in[i * w + j - l];
        for (uint64_t i = 0; i < h; ++i) {  // (each row's written part: one record a row)
            dst.mpnpu_touch('W', P_V, i * aw, row, site, name);
            for (uint64_t j = 0; j < row; ++j) out[i * aw + j] = rows[i * row + j];
        }
    } else {
        std::vector<T> all(in, in + n);
        for (uint64_t i = 0; i < h; ++i)
            for (uint64_t j = ow; j < ow + r; ++j) all[i * w + j] = value;
        dst.mpnpu_touch('W', P_V, 0, n, site, name);
        for (uint64_t i = 0; i < n; ++i) out[i] = all[i];
    }
}

template <typename T>
inline void unpad(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                  const AscendC::UnPadParams& params, const AscendC::LocalTensor<uint8_t>* tmp,
                  const ::UnPadTiling& tiling, const Site& site) {
    const char* name = "UnPad";
    vec::start(site, name);
    const uint64_t h = tiling.srcHeight, w = tiling.srcWidth, r = params.rightPad;
    if (!h || !w) api_error(site, "%s: the tiling gives no shape (UnPadTilingFunc fills it)", name);
    if ((w * sizeof(T)) % 32)
        api_error(site, "%s: width %llu is not 32-byte aligned (documented: only an aligned width is unpadded)",
                  name, (unsigned long long)w);
    if (params.leftPad)
        api_error(site, "%s: leftPad %u: a left unpad is documented as not in effect yet (right only)", name,
                  unsigned(params.leftPad));
    if (!r || r >= 32 / sizeof(T))
        api_error(site, "%s: rightPad %llu must be above 0 and below one 32-byte block (%u elements)", name,
                  (unsigned long long)r, unsigned(32 / sizeof(T)));
    const uint64_t ow = w - r;
    check_pair(dst, src, h * ow, h * w, tmp, h, w, site, name);
    if (!tmp) src.mpnpu_touch('R', P_V, 0, h * w, site, name);
    const T* in = src.mpnpu_addr();
    std::vector<T> out(h * ow);
    for (uint64_t i = 0; i < h; ++i)
        for (uint64_t j = 0; j < ow; ++j) out[i * ow + j] = in[i * w + j];
    dst.mpnpu_touch('W', P_V, 0, h * ow, site, name);
    T* o = dst.mpnpu_addr();
    for (uint64_t i = 0; i < h * ow; ++i) o[i] = out[i];
}

inline void shape_hw(const ge::Shape& s, uint32_t& h, uint32_t& w) {
    h = s.GetDim(0) > 0 ? uint32_t(s.GetDim(0)) : 0;
    w = s.GetDim(1) > 0 ? uint32_t(s.GetDim(1)) : 0;
}
inline void max_min(const ge::Shape& s, uint32_t ts, uint32_t& maxValue, uint32_t& minValue) {
    uint32_t h = 0, w = 0;
    shape_hw(s, h, w);
    const bool ok = ts == 1 || ts == 2 || ts == 4;
    maxValue = ok ? uint32_t(tmp_max(h, w, ts)) : 0;
    minValue = ok ? uint32_t(tmp_min(w, ts)) : 0;
}

template <typename T>
constexpr bool type_ok = vec::one_of<T, int16_t, uint16_t, half, int32_t, uint32_t, float>;

}  // namespace pad
}  // namespace mpnpu

namespace AscendC {

#define MPNPU_PAD_TYPE_CHECK(NAME)                                                                           \
    static_assert(mpnpu::pad::type_ok<T>, NAME ": the data type must be int16_t, uint16_t, half, int32_t, " \
                  "uint32_t or float")
template <typename T>
inline void Pad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, PadParams& padParams,
                const LocalTensor<uint8_t>& sharedTmpBuffer, PadTiling& tiling, MPNPU_SITE) {
    MPNPU_PAD_TYPE_CHECK("Pad");
    mpnpu::pad::pad(dstTensor, srcTensor, padParams, &sharedTmpBuffer, tiling, site);
}
template <typename T>
inline void Pad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, PadParams& padParams,
                PadTiling& tiling, MPNPU_SITE) {
    MPNPU_PAD_TYPE_CHECK("Pad");
    mpnpu::pad::pad(dstTensor, srcTensor, padParams, nullptr, tiling, site);
}
template <typename T>
inline void UnPad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, UnPadParams& unPadParams,
                  LocalTensor<uint8_t>& sharedTmpBuffer, UnPadTiling& tiling, MPNPU_SITE) {
    MPNPU_PAD_TYPE_CHECK("UnPad");
    mpnpu::pad::unpad(dstTensor, srcTensor, unPadParams, &sharedTmpBuffer, tiling, site);
}
template <typename T>
inline void UnPad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, UnPadParams& unPadParams,
                  UnPadTiling& tiling, MPNPU_SITE) {
    MPNPU_PAD_TYPE_CHECK("UnPad");
    mpnpu::pad::unpad(dstTensor, srcTensor, unPadParams, nullptr, tiling, site);
}
#undef MPNPU_PAD_TYPE_CHECK

// -- host helpers ---------------------------------------------------------------------------------------------
inline void GetPadMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                uint32_t& minValue) {
    mpnpu::pad::max_min(srcShape, typeSize, maxValue, minValue);
}
inline void PadTilingFunc(const TensorShape srcShape, const TensorShape oriSrcShape, const uint32_t stackBufferSize,
                          const uint32_t typeSize, PadTiling& tiling) {
    (void)typeSize;
    mpnpu::pad::shape_hw(srcShape, tiling.srcHeight, tiling.srcWidth);
    mpnpu::pad::shape_hw(oriSrcShape, tiling.srcOriHeight, tiling.srcOriWidth);
    tiling.tmpBufSize = stackBufferSize;
}
inline void GetUnPadMaxMinTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform,
                                  const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                  uint32_t& minValue) {
    (void)ascendcPlatform;
    mpnpu::pad::max_min(srcShape, typeSize, maxValue, minValue);
}
inline void UnPadTilingFunc(const TensorShape srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                            UnPadTiling& tiling) {
    (void)typeSize;
    mpnpu::pad::shape_hw(srcShape, tiling.srcHeight, tiling.srcWidth);
    tiling.tmpBufSize = stackBufferSize;
}

}  // namespace AscendC

#endif  // MPNPU_PAD_H
