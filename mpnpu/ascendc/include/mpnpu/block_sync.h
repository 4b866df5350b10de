// Synchronisation between blocks through flag words kept in a GM workspace: IBSet / IBWait (one
// core sets a word, others wait until it is set) and the ordered-blocks trio InitDetermineComputeWorkspace
// / WaitPreBlock / NotifyNextBlock (the vector cores take turns in ascending block order).
//
// mpnpu keeps the flags in the workspace the kernel passes, as the documentation describes: a set
// writes the word in GM, a wait reads it again and again until it holds what it waits for. The cores
// are separate processes sharing GM, so the wait really blocks until another core's set. A set
// comes after everything its core issued before it (a barrier of every pipe: the copy out it
// announces has landed); the wait comes before everything its core issues after it.
//
// While it waits, the core shows on the status board as waiting on a GM flag (mpnpu.runtime.sync
// GM_FLAG_MODE), so a wait no core can satisfy any more ends as the watchdog's deadlock report (or,
// at the latest, at the launch's sync timeout), never as a hang. Traced, each set is a GM flag
// release and each completed wait names the release it saw (mpnpu.runtime.trace.GmFlagEvent), which
// racecheck's happens-before orders (mpnpu/racecheck/hb.py).
//
// Layout of the workspaces (mpnpu's, within the documented minimum sizes):
//   IBSet / IBWait: one 32-byte slot per (eventID, blockIdx), at (eventID * cores + blockIdx) * 32
//     bytes, where cores is GetBlockNum() for a vector-only kernel and twice that for a mix one;
//     a set writes 1 into the slot's first int32, a wait returns once it reads 1 there.
//   WaitPreBlock / NotifyNextBlock: one 32-byte slot per vector core, its first int32 counting the
//     core's NotifyNextBlock calls. Vector core k's r-th wait (r from 0) returns once core k-1 has
//     notified r+1 times; core 0's r-th, once the last core has notified r times (its first does
//     not wait). InitDetermineComputeWorkspace zeroes the core's own slot, then the vector cores
//     meet in a barrier (mpnpu's way of ordering every zeroing before any wait; racecheck sees it as
//     a SyncAll of the vector cores).
#ifndef MPNPU_BLOCK_SYNC_H
#define MPNPU_BLOCK_SYNC_H

#include <time.h>

#include <cstdint>

#include "native/native_sync.h"
#include "native/rt.h"
#include "sync.h"
#include "tensor.h"

namespace mpnpu {
namespace gmflag {

constexpr uint64_t SLOT_BYTES = 32;

// The int32 word at ``byte`` bytes into the workspace, checked to lie inside it (the tensor's size
// when it has one, and under memcheck the GM allocation it belongs to).
// (``bytes``: the workspace's size, 0 when unknown)
inline int32_t* word_at(int32_t* base, uint64_t bytes, uint64_t byte, const Site& site, const char* call) {
    if (!base) api_error(site, "%s: the GM workspace has no buffer (SetGlobalBuffer was not called)", call);
    if (bytes && byte + sizeof(int32_t) > bytes)
        api_error(site, "%s: the flag word at byte %llu lies beyond the GM workspace's %llu bytes", call,
                  static_cast<unsigned long long>(byte), static_cast<unsigned long long>(bytes));
    int32_t* w = base + byte / sizeof(int32_t);
    CoreState& c = core();
    if (c.memcheck) {
        const int32_t region = find_region(base);
        const uint64_t lo = uint64_t(reinterpret_cast<uintptr_t>(w));
        if (region < 0) illegal_gm(true, site, base, lo, lo + sizeof(int32_t), region, call);
        const MpnpuRegion& r = c.regions[size_t(region)];
        if (lo < r.addr || lo + sizeof(int32_t) > r.addr + r.size)
            illegal_gm(true, site, base, lo, lo + sizeof(int32_t), region, call);
    }
    return w;
}
inline int32_t* word(const AscendC::GlobalTensor<int32_t>& ws, uint64_t byte, const Site& site, const char* call) {
    return word_at(ws.GetPhyAddr(), ws.GetSize() * sizeof(int32_t), byte, site, call);
}

inline void check_ub(const AscendC::LocalTensor<int32_t>& ub, uint32_t bytes, const Site& site, const char* call) {
    if (uint64_t(ub.GetSize()) * sizeof(int32_t) < bytes)
        api_error(site, "%s: the UB workspace holds %u bytes; it needs at least %u", call,
                  unsigned(ub.GetSize() * sizeof(int32_t)), bytes);
}

// The trace record of a release ('r') or a completed wait ('w', for release ``target``) of ``w``.
inline void record_flag(char kind, const int32_t* w, int64_t target, uint64_t t0, const Site& site) {
    CoreState& c = core();
    if (!c.tracing) return;
    const int32_t region = find_region(w);
    if (region < 0) return;  // (not in a launch argument: no key the cores share)
    MpnpuEvent& e = record(MPNPU_EV_GM_FLAG, uint8_t(kind), P_S, site);
    e.index = region;
    e.start = uint64_t(reinterpret_cast<uintptr_t>(w)) - c.regions[size_t(region)].addr;
    e.count = uint64_t(target);
    e.t0 = t0 ? t0 : now_ns();
    e.t1 = now_ns();
}

// After everything this core issued has completed: store ``value`` into ``w`` (add it when ``add``).
inline void release(int32_t* w, int32_t value, bool add, const Site& site) {
    pipe_barrier(P_ALL, site);  // (recorded: racecheck's view of "after every pipe's earlier work")
    core().pipes.barrier(P_ALL);
    if (add) __atomic_fetch_add(w, value, __ATOMIC_SEQ_CST);
    else __atomic_store_n(w, value, __ATOMIC_SEQ_CST);
    record_flag('r', w, 0, 0, site);
}

// wait_at_least's wait while the word is not set yet: the watchdog sees this core blocked on it.
inline void sleep_until_at_least(int32_t* w, int32_t target, const Site& site, const char* call) {
    CoreState& c = core();
    MpnpuNativeSync* nat = c.launch.native;
    int64_t* r = nat ? native::row(*nat) : nullptr;
    const int32_t region = find_region(w);
    const int64_t offset = region >= 0 ? int64_t(uint64_t(reinterpret_cast<uintptr_t>(w)) - c.regions[size_t(region)].addr)
                                       : 0;
    write_where(site);
    if (r) {
        native::store(r + native::ST_WAIT_MODE, MPNPU_GM_FLAG_MODE);
        native::store(r + native::ST_WAIT_ID, offset);
        native::store(r + native::ST_WAIT_TAKEN, 0);
        native::bump(r + native::ST_PROGRESS);
        native::store(r + native::ST_STATE, native::IN_FLAG_WAIT);
    }
    // Look again with a growing pause (to 1 ms): a waiting core sleeps, as the watchdog expects of a
    // blocked one, and wakes within a millisecond of the set.
    const uint64_t timeout_ns = nat ? nat->timeout_ns : 300000000000ull;
    const native::Deadline d(timeout_ns, 0);
    long pause_ns = 1000;
    while (__atomic_load_n(w, __ATOMIC_SEQ_CST) < target) {
        if (d.passed()) {
            if (r) core_call(c.core_calls->sync_error(MPNPU_NATIVE_FLAG_TIMEOUT, MPNPU_GM_FLAG_MODE, int32_t(offset), 0));
            api_error(site, "%s: the flag word was not set within the launch's sync timeout", call);
        }
        timespec ts{0, pause_ns};
        nanosleep(&ts, nullptr);
        if (pause_ns < 1000000) pause_ns *= 2;
    }
    if (r) {
        native::store(r + native::ST_STATE, native::RUNNING);
        native::bump(r + native::ST_PROGRESS);
    }
}

// Wait until ``*w >= target`` (IBWait: == 1, which the same test says for a word a set makes 1).
inline void wait_at_least(int32_t* w, int32_t target, const Site& site, const char* call) {
    before_user_sync(site);
    CoreState& c = core();
    c.pipes.flush_signals();
    c.pipes.wake();  // the rest of this core's queued work runs while it waits
    const uint64_t t0 = now_ns();
    if (__atomic_load_n(w, __ATOMIC_SEQ_CST) < target) sleep_until_at_least(w, target, site, call);
    after_blocking_sync(SYNC_RETURNED);
    record_flag('w', w, target, t0, site);
    after_blocking_sync(SYNC_RECORDED);
}

inline void only_vector(const Site& site, const char* call) {
    if (is_aic())
        api_error(site, "%s: synchronises vector cores only on this chip (the cube cores of a separated-core chip "
                        "do not take part); guard it with ASCEND_IS_AIV", call);
}

// Vector cores of the launch: GetBlockNum() for a vector-only kernel, twice that for a mix one.
inline int64_t vector_cores() { return AscendC::GetBlockNum() * (is_aic() ? 1 : AscendC::GetTaskRation()); }

inline uint64_t ib_slot(int32_t blockIdx, int32_t eventID, const Site& site, const char* call) {
    only_vector(site, call);
    const int64_t cores = vector_cores();
    if (blockIdx < 0 || blockIdx >= cores)
        api_error(site, "%s: blockIdx %d is not a core of this launch (0 .. %lld)", call, blockIdx,
                  static_cast<long long>(cores - 1));
    if (eventID < 0) api_error(site, "%s: eventID %d is negative", call, eventID);
    return (uint64_t(eventID) * uint64_t(cores) + uint64_t(blockIdx)) * SLOT_BYTES;
}

}  // namespace gmflag
}  // namespace mpnpu

namespace AscendC {

// Sets the flag of (blockIdx, eventID) in gmWorkspace, once this core's earlier work has completed;
// the IBWait with the same arguments returns after it. The workspace must be zero before the launch.
template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                  int32_t eventID, MPNPU_SITE) {
    const uint64_t at = mpnpu::gmflag::ib_slot(blockIdx, eventID, site, "IBSet");
    mpnpu::gmflag::check_ub(ubWorkspace, 32, site, "IBSet");
    mpnpu::gmflag::release(mpnpu::gmflag::word(gmWorkspace, at, site, "IBSet"), 1, false, site);
}

// Blocks until the IBSet with the same blockIdx and eventID has set its flag.
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                   int32_t blockIdx, int32_t eventID, MPNPU_SITE) {
    const uint64_t at = mpnpu::gmflag::ib_slot(blockIdx, eventID, site, "IBWait");
    mpnpu::gmflag::check_ub(ubWorkspace, 32, site, "IBWait");
    mpnpu::gmflag::wait_at_least(mpnpu::gmflag::word(gmWorkspace, at, site, "IBWait"), 1, site, "IBWait");
}

// Prepares gmWorkspace for WaitPreBlock / NotifyNextBlock; every vector core calls it first.
inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                                          MPNPU_SITE) {
    const char* call = "InitDetermineComputeWorkspace";
    mpnpu::gmflag::only_vector(site, call);
    const int64_t cores = mpnpu::gmflag::vector_cores();
    mpnpu::gmflag::check_ub(ubWorkspace, uint32_t(cores * 32 + 32), site, call);
    int32_t* own = mpnpu::gmflag::word(gmWorkspace, uint64_t(GetBlockIdx()) * mpnpu::gmflag::SLOT_BYTES, site, call);
    (void)mpnpu::gmflag::word(gmWorkspace, uint64_t(cores) * mpnpu::gmflag::SLOT_BYTES - sizeof(int32_t), site, call);
    __atomic_store_n(own, 0, __ATOMIC_SEQ_CST);
    mpnpu::before_user_sync(site);
    mpnpu::sync_all(true, site);
}

// Blocks until the previous vector core (block order) has notified for this round.
inline void WaitPreBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace, MPNPU_SITE) {
    const char* call = "WaitPreBlock";
    mpnpu::gmflag::only_vector(site, call);
    const int64_t cores = mpnpu::gmflag::vector_cores(), k = GetBlockIdx();
    mpnpu::gmflag::check_ub(ubWorkspace, uint32_t(cores * 32 + 32), site, call);
    const int32_t round = __atomic_load_n(mpnpu::gmflag::word(gmWorkspace, uint64_t(k) * 32, site, call), __ATOMIC_SEQ_CST);
    if (k == 0 && round == 0) return;  // the first turn is core 0's
    const int64_t prev = k == 0 ? cores - 1 : k - 1;
    mpnpu::gmflag::wait_at_least(mpnpu::gmflag::word(gmWorkspace, uint64_t(prev) * 32, site, call),
                                 k == 0 ? round : round + 1, site, call);
}

// Tells the next vector core that this one has finished its turn (after its earlier work completed).
inline void NotifyNextBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace, MPNPU_SITE) {
    const char* call = "NotifyNextBlock";
    mpnpu::gmflag::only_vector(site, call);
    mpnpu::gmflag::check_ub(ubWorkspace, uint32_t(mpnpu::gmflag::vector_cores() * 32 + 32), site, call);
    mpnpu::gmflag::release(mpnpu::gmflag::word(gmWorkspace, uint64_t(GetBlockIdx()) * 32, site, call), 1, true, site);
}

// The unit that sends a GroupBarrier's messages (only MTE3_MODE is documented for use).
enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };

// A barrier between two groups of vector cores: the waiters' Wait(i) returns once every one of the
// arriveSize cores has called Arrive (round after round, in a loop). mpnpu keeps the messages in the
// workspace the kernel gives (512 bytes per waiter, as documented, zeroed by the kernel): in waiter w's
// 512 bytes, int32 word a counts arriver a's Arrive calls and the last word w's own rounds. An Arrive
// comes after everything its core issued before it (a barrier of every pipe: more than the chip's
// MTE3 message orders, never less); a Wait blocks, shows on the status board and is traced as
// IBWait's is (deadlock report, racecheck edges).
template <PipeMode pipeMode>
class GroupBarrier {
public:
    inline GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn, MPNPU_SITE)
        : ws_(reinterpret_cast<int32_t*>(groupWorkspace)), arrive_(arriveSizeIn), wait_(waitSizeIn) {
        static_assert(pipeMode == PipeMode::MTE3_MODE, "GroupBarrier: only PipeMode::MTE3_MODE is supported");
        if (!groupWorkspace) mpnpu::api_error(site, "GroupBarrier: the GM workspace is null");
        if (reinterpret_cast<uintptr_t>(groupWorkspace) % 512 != 0)
            mpnpu::api_error(site, "GroupBarrier: the GM workspace must be 512-byte aligned");
        if (arriveSizeIn == 0 || waitSizeIn == 0)
            mpnpu::api_error(site, "GroupBarrier: the Arrive group (%u) and the Wait group (%u) must not be empty",
                             arriveSizeIn, waitSizeIn);
        if (arriveSizeIn > WORDS - 1)
            mpnpu::api_error(site, "GroupBarrier: an Arrive group of %u cores; mpnpu's layout of the documented 512 "
                                   "bytes per waiter holds at most %u", arriveSizeIn, WORDS - 1);
    }
    // The GM bytes the barrier's messages take: 512 per waiter.
    inline uint64_t GetWorkspaceLen() const { return uint64_t(wait_) * AREA; }

    inline void Arrive(uint32_t arriveIndex, MPNPU_SITE) {
        mpnpu::gmflag::only_vector(site, "GroupBarrier::Arrive");
        if (arriveIndex >= arrive_)
            mpnpu::api_error(site, "GroupBarrier::Arrive: index %u is outside the Arrive group [0, %u)", arriveIndex,
                             arrive_);
        for (uint32_t w = 0; w < wait_; ++w)
            mpnpu::gmflag::release(at(w, arriveIndex, site, "GroupBarrier::Arrive"), 1, true, site);
    }

    inline void Wait(uint32_t waitIndex, MPNPU_SITE) {
        mpnpu::gmflag::only_vector(site, "GroupBarrier::Wait");
        if (waitIndex >= wait_)
            mpnpu::api_error(site, "GroupBarrier::Wait: index %u is outside the Wait group [0, %u)", waitIndex, wait_);
        int32_t* rounds = at(waitIndex, WORDS - 1, site, "GroupBarrier::Wait");
        const int32_t round = __atomic_load_n(rounds, __ATOMIC_SEQ_CST) + 1;
        for (uint32_t a = 0; a < arrive_; ++a)
            mpnpu::gmflag::wait_at_least(at(waitIndex, a, site, "GroupBarrier::Wait"), round, site,
                                         "GroupBarrier::Wait");
        __atomic_store_n(rounds, round, __ATOMIC_SEQ_CST);
    }

private:
    static constexpr uint32_t AREA = 512, WORDS = AREA / sizeof(int32_t);
    int32_t* at(uint32_t w, uint32_t word, const mpnpu::Site& site, const char* call) const {
        return mpnpu::gmflag::word_at(ws_, GetWorkspaceLen(), uint64_t(w) * AREA + uint64_t(word) * sizeof(int32_t),
                                      site, call);
    }
    int32_t* ws_;
    uint32_t arrive_, wait_;
};

}  // namespace AscendC

#endif  // MPNPU_BLOCK_SYNC_H
