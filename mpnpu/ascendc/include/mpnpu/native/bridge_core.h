// The launch machinery every way of calling a kernel shares (all inline): unpacking the kernel's
// arguments from 64-bit slots by its parameter types, setting the core up for one launch, catching
// what stops the kernel, and naming the kernel line a fatal signal interrupted. mpnpu/native/bridge.h
// exports it from a kernel library; mpnpu/cpudebug.h hands it to the core processes of a host program.
#ifndef MPNPU_BRIDGE_CORE_H
#define MPNPU_BRIDGE_CORE_H

#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "abi.h"
#include "../identity.h"
#include "rt.h"
#include "../sync.h"

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
    else if constexpr (std::is_class_v<T> && std::is_trivially_copyable_v<T>)
        return "s" + std::to_string(sizeof(T));  // a struct by value: its slot holds the address of a copy
    else {
        static_assert(std::is_pointer_v<T>, "a kernel parameter must be a pointer, an integer, float, double or a "
                                            "trivially copyable struct");
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
    } else if constexpr (std::is_class_v<T>) {
        T v;
        std::memcpy(static_cast<void*>(&v), reinterpret_cast<const void*>(static_cast<uintptr_t>(s)), sizeof(T));
        return v;
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

inline void put_hex(char*& out, char* end, uint64_t v) {
    char digits[17];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v && n < 16);
    put(out, end, "0x");
    while (n && out < end) *out++ = digits[--n];
}

// "<before>dir/file:line (function)<after>" of the last API call ``s``, or ``none`` when there was none.
inline void put_last_call(char*& out, char* end, const Site& s, const char* before, const char* after,
                          const char* none) {
    if (!s.file) {
        put(out, end, none);
        return;
    }
    put(out, end, before);
    put_site(out, end, s);
    put(out, end, " (");
    put(out, end, s.func);
    put(out, end, ")");
    put(out, end, after);
}

// The instruction a fatal signal stopped, from the signal's saved context (0 where unknown).
inline uintptr_t fault_pc(void* uc) {
    if (!uc) return 0;
#if defined(__x86_64__)
    return uintptr_t(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return uintptr_t(static_cast<ucontext_t*>(uc)->uc_mcontext.pc);
#else
    return 0;
#endif
}

// "; code /path/of/object+0xOFFSET" for the faulting instruction, which the parent turns into the
// kernel line (mpnpu.runtime.code_lines). dladdr is not on the async-signal-safe list, but the fault
// is in the kernel's code, not the loader's, and the process dies next whatever it does.
inline void put_code_address(char*& out, char* end, uintptr_t pc) {
    Dl_info dl{};
    if (!pc || !dladdr(reinterpret_cast<void*>(pc), &dl) || !dl.dli_fname || !dl.dli_fbase) return;
    char exe[512];
    const char* object = dl.dli_fname;
    if (object[0] != '/') {  // the program itself (named as it was started): its absolute path
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) return;
        exe[n] = 0;
        object = exe;
    }
    put(out, end, "; code ");
    put(out, end, object);
    put(out, end, "+");
    put_hex(out, end, uint64_t(pc - reinterpret_cast<uintptr_t>(dl.dli_fbase)));
}

inline void on_fatal_signal(int sig, siginfo_t* info, void* uc) {
    CoreState& c = core();
    const MpnpuLaunch& l = c.launch;
    if (c.in_launch && l.last_words && l.last_words_size > 1) {
        char* out = l.last_words;
        char* end = l.last_words + l.last_words_size - 1;
        put_last_call(out, end, c.last, "at ", ", the last kernel API call before the fault",
                      "before its first kernel API call");
        if ((sig == SIGSEGV || sig == SIGBUS) && info) {  // where it reached (GM past a block's end, say)
            put(out, end, "; fault address ");
            put_hex(out, end, uint64_t(reinterpret_cast<uintptr_t>(info->si_addr)));
            put_code_address(out, end, fault_pc(uc));
        }
        *out = 0;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

// The watchdog's question (WHERE_SIGNAL, mpnpu/runtime/sync.py) to a core that makes no progress:
// during a launch the answer is this core's last API call ("last call: dir/file:line (function)",
// or "no call yet"); outside one, the handler that was there before (the core process's own, which
// answers for a Python kernel) is called. Copying bytes only, as a signal handler may.
inline struct sigaction& where_previous() {
    static struct sigaction previous{};
    return previous;
}

inline void on_where_signal(int sig, siginfo_t* info, void* uc) {
    CoreState& c = core();
    const MpnpuLaunch& l = c.launch;
    if (c.in_launch && l.where && l.where_size > 1) {
        // The watchdog reads the answer as soon as its first byte is not 0 (it cleared that byte
        // before asking): so the whole answer is written first, and its first byte last.
        char answer[1024];
        char* out = answer;
        char* end = answer + std::min<size_t>(sizeof answer, size_t(l.where_size)) - 1;
        // (the two prefixes the watchdog reads: mpnpu.runtime.sync.LAST_CALL and NO_CALL_YET)
        put_last_call(out, end, c.last, "last call: ", "", "no call yet");
        *out = 0;
        std::memcpy(l.where + 1, answer + 1, size_t(out - answer));
        __atomic_store_n(l.where, answer[0], __ATOMIC_RELEASE);
        return;
    }
    const struct sigaction& p = where_previous();
    if (p.sa_flags & SA_SIGINFO) {
        if (p.sa_sigaction) p.sa_sigaction(sig, info, uc);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler) {
        p.sa_handler(sig);
    }
}

inline void install_fault_handlers() {
    static bool installed = false;
    if (installed) return;
    installed = true;
    {
        struct sigaction sa{};
        sa.sa_sigaction = on_where_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(MPNPU_WHERE_SIGNAL, &sa, &where_previous());
    }
    static char alt_stack[64 * 1024];  // a stack overflow must still be reported
    stack_t ss{};
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof alt_stack;
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

inline void begin_launch(const MpnpuLaunch* l) {
    install_fault_handlers();
    CoreState& c = core();
    c.launch = *l;
    ::block_idx = l->block_idx;
    ::block_num = l->block_num;
    c.core_calls = l->core_calls;
    c.tracing = l->trace != 0;
    c.memcheck = l->memcheck != 0;
    c.sys_workspace = nullptr;  // (each launch sets its own, as each kernel on the chip does)
    c.library_syncs = 0;        // (LibrarySyncs guards unwind with every error; this only makes sure)
    c.regions.assign(l->regions, l->regions + l->n_regions);
    std::sort(c.regions.begin(), c.regions.end(),
              [](const MpnpuRegion& a, const MpnpuRegion& b) { return a.addr < b.addr; });
    std::vector<std::string> dropped;
    for (int32_t i = 0; i < l->n_dropped; ++i) dropped.emplace_back(l->dropped[i]);
    c.inserts.assign(l->inserts, l->inserts + (l->inserts ? l->n_inserts : 0));
    if (!c.inserts.empty() && c.lib_base == 0) {
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(&core), &info) != 0) c.lib_base = uintptr_t(info.dli_fbase);
    }
    bool holding = l->hold_site != nullptr && l->hold_site[0] != 0;
    std::string hold_site = holding ? l->hold_site : "";
    if (dropped != c.dropped || holding != c.holding || hold_site != c.hold_site) {
        c.dropped = std::move(dropped);
        c.holding = holding;
        c.hold_site = std::move(hold_site);
        for (SiteInfo& info : c.sites) mark_site(c, info);  // (the sites keep their ids: CoreState::sites)
    }
    c.sync_all_at = Site{nullptr, 0, nullptr};
    c.sync_ids_at = Site{nullptr, 0, nullptr};
    c.task_wait_at = Site{nullptr, 0, nullptr};
    c.task_set_at = Site{nullptr, 0, nullptr};
    c.events.clear();
    c.gm_recs[0] = c.gm_recs[1] = c.gm_recs[2] = CoreState::NO_RECORD;
    std::memset(&c.fault, 0, sizeof c.fault);
    c.atomic_op = 0;
    c.pad_value = 0;
    c.pad_value_set = false;
    c.last = Site{nullptr, 0, nullptr};
    c.calls = 0;
    c.calls_cell = l->calls ? l->calls : &c.calls_sink;
    c.pipes.configure(&pipe_error, &now_ns);
    c.pipes.source_of_ = &event_source;
    c.vec = VectorRegs{};
    c.pipes.reset((l->pipes & MPNPU_PIPES_ASYNC) != 0, (l->pipes & MPNPU_PIPES_AUTO_SYNC) != 0, l->pipe_latency_ns ? l->pipe_latency_ns : 100000, l->sync_timeout_ns);
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
        c.pipes.finish();  // the kernel ends when its pipes have drained
    } catch (const Fault& f) {
        c.fault = f.info;
        rc = MPNPU_RUN_FAULT;
    } catch (const CoreCallError&) {
        rc = MPNPU_RUN_CORE_CALL_ERROR;
    } catch (const std::exception& e) {
        std::snprintf(c.fault.message, sizeof c.fault.message, "the kernel threw %s", e.what());
        c.fault.site = -1;
        rc = MPNPU_RUN_CXX_EXCEPTION;
    } catch (...) {
        std::snprintf(c.fault.message, sizeof c.fault.message, "the kernel threw a C++ exception");
        c.fault.site = -1;
        rc = MPNPU_RUN_CXX_EXCEPTION;
    }
    // (a kernel's sync left by an exception: its library's part ends, reporting nothing more)
    try {
        if (c.after_user_sync) c.after_user_sync(LAUNCH_ENDED);
    } catch (...) {  // (what it would report is not this launch's failure)
    }
    if (rc != MPNPU_RUN_OK) c.pipes.abort();
    c.in_launch = false;
    return rc;
}

}  // namespace mpnpu

#endif  // MPNPU_BRIDGE_CORE_H
