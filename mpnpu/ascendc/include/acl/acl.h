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
// Every launch has ended by the time its launch call returns here: nothing is left to wait for.
static inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }
// A context per device: the host code's handle only (there is one device, the emulated one).
static inline aclError aclrtCreateContext(aclrtContext* context, int32_t) {
    static int the_context;
    *context = &the_context;
    return ACL_SUCCESS;
}
static inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
static inline aclError aclrtSetCurrentContext(aclrtContext) { return ACL_SUCCESS; }

// The error of the last runtime call: the calls here do not fail asynchronously (a kernel that
// fails ends the launch with mpnpu's own report), so there is never one to give.
typedef enum aclrtLastErrLevel {
    ACL_RT_THREAD_LEVEL = 0,
} aclrtLastErrLevel;
static inline aclError aclrtGetLastError(aclrtLastErrLevel) { return ACL_SUCCESS; }
static inline aclError aclrtPeekAtLastError(aclrtLastErrLevel) { return ACL_SUCCESS; }
// The most recent error message: none (nullptr), for the same reason.
static inline const char* aclGetRecentErrMsg() { return nullptr; }
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

// IEEE 754 binary16 as the host code holds it (its bits), and the conversions to and from float
// (round to nearest, ties to even; NaN and infinity kept).
typedef uint16_t aclFloat16;

static inline float aclFloat16ToFloat(aclFloat16 value) {
    const uint32_t sign = uint32_t(value & 0x8000u) << 16;
    const uint32_t exp = (value >> 10) & 0x1Fu;
    uint32_t mant = value & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        uint32_t e = 113u;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mant & 0x3FFu) << 13);
    }
    float out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

static inline aclFloat16 aclFloatToFloat16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
    const uint32_t exp = (bits >> 23) & 0xFFu;
    uint32_t mant = bits & 0x7FFFFFu;
    if (exp == 0xFFu) return uint16_t(sign | 0x7C00u | (mant ? 0x200u : 0u));
    const int32_t e = int32_t(exp) - 127 + 15;
    if (e >= 0x1F) return uint16_t(sign | 0x7C00u);
    if (e <= 0) {  // a subnormal half, or zero
        if (e < -10) return sign;
        mant |= 0x800000u;
        const uint32_t shift = uint32_t(14 - e);
        uint32_t half = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        if (rest > mid || (rest == mid && (half & 1u))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = (uint32_t(e) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: right
    return uint16_t(sign | half);
}

#endif  // MPNPU_ACL_H
