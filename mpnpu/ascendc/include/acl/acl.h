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

#endif  // MPNPU_ACL_H
