// The conformance runner: one process runs one job (a list of vector-API calls on tensors laid
// out in one UB image) and writes the image back, with the vector registers and the trace.
//
//   vecconf JOB IMAGE_IN IMAGE_OUT      (exit 0: ran; 3: the API raised a fault, printed as one line)
//
// JOB is text, one item a line:
//   image <bytes>                              the size of the UB image (one TBuf of VECCALC)
//   tensor <name> <dtype> <byte offset> <elements> [tight]
//                                              a view of the image; "tight" bounds its buffer to
//                                              exactly its own bytes (memcheck tests)
//   regs <mask lo> <mask hi> <counter 0/1>     the vector mask register before the first call
//   call <name> <key>=<value> ...              a call; keys name the operands and parameters
// Operands are tensor names (dst=..., src0=...); numbers are decimal or 0x-hex.
#ifndef VECCONF_RUNNER_H
#define VECCONF_RUNNER_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_operator.h"

namespace vecconf {

struct Tensor {
    std::string dtype;
    uint64_t offset = 0;  // bytes into the image
    uint32_t elems = 0;
    bool tight = false;
};

struct Call {
    std::string name;
    std::map<std::string, std::string> kv;
    std::string s(const std::string& k) const {
        auto it = kv.find(k);
        if (it == kv.end()) throw std::runtime_error("call " + name + ": missing " + k);
        return it->second;
    }
    bool has(const std::string& k) const { return kv.count(k) != 0; }
    int64_t i(const std::string& k) const { return int64_t(std::strtoll(s(k).c_str(), nullptr, 0)); }
    uint64_t u(const std::string& k) const { return uint64_t(std::strtoull(s(k).c_str(), nullptr, 0)); }
    int64_t i(const std::string& k, int64_t dflt) const { return has(k) ? i(k) : dflt; }
    uint64_t u(const std::string& k, uint64_t dflt) const { return has(k) ? u(k) : dflt; }
};

struct Job {
    uint64_t image = 0;
    std::map<std::string, Tensor> tensors;
    std::vector<Call> calls;
    AscendC::TBuf<AscendC::TPosition::VECCALC>* buf = nullptr;
    uint64_t buf_offset = 0;  // the image's first byte in UB

    template <typename T>
    AscendC::LocalTensor<T> t(const Call& c, const std::string& key) const {
        std::string name = c.s(key);
        auto it = tensors.find(name);
        if (it == tensors.end()) throw std::runtime_error("no tensor " + name);
        const Tensor& d = it->second;
        AscendC::LocalTensor<T> v = buf->GetWithOffset<T>(d.elems, uint32_t(d.offset));
        if (d.tight) {
            uint64_t lo = buf_offset + d.offset;
            v.mpnpu_init(MPNPU_MEM_UB, AscendC::TPosition::VECCALC, lo, d.elems, lo, lo + uint64_t(d.elems) * sizeof(T));
        }
        return v;
    }
};

// A handler runs one call whose element types are known; registered under "Name/T[/U]".
using Handler = std::function<void(const Job&, const Call&)>;
std::map<std::string, Handler>& registry();

struct Reg {
    Reg(const std::string& key, Handler h) { registry()[key] = std::move(h); }
};

template <typename T>
inline T scalar_of(const Call& c, const std::string& key) {
    uint64_t bits = c.u(key);
    T v;
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(T));
    return v;
}

inline AscendC::BinaryRepeatParams binary_params(const Call& c) {
    return AscendC::BinaryRepeatParams(uint8_t(c.u("dblk", 1)), uint8_t(c.u("s0blk", 1)), uint8_t(c.u("s1blk", 1)),
                                       uint8_t(c.u("drep", 8)), uint8_t(c.u("s0rep", 8)), uint8_t(c.u("s1rep", 8)));
}

inline AscendC::UnaryRepeatParams unary_params(const Call& c) {
    return AscendC::UnaryRepeatParams(uint16_t(c.u("dblk", 1)), uint16_t(c.u("sblk", 1)), uint8_t(c.u("drep", 8)),
                                      uint8_t(c.u("srep", 8)));
}

// Dtype names as the Python side writes them.
template <typename T>
constexpr const char* dt() {
    if constexpr (std::is_same_v<T, half>) return "f16";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bf16";
    else if constexpr (std::is_same_v<T, float>) return "f32";
    else if constexpr (std::is_same_v<T, int8_t>) return "i8";
    else if constexpr (std::is_same_v<T, uint8_t>) return "u8";
    else if constexpr (std::is_same_v<T, int16_t>) return "i16";
    else if constexpr (std::is_same_v<T, uint16_t>) return "u16";
    else if constexpr (std::is_same_v<T, int32_t>) return "i32";
    else if constexpr (std::is_same_v<T, uint32_t>) return "u32";
    else if constexpr (std::is_same_v<T, int64_t>) return "i64";
    else if constexpr (std::is_same_v<T, uint64_t>) return "u64";
    else return "?";
}

template <typename T>
inline std::string key1(const char* name) {
    return std::string(name) + "/" + dt<T>();
}
template <typename T, typename U>
inline std::string key2(const char* name) {
    return std::string(name) + "/" + dt<T>() + "/" + dt<U>();
}

}  // namespace vecconf

namespace vecconf {
// Registers H<T>::run for every T of a list under "name/T".
template <template <typename> class H, typename... Ts>
struct RegTypes {
    explicit RegTypes(const char* name) { (Reg(key1<Ts>(name), &H<Ts>::run), ...); }
};
// H<T, U>::run for every U of a list, one T.
template <template <typename, typename> class H, typename T, typename... Us>
struct RegPairs {
    explicit RegPairs(const char* name) { (Reg(key2<T, Us>(name), &H<T, Us>::run), ...); }
};
}  // namespace vecconf

#define VECCONF_NUMERIC int16_t, uint16_t, int32_t, uint32_t, half, bfloat16_t, float, int8_t, uint8_t

#define VECCONF_CAT2(a, b) a##b
#define VECCONF_CAT(a, b) VECCONF_CAT2(a, b)
// Registers a handler at static-initialisation time.
#define VECCONF_REGISTER(KEY, ...) static ::vecconf::Reg VECCONF_CAT(vecconf_reg_, __COUNTER__)(KEY, __VA_ARGS__);

#endif  // VECCONF_RUNNER_H
