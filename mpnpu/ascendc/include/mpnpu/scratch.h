// The caller's temporary buffer of a high-level call (Sort's tmp, CumSum's and Sum's sharedTmpBuffer).
//
// The pages say only that the call keeps intermediate values there; how much of it the device uses is
// each call's own model (written at the top of its header). check_scratch refuses a buffer outside
// UB or not 32-byte aligned, and one whose used part overlaps an operand (the call would overwrite
// its own input or output); trace_scratch records the used part as written, then read, on PIPE_V
// (its contents are left as they were: undefined after the call on the device).
#ifndef MPNPU_SCRATCH_H
#define MPNPU_SCRATCH_H

#include <cstdint>
#include <initializer_list>

#include "native/rt.h"
#include "tensor.h"
#include "vector/engine.h"

namespace mpnpu {
namespace lib {

// An operand's bytes, for the overlap check.
struct Span {
    const void* addr;
    uint64_t bytes;
    const char* what;
};

template <typename T>
inline Span span_of(const AscendC::LocalTensor<T>& t, uint64_t elems, const char* what) {
    return Span{t.mpnpu_addr(), elems * sizeof(T), what};
}

// Checks the buffer and returns the bytes of it the call uses: ``need``, or all of it when smaller.
template <typename S>
inline uint64_t check_scratch(const AscendC::LocalTensor<S>& tmp, uint64_t need, std::initializer_list<Span> operands,
                              const Site& site, const char* name, const char* what) {
    vec::check_operand(tmp, 32, site, name, what);
    const uint64_t have = uint64_t(tmp.GetSize()) * sizeof(S);
    const uint64_t used = have < need ? have : need;
    for (const Span& o : operands)
        if (vec::overlaps(tmp.mpnpu_addr(), used, o.addr, o.bytes))
            api_error(site, "%s: %s overlaps %s (the call uses its first %llu bytes as scratch)", name, what, o.what,
                      (unsigned long long)used);
    return used;
}

template <typename S>
inline void trace_scratch(const AscendC::LocalTensor<S>& tmp, uint64_t used, const Site& site, const char* name) {
    if (!used) return;
    tmp.mpnpu_touch_bytes('W', P_V, 0, used, site, name);
    tmp.mpnpu_touch_bytes('R', P_V, 0, used, site, name);
}

}  // namespace lib
}  // namespace mpnpu

#endif  // MPNPU_SCRATCH_H
