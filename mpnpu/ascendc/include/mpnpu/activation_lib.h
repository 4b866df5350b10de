// The library's activation functions on the vector unit: Gelu, FasterGelu, GeGLU, SwiGLU, Silu, Swish,
// and their host helpers.
//
// What mpnpu computes (element by element, in double precision, rounded once to float and, for half,
// once more to half; the device works in float with its own exp, so its last bits can differ):
//   Gelu(x)        = x / (1 + exp(-1.5957691216057308 (x + 0.044715 x^3)))   (the tanh approximation)
//   FasterGelu(x)  = x / (1 + exp(-1.702 x))
//   GeGLU(x0, x1)  = x0 * Gelu(x1)            (x0 from srcTensor0, x1 from srcTensor1)
//   SwiGLU(x0, x1) = x0 * x1 / (1 + exp(-beta x1))
//   Silu(x)        = x / (1 + exp(-x))
//   Swish(x)       = x / (1 + exp(-beta x))
// T is half or float (another type is an API error at the kernel's line). Gelu's and FasterGelu's
// highPrecision / highPerformance select the device's algorithm; mpnpu's one result is at least as
// precise as either, so they are accepted and change nothing. FasterGeluV2 is documented without a
// formula mpnpu can reproduce: it is refused at compile time.
//
// Operands (lib_elementwise.h does the checks and the tracing on PIPE_V): UB tensors starting 32-byte
// aligned, the count within each; Gelu and FasterGelu may work in place (dst the source tensor, as
// documented), the others take separate dst and sources; sharedTmpBuffer, where a form takes one,
// must be at least the minimum the host helper gives and overlap nothing. The scratch model: 1 float
// per element for the one-source calls, 2 for GeGLU and SwiGLU (see lib_elementwise.h). Silu and
// Swish take no buffer (their GetXxxTmpSize helpers give the sizes the framework should reserve).
#ifndef MPNPU_ACTIVATION_LIB_H
#define MPNPU_ACTIVATION_LIB_H

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "lib_elementwise.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace mpnpu {
namespace act {

constexpr uint32_t kOneSourceNodes = 1;
constexpr uint32_t kTwoSourceNodes = 2;

inline double gelu(double x) { return x / (1.0 + std::exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))); }
inline double swish(double x, double beta) { return x / (1.0 + std::exp(-beta * x)); }

template <typename T>
inline bool typed(const Site& site, const char* name) {
    vec::need_type<T>(vec::one_of<T, half, float>, site, name, "half, float");
    return vec::one_of<T, half, float>;
}

// dst = f(src) over count elements; tmp is the caller's buffer or null.
template <typename T, class F>
inline void one(const char* name, lib::DstReuse reuse, const AscendC::LocalTensor<T>& dst,
                const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count,
                const Site& site, F f) {
    if (!typed<T>(site, name)) return;
    if (lib::prepare(name, reuse, dst, count, tmp, sizeof(T), kOneSourceNodes, site, src, "src"))
        lib::map1(dst, src, count, f);
}
// dst = f(src0, src1) over count elements, dst apart from both.
template <typename T, class F>
inline void two(const char* name, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                const AscendC::LocalTensor<T>& src1, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t count,
                const Site& site, F f) {
    if (!typed<T>(site, name)) return;
    if (lib::prepare(name, lib::DstReuse::none, dst, count, tmp, sizeof(T), kTwoSourceNodes, site, src0,
                     "srcTensor0", src1, "srcTensor1"))
        lib::map2(dst, src0, src1, count, f);
}

inline double geglu(double x0, double x1) { return x0 * gelu(x1); }
inline double faster_gelu(double x) { return swish(x, 1.702); }

template <typename T>
constexpr bool kNotModelled = false;

}  // namespace act
}  // namespace mpnpu

namespace AscendC {

// -- Gelu, FasterGelu (dst may be src) ----------------------------------------------------------------
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void Gelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t dataSize, MPNPU_SITE) {
    mpnpu::act::one("Gelu", mpnpu::lib::DstReuse::same, dstLocal, srcLocal, &sharedTmpBuffer, dataSize, site,
                    mpnpu::act::gelu);
}
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void Gelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dataSize,
                 MPNPU_SITE) {
    mpnpu::act::one("Gelu", mpnpu::lib::DstReuse::same, dstLocal, srcLocal, nullptr, dataSize, site,
                    mpnpu::act::gelu);
}
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void FasterGelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                       const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t dataSize, MPNPU_SITE) {
    mpnpu::act::one("FasterGelu", mpnpu::lib::DstReuse::same, dstLocal, srcLocal, &sharedTmpBuffer, dataSize, site,
                    mpnpu::act::faster_gelu);
}
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void FasterGelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dataSize,
                       MPNPU_SITE) {
    mpnpu::act::one("FasterGelu", mpnpu::lib::DstReuse::same, dstLocal, srcLocal, nullptr, dataSize, site,
                    mpnpu::act::faster_gelu);
}
template <typename T, bool highPrecision = false, bool highPerformance = false, typename... Args>
inline void FasterGeluV2(const LocalTensor<T>&, const LocalTensor<T>&, Args&&...) {
    static_assert(mpnpu::act::kNotModelled<T>,
                  "FasterGeluV2: mpnpu does not implement it (its documented formula is not reproduced); use Gelu or "
                  "FasterGelu");
}

// Gelu's host helpers (shared by Gelu, FasterGelu and FasterGeluV2 on the pages).
template <typename Shape>
inline uint32_t GetGeluMaxTmpSize(const Shape& srcShape, const uint32_t typeSize) {
    return mpnpu::lib::tmp_max(mpnpu::lib::shape_count(srcShape), typeSize, mpnpu::act::kOneSourceNodes);
}
template <typename Shape>
inline uint32_t GetGeluMinTmpSize(const Shape& srcShape, const uint32_t typeSize) {
    (void)srcShape;
    return mpnpu::lib::tmp_min(typeSize, mpnpu::act::kOneSourceNodes);
}
template <typename Shape>
inline void GetGeluMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                 uint32_t& minValue) {
    maxValue = GetGeluMaxTmpSize(srcShape, typeSize);
    minValue = GetGeluMinTmpSize(srcShape, typeSize);
}

// -- GeGLU: dst = srcTensor0 * Gelu(srcTensor1) --------------------------------------------------------
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, MPNPU_SITE) {
    mpnpu::act::two("GeGLU", dstTensor, srcTensor0, srcTensor1, &sharedTmpBuffer, calCount, site, mpnpu::act::geglu);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    mpnpu::act::two("GeGLU", dstTensor, srcTensor0, srcTensor1, &sharedTmpBuffer, srcTensor0.GetSize(), site,
                    mpnpu::act::geglu);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  uint32_t calCount, MPNPU_SITE) {
    mpnpu::act::two("GeGLU", dstTensor, srcTensor0, srcTensor1, nullptr, calCount, site, mpnpu::act::geglu);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  MPNPU_SITE) {
    mpnpu::act::two("GeGLU", dstTensor, srcTensor0, srcTensor1, nullptr, srcTensor0.GetSize(), site,
                    mpnpu::act::geglu);
}
MPNPU_LIB_HOST_MAXMIN(GeGLU, mpnpu::act::kTwoSourceNodes)
MPNPU_LIB_HOST_FACTOR(GeGLU, mpnpu::act::kTwoSourceNodes)

// -- SwiGLU: dst = srcTensor0 * Swish(srcTensor1, scalarValue) -----------------------------------------
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
                   MPNPU_SITE) {
    const double beta = scalarValue;
    mpnpu::act::two("SwiGLU", dstTensor, srcTensor0, srcTensor1, &sharedTmpBuffer, calCount, site,
                    [beta](double x0, double x1) { return x0 * mpnpu::act::swish(x1, beta); });
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, MPNPU_SITE) {
    SwiGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, scalarValue, sharedTmpBuffer, srcTensor0.GetSize(),
                             site);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const uint32_t calCount, MPNPU_SITE) {
    const double beta = scalarValue;
    mpnpu::act::two("SwiGLU", dstTensor, srcTensor0, srcTensor1, nullptr, calCount, site,
                    [beta](double x0, double x1) { return x0 * mpnpu::act::swish(x1, beta); });
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, LocalTensor<T>& srcTensor0, LocalTensor<T>& srcTensor1,
                   const float& scalarValue, MPNPU_SITE) {
    SwiGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, scalarValue, srcTensor0.GetSize(), site);
}
// (the page's argument order: maxValue, minValue, then isReuseSource)
template <typename Shape>
inline void GetSwiGLUMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                   uint32_t& minValue, const bool isReuseSource) {
    (void)isReuseSource;
    maxValue = mpnpu::lib::tmp_max(mpnpu::lib::shape_count(srcShape), typeSize, mpnpu::act::kTwoSourceNodes);
    minValue = mpnpu::lib::tmp_min(typeSize, mpnpu::act::kTwoSourceNodes);
}
MPNPU_LIB_HOST_FACTOR(SwiGLU, mpnpu::act::kTwoSourceNodes)

// -- Silu, Swish (no buffer forms; dst apart from src) -------------------------------------------------
template <typename T, bool isReuseSource = false>
inline void Silu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize, MPNPU_SITE) {
    mpnpu::act::one("Silu", mpnpu::lib::DstReuse::none, dstLocal, srcLocal, nullptr, dataSize, site,
                    [](double x) { return mpnpu::act::swish(x, 1.0); });
}
template <typename T, bool isReuseSource = false>
inline void Swish(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize,
                  const T scalarValue, MPNPU_SITE) {
    const double beta = mpnpu::to_float(scalarValue);
    mpnpu::act::one("Swish", mpnpu::lib::DstReuse::none, dstLocal, srcLocal, nullptr, dataSize, site,
                    [beta](double x) { return mpnpu::act::swish(x, beta); });
}
template <typename Shape>
inline void GetSiluTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                           uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    maxValue = mpnpu::lib::tmp_max(mpnpu::lib::shape_count(srcShape), typeSize, mpnpu::act::kOneSourceNodes);
    minValue = mpnpu::lib::tmp_min(typeSize, mpnpu::act::kOneSourceNodes);
}
template <typename Shape>
inline void GetSwishTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                            uint32_t& maxValue, uint32_t& minValue) {
    GetSiluTmpSize(srcShape, typeSize, isReuseSource, maxValue, minValue);
}

}  // namespace AscendC

#endif  // MPNPU_ACTIVATION_LIB_H
