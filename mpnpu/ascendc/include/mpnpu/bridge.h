// The exported side of the C ABI (mpnpu/abi.h): included exactly once per kernel library (its
// functions are plain definitions, so that they are emitted and exported), by the entry
// file mpnpu.ascendc.build generates after the kernel's own source, with
//
//     MPNPU_EXPORT_ENTRY(kernel_name)
//
// which deduces the kernel's parameter list and exports mpnpu_run (set up the core for one launch,
// call the kernel with its arguments unpacked from 64-bit slots, catch what stops it) and
// mpnpu_entry_signature (the parameter kinds, so the core process can check the arguments it was
// given before calling).
#ifndef MPNPU_BRIDGE_H
#define MPNPU_BRIDGE_H

#include <signal.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "abi.h"
#include "rt.h"

#define MPNPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace mpnpu {

// One character per parameter: 'p' pointer (GM_ADDR and other pointers), 'i'/'u' signed/unsigned
// integer of 1, 2, 4 or 8 bytes (followed by the size), 'f' float, 'd' double.
template <typename A>
inline std::string param_kind() {
    using T = std::decay_t<A>;
    if constexpr (std::is_pointer_v<T>) return "p";
    else if constexpr (std::is_same_v<T, bool>) return "u1";
    else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
        return std::string(std::is_signed_v<T> ? "i" : "u") + std::to_string(sizeof(T));
    else if constexpr (std::is_same_v<T, float>) return "f";
    else if constexpr (std::is_same_v<T, double>) return "d";
    else {
        static_assert(std::is_pointer_v<T>, "a kernel parameter must be a pointer, an integer, float or double");
        return "";
    }
}

template <typename A>
inline A from_slot(uint64_t s) {
    using T = std::decay_t<A>;
    if constexpr (std::is_pointer_v<T>) return reinterpret_cast<T>(static_cast<uintptr_t>(s));
    else if constexpr (std::is_same_v<T, float>) {
        uint32_t bits = uint32_t(s);
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    } else if constexpr (std::is_same_v<T, double>) {
        double d;
        std::memcpy(&d, &s, 8);
        return d;
    } else {
        return static_cast<T>(s);
    }
}

template <typename... A>
struct Entry {
    static std::string signature() {
        std::string out;
        ((out += param_kind<A>() + ","), ...);
        return out;
    }
    template <size_t... I>
    static void call(void (*fn)(A...), const uint64_t* slots, std::index_sequence<I...>) {
        fn(from_slot<A>(slots[I])...);
    }
    static void invoke(void (*fn)(A...), const uint64_t* slots) { call(fn, slots, std::index_sequence_for<A...>{}); }
    static constexpr int arity = int(sizeof...(A));
};

template <typename... A>
Entry<A...> entry_of(void (*)(A...));

// -- a kernel that crashes -------------------------------------------------------------------------------
// A fatal signal during a launch leaves "at dir/file:line (function), the last kernel API call" for
// the parent (MpnpuLaunch.last_words, in memory the parent reads), then dies of the signal as it
// would have. Only async-signal-safe work happens in the handler: copying bytes.

inline void put(char*& out, char* end, const char* s) {
    while (s && *s && out < end) *out++ = *s++;
}

inline void put_int(char*& out, char* end, long v) {
    char digits[24];
    int n = 0;
    if (v < 0) {
        put(out, end, "-");
        v = -v;
    }
    do {
        digits[n++] = char('0' + v % 10);
        v /= 10;
    } while (v && n < 24);
    while (n && out < end) *out++ = digits[--n];
}

inline void on_fatal_signal(int sig) {
    CoreState& c = core();
    const MpnpuLaunch& l = c.launch;
    if (c.in_launch && l.last_words && l.last_words_size > 1) {
        char* out = l.last_words;
        char* end = l.last_words + l.last_words_size - 1;
        const Site& s = c.last;
        if (s.file) {
            const char* f = s.file;
            const char* slash = nullptr;
            const char* prev = nullptr;
            for (const char* p = f; *p; ++p)
                if (*p == '/') {
                    prev = slash;
                    slash = p;
                }
            put(out, end, "at ");
            put(out, end, prev ? prev + 1 : (slash ? slash + 1 : f));
            put(out, end, ":");
            put_int(out, end, s.line);
            put(out, end, " (");
            put(out, end, s.func);
            put(out, end, "), the last kernel API call before the fault");
        } else {
            put(out, end, "before its first kernel API call");
        }
        *out = 0;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

inline void install_fault_handlers() {
    static bool installed = false;
    if (installed) return;
    installed = true;
    static char alt_stack[64 * 1024];  // a stack overflow must still be reported
    stack_t ss{};
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof alt_stack;
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

inline void begin_launch(const MpnpuLaunch* l) {
    install_fault_handlers();
    CoreState& c = core();
    c.launch = *l;
    c.host = l->host;
    c.tracing = l->trace != 0;
    c.memcheck = l->memcheck != 0;
    c.regions.assign(l->regions, l->regions + l->n_regions);
    std::sort(c.regions.begin(), c.regions.end(),
              [](const MpnpuRegion& a, const MpnpuRegion& b) { return a.addr < b.addr; });
    c.dropped.clear();
    for (int32_t i = 0; i < l->n_dropped; ++i) c.dropped.emplace_back(l->dropped[i]);
    c.holding = l->hold_site != nullptr && l->hold_site[0] != 0;
    c.hold_site = c.holding ? l->hold_site : "";
    c.site_ids.clear();
    c.sites.clear();
    c.events.clear();
    std::memset(&c.fault, 0, sizeof c.fault);
    c.atomic_op = 0;
    c.last = Site{nullptr, 0, nullptr};
    std::memset(c.raised, 0, sizeof c.raised);
    c.in_launch = true;
}

// Runs ``body`` as one launch on this core; the MPNPU_RUN_* code of how it ended.
template <typename F>
inline int32_t run_launch(const MpnpuLaunch* l, F&& body) {
    if (!l || l->abi != MPNPU_ABI_VERSION) return MPNPU_RUN_CXX_EXCEPTION;
    begin_launch(l);
    CoreState& c = core();
    int32_t rc = MPNPU_RUN_OK;
    try {
        body();
    } catch (const Fault& f) {
        c.fault = f.info;
        rc = MPNPU_RUN_FAULT;
    } catch (const HostError&) {
        rc = MPNPU_RUN_HOST_ERROR;
    } catch (const std::exception& e) {
        std::snprintf(c.fault.message, sizeof c.fault.message, "the kernel threw %s", e.what());
        c.fault.site = -1;
        rc = MPNPU_RUN_CXX_EXCEPTION;
    } catch (...) {
        std::snprintf(c.fault.message, sizeof c.fault.message, "the kernel threw a C++ exception");
        c.fault.site = -1;
        rc = MPNPU_RUN_CXX_EXCEPTION;
    }
    c.in_launch = false;
    return rc;
}

}  // namespace mpnpu

MPNPU_EXPORT int32_t mpnpu_abi_version() { return MPNPU_ABI_VERSION; }

MPNPU_EXPORT int64_t mpnpu_events(const MpnpuEvent** out) {
    const auto& e = mpnpu::core().events;
    *out = e.empty() ? nullptr : e.data();
    return int64_t(e.size());
}

MPNPU_EXPORT int32_t mpnpu_site_count() { return int32_t(mpnpu::core().sites.size()); }

// Site ``id``: its file (as the compiler saw it), line and function; 0 if there is no such site.
MPNPU_EXPORT int32_t mpnpu_site(int32_t id, const char** file, int32_t* line, const char** func) {
    const auto& sites = mpnpu::core().sites;
    if (id < 0 || size_t(id) >= sites.size()) return 0;
    const mpnpu::Site& s = sites[size_t(id)].site;
    *file = s.file;
    *line = s.line;
    *func = s.func;
    return 1;
}

MPNPU_EXPORT const MpnpuFault* mpnpu_fault() { return &mpnpu::core().fault; }

// The entry point of the kernel library: ``kernel`` is the kernel's name as the source declares it
// (a function, or a function template's specialisation such as add_example<0>).
#define MPNPU_EXPORT_ENTRY(kernel)                                                                      \
    using mpnpu_entry_t = decltype(::mpnpu::entry_of(&kernel));                                          \
    MPNPU_EXPORT const char* mpnpu_entry_signature() {                                                   \
        static const std::string sig = mpnpu_entry_t::signature();                                       \
        return sig.c_str();                                                                              \
    }                                                                                                    \
    MPNPU_EXPORT int32_t mpnpu_entry_arity() { return mpnpu_entry_t::arity; }                            \
    MPNPU_EXPORT int32_t mpnpu_run(const MpnpuLaunch* launch, const uint64_t* slots, int32_t n_slots) {  \
        if (n_slots != mpnpu_entry_t::arity) return MPNPU_RUN_CXX_EXCEPTION;                             \
        return ::mpnpu::run_launch(launch, [&] {                                                         \
            ::mpnpu::core().args.assign(slots, slots + n_slots);                                         \
            ::mpnpu::core().before_user_sync = nullptr;                                                  \
            mpnpu_entry_t::invoke(&kernel, slots);                                                       \
        });                                                                                              \
    }

#endif  // MPNPU_BRIDGE_H
