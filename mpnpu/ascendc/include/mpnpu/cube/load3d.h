// The img2col load (LoadData with LoadData3DParamsV2 or LoadData3DParamsV2Pro: L1 -> L0A / L0B on
// PIPE_MTE1), the registers it reads (SetFmatrix, SetLoadDataPaddingValue, SetLoadDataRepeat,
// SetLoadDataBoundary), and the Ascend 950's fractal-block 2D load (LoadData2DParamsV2).
//
// The model, from the API pages. The feature map sits in L1 as NC1HWC0: C1 blocks of l1H x l1W
// positions of C0 channels (C0 = 32 bytes of elements), element (c1, h, w, c0) at
// ((c1 * l1H + h) * l1W + w) * C0 + c0. A filter of filterH x filterW taps, dilated by
// dilationFilterH/W, slides over the map padded by padList (left, right, top, bottom) with steps
// strideH/W, giving Ho x Wo output positions. The img2col matrix X has one row per output position
// (m = ho * Wo + wo) and one column per (c1, kh, kw, c0): k = ((c1 * filterH + kh) * filterW + kw) * C0 + c0;
// X[m][k] is the map at h = ho * strideH + kh * dilationFilterH - padTop, w = wo * strideW +
// kw * dilationFilterW - padLeft, channel block c1, or the padding value where that falls outside
// the map. A load takes the block of X of mExtension rows from mStartPt and kExtension columns from
// kStartPt (rows rounded up to 16, columns to C0) and writes it
//   to L0A: as Mmad's left matrix (Zz: 16 x C0 fractals, fractal (m1, k1) at m1 * K1 + k1); with
//           enTranspose (16- and 32-bit elements) X^T instead, Zz too (rows rounded up to 16, the
//           rows added by the rounding left as they were);
//   to L0B: as Mmad's right matrix B = X (Zn: C0 x 16 fractals, fractal (k1, n1) at k1 * N1 + n1,
//           columns inside; X's columns rounded up to 16, the columns added left as they were).
// SetLoadDataRepeat repeats the block repeatTime times, each repeatStride further down X
// (repeatMode 0, units of 16 rows) or across it (repeatMode 1, units of C0 columns); the
// repeats form one matrix (stacked, or side by side) that is written as above.
// SetLoadDataBoundary(b): an L1 byte address at or past b reads from address (address mod b).
#ifndef MPNPU_CUBE_LOAD3D_H
#define MPNPU_CUBE_LOAD3D_H

#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "../native/rt.h"
#include "../tensor.h"
#include "../types.h"
#include "../utils.h"
#include "basic.h"
#include "params.h"

namespace mpnpu {
namespace cube {

// The registers of the img2col load (one set per core process, as per core on the chip).
struct Fmatrix {
    uint16_t l1h = 0;
    uint16_t l1w = 0;
    uint8_t pad[4] = {0, 0, 0, 0};
};
struct Load3dState {
    Fmatrix fm[2];  // the left (FMATRIX_LEFT, fMatrixCtrl false) and right feature-map registers
    uint64_t pad_bits = 0;  // the padding value as set, its size, and as a number
    uint32_t pad_size = 0;
    double pad_number = 0;
    uint16_t repeat_stride = 0;
    uint8_t repeat_time = 1;
    uint8_t repeat_mode = 0;
    uint32_t boundary = 0;  // bytes; 0: the whole L1
};
inline Load3dState& load3d_state() {
    static Load3dState s;
    return s;
}

template <typename T>
inline double as_number(T v) {
    if constexpr (std::is_integral_v<T>) return double(v);
    else return double(float(v));
}

template <typename T>
inline void set_padding(T v) {
    static_assert(sizeof(T) <= 8, "SetLoadDataPaddingValue: a value of at most 8 bytes");
    Load3dState& s = load3d_state();
    s.pad_bits = 0;
    std::memcpy(&s.pad_bits, &v, sizeof(T));
    s.pad_size = sizeof(T);
    s.pad_number = as_number(v);
}

// The padding value register read as a T: its bits when it was set with a T-sized value, else the number.
template <typename T>
inline T padding_as() {
    const Load3dState& s = load3d_state();
    T v{};
    if (s.pad_size == sizeof(T)) std::memcpy(static_cast<void*>(&v), &s.pad_bits, sizeof(T));
    else if constexpr (std::is_integral_v<T>) v = T(s.pad_number);
    else v = T(float(s.pad_number));
    return v;
}

struct Img2colShape {
    uint32_t l1h, l1w, channels;
    uint8_t pad[4];  // left, right, top, bottom
    uint32_t k_ext, m_ext, k_start, m_start;
    uint32_t stride_w, stride_h, filter_w, filter_h, dil_w, dil_h;
    bool transpose;
};

// channelSize values the API pages list for this chip class, for C0 = 32 bytes of elements.
inline bool channel_size_documented(uint32_t ch, uint32_t bytes) {
    if (bytes == 4) return ch == 4 || (ch >= 8 && (ch % 8 == 0 || ch % 8 == 4));
    if (bytes == 2) return ch == 4 || ch == 8 || (ch >= 16 && (ch % 16 == 0 || ch % 16 == 4 || ch % 16 == 8));
    return ch == 4 || ch == 8 || ch == 16 || (ch >= 32 && (ch % 32 == 0 || ch % 32 == 4 || ch % 32 == 8 || ch % 32 == 16));
}

template <typename T>
inline void img2col_load(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const Img2colShape& g,
                         T pad_value, const Site& site, const char* what) {
    static_assert(!std::is_same_v<T, int4b_t>, "LoadData (img2col): mpnpu does not load int4b_t feature maps");
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                  "LoadData (img2col): 8-, 16- or 32-bit elements");
    at(site);
    check_l0_load(dst, &src, site, what);
    const bool to_b = dst.mpnpu_mem() == MPNPU_MEM_L0B;
    if (sizeof(T) == 1 && to_b)
        api_error(site, "%s: L1 -> L0B does not take 8-bit elements on this chip class", what);
    if (sizeof(T) == 1 && g.transpose)
        api_error(site, "%s: enTranspose does not take 8-bit elements on this chip class", what);
    if (g.stride_w > 63 || g.stride_h > 63)
        api_error(site, "%s: strideW (%u) and strideH (%u) must be at most 63", what, g.stride_w, g.stride_h);
    const Load3dState& rs = load3d_state();
    if (rs.repeat_mode > 1) api_error(site, "%s: repeatMode %u (0 or 1)", what, unsigned(rs.repeat_mode));
    constexpr uint32_t C0 = c0_of<T>();
    if (g.k_start % C0)
        api_error(site, "%s: kStartPt (%u) must be a multiple of %u (32 bytes of %zu-byte elements)", what, g.k_start,
                  C0, sizeof(T));
    if (rs.boundary && src.mpnpu_offset() >= rs.boundary)
        api_error(site, "%s: the source starts %llu bytes into L1, past the boundary SetLoadDataBoundary set (%u)",
                  what, (unsigned long long)src.mpnpu_offset(), rs.boundary);
    if (g.l1h == 0 || g.l1w == 0 || g.channels == 0 || g.k_ext == 0 || g.m_ext == 0 || g.filter_w == 0 ||
        g.filter_h == 0 || rs.repeat_time == 0)
        return;  // a NOP, as documented
    if (g.l1h > 32767 || g.l1w > 32767)
        api_error(site, "%s: l1H (%u) and l1W (%u) must be at most 32767", what, g.l1h, g.l1w);
    if (!channel_size_documented(g.channels, sizeof(T)))
        api_error(site, "%s: channelSize %u is not one the API documents for %zu-byte elements", what, g.channels,
                  sizeof(T));
    if (g.channels % C0)
        unsupported(site, "%s: channelSize %u (mpnpu loads whole 32-byte channel blocks: a multiple of %u)", what,
                    g.channels, C0);
    if (g.stride_w == 0 || g.stride_h == 0 || g.dil_w == 0 || g.dil_h == 0)
        unsupported(site, "%s: a stride or dilation of 0", what);
    const int64_t span_h = int64_t(g.filter_h - 1) * g.dil_h + 1, span_w = int64_t(g.filter_w - 1) * g.dil_w + 1;
    const int64_t full_h = int64_t(g.l1h) + g.pad[2] + g.pad[3], full_w = int64_t(g.l1w) + g.pad[0] + g.pad[1];
    if (full_h < span_h || full_w < span_w)
        api_error(site, "%s: the dilated filter (%lld x %lld) does not fit the padded feature map (%lld x %lld)", what,
                  (long long)span_h, (long long)span_w, (long long)full_h, (long long)full_w);
    const uint64_t ho = uint64_t((full_h - span_h) / g.stride_h + 1), wo = uint64_t((full_w - span_w) / g.stride_w + 1);
    const uint64_t c1n = g.channels / C0, taps = uint64_t(g.filter_h) * g.filter_w;
    const uint64_t x_rows = ho * wo, x_cols = c1n * taps * C0;
    if (g.k_ext % C0 && uint64_t(g.k_start) + g.k_ext < x_cols)
        api_error(site, "%s: kExtension (%u) must be a multiple of %u unless the block reaches the img2col matrix's "
                        "last column (%llu)", what, g.k_ext, C0, (unsigned long long)x_cols);
    if (g.m_ext % 16 && uint64_t(g.m_start) + g.m_ext < x_rows)
        api_error(site, "%s: mExtension (%u) must be a multiple of 16 unless the block reaches the img2col matrix's "
                        "last row (%llu)", what, g.m_ext, (unsigned long long)x_rows);

    // The block (all repeats) as one matrix of rows x cols; where each of its elements comes from.
    const uint64_t m16 = ceil_div(g.m_ext, 16) * 16, kc = ceil_div(g.k_ext, C0) * C0, reps = rs.repeat_time;
    const bool by_rows = rs.repeat_mode == 0;
    const uint64_t rows = by_rows ? reps * m16 : m16, cols = by_rows ? kc : reps * kc;
    const uint64_t l1_base = src.mpnpu_offset();
    const uint64_t boundary = rs.boundary;
    // per element of the block: its element index in dst, and its byte address in L1 (-1: padding)
    auto table = std::make_shared<std::vector<std::pair<uint64_t, int64_t>>>();
    table->reserve(rows * cols);
    uint64_t lo = UINT64_MAX, hi = 0, dst_end = 0;  // (dst_end: one past the last element written)
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c) {
            const uint64_t m = g.m_start + (by_rows ? (r / m16) * rs.repeat_stride * 16 + r % m16 : r);
            const uint64_t k = g.k_start + (by_rows ? c : (c / kc) * rs.repeat_stride * C0 + c % kc);
            int64_t addr = -1;
            const uint64_t oh = m / wo, ow = m % wo, kb = k / C0, ch = k % C0, c1 = kb / taps, tap = kb % taps;
            const int64_t h = int64_t(oh * g.stride_h + (tap / g.filter_w) * g.dil_h) - g.pad[2];
            const int64_t w = int64_t(ow * g.stride_w + (tap % g.filter_w) * g.dil_w) - g.pad[0];
            if (c1 < c1n && h >= 0 && h < int64_t(g.l1h) && w >= 0 && w < int64_t(g.l1w)) {
                uint64_t a = l1_base + (((c1 * g.l1h + uint64_t(h)) * g.l1w + uint64_t(w)) * C0 + ch) * sizeof(T);
                if (boundary && a >= boundary) a %= boundary;
                addr = int64_t(a);
                lo = a < lo ? a : lo;
                hi = a + sizeof(T) > hi ? a + sizeof(T) : hi;
            }
            uint64_t at_dst;
            if (to_b) {  // Zn of X: C0 x 16 fractals, fractal (r / C0, c / 16), column-major inside
                const uint64_t n1 = ceil_div(cols, 16);
                at_dst = ((r / C0 * n1 + c / 16) * 16 + c % 16) * C0 + r % C0;
            } else if (!g.transpose) {  // Zz of X: 16 x C0 fractals, row-major inside
                at_dst = ((r / 16 * (cols / C0) + c / C0) * 16 + r % 16) * C0 + c % C0;
            } else {  // Zz of X^T (cols x rows): element (c, r)
                at_dst = ((c / 16 * (rows / C0) + r / C0) * 16 + c % 16) * C0 + r % C0;
            }
            dst_end = at_dst + 1 > dst_end ? at_dst + 1 : dst_end;
            table->emplace_back(at_dst, addr);
        }
    if (hi > lo) {
        // the bytes read, as offsets from the source tensor (reads wrapped below it are not traced)
        const uint64_t from = lo > l1_base ? lo - l1_base : 0;
        if (hi > l1_base) src.mpnpu_touch_bytes('R', P_MTE1, from, hi - l1_base, site, what);
    }
    dst.mpnpu_touch_bytes('W', P_MTE1, 0, dst_end * sizeof(T), site, what);
    const uint8_t* l1 = reinterpret_cast<const uint8_t*>(src.mpnpu_addr()) - l1_base;
    T* d = dst.mpnpu_addr();
    core().pipes.run(P_MTE1, [=] {  // the block moves when PIPE_MTE1 gets to it
        for (const auto& e : *table) {
            if (e.second < 0) d[e.first] = pad_value;
            else std::memcpy(static_cast<void*>(d + e.first), l1 + e.second, sizeof(T));
        }
    });
}

inline void check_small_k(const Site& site, const char* what, bool small_k) {
    if (small_k) api_error(site, "%s: enSmallK (the small-k feature is no longer supported)", what);
}

// The feature map of the register a load names (fMatrixCtrl: the right one) into its shape.
inline void from_register(Img2colShape& g, bool right) {
    const Fmatrix& f = load3d_state().fm[right ? 1 : 0];
    g.l1h = f.l1h;
    g.l1w = f.l1w;
    for (int i = 0; i < 4; ++i) g.pad[i] = f.pad[i];
}

// -- LoadData2DParamsV2: a block of fractals ---------------------------------------------------------------

template <typename T>
inline void load_2d_v2(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const AscendC::LoadData2DParamsV2& p, const Site& site) {
    const char* what = "LoadData L1->L0 (LoadData2DParamsV2)";
    at(site);
    check_l0_load(dst, &src, site, what);
    if (p.mStep > 255 || p.kStep > 255)
        api_error(site, "%s: mStep (%u) and kStep (%u) must be at most 255", what, unsigned(p.mStep), unsigned(p.kStep));
    if (p.srcStride < 0) api_error(site, "%s: srcStride (%d) must not be negative", what, int(p.srcStride));
    if (p.ifTranspose && sizeof(T) != 2)
        unsupported(site, "%s: ifTranspose on %zu-byte elements (mpnpu transposes 16-bit fractals)", what, sizeof(T));
    if (p.mStep == 0 || p.kStep == 0) return;  // a NOP, as documented
    const uint64_t src_stride = uint64_t(p.srcStride), first = uint64_t(p.kStartPosition) * src_stride + p.mStartPosition;
    const uint64_t ms = p.mStep, ks = p.kStep, dstride = p.dstStride;
    const uint64_t src_end = (first + (ks - 1) * src_stride + ms) * FRACTAL_BYTES;
    const uint64_t dst_end = ((ks - 1) * dstride + ms) * FRACTAL_BYTES;
    src.mpnpu_touch_bytes('R', P_MTE1, first * FRACTAL_BYTES, src_end, site, what);
    dst.mpnpu_touch_bytes('W', P_MTE1, 0, dst_end, site, what);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    const bool tr = p.ifTranspose;
    core().pipes.run(P_MTE1, [=] {
        for (uint64_t j = 0; j < ks; ++j)
            for (uint64_t i = 0; i < ms; ++i) {
                const uint8_t* f = s + (first + j * src_stride + i) * FRACTAL_BYTES;
                uint8_t* o = d + (j * dstride + i) * FRACTAL_BYTES;
                if (tr) transpose_fractal16(o, f);
                else std::memmove(o, f, FRACTAL_BYTES);
            }
    });
}

}  // namespace cube
}  // namespace mpnpu

namespace AscendC {

// The img2col load, L1 (NC1HWC0 feature map) -> L0A / L0B on PIPE_MTE1; defaultConfig says whether
// the params' l1H / l1W / padList and padValue set the registers (and are used) or the registers
// SetFmatrix / SetLoadDataPaddingValue wrote are used.
template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG, typename U = T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<U>& loadDataParams,
                     MPNPU_SITE) {
    static_assert(std::is_same_v<T, U>, "LoadData (img2col): padValue's type must be the tensors' element type");
    const char* what = "LoadData L1->L0 (img2col, LoadData3DParamsV2)";
    const LoadData3DParamsV2<U>& p = loadDataParams;
    mpnpu::cube::check_small_k(site, what, p.enSmallK);
    if (defaultConfig.isSetFMatrix) {
        mpnpu::cube::Fmatrix& f = mpnpu::cube::load3d_state().fm[p.fMatrixCtrl ? 1 : 0];
        f.l1h = p.l1H;
        f.l1w = p.l1W;
        for (int i = 0; i < 4; ++i) f.pad[i] = p.padList[i];
    }
    if (defaultConfig.isSetPadding) mpnpu::cube::set_padding<T>(p.padValue);
    mpnpu::cube::Img2colShape g{};
    mpnpu::cube::from_register(g, p.fMatrixCtrl);
    g.channels = p.channelSize;
    g.k_ext = p.kExtension;
    g.m_ext = p.mExtension;
    g.k_start = p.kStartPt;
    g.m_start = p.mStartPt;
    g.stride_w = p.strideW;
    g.stride_h = p.strideH;
    g.filter_w = uint32_t(p.filterW) + (p.filterSizeW ? 256u : 0u);
    g.filter_h = uint32_t(p.filterH) + (p.filterSizeH ? 256u : 0u);
    g.dil_w = p.dilationFilterW;
    g.dil_h = p.dilationFilterH;
    g.transpose = p.enTranspose && dst.mpnpu_mem() == MPNPU_MEM_L0A;  // (L1 -> L0B always lays B out as Zn)
    mpnpu::cube::img2col_load(dst, src, g, mpnpu::cube::padding_as<T>(), site, what);
}

// The packed img2col load: the feature map and padding value always come from the registers.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2Pro& loadDataParams,
                     MPNPU_SITE) {
    const char* what = "LoadData L1->L0 (img2col, LoadData3DParamsV2Pro)";
    const LoadData3DParamsV2Pro& p = loadDataParams;
    mpnpu::cube::check_small_k(site, what, p.enSmallK);
    mpnpu::cube::Img2colShape g{};
    mpnpu::cube::from_register(g, p.fMatrixCtrl);
    g.channels = p.channelSize;
    const uint64_t e = p.extConfig, f = p.filterConfig;
    g.k_ext = uint32_t(e & 0xFFFF);
    g.m_ext = uint32_t((e >> 16) & 0xFFFF);
    g.k_start = uint32_t((e >> 32) & 0xFFFF);
    g.m_start = uint32_t((e >> 48) & 0xFFFF);
    g.stride_w = uint32_t(f & 0xFF);
    g.stride_h = uint32_t((f >> 8) & 0xFF);
    g.filter_w = uint32_t((f >> 16) & 0xFF) + (p.filterSizeW ? 256u : 0u);
    g.filter_h = uint32_t((f >> 24) & 0xFF) + (p.filterSizeH ? 256u : 0u);
    g.dil_w = uint32_t((f >> 32) & 0xFF);
    g.dil_h = uint32_t((f >> 40) & 0xFF);
    g.transpose = p.enTranspose && dst.mpnpu_mem() == MPNPU_MEM_L0A;
    mpnpu::cube::img2col_load(dst, src, g, mpnpu::cube::padding_as<T>(), site, what);
}

// A feature-map register (FMATRIX_LEFT or FMATRIX_RIGHT; a load's fMatrixCtrl picks one): l1H x l1W
// positions, padList = {left, right, top, bottom}.
inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& fmatrixMode,
                       MPNPU_SITE) {
    mpnpu::at(site);
    if (fmatrixMode != FmatrixMode::FMATRIX_LEFT && fmatrixMode != FmatrixMode::FMATRIX_RIGHT)
        mpnpu::api_error(site, "SetFmatrix: fmatrixMode %u (FMATRIX_LEFT or FMATRIX_RIGHT)", unsigned(fmatrixMode));
    if (l1H == 0 || l1W == 0 || l1H > 32767 || l1W > 32767)
        mpnpu::api_error(site, "SetFmatrix: l1H (%u) and l1W (%u) must be in [1, 32767]", unsigned(l1H), unsigned(l1W));
    mpnpu::cube::Fmatrix& f = mpnpu::cube::load3d_state().fm[fmatrixMode == FmatrixMode::FMATRIX_RIGHT ? 1 : 0];
    f.l1h = l1H;
    f.l1w = l1W;
    for (int i = 0; i < 4; ++i) f.pad[i] = padList[i];
}

template <typename T>
inline void SetLoadDataPaddingValue(const T padValue, MPNPU_SITE) {
    mpnpu::at(site);
    mpnpu::cube::set_padding<T>(padValue);
}

inline void SetLoadDataRepeat(const LoadDataRepeatParam& repeatParams, MPNPU_SITE) {
    mpnpu::at(site);
    if (repeatParams.repeatMode > 1)
        mpnpu::api_error(site, "SetLoadDataRepeat: repeatMode %u (0: along the height, 1: along the width)",
                         unsigned(repeatParams.repeatMode));
    mpnpu::cube::Load3dState& s = mpnpu::cube::load3d_state();
    s.repeat_stride = repeatParams.repeatStride;
    s.repeat_time = repeatParams.repeatTime;
    s.repeat_mode = repeatParams.repeatMode;
}

// The L1 boundary of img2col loads, in bytes (0: none).
inline void SetLoadDataBoundary(uint32_t boundaryValue, MPNPU_SITE) {
    mpnpu::at(site);
    if (boundaryValue != 0 && boundaryValue < 1024)
        mpnpu::api_error(site, "SetLoadDataBoundary: %u bytes (the boundary is 0, none, or at least 1024)", boundaryValue);
    mpnpu::cube::load3d_state().boundary = boundaryValue;
}

// The Ascend 950's 2D load of an mStep x kStep block of fractals (see LoadData2DParamsV2).
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParamsV2& loadDataParams,
                     MPNPU_SITE) {
    mpnpu::cube::load_2d_v2(dst, src, loadDataParams, site);
}

}  // namespace AscendC

#endif  // MPNPU_CUBE_LOAD3D_H
