// The host side of CPU-debug unit tests: GmAlloc / GmFree, SetKernelMode, ICPU_SET_TILING_KEY and
// ICPU_RUN_KF, for a test program that links its kernel in (built with the flags
// `python -m mpnpu.ascendc --cflags --libs` prints).
//
//   ICPU_RUN_KF(kernel, blockDim, args...)
//     └─ libmpnpu_cpudebug: the embedded mpnpu runtime (mpnpu.tools.cpudebug) launches the kernel on the
//        multi-process device: one process per core (3 per block for mix kernels), forked from
//        this program, so they run the kernel code linked into it, on GM that GmAlloc mapped at the
//        same address in every core process.
//
// A kernel fault or deadlock ends the program with one line naming the core and the kernel line.
// Environment (unset: nothing is printed): MPNPU_DROP_SYNC=FILE:LINE[,...], MPNPU_RACECHECK=1|fail,
// MPNPU_TIMELINE=PATH, MPNPU_REPEAT=N (docs/ascendc.md, "CPU-debug unit tests").
#ifndef MPNPU_HOST_H
#define MPNPU_HOST_H

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "native/abi.h"
#include "native/bridge_core.h"

// MIX_AIC_1_1 is on no API page (its enum has the first three): a public unit test of a mix kernel
// sets it, as the name says one cube core and one vector core per block.
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };

extern "C" {
// libmpnpu_cpudebug
void* mpnpu_cpudebug_gm_alloc(size_t size);
void mpnpu_cpudebug_gm_free(void* ptr);
void mpnpu_cpudebug_set_kernel_mode(int32_t mode);
void mpnpu_cpudebug_set_tiling_key(uint64_t key);
void mpnpu_cpudebug_host_state(int32_t* mode, uint64_t* key);
void mpnpu_cpudebug_run_kf(const MpnpuCpuDebugLaunch* launch);
}

namespace AscendC {

// GM that every core process of a launch sees at the same address.
inline void* GmAlloc(size_t size) { return mpnpu_cpudebug_gm_alloc(size); }
inline void GmFree(void* ptr) { mpnpu_cpudebug_gm_free(ptr); }
inline void SetKernelMode(KernelMode mode) { mpnpu_cpudebug_set_kernel_mode(int32_t(mode)); }

}  // namespace AscendC

namespace mpnpu {
namespace cpudebug {

// One launch as the kernel type its own qualifier declares (a dev kit sample's ``__vector__`` or
// ``__cube__`` kernel beside kernels of another type in one program: mpnpu samples stages its
// launches inside one of these); the program's own SetKernelMode is back in force afterwards.
struct LaunchAs {
    int32_t saved = -1;
    explicit LaunchAs(::KernelMode mode) {
        uint64_t key = 0;
        mpnpu_cpudebug_host_state(&saved, &key);
        mpnpu_cpudebug_set_kernel_mode(int32_t(mode));
    }
    ~LaunchAs() { mpnpu_cpudebug_set_kernel_mode(saved); }
    LaunchAs(const LaunchAs&) = delete;
    LaunchAs& operator=(const LaunchAs&) = delete;
};

// What the core processes call back into: this program's own copy of the runtime (the kernel's
// API calls use it), as a table rather than exported symbols.
inline int64_t export_events(const MpnpuEvent** out) {
    CoreState& c = core();
    *out = c.events.data(c.events_flat);
    return int64_t(c.events.size());
}

inline int32_t export_site(int32_t id, const char** file, int32_t* line, const char** func) {
    const auto& sites = core().sites;
    if (id < 0 || size_t(id) >= sites.size()) return 0;
    *file = sites[size_t(id)].site.file;
    *line = sites[size_t(id)].site.line;
    *func = sites[size_t(id)].site.func;
    return 1;
}

inline const MpnpuFault* export_fault() { return &core().fault; }

template <typename... A>
int32_t invoke(const MpnpuLaunch* launch, void* fn, const uint64_t* slots, int32_t n) {
    if (n != int32_t(sizeof...(A))) return MPNPU_RUN_CXX_EXCEPTION;
    auto kernel = reinterpret_cast<void (*)(A...)>(fn);
    return run_launch(launch, [&] {
        core().args.assign(slots, slots + n);  // (the matmul client names GM by argument: mpnpu/cube)
        core().before_user_sync = nullptr;
        core().after_user_sync = nullptr;
        Entry<A...>::invoke(kernel, slots);
    });
}

// One table per kernel signature, constant-initialised: it is in the program's image from the start, so
// core processes forked by an earlier launch (of another kernel) find it too. (A table filled in on
// first use would exist only in the program, not in those core processes.)
template <typename... P>
inline constexpr MpnpuExports exports_for = {MPNPU_ABI_VERSION, &invoke<P...>, &export_events, &export_site, &export_fault};

// A struct passed by value travels as a copy in GM (the core processes see GM, not this program's
// stack); the copies of one launch are freed after it.
inline std::vector<void*>& struct_copies() {
    static std::vector<void*> copies;
    return copies;
}

template <typename A>
inline uint64_t to_slot(A v) {
    using T = std::decay_t<A>;
    if constexpr (std::is_class_v<T>) {
        void* copy = mpnpu_cpudebug_gm_alloc(sizeof(T));
        std::memcpy(copy, static_cast<const void*>(&v), sizeof(T));
        struct_copies().push_back(copy);
        return uint64_t(reinterpret_cast<uintptr_t>(copy));
    } else if constexpr (std::is_pointer_v<T>) return uint64_t(reinterpret_cast<uintptr_t>(v));
    else if constexpr (std::is_same_v<T, float>) {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        return b;
    } else if constexpr (std::is_same_v<T, double>) {
        uint64_t b;
        std::memcpy(&b, &v, 8);
        return b;
    } else {
        return uint64_t(v);
    }
}

template <typename... P, typename... A>
void run_kf(const char* name, void (*kernel)(P...), uint32_t block_dim, const char* arg_names, const char* file,
            int line, A... args) {
    static_assert(sizeof...(P) == sizeof...(A), "ICPU_RUN_KF: pass as many arguments as the kernel takes");
    uint64_t slots[sizeof...(A) + 1] = {to_slot<P>(static_cast<P>(args))..., 0};
    static const std::string signature = Entry<P...>::signature();
    MpnpuCpuDebugLaunch l{};
    l.abi = MPNPU_ABI_VERSION;
    l.kernel = name;
    l.file = file;
    l.line = line;
    l.block_dim = int32_t(block_dim);
    l.kernel_mode = -1;  // the last SetKernelMode (libmpnpu_cpudebug keeps it)
    l.fn = reinterpret_cast<void*>(kernel);
    l.signature = signature.c_str();
    l.n_args = int32_t(sizeof...(A));
    l.slots = slots;
    l.arg_names = arg_names;
    l.exports = &exports_for<P...>;
    mpnpu_cpudebug_run_kf(&l);
    for (void* copy : struct_copies()) mpnpu_cpudebug_gm_free(copy);
    struct_copies().clear();
}

// A lambda with captures as the kernel (unit tests write one that picks the kernel instance from
// their parameters): the core processes call a copy of the lambda object in GM, through
// call_copy, which takes the copy's address as a first argument of its own. The copy is the
// object's bytes (it is never destroyed); what the captures point to is read where it is in each
// core process's memory, so a capture that points into this program's heap (a std::string, say)
// holds what it held when that core process was forked: plain values are safe.
template <class M>
struct CallCopy;
template <class F, class R, class... P>
struct CallCopy<R (F::*)(P...) const> {
    static void call(void* self, P... args) { (*static_cast<const F*>(self))(args...); }
};
template <class F, class R, class... P>
struct CallCopy<R (F::*)(P...)> {
    static void call(void* self, P... args) { (*static_cast<F*>(self))(args...); }
};

template <class F, class = void>
struct IsPlainKernel : std::false_type {};
template <class F>
struct IsPlainKernel<F, std::void_t<decltype(+std::declval<F&>())>> : std::true_type {};

template <class G, typename... A>
void launch(const char* name, G&& func, uint32_t block_dim, const char* arg_names, const char* file, int line,
            A... args) {
    using F = std::remove_reference_t<G>;
    if constexpr (IsPlainKernel<F>::value) {  // a kernel function, or a lambda without captures
        run_kf(name, +func, block_dim, arg_names, file, line, args...);
    } else {
        static_assert(std::is_class_v<F>, "ICPU_RUN_KF: the kernel is a function or a lambda");
        void* copy = mpnpu_cpudebug_gm_alloc(sizeof(F));
        std::memcpy(copy, static_cast<const void*>(&func), sizeof(F));
        const std::string names = std::string("captures, ") + arg_names;
        run_kf(name, &CallCopy<decltype(&F::operator())>::call, block_dim, names.c_str(), file, line, copy, args...);
        mpnpu_cpudebug_gm_free(copy);
    }
}

}  // namespace cpudebug
}  // namespace mpnpu

#define ICPU_SET_TILING_KEY(key) mpnpu_cpudebug_set_tiling_key(uint64_t(key))
#define ICPU_RUN_KF(func, blockdim, ...) \
    ::mpnpu::cpudebug::launch(#func, func, uint32_t(blockdim), #__VA_ARGS__, __FILE__, __LINE__, __VA_ARGS__)

// The bounded memory functions of the secure C library that these tests call (securec.h).
#ifndef MPNPU_NO_SECUREC
#include "../securec.h"
#endif

#endif  // MPNPU_HOST_H
