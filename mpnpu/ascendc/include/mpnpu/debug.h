// Printing from a kernel: AscendC::printf (and PRINTF), as the dev kit's debugging samples use it. Each
// core prints to the program's standard output (up to 4095 bytes a call); a half or bfloat16_t argument
// is printed as the float it holds (the variadic call takes it as a double, as %f expects).
#ifndef MPNPU_DEBUG_H
#define MPNPU_DEBUG_H

#include <unistd.h>

#include <cstdio>
#include <type_traits>

#include "types.h"

namespace mpnpu {

template <typename A>
inline auto printable(const A& a) {
    if constexpr (std::is_same_v<A, half> || std::is_same_v<A, bfloat16_t>) return double(float(a));
    else return a;
}

// A kernel's format string and arguments into ``out`` (printf, ascendc_assert's message); the length
// the whole text would have, as snprintf returns it.
template <typename... A>
inline int format_to(char* out, size_t size, const char* fmt, const A&... args) {
    if constexpr (sizeof...(A) == 0) {
        return std::snprintf(out, size, "%s", fmt);
    } else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
        return std::snprintf(out, size, fmt, printable(args)...);
#pragma GCC diagnostic pop
    }
}

}  // namespace mpnpu

namespace AscendC {

// Each call's text goes out in one write, so the lines of cores printing at once do not interleave.
template <typename... Args>
inline void printf(const char* fmt, const Args&... args) {
    char buf[4096];
    int n = ::mpnpu::format_to(buf, sizeof buf, fmt, args...);
    if (n <= 0) return;
    std::fflush(stdout);  // (what the program printed before comes first)
    ssize_t w = ::write(1, buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
    (void)w;
}

template <typename... Args>
inline void PRINTF(const char* fmt, const Args&... args) {
    printf(fmt, args...);
}

}  // namespace AscendC

#endif  // MPNPU_DEBUG_H
