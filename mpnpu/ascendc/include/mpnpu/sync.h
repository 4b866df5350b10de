// Synchronisation: intra-core flags and barriers (SetFlag / WaitFlag / PipeBarrier), and across
// cores SyncAll and the cross-core flags (CrossCoreSetFlag / CrossCoreWaitFlag).
//
// Every call is a sync point named by its kernel line ("dir/file.cpp:line"); a launch that drops a
// sync point skips that call (and a traced launch records that it did). Cross-core syncs go to the
// core process (mpnpu.runtime.kcontext), which implements them for Python and C++ kernels alike;
// the pipes of a core run in order here, so intra-core flags are counters checked at once: a wait
// that no set has raised would hang the device and is reported at its line instead.
#ifndef MPNPU_SYNC_H
#define MPNPU_SYNC_H

#include <cstdint>
#include <exception>

#include "native/native_sync.h"
#include "native/rt.h"
#include "tensor.h"
#include "types.h"

namespace mpnpu {

struct EventPipes {
    uint8_t src, dst;
    const char* name;
};

// HardEvent number -> (source pipe, destination pipe, name), in the order of AscendC::HardEvent.
inline const EventPipes& event_pipes(AscendC::HardEvent e) {
    static const EventPipes table[] = {
        {P_MTE2, P_MTE1, "MTE2_MTE1"}, {P_MTE1, P_MTE2, "MTE1_MTE2"}, {P_MTE1, P_M, "MTE1_M"},
        {P_M, P_MTE1, "M_MTE1"},       {P_MTE2, P_V, "MTE2_V"},       {P_V, P_MTE2, "V_MTE2"},
        {P_MTE3, P_V, "MTE3_V"},       {P_V, P_MTE3, "V_MTE3"},       {P_M, P_V, "M_V"},
        {P_V, P_M, "V_M"},             {P_V, P_V, "V_V"},             {P_MTE3, P_MTE1, "MTE3_MTE1"},
        {P_MTE1, P_MTE3, "MTE1_MTE3"}, {P_MTE1, P_V, "MTE1_V"},       {P_MTE2, P_M, "MTE2_M"},
        {P_M, P_MTE2, "M_MTE2"},       {P_V, P_MTE1, "V_MTE1"},       {P_M, P_FIX, "M_FIX"},
        {P_FIX, P_M, "FIX_M"},         {P_MTE3, P_MTE2, "MTE3_MTE2"}, {P_MTE2, P_MTE3, "MTE2_MTE3"},
        {P_S, P_V, "S_V"},             {P_V, P_S, "V_S"},             {P_S, P_MTE2, "S_MTE2"},
        {P_MTE2, P_S, "MTE2_S"},       {P_S, P_MTE3, "S_MTE3"},       {P_MTE3, P_S, "MTE3_S"},
        {P_MTE2, P_FIX, "MTE2_FIX"},   {P_FIX, P_MTE2, "FIX_MTE2"},   {P_FIX, P_S, "FIX_S"},
        {P_M, P_S, "M_S"},             {P_FIX, P_MTE3, "FIX_MTE3"},   {P_MTE1, P_FIX, "MTE1_FIX"},
        {P_FIX, P_MTE1, "FIX_MTE1"},   {P_FIX, P_FIX, "FIX_FIX"},     {P_S, P_M, "S_M"},
        {P_S, P_MTE1, "S_MTE1"},       {P_S, P_FIX, "S_FIX"},
    };
    static const EventPipes none{P_S, P_S, "?"};
    size_t i = size_t(e);
    return i < sizeof(table) / sizeof(table[0]) ? table[i] : none;
}

// Which call a dropped sync point skipped (the index field of its MPNPU_EV_DROPPED record).
// (the numbers are the contract's, mpnpu.ascendc.native.abi.DroppedCall)
enum DroppedCall : int32_t {
    D_SYNC_ALL = MPNPU_DROPPED_SYNC_ALL, D_FLAG_SET = MPNPU_DROPPED_CROSS_CORE_SET_FLAG,
    D_FLAG_WAIT = MPNPU_DROPPED_CROSS_CORE_WAIT_FLAG, D_SET_FLAG = MPNPU_DROPPED_SET_FLAG,
    D_WAIT_FLAG = MPNPU_DROPPED_WAIT_FLAG, D_PIPE_BARRIER = MPNPU_DROPPED_PIPE_BARRIER
};

// While one is alive, the syncs this core issues are a high-level API's own (Matmul's barriers and
// its messages between the vector and cube cores, named at the kernel's line that called the API):
// they order accesses as any other, are recorded with MPNPU_SYNC_BY_LIBRARY, and a launch never
// drops them (MPNPU_DROP_SYNC names the kernel's own sync points; mutation testing makes no mutant
// of these, which the kernel's author could not remove).
struct LibrarySyncs {
    LibrarySyncs() { ++core().library_syncs; }
    ~LibrarySyncs() { --core().library_syncs; }
    LibrarySyncs(const LibrarySyncs&) = delete;
    LibrarySyncs& operator=(const LibrarySyncs&) = delete;
};

// A blocking cross-core sync has returned: a library that acted for this core while it waited
// (the matmul client's stand-in) stops and records what it did, in two steps around the sync's own
// record (SYNC_RETURNED before it, SYNC_RECORDED after it); a sync the launch drops ends it at once.
enum SyncEnd : int32_t { SYNC_RETURNED = 0, SYNC_RECORDED = 1, LAUNCH_ENDED = 2 };
inline void after_blocking_sync(SyncEnd phase) {
    CoreState& c = core();
    if (c.after_user_sync) c.after_user_sync(phase);
}
inline void end_blocking_sync() {
    after_blocking_sync(SYNC_RETURNED);
    after_blocking_sync(SYNC_RECORDED);
}

// A sync record's mark: MPNPU_SYNC_BY_LIBRARY inside a high-level API's own syncs, else 0.
inline uint8_t library_mark() { return core().library_syncs ? uint8_t(MPNPU_SYNC_BY_LIBRARY) : uint8_t(0); }

// True (and recorded) when the launch drops the sync point at ``site``.
inline bool dropped(const Site& site, DroppedCall call) {
    CoreState& c = core();
    note(c, site);
    if (c.dropped.empty() || c.library_syncs) return false;
    int32_t id = site_id(site);
    if (!c.sites[size_t(id)].dropped) return false;
    if (c.tracing) {
        MpnpuEvent& e = record(MPNPU_EV_DROPPED, 0, P_S, site);
        e.index = call;
        e.t0 = e.t1 = now_ns();
    }
    return true;
}

inline void pipe_sync_record(char op, uint8_t pipe, int32_t event, int32_t event_id, const Site& site) {
    if (!core().tracing) return;
    MpnpuEvent& e = record(MPNPU_EV_PIPE_SYNC, uint8_t(op), pipe, site);
    e.mem = library_mark();
    e.aux = event;
    e.index = event_id;
}

inline void check_event_id(AscendC::HardEvent evt, int32_t id, const Site& site, const char* call) {
    if (size_t(evt) >= size_t(AscendC::HardEvent::MAX))
        api_error(site, "%s: not a HardEvent (%d)", call, int(evt));
    if (id < 0 || id > 7)
        api_error(site, "%s<HardEvent::%s>(%d): event ids are 0..7 on this chip", call, event_pipes(evt).name, id);
}

inline void set_flag(AscendC::HardEvent evt, int32_t id, const Site& site) {
    check_event_id(evt, id, site, "SetFlag");
    if (dropped(site, D_SET_FLAG)) return;
    const EventPipes& p = event_pipes(evt);
    core().pipes.set_flag(int(evt), id, p.src, site.file, site.line, site.func);
    pipe_sync_record('s', p.src, int32_t(evt), id, site);
}

inline void wait_flag(AscendC::HardEvent evt, int32_t id, const Site& site) {
    check_event_id(evt, id, site, "WaitFlag");
    if (dropped(site, D_WAIT_FLAG)) return;
    const EventPipes& p = event_pipes(evt);
    if (!core().pipes.wait_flag(int(evt), id, p.src, p.dst, site.file, site.line, site.func))
        api_error(site,
                  "WaitFlag<HardEvent::%s>(%d) waits for an event no SetFlag issued before it raises: the device "
                  "would hang", p.name, id);
    pipe_sync_record('w', p.dst, int32_t(evt), id, site);
}

// Every SetFlag of this core no WaitFlag will take, forgotten (TPipe::Reset / Destroy: the pipe's event
// ids start again from their initial state, so a set left by a queue's last FreeTensor cannot satisfy
// a wait of the next pipe's queues one trip early). Each is taken on its own pipe, recorded there, so
// it orders nothing new: the pages promise the initial state, not a sync (Destroy's barrier of every
// pipe is its own, recorded by the caller).
inline void forget_pending_flags(const Site& site) {
    // (first let every pipe run what it was issued, unrecorded: a wait already issued then has taken
    // its set, and what is left raised is what no wait will take; this moves only when work runs)
    core().pipes.barrier(P_ALL);
    for (int evt = 0; evt < int(AscendC::HardEvent::MAX); ++evt)
        for (int id = 0; id < 8; ++id)
            for (int n = core().pipes.forget_raised(evt, id); n > 0; --n)
                pipe_sync_record('w', event_pipes(AscendC::HardEvent(evt)).src, int32_t(evt), id, site);
}

inline void pipe_barrier(uint8_t pipe, const Site& site) {
    if (dropped(site, D_PIPE_BARRIER)) return;
    core().pipes.barrier(pipe);
    pipe_sync_record('b', pipe, -1, 0, site);
}

// A high-level API's own barrier (LibrarySyncs), named at the kernel's line that called the API.
inline void library_barrier(uint8_t pipe, const Site& site) {
    LibrarySyncs inside;
    pipe_barrier(pipe, site);
}

// The engine's view of the event table and of errors (set up for every launch).
inline int event_source(int evt) { return event_pipes(AscendC::HardEvent(evt)).src; }
inline void pipe_error(const char* file, int line, const char* func, const char* message) {
    api_error(Site{file ? file : "?", line, func ? func : "?"}, "%s", message);
}

// A flag id the device's SyncAll is built on (11-14) and a SyncAll in one launch: on the chip their
// sets and waits would be mixed up. Either alone is fine (the dev kit's own flag sample uses 11-13).
[[noreturn]] inline void sync_all_collision(const Site& flag, const Site& sync, const Site& at) {
    api_error(at, "the cross-core flag at %s uses an id the device's SyncAll is built on (11-14), and this launch "
                  "also calls SyncAll (at %s): on the chip their sets and waits would be mixed up; use a flag id "
                  "in 0-10", site_name(flag).c_str(), site_name(sync).c_str());
}

inline void uses_sync_all_id(int32_t fid, const Site& site) {
    if (fid < 11 || fid > 14) return;
    CoreState& c = core();
    c.sync_ids_at = site;
    if (c.sync_all_at.file) sync_all_collision(site, c.sync_all_at, site);
}

inline void sync_all(bool aiv_only, const Site& site) {
    if (dropped(site, D_SYNC_ALL)) {
        end_blocking_sync();
        return;
    }
    CoreState& c = core();
    c.sync_all_at = site;
    if (c.sync_ids_at.file) sync_all_collision(c.sync_ids_at, site, site);
    if (aiv_only && is_aic())
        api_error(site, "SyncAll<true>() synchronises the vector cores only; a cube core must not call it "
                        "(guard it with ASCEND_IS_AIV, or use SyncAll<false>())");
    c.pipes.barrier(P_ALL);  // what this core wrote before the barrier has landed when any core leaves it
    uint64_t t0 = c.tracing ? now_ns() : 0;
    // On the core process's barrier, without a callback; through the core process where the launch
    // hands over no barrier (one wider than the cores, whose SyncAll the core process refuses).
    MpnpuNativeSync* nat = c.launch.native;
    if (nat && (aiv_only ? nat->barrier_aiv : nat->barrier_all).parties) {
        int64_t count = 0;
        write_where(site);  // (what the watchdog names while this core waits)
        if (int32_t rc = native::sync_all(*nat, aiv_only, &count))
            core_call(c.core_calls->sync_error(rc, aiv_only ? 1 : 0, int32_t(count), 0));
    } else {
        core_call(c.core_calls->sync_all(aiv_only ? 1 : 0, site_id(site)));
    }
    after_blocking_sync(SYNC_RETURNED);
    if (c.tracing) {
        MpnpuEvent& e = record(MPNPU_EV_SYNC_ALL, 0, P_ALL, site);
        e.mem = aiv_only ? 1 : 0;
        e.t0 = t0;
        e.t1 = now_ns();
    }
    after_blocking_sync(SYNC_RECORDED);
}

constexpr int32_t ANY_MODE = MPNPU_ANY_MODE;  // a CrossCoreWaitFlag without a mode: the setters' mode counts

inline void cross_core_set(int32_t mode, uint8_t pipe, int32_t flag_id, const Site& site) {
    if (mode < 0 || mode > 2) api_error(site, "CrossCoreSetFlag<%d, ...>: this chip has flag modes 0, 1 and 2", mode);
    if (pipe == P_S || pipe == P_ALL)
        api_error(site, "CrossCoreSetFlag<%d, %s>: the pipe must be PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3 "
                        "or PIPE_FIX", mode, pipe_name(pipe));
    if (dropped(site, D_FLAG_SET)) return;
    CoreState& c = core();
    uint64_t t0 = c.tracing ? now_ns() : 0;
    // The flag id is taken modulo 16, as the chip takes its low 4 bits. The set fires once its pipe
    // has completed what was issued to it before (e.g. the copy out it announces).
    int32_t id = site_id(site), fid = flag_id & 0xF;
    uses_sync_all_id(fid, site);
    const MpnpuCoreCalls* calls = c.core_calls;
    MpnpuNativeSync* nat = c.launch.native;
    if (MpnpuNativeFlag* f = nat ? native::flag(*nat, mode, fid) : nullptr) {
        c.pipes.signal(pipe, [calls, nat, f, mode, fid] {
            int32_t receiver = -1;
            if (int32_t rc = native::flag_set(*nat, *f, mode, fid, &receiver))
                core_call(calls->sync_error(rc, mode, fid, receiver));
        });
    } else {  // mode 0, or a flag this core may not use (the core process names why)
        c.pipes.signal(pipe, [calls, mode, fid, pipe, id] { core_call(calls->flag_set(mode, fid, pipe, id)); });
    }
    if (c.tracing) {
        MpnpuEvent& e = record(MPNPU_EV_FLAG_SET, 0, pipe, site);
        e.mem = uint8_t(uint8_t(mode) | library_mark());
        e.index = flag_id & 0xF;
        e.t0 = t0;
        e.t1 = now_ns();
    }
}

inline void cross_core_wait(int32_t mode, int32_t flag_id, const Site& site) {
    if (mode != ANY_MODE && (mode < 0 || mode > 2))
        api_error(site, "CrossCoreWaitFlag<%d>: this chip has flag modes 0, 1 and 2", mode);
    if (dropped(site, D_FLAG_WAIT)) {
        end_blocking_sync();
        return;
    }
    CoreState& c = core();
    c.pipes.flush_signals();
    c.pipes.wake();  // the rest of this core's queued work runs while it waits
    uint64_t t0 = c.tracing ? now_ns() : 0;
    int32_t resolved = mode;
    const int32_t fid = flag_id & 0xF;
    uses_sync_all_id(fid, site);
    MpnpuNativeSync* nat = c.launch.native;
    // Natively for an id usable in modes 1 or 2 here; otherwise (mode 0, a reserved id, a mode this
    // core may not use) through the core process, which also names what is wrong.
    if (nat && (nat->flags[1][fid].valid || nat->flags[2][fid].valid)) {
        if (resolved == ANY_MODE) {
            resolved = native::wait_mode(*nat, fid, [&site] { write_where(site); });
            if (resolved < 0) core_call(c.core_calls->sync_error(MPNPU_NATIVE_FLAG_TIMEOUT, -1, fid, 0));
        }
        if (const MpnpuNativeFlag* f = native::flag(*nat, resolved, fid)) {
            if (int32_t rc = native::flag_wait(*nat, *f, resolved, fid, [&site] { write_where(site); }))
                core_call(c.core_calls->sync_error(rc, resolved, fid, 0));
        } else {
            core_call(c.core_calls->flag_wait(resolved, fid, site_id(site), &resolved));
        }
    } else {
        core_call(c.core_calls->flag_wait(mode, fid, site_id(site), &resolved));
    }
    after_blocking_sync(SYNC_RETURNED);
    if (c.tracing) {
        MpnpuEvent& e = record(MPNPU_EV_FLAG_WAIT, 0, P_S, site);
        e.mem = uint8_t(uint8_t(resolved) | library_mark());
        e.index = flag_id & 0xF;
        e.t0 = t0;
        e.t1 = now_ns();
    }
    after_blocking_sync(SYNC_RECORDED);
}

// WaitPreTaskEnd / SetNextTaskStart: each once per core and launch.
inline void task_sync(Site& at, const char* call, const Site& site) {
    if (at.file)
        api_error(site, "%s: called a second time on this core (the first at %s:%d); it is called once per core",
                  call, at.file, at.line);
    at = site;
}

// The kernel's own blocking cross-core syncs first let a library act (the matmul client); ``holds``:
// the sync may hold this core until others act (not DataSyncBarrier).
inline void before_user_sync(const Site& site, bool holds = true) {
    CoreState& c = core();
    if (c.before_user_sync) c.before_user_sync(site, holds);
}

// A kernel function was entered or left (``fn``: its address), in a library built with
// MPNPU_STAGE_HOOKS: run the syncs the launch inserted there, as if the source had them at the
// function's first or last line. Their trace records carry the insert's name ("+after:CopyOut").
__attribute__((no_instrument_function)) inline void stage_boundary(void* fn, int32_t entering) {
    CoreState& c = core();
    if (!c.in_launch || c.inserts.empty()) return;
    // A function left by an exception (a fault) did not end normally: a core that stops must not
    // wait in a barrier the others may never reach.
    if (std::uncaught_exceptions() > 0) return;
    const uint64_t offset = uint64_t(reinterpret_cast<uintptr_t>(fn) - c.lib_base);
    for (const MpnpuInsert& ins : c.inserts) {
        if (ins.fn_offset != offset || ins.at_entry != entering) continue;
        const Site site{ins.name, 0, ins.stage};
        switch (ins.kind) {
            case MPNPU_INS_SYNC_ALL:
            case MPNPU_INS_SYNC_AIV:
                before_user_sync(site);
                sync_all(ins.kind == MPNPU_INS_SYNC_AIV, site);
                break;
            case MPNPU_INS_FLAG_SET:
                c.pipes.barrier(P_ALL);  // at the function's end: everything it issued has completed
                cross_core_set(ins.mode, is_aic() ? P_FIX : P_MTE3, ins.flag_id, site);
                break;
            case MPNPU_INS_FLAG_WAIT:
                before_user_sync(site);
                cross_core_wait(ins.mode, ins.flag_id, site);
                break;
            default:
                break;
        }
    }
}

}  // namespace mpnpu

namespace AscendC {

template <HardEvent evt>
inline void SetFlag(int32_t eventID, MPNPU_SITE) {
    mpnpu::set_flag(evt, eventID, site);
}

template <HardEvent evt>
inline void WaitFlag(int32_t eventID, MPNPU_SITE) {
    mpnpu::wait_flag(evt, eventID, site);
}

template <pipe_t pipe>
inline void PipeBarrier(MPNPU_SITE) {
    mpnpu::pipe_barrier(uint8_t(pipe), site);
}

// Which memory accesses DataSyncBarrier waits for (SEQ: reserved).
enum class MemDsbT { ALL = 0, DDR, UB, SEQ };

// Holds this core's later instructions until its earlier memory accesses are done. mpnpu orders it as
// a barrier of every pipe of the core, whatever memory it names (DDR: GM, UB: the unified buffer).
template <MemDsbT arg0>
inline void DataSyncBarrier(MPNPU_SITE) {
    mpnpu::before_user_sync(site, false);
    mpnpu::pipe_barrier(uint8_t(PIPE_ALL), site);
}

// SyncAll<true>() (the default): every vector core; SyncAll<false>(): every cube and vector core.
template <bool isAIVOnly = true>
inline void SyncAll(MPNPU_SITE) {
    mpnpu::before_user_sync(site);
    mpnpu::sync_all(isAIVOnly, site);
}

// The software SyncAll of the vector cores, with GM and UB workspaces: the same barrier here (the
// workspaces are the chip's way of building it; mpnpu checks them for bounds only).
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, MPNPU_SITE) {
    (void)gmWorkspace;
    (void)ubWorkspace;
    (void)usedCores;
    mpnpu::before_user_sync(site);
    mpnpu::sync_all(true, site);
}

// SuperKernel early start (WaitPreTaskEnd: what comes before it may overlap the previous sub-kernel;
// SetNextTaskStart: what comes after it may overlap the next one). On this chip class they are
// documented as compiling but taking no effect, and mpnpu runs one kernel per launch, so they order
// nothing here: a launch's work still starts after the previous launch ended and ends before the
// next starts, and inside the launch neither is a barrier or a sync between cores (racecheck sees
// no edge). Each is checked to be called at most once per core.
template <bool FORCE = false>
inline void WaitPreTaskEnd(MPNPU_SITE) {
    mpnpu::CoreState& c = mpnpu::core();
    mpnpu::note(c, site);
    mpnpu::task_sync(c.task_wait_at, "WaitPreTaskEnd", site);
}

template <bool FORCE = false>
inline void SetNextTaskStart(MPNPU_SITE) {
    mpnpu::CoreState& c = mpnpu::core();
    mpnpu::note(c, site);
    mpnpu::task_sync(c.task_set_at, "SetNextTaskStart", site);
}

// SYNC_AIC_FLAG: the flag id public kernels for this chip class pass to CrossCoreSetFlag<0, ...> /
// CrossCoreWaitFlag for a barrier of all cores of one type without declaring it (they declare their
// own, as 1, only for other chips; the dev kit's cross-core flag sample declares one of that name
// as 11). On no API page: the name is inferred from those kernels and the value taken from the
// sample, inside the 11-14 the device's SyncAll is documented to be built on (so a kernel that also
// calls SyncAll is told of the collision, as for any id there).
constexpr uint16_t SYNC_AIC_FLAG = 11;

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId, MPNPU_SITE) {
    mpnpu::cross_core_set(modeId, uint8_t(pipe), flagId, site);
}

// On this chip the wait has no mode of its own (its template arguments do not take effect): it
// consumes the sets its setters made, in the mode they used. A mode given explicitly is checked.
template <uint8_t modeId = mpnpu::ANY_MODE, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId, MPNPU_SITE) {
    mpnpu::before_user_sync(site);
    mpnpu::cross_core_wait(modeId, flagId, site);
}

// NotifyEvent / WaitEvent: the cube <-> vector flags of one AI core under other names. No API page
// describes them; this is inferred from how kernels use them (the dev kit's AIV ND2NZ tuning guide
// and public matmul kernels): the vector cores NotifyEvent<PIPE_MTE3>(id) after writing what the cube
// core reads, which WaitEvent(id)s; the cube core NotifyEvent<PIPE_FIX>(id) after writing C, which
// both vector cores WaitEvent(id) for; a comment in one kernel notes the 15-set limit of a flag.
// So NotifyEvent<pipe>(id) is CrossCoreSetFlag<2, pipe>(id) and WaitEvent(id) is CrossCoreWaitFlag(id).
template <pipe_t pipe>
inline void NotifyEvent(uint16_t flagId, MPNPU_SITE) {
    mpnpu::cross_core_set(2, uint8_t(pipe), flagId, site);
}

template <pipe_t pipe = PIPE_S>
inline void WaitEvent(uint16_t flagId, MPNPU_SITE) {
    mpnpu::before_user_sync(site);
    mpnpu::cross_core_wait(mpnpu::ANY_MODE, flagId, site);
}

}  // namespace AscendC

// The older intrinsic spellings some kernels still use.
inline void pipe_barrier(pipe_t pipe, MPNPU_SITE) { mpnpu::pipe_barrier(uint8_t(pipe), site); }

#endif  // MPNPU_SYNC_H
