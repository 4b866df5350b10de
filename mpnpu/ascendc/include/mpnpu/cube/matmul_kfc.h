// How a vector core drives its cube core's matmul (REGIST_MATMUL_OBJ in a mix kernel): the cube
// core becomes a server inside REGIST_MATMUL_OBJ, and the vector cores' Matmul calls are requests.
//
//   vector core s (client)                          cube core (server, in REGIST_MATMUL_OBJ)
//   ─────────────────────────                        ───────────────────────────────────────
//   write request k to ring[s][k % 16] (GM)
//   CrossCoreSetFlag<2, PIPE_MTE3>(0)      ──────►   CrossCoreWaitFlag<2>(0)   (both clients' k-th)
//                                                    read ring[0][k], ring[1][k]; run both
//                                                    write response k of each client (GM)
//   CrossCoreWaitFlag<2>(1)                ◄──────   CrossCoreSetFlag<2, PIPE_FIX>(1)
//   read response k
//
// Flag mode 2 on this chip is collective: the cube core's wait needs a set from *both* vector
// cores of its AI core, and its set releases both. So the server works in rounds: round k serves
// the k-th request of each client. A client whose kernel is done with the matmul (its Matmul
// objects are destroyed at the end of the kernel function, End having been called after each one's
// last use) keeps taking part with empty requests until the other has finished too, so the two
// vector cores may issue different numbers of requests; End itself only ends one object's use, so
// that another object (or the same one again) can be used after it, as the documentation has it.
// Before the kernel's own SyncAll or CrossCoreWaitFlag a client sends an empty request (not waited
// for), and while that sync holds it a stand-in answers its sibling's requests (below), so that a
// vector core blocked there never leaves its sibling's requests without their pairs. Requests are
// one per Iterate, GetTensorC, IterateAll, IterateBatch / IterateNBatch and End (the setters only
// change the client's copy of the setup, which travels with each request).
// The flags are real cross-core flags (ids 0 and 1, inside the [0, 2N-1] the documentation reserves
// for N Matmul objects): the watchdog sees a server waiting for a client that can no longer ask,
// the race detector orders the cube core's accesses by them, holds stop at them.
//
// The GM workspace (REGIST_MATMUL_OBJ's system workspace) per AI core, at block * kfc_block_bytes:
//   [0, 16 KiB)      request rings, 2 clients x 16 requests x 512 bytes
//   [16, 18 KiB)     response rings, 2 x 16 x 64 bytes
//   [64 KiB, ...)    per Matmul object and client, 256 KiB where the cube core puts C for a
//                    vector core's UB (GetTensorC / IterateAll to a LocalTensor); the client copies it in
// Pointers travel as (kernel argument index, byte offset): every core maps GM at its own addresses.
#ifndef MPNPU_CUBE_MATMUL_KFC_H
#define MPNPU_CUBE_MATMUL_KFC_H

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "../native/rt.h"
#include "../sync.h"
#include "matmul_engine.h"

namespace mpnpu {
namespace mm {

constexpr int32_t FLAG_REQ = 0;
constexpr int32_t FLAG_RESP = 1;
constexpr uint64_t RING = 16;
constexpr uint64_t WIRE_BYTES = 768;  // a request (TCubeTiling with its batch layout fields rides in it)
constexpr uint64_t RESP_BYTES = 64;
constexpr uint64_t MAX_CLIENTS = 2;  // the vector cores of one AI core
constexpr uint64_t RESP_AT = MAX_CLIENTS * RING * WIRE_BYTES;  // the responses follow the clients' rings
constexpr uint64_t PROTO_BYTES = MPNPU_KFC_PROTO_BYTES;  // (contract.h: Python's numbers, mpnpu.ascendc.matmul_tiling)
constexpr uint64_t STAGE_BYTES = MPNPU_KFC_STAGE_BYTES;
constexpr int MAX_OBJECTS = MPNPU_KFC_MAX_OBJECTS;
constexpr uint32_t MAGIC = 0x4b464331u;

// GM bytes of the system workspace one AI core's matmul needs (nobj Matmul objects).
constexpr uint64_t kfc_block_bytes(int nobj) { return PROTO_BYTES + uint64_t(nobj) * 2 * STAGE_BYTES; }

enum Op : uint32_t { OP_NULL = 0, OP_ITERATE = 1, OP_GETC = 2, OP_ITERATE_ALL = 3, OP_END = 4, OP_ITERATE_BATCH = 5 };

struct WirePtr {
    int32_t arg;  // kernel argument index, -1: none
    int32_t pad;
    int64_t off;  // bytes from that argument's address
};

struct Wire {
    uint32_t magic, seq, op, obj;
    int32_t tile, enAtomic, sequential, partial, to_ub, finishing;
    int32_t batch_a, batch_b, batch_loops;  // IterateBatch / IterateNBatch: batchA, batchB, batchLoop
    int32_t line;
    int64_t file, func;  // the client's call site, relative to site_anchor (one library, every process)
    int64_t stride_a, stride_b;  // IterateBatch's matrixStrideA / matrixStrideB
    Setup setup;         // pointers zeroed; they travel below
    WirePtr a_base, a, b_base, b, bias_base, bias, c_base, c, quant_base, quant, idx_base, idx;
};
static_assert(sizeof(Wire) <= WIRE_BYTES, "a matmul request must fit its ring slot");
static_assert(RESP_AT + MAX_CLIENTS * RING * RESP_BYTES <= PROTO_BYTES, "the rings and responses fit the protocol area");

struct Resp {
    uint32_t seq;
    uint32_t done;  // the server has finished (every client ended)
};


inline WirePtr encode(const void* p, const Site& site, const char* what) {
    WirePtr w{-1, 0, 0};
    if (!p) return w;
    CoreState& c = core();
    int32_t r = find_region(p);
    if (r < 0) api_error(site, "%s: the tensor lies in none of the launch's GM tensors", what);
    const MpnpuRegion& reg = c.regions[size_t(r)];
    for (size_t i = 0; i < c.args.size(); ++i) {
        uint64_t a = c.args[i];
        if (a >= reg.addr && a < reg.addr + reg.size) {
            w.arg = int32_t(i);
            w.off = int64_t(reinterpret_cast<uintptr_t>(p)) - int64_t(a);
            return w;
        }
    }
    api_error(site, "%s: the tensor's GM allocation is not one of the kernel's arguments", what);
}

inline const uint8_t* decode(const WirePtr& w, const Site& site) {
    if (w.arg < 0) return nullptr;
    const CoreState& c = core();
    if (size_t(w.arg) >= c.args.size()) api_error(site, "matmul server: a request names kernel argument %d", w.arg);
    return reinterpret_cast<const uint8_t*>(uintptr_t(int64_t(c.args[size_t(w.arg)]) + w.off));
}

// The workspace must hold [p, p + n): checked without tracing (the rings are mpnpu's own).
inline void check_ws(const uint8_t* p, uint64_t n, const Site& site) {
    int32_t r = find_region(p);
    bool ok = r >= 0;
    if (ok) {
        const MpnpuRegion& reg = core().regions[size_t(r)];
        uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(p));
        ok = a + n <= reg.addr + reg.size;
    }
    if (!ok)
        api_error(site, "REGIST_MATMUL_OBJ: the system workspace is too small or not a GM tensor (each AI core's "
                        "matmul needs %llu bytes at block * that; mpnpu.ascendc.matmul_tiling.workspace_bytes says how much)",
                  (unsigned long long)kfc_block_bytes(1));
}

inline uint8_t* wire_slot(uint8_t* chunk, int s, uint64_t k) { return chunk + (uint64_t(s) * RING + k % RING) * WIRE_BYTES; }
inline uint8_t* resp_slot(uint8_t* chunk, int s, uint64_t k) {
    return chunk + RESP_AT + (uint64_t(s) * RING + k % RING) * RESP_BYTES;
}
inline uint8_t* stage(uint8_t* chunk, uint32_t obj, int s) { return chunk + PROTO_BYTES + (uint64_t(obj) * 2 + uint64_t(s)) * STAGE_BYTES; }

// Who serves whom: what REGIST_MATMUL_OBJ registered on this core.
class Registrable {
public:
    virtual ~Registrable() noexcept(false) = default;
    virtual void mpnpu_register(uint32_t index, const TCubeTiling* tiling, const Site& site) = 0;
    virtual bool mpnpu_is_client_capable() const = 0;
    virtual void mpnpu_serve(const Wire& w, int client, uint8_t* chunk, const Site& site) = 0;
    virtual void mpnpu_served() = 0;
    virtual void mpnpu_client_registered() = 0;
};

struct RegCtx {
    Registrable* objs[MAX_OBJECTS] = {};
    const TCubeTiling* tilings[MAX_OBJECTS] = {};
    int n = 0;
    Site site;
};

inline void reg_arg(RegCtx& c, Registrable& o) {
    if (c.n >= MAX_OBJECTS) api_error(c.site, "REGIST_MATMUL_OBJ: at most %d Matmul objects", MAX_OBJECTS);
    c.objs[c.n++] = &o;
}
inline void reg_arg(RegCtx& c, const TCubeTiling* t) {
    if (c.n == 0) api_error(c.site, "REGIST_MATMUL_OBJ: a tiling before any Matmul object");
    c.tilings[c.n - 1] = t;
}
inline void reg_arg(RegCtx& c, const TCubeTiling& t) { reg_arg(c, &t); }

// -- the vector core's side ------------------------------------------------------------------------------

struct Client {
    uint8_t* chunk = nullptr;
    int sub = 0;
    uint64_t next = 0, consumed = 0;
    bool server_done = false, finished = false;
    int alive = 0;                 // registered objects not yet destroyed
    Site site{nullptr, 0, nullptr};  // REGIST_MATMUL_OBJ's
};
inline Client& client() {
    static Client c;
    return c;
}

[[noreturn]] inline void answered_out_of_order(uint32_t seq, uint64_t due, const Site& site) {
    api_error(site, "Matmul: the cube core answered request %u where %llu was due (is flag 0 or 1 of mode 2 also "
                    "used by the kernel itself? the matmul API reserves them)",
              seq, (unsigned long long)due);
}

inline void take_response(const Site& site) {
    LibrarySyncs inside;  // (the API's own flags, named at the kernel's line that called it)
    Client& c = client();
    cross_core_wait(2, FLAG_RESP, site);
    Resp r;
    const uint8_t* slot = resp_slot(c.chunk, c.sub, c.consumed);
    check_ws(slot, sizeof r, site);
    std::memcpy(&r, slot, sizeof r);
    if (r.seq != uint32_t(c.consumed)) answered_out_of_order(r.seq, c.consumed, site);
    ++c.consumed;
    if (r.done) c.server_done = true;
}

inline void wait_for(uint64_t seq, const Site& site) {
    while (client().consumed <= seq) take_response(site);
}

// Sends ``w`` (filled but for magic, seq and site); returns its sequence number.
inline uint64_t post(Wire& w, const Site& site) {
    LibrarySyncs inside;
    Client& c = client();
    if (!c.chunk)
        api_error(site, "Matmul on a vector core needs REGIST_MATMUL_OBJ(&pipe, workspace, mm, &tiling) first");
    if (c.finished)
        api_error(site, "Matmul: this vector core already called End on every Matmul it had used, and the cube core "
                        "may have stopped serving it (mpnpu's server ends when both vector cores have ended)");
    while (c.next - c.consumed >= RING - 1) take_response(site);  // at most 15 answers outstanding
    w.magic = MAGIC;
    w.seq = uint32_t(c.next);
    w.line = site.line;
    w.file = rel(site.file);
    w.func = rel(site.func);
    uint8_t* slot = wire_slot(c.chunk, c.sub, c.next);
    check_ws(slot, sizeof w, site);
    std::memcpy(slot, &w, sizeof w);
    cross_core_set(2, P_MTE3, FLAG_REQ, site);
    return c.next++;
}

// The kernel is done with the matmul on this vector core (its last registered object is being
// destroyed, at the end of the kernel function): take part in the server's rounds with empty requests
// until the server has finished (the other vector core may still be issuing requests). End is what
// the pages ask for when switching between objects, not at the kernel's end: the dev kit's batch
// samples use their one object without it, and public rnn kernels switch between two objects and
// never call it, and their CPU-debug unit tests pass.
inline void finish_client() {
    Client& c = client();
    if (!c.chunk || c.finished) return;
    while (!c.server_done) {
        Wire idle{};
        idle.op = OP_NULL;
        idle.finishing = 1;
        wait_for(post(idle, c.site), c.site);
    }
    c.finished = true;
}

// -- the stand-in: a client held by the kernel's own sync ---------------------------------------------------
//
// The server pairs the two clients' requests round by round (the collective flag above), where the
// chip serves each vector core's queue on its own. A client blocked in the kernel's own SyncAll or
// flag wait (for its sibling, say) would hold back every request its sibling makes meanwhile, and
// the two would wait for each other where the chip's queues would not. So before such a sync the
// client posts an empty request (not waited for), and while the sync holds it a thread of its
// process stands in for it: for each real request the sibling posts, an empty one of this client's
// and its set, and it takes the answers as they come. None of it carries data. What it did enters
// this core's trace when the kernel's sync returns, as library syncs: its sets before the sync's
// own record, its waits after it. (The stand-in may still answer a request the sibling makes just
// after the same sync let both go; a wait for that answer recorded before the sync would be a wait
// on something that happens after it. Recorded after the sync, the waits order this core after
// rounds that served its sibling, an ordering the chip does not give: a race between the sibling's
// matmul output and this core's later reads with no sync of their own can then go unseen.)
struct StandIn {
    std::mutex m;
    std::condition_variable cv;
    bool away = false;  // the kernel's sync holds the client
    pid_t started = 0;  // the process whose thread this is (0: none yet)
    MpnpuNativeSync* nat = nullptr;
    MpnpuNativeFlag* flag = nullptr;
    MpnpuNativeFlag* answers = nullptr;  // the cube core's answer flag, as this core waits for it
    Site site{nullptr, 0, nullptr};      // the kernel's sync
    struct Sync {
        bool set;  // else a wait
        uint64_t t0, t1;
    };
    std::vector<Sync> done;   // what it did while away, in order
    std::vector<Sync> waits;  // (the client's thread: its waits, recorded after the sync's own record)
    // a failed set (MPNPU_NATIVE_*, receiver: the core it failed at), BAD_ANSWER (receiver: the
    // answer's number) or FAILED (the thread could not go on), reported when the kernel's sync returns
    int32_t error = 0, receiver = -1;
    static constexpr int32_t BAD_ANSWER = -1, FAILED = -2;
};
inline StandIn& stand_in() {
    static StandIn* s = new StandIn;  // (never destroyed: the thread may still wait on it at exit)
    return *s;
}

// The sibling has posted request ``k`` and it asks for work (read while the sibling may be
// writing it: a torn read only delays the stand-in to its next look, or adds an empty round).
inline bool sibling_asks(const Client& c, uint64_t k) {
    const uint8_t* slot = wire_slot(c.chunk, 1 - c.sub, k);
    const uint32_t* head = reinterpret_cast<const uint32_t*>(slot);  // magic, seq, op (struct Wire)
    return __atomic_load_n(head, __ATOMIC_ACQUIRE) == MAGIC && __atomic_load_n(head + 1, __ATOMIC_ACQUIRE) == uint32_t(k) &&
           __atomic_load_n(head + 2, __ATOMIC_ACQUIRE) != OP_NULL;
}

// One empty request for the held client and its set (the lock held).
inline void stand_in_post(StandIn& s, Client& c) {
    Wire w{};
    w.magic = MAGIC;
    w.seq = uint32_t(c.next);
    w.op = OP_NULL;
    w.line = s.site.line;
    w.file = rel(s.site.file);
    w.func = rel(s.site.func);
    std::memcpy(wire_slot(c.chunk, c.sub, c.next), &w, sizeof w);
    const uint64_t t0 = now_ns();
    if (int32_t rc = native::flag_set(*s.nat, *s.flag, 2, FLAG_REQ, &s.receiver)) {
        s.error = rc;
        return;
    }
    ++c.next;
    s.done.push_back({true, t0, now_ns()});
}

// Takes the held client's next answer if the cube core has given it (the lock held).
inline bool stand_in_take(StandIn& s, Client& c) {
    if (c.consumed == c.next || !native::try_take(s.answers->in_sem[0])) return false;
    const uint64_t t0 = now_ns();
    Resp r;
    std::memcpy(&r, resp_slot(c.chunk, c.sub, c.consumed), sizeof r);
    if (r.seq != uint32_t(c.consumed)) {
        s.error = StandIn::BAD_ANSWER;
        s.receiver = int32_t(r.seq);
        return false;
    }
    ++c.consumed;
    if (r.done) c.server_done = true;
    s.done.push_back({false, t0, now_ns()});
    return true;
}

inline void stand_in_loop() {
    StandIn& s = stand_in();
    std::unique_lock<std::mutex> lock(s.m);
    for (;;) {
        s.cv.wait(lock, [&s] { return s.away; });
        while (s.away) {
            try {
                Client& c = client();
                if (s.error == 0 && stand_in_take(s, c)) continue;
                if (s.error == 0 && c.next - c.consumed < RING - 1 && sibling_asks(c, c.next)) {
                    stand_in_post(s, c);
                    continue;
                }
            } catch (...) {  // (a full vector, say: the client reports it; the thread must not end the process)
                s.error = StandIn::FAILED;
            }
            // (a look every 200 us while the kernel's sync holds the client; woken at once when it ends)
            s.cv.wait_for(lock, std::chrono::microseconds(200));
        }
    }
}

inline void record_stand_in(const std::vector<StandIn::Sync>& syncs, const Site& site) {
    if (!core().tracing) return;
    LibrarySyncs inside;
    for (const StandIn::Sync& d : syncs) {
        MpnpuEvent& e = record(d.set ? MPNPU_EV_FLAG_SET : MPNPU_EV_FLAG_WAIT, 0, d.set ? P_MTE3 : P_S, site);
        e.mem = uint8_t(2 | library_mark());
        e.index = d.set ? FLAG_REQ : FLAG_RESP;
        e.t0 = d.t0;
        e.t1 = d.t1;
    }
}

// The kernel's sync has returned (phase SYNC_RETURNED: the stand-in stops, its sets enter the trace;
// SYNC_RECORDED: its waits do, and a failure of it is reported), or the launch ended (LAUNCH_ENDED:
// both, reporting nothing: it ends anyway).
inline void end_stand_in(int32_t phase) {
    StandIn& s = stand_in();
    if (phase != SYNC_RECORDED) {
        std::vector<StandIn::Sync> done;
        {
            std::lock_guard<std::mutex> lock(s.m);
            if (!s.away) return;
            s.away = false;
            done.swap(s.done);
        }
        s.cv.notify_all();
        s.waits.clear();
        std::vector<StandIn::Sync> sets;
        for (const StandIn::Sync& d : done) (d.set ? sets : s.waits).push_back(d);
        record_stand_in(sets, s.site);
        if (phase == SYNC_RETURNED) return;
    }
    record_stand_in(s.waits, s.site);
    s.waits.clear();
    int32_t error = 0;
    std::swap(error, s.error);  // (the thread is stopped: no lock needed)
    if (error == 0 || phase == LAUNCH_ENDED) return;
    CoreState& c = core();
    if (error == StandIn::BAD_ANSWER) answered_out_of_order(uint32_t(s.receiver), client().consumed, s.site);
    if (error == StandIn::FAILED)
        api_error(s.site, "Matmul: the thread standing in for this vector core while it waited here failed");
    core_call(c.core_calls->sync_error(error, 2, FLAG_REQ, s.receiver));
}

// Before the kernel's own SyncAll, CrossCoreWaitFlag or GM-flag wait on a client (and before a
// DataSyncBarrier, which does not hold the core: ``holds`` false): an empty request, not waited
// for, then the stand-in while the sync holds this core.
inline void before_kernel_sync(const Site& site, bool holds) {
    Client& c = client();
    if (!c.chunk || c.finished) return;
    Wire idle{};
    idle.op = OP_NULL;
    post(idle, site);
    CoreState& core_state = core();
    MpnpuNativeSync* nat = core_state.launch.native;
    MpnpuNativeFlag* flag = nat ? native::flag(*nat, 2, FLAG_REQ) : nullptr;
    MpnpuNativeFlag* answers = nat ? native::flag(*nat, 2, FLAG_RESP) : nullptr;
    if (!holds || !flag || !answers || answers->n_in != 1 || core_state.launch.kernel_type != MPNPU_KT_MIX_AIC_1_2)
        return;  // (no wait, no sibling to stand in for, or flags the core process serves)
    core_state.pipes.flush_signals();  // (the empty request's set is made before the stand-in's)
    StandIn& s = stand_in();
    {
        std::lock_guard<std::mutex> lock(s.m);
        s.nat = nat;
        s.flag = flag;
        s.answers = answers;
        s.site = site;
        s.done.clear();
        s.error = 0;
        s.away = true;
        if (s.started != getpid()) {  // (a process forked from one that had the thread has none)
            std::thread(stand_in_loop).detach();  // (lives as long as the core process, as the pipes' threads do)
            s.started = getpid();
        }
    }
    s.cv.notify_all();
    core_state.after_user_sync = &end_stand_in;
}

// -- the cube core's side ----------------------------------------------------------------------------------

inline void serve(RegCtx& ctx, uint8_t* chunk, const Site& site) {
    const int nclients = core().launch.kernel_type == MPNPU_KT_MIX_AIC_1_2 ? 2 : 1;
    bool finished[2] = {false, nclients == 1};
    for (uint64_t round = 0;; ++round) {
        {
            // (the API's own syncs only: what a request runs, a callback of the kernel's included, is not)
            LibrarySyncs inside;
            cross_core_wait(2, FLAG_REQ, site);
        }
        for (int s = 0; s < nclients; ++s) {
            Wire w;
            const uint8_t* slot = wire_slot(chunk, s, round);
            check_ws(slot, sizeof w, site);
            std::memcpy(static_cast<void*>(&w), slot, sizeof w);
            if (w.magic != MAGIC || w.seq != uint32_t(round))
                api_error(site, "matmul server: vector core %d's request %llu is not there (is flag 0 or 1 of mode 2 "
                                "also used by the kernel itself? the matmul API reserves them)",
                          s, (unsigned long long)round);
            Site at{unrel(w.file), w.line, unrel(w.func)};
            if (w.op != OP_NULL) {
                if (finished[s]) api_error(at, "matmul server: a request from a vector core that had ended");
                if (w.obj >= uint32_t(ctx.n))
                    api_error(at, "matmul server: Matmul object %u was not registered here (%d were)", w.obj, ctx.n);
                ctx.objs[w.obj]->mpnpu_serve(w, s, chunk, at);
            }
            if (w.finishing) finished[s] = true;
        }
        library_barrier(P_ALL, site);  // every access of the round is complete before the answer
        const bool all = finished[0] && finished[1];
        for (int s = 0; s < nclients; ++s) {
            Resp r{uint32_t(round), all ? 1u : 0u};
            uint8_t* slot = resp_slot(chunk, s, round);
            check_ws(slot, sizeof r, site);
            std::memcpy(slot, &r, sizeof r);
        }
        {
            LibrarySyncs inside;
            cross_core_set(2, P_FIX, FLAG_RESP, site);
        }
        if (all) return;
    }
}

inline uint8_t* chunk_of(uint8_t* workspace, int nobj, const Site& site) {
    if (!workspace)
        api_error(site, "REGIST_MATMUL_OBJ: the workspace is a null pointer (pass the system workspace: "
                        "SetSysWorkspace(workspace) then GetSysWorkSpacePtr())");
    const CoreState& c = core();
    int64_t block = c.launch.block_idx;
    if (is_aiv() && c.launch.subblock_num > 1) block /= c.launch.subblock_num;
    // Where in the system workspace the library keeps its state the pages do not say, and a kernel may
    // use the start of its workspace argument for its own data (two of the dev kit's matmul samples put
    // C there, and pass on the chip; public rnn kernels keep their gates there). So when the workspace
    // holds the whole system workspace and every AI core's chunk fits in it, the chunks are laid out
    // from its end (block 0 last); when they do not fit in it (mpnpu's chunks are larger than the
    // chip's state) but fit in the tensor, from the tensor's end; else from its start. The choice
    // depends on the launch alone, so the AI cores' chunks never overlap.
    const uint64_t per = kfc_block_bytes(nobj);
    const uint64_t blocks = uint64_t(std::max<int64_t>(c.launch.block_num, block + 1));  // AI cores
    const uint64_t total = blocks * per;
    uint64_t at = uint64_t(block) * per;
    const int32_t r = find_region(workspace);
    if (r >= 0) {
        const MpnpuRegion& reg = c.regions[size_t(r)];
        const uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(workspace));
        const uint64_t room = reg.addr + reg.size - a;  // bytes from the workspace to its tensor's end
        if (c.launch.sys_fallback != 0 && total > room) {
            // The kernel's workspace cannot hold the state (a CPU-debug test may give a few KiB, as the
            // vendor's CPU-debug library keeps its state elsewhere): the launch's own system workspace.
            uint8_t* chunk = reinterpret_cast<uint8_t*>(uintptr_t(c.launch.sys_fallback)) + uint64_t(block) * per;
            check_ws(chunk, per, site);
            return chunk;
        }
        if (room >= SYS_WORKSPACE_BYTES && total <= SYS_WORKSPACE_BYTES)
            at = SYS_WORKSPACE_BYTES - uint64_t(block + 1) * per;
        else if (c.launch.sys_workspace_bytes == 0 && room >= SYS_WORKSPACE_BYTES && total <= room)
            // (a launch that reserves a system workspace ahead of the kernel's part lays them from the
            // start, as before: past 16 MiB they then reach into the kernel's part; check_ws bounds
            // them by the tensor only)
            at = (room - total) / 512 * 512 + (blocks - 1 - uint64_t(block)) * per;  // (block 0 last)
    }
    uint8_t* chunk = workspace + at;
    check_ws(chunk, per, site);
    return chunk;
}

inline bool is_mix_launch() {
    int kt = core().launch.kernel_type;
    return kt == MPNPU_KT_MIX_AIC_1_1 || kt == MPNPU_KT_MIX_AIC_1_2;
}

// REGIST_MATMUL_OBJ: true on a cube core that has served its vector cores (the kernel returns).
template <class... Args>
inline bool regist(const Site& site, AscendC::TPipe* pipe, uint8_t* workspace, bool cube_only, Args&&... args) {
    (void)pipe;
    at(site);
    RegCtx ctx;
    ctx.site = site;
    (reg_arg(ctx, std::forward<Args>(args)), ...);
    if (ctx.n == 0) api_error(site, "REGIST_MATMUL_OBJ: no Matmul object given");
    for (int i = 0; i < ctx.n; ++i) ctx.objs[i]->mpnpu_register(uint32_t(i), ctx.tilings[i], site);
    bool clients = false;
    for (int i = 0; i < ctx.n; ++i) clients = clients || ctx.objs[i]->mpnpu_is_client_capable();
    if (!clients || !is_mix_launch() || cube_only) return false;  // the calling core computes itself
    uint8_t* chunk = chunk_of(workspace, ctx.n, site);
    if (is_aiv()) {
        Client& c = client();
        c = Client{};
        c.chunk = chunk;
        c.sub = int(core().launch.subblock_idx);
        c.site = site;
        core().before_user_sync = &before_kernel_sync;
        for (int i = 0; i < ctx.n; ++i) ctx.objs[i]->mpnpu_client_registered();
        return false;
    }
    serve(ctx, chunk, site);
    for (int i = 0; i < ctx.n; ++i) ctx.objs[i]->mpnpu_served();
    return true;
}

}  // namespace mm
}  // namespace mpnpu

#endif  // MPNPU_CUBE_MATMUL_KFC_H
