// SyncAll and cross-core flags driven from the library on the core process's own sync objects.
//
// Without this, every SyncAll, CrossCoreSetFlag and CrossCoreWaitFlag of a C++ kernel calls back
// into the core process's Python (mpnpu/runtime/sync.py), which costs the interpreter's time on
// every operation and, for SyncAll, on every step of the multiprocessing Barrier's protocol. Here
// the library runs the same protocol on the same objects: the POSIX semaphores and the shared words
// behind the Barrier and behind each flag route, and the status board the watchdog reads. So the
// Python and C++ kernels still share one barrier and one set of flag counters (a launch mixing
// both would still synchronise), and every tool that reads the board sees the same thing.
//
// What the protocol is, step for step (as CPython's threading.Barrier over a multiprocessing
// Condition runs it; docs/device-model.md, "The same objects, driven from C++"):
//   wait:   lock; while state is draining (1) or resetting (-1): cond-wait; broken (< 0): fail;
//           index = count++; the last party sets state = 1 and notifies all; the others cond-wait
//           until state != 0 (at the timeout: state = -2, notify all, fail); finally count--, and
//           the last one out of a draining barrier sets state = 0 and notifies all; unlock.
//   cond-wait: post sleeping; unlock; wait on wait_sem (the timeout); post woken; lock.
//   notify all: (wait_sem must be 0) take each woken with a sleeping; for each sleeper left:
//           post wait_sem; then take one woken per sleeper woken; drain wait_sem.
// Failures go back to the core process (MpnpuCoreCalls::sync_error), which raises what its own
// implementation raises: one error text for both front ends.
#ifndef MPNPU_NATIVE_SYNC_H
#define MPNPU_NATIVE_SYNC_H

#include <sched.h>
#include <semaphore.h>

#include <cerrno>
#include <cstdint>
#include <ctime>

#include "abi.h"

namespace mpnpu {
namespace native {

// The status board's columns and the states a core shows there: mpnpu/runtime/sync.py's ST_* and
// CoreState, generated into contract.h (short names for this file's many uses).
constexpr int ST_STATE = MPNPU_ST_STATE, ST_SYNC_ALL = MPNPU_ST_SYNC_ALL, ST_SYNC_AIV = MPNPU_ST_SYNC_AIV,
              ST_WAIT_MODE = MPNPU_ST_WAIT_MODE, ST_WAIT_ID = MPNPU_ST_WAIT_ID, ST_PROGRESS = MPNPU_ST_PROGRESS,
              ST_WAIT_TAKEN = MPNPU_ST_WAIT_TAKEN;
constexpr int64_t RUNNING = MPNPU_STATE_RUNNING, IN_SYNC_ALL = MPNPU_STATE_IN_SYNC_ALL,
                  IN_SYNC_AIV = MPNPU_STATE_IN_SYNC_AIV, IN_FLAG_WAIT = MPNPU_STATE_IN_FLAG_WAIT;

inline sem_t* sem(void* p) { return static_cast<sem_t*>(p); }

inline uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// A deadline on CLOCK_MONOTONIC, as the semaphore waits take it, and how long a wait before it
// looks again and again (yielding the CPU between looks) before it sleeps: waking a sleeping
// process costs more than a small kernel's work between two syncs (mpnpu/runtime/spin.py).
struct Deadline {
    uint64_t at_ns;
    uint64_t spin_ns;
    Deadline(uint64_t timeout_ns, uint64_t spin) : at_ns(monotonic_ns() + timeout_ns), spin_ns(spin) {}
    bool passed() const { return monotonic_ns() >= at_ns; }
    timespec spec() const {
        timespec ts{};
        ts.tv_sec = time_t(at_ns / 1000000000ull);
        ts.tv_nsec = long(at_ns % 1000000000ull);
        return ts;
    }
};

inline bool try_take(void* s) {
    while (sem_trywait(sem(s)) != 0) {
        if (errno != EINTR) return false;
    }
    return true;
}

// Take s before the deadline; false when it passed first.
inline bool take(void* s, const Deadline& d) {
    if (try_take(s)) return true;
    if (d.spin_ns) {
        const uint64_t start = monotonic_ns();
        const uint64_t until = start + d.spin_ns < d.at_ns ? start + d.spin_ns : d.at_ns;
        do {
            sched_yield();
            if (try_take(s)) return true;
        } while (monotonic_ns() < until);
    }
    const timespec ts = d.spec();
    for (;;) {
        if (sem_clockwait(sem(s), CLOCK_MONOTONIC, &ts) == 0) return true;
        if (errno != EINTR) return false;
    }
}

inline void give(void* s) { sem_post(sem(s)); }

inline int sem_value(void* s) {
    int v = 0;
    sem_getvalue(sem(s), &v);
    return v;
}

// -- the status board -----------------------------------------------------------------------------------

inline int64_t* row(const MpnpuNativeSync& n) { return n.status + int64_t(n.core_id) * n.st_columns; }
inline int64_t load(const int64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
inline void store(int64_t* p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
inline void bump(int64_t* p) { store(p, load(p) + 1); }

// -- the Barrier ----------------------------------------------------------------------------------------

enum class Wait { ok, timeout, broken, corrupt };

struct Cond {
    const MpnpuNativeBarrier& b;
    const Deadline& d;

    int32_t& state() const { return b.words[0]; }
    int32_t& count() const { return b.words[1]; }

    // Condition.wait with the lock held once: false when the re-lock timed out (the lock is then not
    // held). Whether a notification came is not returned: the caller looks at the state again.
    bool wait() const {
        give(b.sleeping);
        give(b.lock);
        (void)take(b.wait_sem, d);
        give(b.woken);
        return take(b.lock, d);
    }

    // Condition.notify_all, the lock held.
    bool notify_all() const {
        if (try_take(b.wait_sem)) return false;  // (the protocol's own assertion)
        while (try_take(b.woken)) {
            if (!try_take(b.sleeping)) return false;
        }
        int sleepers = 0;
        while (try_take(b.sleeping)) {
            give(b.wait_sem);
            ++sleepers;
        }
        for (int i = 0; i < sleepers; ++i)
            if (!take(b.woken, d)) return false;
        while (try_take(b.wait_sem)) {
        }
        return true;
    }
};

inline Wait barrier_wait(const MpnpuNativeBarrier& b, uint64_t timeout_ns, uint64_t spin_ns) {
    const Deadline d(timeout_ns, spin_ns);
    if (!take(b.lock, d)) return Wait::timeout;
    Cond c{b, d};
    while (c.state() == -1 || c.state() == 1) {  // draining or resetting: wait until it is done
        if (d.passed()) {  // (past the deadline a wait returns at once: do not spin on it)
            give(b.lock);
            return Wait::timeout;
        }
        if (!c.wait()) return Wait::timeout;  // (the lock is not held: another core holds it)
    }
    if (c.state() < 0) {
        give(b.lock);
        return Wait::broken;
    }
    if (c.state() != 0) {
        give(b.lock);
        return Wait::corrupt;
    }
    const int32_t index = c.count()++;
    Wait result = Wait::ok;
    if (index + 1 == b.parties) {
        c.state() = 1;
        if (!c.notify_all()) result = Wait::corrupt;
    } else {
        bool locked = true;
        while (c.state() == 0) {
            if (d.passed() || !(locked = c.wait())) break;
        }
        if (!locked) return Wait::timeout;
        if (c.state() == 0) {  // timed out: break the barrier for every party
            c.state() = -2;
            c.notify_all();
            result = Wait::timeout;
        } else if (c.state() < 0) {
            result = Wait::broken;
        }
    }
    c.count()--;
    if (c.count() == 0 && (c.state() == -1 || c.state() == 1)) {
        c.state() = 0;
        if (!c.notify_all() && result == Wait::ok) result = Wait::corrupt;
    }
    give(b.lock);
    return result;
}

// SyncAll on the status board and the barrier; 0, or the MPNPU_NATIVE_* failure (*count: which one).
inline int32_t sync_all(const MpnpuNativeSync& n, bool aiv_only, int64_t* count) {
    int64_t* r = row(n);
    const int col = aiv_only ? ST_SYNC_AIV : ST_SYNC_ALL;
    *count = load(r + col) + 1;
    store(r + col, *count);
    store(r + ST_STATE, aiv_only ? IN_SYNC_AIV : IN_SYNC_ALL);
    bump(r + ST_PROGRESS);
    const Wait w = barrier_wait(aiv_only ? n.barrier_aiv : n.barrier_all, n.timeout_ns, n.spin_ns);
    if (w == Wait::corrupt) return MPNPU_NATIVE_BARRIER_STATE;
    if (w != Wait::ok) return MPNPU_NATIVE_SYNC_ALL_TIMEOUT;
    store(r + ST_STATE, RUNNING);
    bump(r + ST_PROGRESS);
    return 0;
}

// -- cross-core flags -----------------------------------------------------------------------------------

inline MpnpuNativeFlag* flag(MpnpuNativeSync& n, int32_t mode, int32_t id) {
    if (mode < 1 || mode > 2 || id < 0 || id >= MPNPU_FLAG_IDS) return nullptr;
    MpnpuNativeFlag* f = &n.flags[mode][id];
    return f->valid ? f : nullptr;
}

// A set: mark the mode at every receiver, then release each receiver's counter (only this core
// releases it, so checking before releasing is exact). 0, or MPNPU_NATIVE_FLAG_OVERFLOW (*receiver).
inline int32_t flag_set(MpnpuNativeSync& n, MpnpuNativeFlag& f, int32_t mode, int32_t id, int32_t* receiver) {
    __atomic_fetch_or(n.used, uint64_t(1) << (mode * MPNPU_FLAG_IDS + id), __ATOMIC_RELAXED);
    for (int i = 0; i < f.n_out; ++i) {
        int8_t* cell = n.flag_modes + f.out_receiver[i] * MPNPU_FLAG_IDS + id;
        if (__atomic_exchange_n(cell, int8_t(mode + 1), __ATOMIC_SEQ_CST) == 0) give(f.out_wake[i]);
    }
    for (int i = 0; i < f.n_out; ++i) {
        if (sem_value(f.out_sem[i]) >= n.flag_counter_max) {
            *receiver = f.out_receiver[i];
            return MPNPU_NATIVE_FLAG_OVERFLOW;
        }
        give(f.out_sem[i]);
    }
    return 0;
}

// A wait: take one set from each sender in order; a blocking take tells the watchdog what it
// waits for and how many senders' sets it has taken already (and calls ``on_block`` first: the
// caller names the kernel line). 0, or MPNPU_NATIVE_FLAG_TIMEOUT.
template <typename OnBlock>
inline int32_t flag_wait(const MpnpuNativeSync& n, const MpnpuNativeFlag& f, int32_t mode, int32_t id,
                         OnBlock&& on_block) {
    for (int i = 0; i < f.n_in; ++i) {
        if (try_take(f.in_sem[i])) continue;
        on_block();
        int64_t* r = row(n);
        store(r + ST_WAIT_MODE, mode);
        store(r + ST_WAIT_ID, id);
        store(r + ST_WAIT_TAKEN, i);
        bump(r + ST_PROGRESS);
        store(r + ST_STATE, IN_FLAG_WAIT);
        if (!take(f.in_sem[i], Deadline(n.timeout_ns, n.spin_ns))) return MPNPU_NATIVE_FLAG_TIMEOUT;
        store(r + ST_STATE, RUNNING);
    }
    return 0;
}

// The mode of a wait that names none: that of the sets routed to this core for the id, known
// after the first one; until then the waiter sleeps until a set makes a mode of its known, shown on
// the board as a flag wait in mode -1 (``on_block`` first, as for flag_wait). -1 at the timeout.
template <typename OnBlock>
inline int32_t wait_mode(const MpnpuNativeSync& n, int32_t id, OnBlock&& on_block) {
    const int8_t* cell = n.flag_modes + n.core_id * MPNPU_FLAG_IDS + id;
    int8_t m = __atomic_load_n(cell, __ATOMIC_SEQ_CST);
    if (m) return m - 1;
    on_block();
    int64_t* r = row(n);
    store(r + ST_WAIT_MODE, -1);
    store(r + ST_WAIT_ID, id);
    store(r + ST_WAIT_TAKEN, 0);
    store(r + ST_STATE, IN_FLAG_WAIT);
    bump(r + ST_PROGRESS);
    const Deadline d(n.timeout_ns, n.spin_ns);
    for (;;) {
        m = __atomic_load_n(cell, __ATOMIC_SEQ_CST);
        if (m) {
            store(r + ST_STATE, RUNNING);
            bump(r + ST_PROGRESS);
            return m - 1;
        }
        // (a wake for another id only makes this look again)
        if (!take(n.mode_wake, d)) return -1;
    }
}

}  // namespace native
}  // namespace mpnpu

#endif  // MPNPU_NATIVE_SYNC_H
