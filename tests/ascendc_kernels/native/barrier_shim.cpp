// The native SyncAll barrier (include/mpnpu/native/native_sync.h) exported as a plain C function, so that a
// test can make it one party of a multiprocessing Barrier whose other parties are Python processes.
#include "mpnpu/native/native_sync.h"

// spin_ns: how long each of its waits looks before it sleeps (0: sleep at once).
extern "C" int mpnpu_test_barrier_wait(const MpnpuNativeBarrier* b, uint64_t timeout_ns, uint64_t spin_ns) {
    return int(mpnpu::native::barrier_wait(*b, timeout_ns, spin_ns));
}
