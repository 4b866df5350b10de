// Data-layout changes on the vector unit: TransDataTo5HD (and the lower-level name
// TransDataTo5HDImpl that some kernels call) and Transpose.
//
//   TransDataTo5HD  one repeat reads 16 source 32-byte blocks (one per srcList entry) and writes
//                   16 destination blocks (one per dstList entry), transposing element positions:
//                     16-bit: dst block i, element j   = src block j, element i        (i, j < 16)
//                     32-bit: dst block 2i + j / 8, element j % 8 = src block j, element i
//                                                                           (i < 8, j < 16)
//                     8-bit:  dst block i, byte dh + j = src block j, byte sh + i      (i, j < 16)
//                             (sh / dh = 16 for srcHighHalf / dstHighHalf, else 0; the other
//                             half of each destination block keeps what it held)
//                   Repeat r moves every list entry by r * repStride blocks; a single repeat
//                   (repeatTimes 1) starts one stride in, as documented (kernels set the strides
//                   to 0 for a single repeat). Each repeat reads its 16 blocks before writing.
//   Transpose       a 16 x 16 matrix of 2-byte elements (dst may be src); the enhanced form with
//                   TransposeParamsExt also [N,C,H,W] <-> [N,H,W,C].
//
// Memcheck and trace: one PIPE_V record per list entry (reads, then writes), each covering the
// bytes that entry touches over every repeat.
#ifndef MPNPU_VECTOR_TRANSPOSE_H
#define MPNPU_VECTOR_TRANSPOSE_H

#include <cstdint>
#include <cstring>

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"
#include "fill_gather.h"

namespace AscendC {

constexpr uint32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

struct TransDataTo5HDParams {
    constexpr TransDataTo5HDParams() = default;
    constexpr TransDataTo5HDParams(bool dstHighHalfIn, bool srcHighHalfIn, uint8_t repeatTimesIn,
                                   uint16_t dstRepStrideIn, uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn),
          srcHighHalf(srcHighHalfIn),
          repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
};

struct TransposeParamsExt {
    TransposeParamsExt() = default;
    TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn, const uint16_t wSizeIn,
                       const TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn) {}
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

}  // namespace AscendC

namespace mpnpu {
namespace vec {

template <typename T>
constexpr bool trans5hd_type_ok =
    one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
constexpr const char* TRANS5HD_TYPES = "int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float";

// One list entry: its first byte in UB and the buffer memcheck bounds it by.
struct BlockRef {
    uint64_t off = 0;
    uint64_t lo = 0;
    uint64_t hi = 0;
};

template <typename T>
inline BlockRef block_of(const AscendC::LocalTensor<T>& t, const Site& site, const char* name, const char* list,
                         int k) {
    if (t.mpnpu_mem() != MPNPU_MEM_UB)
        api_error(site, "%s: %s[%d] must be in the Unified Buffer (VECIN/VECCALC/VECOUT), it is in %s", name, list, k,
                  mem_name(t.mpnpu_mem()));
    return BlockRef{t.mpnpu_offset(), t.mpnpu_buf_lo(), t.mpnpu_buf_hi()};
}

// An address a kernel took with GetPhyAddr (or a __ubuf__ pointer): where it is in UB. Memcheck
// bounds it by the whole UB (the address does not say which buffer it came from).
inline BlockRef block_of(uint64_t addr, const Site& site, const char* name, const char* list, int k) {
    const int64_t at = offset_in(MPNPU_MEM_UB, addr);
    if (at < 0)
        api_error(site, "%s: %s[%d] (0x%llx) is not an address in the Unified Buffer (take it with GetPhyAddr)", name,
                  list, k, (unsigned long long)addr);
    return BlockRef{uint64_t(at), 0, memory_size(MPNPU_MEM_UB)};
}
template <typename U>
inline BlockRef block_of(U* ptr, const Site& site, const char* name, const char* list, int k) {
    return block_of(uint64_t(reinterpret_cast<uintptr_t>(ptr)), site, name, list, k);
}

template <typename T>
inline void trans5hd(const BlockRef (&d)[16], const BlockRef (&s)[16], const AscendC::TransDataTo5HDParams& p,
                     const Site& site, const char* name) {
    need_type<T>(trans5hd_type_ok<T>, site, name, TRANS5HD_TYPES);
    start(site, name);
    for (int k = 0; k < 16; ++k) {
        if (s[k].off % 32)
            api_error(site, "%s: srcList[%d] must be 32-byte aligned in UB (it is at byte %llu)", name, k,
                      (unsigned long long)s[k].off);
        if (d[k].off % 32)
            api_error(site, "%s: dstList[%d] must be 32-byte aligned in UB (it is at byte %llu)", name, k,
                      (unsigned long long)d[k].off);
    }
    const uint64_t R = p.repeatTimes;
    if (R == 0) return;
    constexpr bool b8 = sizeof(T) == 1;
    const uint64_t sstep = uint64_t(p.srcRepStride) * 32, dstep = uint64_t(p.dstRepStride) * 32;
    // the first repeat's displacement: one stride for a single repeat (documented), else none
    const uint64_t s0 = R == 1 ? sstep : 0, d0 = R == 1 ? dstep : 0;
    const uint64_t spart = b8 && p.srcHighHalf ? 16 : 0, dpart = b8 && p.dstHighHalf ? 16 : 0;
    const uint64_t plen = b8 ? 16 : 32;
    const uint64_t ub = memory_size(MPNPU_MEM_UB);
    auto access = [&](char kind, const BlockRef& b, uint64_t first, uint64_t step, uint64_t part, const char* list,
                      int k) {
        uint64_t lo = b.off + first + part, hi = b.off + first + (R - 1) * step + part + plen;
        local_access(kind, P_V, MPNPU_MEM_UB, lo, hi, b.lo, b.hi, site, name);
        if (hi > ub)
            api_error(site, "%s: %s[%d] reaches byte %llu of UB, past its end (%llu bytes)", name, list, k,
                      (unsigned long long)hi, (unsigned long long)ub);
    };
    for (int k = 0; k < 16; ++k) access('R', s[k], s0, sstep, spart, "srcList", k);
    for (int k = 0; k < 16; ++k) access('W', d[k], d0, dstep, dpart, "dstList", k);
    uint8_t* m = memory_base(MPNPU_MEM_UB);
    uint8_t in[16][32];
    for (uint64_t r = 0; r < R; ++r) {
        for (int k = 0; k < 16; ++k) std::memcpy(in[k], m + s[k].off + s0 + r * sstep, 32);
        if constexpr (sizeof(T) == 2) {
            for (int i = 0; i < 16; ++i) {
                uint8_t* o = m + d[i].off + d0 + r * dstep;
                for (int j = 0; j < 16; ++j) std::memcpy(o + 2 * j, in[j] + 2 * i, 2);
            }
        } else if constexpr (sizeof(T) == 4) {
            for (int i = 0; i < 8; ++i)
                for (int j = 0; j < 16; ++j)
                    std::memcpy(m + d[2 * i + j / 8].off + d0 + r * dstep + 4 * (j % 8), in[j] + 4 * i, 4);
        } else {
            for (int i = 0; i < 16; ++i) {
                uint8_t* o = m + d[i].off + d0 + r * dstep + dpart;
                for (int j = 0; j < 16; ++j) o[j] = in[j][spart + uint64_t(i)];
            }
        }
    }
}

// The 16 + 16 entries of any list form (tensors, addresses, pointers) to UB places, then the call.
template <typename T, typename E>
inline void trans5hd_lists(const E* dst, const E* src, const AscendC::TransDataTo5HDParams& p, const Site& site,
                           const char* name) {
    BlockRef d[16], s[16];
    for (int k = 0; k < 16; ++k) {
        d[k] = block_of(dst[k], site, name, "dstList", k);
        s[k] = block_of(src[k], site, name, "srcList", k);
    }
    trans5hd<T>(d, s, p, site, name);
}

template <typename T>
constexpr bool transpose_b16_ok = one_of<T, int16_t, uint16_t, half>;

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

// dstList / srcList as LocalTensors.
template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams, MPNPU_SITE) {
    mpnpu::vec::trans5hd_lists<T>(dstList, srcList, nchwconvParams, site, "TransDataTo5HD");
}

// dstList / srcList as the tensors' addresses (GetPhyAddr).
template <typename T>
inline void TransDataTo5HD(const uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE],
                           const uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams, MPNPU_SITE) {
    mpnpu::vec::trans5hd_lists<T>(dstList, srcList, nchwconvParams, site, "TransDataTo5HD");
}

// dst / src: uint64_t tensors holding the 16 addresses each, one after another (read by the
// instruction: one PIPE_V read of 128 bytes each, before the blocks).
template <typename T>
inline void TransDataTo5HD(const LocalTensor<uint64_t>& dst, const LocalTensor<uint64_t>& src,
                           const TransDataTo5HDParams& nchwconvParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "TransDataTo5HD";
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    Hull h;
    h.add(0, 16 * sizeof(uint64_t));
    touch(dst, 'R', h, site, name);
    touch(src, 'R', h, site, name);
    uint64_t da[16], sa[16];
    std::memcpy(da, base(dst), sizeof da);
    std::memcpy(sa, base(src), sizeof sa);
    trans5hd_lists<T>(da, sa, nchwconvParams, site, name);
}

// The lower-level name some kernels call, with __ubuf__ pointers (or addresses).
template <typename T>
inline void TransDataTo5HDImpl(T* const (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                               T* const (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                               const TransDataTo5HDParams& nchwconvParams, MPNPU_SITE) {
    mpnpu::vec::trans5hd_lists<T>(dstList, srcList, nchwconvParams, site, "TransDataTo5HDImpl");
}
template <typename T>
inline void TransDataTo5HDImpl(const uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE],
                               const uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                               const TransDataTo5HDParams& nchwconvParams, MPNPU_SITE) {
    mpnpu::vec::trans5hd_lists<T>(dstList, srcList, nchwconvParams, site, "TransDataTo5HDImpl");
}

// A 16 x 16 matrix of 2-byte elements: dst = src transposed (dst may be src).
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Transpose";
    need_type<T>(transpose_b16_ok<T>, site, name, "int16_t, uint16_t, half");
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    Hull h;
    h.add(0, 512);
    touch(src, 'R', h, site, name);
    touch(dst, 'W', h, site, name);
    uint8_t in[512];
    std::memcpy(in, base(src), 512);
    uint8_t* o = base(dst);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) std::memcpy(o + 2 * (i * 16 + j), in + 2 * (j * 16 + i), 2);
}

// The enhanced form: TRANSPOSE_ND2ND_B16 (uint16_t, as above), TRANSPOSE_NCHW2NHWC and
// TRANSPOSE_NHWC2NCHW (src and dst must not overlap; a zero size writes nothing). The temporary
// buffer must hold the documented minimum; its contents are not touched.
template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const TransposeParamsExt& transposeParams, MPNPU_SITE) {
    using namespace mpnpu::vec;
    const char* name = "Transpose";
    const TransposeType ty = transposeParams.transposeType;
    if (ty == TransposeType::TRANSPOSE_ND2ND_B16) {
        need_type<T>(std::is_same_v<T, uint16_t>, site, name, "uint16_t (TRANSPOSE_ND2ND_B16)");
        Transpose(dst, src, site);
        return;
    }
    if (ty != TransposeType::TRANSPOSE_NCHW2NHWC && ty != TransposeType::TRANSPOSE_NHWC2NCHW)
        mpnpu::api_error(site, "%s: transposeType %d is not supported (TRANSPOSE_ND2ND_B16, TRANSPOSE_NCHW2NHWC, "
                         "TRANSPOSE_NHWC2NCHW are)", name, int(ty));
    need_type<T>(one_of<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>, site, name,
                 "int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float");
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    const uint64_t N = transposeParams.nSize, C = transposeParams.cSize;
    const uint64_t HW = uint64_t(transposeParams.hSize) * transposeParams.wSize;
    if (C > 4095) mpnpu::api_error(site, "%s: cSize %llu is outside [0, 4095]", name, (unsigned long long)C);
    if (HW > 4095)
        mpnpu::api_error(site, "%s: hSize * wSize = %llu is outside [0, 4095]", name, (unsigned long long)HW);
    if (HW * sizeof(T) % 32)
        mpnpu::api_error(site, "%s: hSize * wSize * sizeof(T) = %llu bytes is not a multiple of 32", name,
                         (unsigned long long)(HW * sizeof(T)));
    if (N == 0 || C == 0 || HW == 0) return;
    const uint64_t h0 = sizeof(T) == 1 ? 32 : 16, w0 = 32 / sizeof(T);
    const uint64_t need = (ty == TransposeType::TRANSPOSE_NCHW2NHWC ? C + 2 : 2 * C + 1) * h0 * w0 * sizeof(T);
    if (sharedTmpBuffer.GetSize() < need)
        mpnpu::api_error(site, "%s: sharedTmpBuffer holds %u bytes, this transpose needs at least %llu", name,
                         sharedTmpBuffer.GetSize(), (unsigned long long)need);
    const uint64_t bytes = N * C * HW * sizeof(T);
    Hull h;
    h.add(0, bytes);
    if (operands_overlap(dst, h, src, h))
        mpnpu::api_error(site, "%s: src and dst overlap (not allowed for TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW)",
                         name);
    touch(src, 'R', h, site, name);
    touch(dst, 'W', h, site, name);
    const uint8_t* s = base(src);
    uint8_t* d = base(dst);
    const bool to_nhwc = ty == TransposeType::TRANSPOSE_NCHW2NHWC;
    for (uint64_t n = 0; n < N; ++n)
        for (uint64_t c = 0; c < C; ++c)
            for (uint64_t x = 0; x < HW; ++x) {
                const uint64_t nchw = (n * C + c) * HW + x, nhwc = (n * HW + x) * C + c;
                const uint64_t from = to_nhwc ? nchw : nhwc, to = to_nhwc ? nhwc : nchw;
                std::memcpy(d + to * sizeof(T), s + from * sizeof(T), sizeof(T));
            }
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_TRANSPOSE_H
