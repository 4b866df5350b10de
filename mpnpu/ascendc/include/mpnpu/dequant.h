// AscendDequant: int32_t -> half / bfloat16_t / float dequantisation on the vector unit (the forms
// of this chip class: a scale vector or a scalar, with or without a sharedTmpBuffer, DequantParams).
//
// The source is m rows of n int32_t (n * 4 bytes 32-byte aligned); the destination m rows of n_dst,
// n rounded up to 32 bytes of dstT. In each row the first calCount elements are multiplied by the
// scale (deqScale[j], or the scalar) and every one of the n is converted to dstT, in float: the
// documented steps (both to float, multiply the first calCount, convert), which leave the others
// as the source converted, as the page's example shows; the padding columns are left as they were.
// A uint64_t scale's low 32 bits are the float scale (its high bits are not used).
// DEQUANT_WITH_SINGLE_ROW (the default): {1, n, calCount} with calCount a multiple of 32 bytes of
// dstT and n a multiple of calCount is computed as {n / calCount, calCount, calCount}.
//
// Every access is on PIPE_V (the sharedTmpBuffer's first 4 bytes per source element, at most its
// size, traced as written and read); misuse is an API error at the kernel's line. The PER_TOKEN /
// PER_GROUP forms (AscendDeQuantConfig) and the forms without DequantParams are not provided.
#ifndef MPNPU_DEQUANT_H
#define MPNPU_DEQUANT_H

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

struct DequantParams {
    uint32_t m;
    uint32_t n;
    uint32_t calCount;
};

enum class DeQuantMode : uint8_t { DEQUANT_WITH_SINGLE_ROW = 0, DEQUANT_WITH_MULTI_ROW };

}  // namespace AscendC

namespace mpnpu {
namespace dequant {

// The documented combinations (destination, scale): a scale tensor, or (scalar) a scalar.
template <typename D, typename S, bool scalar>
constexpr bool combination_ok =
    scalar ? (vec::one_of<D, bfloat16_t, float> && vec::one_of<S, bfloat16_t, float>)
           : ((std::is_same_v<D, half> && std::is_same_v<S, uint64_t>) ||
              (vec::one_of<D, bfloat16_t, float> && vec::one_of<S, bfloat16_t, float>));

template <typename S>
inline float scale_value(S s) {
    if constexpr (std::is_same_v<S, uint64_t>) {
        const uint32_t low = uint32_t(s & 0xFFFFFFFFu);
        float f;
        std::memcpy(&f, &low, sizeof f);
        return f;
    } else {
        return to_float(s);
    }
}

// scale: the tensor (nullptr for the scalar form, then ``scalar``).
template <typename D, typename S, AscendC::DeQuantMode mode>
inline void run(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<int32_t>& src,
                const AscendC::LocalTensor<S>* scale, S scalar, const AscendC::LocalTensor<uint8_t>* tmp,
                AscendC::DequantParams p, const Site& site) {
    const char* name = "AscendDequant";
    vec::start(site, name);
    if ((uint64_t(p.n) * sizeof(int32_t)) % 32)
        api_error(site, "%s: n %u is not 32-byte aligned (8 int32_t make a block)", name, p.n);
    if (p.calCount > p.n) api_error(site, "%s: calCount %u is more than n %u", name, p.calCount, p.n);
    constexpr uint32_t per_block = 32 / sizeof(D);
    if (mode == AscendC::DeQuantMode::DEQUANT_WITH_SINGLE_ROW && p.m == 1 && p.calCount && p.calCount % per_block == 0 &&
        p.n % p.calCount == 0)
        p = {p.n / p.calCount, p.calCount, p.calCount};
    const uint64_t n_dst = (uint64_t(p.n) + per_block - 1) / per_block * per_block;
    // (the last row's padding columns are not written, so the destination may end after its n)
    const uint64_t n_src = uint64_t(p.m) * p.n, n_out = p.m ? uint64_t(p.m - 1) * n_dst + p.n : 0;
    vec::check_operand(dst, 32, site, name, "dstTensor");
    vec::check_operand(src, 32, site, name, "srcTensor");
    vec::check_count(src, n_src, site, name, "srcTensor");
    vec::check_count(dst, n_out, site, name, "dstTensor");
    if (scale) {
        vec::check_operand(*scale, 32, site, name, "deqScale");
        if (p.calCount > scale->GetSize())
            api_error(site, "%s: calCount %u is more than deqScale's %u elements", name, p.calCount, scale->GetSize());
    }
    if (vec::overlaps(src.mpnpu_addr(), n_src * sizeof(int32_t), dst.mpnpu_addr(), n_out * sizeof(D)))
        api_error(site, "%s: srcTensor and dstTensor overlap (the call takes separate operands)", name);
    if (tmp) vec::check_operand(*tmp, 32, site, name, "sharedTmpBuffer");
    if (n_src == 0) return;
    src.mpnpu_touch('R', P_V, 0, n_src, site, name);
    if (scale && p.calCount) scale->mpnpu_touch('R', P_V, 0, p.calCount, site, name);
    const uint64_t tmp_used = tmp ? (n_src * 4 < tmp->GetSize() ? n_src * 4 : tmp->GetSize()) : 0;
    if (tmp_used) {
        tmp->mpnpu_touch_bytes('W', P_V, 0, tmp_used, site, name);
        tmp->mpnpu_touch_bytes('R', P_V, 0, tmp_used, site, name);
    }
    const int32_t* in = src.mpnpu_addr();
    std::vector<float> factor(p.calCount);
    for (uint32_t j = 0; j < p.calCount; ++j) factor[j] = scale_value(scale ? scale->mpnpu_addr()[j] : scalar);
    dst.mpnpu_touch('W', P_V, 0, n_out, site, name);
    D* out = dst.mpnpu_addr();
    for (uint32_t r = 0; r < p.m; ++r)
        for (uint32_t j = 0; j < p.n; ++j) {
            float v = float(in[uint64_t(r) * p.n + j]);
            if (j < p.calCount) v *= factor[j];
            out[uint64_t(r) * n_dst + j] = from_float<D>(v);
        }
}

}  // namespace dequant
}  // namespace mpnpu

namespace AscendC {

template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const LocalTensor<scaleT>& deqScale, const LocalTensor<uint8_t>& sharedTmpBuffer,
                          DequantParams params, MPNPU_SITE) {
    static_assert(mpnpu::dequant::combination_ok<dstT, scaleT, false>,
                  "AscendDequant with a deqScale tensor: (dst, deqScale) is (half, uint64_t), or bfloat16_t / float "
                  "with bfloat16_t / float");
    mpnpu::dequant::run<dstT, scaleT, mode>(dstTensor, srcTensor, &deqScale, scaleT(), &sharedTmpBuffer, params, site);
}

template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const LocalTensor<scaleT>& deqScale, DequantParams params, MPNPU_SITE) {
    static_assert(mpnpu::dequant::combination_ok<dstT, scaleT, false>,
                  "AscendDequant with a deqScale tensor: (dst, deqScale) is (half, uint64_t), or bfloat16_t / float "
                  "with bfloat16_t / float");
    mpnpu::dequant::run<dstT, scaleT, mode>(dstTensor, srcTensor, &deqScale, scaleT(), nullptr, params, site);
}

template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor, const scaleT deqScale,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, DequantParams params, MPNPU_SITE) {
    static_assert(mpnpu::dequant::combination_ok<dstT, scaleT, true>,
                  "AscendDequant with a scalar deqScale: dst and deqScale are bfloat16_t or float");
    mpnpu::dequant::run<dstT, scaleT, mode>(dstTensor, srcTensor, nullptr, deqScale, &sharedTmpBuffer, params, site);
}

template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor, const scaleT deqScale,
                          DequantParams params, MPNPU_SITE) {
    static_assert(mpnpu::dequant::combination_ok<dstT, scaleT, true>,
                  "AscendDequant with a scalar deqScale: dst and deqScale are bfloat16_t or float");
    mpnpu::dequant::run<dstT, scaleT, mode>(dstTensor, srcTensor, nullptr, deqScale, nullptr, params, site);
}

}  // namespace AscendC

#endif  // MPNPU_DEQUANT_H
