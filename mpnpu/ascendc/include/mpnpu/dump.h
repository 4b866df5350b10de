// DumpTensor: a debug print of a tensor's first dumpSize elements (UB, L1, L0C or GM), as the API
// page shows it: a header line (desc, the address, the element type, the position, dump_size), then
// the values in brackets, nested by a ShapeInfo when one is given ("-" where the data runs out).
// The print waits for the core's queued pipe work, so it shows what the tensor holds once the work
// issued before it is done; it is a debug aid and records no access for the race detector.
#ifndef MPNPU_DUMP_H
#define MPNPU_DUMP_H

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"

namespace mpnpu {
namespace dump {

template <typename T>
constexpr const char* dtype_name() {
    if constexpr (std::is_same_v<T, half>) return "float16";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16";
    else if constexpr (std::is_same_v<T, float>) return "float32";
    else if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
    else return "unknown";
}

template <typename T>
inline void value_text(std::string& out, const T& v) {
    char b[64];
    if constexpr (std::is_same_v<T, bool>) std::snprintf(b, sizeof b, "%d", v ? 1 : 0);
    else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
        std::snprintf(b, sizeof b, "%f", double(float(v)));
    else if constexpr (std::is_signed_v<T>) std::snprintf(b, sizeof b, "%lld", (long long)v);
    else std::snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    out += b;
}

// The values, nested by shape (dims) when given; positions past n print as "-".
template <typename T>
inline void nest(std::string& out, const T* v, uint64_t n, const uint32_t* dims, int ndim, uint64_t& next) {
    out += '[';
    const uint64_t count = ndim > 0 ? dims[0] : n;
    for (uint64_t i = 0; i < count; ++i) {
        if (i) out += ndim > 1 ? ",\n" : ",";
        if (ndim > 1) {
            nest(out, v, n, dims + 1, ndim - 1, next);
        } else {
            if (next < n) value_text(out, v[next]);
            else out += '-';
            ++next;
        }
    }
    out += ']';
}

template <typename T>
inline void print(const T* v, uint64_t size, uint64_t addr, const char* position, uint32_t desc, uint32_t dumpSize,
                  const AscendC::ShapeInfo* shape) {
    const uint64_t n = dumpSize < size ? dumpSize : size;
    std::string out;
    char head[200];
    std::snprintf(head, sizeof head, "DumpTensor: desc=%u, addr=0x%llx, data_type=%s, position=%s, dump_size=%u\n", desc,
                  (unsigned long long)addr, dtype_name<T>(), position, dumpSize);
    out += head;
    uint64_t next = 0;
    if (shape && shape->shapeDim > 0) {
        uint64_t total = 1;
        for (uint8_t i = 0; i < shape->shapeDim; ++i) total *= shape->shape[i];
        std::string dims = "[";
        for (uint8_t i = 0; i < shape->shapeDim; ++i) dims += (i ? ", " : "") + std::to_string(shape->shape[i]);
        dims += "]";
        if (total < n)
            out += "shape is " + dims + ", dumpSize is " + std::to_string(dumpSize) + ", dumpSize is greater than shapeSize.\n";
        else if (total > n)
            out += "shape is " + dims + ", dumpSize is " + std::to_string(dumpSize) + ", data is not enough.\n";
        nest(out, v, n, shape->shape, shape->shapeDim, next);
    } else {
        nest(out, v, n, nullptr, 0, next);
    }
    out += '\n';
    std::fflush(stdout);
    size_t done = 0;
    while (done < out.size()) {
        ssize_t w = ::write(1, out.data() + done, out.size() - done);
        if (w <= 0) break;
        done += size_t(w);
    }
}

inline const char* position_of(int mem) {
    if (mem == MPNPU_MEM_UB) return "UB";
    if (mem == MPNPU_MEM_L1) return "L1";
    if (mem == MPNPU_MEM_L0C) return "L0C";
    return mem_name(mem);
}

template <typename T>
inline void local(const AscendC::LocalTensor<T>& t, uint32_t desc, uint32_t dumpSize, const AscendC::ShapeInfo* shape,
                  const Site& site) {
    at(site);
    const int mem = t.mpnpu_mem();
    if (mem != MPNPU_MEM_UB && mem != MPNPU_MEM_L1 && mem != MPNPU_MEM_L0C)
        api_error(site, "DumpTensor: a local tensor in UB, L1 or L0C (this one is in %s)", mem_name(mem));
    core().pipes.barrier(P_ALL);
    print(t.mpnpu_addr(), t.GetSize(), t.mpnpu_offset(), position_of(mem), desc, dumpSize, shape);
}

template <typename T>
inline void global(const AscendC::GlobalTensor<T>& t, uint32_t desc, uint32_t dumpSize, const AscendC::ShapeInfo* shape,
                   const Site& site) {
    at(site);
    core().pipes.barrier(P_ALL);
    print(t.mpnpu_addr(), t.GetSize(), uint64_t(reinterpret_cast<uintptr_t>(t.mpnpu_addr())), "GM", desc, dumpSize,
          shape);
}

}  // namespace dump
}  // namespace mpnpu

namespace AscendC {

template <typename T>
inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize, MPNPU_SITE) {
    mpnpu::dump::local(tensor, desc, dumpSize, nullptr, site);
}

template <typename T>
inline void DumpTensor(const GlobalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize, MPNPU_SITE) {
    mpnpu::dump::global(tensor, desc, dumpSize, nullptr, site);
}

template <typename T>
inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize, const ShapeInfo& shapeInfo,
                       MPNPU_SITE) {
    mpnpu::dump::local(tensor, desc, dumpSize, &shapeInfo, site);
}

template <typename T>
inline void DumpTensor(const GlobalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize, const ShapeInfo& shapeInfo,
                       MPNPU_SITE) {
    mpnpu::dump::global(tensor, desc, dumpSize, &shapeInfo, site);
}

}  // namespace AscendC

#endif  // MPNPU_DUMP_H
