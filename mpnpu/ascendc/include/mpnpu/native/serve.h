// The core process's serving loop, in the library: read a launch command on the core's pipe, run
// the kernel, reply, and wait for the next, without the core process's Python in between.
//
// Why: between two launches of a batch, a core process's Python waits on its pipe, reads and
// unpickles the command, rebuilds its GM tensors, sets up the launch and posts its reply. For a
// small C++ kernel that costs more than the kernel itself, paid by every core of every launch while
// the interpreter's caches are cold from the other processes. This loop does the same steps on the
// same objects for the launches a batch repeats (mpnpu/ascendc/native/serve.py registers a kernel once the
// core process has run it; the parent sends such a launch as a native command frame, its pickled
// command as the frame's tail), and hands anything else back to the core process: another command,
// a kernel or a GM window it was not told of, a failure, a reply that needs Python.
//
//   loop:  (after a reply) look at the pipe again and again for up to spin_ns, yielding the CPU
//          wait up to 1 s for a frame                          -> MPNPU_SERVE_IDLE
//          read it                                             -> MPNPU_SERVE_CLOSED at EOF
//          not a native frame, an unknown kernel or window     -> MPNPU_SERVE_FRAME
//          slots and regions from the windows, plain settings, mpnpu_run
//          failed                                              -> MPNPU_SERVE_FAILED
//          status DONE; the reply on the board (the launch's last core: a done frame on the pipe)
//          a reply the row cannot hold, the lock timed out     -> MPNPU_SERVE_REPLY
//          this process's CPUs are not those spin_ns was for   -> MPNPU_SERVE_RESPIN
//
// The frames are mpnpu/runtime/protocol.py's layouts (a length prefix of mpnpu/runtime/wire.py, then
// the payload): a native command (head, one record per argument, then the pickled command) and a
// done reply (head, one record per flag). Their offsets and sizes are generated from those layouts
// into contract.h (MPNPU_NATIVE_CMD_*, MPNPU_NATIVE_ARG_*, MPNPU_DONE_*, MPNPU_DONE_FLAG_*), and so
// are the states and columns of the status board: nothing here restates a number Python defines.
// Fields in native byte order: both ends are processes of one device.
#ifndef MPNPU_SERVE_H
#define MPNPU_SERVE_H

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "abi.h"
#include "native_sync.h"

namespace mpnpu {
namespace serve {

constexpr int HEADER = MPNPU_FRAME_HEADER_BYTES;
constexpr int64_t NATIVE_HEAD = MPNPU_NATIVE_CMD_BYTES;
constexpr int64_t ARG_BYTES = MPNPU_NATIVE_ARG_BYTES;
constexpr int DONE_HEAD = MPNPU_DONE_BYTES;
constexpr int MAX_FLAGS = MPNPU_FLAG_MODES * MPNPU_FLAG_IDS;

// The C++ types the fields are read and written as have the layouts' sizes (a layout changed in
// Python to another size fails the build here rather than reading the wrong bytes).
static_assert(HEADER == 4 && MPNPU_FRAME_HEADER_BIG_ENDIAN == 1, "read_frame reads a 4-byte big-endian length");
static_assert(MPNPU_NATIVE_CMD_MAGIC_BYTES == 1 && MPNPU_DONE_MAGIC_BYTES == 1, "a frame's first byte says its kind");
static_assert(MPNPU_NATIVE_CMD_LAUNCH_ID_BYTES == sizeof(int64_t) && MPNPU_NATIVE_CMD_HANDLE_BYTES == sizeof(int64_t) &&
                  MPNPU_NATIVE_CMD_N_ARGS_BYTES == sizeof(int32_t) && MPNPU_NATIVE_CMD_TAIL_BYTES == sizeof(uint32_t),
              "the native command's head");
static_assert(MPNPU_NATIVE_ARG_SEGMENT_BYTES == sizeof(uint64_t) && MPNPU_NATIVE_ARG_OFFSET_BYTES == sizeof(uint64_t) &&
                  MPNPU_NATIVE_ARG_ROOT_OFFSET_BYTES == sizeof(uint64_t) &&
                  MPNPU_NATIVE_ARG_ROOT_NBYTES_BYTES == sizeof(uint64_t),
              "a native command's argument record");
static_assert(MPNPU_DONE_CORE_ID_BYTES == sizeof(int32_t) && MPNPU_DONE_LAUNCH_ID_BYTES == sizeof(int64_t) &&
                  MPNPU_DONE_ELAPSED_S_BYTES == sizeof(double) && MPNPU_DONE_N_FLAGS_BYTES == sizeof(int32_t),
              "the done reply's head");
static_assert(MPNPU_DONE_FLAG_MODE_BYTES == sizeof(int16_t) && MPNPU_DONE_FLAG_FLAG_ID_BYTES == sizeof(int16_t) &&
                  MPNPU_DONE_FLAG_BYTES == 2 * sizeof(int16_t) && MPNPU_DONE_FLAG_MODE_AT == 0 &&
                  MPNPU_DONE_FLAG_FLAG_ID_AT == sizeof(int16_t),
              "a done reply's flag record: (mode, id) pairs, packed");

inline bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    for (;;) {
        const int n = poll(&p, 1, timeout_ms);
        if (n >= 0) return n > 0;
        if (errno != EINTR) return true;  // (the read reports what is wrong)
    }
}

inline int64_t read_some(int fd, uint8_t* p, int64_t n) {
    for (;;) {
        const ssize_t got = read(fd, p, size_t(n));
        if (got >= 0 || errno != EINTR) return int64_t(got);
    }
}

inline bool write_all(int fd, const uint8_t* p, int64_t n) {
    while (n > 0) {
        const ssize_t put = write(fd, p, size_t(n));
        if (put < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += put;
        n -= put;
    }
    return true;
}

template <typename T>
inline T get(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Read one frame into s->buf: false at EOF or a read error. A frame longer than the buffer is
// left for the core process to read on (buf_len < frame_len).
inline bool read_frame(MpnpuServe* s) {
    s->buf_len = s->frame_len = 0;
    int64_t got = read_some(s->fd, s->buf, s->buf_cap);
    if (got <= 0) return false;
    while (got < HEADER) {
        const int64_t more = read_some(s->fd, s->buf + got, HEADER - got);
        if (more <= 0) return false;
        got += more;
    }
    const uint32_t size = uint32_t(s->buf[0]) << 24 | uint32_t(s->buf[1]) << 16 | uint32_t(s->buf[2]) << 8 |
                          uint32_t(s->buf[3]);
    s->frame_len = HEADER + int64_t(size);
    while (got < s->frame_len && got < s->buf_cap) {
        const int64_t more = read_some(s->fd, s->buf + got, (s->frame_len < s->buf_cap ? s->frame_len : s->buf_cap) - got);
        if (more <= 0) return false;
        got += more;
    }
    s->buf_len = got;
    return true;
}

// The window table's hash: only here (the core process inserts through mpnpu_serve_window, below).
inline uint64_t window_hash(uint64_t segment, uint64_t offset, uint64_t nbytes) {
    uint64_t h = segment ^ (offset * 0x9E3779B97F4A7C15ull) ^ (nbytes * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

// The window of allocation (segment, root offset, bytes) in this process; 0 if the table lacks it.
inline uint64_t window(const MpnpuServe* s, uint64_t segment, uint64_t offset, uint64_t nbytes) {
    if (!s->windows) return 0;
    for (uint64_t i = window_hash(segment, offset, nbytes) & s->window_mask;; i = (i + 1) & s->window_mask) {
        const MpnpuServeWindow& w = s->windows[i];
        if (w.addr == 0) return 0;
        if (w.segment == segment && w.root_offset == offset && w.nbytes == nbytes) return w.addr;
    }
}

// Put allocation (segment, root offset, bytes) at addr into the table (the core process calls it for
// each window it maps: mpnpu/ascendc/native/serve.py): false if the table is full.
inline bool window_insert(MpnpuServe* s, uint64_t segment, uint64_t offset, uint64_t nbytes, uint64_t addr) {
    if (!s || !s->windows || addr == 0) return false;
    uint64_t i = window_hash(segment, offset, nbytes) & s->window_mask;
    for (uint64_t probed = 0; probed <= s->window_mask; ++probed, i = (i + 1) & s->window_mask) {
        MpnpuServeWindow& w = s->windows[i];
        if (w.addr == 0 || (w.segment == segment && w.root_offset == offset && w.nbytes == nbytes)) {
            w.segment = segment;
            w.root_offset = offset;
            w.nbytes = nbytes;
            w.addr = addr;
            return true;
        }
    }
    return false;
}

inline int find_entry(const MpnpuServe* s, int64_t handle) {
    for (int i = 0; i < s->n_entries; ++i)
        if (s->entries[i].handle == handle) return i;
    return -1;
}

// Fill entry e's slots and regions from a native command's arguments: false, with nothing
// written, if one is in no window the table holds (the core process maps it; the arrays still hold
// what its own path last wrote, which it may reuse).
inline bool marshal(const MpnpuServe* s, const MpnpuServeEntry& e, const uint8_t* args, int32_t n) {
    uint64_t windows[MPNPU_SERVE_MAX_ARGS];
    if (n > MPNPU_SERVE_MAX_ARGS) return false;
    for (int32_t i = 0; i < n; ++i) {
        const uint8_t* a = args + int64_t(i) * ARG_BYTES;
        const uint64_t segment = get<uint64_t>(a + MPNPU_NATIVE_ARG_SEGMENT_AT);
        windows[i] = segment ? window(s, segment, get<uint64_t>(a + MPNPU_NATIVE_ARG_ROOT_OFFSET_AT),
                                      get<uint64_t>(a + MPNPU_NATIVE_ARG_ROOT_NBYTES_AT))
                             : 0;
        if (segment && windows[i] == 0) return false;
    }
    int32_t regions = 0;
    for (int32_t i = 0; i < n; ++i) {
        const uint8_t* a = args + int64_t(i) * ARG_BYTES;
        const uint64_t offset = get<uint64_t>(a + MPNPU_NATIVE_ARG_OFFSET_AT),
                       root = get<uint64_t>(a + MPNPU_NATIVE_ARG_ROOT_OFFSET_AT),
                       nbytes = get<uint64_t>(a + MPNPU_NATIVE_ARG_ROOT_NBYTES_AT);
        const uint64_t addr = windows[i];
        if (addr == 0) {  // a scalar's slot, or a null pointer's 0
            e.slots[i] = offset;
            continue;
        }
        e.slots[i] = addr + (offset - root);
        bool seen = false;  // (one region per allocation, however many arguments point into it)
        for (int32_t r = 0; r < regions && !seen; ++r) seen = e.regions[r].addr == addr;
        if (!seen) {
            e.regions[regions].addr = addr;
            e.regions[regions].size = nbytes;
            ++regions;
        }
    }
    // Sorted by address, as the core process sorts them (fault and trace records index them so).
    for (int32_t i = 1; i < regions; ++i)
        for (int32_t j = i; j > 0 && e.regions[j - 1].addr > e.regions[j].addr; --j) {
            const MpnpuRegion t = e.regions[j];
            e.regions[j] = e.regions[j - 1];
            e.regions[j - 1] = t;
        }
    MpnpuLaunch& l = *e.launch;
    l.n_regions = regions;
    // What the core process's short path writes for a plain launch (mpnpu/ascendc/native/bridge.py):
    // no trace, no dropped sync, no hold, no inserted sync.
    l.trace = 0;
    l.memcheck = e.memcheck;
    l.tiling_key = e.tiling_key;
    l.sys_workspace_bytes = e.sys_workspace_bytes;
    l.n_dropped = 0;
    l.dropped = nullptr;
    l.hold_site = nullptr;
    l.n_inserts = 0;
    l.inserts = nullptr;
    l.host_mode = 0;
    l.sys_fallback = 0;
    return true;
}

// Whether the wait budget must be worked out again: this process may now run on another number of
// CPUs than spin_ns was worked out for (the stress sweep re-pins core processes between launches).
// The rule that turns CPUs into a budget is the core process's (mpnpu/runtime/spin.py): the loop
// only notices, at one system call per launch, and hands back (MPNPU_SERVE_RESPIN).
inline bool cpus_changed(const MpnpuServe* s) {
    if (s->spin_cpus < 0) return false;  // (a budget the options fix)
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return cpus != s->spin_cpus;
}

// Status DONE, then the reply on the board: true if the board (or, for the launch's last core, the
// done frame on the pipe) has it; false: the core process must reply (*closed: the pipe is gone).
inline bool reply(MpnpuServe* s, bool* closed) {
    int64_t* st = s->status + int64_t(s->core_id) * s->st_columns;
    native::store(st + native::ST_STATE, MPNPU_STATE_DONE);
    native::bump(st + native::ST_PROGRESS);
    const int n_flags = __builtin_popcountll(s->flags_mask);
    if (n_flags > s->row_flags) return false;
    int16_t pairs[2 * MAX_FLAGS];
    int k = 0;
    for (uint64_t m = s->flags_mask; m; m &= m - 1) {
        const int bit = __builtin_ctzll(m);
        pairs[k++] = int16_t(bit / MPNPU_FLAG_IDS);
        pairs[k++] = int16_t(bit % MPNPU_FLAG_IDS);
    }
    uint8_t* row = s->rows + int64_t(s->core_id) * s->row_size;
    std::memcpy(row + s->off_elapsed, &s->elapsed_s, sizeof(double));
    const int32_t n32 = n_flags;
    std::memcpy(row + s->off_n_flags, &n32, sizeof n32);
    if (k) std::memcpy(row + s->off_flags, pairs, sizeof(int16_t) * size_t(k));
    if (!native::take(s->board_lock, native::Deadline(s->timeout_ns, 0))) return false;
    const int64_t done = ++*s->done;
    const bool last = done >= s->n_cores;
    if (!last) std::memcpy(row + s->off_launch_id, &s->launch_id, sizeof(int64_t));
    native::give(s->board_lock);
    if (!last) return true;
    // The launch's last core wakes the parent with its reply (mpnpu/runtime/replies.py).
    uint8_t frame[HEADER + DONE_HEAD + sizeof pairs] = {};
    const uint32_t size = uint32_t(DONE_HEAD + 2 * int(sizeof(int16_t)) * n_flags);
    frame[0] = uint8_t(size >> 24);
    frame[1] = uint8_t(size >> 16);
    frame[2] = uint8_t(size >> 8);
    frame[3] = uint8_t(size);
    uint8_t* p = frame + HEADER;
    p[MPNPU_DONE_MAGIC_AT] = MPNPU_DONE_MAGIC;
    const int32_t core = s->core_id;
    std::memcpy(p + MPNPU_DONE_CORE_ID_AT, &core, sizeof core);
    std::memcpy(p + MPNPU_DONE_LAUNCH_ID_AT, &s->launch_id, sizeof s->launch_id);
    std::memcpy(p + MPNPU_DONE_ELAPSED_S_AT, &s->elapsed_s, sizeof s->elapsed_s);
    std::memcpy(p + MPNPU_DONE_N_FLAGS_AT, &n32, sizeof n32);
    if (k) std::memcpy(p + DONE_HEAD, pairs, sizeof(int16_t) * size_t(k));
    if (!write_all(s->fd, frame, HEADER + int64_t(size))) *closed = true;
    return true;
}

inline int32_t loop(MpnpuServe* s) {
    if (!s) return MPNPU_SERVE_FRAME;
    s->buf_len = s->frame_len = 0;  // (FRAME with nothing read: the core process reads the pipe itself)
    if (s->abi != MPNPU_ABI_VERSION || !s->buf || s->buf_cap < HEADER) return MPNPU_SERVE_FRAME;
    bool replied = s->replied != 0;
    for (;;) {
        if (replied && s->spin_ns) {  // (launches of a batch come back to back)
            const uint64_t until = native::monotonic_ns() + s->spin_ns;
            do {
                sched_yield();
            } while (!readable(s->fd, 0) && native::monotonic_ns() < until);
        }
        replied = false;
        if (!readable(s->fd, 1000)) return MPNPU_SERVE_IDLE;
        if (!read_frame(s)) return MPNPU_SERVE_CLOSED;
        // (more than one frame read, a frame longer than the buffer, a short one: the core process's
        // own reading says what it is, a protocol error included)
        if (s->buf_len != s->frame_len || s->frame_len < HEADER + NATIVE_HEAD) return MPNPU_SERVE_FRAME;
        const uint8_t* cmd = s->buf + HEADER;
        const int64_t payload = s->frame_len - HEADER;
        if (cmd[MPNPU_NATIVE_CMD_MAGIC_AT] != MPNPU_NATIVE_CMD_MAGIC) return MPNPU_SERVE_FRAME;
        const int64_t launch_id = get<int64_t>(cmd + MPNPU_NATIVE_CMD_LAUNCH_ID_AT),
                      handle = get<int64_t>(cmd + MPNPU_NATIVE_CMD_HANDLE_AT);
        const int32_t n_args = get<int32_t>(cmd + MPNPU_NATIVE_CMD_N_ARGS_AT);
        const uint32_t tail = get<uint32_t>(cmd + MPNPU_NATIVE_CMD_TAIL_AT);
        if (n_args < 0 || NATIVE_HEAD + int64_t(n_args) * ARG_BYTES > int64_t(tail) || int64_t(tail) > payload)
            return MPNPU_SERVE_FRAME;
        const int e = find_entry(s, handle);
        if (e < 0 || s->entries[e].n_params != n_args) return MPNPU_SERVE_FRAME;
        MpnpuServeEntry& entry = s->entries[e];
        if (!marshal(s, entry, cmd + NATIVE_HEAD, n_args)) return MPNPU_SERVE_FRAME;
        s->launch_id = launch_id;
        s->entry = e;
        s->extra_used = 0;
        const uint64_t t0 = native::monotonic_ns();
        s->rc = entry.run(entry.launch, entry.slots, n_args);
        s->elapsed_s = double(native::monotonic_ns() - t0) * 1e-9;
        s->flags_mask = s->extra_used;
        if (entry.used) {
            s->flags_mask |= *entry.used;
            *entry.used = 0;
        }
        s->extra_used = 0;
        ++s->served;
        if (s->rc != MPNPU_RUN_OK) return MPNPU_SERVE_FAILED;
        bool closed = false;
        if (!reply(s, &closed)) return MPNPU_SERVE_REPLY;
        if (closed) return MPNPU_SERVE_CLOSED;
        if (cpus_changed(s)) return MPNPU_SERVE_RESPIN;  // (after the reply: off the launch's path)
        replied = true;
    }
}

}  // namespace serve
}  // namespace mpnpu

#endif  // MPNPU_SERVE_H
