// Qualifiers and kernel macros of the Ascend C language extensions, for a host C++ compiler:
// memory-space and function qualifiers compile away, the core type is decided at run time (one
// library serves every core process of a launch), and the tiling macros copy the tiling struct
// out of its GM buffer.
#ifndef MPNPU_MACROS_H
#define MPNPU_MACROS_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <cstring>
#include <type_traits>

#include "identity.h"
#include "native/rt.h"

// -- qualifiers ---------------------------------------------------------------------------------------
#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __ssbuf__
#define __vector__
#define __cube__
#define __mix__(aic, aiv)
#define __inout_pipe__(pipe)
#define __in_pipe__(pipe)
#define __out_pipe__(pipe)
#define __sync_alias__
#define __sync_noalias__

#define GM_ADDR uint8_t*

// The architecture mpnpu models: the Atlas A2 class (separated cube and vector cores).
#ifndef __NPU_ARCH__
#define __NPU_ARCH__ 2201
#endif
// The AI core version kernels test for the same class (`#if __CCE_AICORE__ >= 220` / `== 220` guard
// the A2-only code of public kernels, e.g. their bfloat16 paths through float; those kernels' CPU-debug
// unit tests do not build without it).
#ifndef __CCE_AICORE__
#define __CCE_AICORE__ 220
#endif

// __BLOCK_LOCAL__: a variable each core has its own copy of (the dev kit's API design notes: a
// block-level thread-local variable). Each mpnpu core is a process of its own, so every global is.
#define __BLOCK_LOCAL__

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

// PRELOAD(n): an instruction-prefetch hint public kernels write directly (on no API page; the
// documented call is ICachePreLoad). There is no instruction cache on a CPU: it does nothing.
#define PRELOAD(n) ((void)(n))

// The core type is a property of the core process running the (one) library.
#define ASCEND_IS_AIV (::mpnpu::is_aiv())
#define ASCEND_IS_AIC (::mpnpu::is_aic())
#define ASCEND_IS_NOT_AIV (!::mpnpu::is_aiv())
#define ASCEND_IS_NOT_AIC (!::mpnpu::is_aic())

#define KERNEL_TASK_TYPE_DEFAULT(value) ::mpnpu::declare_kernel_type(int(value), ::mpnpu::Site::here())
#define KERNEL_TASK_TYPE(key, value)                                                   \
    do {                                                                               \
        if (::mpnpu::tiling_key() == uint64_t(key))                                    \
            ::mpnpu::declare_kernel_type(int(value), ::mpnpu::Site::here());            \
    } while (0)

// -- tiling ---------------------------------------------------------------------------------------------
// TILING_KEY_IS(k) is an expression in parentheses, so kernels can write ``if TILING_KEY_IS(1)``.
#define TILING_KEY_IS(k) (::mpnpu::tiling_key() == uint64_t(k))
#define TILING_KEY_LIST(...) (::mpnpu::tiling_key_in({__VA_ARGS__}))

namespace mpnpu {

inline bool tiling_key_in(std::initializer_list<uint64_t> keys) {
    for (uint64_t k : keys)
        if (k == tiling_key()) return true;
    return false;
}

// The struct a kernel's GET_TILING_DATA fills when it names none (REGISTER_TILING_DEFAULT, or the
// host header's REGISTER_TILING_DATA_CLASS).
template <int Tag = 0>
struct DefaultTiling {
    using type = void;
};

template <typename T>
inline void copy_tiling(T* dst, const uint8_t* tiling, const Site& site) {
    static_assert(std::is_trivially_copyable_v<T>, "a tiling struct is copied out of GM as bytes");
    if (!tiling) api_error(site, "GET_TILING_DATA: the tiling argument is a null pointer");
    gm_access('R', P_S, tiling, tiling, sizeof(T), 0, 1, 1, site, "GET_TILING_DATA");
    std::memcpy(static_cast<void*>(dst), tiling, sizeof(T));
}

}  // namespace mpnpu

#define REGISTER_TILING_DEFAULT(type) \
    static_assert(std::is_class_v<type>, "REGISTER_TILING_DEFAULT needs the tiling struct"); \
    using mpnpu_tiling_default_t [[maybe_unused]] = type
#define REGISTER_TILING_FOR_TILINGKEY(key_expr, type) static_assert(std::is_class_v<type>, "")
#define REGISTER_NONE_TILING static_assert(true, "")

#define GET_TILING_DATA_WITH_STRUCT(type, var, tiling) \
    type var;                                          \
    ::mpnpu::copy_tiling(&var, reinterpret_cast<const uint8_t*>(tiling), ::mpnpu::Site::here())
#define GET_TILING_DATA_PTR_WITH_STRUCT(type, ptr, tiling)                                                   \
    const type* ptr = reinterpret_cast<const type*>(tiling);                                                 \
    ::mpnpu::gm_access('R', ::mpnpu::P_S, ptr, ptr, sizeof(type), 0, 1, 1, ::mpnpu::Site::here(),           \
                       "GET_TILING_DATA_PTR_WITH_STRUCT")
#define GET_TILING_DATA_MEMBER(type, member, var, tiling)                                                     \
    decltype(type::member) var;                                                                              \
    ::mpnpu::copy_member(&var, reinterpret_cast<const uint8_t*>(tiling) + offsetof(type, member),            \
                         ::mpnpu::Site::here())
#define COPY_TILING_WITH_STRUCT(type, src, dst) \
    type dst;                                   \
    std::memcpy(&dst, src, sizeof(type))
#define COPY_TILING_WITH_ARRAY(type, src, dst) COPY_TILING_WITH_STRUCT(type, src, dst)

#if !defined(GET_TILING_DATA) && (!defined(__CCE_KT_TEST__) || defined(MPNPU_TILING_FROM_REGISTRATION))
// Without a struct named: the one REGISTER_TILING_DEFAULT or REGISTER_TILING_DATA_CLASS registered.
// A CPU-debug build (__CCE_KT_TEST__) takes GET_TILING_DATA from the test's tiling header (its
// *_tiling_def.h, or the header `python -m mpnpu.ascendc --kernel-tiling` makes from the host's),
// which may come after this header: no fallback is defined there, so none is redefined, unless
// the build says it has no such header (-DMPNPU_TILING_FROM_REGISTRATION, as `mpnpu ut` does).
#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT(mpnpu_tiling_default_t, var, tiling)
#endif

namespace mpnpu {
template <typename T>
inline void copy_member(T* dst, const uint8_t* src, const Site& site) {
    gm_access('R', P_S, src, src, sizeof(T), 0, 1, 1, site, "GET_TILING_DATA_MEMBER");
    std::memcpy(static_cast<void*>(dst), src, sizeof(T));
}

// The framework of an operator project (`mpnpu ut` builds with MPNPU_FRAMEWORK_WORKSPACE), and a
// direct launch built with HAVE_WORKSPACE, set the system workspace before the kernel runs, as the
// SetSysWorkspace page says: the start of the kernel's workspace argument, its second-to-last
// parameter when a tiling follows it (an operator project's kernel; HAVE_TILING), else its last.
// Elsewhere the kernel must set it (0: no such argument).
#if defined(MPNPU_FRAMEWORK_WORKSPACE) || (defined(HAVE_WORKSPACE) && defined(HAVE_TILING))
constexpr size_t workspace_arg_from_end = 2;
#elif defined(HAVE_WORKSPACE)
constexpr size_t workspace_arg_from_end = 1;
#else
constexpr size_t workspace_arg_from_end = 0;
#endif
}  // namespace mpnpu

// -- workspace ---------------------------------------------------------------------------------------
namespace AscendC {
inline uint8_t*& sys_workspace_slot() { return mpnpu::core().sys_workspace; }
inline void SetSysWorkspace(GM_ADDR workspace) { sys_workspace_slot() = workspace; }
inline GM_ADDR GetSysWorkSpacePtr() {
    constexpr size_t from_end = mpnpu::workspace_arg_from_end;
    const std::vector<uint64_t>& args = mpnpu::core().args;
    if (from_end && !sys_workspace_slot() && args.size() >= from_end)
        return reinterpret_cast<GM_ADDR>(args[args.size() - from_end]);
    return sys_workspace_slot();
}
// The kernel's part of the workspace: on the chip it follows the system workspace; CPU-debug style
// launches (the default) reserve none, so it is the workspace argument itself.
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    if (!workspace) return workspace;
    sys_workspace_slot() = workspace;
    return workspace + mpnpu::core().launch.sys_workspace_bytes;
}
}  // namespace AscendC
using AscendC::GetUserWorkspace;
using AscendC::GetSysWorkSpacePtr;  // (kernels call it unqualified)

#endif  // MPNPU_MACROS_H
