// The pipes inside one core: MTE2, MTE3, MTE1 and FIX asynchronous, each in issue order, as they
// are for Python kernels (mpnpu/runtime/pipes.py; docs/pipes.md tells the policy, the same here).
//
//   kernel thread (the scalar unit): issues every instruction; runs S, V and M work inline
//   one thread per data-movement pipe: executes that pipe's queue, in order
//
// When queued work runs: the kernel thread executes a pipe's queue itself when it needs the result
// (a WaitFlag of an inline pipe, a PipeBarrier, a SyncAll, the end of the kernel) and, at its next
// issue, whatever has waited longer than the latency bound; a pipe's thread works through its queue
// while the kernel thread waits outside the core (a cross-core wait, a SyncAll, a race-directed
// hold); a cross-core set is fired as soon as its pipe reaches it, since other cores wait for it.
// Nothing wakes a pipe's thread at issue: the kernel thread usually does the work a moment later,
// and a copy that has not run yet when the kernel reads its destination is exactly the race a
// missing SetFlag/WaitFlag allows on the chip.
//
// An in-order engine (the launch's pipes "sync") executes every instruction at issue.
#ifndef MPNPU_PIPES_H
#define MPNPU_PIPES_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "abi.h"

namespace mpnpu {

struct Site;

constexpr int N_PIPES = 8;        // pipe numbers of pipe_t (P_ALL included)
constexpr int N_EVENTS = 64;      // HardEvent numbers
constexpr uint64_t NEVER = ~0ull;

inline bool pipe_is_async(int p) { return p == 3 || p == 4 || p == 5 || p == 7; }  // MTE1, MTE2, MTE3, FIX

class PipeEngine {
public:
    enum Kind : uint8_t { RUN, SET, WAIT, SIGNAL };
    struct Op {
        Kind kind;
        std::function<void()> fn;
        int16_t event = 0;
        int8_t id = 0;
        uint64_t issued = 0;
        const char* file = nullptr;  // where the wait was issued (for an error found later)
        int line = 0;
        const char* func = nullptr;
    };

    // What the engine reports back through the kernel API (set once by rt.h: faults are thrown there).
    using ErrorFn = void (*)(const char* file, int line, const char* func, const char* message);
    using ClockFn = uint64_t (*)();

    bool asynchronous() const { return async_; }

    void reset(bool async, bool auto_sync, uint64_t latency_ns, uint64_t timeout_ns) {
        std::unique_lock<std::mutex> lock(mu_);
        for (auto& q : q_) q.clear();
        for (int p = 0; p < N_PIPES; ++p) appended_[p] = done_[p] = 0;
        footprints_.clear();
        for (auto& r : raised_)
            for (int& v : r) v = 0;
        for (auto& r : queued_sets_)
            for (int& v : r) v = 0;
        for (int& s : signals_) s = 0;
        error_ = nullptr;
        ++generation_;
        oldest_ = NEVER;
        async_ = async;
        auto_sync_ = async && auto_sync;  // (in order, every instruction has completed at issue)
        latency_ns_ = latency_ns;
        timeout_ns_ = timeout_ns ? timeout_ns : 60'000'000'000ull;
    }

    // The kernel raised: drop what is queued; let what is executing finish (never into the next launch).
    void abort() {
        std::unique_lock<std::mutex> lock(mu_);
        discard_queues();
        ++generation_;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (running_ && std::chrono::steady_clock::now() < deadline)
            kernel_cv_.wait_for(lock, std::chrono::milliseconds(5));
        async_ = false;
    }

    // Issue work to ``pipe``: at once if the pipe is inline or the engine in order.
    void run(int pipe, std::function<void()> fn) {
        if (!async_ || !pipe_is_async(pipe)) {
            fn();
            return;
        }
        std::unique_lock<std::mutex> lock(mu_);
        check_error(lock);
        uint64_t now = within_bound(lock);
        append(pipe, Op{RUN, std::move(fn), 0, 0, now});
        start_thread(pipe);
    }

    // A cross-core flag set on ``pipe``: fired once what was issued to the pipe before it completed.
    void signal(int pipe, std::function<void()> fn) {
        if (!async_ || !pipe_is_async(pipe)) {
            fn();
            return;
        }
        std::unique_lock<std::mutex> lock(mu_);
        check_error(lock);
        ++signals_[pipe];
        append(pipe, Op{SIGNAL, std::move(fn), 0, 0, clock_()});
        drain_through(lock, pipe, [&] { return signals_[pipe] == 0; }, 0);
        check_error(lock);
        if (signals_[pipe] && sleeping_[pipe]) pipe_cv_[pipe].notify_one();
        start_thread(pipe);
    }

    // Before a cross-core wait: every cross-core set queued on a pipe has fired (modes 0 and 1 need
    // the waiter's own set; the watchdog would read it as missing otherwise).
    void flush_signals() {
        if (!async_) return;
        std::unique_lock<std::mutex> lock(mu_);
        for (int p = 0; p < N_PIPES; ++p)
            if (signals_[p]) drain_through(lock, p, [&] { return signals_[p] == 0; }, 0);
        block_until(lock, [&] {
            for (int s : signals_)
                if (s) return false;
            return true;
        }, nullptr, 0, "the cross-core flag sets issued before a cross-core wait");
    }

    // SetFlag<evt>(id): raised when the source pipe reaches this point.
    void set_flag(int evt, int id, int src, const char* file, int line, const char* func = nullptr) {
        if (!async_) {
            ++raised_[evt][id];
            return;
        }
        std::unique_lock<std::mutex> lock(mu_);
        check_error(lock);
        if (!pipe_is_async(src)) {
            raise_event(evt, id, false);
            return;
        }
        ++queued_sets_[evt][id];
        append(src, Op{SET, nullptr, int16_t(evt), int8_t(id), within_bound(lock), file, line, func});
        start_thread(src);
    }

    // WaitFlag<evt>(id): the destination pipe waits here for the event, then consumes it. False when
    // no set can satisfy it any more (the caller reports that at the kernel's line).
    bool wait_flag(int evt, int id, int src, int dst, const char* file, int line, const char* func = nullptr) {
        if (!async_) {
            if (raised_[evt][id] <= 0) return false;
            --raised_[evt][id];
            return true;
        }
        std::unique_lock<std::mutex> lock(mu_);
        check_error(lock);
        if (pipe_is_async(dst)) {
            append(dst, Op{WAIT, nullptr, int16_t(evt), int8_t(id), within_bound(lock), file, line, func});
            start_thread(dst);
            return true;
        }
        bool possible = true;
        int helped[1] = {src};
        block_until(lock, [&] {
            if (raised_[evt][id] > 0) return true;
            if (!queued_sets_[evt][id]) {
                possible = false;
                return true;
            }
            return false;
        }, pipe_is_async(src) ? helped : nullptr, pipe_is_async(src) ? 1 : 0, "a WaitFlag");
        if (!possible) return false;
        --raised_[evt][id];
        return true;
    }

    // Forget the raised SetFlag<evt>(id) no WaitFlag took (call after barrier(P_ALL): then nothing is
    // queued); how many there were.
    int forget_raised(int evt, int id) {
        std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
        if (async_) lock.lock();
        const int n = raised_[evt][id];
        raised_[evt][id] = 0;
        return n;
    }

    // PipeBarrier<pipe> (P_ALL: every pipe): everything issued to it has completed.
    void barrier(int pipe) {
        if (!async_) return;
        std::unique_lock<std::mutex> lock(mu_);
        check_error(lock);
        if (pipe == 6) {  // PIPE_ALL
            int all[4] = {3, 4, 5, 7};
            block_until(lock, [&] { return !pending(3) && !pending(4) && !pending(5) && !pending(7); }, all, 4,
                        "PipeBarrier<PIPE_ALL>");
            return;
        }
        if (!pipe_is_async(pipe)) return;
        drain_through(lock, pipe, nullptr, 0);
        int one[1] = {pipe};
        block_until(lock, [&] { return !pending(pipe); }, one, 1, "a PipeBarrier");
    }

    void finish() { barrier(6); }

    // Whether every asynchronous pipe has completed all it was given (no queued or running work).
    bool idle() {
        if (!async_) return true;
        std::unique_lock<std::mutex> lock(mu_);
        return !pending(3) && !pending(4) && !pending(5) && !pending(7);
    }

    // -- the compiler's automatic synchronisation (docs/pipes.md): it makes a scalar access of local
    // memory wait for the earlier MTE2 and MTE3 instructions that touch the same bytes. Without it
    // here, a GetValue would read a destination its DataCopy has not filled yet: a race a kernel
    // built as the vendor builds it by default cannot have. The kernel thread alone calls these.

    // An MTE2/MTE3 instruction about to be issued touches local bytes [start, stop) of ``mem``.
    void note_local(int pipe, int mem, uint64_t start, uint64_t stop, bool writes) {
        if (!auto_sync_ || (pipe != 4 && pipe != 5)) return;  // PIPE_MTE2, PIPE_MTE3
        if (footprints_.size() >= 256) {
            std::unique_lock<std::mutex> lock(mu_);
            prune_footprints(true);
        }
        footprints_.push_back(Footprint{start, stop, appended_[pipe], int8_t(pipe), int8_t(mem), writes});
    }

    // A scalar access of local bytes [start, stop) of ``mem``: first, the queued MTE2/MTE3
    // instructions it depends on (it reads what they write, or writes what they touch) complete.
    void before_scalar(int mem, uint64_t start, uint64_t stop, bool writes) {
        if (footprints_.empty()) return;
        std::unique_lock<std::mutex> lock(mu_);
        check_error(lock);
        uint64_t upto[N_PIPES] = {};  // per pipe: 1 + the last instruction to complete first
        for (const Footprint& f : footprints_)
            if (f.mem == mem && f.start < stop && start < f.stop && (writes || f.writes) && f.seq >= done_[f.pipe] &&
                f.seq < appended_[f.pipe] && f.seq + 1 > upto[f.pipe])
                upto[f.pipe] = f.seq + 1;
        prune_footprints(false);
        for (int p = 0; p < N_PIPES; ++p) {
            if (!upto[p]) continue;
            const uint64_t n = upto[p];
            drain_through(lock, p, [&] { return done_[p] >= n; }, 0);
            int one[1] = {p};
            block_until(lock, [&] { return done_[p] >= n; }, one, 1,
                        "a scalar access of local memory (the compiler's automatic sync)");
        }
    }

    // The kernel thread is about to wait outside the core: let the pipes work through their queues.
    void wake() {
        if (!async_) return;
        std::unique_lock<std::mutex> lock(mu_);
        wake_pipes();
    }

    void configure(ErrorFn on_error, ClockFn clock) {
        on_error_ = on_error;
        clock_ = clock;
    }

private:
    bool pending(int pipe) const { return !q_[pipe].empty() || busy_[pipe]; }

    void append(int pipe, Op op) {
        ++appended_[pipe];
        if (oldest_ == NEVER) oldest_ = op.issued;
        q_[pipe].push_back(std::move(op));
    }

    void start_thread(int pipe) {
        if (started_[pipe]) return;
        started_[pipe] = true;
        std::thread([this, pipe] { serve(pipe); }).detach();  // lives as long as the core process
    }

    uint64_t within_bound(std::unique_lock<std::mutex>& lock) {
        uint64_t now = clock_();
        if (oldest_ != NEVER && now > oldest_ && now - oldest_ > latency_ns_) progress_overdue(lock, now);
        return now;
    }

    void progress_overdue(std::unique_lock<std::mutex>& lock, uint64_t now) {
        uint64_t cutoff = now - latency_ns_;
        for (int p = 0; p < N_PIPES; ++p)
            if (!q_[p].empty() && q_[p].front().issued <= cutoff)
                drain_through(lock, p, [&] { return q_[p].empty() || q_[p].front().issued > cutoff; }, 0);
        // (what a pipe's thread executes right now counts as not overdue: it is running)
        oldest_ = NEVER;
        for (auto& q : q_)
            if (!q.empty() && q.front().issued < oldest_) oldest_ = q.front().issued;
    }

    // Raised by a pipe's thread (working while the kernel thread waits outside the core), it wakes
    // the pipes stopped at a wait; raised by the kernel thread, it wakes none: the kernel thread runs
    // their queues itself when it needs them, waits, or finds them overdue (the Python engine's rule,
    // mpnpu/runtime/pipes.py _raise). Waking them here cost a futex wake and two context switches
    // per queue handoff: ~14 per case-run of vecin-early-read-cxx, 1.4x its in-order time.
    void raise_event(int evt, int id, bool by_pipe) {
        ++raised_[evt][id];
        if (by_pipe)
            for (int p = 0; p < N_PIPES; ++p)
                if (sleeping_[p] && !q_[p].empty() && q_[p].front().kind == WAIT) pipe_cv_[p].notify_one();
        kernel_cv_.notify_all();
    }

    // 0: nothing to do now; 1: a set or satisfied wait completed here; 2: ``out`` is a run/signal to execute.
    int claim(int pipe, Op& out, bool by_kernel) {
        auto& q = q_[pipe];
        if (q.empty() || busy_[pipe]) return 0;
        Op& op = q.front();
        if (op.kind == WAIT) {
            if (raised_[op.event][op.id] <= 0) return 0;
            --raised_[op.event][op.id];
            q.pop_front();
            ++done_[pipe];
            kernel_cv_.notify_all();
            return 1;
        }
        if (op.kind == SET) {
            int evt = op.event, id = op.id;
            --queued_sets_[evt][id];
            q.pop_front();
            ++done_[pipe];
            raise_event(evt, id, !by_kernel);
            return 1;
        }
        busy_[pipe] = true;  // executing: the pipe still counts as having work (pending())
        ++running_;
        out = std::move(op);
        q.pop_front();
        return 2;
    }

    // Execute a claimed run/signal: with the lock held on the kernel thread (no pipe thread claims
    // meanwhile), released on a pipe's thread; retire it with the lock held.
    void execute(std::unique_lock<std::mutex>& lock, int pipe, Op& op, bool keep_lock) {
        uint64_t gen = generation_;
        std::exception_ptr err;
        if (!keep_lock) lock.unlock();
        try {
            op.fn();
        } catch (...) {
            err = std::current_exception();
        }
        if (!keep_lock) lock.lock();
        busy_[pipe] = false;
        --running_;
        if (gen == generation_) {
            ++done_[pipe];
            if (op.kind == SIGNAL) --signals_[pipe];
            if (err && !error_) {
                error_ = err;
                discard_queues();
            }
        }
        kernel_cv_.notify_all();
    }

    using Until = std::function<bool()>;  // (not a template: drain_through recurses with new conditions)

    void drain(std::unique_lock<std::mutex>& lock, int pipe, const Until& until) {
        while (!q_[pipe].empty() && !busy_[pipe] && !error_) {
            if (until && until()) return;
            Op op;
            int c = claim(pipe, op, true);
            if (c == 0) return;
            if (c == 2) execute(lock, pipe, op, true);
        }
    }

    // Drain ``pipe``; where it stops at a wait for an event another asynchronous pipe raises, drain
    // that pipe up to the set, then go on. What is issued after what is waited for never runs early.
    void drain_through(std::unique_lock<std::mutex>& lock, int pipe, const Until& until, int depth) {
        while (true) {
            drain(lock, pipe, until);
            if (q_[pipe].empty() || error_ || busy_[pipe] || depth >= 4 || (until && until())) return;
            Op& head = q_[pipe].front();
            if (head.kind != WAIT) return;
            int evt = head.event, id = head.id;
            int src = source_of_(evt);
            if (src == pipe || !pipe_is_async(src) || q_[src].empty()) return;
            drain_through(lock, src, [&] { return raised_[evt][id] > 0; }, depth + 1);
            if (raised_[evt][id] <= 0) return;
        }
    }

    // Drop every queued instruction (they count as completed: nothing waits for them any more).
    void discard_queues() {
        for (int p = 0; p < N_PIPES; ++p) {
            q_[p].clear();
            done_[p] = appended_[p] - (busy_[p] ? 1 : 0);
        }
        footprints_.clear();
    }

    // Forget the footprints of completed instructions (and, unless one is about to be issued, of
    // instructions never issued: a local access with no queued work after it).
    void prune_footprints(bool issuing) {
        size_t kept = 0;
        for (const Footprint& f : footprints_)
            if (f.seq >= done_[f.pipe] && (issuing || f.seq < appended_[f.pipe])) footprints_[kept++] = f;
        footprints_.resize(kept);
    }

    void wake_pipes() {
        for (int p = 0; p < N_PIPES; ++p)
            if (!q_[p].empty() && sleeping_[p]) pipe_cv_[p].notify_one();
    }

    template <typename Done>
    void block_until(std::unique_lock<std::mutex>& lock, const Done& done, const int* helped, int n_helped,
                     const char* what) {
        auto start = std::chrono::steady_clock::now();
        while (true) {
            check_error(lock);
            if (done()) return;
            if (help(lock, helped, n_helped)) continue;
            check_stuck();
            if (std::chrono::steady_clock::now() - start > std::chrono::nanoseconds(timeout_ns_)) {
                char msg[160];
                std::snprintf(msg, sizeof msg, "%s still waits for the core's pipes after the sync timeout", what);
                on_error_(nullptr, 0, nullptr, msg);
            }
            kernel_sleeping_ = true;
            wake_pipes();
            kernel_cv_.wait_for(lock, std::chrono::milliseconds(200));
            kernel_sleeping_ = false;
        }
    }

    // Execute on the kernel thread the next instruction of the first helped pipe (or of a pipe one is
    // stopped on) that can move; whether anything moved. One at a time, so nothing issued after what
    // is waited for completes early.
    bool help(std::unique_lock<std::mutex>& lock, const int* helped, int n) {
        int order[N_PIPES];
        int m = 0;
        for (int i = 0; i < n; ++i) order[m++] = helped[i];
        for (int i = 0; i < m && m < N_PIPES; ++i) {
            auto& q = q_[order[i]];
            if (!q.empty() && q.front().kind == WAIT && raised_[q.front().event][q.front().id] <= 0) {
                int src = source_of_(q.front().event);
                bool seen = false;
                for (int k = 0; k < m; ++k) seen = seen || order[k] == src;
                if (pipe_is_async(src) && !seen) order[m++] = src;
            }
        }
        for (int i = 0; i < m; ++i) {
            Op op;
            int c = claim(order[i], op, true);
            if (c == 1) return true;
            if (c == 2) {
                execute(lock, order[i], op, true);
                return true;
            }
        }
        return false;
    }

    // The kernel thread is blocked: a pipe stopped at a wait no queued set can satisfy never moves.
    void check_stuck() {
        for (int p = 0; p < N_PIPES; ++p) {
            auto& q = q_[p];
            if (q.empty() || busy_[p] || q.front().kind != WAIT) continue;
            const Op& w = q.front();
            if (raised_[w.event][w.id] <= 0 && queued_sets_[w.event][w.id] <= 0) {
                char msg[200];
                std::snprintf(msg, sizeof msg, "a WaitFlag (event %d, id %d) queued on its pipe waits for an event no "
                              "SetFlag issued before it raises: the device would hang", int(w.event), int(w.id));
                const char* file = w.file;
                const char* func = w.func;
                int line = w.line;
                for (auto& qq : q_) qq.clear();
                on_error_(file, line, func, msg);
            }
        }
    }

    void check_error(std::unique_lock<std::mutex>& lock) {
        if (error_) {
            std::exception_ptr e = error_;
            error_ = nullptr;
            lock.unlock();
            std::rethrow_exception(e);
        }
    }

    void serve(int pipe) {
        std::unique_lock<std::mutex> lock(mu_);
        while (true) {
            Op op;
            int c = claim(pipe, op, false);
            if (c == 0) {
                sleeping_[pipe] = true;
                pipe_cv_[pipe].wait(lock);
                sleeping_[pipe] = false;
            } else if (c == 2) {
                execute(lock, pipe, op, false);
            }
        }
    }

public:
    // The source pipe of a HardEvent number (set by sync.h, which owns the event table).
    int (*source_of_)(int evt) = nullptr;

private:
    std::mutex mu_;
    std::condition_variable kernel_cv_;
    std::condition_variable pipe_cv_[N_PIPES];
    std::deque<Op> q_[N_PIPES];
    bool busy_[N_PIPES] = {};
    bool sleeping_[N_PIPES] = {};
    bool started_[N_PIPES] = {};
    bool kernel_sleeping_ = false;
    int raised_[N_EVENTS][8] = {};
    int queued_sets_[N_EVENTS][8] = {};
    int signals_[N_PIPES] = {};
    int running_ = 0;
    uint64_t generation_ = 0;
    uint64_t oldest_ = NEVER;
    uint64_t latency_ns_ = 100'000;
    uint64_t timeout_ns_ = 60'000'000'000ull;
    bool async_ = false;
    bool auto_sync_ = false;
    uint64_t appended_[N_PIPES] = {};  // instructions issued to each queue, and completed (in order)
    uint64_t done_[N_PIPES] = {};
    struct Footprint {
        uint64_t start, stop;
        uint64_t seq;  // the instruction's number in its pipe's queue
        int8_t pipe, mem;
        bool writes;
    };
    std::vector<Footprint> footprints_;  // of queued MTE2/MTE3 instructions (auto-sync); the kernel thread's
    std::exception_ptr error_;
    ErrorFn on_error_ = nullptr;
    ClockFn clock_ = nullptr;
};

}  // namespace mpnpu

#endif  // MPNPU_PIPES_H
