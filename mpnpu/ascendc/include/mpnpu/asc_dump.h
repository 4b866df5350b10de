// Dumping memory from a kernel: asc_dump_gm / asc_dump_ubuf / asc_dump_l1buf / asc_dump_cbuf (L0C) and
// asc_dump, as "utils/debug/asc_dump.h" declares them. Each prints ``dump_size`` elements from the
// address, with the caller's ``desc`` number, to the program's standard output in one write per call:
//
//   [asc_dump] aiv0 desc 1: 32 x half in UB at byte 256
//   1 2 3.5 ...
//
// (mpnpu's wording: the vendor's dump format is not documented.) The bytes are checked against the
// memory they lie in (under memcheck, a GM read past its allocation, or a local read past the memory,
// is the usual error at the kernel's line) and traced as a scalar-unit (PIPE_S) read, so a dump of what
// an asynchronous pipe is still writing shows as a race, as reading it any other way would. A local
// pointer is told apart by the memory it points into, so asc_dump works on any of them; the named forms
// check that the pointer is in the memory they name.
#ifndef MPNPU_ASC_DUMP_H
#define MPNPU_ASC_DUMP_H

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "native/rt.h"
#include "types.h"
#include "vector/engine.h"

namespace mpnpu {
namespace dump {

// The local memory (MPNPU_MEM_*) ``p`` points into, or -1 (then GM).
inline int memory_of(const void* p) {
    for (int mem = 0; mem < MPNPU_MEM_COUNT; ++mem)
        if (offset_in(mem, p) >= 0) return mem;
    return -1;
}

inline const char* memory_name(int mem) {
    static const char* names[] = {"UB", "L1", "L0A", "L0B", "L0C", "BT", "FB", "SPR"};
    return mem >= 0 && mem < MPNPU_MEM_COUNT ? names[mem] : "GM";
}

template <typename T>
inline void append(std::string& out, const T& v) {
    char buf[48];
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t> || std::is_floating_point_v<T>)
        std::snprintf(buf, sizeof buf, "%g", double(float(v)));
    else if constexpr (std::is_signed_v<T>)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    out += buf;
}

// ``want``: the memory the call names (-2: any, -1: GM).
template <typename T>
inline void dump(const T* input, uint32_t desc, uint32_t dump_size, int want, const Site& site, const char* call) {
    static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>,
                  "asc_dump: dumps bool, integer, half, bfloat16_t and float elements");
    if (!input) api_error(site, "%s: the address is null", call);
    const int mem = memory_of(input);
    if (want != -2 && mem != want)
        api_error(site, "%s: the address is in %s, not in %s", call, memory_name(mem), memory_name(want));
    const uint64_t bytes = uint64_t(dump_size) * sizeof(T);
    uint64_t at = 0;
    if (mem < 0) {
        if (MpnpuEvent* rec = gm_access('R', P_S, input, input, bytes, 0, 1, uint32_t(sizeof(T)), site, call)) done(rec);
    } else {
        at = uint64_t(offset_in(mem, input));
        local_access('R', P_S, mem, at, at + bytes, 0, memory_size(mem), site, call);
    }
    std::string text;
    char head[160];
    const CoreState& c = core();
    std::snprintf(head, sizeof head, "[asc_dump] %s%lld desc %u: %u x %s in %s", is_aic() ? "aic" : "aiv",
                  static_cast<long long>(c.launch.block_idx), desc, dump_size, vec::type_name<T>(), memory_name(mem));
    text += head;
    if (mem >= 0) text += " at byte " + std::to_string(at);
    text += "\n";
    for (uint32_t i = 0; i < dump_size; ++i) {
        T v;
        std::memcpy(static_cast<void*>(&v), reinterpret_cast<const uint8_t*>(input) + uint64_t(i) * sizeof(T), sizeof(T));
        if (i) text += (i % 16 == 0) ? "\n" : " ";
        append(text, v);
    }
    text += "\n";
    std::fflush(stdout);
    const ssize_t w = ::write(1, text.data(), text.size());
    (void)w;
}

}  // namespace dump
}  // namespace mpnpu

template <typename T>
inline void asc_dump_gm(__gm__ T* input, uint32_t desc, uint32_t dump_size, MPNPU_SITE) {
    mpnpu::dump::dump<T>(input, desc, dump_size, -1, site, "asc_dump_gm");
}
template <typename T>
inline void asc_dump_ubuf(__ubuf__ T* input, uint32_t desc, uint32_t dump_size, MPNPU_SITE) {
    mpnpu::dump::dump<T>(input, desc, dump_size, MPNPU_MEM_UB, site, "asc_dump_ubuf");
}
template <typename T>
inline void asc_dump_l1buf(__cbuf__ T* input, uint32_t desc, uint32_t dump_size, MPNPU_SITE) {
    mpnpu::dump::dump<T>(input, desc, dump_size, MPNPU_MEM_L1, site, "asc_dump_l1buf");
}
template <typename T>
inline void asc_dump_cbuf(__cc__ T* input, uint32_t desc, uint32_t dump_size, MPNPU_SITE) {
    mpnpu::dump::dump<T>(input, desc, dump_size, MPNPU_MEM_L0C, site, "asc_dump_cbuf");
}
// (the address spaces are one here: asc_dump tells them apart by the memory the address is in)
template <typename T>
inline void asc_dump(T* input, uint32_t desc, uint32_t dump_size, MPNPU_SITE) {
    mpnpu::dump::dump<T>(input, desc, dump_size, -2, site, "asc_dump");
}

#endif  // MPNPU_ASC_DUMP_H
