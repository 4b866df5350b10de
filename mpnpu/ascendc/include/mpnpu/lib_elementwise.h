// The shared operand handling of the library's element-wise calls that take an optional temporary
// buffer (activation_lib.h: Gelu, GeGLU, SwiGLU, Silu, Swish; math_lib2.h: Fmod, Xor, Exp, Axpy;
// power.h's buffer forms).
//
// One call, `prepare`, does what each of them does before it computes: the operands must be UB
// tensors starting 32-byte aligned, the count within every tensor, the caller's sharedTmpBuffer at
// least the model's minimum and apart from every operand, and dst apart from the sources (or, where
// the page allows the reuse, exactly one of them). It then traces the accesses on PIPE_V, in the
// order the device makes them: the sources read, the scratch written then read, dst written. The
// caller computes the values afterwards (its own loop, in float or double).
//
// The temporary buffer. The pages give no sizes, only the host helpers; mpnpu's model (our own): a
// call keeps `nodes` intermediate float values per element, worked through a piece of at least one
// 256-byte repeat of the input at a time. So the minimum is nodes x 4 x (256 / sizeof(T)) bytes, the
// most it uses nodes x 4 x max(count, 256 / sizeof(T)), and the TmpBufferFactorSize helpers say
// maxLiveNodeCount = nodes x 4 / sizeof(T), extraBuf = 0. The part of the buffer the
// call uses is traced as written and then read; its contents are left as they were (they are
// undefined after the call on the device). The framework-allocated form's scratch is not modelled.
#ifndef MPNPU_LIB_ELEMENTWISE_H
#define MPNPU_LIB_ELEMENTWISE_H

#include <cstdint>
#include <initializer_list>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"
#include "vector/engine.h"

namespace mpnpu {
namespace lib {

constexpr uint32_t kRepeatBytes = 256;

inline uint32_t tmp_min(uint32_t typeSize, uint32_t nodes) {
    return (typeSize == 1 || typeSize == 2 || typeSize == 4) ? nodes * 4u * (kRepeatBytes / typeSize) : 0u;
}
inline uint32_t tmp_max(uint64_t count, uint32_t typeSize, uint32_t nodes) {
    if (typeSize != 1 && typeSize != 2 && typeSize != 4) return 0;
    const uint64_t elems = count > kRepeatBytes / typeSize ? count : kRepeatBytes / typeSize;
    const uint64_t bytes = uint64_t(nodes) * 4 * elems;
    return bytes > UINT32_MAX ? UINT32_MAX : uint32_t(bytes);
}
inline void tmp_factor(uint32_t typeSize, uint32_t nodes, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
    maxLiveNodeCount = (typeSize == 1 || typeSize == 2 || typeSize == 4) ? nodes * 4u / typeSize : 0u;
    extraBuf = 0;
}
// A host helper's element count: the shape's product (anything with GetShapeSize(); negative is 0).
template <class Shape>
inline uint64_t shape_count(const Shape& s) {
    const int64_t n = static_cast<int64_t>(s.GetShapeSize());
    return n > 0 ? uint64_t(n) : 0u;
}

// One operand of a call: a tensor, how many of its elements the call touches, its role in messages.
struct Operand {
    const void* addr;
    uint64_t bytes;
    const char* what;
};

template <typename T>
inline Operand operand(const AscendC::LocalTensor<T>& t, uint64_t count, const Site& site, const char* name,
                       const char* what) {
    vec::check_operand(t, 32, site, name, what);
    vec::check_count(t, count, site, name, what);
    return Operand{t.mpnpu_addr(), count * sizeof(T), what};
}

// (prepare's sources come as tensor, role, tensor, role, ...)
inline void collect(Operand*, size_t&, uint64_t, const Site&, const char*) {}
template <typename T, typename... R>
inline void collect(Operand* out, size_t& n, uint64_t count, const Site& site, const char* name,
                    const AscendC::LocalTensor<T>& t, const char* what, const R&... rest) {
    out[n++] = operand(t, count, site, name, what);
    collect(out, n, count, site, name, rest...);
}
inline void trace_reads(uint64_t, const Site&, const char*) {}
template <typename T, typename... R>
inline void trace_reads(uint64_t count, const Site& site, const char* name, const AscendC::LocalTensor<T>& t,
                        const char*, const R&... rest) {
    t.mpnpu_touch('R', P_V, 0, count, site, name);
    trace_reads(count, site, name, rest...);
}

// What a call allows of dst against its sources: none (apart from them), same (apart, or exactly one
// of them: in place), accumulate (apart from them, and dst is read before it is written: Axpy).
enum class DstReuse { none, same, accumulate };

// Checks a call's operands, then traces its reads, its scratch and its write (see the top). `nodes`
// and `typeSize` give the scratch model's minimum for a caller-supplied tmp. Returns false when there
// is nothing to compute (count 0).
template <typename D, typename... S>
inline bool prepare(const char* name, DstReuse reuse, const AscendC::LocalTensor<D>& dst, uint64_t count,
                    const AscendC::LocalTensor<uint8_t>* tmp, uint32_t typeSize, uint32_t nodes, const Site& site,
                    const S&... srcs_and_roles) {
    vec::start(site, name);
    const Operand d = operand(dst, count, site, name, "dst");
    Operand srcs[sizeof...(S) / 2 + 1];
    size_t ns = 0;
    collect(srcs, ns, count, site, name, srcs_and_roles...);
    for (size_t i = 0; i < ns; ++i) {
        if (!vec::overlaps(d.addr, d.bytes, srcs[i].addr, srcs[i].bytes)) continue;
        if (reuse != DstReuse::same)
            api_error(site, "%s: dst and %s overlap (the call takes separate operands)", name, srcs[i].what);
        if (d.addr != srcs[i].addr)
            api_error(site, "%s: dst and %s overlap without being the same tensor (the call takes separate "
                      "operands, or the same one in place)", name, srcs[i].what);
    }
    uint64_t used = 0;
    if (tmp) {
        vec::check_operand(*tmp, 32, site, name, "sharedTmpBuffer");
        const uint32_t have = tmp->GetSize(), need = tmp_min(typeSize, nodes);
        if (have < need)
            api_error(site, "%s: sharedTmpBuffer has %u bytes, fewer than the %u the call needs (the minimum its "
                      "host helper gives)", name, have, need);
        const uint32_t most = tmp_max(count, typeSize, nodes);
        used = count ? (have < most ? have : most) : 0;
        if (vec::overlaps(tmp->mpnpu_addr(), used, d.addr, d.bytes))
            api_error(site, "%s: sharedTmpBuffer overlaps dst (the call takes separate operands)", name);
        for (size_t i = 0; i < ns; ++i)
            if (vec::overlaps(tmp->mpnpu_addr(), used, srcs[i].addr, srcs[i].bytes))
                api_error(site, "%s: sharedTmpBuffer overlaps %s (the call takes separate operands)", name,
                          srcs[i].what);
    }
    if (count == 0) return false;
    trace_reads(count, site, name, srcs_and_roles...);
    if (reuse == DstReuse::accumulate) dst.mpnpu_touch('R', P_V, 0, count, site, name);
    if (used) {
        tmp->mpnpu_touch_bytes('W', P_V, 0, used, site, name);
        tmp->mpnpu_touch_bytes('R', P_V, 0, used, site, name);
    }
    dst.mpnpu_touch('W', P_V, 0, count, site, name);
    return true;
}

// The values, once the operands are prepared: each element through f in double precision, rounded
// once to float and (for half) once more to half. dst may be a source (each element is read before
// it is written).
template <typename T, class F>
inline void map1(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t count, F f) {
    const T* in = src.mpnpu_addr();
    T* out = dst.mpnpu_addr();
    for (uint64_t i = 0; i < count; ++i) out[i] = from_float<T>(static_cast<float>(f(double(to_float(in[i])))));
}
template <typename T, class F>
inline void map2(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                 const AscendC::LocalTensor<T>& src1, uint64_t count, F f) {
    const T* a = src0.mpnpu_addr();
    const T* b = src1.mpnpu_addr();
    T* out = dst.mpnpu_addr();
    for (uint64_t i = 0; i < count; ++i)
        out[i] = from_float<T>(static_cast<float>(f(double(to_float(a[i])), double(to_float(b[i])))));
}

}  // namespace lib
}  // namespace mpnpu

// The usual host helpers of a call with the model's scratch of NODES float values per element:
// Get<NAME>MaxMinTmpSize(srcShape, typeSize, isReuseSource, maxValue, minValue) and
// Get<NAME>TmpBufferFactorSize(typeSize, maxLiveNodeCount, extraBuf). srcShape is an
// AscendC::TensorShape (or anything with GetShapeSize()); isReuseSource does not change the sizes.
#define MPNPU_LIB_HOST_MAXMIN(NAME, NODES)                                                                         \
    template <typename Shape>                                                                                      \
    inline void Get##NAME##MaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource, \
                                         uint32_t& maxValue, uint32_t& minValue) {                                 \
        (void)isReuseSource;                                                                                       \
        maxValue = mpnpu::lib::tmp_max(mpnpu::lib::shape_count(srcShape), typeSize, NODES);                        \
        minValue = mpnpu::lib::tmp_min(typeSize, NODES);                                                           \
    }
#define MPNPU_LIB_HOST_FACTOR(NAME, NODES)                                                                         \
    inline void Get##NAME##TmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount,                \
                                               uint32_t& extraBuf) {                                               \
        mpnpu::lib::tmp_factor(typeSize, NODES, maxLiveNodeCount, extraBuf);                                       \
    }

#endif  // MPNPU_LIB_ELEMENTWISE_H
