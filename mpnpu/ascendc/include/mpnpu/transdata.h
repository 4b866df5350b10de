// TransData, the library's layout conversion between NCDHW and the split-channel formats, with its
// host helper GetTransDataMaxMinTmpSize.
//
// The four conversions this chip class documents (TransDataConfig {srcFormat, dstFormat}); C0 = N0 = 16
// (16-bit elements), C1 = ceil(C / 16), N1 = ceil(N / 16), HWp = H x W rounded up to 16 (32 bytes):
//
//   NCDHW        -> NDC1HWC0       dst[n][d][c1][h][w][c0]         = src[n][c1*16+c0][d][hw]
//   NDC1HWC0     -> NCDHW          dst[n][c][d][hw]                = src[n][d][c/16][h][w][c%16]
//   NCDHW        -> FRACTAL_Z_3D   dst[d][c1][h][w][n1][n0][c0]    = src[n1*16+n0][c1*16+c0][d][hw]
//   FRACTAL_Z_3D -> NCDHW          dst[n][c][d][hw]                = src[d][c/16][h][w][n/16][n%16][c%16]
//
// An NCDHW operand lies in UB as [N, C, D, HWp]: each (n, c, d) row of H x W elements padded to 32
// bytes (the pages: the caller pads an NCDHW source, the call pads an NCDHW result; the layouts carry
// the unpadded shape). The padding of a source is not read; the padding of a result, and the channels
// (and kernels, for FRACTAL_Z_3D) past C (N) in a split-channel result, are written as zeros.
//
// params.srcLayout / params.dstLayout are Layouts (MakeLayout(MakeShape(...), MakeStride())): only
// their shapes are read, NCDHW (N, C, D, H, W), NDC1HWC0 (N, D, C1, H, W, C0), FRACTAL_Z_3D (D, C1, H,
// W, N1, N0, C0). A shape of the wrong rank, or a conversion other than the four, is a compile-time
// error; each other check is an API error at the kernel's line: T int16_t, uint16_t, half or
// bfloat16_t; every dimension above 0; the destination's shape the one the source's implies (C1, N1,
// C0 = N0 = 16, the same N, D, H, W); both operands (and the buffer) in UB, 32-byte aligned, holding
// their element counts; source and destination not overlapping.
//
// The temporary buffer (mpnpu's model; the pages give no formula, and GetTransDataMaxMinTmpSize's
// maximum equals its minimum): the sizes the dev kit's transdata sample reserves, in elements of T,
//   NCDHW -> NDC1HWC0      D x HWp + D x C1 x 16 x HWp
//   NDC1HWC0 -> NCDHW      512 + D x C1 x 16 x HWp
//   NCDHW -> FRACTAL_Z_3D  C x D x HWp + N1 x 16 x D x C1 x 16 x HWp
//   FRACTAL_Z_3D -> NCDHW  D x C1 x HWp x N1 x 16 x 16, twice that when C or N is not a multiple of 16
// times sizeof(T) bytes. A sharedTmpBuffer smaller than that is an API error; its used part must not
// overlap either operand, and is traced as written and read on PIPE_V. The form without a buffer
// (the framework's) needs nothing of the caller here. Accesses, in order: srcTensor read, the
// scratch, dstTensor written; PIPE_V, one contiguous record each.
#ifndef MPNPU_TRANSDATA_H
#define MPNPU_TRANSDATA_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../graph/tensor_shape.h"
#include "../tiling/platform/platform_ascendc.h"
#include "layout.h"
#include "lib_types.h"
#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

struct TransDataConfig {
    DataFormat srcFormat;
    DataFormat dstFormat;
};

template <typename T, typename U>
struct TransDataParams {
    T srcLayout;
    U dstLayout;
};

}  // namespace AscendC

namespace mpnpu {
namespace transdata {

constexpr uint64_t C0 = 16;

// 1 NCDHW -> NDC1HWC0, 2 NDC1HWC0 -> NCDHW, 3 NCDHW -> FRACTAL_Z_3D, 4 FRACTAL_Z_3D -> NCDHW, 0 other.
constexpr int kind_of(AscendC::DataFormat src, AscendC::DataFormat dst) {
    using F = AscendC::DataFormat;
    if (src == F::NCDHW && dst == F::NDC1HWC0) return 1;
    if (src == F::NDC1HWC0 && dst == F::NCDHW) return 2;
    if (src == F::NCDHW && dst == F::FRACTAL_Z_3D) return 3;
    if (src == F::FRACTAL_Z_3D && dst == F::NCDHW) return 4;
    return 0;
}

constexpr size_t rank_of(AscendC::DataFormat f) {
    using F = AscendC::DataFormat;
    return f == F::NCDHW ? 5 : f == F::NDC1HWC0 ? 6 : f == F::FRACTAL_Z_3D ? 7 : 0;
}

constexpr const char* format_name(AscendC::DataFormat f) {
    using F = AscendC::DataFormat;
    return f == F::NCDHW ? "NCDHW" : f == F::NDC1HWC0 ? "NDC1HWC0" : f == F::FRACTAL_Z_3D ? "FRACTAL_Z_3D" : "?";
}

inline uint64_t ceil16(uint64_t x) { return (x + C0 - 1) / C0; }

// The NCDHW dimensions a conversion works on, and its element counts and scratch bytes.
struct Dims {
    uint64_t n, c, d, h, w;
    uint64_t c1() const { return ceil16(c); }
    uint64_t n1() const { return ceil16(n); }
    uint64_t hwp() const { return ceil16(h * w) * C0; }
    uint64_t ncdhw_elems() const { return n * c * d * hwp(); }
    uint64_t ndc1hwc0_elems() const { return n * d * c1() * h * w * C0; }
    uint64_t fz3d_elems() const { return d * c1() * h * w * n1() * C0 * C0; }
};

inline uint64_t tmp_elems(int kind, const Dims& x) {
    switch (kind) {
    case 1: return x.d * x.hwp() + x.d * x.c1() * C0 * x.hwp();
    case 2: return 512 + x.d * x.c1() * C0 * x.hwp();
    case 3: return x.c * x.d * x.hwp() + x.n1() * C0 * x.d * x.c1() * C0 * x.hwp();
    case 4: return x.d * x.c1() * x.hwp() * x.n1() * C0 * C0 * (x.c % C0 == 0 && x.n % C0 == 0 ? 1 : 2);
    default: return 0;
    }
}

// The NCDHW dimensions from the split-channel side's shape (the one the destination must match).
inline void expected_split(int kind, const Dims& x, uint64_t out[7]) {
    if (kind == 1 || kind == 2) {
        const uint64_t v[6] = {x.n, x.d, x.c1(), x.h, x.w, C0};
        for (int i = 0; i < 6; ++i) out[i] = v[i];
    } else {
        const uint64_t v[7] = {x.d, x.c1(), x.h, x.w, x.n1(), C0, C0};
        for (int i = 0; i < 7; ++i) out[i] = v[i];
    }
}

template <typename Tuple, size_t... I>
inline void dims_of(const Tuple& t, int64_t* out, std::index_sequence<I...>) {
    ((out[I] = static_cast<int64_t>(std::get<I>(t))), ...);
}

inline void shape_text(char* buf, size_t len, const int64_t* v, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && at < len; ++i)
        at += size_t(snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", (long long)v[i]));
}

template <typename T, int kind>
inline void convert(T* out, const T* in, const Dims& x) {
    const uint64_t hw = x.h * x.w, hwp = x.hwp(), c1 = x.c1(), n1 = x.n1();
    const uint64_t out_elems = kind == 1 ? x.ndc1hwc0_elems() : kind == 3 ? x.fz3d_elems() : x.ncdhw_elems();
    std::memset(static_cast<void*>(out), 0, out_elems * sizeof(T));
    for (uint64_t n = 0; n < x.n; ++n)
        for (uint64_t c = 0; c < x.c; ++c)
            for (uint64_t d = 0; d < x.d; ++d)
                for (uint64_t p = 0; p < hw; ++p) {
                    const uint64_t ncdhw = ((n * x.c + c) * x.d + d) * hwp + p;
                    const uint64_t cb = c / C0, ci = c % C0, nb = n / C0, ni = n % C0;
                    const uint64_t split = kind <= 2 ? (((n * x.d + d) * c1 + cb) * hw + p) * C0 + ci
                                                     : ((((d * c1 + cb) * hw + p) * n1 + nb) * C0 + ni) * C0 + ci;
                    if (kind == 1 || kind == 3) out[split] = in[ncdhw];
                    else out[ncdhw] = in[split];
                }
}

template <const AscendC::TransDataConfig& config, typename T, typename U, typename S>
inline void run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::TransDataParams<U, S>& params,
                const Site& site) {
    constexpr int kind = kind_of(config.srcFormat, config.dstFormat);
    static_assert(kind != 0,
                  "TransData: this chip class converts NCDHW <-> NDC1HWC0 and NCDHW <-> FRACTAL_Z_3D only "
                  "(TransDataConfig {srcFormat, dstFormat})");
    static_assert(AscendC::is_layout<U>::value && AscendC::is_layout<S>::value,
                  "TransData: params.srcLayout and params.dstLayout must be Layouts (MakeLayout)");
    using SrcShape = std::decay_t<decltype(params.srcLayout.GetShape())>;
    using DstShape = std::decay_t<decltype(params.dstLayout.GetShape())>;
    constexpr size_t srcRank = std::tuple_size_v<SrcShape>, dstRank = std::tuple_size_v<DstShape>;
    static_assert(kind == 0 || srcRank == rank_of(config.srcFormat),
                  "TransData: params.srcLayout's shape has the wrong rank for config.srcFormat (NCDHW 5, "
                  "NDC1HWC0 6, FRACTAL_Z_3D 7)");
    static_assert(kind == 0 || dstRank == rank_of(config.dstFormat),
                  "TransData: params.dstLayout's shape has the wrong rank for config.dstFormat (NCDHW 5, "
                  "NDC1HWC0 6, FRACTAL_Z_3D 7)");
    const char* name = "TransData";
    vec::need_type<T>(vec::one_of<T, int16_t, uint16_t, half, bfloat16_t>, site, name,
                      "int16_t, uint16_t, half, bfloat16_t");
    if constexpr (kind != 0 && vec::one_of<T, int16_t, uint16_t, half, bfloat16_t>) {
        vec::start(site, name);
        int64_t sd[8] = {0}, dd[8] = {0};
        dims_of(params.srcLayout.GetShape(), sd, std::make_index_sequence<srcRank>{});
        dims_of(params.dstLayout.GetShape(), dd, std::make_index_sequence<dstRank>{});
        char a[160], b[160];
        for (size_t i = 0; i < srcRank; ++i)
            if (sd[i] <= 0) {
                shape_text(a, sizeof a, sd, srcRank);
                api_error(site, "TransData: params.srcLayout's shape (%s): every dimension must be above 0", a);
            }
        // The NCDHW dimensions, from whichever side is NCDHW.
        const int64_t* nc = (kind == 1 || kind == 3) ? sd : dd;
        const int64_t* sp = (kind == 1 || kind == 3) ? dd : sd;
        const size_t spRank = (kind == 1 || kind == 3) ? dstRank : srcRank;
        Dims x{0, 0, 0, 0, 0};
        if (kind == 1 || kind == 3) {
            x = Dims{uint64_t(nc[0]), uint64_t(nc[1]), uint64_t(nc[2]), uint64_t(nc[3]), uint64_t(nc[4])};
        } else {
            // From the split-channel source and the NCDHW destination (C and N come from the latter).
            for (size_t i = 0; i < dstRank; ++i)
                if (dd[i] <= 0) {
                    shape_text(a, sizeof a, dd, dstRank);
                    api_error(site, "TransData: params.dstLayout's shape (%s): every dimension must be above 0", a);
                }
            x = Dims{uint64_t(dd[0]), uint64_t(dd[1]), uint64_t(dd[2]), uint64_t(dd[3]), uint64_t(dd[4])};
        }
        uint64_t want[7];
        expected_split(kind, x, want);
        for (size_t i = 0; i < spRank; ++i)
            if (uint64_t(sp[i]) != want[i] || sp[i] <= 0) {
                const bool srcSplit = kind == 2 || kind == 4;
                int64_t w[7];
                for (size_t k = 0; k < spRank; ++k) w[k] = int64_t(want[k]);
                shape_text(a, sizeof a, sp, spRank);
                shape_text(b, sizeof b, w, spRank);
                api_error(site,
                          "TransData: params.%s's shape (%s) is not the %s shape (%s) of the NCDHW shape (%llu, "
                          "%llu, %llu, %llu, %llu) (C1 = ceil(C / 16), N1 = ceil(N / 16), C0 = N0 = 16)",
                          srcSplit ? "srcLayout" : "dstLayout", a,
                          format_name(srcSplit ? config.srcFormat : config.dstFormat), b,
                          (unsigned long long)x.n, (unsigned long long)x.c, (unsigned long long)x.d,
                          (unsigned long long)x.h, (unsigned long long)x.w);
            }
        const uint64_t splitElems = (kind <= 2) ? x.ndc1hwc0_elems() : x.fz3d_elems();
        const uint64_t srcElems = (kind == 1 || kind == 3) ? x.ncdhw_elems() : splitElems;
        const uint64_t dstElems = (kind == 1 || kind == 3) ? splitElems : x.ncdhw_elems();
        vec::check_operand(dst, 32, site, name, "dstTensor");
        vec::check_operand(src, 32, site, name, "srcTensor");
        vec::check_count(dst, dstElems, site, name, "dstTensor");
        vec::check_count(src, srcElems, site, name, "srcTensor");
        if (vec::overlaps(dst.mpnpu_addr(), dstElems * sizeof(T), src.mpnpu_addr(), srcElems * sizeof(T)))
            api_error(site, "TransData: dstTensor overlaps srcTensor (not supported)");
        uint64_t used = 0;
        if (tmp) {
            const uint64_t need = tmp_elems(kind, x) * sizeof(T);
            used = lib::check_scratch(*tmp, need,
                                      {lib::span_of(src, srcElems, "srcTensor"), lib::span_of(dst, dstElems, "dstTensor")},
                                      site, name, "sharedTmpBuffer");
            if (used < need)
                api_error(site, "TransData: sharedTmpBuffer has %llu bytes, below the minimum %llu "
                          "(GetTransDataMaxMinTmpSize)", (unsigned long long)(uint64_t(tmp->GetSize())),
                          (unsigned long long)need);
        }
        src.mpnpu_touch('R', P_V, 0, srcElems, site, name);
        if (tmp) lib::trace_scratch(*tmp, used, site, name);
        dst.mpnpu_touch('W', P_V, 0, dstElems, site, name);
        convert<T, kind>(dst.mpnpu_addr(), src.mpnpu_addr(), x);
    }
}

}  // namespace transdata
}  // namespace mpnpu

namespace AscendC {

template <const TransDataConfig& config, typename T, typename U, typename S>
inline void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const TransDataParams<U, S>& params,
                      MPNPU_SITE) {
    mpnpu::transdata::run<config>(dstTensor, srcTensor, &sharedTmpBuffer, params, site);
}

template <const TransDataConfig& config, typename T, typename U, typename S>
inline void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const TransDataParams<U, S>& params, MPNPU_SITE) {
    mpnpu::transdata::run<config>(dstTensor, srcTensor, nullptr, params, site);
}

// The host helper: false (nothing set) for a conversion, shape pair or element type TransData does not
// take. The shapes are the layouts' (unpadded); the element types are the kernel's 16-bit ones.
#pragma push_macro("DT_BF16")
#undef DT_BF16
inline bool GetTransDataMaxMinTmpSize(const platform_ascendc::PlatformAscendC& platform,
                                      const AscendC::TensorShape& srcShape, const AscendC::TensorShape& dstShape,
                                      const AscendC::TensorDataType dataType, const TransDataConfig& config,
                                      uint32_t& maxValue, uint32_t& minValue) {
    (void)platform;
    using namespace mpnpu::transdata;
    const int kind = kind_of(config.srcFormat, config.dstFormat);
    if (!kind || (dataType != ge::DT_FLOAT16 && dataType != ge::DT_BF16 && dataType != ge::DT_INT16 &&
                  dataType != ge::DT_UINT16))
        return false;
    if (srcShape.GetDimNum() != rank_of(config.srcFormat) || dstShape.GetDimNum() != rank_of(config.dstFormat))
        return false;
    const AscendC::TensorShape& nc = (kind == 1 || kind == 3) ? srcShape : dstShape;
    const AscendC::TensorShape& sp = (kind == 1 || kind == 3) ? dstShape : srcShape;
    for (size_t i = 0; i < 5; ++i)
        if (nc.GetDim(i) <= 0) return false;
    const Dims x{uint64_t(nc.GetDim(0)), uint64_t(nc.GetDim(1)), uint64_t(nc.GetDim(2)), uint64_t(nc.GetDim(3)),
                 uint64_t(nc.GetDim(4))};
    uint64_t want[7];
    expected_split(kind, x, want);
    for (size_t i = 0; i < sp.GetDimNum(); ++i)
        if (sp.GetDim(i) <= 0 || uint64_t(sp.GetDim(i)) != want[i]) return false;
    const uint64_t bytes = tmp_elems(kind, x) * 2;
    maxValue = minValue = bytes > UINT32_MAX ? UINT32_MAX : uint32_t(bytes);
    return true;
}
#pragma pop_macro("DT_BF16")

}  // namespace AscendC

#endif  // MPNPU_TRANSDATA_H
