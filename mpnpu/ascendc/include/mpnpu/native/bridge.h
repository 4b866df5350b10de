// The exported side of the C ABI (mpnpu/native/abi.h): included exactly once per kernel library (its
// functions are plain definitions, so that they are emitted and exported), by the entry
// file mpnpu.ascendc.build.compiler generates after the kernel's own source, with
//
//     MPNPU_EXPORT_ENTRY(kernel_name)
//
// which deduces the kernel's parameter list and exports mpnpu_run (set up the core for one launch,
// call the kernel with its arguments unpacked from 64-bit slots, catch what stops it) and
// mpnpu_entry_signature (the parameter kinds, so the core process can check the arguments it was
// given before calling).
#ifndef MPNPU_BRIDGE_H
#define MPNPU_BRIDGE_H

#include <cstdint>
#include <string>

#include "abi.h"
#include "bridge_core.h"
#include "rt.h"
#include "serve.h"

#define MPNPU_EXPORT extern "C" __attribute__((visibility("default")))

MPNPU_EXPORT int32_t mpnpu_abi_version() { return MPNPU_ABI_VERSION; }

MPNPU_EXPORT int64_t mpnpu_events(const MpnpuEvent** out) {
    mpnpu::CoreState& c = mpnpu::core();
    *out = c.events.data(c.events_flat);
    return int64_t(c.events.size());
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

// The core process's native serving loop (mpnpu/native/serve.h): runs the launches it can, returns
// MPNPU_SERVE_* when the core process must act.
MPNPU_EXPORT int32_t mpnpu_serve(MpnpuServe* s) { return ::mpnpu::serve::loop(s); }

// Tell the loop where a GM allocation's window is in this process (the window table and its hash
// live only in serve.h): 1, or 0 if the table is full.
MPNPU_EXPORT int32_t mpnpu_serve_window(MpnpuServe* s, uint64_t segment, uint64_t root_offset, uint64_t nbytes,
                                        uint64_t addr) {
    return ::mpnpu::serve::window_insert(s, segment, root_offset, nbytes, addr) ? 1 : 0;
}

#ifdef MPNPU_STAGE_HOOKS
// A library built for a launch that inserts syncs at function boundaries (-finstrument-functions,
// with mpnpu's own headers excluded): the compiler calls these on every entry to and exit from the
// kernel's functions, inlined ones included (the library is linked -Bsymbolic, so that its calls bind
// to these and not to the C library's empty ones of the same name).
#define MPNPU_HOOK extern "C" __attribute__((no_instrument_function)) void
MPNPU_HOOK __cyg_profile_func_enter(void* fn, void*) { ::mpnpu::stage_boundary(fn, 1); }
MPNPU_HOOK __cyg_profile_func_exit(void* fn, void*) { ::mpnpu::stage_boundary(fn, 0); }
#undef MPNPU_HOOK
#endif

// The entry point of the kernel library: ``kernel`` is the kernel's name as the source declares it
// (a function, or a function template's specialisation such as add_example<0> or, commas and all,
// select_custom<float, uint8_t, 256>).
#define MPNPU_EXPORT_ENTRY(...)                                                                         \
    using mpnpu_entry_t = decltype(::mpnpu::entry_of(&__VA_ARGS__));                                     \
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
            ::mpnpu::core().after_user_sync = nullptr;                                                   \
            mpnpu_entry_t::invoke(&__VA_ARGS__, slots);                                                  \
        });                                                                                              \
    }

#endif  // MPNPU_BRIDGE_H
