// Small names of the kernel API that kernels use everywhere: ASSERT, ASCENDC_ASSERT, KERNEL_LOG, AlignUp / DivCeil, the Std
// namespace (the standard library's type traits under AscendC::Std), AscendCUtils, ToFloat, the
// core-type global g_coreType, the float16_t / float32_t / int4b_t types, InitGlobalMemory / InitOutput /
// Fill (of GM), and
// the cache-maintenance enumerations (CacheLine, CacheMode, DcciDst) that change nothing on a CPU, and Trap.
// Written from the documented behaviour of each; see docs/ascendc.md's API table.
#ifndef MPNPU_UTILS_H
#define MPNPU_UTILS_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "debug.h"
#include "identity.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/mask.h"

namespace mpnpu {
[[noreturn]] inline void assert_failed(const char* cond, const Site& site) {
    api_error(site, "ASSERT(%s) failed", cond);
}
}  // namespace mpnpu

// A kernel's assertion: a false condition ends the launch with one line naming the kernel's
// file:line and the condition (the device stops the kernel there too).
#ifndef ASSERT
#define ASSERT(cond) \
    ((cond) ? static_cast<void>(0) : ::mpnpu::assert_failed(#cond, ::mpnpu::Site{__FILE__, __LINE__, __func__}))
#endif

namespace mpnpu {
// KERNEL_LOG(level, fmt, args...): one line on stderr, "[KERNEL_ERROR] file:line: message" (printf's
// format; the levels KERNEL_DEBUG, KERNEL_INFO, KERNEL_WARN, KERNEL_ERROR are names the macro spells).
template <typename... A>
inline void kernel_log(const char* level, const char* file, int line, const char* fmt, A... args) {
    std::fprintf(stderr, "[%s] %s:%d: ", level, file, line);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
    std::fprintf(stderr, fmt, args...);
#pragma GCC diagnostic pop
    std::fputc('\n', stderr);
}
}  // namespace mpnpu

#ifndef KERNEL_LOG
#define KERNEL_LOG(level, ...) ::mpnpu::kernel_log(#level, __FILE__, __LINE__, __VA_ARGS__)
#endif

// ASCENDC_ASSERT(cond, behavior): in a CPU-debug build (which every mpnpu build is), a false condition
// runs ``behavior`` (the kernel's own message, usually a KERNEL_LOG) and ends the launch with one line
// naming the kernel's file:line and the condition.
#ifndef ASCENDC_ASSERT
#define ASCENDC_ASSERT(cond, behavior)                                                          \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            behavior;                                                                           \
            ::mpnpu::assert_failed(#cond, ::mpnpu::Site{__FILE__, __LINE__, __func__});         \
        }                                                                                       \
    } while (0)
#endif

namespace mpnpu {
// ascendc_assert(cond) / ascendc_assert(cond, fmt, args...): a false condition ends the launch with one
// line naming the kernel's file:line, the condition and the formatted message.
template <typename... Rest>
inline void ascendc_assert_check(const Site& site, const char* text, bool cond, const Rest&... rest) {
    if (cond) return;
    if constexpr (sizeof...(Rest) == 0) {
        api_error(site, "ascendc_assert(%s) failed", text);
    } else {
        char msg[1024];
        format_to(msg, sizeof msg, rest...);
        size_t n = std::strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
        api_error(site, "ascendc_assert failed: %s", msg);
    }
}
}  // namespace mpnpu

#ifndef ascendc_assert
#define ascendc_assert(...) \
    ::mpnpu::ascendc_assert_check(::mpnpu::Site{__FILE__, __LINE__, __func__}, #__VA_ARGS__, __VA_ARGS__)
#endif

using float16_t = half;
using float32_t = float;

// (int4b_t, the signed 4-bit integer: types.h)

namespace AscendC {
using ::int4b_t;  // (kernels name it AscendC::int4b_t too)

// Sizes of this chip class's memories and the vector unit's repeat limit, as kernels name them.
constexpr uint32_t TOTAL_UB_SIZE = uint32_t(mpnpu::UB_BYTES);
constexpr uint32_t TOTAL_L1_SIZE = uint32_t(mpnpu::L1_BYTES);
constexpr uint32_t MAX_REPEAT_TIMES = 255;
// EIGHT and SIXTEEN: on no API page. A public kernel (ops-nn index/top_k_top_p_sample) names them without
// defining them, so the vendor's headers give them somewhere a kernel sees after using namespace AscendC;
// the values are their names. A kernel's own constants of these names (in its namespace) hide them.
constexpr uint32_t EIGHT = 8;
constexpr uint32_t SIXTEEN = 16;

// ``value`` rounded up to a multiple of ``align`` / the ceiling of a division (0 when divided by 0).
template <typename T, typename U>
constexpr auto AlignUp(T value, U align) -> std::common_type_t<T, U> {
    using R = std::common_type_t<T, U>;
    return align == 0 ? R(value) : R((R(value) + R(align) - 1) / R(align) * R(align));
}
template <typename T, typename U>
constexpr auto DivCeil(T value, U divisor) -> std::common_type_t<T, U> {
    using R = std::common_type_t<T, U>;
    return divisor == 0 ? R(0) : R((R(value) + R(divisor) - 1) / R(divisor));
}

// AscendC::Std: the standard library's utilities and type traits, as kernels spell them.
namespace Std {
using namespace std;  // NOLINT: Std::conditional_t, Std::is_same_v, Std::tuple, Std::max ...
template <typename...>
inline constexpr bool always_false_v = false;
}  // namespace Std

// The type trait kernels also spell AscendC::Conditional<B, If, Then>::type (Std::conditional's older
// name): If when B holds, else Then.
template <bool B, typename If, typename Then>
struct Conditional {
    using type = std::conditional_t<B, If, Then>;
};

// A bfloat16 or half value (or any arithmetic one) as float.
template <typename T>
inline float ToFloat(const T& v) { return mpnpu::to_float(v); }
inline bfloat16_t ToBfloat16(float v) { return bfloat16_t(v); }
// Their newer names: Cast(bfloat16_t) -> float and Cast(float) -> bfloat16_t, one scalar each (the
// argument's type exactly, so a half or an integer is not converted into either silently).
template <typename T, std::enable_if_t<std::is_same_v<T, bfloat16_t>, int> = 0>
inline float Cast(const T& bVal) { return mpnpu::to_float(bVal); }
template <typename T, std::enable_if_t<std::is_same_v<T, float>, int> = 0>
inline bfloat16_t Cast(const T& fVal) { return bfloat16_t(fVal); }

// Which kind of core runs this code: ``g_coreType == AIC`` on a cube core.
enum CoreTypeValue : int32_t { AIC = 1, AIV = 2, MIX = 3 };
inline CoreTypeValue core_type_now() { return mpnpu::is_aic() ? AIC : AIV; }

// Utilities of the vector unit's mask register.
struct AscendCUtils {
    // The first ``len`` lanes of a repeat (normal mode): SetVectorMask<T>(len).
    template <typename T>
    static void SetMask(int32_t len, MPNPU_SITE) { SetVectorMask<T>(len, site); }
    template <typename T>
    static void SetMask(uint64_t maskHigh, uint64_t maskLow, MPNPU_SITE) {
        SetVectorMask<T>(maskHigh, maskLow, site);
    }
    // Elements of ``typeSize`` bytes in one 32-byte block.
    static uint32_t GetC0Count(uint32_t typeSize) { return typeSize == 0 ? 0 : 32 / typeSize; }
    template <typename T>
    static constexpr uint32_t GetBitSize() { return uint32_t(sizeof(T) * 8); }
    static uint32_t GetBitSize(uint32_t byteSize) { return byteSize * 8; }
    // The vector unit's float overflow mode (1: on, 0: off), which kernels set around calls whose
    // intermediates may overflow. mpnpu's vector results are IEEE-754 in either mode (an overflow
    // gives inf, as in the mode that keeps inf/nan), so the mode is only checked to be 0 or 1.
    static void SetOverflow(uint64_t ctrlValue, MPNPU_SITE) {
        if (ctrlValue > 1)
            mpnpu::api_error(site, "AscendCUtils::SetOverflow(%llu): the mode is 0 or 1",
                             (unsigned long long)ctrlValue);
    }
};

// Cache maintenance (DataCacheCleanAndInvalid): the cache these control does not exist on a CPU,
// where every core sees GM as it is; the calls take their documented arguments and do nothing.
enum class CacheLine : int32_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE = 1 };
enum class DcciDst : int32_t { CACHELINE_ALL = 0, CACHELINE_UB = 1, CACHELINE_OUT = 2, CACHELINE_ATOMIC = 3 };
template <typename T, CacheLine entire = CacheLine::SINGLE_CACHE_LINE, DcciDst dst = DcciDst::CACHELINE_OUT>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&) {}
template <typename T, CacheLine entire = CacheLine::SINGLE_CACHE_LINE>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&, uint64_t) {}

// Instruction-cache prefetch: ICachePreLoad(preFetchLen) preloads preFetchLen x 2 KB of the kernel's
// instructions (documented: fewer than the core's ICache size / 2 KB, 32 KB on a cube core and 16 KB on
// a vector core); there is no instruction cache to fill on a CPU, so only the range is checked.
inline void ICachePreLoad(const int64_t preFetchLen, MPNPU_SITE) {
    const int64_t limit = ::mpnpu::is_aic() ? 16 : 8;
    if (preFetchLen < 0 || preFetchLen >= limit)
        ::mpnpu::api_error(site, "ICachePreLoad(%lld): the length is in 2 KB units and below %lld on a %s core "
                           "(its instruction cache / 2 KB)", (long long)preFetchLen, (long long)limit,
                           ::mpnpu::is_aic() ? "cube" : "vector");
}

// Fill ``size`` elements of GM from ``gm`` with ``value``: a write of those bytes on MTE3 (the
// kernel orders it before what reads them, as after any copy out).
template <typename T, typename V>
inline void InitGlobalMemory(const GlobalTensor<T>& gm, uint64_t size, const V& value, MPNPU_SITE) {
    T* first = gm.mpnpu_addr();
    auto* rec = mpnpu::gm_access('W', mpnpu::P_MTE3, gm.mpnpu_base(), first, size * sizeof(T), 0, 1,
                                 uint32_t(sizeof(T)), site, "InitGlobalMemory");
    std::fill(first, first + size, T(value));
    mpnpu::done(rec);
}
// InitOutput: the same fill, by its other name (an output zeroed before the kernel accumulates)
template <typename T, typename V>
inline void InitOutput(const GlobalTensor<T>& gm, uint64_t size, const V& value, MPNPU_SITE) {
    InitGlobalMemory(gm, size, value, site);
}
// Fill (the high-level API's tensor transforms): the same fill of size elements of GM with value
template <typename T>
inline void Fill(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value, MPNPU_SITE) {
    InitGlobalMemory(gmWorkspaceAddr, size, value, site);
}

// Trap: the kernel's own stop for a case it cannot handle (on the device it halts the AI core; in a
// CPU-debug build it acts as a failed assert). Here: the launch ends with an error at the kernel's
// line, as a failed ASSERT does.
[[noreturn]] inline void Trap(MPNPU_SITE) { mpnpu::api_error(site, "Trap() called: the kernel stopped the core"); }

}  // namespace AscendC

#define g_coreType (::AscendC::core_type_now())

// The device compiler's scalar min and max, which kernels call unqualified (min(baseM, rowNum)): one
// non-template overload a type, so that with `using namespace std` a call of two same-typed values
// still picks these (a non-template beats std::min's template) rather than being ambiguous. A CPU-debug
// build (ASCENDC_CPU_DEBUG) is a host build with no such builtins: unit tests define their own
// `min(int, int)` there, which these would clash with.
#ifndef ASCENDC_CPU_DEBUG
#define MPNPU_SCALAR_MINMAX(T)                                  \
    inline T min(T a, T b) { return b < a ? b : a; }            \
    inline T max(T a, T b) { return a < b ? b : a; }
MPNPU_SCALAR_MINMAX(int32_t)
MPNPU_SCALAR_MINMAX(uint32_t)
MPNPU_SCALAR_MINMAX(int64_t)
MPNPU_SCALAR_MINMAX(uint64_t)
MPNPU_SCALAR_MINMAX(float)
#undef MPNPU_SCALAR_MINMAX
#endif

#endif  // MPNPU_UTILS_H
