// CumSum, the library's cumulative sum over a two-dimensional [outter, inner] source, and its host
// helper GetCumSumMaxMinTmpSize.
//
// config.isLastAxis (the default): along each row, dst[i][j] = src[i][0] + ... + src[i][j]; otherwise
// down each column, dst[i][j] = src[0][j] + ... + src[i][j]. With config.outputLastRow the call also
// writes lastRowTensor: the last row of the result (inner values) for the first axis, and for the last
// axis each row's last value (outter values: the pages' example gives [8 8 8 8] for four rows of eight
// ones). Only CUMSUM_ALGORITHM_LINEBYLINE exists on this chip class (SKLANSKY is an API error);
// isReuseSource is reserved and changes nothing.
//
// Arithmetic (our reading of "the implementation converts precision"): the running sums are kept in
// float, in order along the axis, and each result is rounded once to T (half or float).
//
// Checks, each an API error at the kernel's line: T half or float; outter and inner above 0;
// inner x sizeof(T) a multiple of 32 bytes; outter x inner within both dstTensor and srcTensor; with
// outputLastRow, the values it writes within lastRowTensor. Every tensor in UB, 32-byte aligned.
//
// The temporary buffer (mpnpu's model; the pages give no numbers): a half source is widened into it,
// outter x inner x 4 bytes (or all of the buffer, when smaller); a float source does not use it. So
// GetCumSumMaxMinTmpSize gives that for both its minimum and its maximum (0 for float). The used part
// must not overlap an operand, and is traced as written and read on PIPE_V. The call reads the whole
// source before it writes, so dstTensor may be srcTensor. Accesses, in order: srcTensor read, the
// scratch, dstTensor written, lastRowTensor written; PIPE_V, each one contiguous record.
#ifndef MPNPU_CUMSUM_H
#define MPNPU_CUMSUM_H

#include <cstdint>
#include <vector>

#include "native/rt.h"
#include "scratch.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

enum class CumSumAlgorithm { CUMSUM_ALGORITHM_LINEBYLINE = 0, CUMSUM_ALGORITHM_SKLANSKY = 1 };

struct CumSumConfig {
    bool isLastAxis{true};
    bool isReuseSource{false};
    bool outputLastRow{false};
    CumSumAlgorithm algorithm{CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE};
};
inline constexpr CumSumConfig defaultCumSumConfig{};

struct CumSumInfo {
    uint32_t outter{0};
    uint32_t inner{0};
};

}  // namespace AscendC

namespace mpnpu {
namespace cumsum {

inline uint64_t tmp_bytes(uint64_t elems, uint32_t typeSize) { return typeSize == 2 ? elems * 4 : 0; }

template <typename T>
inline void run(const AscendC::CumSumConfig& config, const AscendC::LocalTensor<T>& dst,
                const AscendC::LocalTensor<T>& lastRow, const AscendC::LocalTensor<T>& src,
                const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::CumSumInfo& info, const Site& site) {
    const char* name = "CumSum";
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    if constexpr (vec::one_of<T, half, float>) {
        if (config.algorithm != AscendC::CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE)
            api_error(site, "CumSum: the algorithm %d is not on this chip (Atlas A2 takes CUMSUM_ALGORITHM_LINEBYLINE)",
                      int(config.algorithm));
        vec::start(site, name);
        const uint64_t rows = info.outter, cols = info.inner, n = rows * cols;
        if (rows == 0 || cols == 0)
            api_error(site, "CumSum: cumSumInfo {outter %u, inner %u}: both must be above 0", info.outter, info.inner);
        if (cols * sizeof(T) % 32)
            api_error(site, "CumSum: inner %u x sizeof(%s) is not a multiple of 32 bytes", info.inner,
                      vec::type_name<T>());
        vec::check_operand(dst, 32, site, name, "dstTensor");
        vec::check_operand(src, 32, site, name, "srcTensor");
        vec::check_count(dst, n, site, name, "dstTensor");
        vec::check_count(src, n, site, name, "srcTensor");
        const uint64_t last = config.outputLastRow ? (config.isLastAxis ? rows : cols) : 0;
        if (last) {
            vec::check_operand(lastRow, 32, site, name, "lastRowTensor");
            vec::check_count(lastRow, last, site, name, "lastRowTensor");
        }
        uint64_t used = 0;
        if (tmp)
            used = lib::check_scratch(*tmp, tmp_bytes(n, sizeof(T)),
                                      {lib::span_of(src, n, "srcTensor"), lib::span_of(dst, n, "dstTensor"),
                                       lib::span_of(lastRow, last, "lastRowTensor")},
                                      site, name, "sharedTmpBuffer");
        src.mpnpu_touch('R', P_V, 0, n, site, name);
        std::vector<float> x(n);
        const T* in = src.mpnpu_addr();
        for (uint64_t i = 0; i < n; ++i) x[i] = float(in[i]);
        if (tmp) lib::trace_scratch(*tmp, used, site, name);
        dst.mpnpu_touch('W', P_V, 0, n, site, name);
        if (config.isLastAxis) {
            for (uint64_t i = 0; i < rows; ++i)
                for (uint64_t j = 1; j < cols; ++j) x[i * cols + j] += x[i * cols + j - 1];
        } else {
            for (uint64_t i = 1; i < rows; ++i)
                for (uint64_t j = 0; j < cols; ++j) x[i * cols + j] += x[(i - 1) * cols + j];
        }
        T* out = dst.mpnpu_addr();
        for (uint64_t i = 0; i < n; ++i) out[i] = T(x[i]);
        if (last) {
            lastRow.mpnpu_touch('W', P_V, 0, last, site, name);
            T* lr = lastRow.mpnpu_addr();
            for (uint64_t k = 0; k < last; ++k)
                lr[k] = T(config.isLastAxis ? x[k * cols + cols - 1] : x[(rows - 1) * cols + k]);
        }
    }
}

}  // namespace cumsum
}  // namespace mpnpu

namespace AscendC {

template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   LocalTensor<uint8_t>& sharedTmpBuffer, const CumSumInfo& cumSumInfo, MPNPU_SITE) {
    mpnpu::cumsum::run(config, dstTensor, lastRowTensor, srcTensor, &sharedTmpBuffer, cumSumInfo, site);
}

template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   const CumSumInfo& cumSumInfo, MPNPU_SITE) {
    mpnpu::cumsum::run(config, dstTensor, lastRowTensor, srcTensor, nullptr, cumSumInfo, site);
}

// The host helper: srcShape is an AscendC::TensorShape (ge::Shape), or anything with GetShapeSize().
template <typename Shape>
inline void GetCumSumMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isLastAxis,
                                   const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isLastAxis;
    (void)isReuseSource;
    const int64_t n = static_cast<int64_t>(srcShape.GetShapeSize());
    const uint64_t bytes = mpnpu::cumsum::tmp_bytes(n > 0 ? uint64_t(n) : 0u, typeSize);
    maxValue = minValue = bytes > UINT32_MAX ? UINT32_MAX : uint32_t(bytes);
}

}  // namespace AscendC

#endif  // MPNPU_CUMSUM_H
