// mpnpu's runtime inside a kernel library: the core this process is, memcheck, trace records,
// sites, faults and the callbacks to the core process. Every API header builds on this one.
//
//   kernel code ──► API call (DataCopy, Add, SetFlag, SyncAll ...) with its call Site
//                     ├─ memcheck: the bytes it touches lie inside their GM tensor / local buffer
//                     ├─ trace:    an MpnpuEvent when the launch is traced
//                     └─ effect:   done here (copies, compute, intra-core flags), or through the
//                                  core process (SyncAll, cross-core flags, holds: MpnpuCoreCalls)
//
// One core per process: the state below is a process-wide singleton, set up by mpnpu_run() for
// every launch (mpnpu/native/bridge.h). Nothing here is shared between processes except GM itself.
#ifndef MPNPU_RT_H
#define MPNPU_RT_H

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <string>
#include <memory>
#include <unordered_map>
#include <vector>

#include "../device_model.h"
#include "abi.h"
#include "pipes.h"

namespace mpnpu {

// -- call sites ------------------------------------------------------------------------------------

// Where an API call was made: captured at the kernel's call site by a defaulted argument
// (``Site site = Site::here()``), so reports name the kernel's own file, line and function.
struct Site {
    const char* file;
    int line;
    const char* func;
    static constexpr Site here(const char* f = __builtin_FILE(), int l = __builtin_LINE(),
                               const char* fn = __builtin_FUNCTION()) {
        return Site{f, l, fn};
    }
};

// The trailing parameter every kernel-facing API function takes.
#define MPNPU_SITE ::mpnpu::Site site = ::mpnpu::Site::here()

// Pipe numbers: the order of the kernel API's pipe_t.
enum PipeNo : uint8_t { P_S = 0, P_V = 1, P_M = 2, P_MTE1 = 3, P_MTE2 = 4, P_MTE3 = 5, P_ALL = 6, P_FIX = 7 };
inline const char* pipe_name(int p) {
    static const char* names[] = {"PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_ALL",
                                  "PIPE_FIX"};
    return p >= 0 && p < 8 ? names[p] : "PIPE_?";
}

inline const char* mem_name(int m) {
    static const char* names[] = {"UB", "L1", "L0A", "L0B", "L0C", "BT", "FB", "SPR"};
    return m >= 0 && m < MPNPU_MEM_COUNT ? names[m] : "GM";
}

// -- faults ------------------------------------------------------------------------------------------

// Thrown by the API to stop the kernel; mpnpu_run catches it and the core process raises it as a
// Python error naming the core and the kernel line.
struct Fault : std::exception {
    MpnpuFault info;
    const char* what() const noexcept override { return info.message; }
};

// The core process raised inside a callback (e.g. a SyncAll that timed out): unwind the kernel.
struct CoreCallError : std::exception {
    const char* what() const noexcept override { return "the core process raised"; }
};

int32_t site_id(const Site& s);

[[noreturn]] inline void vfault(int kind, const Site& where, const char* fmt, va_list ap) {
    Fault f;
    std::memset(&f.info, 0, sizeof f.info);
    f.info.kind = kind;
    f.info.site = site_id(where);
    f.info.region = -1;
    f.info.mem = -1;
    std::vsnprintf(f.info.message, sizeof f.info.message, fmt, ap);
    throw f;
}

// A misuse of the kernel API (what would hang or corrupt the device): one line, at the kernel's line.
[[noreturn]] __attribute__((format(printf, 2, 3))) inline void api_error(const Site& where, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfault(MPNPU_FAULT_API, where, fmt, ap);
}

// A call or form of the API that mpnpu does not implement (docs/ascendc.md lists what is).
[[noreturn]] __attribute__((format(printf, 2, 3))) inline void unsupported(const Site& where, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfault(MPNPU_FAULT_UNSUPPORTED, where, fmt, ap);
}

// -- the core --------------------------------------------------------------------------------------

struct SiteInfo {
    Site site;
    std::string name;  // "dir/file:line", as sync points and reports name it
    bool dropped = false;
    bool hold = false;
};

// A launch's trace records: fixed-size chunks kept from launch to launch, so that a traced batch
// (about the same records every launch) allocates and page-faults only in its first launch. A record
// stays where it is for the whole launch: a queued copy fills in its times after later records.
class EventLog {
  public:
    static constexpr size_t CHUNK = 4096;  // records per chunk (256 KiB)
    MpnpuEvent& push() {
        size_t chunk = size_ / CHUNK;
        if (chunk == chunks_.size()) chunks_.emplace_back(new MpnpuEvent[CHUNK]);
        return chunks_[chunk][size_++ % CHUNK];
    }
    void clear() {
        size_ = 0;
        // (a launch of millions of records keeps no more than 64 chunks past its end)
        if (chunks_.size() > 64) chunks_.resize(64);
    }
    size_t size() const { return size_; }
    MpnpuEvent& at(size_t i) { return chunks_[i / CHUNK][i % CHUNK]; }
    const MpnpuEvent& at(size_t i) const { return chunks_[i / CHUNK][i % CHUNK]; }
    // Drop the records from ``n`` on (n <= size()).
    void truncate(size_t n) { size_ = n; }
    // The records in one array: the first chunk itself when they fit in it, else copied into ``flat``.
    const MpnpuEvent* data(std::vector<MpnpuEvent>& flat) const {
        if (size_ == 0) return nullptr;
        if (size_ <= CHUNK) return chunks_[0].get();
        flat.resize(size_);
        for (size_t done = 0, i = 0; done < size_; done += CHUNK, ++i)
            std::memcpy(flat.data() + done, chunks_[i].get(), std::min(CHUNK, size_ - done) * sizeof(MpnpuEvent));
        return flat.data();
    }

  private:
    std::vector<std::unique_ptr<MpnpuEvent[]>> chunks_;
    size_t size_ = 0;
};

struct SiteKey {
    const char* file;
    int line;
    const char* func;
    bool operator==(const SiteKey& o) const { return file == o.file && line == o.line && func == o.func; }
};
struct SiteKeyHash {
    size_t operator()(const SiteKey& k) const {
        return std::hash<const void*>()(k.file) ^ (std::hash<int>()(k.line) * 31u) ^ std::hash<const void*>()(k.func);
    }
};

// (UB_BYTES, L1_BYTES, L0A/B/C_BYTES, BT_BYTES, FB_BYTES: the chip's figures, ../device_model.h)
// the special registers traced as memory (MPNPU_MEM_SPR): [0, 8) the accumulator (GetAccVal), [8, 16)
// the last MrgSort's four per-queue counts (GetMrgSortResult)
constexpr size_t SPR_BYTES = 16;
constexpr uint64_t SPR_MRGSORT = 8;
constexpr uint32_t BLOCK_BYTES = 32;  // a data block: the unit of copies and vector strides
// ``bytes`` rounded up to whole data blocks (what a buffer of that length takes).
constexpr uint64_t block_round_up(uint64_t bytes) { return (bytes + BLOCK_BYTES - 1) / BLOCK_BYTES * BLOCK_BYTES; }

// Vector-unit state that one instruction leaves for later ones to use, per core: the vector mask
// (SetVectorMask / the level-0 calls' own masks; in counter mode mask[0] is an element count), the
// 128-bit compare mask (Compare into the register, SetCmpMask) and the int32->half dequant scale.
struct VectorRegs {
    uint64_t mask[2] = {~0ull, ~0ull};  // [low 64 lanes, high 64 lanes]: all lanes on
    bool counter = false;               // SetMaskCount / SetMaskNorm
    uint64_t cmp[2] = {0, 0};
    uint16_t deq_scale = 0x3C00;  // half 1.0
    uint64_t acc = 0;             // the last ReduceSum's result (GetAccVal), its bits in the low bytes
    uint16_t mrg[4] = {0, 0, 0, 0};  // records the last MrgSort took from each queue (GetMrgSortResult)
    bool mrg_suspend = false;        // whether that MrgSort had ifExhaustedSuspension set
};

struct CoreState {
    MpnpuLaunch launch{};
    bool in_launch = false;
    bool tracing = false;
    bool memcheck = true;
    bool holding = false;
    const MpnpuCoreCalls* core_calls = nullptr;
    std::vector<MpnpuRegion> regions;  // sorted by address
    // the kernel's arguments as the launch passed them (GM tensors: their address in this
    // process); the same list on every core, so "argument i + offset" names one GM byte everywhere
    std::vector<uint64_t> args;
    // called at the start of the kernel's own blocking cross-core syncs (SyncAll,
    // CrossCoreWaitFlag) when a library needs to act first (the matmul client: mpnpu/cube/matmul_kfc.h)
    // (``holds``: the sync blocks this core until others act; DataSyncBarrier, which only orders
    // this core's own accesses, calls it with false)
    void (*before_user_sync)(const Site&, bool holds) = nullptr;
    // called when such a sync has returned (SYNC_RETURNED: before it is recorded; SYNC_RECORDED:
    // after) and when a launch ends (LAUNCH_ENDED: never throws): the matmul client's stand-in stops
    // and what it did enters the trace (mpnpu/sync.h, after_blocking_sync)
    void (*after_user_sync)(int32_t phase) = nullptr;
    std::vector<std::string> dropped;  // sync point names the launch skips
    // >0 while a high-level API issues its own syncs (LibrarySyncs, mpnpu/sync.h): those are recorded
    // with MPNPU_SYNC_BY_LIBRARY and never dropped, for they are no sync point the kernel wrote
    int library_syncs = 0;
    // the system workspace SetSysWorkspace (or GetUserWorkspace) gave in this launch; null at its start
    uint8_t* sys_workspace = nullptr;
    // syncs the launch inserts at function boundaries (a library built with MPNPU_STAGE_HOOKS), and
    // the address the library is loaded at (MpnpuInsert::fn_offset is relative to it)
    std::vector<MpnpuInsert> inserts;
    uintptr_t lib_base = 0;
    std::string hold_site;
    // The sites named so far, kept from launch to launch: a batch names each site once, not once per
    // launch, and a site's id is the same in every launch of the library in this process (the core
    // process keeps their names by id). A launch with other dropped syncs or another hold site marks
    // them again (mark_site).
    std::unordered_map<SiteKey, int32_t, SiteKeyHash> site_ids;
    std::vector<SiteInfo> sites;
    // a direct-mapped cache in front of site_ids: a record's site costs a compare, not a hash lookup
    struct SiteSlot {
        const char* file;
        const char* func;
        int line;
        int32_t id;
    };
    static constexpr size_t SITE_SLOTS = 1024;
    SiteSlot site_cache[SITE_SLOTS] = {};
    EventLog events;
    // Where the newest three GM records of this launch are in ``events`` (newest first; NO_RECORD: none):
    // what fold_poll() needs to find a polling loop's identical iterations.
    static constexpr size_t NO_RECORD = ~size_t(0);
    size_t gm_recs[3] = {NO_RECORD, NO_RECORD, NO_RECORD};
    std::vector<MpnpuEvent> events_flat;  // the records in one array when they span several chunks
    PipeEngine pipes;
    MpnpuFault fault{};
    Site last{nullptr, 0, nullptr};  // the last API call's site (named if the kernel then crashes)
    // The API calls made in this launch, stored on every call into this core's ST_CALLS cell of the
    // status board (``calls_cell``; a cell of its own outside a launch): the progress the watchdog
    // tells a busy core from a spinning one by (docs/device-model.md, "Watchdog").
    int64_t calls = 0;
    int64_t calls_sink = 0;
    int64_t* calls_cell = &calls_sink;
    // This launch's last SyncAll and last use of a flag id SyncAll is built on (11-14): the two in
    // one launch are a collision on the chip (sync.h says so at the second)
    Site sync_all_at{nullptr, 0, nullptr};
    Site sync_ids_at{nullptr, 0, nullptr};
    // This launch's WaitPreTaskEnd and SetNextTaskStart (each may be called once per core)
    Site task_wait_at{nullptr, 0, nullptr};
    Site task_set_at{nullptr, 0, nullptr};
    // local memory: one arena per memory, living as long as the process (a buffer starts with
    // whatever the last launch left, as on the device)
    // (never touched on a core type that has no such memory, so they cost no resident pages)
    alignas(64) static inline uint8_t ub[UB_BYTES];
    alignas(64) static inline uint8_t l1[L1_BYTES];
    alignas(64) static inline uint8_t l0a[L0A_BYTES];
    alignas(64) static inline uint8_t l0b[L0B_BYTES];
    alignas(64) static inline uint8_t l0c[L0C_BYTES];
    alignas(64) static inline uint8_t bt[BT_BYTES];
    alignas(64) static inline uint8_t fb[FB_BYTES];
    // atomic mode set by SetAtomicAdd/Max/Min (0: none, 1: add, 2: max, 3: min) and its type
    int atomic_op = 0;
    // the padding register SetPadValue sets (its value's bytes), used by DataCopyPad with isPad false
    uint64_t pad_value = 0;
    bool pad_value_set = false;
    // the vector unit's registers (mask, compare mask, dequant scale): mpnpu/vector/mask.h
    VectorRegs vec{};
};

inline CoreState& core() {
    static CoreState state;
    return state;
}

inline uint8_t* memory_base(int mem) {
    switch (mem) {
        case MPNPU_MEM_UB: return CoreState::ub;
        case MPNPU_MEM_L1: return CoreState::l1;
        case MPNPU_MEM_L0A: return CoreState::l0a;
        case MPNPU_MEM_L0B: return CoreState::l0b;
        case MPNPU_MEM_L0C: return CoreState::l0c;
        case MPNPU_MEM_BT: return CoreState::bt;
        case MPNPU_MEM_FB: return CoreState::fb;
        default: return nullptr;
    }
}

inline size_t memory_size(int mem) {
    static const size_t sizes[] = {UB_BYTES, L1_BYTES, L0A_BYTES, L0B_BYTES, L0C_BYTES, BT_BYTES, FB_BYTES, SPR_BYTES};
    return mem >= 0 && mem < MPNPU_MEM_COUNT ? sizes[mem] : 0;
}

// The byte offset in local memory ``mem`` of an address in this process (what GetPhyAddr gives, or a
// __ubuf__ / __cbuf__ pointer), or -1 when the address is not in that memory.
inline int64_t offset_in(int mem, uint64_t addr) {
    const uint64_t base = uint64_t(reinterpret_cast<uintptr_t>(memory_base(mem)));
    return base && addr >= base && addr - base < memory_size(mem) ? int64_t(addr - base) : -1;
}
inline int64_t offset_in(int mem, const void* p) { return offset_in(mem, uint64_t(reinterpret_cast<uintptr_t>(p))); }

inline void put(char*& out, char* end, const char* s) {
    while (s && *s && out < end) *out++ = *s++;
}

inline void put_int(char*& out, char* end, long v) {
    char digits[24];
    int n = 0;
    if (v < 0) {
        put(out, end, "-");
        v = -v;
    }
    do {
        digits[n++] = char('0' + v % 10);
        v /= 10;
    } while (v && n < 24);
    while (n && out < end) *out++ = digits[--n];
}

// "dir/file:line" of a site: the file's last two path components, as reports name kernel lines.
inline void put_site(char*& out, char* end, const Site& s) {
    const char* f = s.file;
    const char* slash = nullptr;
    const char* prev = nullptr;
    for (const char* p = f; *p; ++p)
        if (*p == '/') {
            prev = slash;
            slash = p;
        }
    put(out, end, prev ? prev + 1 : (slash ? slash + 1 : f));
    put(out, end, ":");
    put_int(out, end, s.line);
}

// This core blocks in a cross-core wait made at ``where``: its "where" line names it for the
// watchdog (only on the blocking path).
inline void write_where(const Site& where) {
    const MpnpuLaunch& l = core().launch;
    if (!l.where || l.where_size < 2 || !where.file) return;
    char* out = l.where;
    put_site(out, l.where + l.where_size - 1, where);
    *out = 0;
}

// An API call at ``where``: remembered (a crash, or a spin, is named by the last one) and counted on
// the status board (one store into shared memory).
inline void note(CoreState& c, const Site& where) {
    c.last = where;
    __atomic_store_n(c.calls_cell, ++c.calls, __ATOMIC_RELAXED);
}

// Remember the kernel line of an API call that touches no memory.
inline void at(const Site& where) { note(core(), where); }

inline bool is_aic() { return core().launch.core_type == 1; }
inline bool is_aiv() { return core().launch.core_type == 0; }

inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The start and the end of a GM access's span. Racecheck's rule of polled GM compares one core's
// spans with another's, so a span must hold the moment its bytes met the other cores: the clock is
// read before the access's first load can run (an x86 core may start a later load before an earlier
// clock read completes) and after its stores are visible to the other cores (a store can wait in
// the core's store buffer while the clock is read: measured, a read that began 10 ns after a write's
// span ended still saw the old value).
inline uint64_t span_start() {
    const uint64_t t = now_ns();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_lfence();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
    return t;
}
inline uint64_t span_end() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return now_ns();
}

// The path with "." and ".." resolved lexically ("a/b/../c.h" -> "a/c.h"), as the compiler may name
// an included file relative to its includer.
inline std::string normal_path(const char* path) {
    std::vector<std::string> parts;
    std::string cur;
    bool absolute = path[0] == '/';
    for (const char* p = path;; ++p) {
        if (*p == '/' || *p == 0) {
            if (cur == "..") {
                if (!parts.empty() && parts.back() != "..") parts.pop_back();
                else if (!absolute) parts.push_back(cur);
            } else if (!cur.empty() && cur != ".") {
                parts.push_back(cur);
            }
            cur.clear();
            if (*p == 0) break;
        } else {
            cur += *p;
        }
    }
    std::string out = absolute ? "/" : "";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
    return out;
}

// "op_kernel/add.cpp:45": the parent folder and the file name, as Python kernels' sites are named
// (mpnpu/ascendc/native/bridge.py site_name names them the same way).
inline std::string site_name(const Site& s) {
    if (s.file && s.file[0] == '+' && s.line == 0) return s.file;  // an inserted sync: "+after:CopyOut"
    std::string path = normal_path(s.file ? s.file : "?");
    size_t last = path.rfind('/');
    std::string out;
    if (last != std::string::npos) {
        size_t prev = last == 0 ? std::string::npos : path.rfind('/', last - 1);
        out = path.substr(prev == std::string::npos ? 0 : prev + 1);
    } else {
        out = path;
    }
    out += ':';
    out += std::to_string(s.line);
    return out;
}

// Whether "op_kernel/add.cpp:45" is named by a dropped entry: the whole name, or a suffix of it
// that starts at a path component ("add.cpp:45").
inline bool names_site(const std::string& entry, const std::string& name) {
    if (entry.size() > name.size()) return false;
    if (name.compare(name.size() - entry.size(), entry.size(), entry) != 0) return false;
    return entry.size() == name.size() || name[name.size() - entry.size() - 1] == '/';
}

// Decide a site's dropped and hold marks from the launch's dropped syncs and hold site.
inline void mark_site(const CoreState& c, SiteInfo& info) {
    info.dropped = false;
    for (const std::string& d : c.dropped)
        if (names_site(d, info.name)) info.dropped = true;
    info.hold = c.holding && names_site(c.hold_site, info.name);
}

inline int32_t site_id(const Site& s) {
    CoreState& c = core();
    size_t slot = ((uintptr_t(s.file) >> 3) ^ (size_t(s.line) * 0x9E3779B1u)) & (CoreState::SITE_SLOTS - 1);
    CoreState::SiteSlot& hit = c.site_cache[slot];
    if (hit.file == s.file && hit.line == s.line && hit.func == s.func && s.file) return hit.id;
    SiteKey key{s.file, s.line, s.func};
    auto it = c.site_ids.find(key);
    if (it != c.site_ids.end()) {
        hit = CoreState::SiteSlot{s.file, s.func, s.line, it->second};
        return it->second;
    }
    SiteInfo info;
    info.site = s;
    info.name = site_name(s);
    mark_site(c, info);
    int32_t id = int32_t(c.sites.size());
    c.sites.push_back(std::move(info));
    c.site_ids.emplace(key, id);
    hit = CoreState::SiteSlot{s.file, s.func, s.line, id};
    return id;
}

// -- trace records ---------------------------------------------------------------------------------

inline MpnpuEvent& record(uint8_t type, uint8_t kind, uint8_t pipe, const Site& where) {
    CoreState& c = core();
    MpnpuEvent& e = c.events.push();
    std::memset(&e, 0, sizeof e);
    e.type = type;
    e.kind = kind;
    e.pipe = pipe;
    e.site = site_id(where);
    e.index = -1;
    return e;
}

// -- GM: regions and access checks -------------------------------------------------------------------

// The region (launch argument allocation) holding ``addr``, or -1.
inline int32_t find_region(const void* addr) {
    const CoreState& c = core();
    uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(addr));
    size_t lo = 0, hi = c.regions.size();
    while (lo < hi) {  // the last region starting at or before addr
        size_t mid = (lo + hi) / 2;
        if (c.regions[mid].addr <= a) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return -1;
    const MpnpuRegion& r = c.regions[lo - 1];
    return a < r.addr + r.size ? int32_t(lo - 1) : -1;
}

[[noreturn]] inline void illegal_gm(bool write, const Site& where, const void* base, uint64_t start, uint64_t stop,
                                    int32_t region, const char* what) {
    Fault f;
    std::memset(&f.info, 0, sizeof f.info);
    f.info.kind = write ? MPNPU_FAULT_ILLEGAL_WRITE : MPNPU_FAULT_ILLEGAL_READ;
    f.info.site = site_id(where);
    f.info.region = region;
    f.info.mem = -1;
    const CoreState& c = core();
    if (region >= 0) {
        const MpnpuRegion& r = c.regions[size_t(region)];
        f.info.start = start - r.addr;
        f.info.stop = stop - r.addr;
        f.info.limit_lo = 0;
        f.info.limit_hi = r.size;
    } else {
        f.info.start = start;
        f.info.stop = stop;
    }
    (void)base;
    // The message is the call's name: the core process words the report (it knows the tensors).
    std::snprintf(f.info.message, sizeof f.info.message, "%s", what);
    throw f;
}

// -- polling loops: identical iterations kept once -------------------------------------------------
//
// A core that waits for another by re-reading a GM range until it changes (a flag word polled with
// DataCopy, a scalar check, and again) can go round millions of times, and traced, each round would
// cost its records again: the same read, the same local accesses, the same pipe syncs. The race
// detector learns nothing from the middle rounds that the first and the last two do not show (the
// same instructions in the same order; mpnpu.racecheck.polls reads the poll from those), so the log
// keeps the first round, the newest complete one and the one under way: when a GM read is about to
// start a round whose two predecessors and the one before them are equal record for record (but for
// their times), the middle one is dropped and the newest moved into its place.
//
// A round qualifies only if it holds nothing but that one GM read (first), local accesses and pipe
// syncs (a cross-core sync, another GM access or a dropped sync ends the folding), and only once the
// core's asynchronous pipes are idle, so that no queued copy still holds a pointer to a record that
// moves (done()).

inline bool same_but_times(const MpnpuEvent& a, const MpnpuEvent& b) {
    return std::memcmp(&a, &b, offsetof(MpnpuEvent, t0)) == 0;
}

inline bool foldable_round(const EventLog& log, size_t from, size_t to) {
    for (size_t i = from + 1; i < to; ++i) {
        const uint8_t t = log.at(i).type;
        if (t != MPNPU_EV_LOCAL && t != MPNPU_EV_PIPE_SYNC) return false;
    }
    return true;
}

// Before a GM read of these fields is recorded: drop the middle of three identical rounds before it.
inline void fold_poll(CoreState& c, uint8_t pipe, int32_t site, int32_t region, uint64_t start, uint64_t run,
                      uint64_t stride, uint64_t count, uint32_t itemsize) {
    constexpr size_t NONE = CoreState::NO_RECORD;
    constexpr size_t MAX_ROUND = 4096;  // records per round (a longer loop body is simply kept)
    const size_t l = c.gm_recs[0], p = c.gm_recs[1], pp = c.gm_recs[2], s = c.events.size();
    if (l == NONE || p == NONE || pp == NONE) return;
    const size_t len = s - l;
    if (len > MAX_ROUND || l - p != len || p - pp != len) return;
    const MpnpuEvent& last = c.events.at(l);
    if (last.type != MPNPU_EV_GM || last.kind != 'R' || last.pipe != pipe || last.site != site ||
        last.index != region || uint32_t(last.aux) != itemsize || last.start != start || last.run != run ||
        last.stride != stride || last.count != count)
        return;
    for (size_t i = 0; i < len; ++i)
        if (!same_but_times(c.events.at(pp + i), c.events.at(p + i)) ||
            !same_but_times(c.events.at(p + i), c.events.at(l + i)))
            return;
    if (!foldable_round(c.events, l, s) || !c.pipes.idle()) return;
    for (size_t i = 0; i < len; ++i) c.events.at(p + i) = c.events.at(l + i);
    c.events.truncate(l);
    c.gm_recs[0] = p;
    c.gm_recs[1] = pp;
    c.gm_recs[2] = NONE;
}

// One GM access of ``count`` runs of ``run`` bytes, ``stride`` bytes apart, from ``first``: checked
// against the tensor that ``base`` (the GlobalTensor's buffer) lies in, and recorded when tracing.
// Returns the record (nullptr when not traced): call done() with it once the bytes have moved.
inline MpnpuEvent* gm_access(char kind, uint8_t pipe, const void* base, const void* first, uint64_t run,
                         uint64_t stride, uint64_t count, uint32_t itemsize, const Site& where,
                         const char* what) {
    CoreState& c = core();
    note(c, where);
    if (count == 0 || run == 0) return nullptr;
    uint64_t lo = uint64_t(reinterpret_cast<uintptr_t>(first));
    uint64_t hi = lo + (count - 1) * stride + run;
    int32_t region = -1;
    if (c.memcheck || c.tracing) {
        region = find_region(base);
        if (c.memcheck) {
            if (region < 0) illegal_gm(kind != 'R', where, base, lo, hi, region, what);
            const MpnpuRegion& r = c.regions[size_t(region)];
            if (lo < r.addr || hi > r.addr + r.size) illegal_gm(kind != 'R', where, base, lo, hi, region, what);
        }
    }
    if (c.tracing && region >= 0) {
        if (kind == 'R') fold_poll(c, pipe, site_id(where), region, lo - c.regions[size_t(region)].addr, run,
                                   count > 1 ? stride : 0, count, itemsize);
        const size_t at = c.events.size();
        MpnpuEvent& e = record(MPNPU_EV_GM, uint8_t(kind), pipe, where);
        c.gm_recs[2] = c.gm_recs[1];
        c.gm_recs[1] = c.gm_recs[0];
        c.gm_recs[0] = at;
        e.index = region;
        e.aux = int32_t(itemsize);
        e.start = lo - c.regions[size_t(region)].addr;
        e.run = run;
        e.stride = count > 1 ? stride : 0;
        e.count = count;
        e.t0 = e.t1 = span_start();
        return &e;
    }
    return nullptr;
}

// The access ``rec`` records has completed: its span ends now (and, when it ran on its pipe later
// than issued, starts at ``t0``).
inline void done(MpnpuEvent* rec, uint64_t t0 = 0) {
    if (!rec) return;
    if (t0) rec->t0 = t0;
    rec->t1 = span_end();
}

// Call around the copy itself when the launch holds: the plan's held core waits before its
// access, the partner says when it has made its own (mpnpu.runtime.hold).
inline bool is_hold_site(const Site& where) {
    CoreState& c = core();
    return c.holding && c.sites[size_t(site_id(where))].hold;
}

inline void hold_point(const Site& where, int after) {
    CoreState& c = core();
    if (!c.holding) return;
    int32_t id = site_id(where);
    if (!c.sites[size_t(id)].hold) return;
    if (!after) c.pipes.wake();  // the core's pipes work through their queues while it is held
    if (c.core_calls->hold(id, after) != 0) throw CoreCallError();
}

// -- local memory checks -------------------------------------------------------------------------------

[[noreturn]] inline void illegal_local(bool write, const Site& where, int mem, uint64_t start, uint64_t stop,
                                       uint64_t buf_lo, uint64_t buf_hi, const char* what) {
    Fault f;
    std::memset(&f.info, 0, sizeof f.info);
    f.info.kind = write ? MPNPU_FAULT_ILLEGAL_WRITE : MPNPU_FAULT_ILLEGAL_READ;
    f.info.site = site_id(where);
    f.info.region = -1;
    f.info.mem = mem;
    f.info.start = start;
    f.info.stop = stop;
    f.info.limit_lo = buf_lo;
    f.info.limit_hi = buf_hi;
    std::snprintf(f.info.message, sizeof f.info.message, "%s", what);
    throw f;
}

// One access by ``pipe`` to bytes [start, stop) of local memory ``mem`` (offsets from the memory's
// start), which must lie inside the buffer [buf_lo, buf_hi) the tensor was taken from.
inline void local_access(char kind, uint8_t pipe, int mem, uint64_t start, uint64_t stop, uint64_t buf_lo,
                         uint64_t buf_hi, const Site& where, const char* what) {
    CoreState& c = core();
    note(c, where);
    if (stop <= start) return;
    if (c.memcheck && (start < buf_lo || stop > buf_hi))
        illegal_local(kind != 'R', where, mem, start, stop, buf_lo, buf_hi, what);
    if (pipe == P_S)
        c.pipes.before_scalar(mem, start, stop, kind != 'R');
    else
        c.pipes.note_local(pipe, mem, start, stop, kind != 'R');  // (it keeps MTE2's and MTE3's only)
    if (c.tracing) {
        MpnpuEvent& e = record(MPNPU_EV_LOCAL, uint8_t(kind), pipe, where);
        e.mem = uint8_t(mem);
        e.start = start;
        e.run = stop - start;
        e.count = 1;
        // An instruction of a pipe that runs inline (vector, cube, scalar) happens now: its time lets a
        // timeline draw it (and a race inside the core). A copy's local side is timed by its GM record.
        if (pipe == P_V || pipe == P_M || pipe == P_S) e.t0 = e.t1 = now_ns();
    }
}

// -- callbacks ------------------------------------------------------------------------------------------

inline void core_call(int32_t rc) {
    if (rc != 0) throw CoreCallError();
}

}  // namespace mpnpu

#endif  // MPNPU_RT_H
