// The host runtime calls of the Ascend C samples (aclInit, aclrtMalloc, aclrtMemcpy, ...), enough
// for a sample's host code to compile beside its kernel. mpnpu runs the kernel itself (`mpnpu run`
// reads the sample's input .bin files, launches the kernel on the multi-process device and writes
// its outputs), so these only manage host memory; none of them reaches a device.
#ifndef MPNPU_ACL_H
#define MPNPU_ACL_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtContext;
typedef void* aclrtEvent;

#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
} aclrtMemcpyKind;

static inline aclError aclInit(const char*) { return ACL_SUCCESS; }
static inline aclError aclFinalize() { return ACL_SUCCESS; }
static inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
static inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
static inline aclError aclrtCreateStream(aclrtStream* stream) {
    *stream = nullptr;
    return ACL_SUCCESS;
}
static inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
static inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
#ifdef MPNPU_ACL_GM
// Built for `mpnpu samples` (with the CPU-debug runtime): device memory is GM the core processes share,
// host memory stays the program's own.
extern "C" void* mpnpu_cpudebug_gm_alloc(size_t size);
extern "C" void mpnpu_cpudebug_gm_free(void* ptr);
static inline aclError aclrtMalloc(void** ptr, size_t size, aclrtMemMallocPolicy) {
    *ptr = mpnpu_cpudebug_gm_alloc(size ? size : 1);
    return *ptr ? ACL_SUCCESS : 1;
}
static inline aclError aclrtFree(void* ptr) {
    mpnpu_cpudebug_gm_free(ptr);
    return ACL_SUCCESS;
}
#else
static inline aclError aclrtMalloc(void** ptr, size_t size, aclrtMemMallocPolicy) {
    *ptr = std::calloc(1, size ? size : 1);
    return *ptr ? ACL_SUCCESS : 1;
}
static inline aclError aclrtFree(void* ptr) {
    std::free(ptr);
    return ACL_SUCCESS;
}
#endif
static inline aclError aclrtMallocHost(void** ptr, size_t size) {
    *ptr = std::calloc(1, size ? size : 1);
    return *ptr ? ACL_SUCCESS : 1;
}
static inline aclError aclrtFreeHost(void* ptr) {
    std::free(ptr);
    return ACL_SUCCESS;
}
static inline aclError aclrtMemcpy(void* dst, size_t dstMax, const void* src, size_t count, aclrtMemcpyKind) {
    if (count > dstMax) return 1;
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}
static inline aclError aclrtMemset(void* dst, size_t dstMax, int32_t value, size_t count) {
    if (count > dstMax) return 1;
    std::memset(dst, value, count);
    return ACL_SUCCESS;
}

static inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }
static inline aclError aclrtCreateContext(aclrtContext* context, int32_t) {
    *context = nullptr;
    return ACL_SUCCESS;
}
static inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
static inline aclError aclrtSetCurrentContext(aclrtContext) { return ACL_SUCCESS; }

// Errors: a call here fails only with a usage error it returns at once, so there is no recent error
// to report: aclrtGetLastError says none and aclGetRecentErrMsg gives an empty message.
typedef enum aclrtLastErrLevel { ACL_RT_THREAD_LEVEL = 0 } aclrtLastErrLevel;
static inline aclError aclrtGetLastError(aclrtLastErrLevel) { return ACL_SUCCESS; }
static inline aclError aclrtPeekAtLastError(aclrtLastErrLevel) { return ACL_SUCCESS; }
static inline const char* aclGetRecentErrMsg() { return ""; }

// IEEE 754 binary16, as the host sees half data (aclFloat16 and its conversions).
typedef uint16_t aclFloat16;
static inline float aclFloat16ToFloat(aclFloat16 value) {
    const uint32_t sign = uint32_t(value & 0x8000u) << 16;
    uint32_t exp = (value >> 10) & 0x1Fu, man = value & 0x3FFu, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13);  // inf, nan
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        int e = -1;
        do { ++e; man <<= 1; } while (!(man & 0x400u));
        bits = sign | (uint32_t(112 - e) << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
static inline aclFloat16 aclFloatToFloat16(float value) {  // round to nearest even
    uint32_t x;
    std::memcpy(&x, &value, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) return aclFloat16(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u : 0u));
    if (ax >= 0x477FF000u) return aclFloat16(sign | 0x7C00u);  // rounds past the largest half
    if (ax < 0x38800000u) {  // a subnormal half (or zero)
        if (ax < 0x33000000u) return aclFloat16(sign);
        const uint32_t e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u, shift = 126 - e;
        uint32_t h = m >> shift;
        const uint32_t rest = m & ((1u << shift) - 1), half_way = 1u << (shift - 1);
        if (rest > half_way || (rest == half_way && (h & 1u))) ++h;
        return aclFloat16(sign | h);
    }
    uint32_t h = ((ax >> 13) - (112u << 10));
    const uint32_t rest = ax & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return aclFloat16(sign | h);
}

#endif  // MPNPU_ACL_H
